#include "strategy/caching.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

constexpr std::size_t kMinBlock = 512;                      // smallest block
constexpr std::size_t kSmallBuffer = std::size_t(2) << 20;  // small segments
constexpr std::size_t kLargeBuffer = std::size_t(20) << 20; // 1-10 MiB segments
constexpr std::size_t kMinLargeAlloc = std::size_t(10) << 20;
constexpr std::size_t kRoundLarge = std::size_t(2) << 20;
constexpr std::size_t kMaxArena = std::size_t(1) << 40;     // addresses per segment
constexpr double kHeadroomStep = 0.05;  // reserve_headroom widens by this under churn
constexpr double kMaxHeadroom = 1.0;    // and up to this
constexpr std::uint64_t kChurnEvents = 256;  // releases that first widen it
constexpr std::uint64_t kChurnRatio = 65536;  // and at least one per this many allocations

std::size_t round_up(std::size_t x, std::size_t unit) noexcept { return (x + unit - 1) / unit * unit; }
std::size_t round_down(std::size_t x, std::size_t unit) noexcept { return x / unit * unit; }

bool is_power_of_two(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

// "none" (-1) or a fraction from 0 to 1000.
double parse_fraction_or_none(const std::string& text, const char* key, const char* ctx) {
  if (text == "none") return -1;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(x >= 0 && x <= 1000))
    throw invalid_argument(
        strprintf("%s: %s='%s' must be 'none' or a fraction >= 0", ctx, key, text.c_str()));
  return x;
}

}  // namespace

// ---------------------------------------------------------------- options

caching_options caching_options::from_config(config& cfg, const memory_source& upstream) {
  caching_options o;
  const char* ctx = cfg.context().c_str();
  if (auto v = cfg.take_size("max_split_size")) o.max_split_size = *v == 0 ? SIZE_MAX : *v;
  if (auto v = cfg.take_double("max_split_size_mb")) {
    // Range first: converting a double beyond size_t is undefined, and the
    // MiB must still fit in bytes.
    constexpr double kMaxMib = static_cast<double>(SIZE_MAX >> 20);
    if (!(*v >= 0 && *v <= kMaxMib) || *v != static_cast<double>(static_cast<std::size_t>(*v)))
      throw invalid_argument(strprintf(
          "%s: max_split_size_mb must be a whole number of MiB from 0 to %zu", ctx,
          static_cast<std::size_t>(SIZE_MAX >> 20)));
    o.max_split_size = *v == 0 ? SIZE_MAX : static_cast<std::size_t>(*v) << 20;
  }
  if (o.max_split_size != SIZE_MAX && o.max_split_size <= kLargeBuffer) {
    throw invalid_argument(strprintf(
        "%s: max_split_size must be larger than 20 MiB (blocks that large are never split), "
        "or 0 for no limit",
        ctx));
  }
  if (auto v = cfg.take_double("roundup_power2_divisions")) {
    if (*v < 0 || *v > 64 || (*v != 0 && !is_power_of_two(static_cast<std::size_t>(*v))) ||
        *v != static_cast<double>(static_cast<unsigned>(*v)))
      throw invalid_argument(strprintf("%s: roundup_power2_divisions must be 0 or a power of two "
                                       "up to 64",
                                       ctx));
    o.roundup_power2_divisions = static_cast<unsigned>(*v);
  }
  if (auto v = cfg.take_double("garbage_collection_threshold")) {
    if (!(*v >= 0 && *v < 1))
      throw invalid_argument(strprintf("%s: garbage_collection_threshold must be in [0, 1)", ctx));
    o.garbage_collection_threshold = *v;
  }
  if (auto v = cfg.take_double("memory_fraction")) {
    if (!(*v >= 0 && *v <= 1))
      throw invalid_argument(strprintf("%s: memory_fraction must be in [0, 1] (0: no limit)", ctx));
    o.memory_fraction = *v;
  }
  if (auto v = cfg.take_size("max_pool")) o.max_pool = *v;
  if (auto v = cfg.take_bool("expandable_segments")) o.expandable_segments = *v;
  if (auto v = cfg.take_bool("fast_reuse")) o.fast_reuse = *v;
  if (auto v = cfg.take_string("reserve_slack")) o.reserve_slack = parse_fraction_or_none(*v, "reserve_slack", ctx);
  const auto headroom = cfg.take_string("reserve_headroom");
  if (headroom) o.reserve_headroom = parse_fraction_or_none(*headroom, "reserve_headroom", ctx);
  cfg.reject_unknown({"max_split_size", "max_split_size_mb", "roundup_power2_divisions",
                      "garbage_collection_threshold", "memory_fraction", "max_pool",
                      "expandable_segments", "reserve_slack", "reserve_headroom", "fast_reuse"});
  if (o.garbage_collection_threshold > 0 && o.memory_fraction == 0 && o.max_pool == 0 &&
      upstream.info().total_bytes == 0) {
    throw invalid_argument(strprintf("%s: garbage_collection_threshold needs a limit: set "
                                     "memory_fraction or max_pool",
                                     ctx));
  }
  if (const char* env = std::getenv("DAO_NO_CACHING"); env != nullptr && std::strcmp(env, "1") == 0)
    o.no_caching = true;
  if (o.no_caching) o.expandable_segments = o.fast_reuse = false;
  // Fast reuse is for speed: pages given back to keep within the headroom
  // fault in again when reused, which costs more than fast reuse saves
  // (bench_alloc: 95-110 against 61-64 ns per pair). Unless asked for, none.
  if (o.fast_reuse && !headroom) o.reserve_headroom = -1;
  return o;
}

std::string caching_strategy::effective_config() const {
  return strprintf(
      "max_split_size=%s,roundup_power2_divisions=%u,garbage_collection_threshold=%s,"
      "memory_fraction=%s,max_pool=%s,expandable_segments=%s,reserve_slack=%s,"
      "reserve_headroom=%s,fast_reuse=%s",
      options_.max_split_size == SIZE_MAX ? "0" : format_size_exact(options_.max_split_size).c_str(),
      options_.roundup_power2_divisions,
      format_double_exact(options_.garbage_collection_threshold).c_str(),
      format_double_exact(options_.memory_fraction).c_str(),
      format_size_exact(options_.max_pool).c_str(),
      options_.expandable_segments && granularity_ != 0 ? "true" : "false",
      options_.reserve_slack < 0 ? "none" : format_double_exact(options_.reserve_slack).c_str(),
      options_.reserve_headroom < 0 ? "none" : format_double_exact(options_.reserve_headroom).c_str(),
      options_.fast_reuse ? "true" : "false");
}

// ------------------------------------------------------------ construction

