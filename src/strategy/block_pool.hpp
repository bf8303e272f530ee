// The caching strategy's blocks: one record per block, the free blocks of
// each pool in segregated bins (best fit), splitting and merging of address
// neighbours, fast reuse's lists of recent frees, and the map from the
// address of each live block to its record. Knows nothing of the upstream
// or of streams beyond the handle each block belongs to.
//
// Free blocks sit in segregated bins (two-level, 32 per power of two, with
// bitmaps of non-empty bins), so finding the best-fitting block takes a
// bitmap search and a short scan, not a tree walk.
//
// With fast_reuse, a freed block first waits unmerged in a list of its size
// class and serves the next request of that class at once; merging waits
// until the allocator would take new memory (see push_recent()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "strategy/caching_options.hpp"
#include "strategy/caching_stats.hpp"
#include "strategy/stream_order.hpp"
#include "util/asan_poison.hpp"
#include "util/pointer_map.hpp"

namespace dao::detail {

class block_pool {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::size_t kSmallSize = caching_options::kSmallSize;

  // recent: freed, not yet merged with its neighbours (fast reuse); free
  // for the statistics and to its user, but in no bin.
  enum class state : std::uint8_t { free, allocated, pending, recent };

  // One cache line: the hot paths touch several records per call.
  struct alignas(64) block {
    std::uintptr_t addr = 0;
    std::size_t size = 0;
    std::size_t requested = 0;
    stream_handle stream = nullptr;
    std::uint32_t pool = kNone;
    std::uint32_t segment = kNone;
    std::uint32_t prev = kNone, next = kNone;          // address neighbours
    std::uint32_t bin_prev = kNone, bin_next = kNone;  // free-bin links
    std::uint16_t bin = 0;
    std::uint16_t event_count = 0;  // deferred frees still to run (stream_order)
    state st = state::free;
    bool counted_split = false;  // in the inactive-split statistics
    bool expandable = false;     // its segment is expandable
    bool has_uses = false;       // used on other streams (record_stream)
  };
  static_assert(sizeof(block) == 64, "a block record is one cache line");

  // `stats`: where the inactive-split statistics go; it outlives this.
  block_pool(const caching_options& options, bool host_memory, caching_stats& stats);

  block& operator[](std::uint32_t index) noexcept { return blocks_[index]; }
  const block& operator[](std::uint32_t index) const noexcept { return blocks_[index]; }
  // The block at the lowest address of a segment (its blocks are linked
  // through next).
  std::uint32_t first_of(std::uint32_t segment) const noexcept { return first_[segment]; }

  // Room for the records, links and map entries one allocation can create,
  // so that nothing after the first change can fail for lack of host memory.
  // The common case costs two compares.
  bool needs_growth() const noexcept {
    return blocks_.capacity() - blocks_.size() < 2 || !live_.has_room(1);
  }
  void grow();
  // Room for the first block of `segments` segments (may throw; changes nothing).
  void reserve_segments(std::size_t segments) {
    if (first_.capacity() < segments) first_.reserve(segments);
  }

  // Pools: the free blocks of one stream (small or large), in bins.
  std::uint32_t add_pool(bool small);  // room reserved by grow()
  bool small(std::uint32_t pool_index) const noexcept { return pools_[pool_index].small; }
  std::uint32_t pool_count() const noexcept { return static_cast<std::uint32_t>(pools_.size()); }

  // A new segment's one block, free and binned (nothing fails: room
  // reserved by grow() and reserve_segments()).
  std::uint32_t add_whole(std::uint32_t segment, std::uint32_t pool_index, std::uintptr_t base,
                          std::size_t size, bool expandable, stream_handle stream) noexcept;
  // Forgets the only block of a segment given back.
  void drop_whole(std::uint32_t segment) noexcept;

  // Sizes: requests rounded up (512 B, or power-of-two divisions).
  std::size_t round_size(std::size_t bytes) const;

