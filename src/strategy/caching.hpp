// Stream-ordered caching allocator (strategy "caching"), after PyTorch's CUDA
// caching allocator: sizes rounded up (512 B minimum, optional power-of-two
// divisions), a small pool (requests <= 1 MiB) and a large pool, blocks that
// belong to the stream they were allocated on, splitting and merging of
// neighbours, deferred frees for blocks used on other streams
// (record_stream), an out-of-memory ladder that releases cached memory and
// retries, statistics and snapshots.
//
// This file composes the parts, each in a file of its own:
//   caching_options  the config keys, parsed, checked and printed back;
//   caching_stats    statistics, counters, snapshots, the oom message;
//   block_pool       block records, bins and best fit, splitting, merging,
//                    fast reuse's recent lists, the live-block map;
//   segment_map      segments, pages mapped and unmapped, headroom, the
//                    limit: every call on the upstream;
//   stream_order     pools per stream, settling, deferred frees: every look
//                    inside a stream handle.
// What is left here is the allocation path and the policy that needs more
// than one part: the out-of-memory ladder, which cached memory goes back
// (release_holes, release_cached, garbage collection), and the lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "strategy/block_pool.hpp"
#include "strategy/caching_options.hpp"
#include "strategy/caching_stats.hpp"
#include "strategy/segment_map.hpp"
#include "strategy/stream_order.hpp"
#include "strategy/strategy.hpp"
#include "util/fast_mutex.hpp"

namespace dao::detail {

class caching_strategy final : public strategy {
 public:
  caching_strategy(memory_source& upstream, const caching_options& options);
  ~caching_strategy() override;

  DAO_STRATEGY_POOL_METHODS_;
  bool stat(int metric, int pool, dao_stat& out) const override;
  void do_record_stream(void* p, const stream_object* stream) override;
  std::unique_ptr<snapshot_data> snapshot() const override;
  bool destroy_waits_for(const void* stream) const override;
  const char* name() const noexcept override { return "caching"; }
  std::string effective_config() const override;

 private:
  static constexpr std::uint32_t kNone = block_pool::kNone;
  static constexpr std::size_t kSmallSize = block_pool::kSmallSize;
  using block = block_pool::block;
  using state = block_pool::state;

  // Room for the records, links and map entries one allocation can create,
  // so that nothing after the first change can fail for lack of host memory.
  void reserve_bookkeeping() {
    // The common case costs two compares; segments and pools grow only
    // before anything has changed, where a failure is harmless.
    if (blocks_.needs_growth()) grow_bookkeeping();
  }
  // Rare paths, called out of line (so are process_events() and
  // check_stream_place()): inlined, they would crowd the inline fast paths
  // out of allocate() (GCC's budget for its growth).
  __attribute__((noinline)) void grow_bookkeeping();
  // The pool of a stream's small or large blocks (one per stream with
  // expandable segments); the last stream's are remembered.
  std::uint32_t pool_for(stream_handle stream, bool small) {
    if (segments_.expandable()) small = false;
    const std::uint32_t cached = streams_.cached_pool(stream, small);
    return cached != kNone ? cached : find_pool(stream, small);
  }
  std::uint32_t find_pool(stream_handle stream, bool small);

  // memory from the upstream
  std::uint32_t new_segment(std::uint32_t pool_index, std::size_t size);
  void ensure_mapped(std::uint32_t segment, std::uintptr_t start, std::size_t bytes,
                     std::uint32_t target);
  // Never waits: holes of pools whose streams are busy are left alone.
  std::size_t release_holes(std::size_t bytes, std::uint32_t keep, std::uintptr_t keep_from);
  // Never waits either: pools whose streams are busy keep their cache.
  std::size_t release_cached(bool dead_streams_only = false);
  void release_segment(std::uint32_t segment_index) noexcept;
  void collect_garbage(std::uint32_t keep);

  // the allocation path
  std::uint32_t obtain_block(std::unique_lock<fast_mutex>& lock, std::uint32_t pool_index,
                             std::size_t size);
  // Never wait for a stream under the lock: these unlock while they wait.
  void wait_unlocked(std::unique_lock<fast_mutex>& lock) noexcept;
  void release_if_whole(std::unique_lock<fast_mutex>& lock, std::uint32_t index) noexcept;
  bool free_block(std::uint32_t index) noexcept;
  // Fast reuse: whether a freed block of `size` bytes may wait unmerged in
  // the recent lists. They hold at most the headroom's share of the memory
  // in use (reserve_headroom, as widened under churn; no bound with none):
  // beyond, their memory, free but in no bin, would make the allocator map
  // more than the headroom allows, and give it back again, at every turn.
  bool recent_room(std::size_t size) const noexcept {
    const double headroom = segments_.headroom();
    return headroom < 0 ||
           static_cast<double>(blocks_.recent_bytes() + size) <=
               headroom * static_cast<double>(stats_.total(DAO_STAT_ALLOCATED_BYTES));
  }
  std::size_t record_uses(std::uint32_t index);
  __attribute__((noinline)) void process_events(bool wait);
  out_of_memory oom(std::size_t bytes, const char* why) const;
  __attribute__((noinline)) void check_stream_place(stream_handle stream,
                                                    const char* function) const;
  std::uint32_t find_live(const void* p) const;
  std::size_t largest_free_block() const noexcept;

  // Constructed in this order (each part refers only to those above it);
  // destroyed in the reverse: segments_ gives every segment back before
  // streams_ destroys its events.
  caching_options options_;
  caching_stats stats_;
  stream_order streams_;
  segment_map segments_;
  block_pool blocks_;
  // Scratch of release_cached(): one entry per pool, reserved as pools are
  // added.
  std::vector<std::int8_t> quiet_;
  mutable fast_mutex mutex_;
};

}  // namespace dao::detail
