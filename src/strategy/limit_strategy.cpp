// The "limit" adaptor strategy (see limit_strategy.hpp).
#include "strategy/limit_strategy.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dao::detail {

void* limit_strategy::do_allocate(std::size_t bytes, const stream_object* stream) {
  try {
    limit_.take(bytes, "allocating");
  } catch (const out_of_memory&) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    throw;
  }
  void* p = nullptr;
  try {
    p = inner_.allocate(bytes, stream);
  } catch (...) {
    limit_.give(bytes);
    throw;
  }
  // The block below may be larger than asked for: count all of it.
  const std::size_t usable = inner_.usable_size(p);
  if (usable > bytes) {
    try {
      limit_.take(usable - bytes, "allocating (rounded up by the strategy below)");
    } catch (const out_of_memory&) {
      inner_.deallocate(p);
      limit_.give(bytes);
      refused_after_rounding_.fetch_add(1, std::memory_order_relaxed);
      refused_.fetch_add(1, std::memory_order_relaxed);
      throw;
    }
  }
  return p;
}

void limit_strategy::do_deallocate(void* p) {
  const std::size_t usable = inner_.usable_size(p);  // throws for a bad pointer
  inner_.deallocate(p);
  limit_.give(usable);
}

allocator_counters limit_strategy::counters() const {
  allocator_counters c = inner_.counters();
  c.failed_alloc_count += refused_.load(std::memory_order_relaxed);
  // A refused request is no allocation (the block below was freed at once).
  const std::uint64_t undone = refused_after_rounding_.load(std::memory_order_relaxed);
  c.alloc_count -= std::min(undone, c.alloc_count);
  c.free_count -= std::min(undone, c.free_count);
  return c;
}

void limit_strategy::reset_accumulated() {
  inner_.reset_accumulated();
  refused_.store(0, std::memory_order_relaxed);
  refused_after_rounding_.store(0, std::memory_order_relaxed);
}

}  // namespace dao::detail
