// Config strings ("key=value,...") and sizes with units: parsing and the
// checks every owner of keys shares (see config.hpp).
#include "core/config.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <unordered_set>

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// Multiplier of a unit suffix; 0 when the suffix is not a unit.
std::uint64_t unit_multiplier(std::string_view unit) {
  struct row {
    const char* names[3];
    std::uint64_t factor;
  };
  static const row rows[] = {
      {{"", "b", nullptr}, 1},          {{"k", "kb", "kib"}, 1ull << 10},
      {{"m", "mb", "mib"}, 1ull << 20}, {{"g", "gb", "gib"}, 1ull << 30},
      {{"t", "tb", "tib"}, 1ull << 40},
  };
  for (const row& r : rows)
    for (const char* name : r.names)
      if (name != nullptr && iequals(unit, name)) return r.factor;
  return 0;
}

}  // namespace

std::size_t parse_size(std::string_view text, std::string_view what) {
  std::string_view s = trim_spaces(text);
  std::size_t digits_end = 0;
  bool seen_dot = false;
  while (digits_end < s.size() && (std::isdigit(static_cast<unsigned char>(s[digits_end])) ||
                                   (s[digits_end] == '.' && !seen_dot))) {
    if (s[digits_end] == '.') seen_dot = true;
    ++digits_end;
  }
  std::string number(s.substr(0, digits_end));
  std::string_view unit = trim_spaces(s.substr(digits_end));
  std::uint64_t factor = unit_multiplier(unit);
  if (number.empty() || number == "." || factor == 0) {
    throw invalid_argument(strprintf(
        "%.*s: '%.*s' is not a size (expected a number with an optional unit "
        "B, KiB, MiB, GiB or TiB, for example 64MiB)",
        static_cast<int>(what.size()), what.data(), static_cast<int>(text.size()), text.data()));
  }
  const auto too_large = [&]() {
    return invalid_argument(strprintf("%.*s: '%.*s' is too large", static_cast<int>(what.size()),
                                      what.data(), static_cast<int>(text.size()), text.data()));
  };
  if (!seen_dot) {
    errno = 0;
    char* end = nullptr;
    unsigned long long value = std::strtoull(number.c_str(), &end, 10);
    if (errno == ERANGE) throw too_large();
    if (value > std::numeric_limits<std::size_t>::max() / factor) throw too_large();
    return static_cast<std::size_t>(value * factor);
  }
  // A decimal size is computed exactly, not as a double: near 2^64 a double
  // has no fraction bits left, so "16777215.99TiB" (0.01 TiB short of 2^64,
  // not a whole number of bytes) was accepted as another number, and a size
  // read back otherwise than written (issue 20, hostile numbers). The factor
  // is 2^e; bytes = whole * 2^e + fraction * 2^e / 10^k, whole exactly when
  // 5^k divides the fraction's digits and k <= e (trailing zeros dropped).
  const std::size_t dot = number.find('.');
  std::string_view whole_digits = std::string_view(number).substr(0, dot);
  std::string_view fraction = std::string_view(number).substr(dot + 1);
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  unsigned __int128 whole = 0;
  for (char ch : whole_digits) {
    whole = whole * 10 + static_cast<unsigned>(ch - '0');
    if (whole > std::numeric_limits<std::uint64_t>::max()) throw too_large();
  }
  const int e = __builtin_ctzll(factor);
  const auto not_whole = [&]() {
    return invalid_argument(strprintf("%.*s: '%.*s' is not a whole number of bytes",
                                      static_cast<int>(what.size()), what.data(),
                                      static_cast<int>(text.size()), text.data()));
  };
  if (fraction.size() > static_cast<std::size_t>(e)) throw not_whole();
  const int k = static_cast<int>(fraction.size());
  unsigned __int128 five_k = 1;
  for (int i = 0; i < k; ++i) five_k *= 5;
  // Long division of the fraction's digits by 5^k: q < 2^k <= 2^40.
  unsigned __int128 q = 0, r = 0;
  for (char ch : fraction) {
    const unsigned __int128 t = r * 10 + static_cast<unsigned>(ch - '0');
    q = q * 10 + t / five_k;
    r = t % five_k;
  }
  if (r != 0) throw not_whole();
  const unsigned __int128 bytes = whole * factor + (q << (e - k));
  if (bytes > std::numeric_limits<std::size_t>::max()) throw too_large();
  return static_cast<std::size_t>(bytes);
}