  // Best fit within a few percent; kNone if the pool has no fitting block.
  std::uint32_t find_free(std::uint32_t pool_index, std::size_t size) noexcept;
  void bin_insert(std::uint32_t index) noexcept;
  void bin_remove(std::uint32_t index) noexcept;
  // Splits off what `size` does not need (a free block of its own) and
  // returns `index`, now exactly `size` unless the block may not be split.
  std::uint32_t carve(std::uint32_t index, std::size_t size);
  // A block just freed (by its user or by its last deferred free): free, and
  // merged with its free neighbours in bins.
  void free_and_merge(std::uint32_t index) noexcept {
    poison_freed(blocks_[index]);
    blocks_[index].st = state::free;
    merge_free(index);
  }

  // Fast reuse (deferred merging): a freed block goes to its pool's list of
  // its size class, unmerged, and the next request of that class takes it
  // back at once, at the same address (whose memory is still in the CPU's
  // caches). Merging waits until the pool would take new memory, and until
  // anything that reads or gives back the free memory (trim, snapshot,
  // garbage collection, the out-of-memory ladder): then fragmentation is
  // what it would have been with every free merged at once.
  // Inline (forced: GCC would otherwise call take_recent() out of line from
  // allocate()): the whole of a fast allocation or free. Takes a block just
  // freed.
  __attribute__((always_inline)) void push_recent(std::uint32_t index) noexcept {
    block& b = blocks_[index];
    poison_freed(b);
    pool& p = pools_[b.pool];
    const int c = recent_class(b.size);
    b.st = state::recent;
    recent_bytes_ += b.size;
    b.bin_next = p.recent[c];
    p.recent[c] = index;
    p.recent_bits[c / 64] |= std::uint64_t(1) << (c % 64);
  }

  // The last block freed in the request's size class when it is large
  // enough, else the last one of the first non-empty class of the next
  // kRecentSlackClasses, handed out whole: splitting it would cost what
  // fast reuse saves. A miss goes to the bins, which are exact.
  __attribute__((always_inline)) std::uint32_t take_recent(std::uint32_t pool_index,
                                                           std::size_t size) noexcept {
    pool& p = pools_[pool_index];
    int c = recent_class(size);
    std::uint32_t i = p.recent[c];
    if (i == kNone || !fits(blocks_[i], size)) {
      // Every block of the classes above fits: the first non-empty one, from
      // the bitmap (no record is read for the classes that are empty).
      int k = 1;
      for (; k <= kRecentSlackClasses; ++k)
        if (c + k < kRecentClasses && (p.recent_bits[(c + k) / 64] >> ((c + k) % 64) & 1)) break;
      if (k > kRecentSlackClasses) return kNone;
      c += k;
      i = p.recent[c];
      if (!fits(blocks_[i], size)) return kNone;  // oversize (max_split_size)
    }
    block& b = blocks_[i];
    p.recent[c] = b.bin_next;
    p.recent_bits[c / 64] &= ~(static_cast<std::uint64_t>(b.bin_next == kNone) << (c % 64));
    b.bin_next = kNone;
    recent_bytes_ -= b.size;
    return i;
  }
  std::size_t recent_bytes() const noexcept { return recent_bytes_; }
  bool has_recent(std::uint32_t pool_index) const noexcept {
    std::uint64_t any = 0;
    for (std::uint64_t bits : pools_[pool_index].recent_bits) any |= bits;
    return any != 0;
  }
  void merge_recent(std::uint32_t pool_index) noexcept;
  void merge_all_recent(std::uint32_t except_pool = kNone) noexcept;
  // For the const readers (snapshot, counters): merging changes how the
  // free memory is recorded, not what is free.
  void merge_all_recent() const noexcept { const_cast<block_pool*>(this)->merge_all_recent(); }

  // The live blocks by address (with fast reuse: and pending, recent ones).
  // (The map itself: GCC inlines its insert() into allocate() only when
  // called there directly.)
  pointer_map& live() noexcept { return live_; }
  const pointer_map& live() const noexcept { return live_; }

  // Free blocks of host-accessible memory are poisoned for ASan (no-ops
  // without it; device memory is never touched).
  void unpoison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_unpoison(reinterpret_cast<const void*>(addr), bytes);
  }

