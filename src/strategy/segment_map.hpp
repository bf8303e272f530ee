// The caching strategy's segments and everything it asks of its upstream:
// classic segments (PyTorch's sizes) and expandable ones (reserved
// addresses whose pages are mapped when blocks need them and unmapped when
// cache is released), how far reserved memory may grow (the headroom and
// its widening under churn), and the limit (max_pool, memory_fraction).
// Every call on the upstream is made here. Knows segments as address
// ranges; which blocks they hold is block_pool's.
//
// Where the upstream offers virtual memory (CPU, SIM, CUDA devices), each
// stream grows one expandable segment, shared by small and large blocks: a
// large reserved address range. Best fit then works across what would
// otherwise be separate segments, so fragmentation stays close to that of
// one ideal arena, and a full device can still serve a request whenever
// enough pages are free. Elsewhere (pinned, managed memory) it carves
// PyTorch's segments: 2 MiB for small requests, 20 MiB for 1-10 MiB, larger
// ones rounded to 2 MiB, and segments of exactly the rounded size when a
// device has no room for more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "resource/stream.hpp"
#include "resource/system_resource.hpp"
#include "strategy/limit.hpp"
#include "strategy/caching_options.hpp"
#include "strategy/caching_stats.hpp"
#include "util/asan_poison.hpp"

namespace dao::detail {

class segment_map {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // A mapped range of an expandable segment, as offsets [start, end).
  struct interval {
    std::size_t start = 0;
    std::size_t end = 0;
  };
  struct segment {
    std::uintptr_t base = 0;
    std::size_t size = 0;  // bytes of addresses
    std::uint32_t pool = kNone;
    bool small = false;  // of a small pool (for the statistics)
    bool expandable = false;
    bool live = false;
    // Expandable: what is mapped, sorted. Where the upstream unmaps in part
    // (host pages) neighbours are merged; on a card each is what one map()
    // call mapped, one physical allocation, unmapped only whole. Its
    // capacity keeps room for one more entry, so that cutting a range out
    // never needs memory (defect: a failed insertion lost live pages).
    std::vector<interval> mapped;
    std::size_t mapped_bytes = 0;
    std::size_t mapped_prefix = 0;  // [0, mapped_prefix) is mapped: the fast check
  };
  // Memory (or addresses) from the upstream for a segment not added yet.
  struct range {
    std::uintptr_t base = 0;
    std::size_t size = 0;
    bool expandable = false;
  };
  // The unmapped granules of a request in an expandable segment, and how
  // much is mapped ahead of it (see plan_mapping()).
  struct mapping {
    std::size_t gaps[64][2];  // offsets [start, end)
    int n = 0;
    std::size_t total = 0;
    std::size_t ahead = 0;
  };

  // `stats`: where reserved memory and system calls are counted; it
  // outlives this. Gives every segment back when destroyed.
  segment_map(memory_source& upstream, const caching_options& options, caching_stats& stats);
  ~segment_map();
  segment_map(const segment_map&) = delete;
  segment_map& operator=(const segment_map&) = delete;

  // Whether segments are expandable (the upstream maps memory).
  bool expandable() const noexcept { return granularity_ != 0; }
  // Whether a mapping is unmapped only whole (a card's physical
  // allocations), and the largest one map() call makes then, when `adding`
  // bytes are about to be mapped.
  bool whole_mappings() const noexcept { return !unmaps_in_part_; }
  std::size_t chunk_limit(const segment& seg, std::size_t adding) const noexcept;
  std::size_t granularity() const noexcept { return granularity_; }
  std::size_t large_page() const noexcept { return large_page_; }

  std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(segments_.size()); }
  const segment& operator[](std::uint32_t index) const noexcept { return segments_[index]; }
  void grow();  // room for one more segment (may throw; changes nothing)

  // Memory for a new segment able to hold `size`: addresses only
  // (expandable), or an allocation of PyTorch's sizes, or of exactly `size`
  // when the place or the limit has no room for more. Throws out_of_memory.
  range obtain(std::size_t size);
  // Gives back what obtain() returned, never added.
  void give_back(const range& r) noexcept;
  // Adds a segment of pool `pool_index` over `r`; returns its index.
  std::uint32_t add(std::uint32_t pool_index, bool small, const range& r);
  // Gives segment `index` back to the upstream (its blocks are gone).
  void release(std::uint32_t index) noexcept;