config config::parse(std::string_view text, std::string context) {
  config c;
  c.context_ = std::move(context);
  // Keys seen so far, for the duplicate check: a set, not a scan of the
  // entries, so that parsing stays linear (issue 20: 40,000 keys took 3.9 s).
  std::unordered_set<std::string> seen;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim_spaces(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) {
      if (comma == std::string_view::npos) break;  // a trailing comma is fine
      throw invalid_argument(strprintf("%s: empty item in '%.*s'", c.context_.c_str(),
                                       static_cast<int>(text.size()), text.data()));
    }
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw invalid_argument(strprintf("%s: '%.*s' is not of the form key=value",
                                       c.context_.c_str(), static_cast<int>(item.size()),
                                       item.data()));
    }
    std::string key(trim_spaces(item.substr(0, eq)));
    std::string value(trim_spaces(item.substr(eq + 1)));
    if (key.empty() || value.empty()) {
      throw invalid_argument(strprintf("%s: '%.*s' has an empty key or value", c.context_.c_str(),
                                       static_cast<int>(item.size()), item.data()));
    }
    if (!seen.insert(key).second) {
      throw invalid_argument(
          strprintf("%s: key '%s' is given more than once", c.context_.c_str(), key.c_str()));
    }
    c.entries_.push_back(entry{std::move(key), std::move(value), false});
  }
  return c;
}

const config::entry* config::find(std::string_view key) {
  for (entry& e : entries_) {
    if (e.key == key) {
      e.taken = true;
      return &e;
    }
  }
  return nullptr;
}

std::optional<std::size_t> config::take_size(std::string_view key) {
  const entry* e = find(key);
  if (e == nullptr) return std::nullopt;
  return parse_size(e->value, context_ + ": " + e->key);
}

std::optional<double> config::take_double(std::string_view key) {
  const entry* e = find(key);
  if (e == nullptr) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(e->value.c_str(), &end);
  if (end == e->value.c_str() || *end != '\0' || !std::isfinite(value)) {
    throw invalid_argument(strprintf("%s: %s='%s' is not a number", context_.c_str(),
                                     e->key.c_str(), e->value.c_str()));
  }
  return value;
}

std::optional<bool> config::take_bool(std::string_view key) {
  const entry* e = find(key);
  if (e == nullptr) return std::nullopt;
  for (const char* yes : {"1", "true", "yes", "on"})
    if (iequals(e->value, yes)) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (iequals(e->value, no)) return false;
  throw invalid_argument(strprintf("%s: %s='%s' is not a boolean (true/false)", context_.c_str(),
                                   e->key.c_str(), e->value.c_str()));
}

std::optional<std::string> config::take_string(std::string_view key) {
  const entry* e = find(key);
  if (e == nullptr) return std::nullopt;
  return e->value;
}

std::string config::take_prefixed(std::string_view prefix) {
  std::string text;
  for (entry& e : entries_) {
    if (e.key.size() <= prefix.size() || e.key.compare(0, prefix.size(), prefix) != 0) continue;
    e.taken = true;
    if (!text.empty()) text += ',';
    text.append(e.key, prefix.size(), std::string::npos);
    text += '=';
    text += e.value;
  }
  return text;
}

namespace {

template <class Keys>
[[noreturn]] void throw_unknown_key(const std::string& context, const std::string& key,
                                    const Keys& known) {
  std::string list;
  for (std::string_view k : known) {
    if (!list.empty()) list += ", ";
    list.append(k.data(), k.size());
  }
  if (list.empty()) list = "(none)";
  throw invalid_argument(strprintf("%s: unknown key '%s'; known keys: %s", context.c_str(),
                                   key.c_str(), list.c_str()));
}

}  // namespace

void config::require_known(const std::vector<std::string_view>& known) const {
  for (const entry& e : entries_) {
    bool found = e.taken;
    for (std::string_view k : known) found = found || e.key == k;
    if (!found) throw_unknown_key(context_, e.key, known);
  }
}

void config::reject_unknown(std::initializer_list<std::string_view> known) const {
  for (const entry& e : entries_)
    if (!e.taken) throw_unknown_key(context_, e.key, known);
}

}  // namespace dao::detail