 private:
  static constexpr std::uint32_t kScratch = 0;  // record written instead of kNone's
  static_assert(kNone == UINT32_MAX && kScratch == 0, "or_scratch() relies on both");
  // `index`, or kScratch when it is kNone, without a branch.
  static std::uint32_t or_scratch(std::uint32_t index) noexcept {
    return index & (0u - static_cast<std::uint32_t>(index != kNone));
  }
  static constexpr int kFirstLevels = 52;
  static constexpr int kSecondLevels = 32;
  // Fast reuse: 16 size classes per power of two (pairs of bins).
  static constexpr int kRecentPerLevel = kSecondLevels / 2;
  static constexpr int kRecentClasses = kFirstLevels * kRecentPerLevel;
  // A request may take a recent block up to this many classes larger (so at
  // most 1/4 larger than it needs): beyond, it goes to the bins.
  static constexpr int kRecentSlackClasses = 3;

  struct pool {
    bool small = false;
    std::uint64_t first_level = 0;
    std::uint32_t second_level[kFirstLevels] = {};
    std::uint32_t heads[kFirstLevels][kSecondLevels];
    // Fast reuse: blocks freed and not merged yet, a last-in first-out list
    // per size class (linked through bin_next).
    std::uint32_t recent[kRecentClasses];
    std::uint64_t recent_bits[(kRecentClasses + 63) / 64] = {};  // non-empty lists
  };

  // Bin (first level: power of two of the size in 512-byte units; second:
  // which 1/32 of it). Sizes under 32 units share first level 0, one unit per
  // bin. Without branches: the size of a request is random to the predictor.
  static void bin_of(std::size_t size, int& fl, int& sl) noexcept {
    const std::size_t units = size / caching_options::kMinBlock;
    const int lg = 63 - __builtin_clzll(units | kSecondLevels);  // >= 5
    fl = (lg - 4) & -static_cast<int>(units >= kSecondLevels);
    sl = static_cast<int>((units >> (lg - 5)) & (kSecondLevels - 1));
  }
  static int recent_class(std::size_t size) noexcept {
    int fl, sl;
    bin_of(size, fl, sl);
    return fl * kRecentPerLevel + sl / 2;
  }
  bool fits(const block& b, std::size_t size) const noexcept {
    if (b.size < size) return false;
    if (max_split_size_ == SIZE_MAX || b.expandable) return true;
    // PyTorch's rule: oversize blocks serve only oversize requests, within a
    // bounded slack.
    if (size < max_split_size_) return b.size < max_split_size_;
    return b.size < size + caching_options::kLargeBuffer;
  }
  std::uint32_t new_record();
  void drop_record(std::uint32_t index) noexcept;
  // Merges free block `index` with its free neighbours in bins and bins it.
  void merge_free(std::uint32_t index) noexcept;

  void count_split(block& b, bool add) noexcept {
    stats_.on_split(b.size <= kSmallSize, b.size, add);  // blocks count by size
    b.counted_split = add;
  }
  bool is_split(const block& b) const noexcept {
    if (b.prev == kNone && b.next == kNone) return false;
    // The unused end of an expandable segment is addresses, not fragmentation.
    return !(b.expandable && b.next == kNone);
  }
  // A block just freed. Only blocks of the default stream: work queued on a
  // block's own stream before its free may still use it (stream-ordered).
  void poison_freed(const block& b) const noexcept {
    if (b.stream == nullptr && host_memory_)
      asan_poison(reinterpret_cast<const void*>(b.addr), b.size);
  }

  std::size_t max_split_size_;
  unsigned roundup_power2_divisions_;
  bool fast_reuse_;
  std::size_t recent_bytes_ = 0;  // in the recent lists
  bool host_memory_;              // the upstream's memory is host-accessible, for poisoning
  caching_stats& stats_;
  std::vector<block> blocks_;
  std::vector<std::uint32_t> spare_records_;
  // Whether each record is a free block in a bin: one byte per record, so
  // that freeing checks its neighbours without touching their records.
  std::vector<std::uint8_t> in_bin_;
  std::vector<std::uint32_t> first_;  // per segment: its first block
  std::vector<pool> pools_;
  pointer_map live_;  // allocated blocks (with fast reuse: and pending, recent ones)
};

}  // namespace dao::detail
