// The caching strategy's settings: its config keys, parsed and checked
// (from_config), and printed back with their effective values
// (effective_config), with the fixed block sizes the checks refer to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config.hpp"
#include "resource/memory_source.hpp"
#include "strategy/limit.hpp"

namespace dao::detail {

struct caching_options {
  static constexpr std::size_t kMinBlock = 512;                       // smallest block
  static constexpr std::size_t kSmallSize = std::size_t(1) << 20;     // small pool: <= 1 MiB
  static constexpr std::size_t kLargeBuffer = std::size_t(20) << 20;  // 1-10 MiB segments

  std::size_t max_split_size = SIZE_MAX;    // blocks this large are never split
  unsigned roundup_power2_divisions = 0;    // 0: round to 512 B only
  double garbage_collection_threshold = 0;  // fraction of the limit; 0: off
  limit_spec limit;                         // max_pool, memory_fraction (limit.hpp)
  bool expandable_segments = true;          // where the upstream can map
  double reserve_slack = -1;                // expandable: how far reserved may exceed
                                            // what is in use before cached pages are
                                            // given back to grow; < 0: never
  double reserve_headroom = 0.05;           // expandable: how far reserved may exceed
                                            // the peak in use (since the last peak
                                            // reset) before cached pages go; < 0: never
  std::size_t map_chunk = 0;                // expandable, on a card: the largest physical
                                            // allocation one mapping makes; 0: auto
  bool no_caching = false;                  // DAO_NO_CACHING=1: every free goes back
  bool fast_reuse = true;                   // freed blocks wait unmerged in size-class
                                            // lists (up to the headroom's share of
                                            // the memory in use), merged before
                                            // memory would grow

  // `upstream` is asked only for its capacity (a threshold needs a limit).
  // Unknown keys were refused before (the strategy registry lists them).
  static caching_options from_config(config& cfg, const memory_source& upstream);
  // Every key with its effective value, parseable again; `expandable`:
  // whether expandable segments are in effect (the upstream can map).
  std::string effective_config(bool expandable) const;
};

}  // namespace dao::detail
