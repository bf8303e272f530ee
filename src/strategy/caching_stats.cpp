// What the caching strategy reports: statistics, counters, snapshots, the
// largest free block and the out-of-memory message (see caching_stats.hpp).
#include "strategy/caching_stats.hpp"

#include <algorithm>
#include <vector>

#include "strategy/block_pool.hpp"
#include "strategy/segment_map.hpp"
#include "strategy/stream_order.hpp"
#include "util/format.hpp"

namespace dao::detail {

// From the first deferred free on, active blocks are counted apart from
// allocated ones; until then both statistics are the same in every field.
void caching_stats::track_active() noexcept {
  if (active_tracked_) return;
  stats_[DAO_STAT_ACTIVE_BYTES] = stats_[DAO_STAT_ALLOCATED_BYTES];
  stats_[DAO_STAT_ACTIVE_BLOCKS] = stats_[DAO_STAT_ALLOCATED_BLOCKS];
  active_tracked_ = true;
}

allocator_counters caching_stats::summary(std::size_t largest_free_block) const noexcept {
  allocator_counters c = counters_;
  c.allocated_bytes_stat = stats_[DAO_STAT_ALLOCATED_BYTES].get(DAO_STAT_POOL_ALL);
  c.allocated_blocks_stat = stats_[DAO_STAT_ALLOCATED_BLOCKS].get(DAO_STAT_POOL_ALL);
  c.reserved_bytes_stat = stats_[DAO_STAT_RESERVED_BYTES].get(DAO_STAT_POOL_ALL);
  c.reserved_segments_stat = stats_[DAO_STAT_RESERVED_SEGMENTS].get(DAO_STAT_POOL_ALL);
  c.requested_bytes_stat = stats_[DAO_STAT_REQUESTED_BYTES].get(DAO_STAT_POOL_ALL);
  c.refresh();
  c.largest_free_block = largest_free_block;
  return c;
}

dao_stat caching_stats::stat(int metric, int pool_kind) const noexcept {
  if (!active_tracked_ && metric == DAO_STAT_ACTIVE_BYTES) metric = DAO_STAT_ALLOCATED_BYTES;
  if (!active_tracked_ && metric == DAO_STAT_ACTIVE_BLOCKS) metric = DAO_STAT_ALLOCATED_BLOCKS;
  const stat_value s = stats_[metric].get(pool_kind);
  return dao_stat{s.current, s.peak, s.allocated, s.freed};
}

void caching_stats::reset_peaks() noexcept {
  for (pooled_stat& s : stats_) s.reset_peak();
}

void caching_stats::reset_accumulated() noexcept {
  for (pooled_stat& s : stats_) s.reset_accumulated();
  counters_.reset_accumulated();
}

out_of_memory caching_stats::oom(std::size_t bytes, const char* why, const std::string& place,
                                 const memory_info& info, std::size_t limit, bool expandable,
                                 std::size_t largest_free_block) const {
  const auto allocated = static_cast<std::size_t>(total(DAO_STAT_ALLOCATED_BYTES));
  const auto reserved = static_cast<std::size_t>(total(DAO_STAT_RESERVED_BYTES));
  const std::size_t cached = reserved - std::min(reserved, allocated);
  // Advice only where it can help: fragmentation in classic segments.
  const char* advice =
      !expandable && cached > bytes
          ? ". The reserved but unallocated memory is fragmented: max_split_size_mb may help"
          : "";
  return out_of_memory(strprintf(
      "caching allocator on %s: out of memory: tried to allocate %s (%s). %s has a total "
      "capacity of %s of which %s is free. Of the memory this allocator holds, %s is allocated "
      "and %s is reserved but unallocated; the largest free block is %s (limit: %s)%s",
      place.c_str(), format_bytes(bytes).c_str(), why, place.c_str(),
      format_bytes(info.total_bytes).c_str(), format_bytes(info.free_bytes).c_str(),
      format_bytes(allocated).c_str(), format_bytes(cached).c_str(),
      format_bytes(largest_free_block).c_str(), limit == 0 ? "none" : format_bytes(limit).c_str(),
      advice));
}

// Free blocks, counting in expandable segments only their mapped runs.
std::size_t largest_free_block(const segment_map& segments, const block_pool& blocks) noexcept {
  std::size_t largest = 0;
  for (std::uint32_t si = 0; si < segments.count(); ++si) {
    const segment_map::segment& seg = segments[si];
    if (!seg.live) continue;
    for (std::uint32_t i = blocks.first_of(si); i != block_pool::kNone; i = blocks[i].next) {
      const block_pool::block& b = blocks[i];
      if (b.st != block_pool::state::free) continue;
      if (!seg.expandable) {
        largest = std::max(largest, b.size);
        continue;
      }
      // Contiguous mappings are one run (on a card each is a mapping).
      const std::size_t lo = b.addr - seg.base, hi = lo + b.size;
      std::size_t run_start = 0, run_end = 0;
      for (const auto& [start, end] : seg.mapped) {
        if (start != run_end) run_start = start;
        run_end = end;
        std::size_t a = std::max(run_start, lo), e = std::min(run_end, hi);
        if (a < e) largest = std::max(largest, e - a);
      }
    }
  }
  return largest;
}

std::unique_ptr<snapshot_data> build_snapshot(const segment_map& segments, const block_pool& blocks,
                                              const stream_order& streams) {
  auto snap = std::make_unique<snapshot_data>();
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < segments.count(); ++i)
    if (segments[i].live) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return segments[a].base < segments[b].base; });
  for (std::uint32_t si : order) {
    const segment_map::segment& seg = segments[si];
    snapshot_data::segment out;
    out.info.struct_size = sizeof(dao_segment_info);
    out.info.address = seg.base;
    out.info.size = seg.size;
    out.info.mapped_bytes = seg.expandable ? seg.mapped_bytes : seg.size;
    out.info.pool = seg.small ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE;
    out.info.stream = streams.handle_of_pool(seg.pool);
    out.info.expandable = seg.expandable ? 1 : 0;
    for (std::uint32_t i = blocks.first_of(si); i != block_pool::kNone; i = blocks[i].next) {
      const block_pool::block& b = blocks[i];
      dao_block_info info{};
      info.struct_size = sizeof(dao_block_info);
      info.address = b.addr;
      info.size = b.size;
      info.requested_size = b.requested;
      info.state = b.st == block_pool::state::free        ? DAO_BLOCK_FREE
                   : b.st == block_pool::state::allocated ? DAO_BLOCK_ALLOCATED
                                                          : DAO_BLOCK_PENDING_FREE;
      // Its pool's stream (a block's stream is its pool's; the stream
      // object itself may be destroyed by now: never dereferenced here).
      info.stream = b.pool != block_pool::kNone ? streams.handle_of_pool(b.pool) : nullptr;
      out.blocks.push_back(info);
    }
    out.info.block_count = out.blocks.size();
    snap->segments.push_back(std::move(out));
  }
  return snap;
}

}  // namespace dao::detail