caching_strategy::caching_strategy(memory_source& upstream, const caching_options& options)
    : strategy(upstream), options_(options) {
  grow_bookkeeping();
  new_record();  // kScratch: a sink for links to no block, never a block
  host_memory_ = upstream.host_accessible();
  headroom_ = options_.reserve_headroom;
  churn_threshold_ = kChurnEvents;
  if (options_.expandable_segments) granularity_ = upstream.map_granularity();
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

caching_strategy::~caching_strategy() {
  // Destroy is refused while blocks are live; wait for pending frees and
  // give every segment back.
  try {
    process_events(true);
  } catch (...) {
  }
  settle_all();
  for (std::uint32_t i = 0; i < segments_.size(); ++i) {
    segment& seg = segments_[i];
    if (!seg.live) continue;
    if (seg.expandable) {
      for (const auto& [start, end] : seg.mapped) {
        unpoison(seg.base + start, end - start);
        upstream().unmap(reinterpret_cast<void*>(seg.base + start), end - start);
      }
      upstream().release_addresses(reinterpret_cast<void*>(seg.base), seg.size);
    } else {
      unpoison(seg.base, seg.size);
      upstream().deallocate(reinterpret_cast<void*>(seg.base), seg.size);
    }
  }
}

// --------------------------------------------------------- sizes and bins

std::size_t caching_strategy::round_size(std::size_t bytes) const {
  const unsigned divisions = options_.roundup_power2_divisions;
  if (divisions <= 1) return std::max(round_up(bytes, kMinBlock), kMinBlock);  // no branch on size
  if (bytes > kMinBlock * divisions) {
    // Round up to the next of `divisions` steps between two powers of two.
    std::size_t floor2 = std::size_t(1) << (63 - __builtin_clzll(bytes));
    if (floor2 == bytes) return bytes;
    std::size_t step = floor2 / divisions;
    return floor2 + round_up(bytes - floor2, step);
  }
  return round_up(bytes, kMinBlock);
}

std::size_t caching_strategy::segment_size(std::size_t rounded) const noexcept {
  if (options_.no_caching) return rounded;
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

// Bin (first level: power of two of the size in 512-byte units; second:
// which 1/32 of it). Sizes under 32 units share first level 0, one unit per
// bin. Without branches: the size of a request is random to the predictor.
void caching_strategy::bin_of(std::size_t size, int& fl, int& sl) noexcept {
  const std::size_t units = size / kMinBlock;
  const int lg = 63 - __builtin_clzll(units | kSecondLevels);  // >= 5
  fl = (lg - 4) & -static_cast<int>(units >= kSecondLevels);
  sl = static_cast<int>((units >> (lg - 5)) & (kSecondLevels - 1));
}

// ------------------------------------------------------------ bookkeeping

std::uint32_t caching_strategy::new_record() {
  if (!spare_records_.empty()) {
    std::uint32_t r = spare_records_.back();
    spare_records_.pop_back();
    blocks_[r] = block{};
    return r;
  }
  blocks_.emplace_back();
  in_bin_.push_back(0);  // capacity reserved with blocks_
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void caching_strategy::drop_record(std::uint32_t index) noexcept {
  spare_records_.push_back(index);  // capacity kept by reserve_bookkeeping
}

// Room for the records, links and map entries one allocation can create, so
// that nothing after the first change can fail for lack of host memory.
void caching_strategy::grow_bookkeeping() {
  if (blocks_.capacity() < blocks_.size() + 2)
    blocks_.reserve(std::max<std::size_t>(64, blocks_.capacity() * 2));
  if (spare_records_.capacity() < blocks_.capacity()) spare_records_.reserve(blocks_.capacity());
  if (in_bin_.capacity() < blocks_.capacity()) in_bin_.reserve(blocks_.capacity());
  if (segments_.capacity() < segments_.size() + 1)
    segments_.reserve(std::max<std::size_t>(8, segments_.capacity() * 2));
  if (pools_.capacity() < pools_.size() + 2)
    pools_.reserve(std::max<std::size_t>(4, pools_.capacity() * 2));
  live_.reserve(live_.size() + 1);
}

std::uint32_t caching_strategy::find_pool(const stream_object* stream, bool small, std::uint64_t id) {
  if (stream != last_stream_ || id != last_stream_id_) {
    last_stream_ = stream;
    last_stream_id_ = id;
    last_pools_[0] = last_pools_[1] = kNone;
    // A stream was destroyed since the last look: the cache of its pools
    // can serve no one (unless a new stream gets its address), so give it
    // back now rather than at the next trim or out-of-memory retry.
    const std::uint64_t destroyed = destroyed_stream_count().load(std::memory_order_acquire);
    if (destroyed != destroyed_seen_) {
      destroyed_seen_ = destroyed;
      release_cached(false, true);
    }
  }
  std::uint32_t& cached = last_pools_[small ? 1 : 0];
  if (cached != kNone) return cached;
  const std::uintptr_t key = reinterpret_cast<std::uintptr_t>(stream) | (small ? 1u : 0u);
  auto it = pool_index_.find(key);
  if (it == pool_index_.end()) {
    pools_.emplace_back();  // capacity reserved
    pool& p = pools_.back();
    p.stream = stream;
    p.small = small;
    std::fill(&p.heads[0][0], &p.heads[0][0] + kFirstLevels * kSecondLevels, kNone);
    std::fill(p.recent, p.recent + kRecentClasses, kNone);
    it = pool_index_.emplace(key, static_cast<std::uint32_t>(pools_.size() - 1)).first;
  }
  pool& p = pools_[it->second];
  if (p.stream_id != id) {
    // New, or a destroyed stream's handle address given to a new stream: the
    // old one ran all its work when it was destroyed, so its blocks may
    // serve the new one.
    if (stream != nullptr) p.stream_ref = stream->impl;
    p.stream_id = id;
  }
  cached = it->second;
  return cached;
}

// The list links are updated without branches: a link to no block goes to
// the scratch record instead (whether a bin is empty is a coin toss).
void caching_strategy::bin_insert(std::uint32_t index) noexcept {
  block& b = blocks_[index];
  int fl, sl;
  bin_of(b.size, fl, sl);
  pool& p = pools_[b.pool];
  b.bin = static_cast<std::uint16_t>(fl * kSecondLevels + sl);
  b.bin_prev = kNone;
  b.bin_next = p.heads[fl][sl];
  blocks_[or_scratch(b.bin_next)].bin_prev = index;
  p.heads[fl][sl] = index;
  p.second_level[fl] |= 1u << sl;
  p.first_level |= std::uint64_t(1) << fl;
  in_bin_[index] = 1;
  if (is_split(b)) count_split(b, true);
}

void caching_strategy::bin_remove(std::uint32_t index) noexcept {
  block& b = blocks_[index];
  const int fl = b.bin / kSecondLevels, sl = b.bin % kSecondLevels;
  pool& p = pools_[b.pool];
  std::uint32_t& head = p.heads[fl][sl];
  const std::uint32_t first = 0u - static_cast<std::uint32_t>(b.bin_prev == kNone);  // all ones
  head = (b.bin_next & first) | (head & ~first);
  blocks_[or_scratch(b.bin_prev)].bin_next = b.bin_next;
  blocks_[or_scratch(b.bin_next)].bin_prev = b.bin_prev;
  // Clear the bitmaps' bits when the bin (and the first level) emptied.
  p.second_level[fl] &= ~(static_cast<std::uint32_t>(head == kNone) << sl);
  p.first_level &= ~(static_cast<std::uint64_t>(p.second_level[fl] == 0) << fl);
  in_bin_[index] = 0;
  if (b.counted_split) count_split(b, false);
}

bool caching_strategy::fits(const block& b, std::size_t size) const noexcept {
  if (b.size < size) return false;
  if (options_.max_split_size == SIZE_MAX || b.expandable) return true;
  // PyTorch's rule: oversize blocks serve only oversize requests, within a
  // bounded slack.
  if (size < options_.max_split_size) return b.size < options_.max_split_size;
  return b.size < size + kLargeBuffer;
}

// Best fit within a few percent: the smallest fitting block among the first
// of the request's own bin, else the first fitting block of the next
// non-empty bin (bins are 1/32 of a power of two wide, so it is at most ~3%
// larger than the best, and what it has too much is split off).
std::uint32_t caching_strategy::find_free(std::uint32_t pool_index, std::size_t size) noexcept {
  constexpr int kScan = 2;  // each record visited is a likely cache miss
  const pool& p = pools_[pool_index];
  int fl, sl;
  bin_of(size, fl, sl);
  auto best_in_bin = [&](int f, int s) {
    std::uint32_t best = kNone;
    int scanned = 0;
    for (std::uint32_t i = p.heads[f][s]; i != kNone && scanned < kScan;
         i = blocks_[i].bin_next, ++scanned) {
      const block& b = blocks_[i];
      if (!fits(b, size)) continue;
      if (best == kNone || b.size < blocks_[best].size ||
          (b.size == blocks_[best].size && b.addr < blocks_[best].addr))
        best = i;
      if (b.size == size) break;
    }
    return best;
  };
  if (p.second_level[fl] & (1u << sl)) {
    std::uint32_t best = best_in_bin(fl, sl);
    if (best != kNone) return best;
  }
  auto first_in_bin = [&](int f, int s) {
    int scanned = 0;
    for (std::uint32_t i = p.heads[f][s]; i != kNone && scanned < kScan;
         i = blocks_[i].bin_next, ++scanned)
      if (fits(blocks_[i], size)) return i;
    return kNone;
  };
  int f = fl, s = sl;
  while (true) {
    std::uint32_t above = s + 1 < kSecondLevels ? p.second_level[f] & (~0u << (s + 1)) : 0;
    if (above != 0) {
      s = __builtin_ctz(above);
    } else {
      std::uint64_t higher = f + 1 < 64 ? p.first_level & (~std::uint64_t(0) << (f + 1)) : 0;
      if (higher == 0) return kNone;
      f = __builtin_ctzll(higher);
      s = __builtin_ctz(p.second_level[f]);
    }
    std::uint32_t found = first_in_bin(f, s);
    if (found != kNone) return found;
  }
}

// ------------------------------------------------------------ fast reuse

// Every recent block of the pool goes into the bins, merged with its free
// neighbours (which may be recent blocks merged before it).
void caching_strategy::merge_recent(std::uint32_t pool_index) noexcept {
  pool& p = pools_[pool_index];
  for (int w = 0; w < static_cast<int>(std::size(p.recent_bits)); ++w) {
    for (std::uint64_t bits = p.recent_bits[w]; bits != 0; bits &= bits - 1) {
      std::uint32_t& head = p.recent[w * 64 + __builtin_ctzll(bits)];
      while (head != kNone) {
        const std::uint32_t i = head;
        block& b = blocks_[i];
        head = b.bin_next;
        b.st = state::free;
        live_.take(b.addr);
        merge_free(i);
      }
    }
    p.recent_bits[w] = 0;
  }
}

void caching_strategy::merge_all_recent(std::uint32_t except_pool) noexcept {
  if (!options_.fast_reuse) return;
  for (std::uint32_t i = 0; i < pools_.size(); ++i)
    if (i != except_pool) merge_recent(i);
}

// ------------------------------------------------------- upstream memory

std::size_t caching_strategy::limit() const noexcept {
  std::size_t cap = options_.max_pool;
  if (options_.memory_fraction > 0) {
    std::size_t total = 0;
    try {
      total = upstream().info().total_bytes;
    } catch (...) {
    }
    auto by_fraction = static_cast<std::size_t>(static_cast<double>(total) * options_.memory_fraction);
    if (total != 0 && (cap == 0 || by_fraction < cap)) cap = by_fraction;
  }
  return cap;
}

bool caching_strategy::within_limit(std::size_t extra) const noexcept {
  std::size_t cap = limit();
  auto reserved = static_cast<std::size_t>(stats_[DAO_STAT_RESERVED_BYTES].total());
  return cap == 0 || (extra <= cap && reserved <= cap - extra);
}

std::uint32_t caching_strategy::add_segment(std::uint32_t pool_index, std::uintptr_t base,
                                            std::size_t size, bool expandable) {
  std::uint32_t si = kNone;
  for (std::uint32_t i = 0; i < segments_.size(); ++i)
    if (!segments_[i].live) si = i;
  if (si == kNone) {
    segments_.emplace_back();  // capacity reserved
    si = static_cast<std::uint32_t>(segments_.size() - 1);
  }
  segment& seg = segments_[si];
  seg = segment{};
  seg.base = base;
  seg.size = size;
  seg.pool = pool_index;
  seg.expandable = expandable;
  seg.live = true;
  pools_[pool_index].segments.push_back(si);  // capacity reserved by new_segment
  std::uint32_t r = new_record();
  block& b = blocks_[r];
  b.addr = base;
  b.size = size;
  b.stream = pools_[pool_index].stream;
  b.pool = pool_index;
  b.segment = si;
  b.expandable = expandable;
  seg.first_block = r;
  const bool small = pools_[pool_index].small;
  count(DAO_STAT_RESERVED_SEGMENTS, small, 1);
  if (!expandable) {
    count(DAO_STAT_RESERVED_BYTES, small, static_cast<std::int64_t>(size));
    ++counters_.system_alloc_count;
  }
  bin_insert(r);
  return r;
}

// A new segment able to hold `size`: an expandable one (addresses only), or
// a system allocation of PyTorch's sizes, or of exactly `size` when the
// place or the limit has no room for more.
std::uint32_t caching_strategy::new_segment(std::uint32_t pool_index, std::size_t size) {
  pools_[pool_index].segments.reserve(pools_[pool_index].segments.size() + 1);
  if (granularity_ != 0) {
    // Address space can be limited (ulimit -v, valgrind): settle for less,
    // halving down to what the request needs.
    const std::size_t needed = round_up(size, granularity_) + granularity_;
    std::size_t bytes = std::max(arena_size_, needed);
    void* base = nullptr;
    while (true) {
      try {
        base = upstream().reserve_addresses(bytes);
        break;
      } catch (const out_of_memory&) {
        if (bytes == needed) throw;
        bytes = std::max(needed, round_up(bytes / 2, granularity_));
      }
    }
    try {
      return add_segment(pool_index, reinterpret_cast<std::uintptr_t>(base), bytes, true);
    } catch (...) {
      upstream().release_addresses(base, bytes);
      throw;
    }
  }
  collect_garbage(kNone);
  std::size_t wanted = segment_size(size);
  void* p = nullptr;
  if (within_limit(wanted)) {
    try {
      p = upstream().allocate(wanted);
    } catch (const out_of_memory&) {
      if (wanted == size) throw;
    }
  }
  if (p == nullptr) {
    wanted = size;
    if (!within_limit(wanted)) throw out_of_memory("the allocator's limit would be exceeded");
    p = upstream().allocate(wanted);
  }
  try {
    const std::uint32_t r = add_segment(pool_index, reinterpret_cast<std::uintptr_t>(p), wanted, false);
    poison(reinterpret_cast<std::uintptr_t>(p), wanted);  // all free
    return r;
  } catch (...) {
    upstream().deallocate(p, wanted);
    throw;
  }
}

// How far past a request to map when a segment grows at its end: a sixteenth
// of what the segment maps, so that growing from nothing to N bytes takes
// O(log N) system calls at any scale, while the memory mapped ahead stays
// within 1/16 of the peak (measured on the somas traces: bench/README.md).
std::size_t caching_strategy::map_ahead(const segment& seg) const noexcept {
  if (exact_mapping_) return 0;
  return round_up(seg.mapped_bytes / 16, granularity_);
}

// Gives back mapped pages of free blocks (largest first) until `bytes` are
// released or nothing is left. Of `keep`, the block about to be carved, only
// what lies past `keep_from` (the end of the request) may go: when the cache
// is one big free block, that is where the cached pages are. Returns the
// bytes released.
std::size_t caching_strategy::release_holes(std::size_t bytes, std::uint32_t keep,
                                            std::uintptr_t keep_from) {
  // Not `keep`'s own pool: merging could absorb `keep` into a neighbour.
  // (Other pools have other segments.)
  merge_all_recent(keep != kNone ? blocks_[keep].pool : kNone);
  std::vector<std::uint32_t> holes;
  std::vector<std::int8_t> quiet(pools_.size(), -1);  // settled(pool, false), asked once
  for (const segment& seg : segments_) {
    if (!seg.live || !seg.expandable) continue;
    std::int8_t& q = quiet[seg.pool];
    if (q < 0) q = settled(seg.pool, false) ? 1 : 0;
    if (q == 0) continue;
    for (std::uint32_t i = seg.first_block; i != kNone; i = blocks_[i].next)
      if (i != keep && blocks_[i].st == state::free && blocks_[i].size >= granularity_)
        holes.push_back(i);
  }
  std::sort(holes.begin(), holes.end(),
            [&](std::uint32_t a, std::uint32_t b) { return blocks_[a].size > blocks_[b].size; });
  // Of each hole only what is still needed, from its end: the start of a
  // free block is what best fit hands out next, and each page given back
  // too many is a map call later. Where the memory is in large pages, whole
  // ones first (a large page given back in part is split into small pages
  // for good, and every later access there misses the TLB: bench_alloc on
  // the CPU took 218 instead of 161 ns per pair), then granules.
  std::size_t released = 0;
  auto release_end_of = [&](std::uint32_t i, std::uintptr_t from, std::size_t unit) {
    const block& b = blocks_[i];
    released += unmap_range(segments_[b.segment], from, b.addr + b.size,
                            bytes == SIZE_MAX ? SIZE_MAX : bytes - released, unit);
  };
  const bool keep_tail = keep != kNone && keep_from < blocks_[keep].addr + blocks_[keep].size &&
                         quiet[blocks_[keep].pool] == 1;
  // Less than a large page short, where that is within 1/64 of what is
  // reserved: close enough to the budget not to split a large page for it.
  const auto reserved =
      static_cast<std::size_t>(stats_[DAO_STAT_RESERVED_BYTES].total());
  const std::size_t close_enough =
      large_page_ != 0 && bytes != SIZE_MAX && large_page_ <= reserved / 64 ? large_page_ : 0;
  for (std::size_t unit : {large_page_, granularity_}) {
    if (unit == 0) continue;
    if (unit == granularity_ && released + close_enough >= bytes) break;
    for (std::uint32_t i : holes) {
      if (released >= bytes) break;
      release_end_of(i, blocks_[i].addr, unit);
    }
    if (released < bytes && keep_tail) release_end_of(keep, keep_from, unit);
  }
  return released;
}

// Maps every granule of [start, start+bytes) that is not mapped yet (and a
// little ahead when the segment grows at its end). Maps all or nothing.
// Garbage collection, when configured, runs first: see collect_garbage().
// Before reserved memory grows past what is in use by more than the slack,
// cached pages elsewhere are given back: the peak stays near the live
// memory, not the high-water mark of the addresses.
void caching_strategy::ensure_mapped(segment& seg, std::uintptr_t start, std::size_t bytes,
                                     std::uint32_t target) {
  const std::size_t g = granularity_;
  if (start - seg.base + bytes <= seg.mapped_prefix) return;  // the common case
  collect_garbage(target);
  const std::size_t lo = round_down(start - seg.base, g);
  const std::size_t hi = round_up(start - seg.base + bytes, g);
  // Unmapped gaps in [lo, hi).
  std::size_t gaps[64][2];
  int n = 0;
  std::size_t cursor = lo;
  auto it = seg.mapped.upper_bound(cursor);
  if (it != seg.mapped.begin() && std::prev(it)->second > cursor) cursor = std::prev(it)->second;
  while (cursor < hi) {
    it = seg.mapped.lower_bound(cursor);
    std::size_t gap_end = it == seg.mapped.end() ? hi : std::min(hi, it->first);
    if (gap_end > cursor) {
      if (n == 64) break;  // mapped below; the rest on a later call
      gaps[n][0] = cursor;
      gaps[n][1] = gap_end;
      ++n;
    }
    if (it == seg.mapped.end()) break;
    cursor = std::max(cursor, it->second);
  }
  if (n == 0) return;
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) total += gaps[i][1] - gaps[i][0];
  // Growing at the end of what is mapped: map a little ahead.
  std::size_t ahead = 0;
  if (gaps[n - 1][1] == hi && (seg.mapped.empty() || seg.mapped.rbegin()->second <= hi)) {
    ahead = std::min(map_ahead(seg), seg.size - hi);
    gaps[n - 1][1] += ahead;
    total += ahead;
  }
  const std::size_t budget = reserve_budget(bytes);
  const auto reserved =
      static_cast<std::size_t>(stats_[DAO_STAT_RESERVED_BYTES].total());
  // Over the budget: first map no look-ahead, then give back cached pages.
  if (reserved + total > budget && ahead > 0) {
    gaps[n - 1][1] -= ahead;
    total -= ahead;
  }
  if (reserved + total > budget) {
    release_holes(reserved + total - budget, target, start + bytes);
    // Each such release is system calls paid for memory saved, and the pages
    // are mapped again later. When they come often (at least kChurnEvents,
    // and one per kChurnRatio allocations since the headroom last widened), the
    // workload fragments more than the headroom allows: widen it, faster
    // each time.
    ++churn_events_;
    const std::uint64_t allocations = counters_.alloc_count - allocs_at_widen_;
    if (churn_events_ >= churn_threshold_ && churn_events_ * kChurnRatio >= allocations &&
        headroom_ < kMaxHeadroom) {
      headroom_ = std::min(kMaxHeadroom, headroom_ + kHeadroomStep);
      churn_threshold_ = std::max<std::uint64_t>(16, churn_threshold_ / 2);
      churn_events_ = 0;
      allocs_at_widen_ = counters_.alloc_count;
    }
  }
  if (!within_limit(total)) throw out_of_memory("the allocator's limit would be exceeded");
  int done = 0;
  try {
    for (; done < n; ++done)
      upstream().map(reinterpret_cast<void*>(seg.base + gaps[done][0]), gaps[done][1] - gaps[done][0]);
  } catch (...) {
    for (int i = 0; i < done; ++i)
      upstream().unmap(reinterpret_cast<void*>(seg.base + gaps[i][0]), gaps[i][1] - gaps[i][0]);
    throw;
  }
  const bool small = pools_[seg.pool].small;
  for (int i = 0; i < n; ++i) {
    poison(seg.base + gaps[i][0], gaps[i][1] - gaps[i][0]);  // free until carved
    std::size_t a = gaps[i][0], b = gaps[i][1];
    // Coalesce with the intervals on either side.
    auto next = seg.mapped.lower_bound(a);
    if (next != seg.mapped.end() && next->first == b) {
      b = next->second;
      next = seg.mapped.erase(next);
    }
    if (next != seg.mapped.begin() && std::prev(next)->second == a) std::prev(next)->second = b;
    else seg.mapped.emplace(a, b);
    seg.mapped_bytes += gaps[i][1] - gaps[i][0];
    count(DAO_STAT_RESERVED_BYTES, small, static_cast<std::int64_t>(gaps[i][1] - gaps[i][0]));
    ++counters_.system_alloc_count;
  }
  update_prefix(seg);
  if (n == 64) ensure_mapped(seg, start, bytes, target);
}

// How far reserved memory may grow before cached pages are given back
// (SIZE_MAX: no bound): (1 + reserve_slack) times the memory in use with the
// request, and (1 + reserve_headroom) times the peak of memory in use.
std::size_t caching_strategy::reserve_budget(std::size_t request) const noexcept {
  if (options_.no_caching) return SIZE_MAX;
  const stat_value allocated = stats_[DAO_STAT_ALLOCATED_BYTES].get(DAO_STAT_POOL_ALL);
  const auto in_use = static_cast<double>(allocated.current) + static_cast<double>(request);
  double budget = static_cast<double>(SIZE_MAX);
  if (options_.reserve_slack >= 0) budget = in_use * (1 + options_.reserve_slack);
  if (headroom_ >= 0) {
    const double peak = std::max(in_use, static_cast<double>(allocated.peak));
    budget = std::min(budget, peak * (1 + headroom_));
  }
  return budget >= static_cast<double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(budget);
}

// Whether the first `size` bytes of block `index` are mapped.
bool caching_strategy::backed(std::uint32_t index, std::size_t size) const noexcept {
  const block& b = blocks_[index];
  const segment& seg = segments_[b.segment];
  if (!seg.expandable) return true;
  const std::size_t lo = b.addr - seg.base, hi = lo + size;
  if (hi <= seg.mapped_prefix) return true;
  auto it = seg.mapped.upper_bound(lo);  // the intervals are merged: one must hold it all
  if (it == seg.mapped.begin()) return false;
  --it;
  return it->second >= hi;
}

void caching_strategy::update_prefix(segment& seg) noexcept {
  auto first = seg.mapped.begin();
  seg.mapped_prefix = first != seg.mapped.end() && first->first == 0 ? first->second : 0;
}

// Unmaps the granules that lie wholly inside a free block of an expandable
// segment. Returns the bytes given back.
std::size_t caching_strategy::unmap_free(std::uint32_t block_index) noexcept {
  const block& b = blocks_[block_index];
  return unmap_range(segments_[b.segment], b.addr, b.addr + b.size, SIZE_MAX, granularity_);
}

// Unmaps the mapped runs of `unit` bytes (granules, or large pages) that lie
// wholly inside [from, to), a free range of an expandable segment, from the
// highest down, until at least `limit` bytes (rounded up to units) are given
// back. Returns the bytes given back.
std::size_t caching_strategy::unmap_range(segment& seg, std::uintptr_t from, std::uintptr_t to,
                                          std::size_t limit, std::size_t unit) noexcept {
  const std::size_t lo = round_up(from - seg.base, unit);
  const std::size_t hi = round_down(to - seg.base, unit);
  if (lo >= hi || limit == 0) return 0;
  std::size_t released = 0;
  // The mapped intervals that overlap [lo, hi), highest first.
  auto it = seg.mapped.lower_bound(hi);
  while (released < limit && it != seg.mapped.begin()) {
    --it;
    const std::size_t a = it->first, e = it->second;
    if (e <= lo) break;
    const std::size_t cut_hi = round_down(std::min(e, hi), unit);
    std::size_t cut_lo = round_up(std::max(a, lo), unit);
    if (cut_lo >= cut_hi) continue;
    if (limit != SIZE_MAX && cut_hi - cut_lo > limit - released)
      cut_lo = cut_hi - round_up(limit - released, unit);
    unpoison(seg.base + cut_lo, cut_hi - cut_lo);
    upstream().unmap(reinterpret_cast<void*>(seg.base + cut_lo), cut_hi - cut_lo);
    released += cut_hi - cut_lo;
    ++counters_.system_free_count;
    it = seg.mapped.erase(it);
    // What stays mapped on either side of the cut. Node allocation may fail:
    // those pages then stay mapped but uncounted until the segment goes.
    try {
      if (cut_hi < e) seg.mapped.emplace(cut_hi, e);
      if (a < cut_lo) it = seg.mapped.emplace(a, cut_lo).first;
    } catch (...) {
    }
  }
  seg.mapped_bytes -= released;
  update_prefix(seg);
  count(DAO_STAT_RESERVED_BYTES, pools_[seg.pool].small, -static_cast<std::int64_t>(released));
  return released;
}

void caching_strategy::release_segment(std::uint32_t segment_index) noexcept {
  segment& seg = segments_[segment_index];
  const std::uint32_t only = seg.first_block;
  bin_remove(only);
  drop_record(only);
  const bool small = pools_[seg.pool].small;
  if (seg.expandable) {
    for (const auto& [start, end] : seg.mapped) {
      unpoison(seg.base + start, end - start);
      upstream().unmap(reinterpret_cast<void*>(seg.base + start), end - start);
      count(DAO_STAT_RESERVED_BYTES, small, -static_cast<std::int64_t>(end - start));
      ++counters_.system_free_count;
    }
    seg.mapped.clear();
    seg.mapped_bytes = 0;
    seg.mapped_prefix = 0;
    upstream().release_addresses(reinterpret_cast<void*>(seg.base), seg.size);
  } else {
    unpoison(seg.base, seg.size);
    upstream().deallocate(reinterpret_cast<void*>(seg.base), seg.size);
    count(DAO_STAT_RESERVED_BYTES, small, -static_cast<std::int64_t>(seg.size));
    ++counters_.system_free_count;
  }
  count(DAO_STAT_RESERVED_SEGMENTS, small, -1);
  auto& list = pools_[seg.pool].segments;
  list.erase(std::remove(list.begin(), list.end(), segment_index), list.end());
  seg.live = false;
}

bool caching_strategy::settled(std::uint32_t pool_index, bool wait) noexcept {
  const pool& p = pools_[pool_index];
  if (p.stream == nullptr) return true;  // the default stream runs work at once
  std::shared_ptr<stream_impl> impl = p.stream_ref.lock();
  if (impl == nullptr) return true;  // destroyed: its work ran first
  try {
    if (impl->query()) return true;
    if (!wait) return false;
    impl->synchronize();
    return true;
  } catch (...) {
    return false;  // the stream failed: keep its memory rather than guess
  }
}

void caching_strategy::settle_all() noexcept {
  for (std::uint32_t i = 0; i < pools_.size(); ++i) settled(i, true);
}

// Gives back every wholly free segment and, in expandable segments, every
// granule that no block uses, of the pools whose streams have run their work
// (wait: waiting for them; PyTorch's empty_cache synchronizes too). Returns
// the bytes released.
std::size_t caching_strategy::release_cached(bool wait, bool dead_streams_only) {
  merge_all_recent();
  std::size_t released = 0;
  std::vector<std::int8_t> quiet(pools_.size(), -1);  // settled(pool, wait), asked once
  for (std::uint32_t si = 0; si < segments_.size(); ++si) {
    segment& seg = segments_[si];
    if (!seg.live) continue;
    std::int8_t& q = quiet[seg.pool];
    if (q < 0) {
      const pool& p = pools_[seg.pool];
      const bool dead = p.stream != nullptr && p.stream_ref.expired();
      q = (dead || !dead_streams_only) && settled(seg.pool, wait) ? 1 : 0;
    }
    if (q == 0) continue;
    if (seg.expandable) {
      for (std::uint32_t i = seg.first_block; i != kNone; i = blocks_[i].next)
        if (blocks_[i].st == state::free) released += unmap_free(i);
      const block& first = blocks_[seg.first_block];
      if (first.st == state::free && first.next == kNone && seg.mapped.empty())
        release_segment(si);
    } else {
      const block& first = blocks_[seg.first_block];
      if (first.st == state::free && first.next == kNone) {
        released += seg.size;
        release_segment(si);
      }
    }
  }
  return released;
}

// Before new memory is taken: when reserved memory has passed the threshold
// (a fraction of the limit, or of the place's capacity when no limit is
// set), give cached memory back first, except the block about to be used.
void caching_strategy::collect_garbage(std::uint32_t keep) {
  if (options_.garbage_collection_threshold <= 0) return;
  std::size_t cap = limit();
  if (cap == 0) {
    try {
      cap = upstream().info().total_bytes;
    } catch (...) {
    }
  }
  if (cap == 0) return;
  auto reserved = static_cast<double>(stats_[DAO_STAT_RESERVED_BYTES].total());
  if (reserved <= options_.garbage_collection_threshold * static_cast<double>(cap)) return;
  if (granularity_ != 0) release_holes(SIZE_MAX, keep, UINTPTR_MAX);
  else release_cached(false);
}

// --------------------------------------------------------- the hot path

// A free block of the pool that holds `size` and is backed by memory: from
// the cache, else from new memory, else after releasing the cache (the
// out-of-memory ladder). Throws out_of_memory when all fail.
std::uint32_t caching_strategy::obtain_block(std::uint32_t pool_index, std::size_t size) {
  auto attempt = [&]() -> std::uint32_t {
    try {
      std::uint32_t i = find_free(pool_index, size);
      if (options_.fast_reuse && (i == kNone || !backed(i, size)) && has_recent(pools_[pool_index])) {
        // About to take new memory: merged, the recent blocks may hold it.
        merge_recent(pool_index);
        i = find_free(pool_index, size);
      }
      if (i == kNone) i = new_segment(pool_index, size);
      segment& seg = segments_[blocks_[i].segment];
      if (seg.expandable && blocks_[i].addr - seg.base + size > seg.mapped_prefix)
        ensure_mapped(seg, blocks_[i].addr, size, i);  // not all mapped yet
      return i;
    } catch (const out_of_memory&) {
      return kNone;
    }
  };
  std::uint32_t i = attempt();
  if (i != kNone) return i;
  // Wait for pending frees, give back what is cached, and try again.
  process_events(true);
  release_cached(true);
  exact_mapping_ = true;
  i = attempt();
  exact_mapping_ = false;
  if (i != kNone) {
    ++counters_.alloc_retry_count;
    return i;
  }
  ++counters_.failed_alloc_count;
  // Say which bound stopped it: the allocator's own limit, or the place.
  throw oom(size, within_limit(size) ? "the place has no room for it"
                                     : "the allocator's limit (max_pool or memory_fraction) "
                                       "would be exceeded");
}

// Splits off what `size` does not need (a free block of its own) and returns
// `index`, now exactly `size` unless the block may not be split.
std::uint32_t caching_strategy::carve(std::uint32_t index, std::size_t size) {
  block& b = blocks_[index];
  const std::size_t remaining = b.size - size;
  const bool oversize = b.size >= options_.max_split_size && !b.expandable;
  if (remaining >= kMinBlock && !oversize) {
    std::uint32_t r = new_record();  // capacity reserved: blocks_ does not move
    block& rest = blocks_[r];
    block& cur = blocks_[index];
    rest.addr = cur.addr + size;
    rest.size = remaining;
    rest.stream = cur.stream;
    rest.pool = cur.pool;
    rest.segment = cur.segment;
    rest.expandable = cur.expandable;
    rest.prev = index;
    rest.next = cur.next;
    if (cur.next != kNone) blocks_[cur.next].prev = r;
    cur.next = r;
    cur.size = size;
    bin_insert(r);
  }
  return index;
}

void* caching_strategy::allocate(std::size_t bytes, const stream_object* stream) {
  if (bytes > (SIZE_MAX >> 2)) {
    std::lock_guard<fast_mutex> lock(mutex_);
    ++counters_.failed_alloc_count;
    throw oom(bytes, "no place can hold it");
  }
  if (stream != nullptr) check_stream_place(stream, "dao_allocator_alloc");
  const std::size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  std::lock_guard<fast_mutex> lock(mutex_);
  reserve_bookkeeping();
  if (!pending_.empty()) process_events(false);
  const std::uint32_t pi = pool_for(stream, small);
  std::uint32_t index = options_.fast_reuse ? take_recent(pi, size) : kNone;
  const bool recent = index != kNone;  // still in the map
  if (!recent) {
    index = obtain_block(pi, size);
    bin_remove(index);
    carve(index, size);
  }
  block& b = blocks_[index];
  b.st = state::allocated;
  b.requested = bytes;
  // Statistics count blocks by their size (a recent block may be larger).
  const bool small_block = b.size <= kSmallSize;
  unpoison(b.addr, b.size);  // all of it: usable_size() promises it
  if (!recent) live_.insert(b.addr, index);  // room reserved
  count_up(DAO_STAT_ALLOCATED_BYTES, small_block, static_cast<std::int64_t>(b.size));
  count_up(DAO_STAT_ALLOCATED_BLOCKS, small_block, 1);
  count_up(DAO_STAT_REQUESTED_BYTES, small_block, static_cast<std::int64_t>(bytes));
  if (active_tracked_) {
    count_up(DAO_STAT_ACTIVE_BYTES, small_block, static_cast<std::int64_t>(b.size));
    count_up(DAO_STAT_ACTIVE_BLOCKS, small_block, 1);
  }
  ++counters_.alloc_count;
  return reinterpret_cast<void*>(b.addr);
}

void caching_strategy::deallocate(void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<fast_mutex> lock(mutex_);
  // With fast reuse a block keeps its map entry until it is merged: a
  // recent block taken again needs no new one.
  const std::uint32_t index = options_.fast_reuse ? live_.find(addr) : live_.take(addr);
  if (index == pointer_map::npos || blocks_[index].st != state::allocated) {
    throw invalid_pointer(strprintf(
        "caching allocator on %s: pointer %p is not a live allocation of this allocator "
        "(allocated elsewhere, already freed, or not the start of a block)",
        place_to_string(upstream().place()).c_str(), p));
  }
  // Events first: if recording fails, nothing has changed.
  const std::size_t queued = blocks_[index].has_uses ? record_uses(index) : 0;
  block& b = blocks_[index];
  const bool small = b.size <= kSmallSize;
  count_down(DAO_STAT_ALLOCATED_BYTES, small, static_cast<std::int64_t>(b.size));
  count_down(DAO_STAT_ALLOCATED_BLOCKS, small, 1);
  count_down(DAO_STAT_REQUESTED_BYTES, small, static_cast<std::int64_t>(b.requested));
  ++counters_.free_count;
  b.requested = 0;
  if (queued > 0) {
    // Reused only once the other streams' work up to now has run.
    b.st = state::pending;
    b.event_count = static_cast<std::uint16_t>(queued);
    return;
  }
  if (options_.fast_reuse && !active_tracked_) {  // free_block()'s fast case, inline
    push_recent(index);
    return;
  }
  free_block(index);
}

// A block used on other streams (record_stream) and just freed: records an
// event on each of them, and forgets the uses. Returns how many were
// recorded. On failure nothing has changed: the block is live again.
std::size_t caching_strategy::record_uses(std::uint32_t index) {
  const std::uintptr_t addr = blocks_[index].addr;
  std::size_t queued = 0;
  try {
    for (const stream_object* other : uses_.at(index)) {
      std::unique_ptr<event_impl> event;
      if (!spare_events_.empty()) {
        event = std::move(spare_events_.back());
        spare_events_.pop_back();
      } else {
        event = upstream().resource().create_event();
      }
      other->impl->record(*event);
      pending_.push_back(pending_free{std::move(event), index});
      ++queued;
    }
  } catch (...) {
    for (; queued > 0; --queued) pending_.pop_back();
    if (!options_.fast_reuse) live_.insert(addr, index);  // the slot it left is free: cannot fail
    throw;
  }
  if (queued > 0) track_active();  // before allocated and active part
  uses_.erase(index);
  blocks_[index].has_uses = false;
  return queued;
}

void caching_strategy::free_block(std::uint32_t index) noexcept {
  block& b = blocks_[index];
  const bool small = b.size <= kSmallSize;
  if (active_tracked_) {
    count_down(DAO_STAT_ACTIVE_BYTES, small, static_cast<std::int64_t>(b.size));
    count_down(DAO_STAT_ACTIVE_BLOCKS, small, 1);
  }
  if (options_.fast_reuse) {
    push_recent(index);
    return;
  }
  poison_freed(b);
  b.st = state::free;
  merge_free(index);
}

// Merges free block `index` with its free neighbours in bins and bins it.
void caching_strategy::merge_free(std::uint32_t index) noexcept {
  segment& seg = segments_[blocks_[index].segment];
  const std::uint32_t before = blocks_[index].prev;
  if (before != kNone && in_bin_[before]) {
    bin_remove(before);
    block& cur = blocks_[index];
    cur.addr = blocks_[before].addr;
    cur.size += blocks_[before].size;
    cur.prev = blocks_[before].prev;
    if (cur.prev != kNone) blocks_[cur.prev].next = index;
    else seg.first_block = index;
    drop_record(before);
  }
  const std::uint32_t after = blocks_[index].next;
  if (after != kNone && in_bin_[after]) {
    bin_remove(after);
    block& cur = blocks_[index];
    cur.size += blocks_[after].size;
    cur.next = blocks_[after].next;
    if (cur.next != kNone) blocks_[cur.next].prev = index;
    drop_record(after);
  }
  bin_insert(index);
  if (options_.no_caching) {
    const block& whole = blocks_[index];
    if (whole.prev == kNone && whole.next == kNone && settled(whole.pool, true))
      release_segment(whole.segment);
  }
}

void caching_strategy::process_events(bool wait) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (wait) it->event->synchronize();
    else if (!it->event->query()) {
      ++it;
      continue;
    }
    const std::uint32_t index = it->block;
    try {
      spare_events_.push_back(std::move(it->event));
    } catch (...) {
    }
    it = pending_.erase(it);
    if (--blocks_[index].event_count == 0) free_block(index);
  }
}

