// The system strategy (see system.hpp): every allocation straight from the
// upstream, with a table of live blocks to check frees.
#include "strategy/system.hpp"

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

system_strategy::system_strategy(memory_source& upstream) : strategy(upstream) {}

system_strategy::~system_strategy() {
  for (const auto& [p, bytes] : live_) upstream().deallocate(const_cast<void*>(p), bytes);
}

void* system_strategy::do_allocate(std::size_t bytes, const stream_object*) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.reserve(live_.size() + 1);
  void* p = nullptr;
  try {
    p = upstream().allocate(bytes);
  } catch (const out_of_memory&) {
    ++counters_.failed_alloc_count;
    throw;
  }
  // Cannot rehash after the reserve, but the node's allocation may throw:
  // then the memory goes back, or it leaked (issue 20: found by LeakSanitizer
  // in test_host_oom, a tiered pool's host buffers coming from here).
  try {
    live_.emplace(p, bytes);
  } catch (...) {
    upstream().deallocate(p, bytes);
    throw;
  }
  counters_.on_system_alloc(bytes);
  counters_.on_alloc(bytes, bytes);
  return p;
}

void system_strategy::do_deallocate(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(p);
  if (it == live_.end()) {
    throw invalid_pointer(
        strprintf("system allocator on %s: pointer %p is not a live allocation of this allocator "
                  "(allocated elsewhere, already freed, or not the start of a block)",
                  place_to_string(upstream().place()).c_str(), p));
  }
  upstream().deallocate(p, it->second);
  counters_.on_free(it->second, it->second);
  counters_.on_system_free(it->second);
  live_.erase(it);
}

std::size_t system_strategy::usable_size(const void* p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(p);
  if (it == live_.end()) {
    throw invalid_pointer(strprintf("system allocator on %s: pointer %p is not a live allocation",
                                    place_to_string(upstream().place()).c_str(), p));
  }
  return it->second;
}

allocator_counters system_strategy::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void system_strategy::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.reset_peaks();
}

void system_strategy::reset_accumulated() {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.reset_accumulated();
}

}  // namespace dao::detail
