// The place-level default strategies behind dao_alloc / dao_free / dao_used
// (and the library's own, one more per place): one per place, created on first use from
// DAO_ALLOCATOR[_<KIND>] and DAO_ALLOC_CONF[_<KIND>].
#pragma once

#include <string>

#include "dao/place.h"
#include "strategy/strategy.hpp"

namespace dao::detail {

struct default_config {
  std::string strategy;         // never empty
  std::string config;           // "" for the strategy's defaults
  std::string strategy_source;  // the variable it came from, or "built-in default"
  std::string config_source;
};

// Read from the environment once per process; throws invalid_argument for an
// unknown kind.
const default_config& default_config_for(int kind);

// The default strategy of `place`, created on first use (thread safe) and
// never destroyed. Throws invalid_argument / no_device for a bad place,
// invalid_argument naming the variable for a malformed environment.
strategy& place_strategy(dao_place place);

// The library's own strategy of `place`, for the memory that recycle pools,
// tiered pools and partitioned memory take for themselves: a strategy of
// its own ("system": straight from the place, nothing cached, as the pools
// keep and reuse their memory themselves), so that dao_free() never accepts
// those pointers and dao_used() never counts them (issue 20). Created on
// first use, never destroyed; throws as place_strategy().
strategy& internal_place_strategy(dao_place place);
// The same, or nullptr while nothing has made it (dao_used_internal() does
// not build a strategy to report zero). Throws for a bad place.
strategy* internal_place_strategy_if_made(dao_place place);

}  // namespace dao::detail