void caching_strategy::record_stream(void* p, const stream_object* stream) {
  std::lock_guard<fast_mutex> lock(mutex_);
  const std::uint32_t index = find_live(p);
  block& b = blocks_[index];
  if (stream == nullptr || stream == b.stream) return;
  check_stream_place(stream, "dao_allocator_record_stream");
  std::vector<const stream_object*>& uses = uses_[index];
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  b.has_uses = true;
}

// The record of live allocation `p`; throws invalid_pointer if there is none.
// With fast reuse, the map also holds freed blocks not merged yet.
std::uint32_t caching_strategy::find_live(const void* p) const {
  const std::uint32_t index = live_.find(reinterpret_cast<std::uintptr_t>(p));
  if (index == pointer_map::npos || blocks_[index].st != state::allocated) {
    throw invalid_pointer(strprintf("caching allocator on %s: pointer %p is not a live allocation",
                                    place_to_string(upstream().place()).c_str(), p));
  }
  return index;
}

// Only streams of the allocator's own place order its memory.
void caching_strategy::check_stream_place(const stream_object* stream, const char* function) const {
  const dao_place mine = upstream().place();
  if (raw_kind(stream->place.kind) != raw_kind(mine.kind) || stream->place.device != mine.device) {
    throw invalid_argument(strprintf(
        "%s: the stream is on %s but the allocator is on %s; only streams of the allocator's "
        "place can use its memory in order",
        function, place_to_string(stream->place).c_str(), place_to_string(mine).c_str()));
  }
}

