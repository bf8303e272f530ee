// The place-level default strategies behind dao_alloc / dao_free / dao_used:
// one per place, created on first use from DAO_ALLOCATOR[_<KIND>] and
// DAO_ALLOC_CONF[_<KIND>].
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

}  // namespace dao::detail
