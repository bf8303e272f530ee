// Binary buddy allocator (strategy "buddy"), after Paddle's BuddyAllocator:
// grows its pool in chunks taken from the system resource, splits blocks in
// halves down to min_block, merges freed buddies back, serves requests larger
// than a chunk straight from the system resource, and gives wholly free chunks
// back on trim().
//
// Block metadata lives outside the managed memory (device memory cannot be
// touched from the host): a table of block records, an address -> record hash
// map, and one intrusive free list per order with a bit mask of non-empty
// orders. allocate and deallocate are O(log(chunk/min_block)) with O(1) steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "strategy/limit.hpp"
#include "strategy/strategy.hpp"
#include "util/asan_poison.hpp"
#include "util/fast_mutex.hpp"
#include "util/pointer_map.hpp"

namespace dao::detail {

// Orders a chunk may span: chunk_size / min_block < 2^kBuddyMaxOrders.
inline constexpr int kBuddyMaxOrders = 48;

struct buddy_options {
  std::size_t min_block = 256;
  std::size_t chunk_size = std::size_t(64) << 20;
  limit_spec limit;  // max_pool only (0: no cap)
  std::size_t initial_pool = 0;

  // Defaults for `upstream` (chunk_size clamped to a quarter of its
  // capacity), overridden by the keys of `cfg`; validates everything.
  static buddy_options from_config(config& cfg, const memory_source& upstream);
};

class buddy_strategy final : public strategy {
 public:
  buddy_strategy(memory_source& upstream, const buddy_options& options);
  ~buddy_strategy() override;

  DAO_STRATEGY_POOL_METHODS_;
  const char* name() const noexcept override { return "buddy"; }
  std::string effective_config() const override;

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  struct block {
    std::uintptr_t addr;
    std::size_t requested;  // 0 while free
    std::uint32_t chunk;
    std::uint32_t prev, next;  // free-list links while free
    std::uint8_t order;
    bool free;
  };
  struct chunk {
    std::uintptr_t base;
    std::uint8_t order;  // a chunk is one block of this order when whole
    bool live;
  };
  struct large_block {
    std::size_t bytes;
    std::size_t requested;
  };

  int order_for(std::size_t bytes) const noexcept;
  std::size_t order_bytes(int order) const noexcept { return options_.min_block << order; }

  void reserve_bookkeeping();
  std::uint32_t new_record();
  void push_free(std::uint32_t index) noexcept;
  void unlink_free(std::uint32_t index) noexcept;
  // may_release_idle: whether wholly free chunks may be given back to make
  // room (not while building the initial pool, which must only grow).
  void grow(int order, bool may_release_idle);
  void* allocate_large(std::size_t bytes);
  std::size_t release_free_chunks();
  std::size_t largest_free_block() const noexcept;  // derived from nonempty_orders_
  out_of_memory oom(std::size_t bytes, const char* why) const;

  // Free blocks of host-accessible memory are poisoned for ASan (no-ops
  // without it; device memory is never touched).
  void poison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_poison(reinterpret_cast<const void*>(addr), bytes);
  }
  void unpoison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_unpoison(reinterpret_cast<const void*>(addr), bytes);
  }

  buddy_options options_;
  limit_source source_;       // the upstream, capped by max_pool
  bool host_memory_ = false;  // upstream().host_accessible(), for poisoning
  int top_order_;             // order of a full chunk

  mutable fast_mutex mutex_;
  std::vector<block> blocks_;
  std::vector<std::uint32_t> spare_records_;
  std::vector<chunk> chunks_;
  std::vector<std::uint32_t> spare_chunks_;
  pointer_map by_address_;
  std::uint32_t free_heads_[kBuddyMaxOrders];
  std::uint64_t nonempty_orders_ = 0;
  std::unordered_map<std::uintptr_t, large_block> large_;
  allocator_counters counters_;
};

}  // namespace dao::detail
