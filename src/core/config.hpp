// Parsing of "key=value,key=value" configuration strings and of sizes with
// units. Strategies take their keys one by one and then reject what is left,
// so an unknown key is always an error, never silently ignored.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dao::detail {

// Parses "64MiB", "1.5GiB", "4096", "2K". Throws invalid_argument naming
// `what` (for example "chunk_size") when malformed or out of range.
std::size_t parse_size(std::string_view text, std::string_view what);

class config {
 public:
  // `context` names the owner in messages, e.g. "buddy config".
  static config parse(std::string_view text, std::string context);

  std::optional<std::size_t> take_size(std::string_view key);
  std::optional<double> take_double(std::string_view key);
  std::optional<bool> take_bool(std::string_view key);
  std::optional<std::string> take_string(std::string_view key);

  // Takes every key that starts with `prefix` and returns them, without
  // the prefix, as a config string ("k=v,k=v"; "" when there is none):
  // the config of a stacked strategy (`upstream.chunk_size=4MiB`).
  std::string take_prefixed(std::string_view prefix);

  // Throws invalid_argument, before anything is taken, naming the first key
  // that is not in `known` and listing the known keys.
  void require_known(const std::vector<std::string_view>& known) const;

  // Throws invalid_argument if any key was not taken, listing the known keys.
  void reject_unknown(std::initializer_list<std::string_view> known) const;

  const std::string& context() const noexcept { return context_; }

 private:
  struct entry {
    std::string key;
    std::string value;
    bool taken = false;
  };
  const entry* find(std::string_view key);

  std::string context_;
  std::vector<entry> entries_;
};

// Trims ASCII whitespace at both ends.
std::string_view trim_spaces(std::string_view s);

}  // namespace dao::detail
