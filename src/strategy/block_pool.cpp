// The caching strategy's blocks: records, bins, best fit, splitting, merging
// and fast reuse's recent lists (see block_pool.hpp).
#include "strategy/block_pool.hpp"

#include <algorithm>
#include <iterator>

namespace dao::detail {

namespace {

constexpr std::size_t kMinBlock = caching_options::kMinBlock;

std::size_t round_up(std::size_t x, std::size_t unit) noexcept {
  return (x + unit - 1) / unit * unit;
}

}  // namespace

block_pool::block_pool(const caching_options& options, bool host_memory, caching_stats& stats)
    : max_split_size_(options.max_split_size),
      roundup_power2_divisions_(options.roundup_power2_divisions),
      fast_reuse_(options.fast_reuse),
      host_memory_(host_memory),
      stats_(stats) {
  grow();
  new_record();  // kScratch: a sink for links to no block, never a block
}

// --------------------------------------------------------- sizes and bins

std::size_t block_pool::round_size(std::size_t bytes) const {
  const unsigned divisions = roundup_power2_divisions_;
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

// ------------------------------------------------------------ bookkeeping

std::uint32_t block_pool::new_record() {
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

void block_pool::drop_record(std::uint32_t index) noexcept {
  spare_records_.push_back(index);  // capacity kept by reserve_bookkeeping
}

void block_pool::grow() {
  if (blocks_.capacity() < blocks_.size() + 2)
    blocks_.reserve(std::max<std::size_t>(64, blocks_.capacity() * 2));
  if (spare_records_.capacity() < blocks_.capacity()) spare_records_.reserve(blocks_.capacity());
  if (in_bin_.capacity() < blocks_.capacity()) in_bin_.reserve(blocks_.capacity());
  if (pools_.capacity() < pools_.size() + 2)
    pools_.reserve(std::max<std::size_t>(4, pools_.capacity() * 2));
  live_.reserve(live_.size() + 1);
}

std::uint32_t block_pool::add_pool(bool small) {
  pools_.emplace_back();  // capacity reserved
  pool& p = pools_.back();
  p.small = small;
  std::fill(&p.heads[0][0], &p.heads[0][0] + kFirstLevels * kSecondLevels, kNone);
  std::fill(p.recent, p.recent + kRecentClasses, kNone);
  return static_cast<std::uint32_t>(pools_.size() - 1);
}

std::uint32_t block_pool::add_whole(std::uint32_t segment, std::uint32_t pool_index,
                                    std::uintptr_t base, std::size_t size, bool expandable,
                                    stream_handle stream) noexcept {
  if (first_.size() <= segment) first_.resize(segment + 1, kNone);  // capacity reserved
  std::uint32_t r = new_record();
  block& b = blocks_[r];
  b.addr = base;
  b.size = size;
  b.stream = stream;
  b.pool = pool_index;
  b.segment = segment;
  b.expandable = expandable;
  first_[segment] = r;
  bin_insert(r);
  return r;
}

void block_pool::drop_whole(std::uint32_t segment) noexcept {
  const std::uint32_t only = first_[segment];
  bin_remove(only);
  drop_record(only);
  first_[segment] = kNone;
}

// ------------------------------------------------------------------ bins

// The list links are updated without branches: a link to no block goes to
// the scratch record instead (whether a bin is empty is a coin toss).
void block_pool::bin_insert(std::uint32_t index) noexcept {
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

void block_pool::bin_remove(std::uint32_t index) noexcept {
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

// Best fit within a few percent: the smallest fitting block among the first
// of the request's own bin, else the first fitting block of the next
// non-empty bin (bins are 1/32 of a power of two wide, so it is at most ~3%
// larger than the best, and what it has too much is split off).
std::uint32_t block_pool::find_free(std::uint32_t pool_index, std::size_t size) noexcept {
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

// Splits off what `size` does not need (a free block of its own) and returns
// `index`, now exactly `size` unless the block may not be split.
std::uint32_t block_pool::carve(std::uint32_t index, std::size_t size) {
  block& b = blocks_[index];
  const std::size_t remaining = b.size - size;
  const bool oversize = b.size >= max_split_size_ && !b.expandable;
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

// Merges free block `index` with its free neighbours in bins and bins it.
void block_pool::merge_free(std::uint32_t index) noexcept {
  const std::uint32_t before = blocks_[index].prev;
  if (before != kNone && in_bin_[before]) {
    bin_remove(before);
    block& cur = blocks_[index];
    cur.addr = blocks_[before].addr;
    cur.size += blocks_[before].size;
    cur.prev = blocks_[before].prev;
    if (cur.prev != kNone) blocks_[cur.prev].next = index;
    else first_[cur.segment] = index;
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
}

// ------------------------------------------------------------ fast reuse

// Every recent block of the pool goes into the bins, merged with its free
// neighbours (which may be recent blocks merged before it).
void block_pool::merge_recent(std::uint32_t pool_index) noexcept {
  pool& p = pools_[pool_index];
  for (int w = 0; w < static_cast<int>(std::size(p.recent_bits)); ++w) {
    for (std::uint64_t bits = p.recent_bits[w]; bits != 0; bits &= bits - 1) {
      std::uint32_t& head = p.recent[w * 64 + __builtin_ctzll(bits)];
      while (head != kNone) {
        const std::uint32_t i = head;
        block& b = blocks_[i];
        head = b.bin_next;
        b.st = state::free;
        recent_bytes_ -= b.size;
        live_.take(b.addr);
        merge_free(i);
      }
    }
    p.recent_bits[w] = 0;
  }
}

void block_pool::merge_all_recent(std::uint32_t except_pool) noexcept {
  if (!fast_reuse_) return;
  for (std::uint32_t i = 0; i < pools_.size(); ++i)
    if (i != except_pool) merge_recent(i);
}

}  // namespace dao::detail