std::size_t caching_strategy::usable_size(const void* p) const {
  std::lock_guard<fast_mutex> lock(mutex_);
  return blocks_[find_live(p)].size;
}

std::size_t caching_strategy::trim() {
  std::lock_guard<fast_mutex> lock(mutex_);
  process_events(true);
  return release_cached(true);
}

out_of_memory caching_strategy::oom(std::size_t bytes, const char* why) const {
  memory_info info{};
  try {
    info = upstream().info();
  } catch (...) {
  }
  const std::string place = place_to_string(upstream().place());
  const auto allocated =
      static_cast<std::size_t>(stats_[DAO_STAT_ALLOCATED_BYTES].total());
  const auto reserved =
      static_cast<std::size_t>(stats_[DAO_STAT_RESERVED_BYTES].total());
  const std::size_t cap = limit();
  const std::size_t cached = reserved - std::min(reserved, allocated);
  // Advice only where it can help: fragmentation in classic segments.
  const char* advice =
      granularity_ == 0 && cached > bytes
          ? ". The reserved but unallocated memory is fragmented: max_split_size_mb may help"
          : "";
  return out_of_memory(strprintf(
      "caching allocator on %s: out of memory: tried to allocate %s (%s). %s has a total "
      "capacity of %s of which %s is free. Of the memory this allocator holds, %s is allocated "
      "and %s is reserved but unallocated; the largest free block is %s (limit: %s)%s",
      place.c_str(), format_bytes(bytes).c_str(), why, place.c_str(),
      format_bytes(info.total_bytes).c_str(), format_bytes(info.free_bytes).c_str(),
      format_bytes(allocated).c_str(), format_bytes(cached).c_str(),
      format_bytes(largest_free_block()).c_str(), cap == 0 ? "none" : format_bytes(cap).c_str(),
      advice));
}

