// The caching strategy's segments and its upstream: segments, pages mapped
// and unmapped, the headroom and the limit (see segment_map.hpp).
#include "strategy/segment_map.hpp"

#include <algorithm>
#include <iterator>

namespace dao::detail {

namespace {

constexpr std::size_t kSmallBuffer = std::size_t(2) << 20;           // small segments
constexpr std::size_t kLargeBuffer = caching_options::kLargeBuffer;  // 1-10 MiB segments
constexpr std::size_t kMinLargeAlloc = std::size_t(10) << 20;
constexpr std::size_t kRoundLarge = std::size_t(2) << 20;
constexpr std::size_t kMaxArena = std::size_t(1) << 40;  // addresses per segment
constexpr std::size_t kMapPage = std::size_t(20) << 20;  // growth past the budget, at most
constexpr double kHeadroomStep = 0.05;        // reserve_headroom widens by this under churn
constexpr double kMaxHeadroom = 1.0;          // and up to this
constexpr std::uint64_t kChurnEvents = 256;   // releases that first widen it
constexpr std::uint64_t kChurnRatio = 65536;  // and at least one per this many allocations

std::size_t round_up(std::size_t x, std::size_t unit) noexcept {
  return (x + unit - 1) / unit * unit;
}
std::size_t round_down(std::size_t x, std::size_t unit) noexcept { return x / unit * unit; }

}  // namespace

segment_map::segment_map(memory_source& upstream, const caching_options& options,
                         caching_stats& stats)
    : upstream_(upstream, options.limit),
      stats_(stats),
      reserve_slack_(options.reserve_slack),
      no_caching_(options.no_caching) {
  grow();
  host_memory_ = upstream.host_accessible();
  headroom_ = options.reserve_headroom;
  churn_threshold_ = kChurnEvents;
  if (options.expandable_segments) granularity_ = upstream.map_granularity();
  unmaps_in_part_ = upstream.unmaps_in_part();
  map_chunk_ = options.map_chunk;
  if (granularity_ != 0) {
    const std::size_t large = upstream.large_page_size();
    if (large > granularity_ && large % granularity_ == 0) large_page_ = large;
  }
  if (granularity_ != 0) {
    // Addresses cost nothing: reserve several times the place's memory per
    // expandable segment so that holes never run it out of addresses.
    std::size_t total = upstream.info().total_bytes;
    std::size_t want = std::max<std::size_t>(total, std::size_t(16) << 20);
    arena_size_ = round_up(std::min(want * 4, kMaxArena), granularity_);
  }
}

segment_map::~segment_map() {
  for (std::uint32_t i = 0; i < segments_.size(); ++i) {
    segment& seg = segments_[i];
    if (!seg.live) continue;
    if (seg.expandable) {
      for (const auto& [start, end] : seg.mapped) {
        unpoison(seg.base + start, end - start);
        upstream_.unmap(reinterpret_cast<void*>(seg.base + start), end - start);
      }
      upstream_.release_addresses(reinterpret_cast<void*>(seg.base), seg.size);
    } else {
      unpoison(seg.base, seg.size);
      upstream_.deallocate(reinterpret_cast<void*>(seg.base), seg.size);
    }
  }
}

void segment_map::grow() {
  if (segments_.capacity() < segments_.size() + 1)
    segments_.reserve(std::max<std::size_t>(8, segments_.capacity() * 2));
}

memory_info segment_map::info() const noexcept {
  memory_info info{};
  try {
    info = upstream_.info();
  } catch (...) {
  }
  return info;
}

// ------------------------------------------------------------- the limit

// The limit source counts exactly what reserved memory counts: what is
// allocated and mapped through it.
std::size_t segment_map::limit() const noexcept { return upstream_.limit().cap(); }

bool segment_map::within_limit(std::size_t extra) const noexcept {
  return upstream_.limit().fits(extra);
}

// -------------------------------------------------------------- segments

std::size_t segment_map::segment_size(std::size_t rounded) const noexcept {
  if (no_caching_) return rounded;
  if (rounded <= caching_options::kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

segment_map::range segment_map::obtain(std::size_t size) {
  if (granularity_ != 0) {
    // Address space can be limited (ulimit -v, valgrind): settle for less,
    // halving down to what the request needs.
    const std::size_t needed = round_up(size, granularity_) + granularity_;
    std::size_t bytes = std::max(arena_size_, needed);
    while (true) {
      try {
        void* base = upstream_.reserve_addresses(bytes);
        return range{reinterpret_cast<std::uintptr_t>(base), bytes, true};
      } catch (const out_of_memory&) {
        if (bytes == needed) throw;
        bytes = std::max(needed, round_up(bytes / 2, granularity_));
      }
    }
  }
  std::size_t wanted = segment_size(size);
  void* p = nullptr;
  if (within_limit(wanted)) {
    try {
      p = upstream_.allocate(wanted);
    } catch (const out_of_memory&) {
      if (wanted == size) throw;
    }
  }
  if (p == nullptr) {
    wanted = size;
    if (!within_limit(wanted)) throw out_of_memory("the allocator's limit would be exceeded");
    p = upstream_.allocate(wanted);
  }
  return range{reinterpret_cast<std::uintptr_t>(p), wanted, false};
}

void segment_map::give_back(const range& r) noexcept {
  if (r.expandable) upstream_.release_addresses(reinterpret_cast<void*>(r.base), r.size);
  else upstream_.deallocate(reinterpret_cast<void*>(r.base), r.size);
}

std::uint32_t segment_map::add(std::uint32_t pool_index, bool small, const range& r) {
  std::uint32_t si = kNone;
  for (std::uint32_t i = 0; i < segments_.size(); ++i)
    if (!segments_[i].live) si = i;
  if (si == kNone) {
    segments_.emplace_back();  // capacity reserved
    si = static_cast<std::uint32_t>(segments_.size() - 1);
  }
  segment& seg = segments_[si];
  seg = segment{};
  seg.base = r.base;
  seg.size = r.size;
  seg.pool = pool_index;
  seg.small = small;
  seg.expandable = r.expandable;
  seg.live = true;
  stats_.count(DAO_STAT_RESERVED_SEGMENTS, small, 1);
  if (!r.expandable) {
    stats_.count(DAO_STAT_RESERVED_BYTES, small, static_cast<std::int64_t>(r.size));
    ++stats_.counters().system_alloc_count;
    poison(r.base, r.size);  // all free
  }
  return si;
}

void segment_map::release(std::uint32_t index) noexcept {
  segment& seg = segments_[index];
  const bool small = seg.small;
  if (seg.expandable) {
    for (const auto& [start, end] : seg.mapped) {
      unpoison(seg.base + start, end - start);
      upstream_.unmap(reinterpret_cast<void*>(seg.base + start), end - start);
      stats_.count(DAO_STAT_RESERVED_BYTES, small, -static_cast<std::int64_t>(end - start));
      ++stats_.counters().system_free_count;
    }
    seg.mapped.clear();
    seg.mapped_bytes = 0;
    seg.mapped_prefix = 0;
    upstream_.release_addresses(reinterpret_cast<void*>(seg.base), seg.size);
  } else {
    unpoison(seg.base, seg.size);
    upstream_.deallocate(reinterpret_cast<void*>(seg.base), seg.size);
    stats_.count(DAO_STAT_RESERVED_BYTES, small, -static_cast<std::int64_t>(seg.size));
    ++stats_.counters().system_free_count;
  }
  stats_.count(DAO_STAT_RESERVED_SEGMENTS, small, -1);
  seg.live = false;
}

// ----------------------------------------------------------------- pages

std::size_t segment_map::first_ending_after(const segment& seg, std::size_t offset) noexcept {
  auto it = std::upper_bound(seg.mapped.begin(), seg.mapped.end(), offset,
                             [](std::size_t x, const interval& v) { return x < v.end; });
  return static_cast<std::size_t>(it - seg.mapped.begin());
}

bool segment_map::backed(std::uint32_t index, std::uintptr_t start,
                         std::size_t bytes) const noexcept {
  const segment& seg = segments_[index];
  if (!seg.expandable) return true;
  const std::size_t lo = start - seg.base, hi = lo + bytes;
  if (hi <= seg.mapped_prefix) return true;
  // The mapping holding `lo`, then its contiguous neighbours up to `hi`.
  std::size_t i = first_ending_after(seg, lo);
  if (i == seg.mapped.size() || seg.mapped[i].start > lo) return false;
  std::size_t covered = seg.mapped[i].end;
  while (covered < hi && ++i < seg.mapped.size() && seg.mapped[i].start == covered)
    covered = seg.mapped[i].end;
  return covered >= hi;
}

void segment_map::update_prefix(segment& seg) noexcept {
  std::size_t prefix = 0;
  for (const interval& v : seg.mapped) {
    if (v.start != prefix) break;
    prefix = v.end;
  }
  seg.mapped_prefix = prefix;
}

// Records [start, end) as mapped; the capacity is there (reserved before
// the upstream was called), so this cannot fail.
void segment_map::insert_mapped(segment& seg, std::size_t start, std::size_t end,
                                bool merge) noexcept {
  std::vector<interval>& v = seg.mapped;
  std::size_t pos = first_ending_after(seg, start);  // the first one past `start`
  if (merge && pos > 0 && v[pos - 1].end == start) {
    v[pos - 1].end = end;
    if (pos < v.size() && v[pos].start == end) {
      v[pos - 1].end = v[pos].end;
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(pos));
    }
    return;
  }
  if (merge && pos < v.size() && v[pos].start == end) {
    v[pos].start = start;
    return;
  }
  v.insert(v.begin() + static_cast<std::ptrdiff_t>(pos), interval{start, end});
}

// How far past a request to map when a segment grows at its end: a sixteenth
// of what the segment maps, so that growing from nothing to N bytes takes
// O(log N) system calls at any scale, while the memory mapped ahead stays
// within 1/16 of the peak (measured on the somas traces: bench/README.md).
std::size_t segment_map::map_ahead(const segment& seg) const noexcept {
  if (exact_mapping_) return 0;
  return round_up(seg.mapped_bytes / 16, granularity_);
}

bool segment_map::plan_mapping(std::uint32_t index, std::uintptr_t start, std::size_t bytes,
                               mapping& m) const {
  const segment& seg = segments_[index];
  const std::size_t g = granularity_;
  const std::size_t lo = round_down(start - seg.base, g);
  const std::size_t hi = round_up(start - seg.base + bytes, g);
  // Unmapped gaps in [lo, hi).
  int n = 0;
  std::size_t cursor = lo;
  for (std::size_t i = first_ending_after(seg, lo); cursor < hi; ++i) {
    const std::size_t gap_end = i < seg.mapped.size() ? std::min(hi, seg.mapped[i].start) : hi;
    if (gap_end > cursor) {
      if (n == 64) break;  // mapped below; the rest on a later call
      m.gaps[n][0] = cursor;
      m.gaps[n][1] = gap_end;
      ++n;
    }
    if (i >= seg.mapped.size()) break;
    cursor = std::max(cursor, seg.mapped[i].end);
  }
  m.n = n;
  if (n == 0) return false;
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) total += m.gaps[i][1] - m.gaps[i][0];
  // Growing at the end of what is mapped: map a little ahead.
  std::size_t ahead = 0;
  if (m.gaps[n - 1][1] == hi && (seg.mapped.empty() || seg.mapped.back().end <= hi)) {
    ahead = std::min(map_ahead(seg), seg.size - hi);
    m.gaps[n - 1][1] += ahead;
    total += ahead;
  }
  m.total = total;
  m.ahead = ahead;
  return true;
}

// How far reserved memory may grow before cached pages are given back
// (SIZE_MAX: no bound): (1 + reserve_slack) times the memory in use with the
// request, and (1 + reserve_headroom) times the peak of memory in use.
std::size_t segment_map::reserve_budget(std::size_t request) const noexcept {
  if (no_caching_) return SIZE_MAX;
  const stat_value allocated = stats_.all(DAO_STAT_ALLOCATED_BYTES);
  const auto in_use = static_cast<double>(allocated.current) + static_cast<double>(request);
  double budget = static_cast<double>(SIZE_MAX);
  if (reserve_slack_ >= 0) budget = in_use * (1 + reserve_slack_);
  if (headroom_ >= 0) {
    const double peak = std::max(in_use, static_cast<double>(allocated.peak));
    budget = std::min(budget, peak * (1 + headroom_));
  }
  return budget >= static_cast<double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(budget);
}

std::size_t segment_map::over_budget(mapping& m, std::size_t bytes) const noexcept {
  const std::size_t budget = reserve_budget(bytes);
  const auto reserved = static_cast<std::size_t>(stats_.total(DAO_STAT_RESERVED_BYTES));
  // Over the budget: first map no look-ahead, then give back cached pages.
  if (reserved + m.total > budget && m.ahead > 0) {
    // But still up to the next page boundary where the budget has room, as
    // PyTorch maps whole pages: a segment growing in small steps then pays
    // one driver call per page, not one per step, and the last page maps
    // no more than it (a look-ahead of a sixteenth would, at the peak).
    const std::size_t needed = reserved + m.total - m.ahead;
    const std::size_t end = m.gaps[m.n - 1][1] - m.ahead;
    std::size_t keep = 0;
    if (needed < budget)
      keep = round_down(std::min({m.ahead, round_up(end, kMapPage) - end, budget - needed}),
                        granularity_);
    m.gaps[m.n - 1][1] -= m.ahead - keep;
    m.total -= m.ahead - keep;
    m.ahead = keep;
  }
  return reserved + m.total > budget ? reserved + m.total - budget : 0;
}

// Each release for the budget is system calls paid for memory saved, and the
// pages are mapped again later. When they come often (at least
// kChurnEvents, and one per kChurnRatio allocations since the headroom last
// widened), the workload fragments more than the headroom allows: widen it,
// faster each time.
void segment_map::note_churn() noexcept {
  ++churn_events_;
  const std::uint64_t alloc_count = stats_.counters().alloc_count;
  const std::uint64_t allocations = alloc_count - allocs_at_widen_;
  if (churn_events_ >= churn_threshold_ && churn_events_ * kChurnRatio >= allocations &&
      headroom_ < kMaxHeadroom) {
    headroom_ = std::min(kMaxHeadroom, headroom_ + kHeadroomStep);
    churn_threshold_ = std::max<std::uint64_t>(16, churn_threshold_ / 2);
    churn_events_ = 0;
    allocs_at_widen_ = alloc_count;
  }
}

// The largest physical allocation one map() call makes on a card (see
// docs/caching.md, "Mapping on a card"): the map_chunk option, else a
// sixteenth of what the segment will map, 20 MiB (PyTorch's large page)
// times a power of two, up to 1 GiB. The driver charges per allocation,
// nearly whatever its size; what stays mapped because a live block holds
// part of an allocation is bounded by the same sixteenth.
std::size_t segment_map::chunk_limit(const segment& seg, std::size_t adding) const noexcept {
  if (map_chunk_ != 0) return std::max(granularity_, round_down(map_chunk_, granularity_));
  const std::size_t basis = std::min((seg.mapped_bytes + adding) / 16, std::size_t(1) << 30);
  std::size_t chunk = kMapPage;
  while (chunk * 2 <= basis) chunk *= 2;
  return round_up(chunk, granularity_);
}

void segment_map::map(std::uint32_t index, const mapping& m) {
  segment& seg = segments_[index];
  const int n = m.n;
  if (!within_limit(m.total)) throw out_of_memory("the allocator's limit would be exceeded");
  // The pieces, each one upstream map() call: a gap where the upstream
  // unmaps in part; on a card, pieces of at most chunk_limit(), even in
  // size. Room to record them is made first: nothing can fail after the
  // upstream has mapped.
  const std::size_t chunk = unmaps_in_part_ ? SIZE_MAX : chunk_limit(seg, m.total);
  std::vector<interval> pieces;
  std::size_t count = 0;
  for (int i = 0; i < n; ++i) {
    const std::size_t len = m.gaps[i][1] - m.gaps[i][0];
    count += len / chunk + (len % chunk != 0);
  }
  pieces.reserve(count);
  seg.mapped.reserve(seg.mapped.size() + count + 1);
  for (int i = 0; i < n; ++i) {
    const std::size_t a = m.gaps[i][0], len = m.gaps[i][1] - a;
    const std::size_t k = len / chunk + (len % chunk != 0);
    const std::size_t piece = round_up((len + k - 1) / k, granularity_);
    for (std::size_t at = a; at < a + len; at += piece)
      pieces.push_back(interval{at, std::min(a + len, at + piece)});
  }
  std::size_t done = 0;
  try {
    for (; done < pieces.size(); ++done)
      upstream_.map(reinterpret_cast<void*>(seg.base + pieces[done].start),
                    pieces[done].end - pieces[done].start);
  } catch (...) {
    for (std::size_t i = 0; i < done; ++i)
      upstream_.unmap(reinterpret_cast<void*>(seg.base + pieces[i].start),
                      pieces[i].end - pieces[i].start);
    throw;
  }
  for (const interval& p : pieces) {
    poison(seg.base + p.start, p.end - p.start);  // free until carved
    insert_mapped(seg, p.start, p.end, unmaps_in_part_);
    seg.mapped_bytes += p.end - p.start;
    stats_.count(DAO_STAT_RESERVED_BYTES, seg.small, static_cast<std::int64_t>(p.end - p.start));
    ++stats_.counters().system_alloc_count;
  }
  update_prefix(seg);
}

void segment_map::unmap_whole(segment& seg, std::size_t i) noexcept {
  const interval v = seg.mapped[i];
  unpoison(seg.base + v.start, v.end - v.start);
  upstream_.unmap(reinterpret_cast<void*>(seg.base + v.start), v.end - v.start);
  ++stats_.counters().system_free_count;
  seg.mapped.erase(seg.mapped.begin() + static_cast<std::ptrdiff_t>(i));
}

std::size_t segment_map::unmap_range(std::uint32_t index, std::uintptr_t from, std::uintptr_t to,
                                     std::size_t limit, std::size_t unit) noexcept {
  segment& seg = segments_[index];
  if (!unmaps_in_part_) unit = 1;  // whole mappings: their bounds are granule-aligned
  const std::size_t lo = round_up(from - seg.base, unit);
  const std::size_t hi = round_down(to - seg.base, unit);
  if (lo >= hi || limit == 0) return 0;
  std::size_t released = 0;
  // The mappings that overlap [lo, hi), highest first.
  std::vector<interval>& v = seg.mapped;
  std::size_t i = first_ending_after(seg, hi);
  if (i < v.size() && v[i].start < hi) ++i;  // it overlaps hi: look at it too
  while (released < limit && i > 0) {
    --i;
    const std::size_t a = v[i].start, e = v[i].end;
    if (e <= lo) break;
    if (!unmaps_in_part_) {
      if (a >= lo && e <= hi) {
        unmap_whole(seg, i);
        released += e - a;
      }
      continue;
    }
    const std::size_t cut_hi = round_down(std::min(e, hi), unit);
    std::size_t cut_lo = round_up(std::max(a, lo), unit);
    if (cut_lo >= cut_hi) continue;
    if (limit != SIZE_MAX && cut_hi - cut_lo > limit - released)
      cut_lo = cut_hi - round_up(limit - released, unit);
    const bool keep_low = a < cut_lo, keep_high = cut_hi < e;
    if (keep_low && keep_high && v.size() == v.capacity()) {
      // The cut leaves two runs: one more entry, whose room map() kept
      // unless an earlier cut took it. Without memory for it, this run
      // stays mapped (and recorded) rather than being lost.
      try {
        v.reserve(v.size() + 8);
      } catch (...) {
        continue;
      }
    }
    unpoison(seg.base + cut_lo, cut_hi - cut_lo);
    upstream_.unmap(reinterpret_cast<void*>(seg.base + cut_lo), cut_hi - cut_lo);
    released += cut_hi - cut_lo;
    ++stats_.counters().system_free_count;
    if (keep_low && keep_high) {
      v[i].end = cut_lo;
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(i + 1), interval{cut_hi, e});
    } else if (keep_low) {
      v[i].end = cut_lo;
    } else if (keep_high) {
      v[i].start = cut_hi;
    } else {
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  seg.mapped_bytes -= released;
  update_prefix(seg);
  stats_.count(DAO_STAT_RESERVED_BYTES, seg.small, -static_cast<std::int64_t>(released));
  return released;
}

}  // namespace dao::detail
