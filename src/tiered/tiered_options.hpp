// The options of a tiered pool: its config string (include/dao/tiered.h,
// docs/tiered.md) parsed and checked into plain values.
#pragma once

#include <cstddef>

#include "tiered/policy.hpp"

namespace dao::detail {

struct tiered_options {
  evict_policy policy = evict_policy::belady;
  std::size_t prefetch = 2;     // kernels ahead whose inputs are fetched early
  std::size_t host_budget = 0;  // bytes, 0 = unlimited
  double bandwidth = 0;         // link_bandwidth in bytes per second, 0 = unlimited

  // Parses `config_text` (NULL: the defaults) for a pool whose device is a
  // SIM device or not (link_bandwidth applies to SIM devices only). Throws
  // invalid_argument, with "tiered config: ..." messages, for an unknown
  // key or a bad value.
  static tiered_options parse(const char* config_text, bool sim_device);
};

}  // namespace dao::detail