// ------------------------------------------------------------- statistics

allocator_counters caching_strategy::counters() const {
  std::lock_guard<fast_mutex> lock(mutex_);
  allocator_counters c = counters_;
  c.allocated_bytes_stat = stats_[DAO_STAT_ALLOCATED_BYTES].get(DAO_STAT_POOL_ALL);
  c.allocated_blocks_stat = stats_[DAO_STAT_ALLOCATED_BLOCKS].get(DAO_STAT_POOL_ALL);
  c.reserved_bytes_stat = stats_[DAO_STAT_RESERVED_BYTES].get(DAO_STAT_POOL_ALL);
  c.reserved_segments_stat = stats_[DAO_STAT_RESERVED_SEGMENTS].get(DAO_STAT_POOL_ALL);
  c.requested_bytes_stat = stats_[DAO_STAT_REQUESTED_BYTES].get(DAO_STAT_POOL_ALL);
  c.refresh();
  c.largest_free_block = largest_free_block();
  return c;
}

// The largest block servable without new memory: free blocks, counting in
// expandable segments only their mapped runs.
std::size_t caching_strategy::largest_free_block() const noexcept {
  merge_all_recent();
  std::size_t largest = 0;
  for (const segment& seg : segments_) {
    if (!seg.live) continue;
    for (std::uint32_t i = seg.first_block; i != kNone; i = blocks_[i].next) {
      const block& b = blocks_[i];
      if (b.st != state::free) continue;
      if (!seg.expandable) {
        largest = std::max(largest, b.size);
        continue;
      }
      const std::size_t lo = b.addr - seg.base, hi = lo + b.size;
      for (const auto& [start, end] : seg.mapped) {
        std::size_t a = std::max(start, lo), e = std::min(end, hi);
        if (a < e) largest = std::max(largest, e - a);
      }
    }
  }
  return largest;
}

