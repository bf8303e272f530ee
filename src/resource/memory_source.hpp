// Where a strategy takes its memory from: the abstract upstream of the
// strategy layer. A place's system resource is one (resource/
// system_resource.hpp); so is a strategy seen from above
// (strategy/strategy_source.hpp) and a limit over either
// (strategy/limit.hpp). That is what lets strategies stack, as RMM's
// resource adaptors and Umpire's strategies do.
#pragma once

#include <cstddef>

#include "dao/place.h"

namespace dao::detail {

class system_resource;

// Every pointer a memory source hands out is aligned at least this much.
inline constexpr std::size_t kMinAlignment = 256;

struct memory_info {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

class memory_source {
 public:
  virtual ~memory_source() = default;

  // Returns `bytes` (> 0) aligned to >= kMinAlignment. Throws out_of_memory
  // when there is no room (the message says how much there is),
  // backend_error when the driver fails otherwise; changes nothing then.
  virtual void* allocate(std::size_t bytes) = 0;

  // Gives back what allocate() returned, with the same `bytes`.
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;

  // The place the memory is on, and that place's capacity.
  virtual dao_place place() const noexcept = 0;
  virtual memory_info info() const = 0;

  // Whether host code may read and write this memory directly.
  virtual bool host_accessible() const noexcept = 0;

  // The system resource at the bottom of the stack: the place's streams
  // and events.
  virtual system_resource& resource() noexcept = 0;

  // --- virtual memory: reserve addresses, then map and unmap memory in them.
  // Lets the caching strategy grow one contiguous arena instead of carving
  // separate segments (no fragmentation across segments). Sources without
  // it keep the defaults (granularity 0: not supported).
  virtual std::size_t map_granularity() const noexcept { return 0; }
  // The page size the memory is backed with when larger than the
  // granularity (host memory in transparent huge pages), else 0. Giving back
  // part of such a page splits it into small pages for good: callers that
  // can choose what to unmap prefer whole ones.
  virtual std::size_t large_page_size() const noexcept { return 0; }
  // Reserves `bytes` (a multiple of the granularity) of addresses, mapping
  // nothing; costs no memory. Throws out_of_memory / backend_error, or
  // unsupported without virtual memory.
  virtual void* reserve_addresses(std::size_t bytes);
  virtual void release_addresses(void* base, std::size_t bytes) noexcept;
  // Backs [addr, addr+bytes) (granularity-aligned, inside a reservation)
  // with memory. Throws out_of_memory when the place is full; maps nothing
  // then.
  virtual void map(void* addr, std::size_t bytes);
  // Gives back mapped memory: any granule-aligned part of what map() mapped
  // where unmaps_in_part(), else exactly the range of one map() call.
  virtual void unmap(void* addr, std::size_t bytes) noexcept;
  // Whether unmap() may take part of what one map() call mapped (host
  // pages), or only all of it: on a card each map() call is one physical
  // allocation (cuMemUnmap refuses anything else), and the driver charges
  // per call and per allocation, not per byte, so callers map large pieces.
  virtual bool unmaps_in_part() const noexcept { return true; }
};

}  // namespace dao::detail
