// The strategy registry: one table of every strategy (name, what it is, its
// config keys, how to build it), and the one function that builds a
// strategy, stacked on others where its config says so.
//
// Stacking: every strategy takes the key `upstream=<strategy>`, which makes
// it take its memory from that strategy instead of the place's system
// resource, and passes the keys `upstream.<key>=<value>` to it (again with
// `upstream.upstream...` for a deeper stack). "limit" is an adaptor over a
// strategy; without `upstream` it limits the place kind's built-in default.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "resource/system_resource.hpp"
#include "strategy/strategy.hpp"

namespace dao::detail {

class strategy_source;

struct strategy_entry {
  std::string_view name;
  std::string_view summary;  // one line, for `dao info` and messages
  // Its own config keys (`upstream` and `upstream.*` are everyone's).
  std::vector<std::string_view> keys;
  // Builds it on `upstream` from the keys left in `cfg` (all known).
  // `below` is the strategy under it when stacked, else nullptr.
  std::unique_ptr<strategy> (*make)(memory_source& upstream, strategy_source* below, config& cfg);
  // Adaptors wrap a strategy: without `upstream` they get the place kind's
  // built-in default.
  bool adaptor = false;
};

// Every strategy, in the order of strategy/strategy_list.h.
const std::vector<strategy_entry>& strategy_registry();

// The entry named `name`; throws invalid_argument listing the known names.
const strategy_entry& find_strategy(std::string_view name);

// The built-in default strategy of a place kind: "buddy" on the CPU (host
// memory is cheap to get), "caching" elsewhere (device memory is slow to get
// from the driver and used in stream order).
const char* builtin_default_strategy(int kind) noexcept;

// Builds strategy `name` on `place` from `config_text`, with the stack its
// `upstream` keys ask for. Throws invalid_argument for an unknown name or
// key, or a bad value (the message names the strategy and the key).
std::unique_ptr<strategy> make_strategy(std::string_view name, system_resource& place,
                                        std::string_view config_text);

}  // namespace dao::detail