// From the first deferred free on, active blocks are counted apart from
// allocated ones; until then both statistics are the same in every field.
void caching_strategy::track_active() noexcept {
  if (active_tracked_) return;
  stats_[DAO_STAT_ACTIVE_BYTES] = stats_[DAO_STAT_ALLOCATED_BYTES];
  stats_[DAO_STAT_ACTIVE_BLOCKS] = stats_[DAO_STAT_ALLOCATED_BLOCKS];
  active_tracked_ = true;
}

bool caching_strategy::stat(int metric, int pool_kind, dao_stat& out) const {
  std::lock_guard<fast_mutex> lock(mutex_);
  // Recent blocks count as inactive split once merged (see fast reuse).
  if (metric == DAO_STAT_INACTIVE_SPLIT_BYTES || metric == DAO_STAT_INACTIVE_SPLIT_BLOCKS)
    merge_all_recent();
  if (!active_tracked_ && metric == DAO_STAT_ACTIVE_BYTES) metric = DAO_STAT_ALLOCATED_BYTES;
  if (!active_tracked_ && metric == DAO_STAT_ACTIVE_BLOCKS) metric = DAO_STAT_ALLOCATED_BLOCKS;
  const stat_value s = stats_[metric].get(pool_kind);
  out = dao_stat{s.current, s.peak, s.allocated, s.freed};
  return true;
}