  // Whether [start, start+bytes) lies in the mapped prefix (the fast check).
  bool prefix_holds(std::uint32_t index, std::uintptr_t start, std::size_t bytes) const noexcept {
    const segment& seg = segments_[index];
    return start - seg.base + bytes <= seg.mapped_prefix;
  }
  // Whether [start, start+bytes) is mapped (always, in a classic segment).
  bool backed(std::uint32_t index, std::uintptr_t start, std::size_t bytes) const noexcept;
  // Mapping [start, start+bytes): the unmapped gaps (at most 64: the rest on
  // a later call), and a little ahead when the segment grows at its end.
  // False when everything is mapped.
  bool plan_mapping(std::uint32_t index, std::uintptr_t start, std::size_t bytes, mapping& m) const;
  // How many bytes mapping `m` for a request of `bytes` would put reserved
  // memory over its budget (0: none); over it, `m` first loses its look-ahead.
  std::size_t over_budget(mapping& m, std::size_t bytes) const noexcept;
  // Cached pages were given back to keep within the budget: when that comes
  // often, the headroom widens.
  void note_churn() noexcept;
  // reserve_headroom in effect (widened under churn); negative: none.
  double headroom() const noexcept { return headroom_; }
  // Maps the gaps of `m`, all or nothing: on a card in physical allocations
  // of at most chunk_limit() each. Throws out_of_memory past the limit.
  void map(std::uint32_t index, const mapping& m);
  // Under pressure: map no more than needed.
  void set_exact_mapping(bool exact) noexcept { exact_mapping_ = exact; }
  // Unmaps the mapped runs of `unit` bytes (granules, or large pages) that
  // lie wholly inside [from, to), a free range of an expandable segment,
  // from the highest down, until at least `limit` bytes (rounded up to
  // units) are given back; on a card, the whole mappings that lie inside
  // it (`unit` does not apply). Returns the bytes given back. Needs no
  // memory: where a cut would, and none is left, that run stays mapped.
  std::size_t unmap_range(std::uint32_t index, std::uintptr_t from, std::uintptr_t to,
                          std::size_t limit, std::size_t unit) noexcept;

  // The limit on reserved memory (max_pool, memory_fraction of the place's
  // capacity), 0 for none, and whether `extra` more bytes stay within it.
  std::size_t limit() const noexcept;
  bool within_limit(std::size_t extra) const noexcept;

  // The rest of what the strategy asks of its upstream.
  dao_place place() const noexcept { return upstream_.place(); }
  bool host_accessible() const noexcept { return host_memory_; }
  // The place's memory; all zero when it cannot be asked.
  memory_info info() const noexcept;
  std::unique_ptr<event_impl> new_event() { return upstream_.resource().create_event(); }

 private:
  std::size_t segment_size(std::size_t rounded) const noexcept;
  std::size_t map_ahead(const segment& seg) const noexcept;
  std::size_t reserve_budget(std::size_t request) const noexcept;
  static void update_prefix(segment& seg) noexcept;
  static std::size_t first_ending_after(const segment& seg, std::size_t offset) noexcept;
  static void insert_mapped(segment& seg, std::size_t start, std::size_t end, bool merge) noexcept;
  void map_gap(segment& seg, std::size_t start, std::size_t end, std::size_t chunk);
  void unmap_whole(segment& seg, std::size_t i) noexcept;
  void poison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_poison(reinterpret_cast<const void*>(addr), bytes);
  }
  void unpoison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_unpoison(reinterpret_cast<const void*>(addr), bytes);
  }

  limit_source upstream_;  // the strategy's upstream, capped by max_pool / memory_fraction
  caching_stats& stats_;
  double reserve_slack_;
  bool no_caching_;
  bool host_memory_ = false;           // upstream_.host_accessible(), for poisoning
  std::size_t granularity_ = 0;        // 0: no virtual memory upstream
  std::size_t large_page_ = 0;         // upstream's large pages (a multiple of it), or 0
  bool unmaps_in_part_ = true;         // upstream_.unmaps_in_part()
  std::size_t map_chunk_ = 0;          // map_chunk option: largest mapping on a card, 0 auto
  std::size_t arena_size_ = 0;         // addresses reserved per expandable segment
  bool exact_mapping_ = false;         // under pressure: map no more than needed
  double headroom_ = -1;               // reserve_headroom in effect (widens under churn)
  std::uint64_t churn_events_ = 0;     // releases for the headroom since it widened
  std::uint64_t churn_threshold_ = 0;  // churn_events_ that widen it
  std::uint64_t allocs_at_widen_ = 0;  // alloc_count when it last widened
  std::vector<segment> segments_;
};

}  // namespace dao::detail
