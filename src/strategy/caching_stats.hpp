// What the caching strategy reports: its statistics (each kept for the
// small and the large pool), its counters, and the reports built from the
// other parts: snapshots, the largest free block, the out-of-memory message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "strategy/strategy.hpp"

namespace dao::detail {

class block_pool;
class segment_map;
class stream_order;

class caching_stats {
 public:
  // Adds `amount` to (or takes it from) a metric of the pool (small or
  // large), and so of the whole (see pooled_stat).
  void count_up(int metric, bool small, std::int64_t amount) noexcept {
    stats_[metric].up(small, amount);
  }
  void count_down(int metric, bool small, std::int64_t amount) noexcept {
    stats_[metric].down(small, amount);
  }
  void count(int metric, bool small, std::int64_t delta) noexcept {
    if (delta >= 0) count_up(metric, small, delta);
    else count_down(metric, small, -delta);
  }

  // The hot paths' updates. Blocks count by their size: `small` is
  // size <= 1 MiB.
  void on_alloc(bool small, std::size_t size, std::size_t requested) noexcept {
    count_up(DAO_STAT_ALLOCATED_BYTES, small, static_cast<std::int64_t>(size));
    count_up(DAO_STAT_ALLOCATED_BLOCKS, small, 1);
    count_up(DAO_STAT_REQUESTED_BYTES, small, static_cast<std::int64_t>(requested));
    if (active_tracked_) {
      count_up(DAO_STAT_ACTIVE_BYTES, small, static_cast<std::int64_t>(size));
      count_up(DAO_STAT_ACTIVE_BLOCKS, small, 1);
    }
    ++counters_.alloc_count;
  }
  void on_free(bool small, std::size_t size, std::size_t requested) noexcept {
    count_down(DAO_STAT_ALLOCATED_BYTES, small, static_cast<std::int64_t>(size));
    count_down(DAO_STAT_ALLOCATED_BLOCKS, small, 1);
    count_down(DAO_STAT_REQUESTED_BYTES, small, static_cast<std::int64_t>(requested));
    ++counters_.free_count;
  }
  // A freed block no stream uses any more (after a deferred free).
  void on_inactive(bool small, std::size_t size) noexcept {
    if (!active_tracked_) return;
    count_down(DAO_STAT_ACTIVE_BYTES, small, static_cast<std::int64_t>(size));
    count_down(DAO_STAT_ACTIVE_BLOCKS, small, 1);
  }
  void on_split(bool small, std::size_t size, bool add) noexcept {
    const auto bytes = static_cast<std::int64_t>(size);
    if (add) {
      count_up(DAO_STAT_INACTIVE_SPLIT_BYTES, small, bytes);
      count_up(DAO_STAT_INACTIVE_SPLIT_BLOCKS, small, 1);
    } else {
      count_down(DAO_STAT_INACTIVE_SPLIT_BYTES, small, bytes);
      count_down(DAO_STAT_INACTIVE_SPLIT_BLOCKS, small, 1);
    }
  }

  // Active blocks are the allocated ones until a free is deferred
  // (record_stream): until then the active statistics are not kept apart,
  // which saves the hot paths four updates.
  bool active_tracked() const noexcept { return active_tracked_; }
  void track_active() noexcept;

  std::int64_t total(int metric) const noexcept { return stats_[metric].total(); }
  stat_value all(int metric) const noexcept { return stats_[metric].get(DAO_STAT_POOL_ALL); }
  // The counts of events (allocations, frees, system calls, retries,
  // failures); the byte fields are filled by summary().
  allocator_counters& counters() noexcept { return counters_; }
  const allocator_counters& counters() const noexcept { return counters_; }
  allocator_counters summary(std::size_t largest_free_block) const noexcept;
  dao_stat stat(int metric, int pool_kind) const noexcept;
  void reset_peaks() noexcept;
  void reset_accumulated() noexcept;

  // The out-of-memory error for a request of `bytes`, `why` it failed.
  out_of_memory oom(std::size_t bytes, const char* why, const std::string& place,
                    const memory_info& info, std::size_t limit, bool expandable,
                    std::size_t largest_free_block) const;

 private:
  // A metric kept for the small and the large pool; of the total only the
  // peak is kept, the rest is their sum (half the updates on the hot paths).
  struct pooled_stat {
    stat_value part[2];  // [0] large, [1] small
    std::int64_t total_peak = 0;

    void up(bool small, std::int64_t amount) noexcept {
      part[small].up(amount);
      const std::int64_t total = part[0].current + part[1].current;
      total_peak = total > total_peak ? total : total_peak;
    }
    void down(bool small, std::int64_t amount) noexcept { part[small].down(amount); }
    std::int64_t total() const noexcept { return part[0].current + part[1].current; }
    stat_value get(int pool_kind) const noexcept {
      if (pool_kind == DAO_STAT_POOL_SMALL) return part[1];
      if (pool_kind == DAO_STAT_POOL_LARGE) return part[0];
      stat_value all;
      all.current = total();
      all.peak = total_peak;
      all.allocated = part[0].allocated + part[1].allocated;
      all.freed = part[0].freed + part[1].freed;
      return all;
    }
    void reset_peak() noexcept {
      part[0].reset_peak();
      part[1].reset_peak();
      total_peak = total();
    }
    void reset_accumulated() noexcept {
      part[0].reset_accumulated();
      part[1].reset_accumulated();
    }
  };

  pooled_stat stats_[DAO_STAT_METRIC_COUNT];
  bool active_tracked_ = false;
  allocator_counters counters_;  // counts and the summary of stats_
};

// The reports read from the other parts, which must be merged first (no
// recent blocks: see block_pool::merge_all_recent()).
// The largest block servable without new memory.
std::size_t largest_free_block(const segment_map& segments, const block_pool& blocks) noexcept;
// The segments in address order, each with its blocks.
std::unique_ptr<snapshot_data> build_snapshot(const segment_map& segments, const block_pool& blocks,
                                              const stream_order& streams);

}  // namespace dao::detail