void caching_strategy::reset_peaks() {
  std::lock_guard<fast_mutex> lock(mutex_);
  for (pooled_stat& s : stats_) s.reset_peak();
}

void caching_strategy::reset_accumulated() {
  std::lock_guard<fast_mutex> lock(mutex_);
  for (pooled_stat& s : stats_) s.reset_accumulated();
  counters_.reset_accumulated();
}

std::unique_ptr<snapshot_data> caching_strategy::snapshot() const {
  std::lock_guard<fast_mutex> lock(mutex_);
  merge_all_recent();  // the blocks as they would be with every free merged
  auto snap = std::make_unique<snapshot_data>();
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < segments_.size(); ++i)
    if (segments_[i].live) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return segments_[a].base < segments_[b].base; });
  for (std::uint32_t si : order) {
    const segment& seg = segments_[si];
    snapshot_data::segment out;
    out.info.struct_size = sizeof(dao_segment_info);
    out.info.address = seg.base;
    out.info.size = seg.size;
    out.info.mapped_bytes = seg.expandable ? seg.mapped_bytes : seg.size;
    out.info.pool = pools_[seg.pool].small ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE;
    out.info.stream = handle_of(pools_[seg.pool].stream);
    out.info.expandable = seg.expandable ? 1 : 0;
    for (std::uint32_t i = seg.first_block; i != kNone; i = blocks_[i].next) {
      const block& b = blocks_[i];
      dao_block_info info{};
      info.struct_size = sizeof(dao_block_info);
      info.address = b.addr;
      info.size = b.size;
      info.requested_size = b.requested;
      info.state = b.st == state::free        ? DAO_BLOCK_FREE
                   : b.st == state::allocated ? DAO_BLOCK_ALLOCATED
                                              : DAO_BLOCK_PENDING_FREE;
      info.stream = handle_of(b.stream);
      out.blocks.push_back(info);
    }
    out.info.block_count = out.blocks.size();
    snap->segments.push_back(std::move(out));
  }
  return snap;
}

}  // namespace dao::detail
