// Stream-ordered caching allocator (strategy "caching"), after PyTorch's CUDA
// caching allocator: sizes rounded up (512 B minimum, optional power-of-two
// divisions), a small pool (requests <= 1 MiB) and a large pool, blocks that
// belong to the stream they were allocated on, splitting and merging of
// neighbours, deferred frees for blocks used on other streams
// (record_stream), an out-of-memory ladder that releases cached memory and
// retries, statistics and snapshots.
//
// Where the upstream offers virtual memory (CPU, SIM, CUDA devices), each
// stream grows one *expandable segment*, shared by small and large blocks: a large reserved address
// range whose pages are mapped when blocks need them and unmapped when cache
// is released. Best fit then works across what would otherwise be separate
// segments, so fragmentation stays close to that of one ideal arena, and a
// full device can still serve a request whenever enough pages are free.
// Elsewhere (pinned, managed memory) it carves PyTorch's segments: 2 MiB for
// small requests, 20 MiB for 1-10 MiB, larger ones rounded to 2 MiB, and
// segments of exactly the rounded size when a device has no room for more.
//
// With fast_reuse, a freed block first waits unmerged in a list of its size
// class and serves the next request of that class at once; merging waits
// until the allocator would take new memory (see push_recent()).
//
// Free blocks sit in segregated bins (two-level, 32 per power of two, with
// bitmaps of non-empty bins), so finding the best-fitting block takes a
// bitmap search and a short scan, not a tree walk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "resource/stream.hpp"
#include "strategy/strategy.hpp"
#include "util/asan_poison.hpp"
#include "util/fast_mutex.hpp"
#include "util/pointer_map.hpp"

namespace dao::detail {

struct caching_options {
  std::size_t max_split_size = SIZE_MAX;   // blocks this large are never split
  unsigned roundup_power2_divisions = 0;  // 0: round to 512 B only
  double garbage_collection_threshold = 0;  // fraction of the limit; 0: off
  double memory_fraction = 0;              // of the place's capacity; 0: no limit
  std::size_t max_pool = 0;                // bytes; 0: no limit
  bool expandable_segments = true;         // where the upstream can map
  double reserve_slack = -1;               // expandable: how far reserved may exceed
                                           // what is in use before cached pages are
                                           // given back to grow; < 0: never
  double reserve_headroom = 0.1;           // expandable: how far reserved may exceed
                                           // the peak in use (since the last peak
                                           // reset) before cached pages go; < 0: never
  bool no_caching = false;                 // DAO_NO_CACHING=1: every free goes back
  bool fast_reuse = false;                 // freed blocks wait unmerged in size-class
                                           // lists, merged before memory would grow

  static caching_options from_config(config& cfg, const memory_source& upstream);
};

class caching_strategy final : public strategy {
 public:
  caching_strategy(memory_source& upstream, const caching_options& options);
  ~caching_strategy() override;

  void* allocate(std::size_t bytes, const stream_object* stream) override;
  void deallocate(void* p) override;
  std::size_t usable_size(const void* p) const override;
  std::size_t trim() override;
  allocator_counters counters() const override;
  void reset_peaks() override;
  void reset_accumulated() override;
  bool stat(int metric, int pool, dao_stat& out) const override;
  void record_stream(void* p, const stream_object* stream) override;
  std::unique_ptr<snapshot_data> snapshot() const override;
  const char* name() const noexcept override { return "caching"; }
  std::string effective_config() const override;

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::uint32_t kScratch = 0;  // record written instead of kNone's
  static_assert(kNone == UINT32_MAX && kScratch == 0, "or_scratch() relies on both");
  // `index`, or kScratch when it is kNone, without a branch.
  static std::uint32_t or_scratch(std::uint32_t index) noexcept {
    return index & (0u - static_cast<std::uint32_t>(index != kNone));
  }
  static constexpr std::size_t kSmallSize = std::size_t(1) << 20;  // small pool: <= 1 MiB
  static constexpr int kFirstLevels = 52;
  static constexpr int kSecondLevels = 32;
  // Fast reuse: 16 size classes per power of two (pairs of bins).
  static constexpr int kRecentPerLevel = kSecondLevels / 2;
  static constexpr int kRecentClasses = kFirstLevels * kRecentPerLevel;
  // A request may take a recent block up to this many classes larger (so at
  // most 1/4 larger than it needs): beyond, it goes to the bins.
  static constexpr int kRecentSlackClasses = 3;

  // recent: freed, not yet merged with its neighbours (fast reuse); free
  // for the statistics and to its user, but in no bin.
  enum class state : std::uint8_t { free, allocated, pending, recent };

  // One cache line: the hot paths touch several records per call.
  struct alignas(64) block {
    std::uintptr_t addr = 0;
    std::size_t size = 0;
    std::size_t requested = 0;
    const stream_object* stream = nullptr;
    std::uint32_t pool = kNone;
    std::uint32_t segment = kNone;
    std::uint32_t prev = kNone, next = kNone;          // address neighbours
    std::uint32_t bin_prev = kNone, bin_next = kNone;  // free-bin links
    std::uint16_t bin = 0;
    std::uint16_t event_count = 0;
    state st = state::free;
    bool counted_split = false;  // in the inactive-split statistics
    bool expandable = false;     // its segment is expandable
    bool has_uses = false;       // other streams in uses_ (record_stream)
  };
  static_assert(sizeof(block) == 64, "a block record is one cache line");

  struct segment {
    std::uintptr_t base = 0;
    std::size_t size = 0;  // bytes of addresses
    std::uint32_t pool = kNone;
    std::uint32_t first_block = kNone;
    bool expandable = false;
    bool live = false;
    std::map<std::size_t, std::size_t> mapped;  // expandable: offset -> end
    std::size_t mapped_bytes = 0;
    std::size_t mapped_prefix = 0;  // [0, mapped_prefix) is mapped: the fast check
  };

  struct pool {
    const stream_object* stream = nullptr;
    // The stream's implementation, weakly: expired once the handle is
    // destroyed (which first runs its work), so never waited for then.
    std::weak_ptr<stream_impl> stream_ref;
    std::uint64_t stream_id = 0;  // the handle's id: its address may be reused
    bool small = false;
    std::uint64_t first_level = 0;
    std::uint32_t second_level[kFirstLevels] = {};
    std::uint32_t heads[kFirstLevels][kSecondLevels];
    std::vector<std::uint32_t> segments;
    // Fast reuse: blocks freed and not merged yet, a last-in first-out list
    // per size class (linked through bin_next).
    std::uint32_t recent[kRecentClasses];
    std::uint64_t recent_bits[(kRecentClasses + 63) / 64] = {};  // non-empty lists
  };

  struct pending_free {
    std::unique_ptr<event_impl> event;
    std::uint32_t block;
  };

  // sizes and bins
  std::size_t round_size(std::size_t bytes) const;
  std::size_t segment_size(std::size_t rounded) const noexcept;
  static void bin_of(std::size_t size, int& fl, int& sl) noexcept;

  // bookkeeping
  std::uint32_t new_record();
  void drop_record(std::uint32_t index) noexcept;
  // Room for the records, links and map entries one allocation can create,
  // so that nothing after the first change can fail for lack of host memory.
  void reserve_bookkeeping() {
    // The common case costs two compares; segments_ and pools_ grow only
    // before anything has changed, where a failure is harmless.
    if (blocks_.capacity() - blocks_.size() < 2 || !live_.has_room(1)) grow_bookkeeping();
  }
  void grow_bookkeeping();
  // The pool of a stream's small or large blocks (one per stream with
  // expandable segments); the last stream's are remembered.
  std::uint32_t pool_for(const stream_object* stream, bool small) {
    if (granularity_ != 0) small = false;
    const std::uint64_t id = stream != nullptr ? stream->id : 0;
    if (stream == last_stream_ && id == last_stream_id_ && last_pools_[small] != kNone)
      return last_pools_[small];
    return find_pool(stream, small, id);
  }
  std::uint32_t find_pool(const stream_object* stream, bool small, std::uint64_t id);
  void bin_insert(std::uint32_t index) noexcept;
  void bin_remove(std::uint32_t index) noexcept;
  std::uint32_t find_free(std::uint32_t pool_index, std::size_t size) noexcept;
  bool fits(const block& b, std::size_t size) const noexcept;

  // Fast reuse (deferred merging): a freed block goes to its pool's list of
  // its size class, unmerged, and the next request of that class takes it
  // back at once, at the same address (whose memory is still in the CPU's
  // caches). Merging waits until the pool would take new memory, and until
  // anything that reads or gives back the free memory (trim, snapshot,
  // garbage collection, the out-of-memory ladder): then fragmentation is
  // what it would have been with every free merged at once.
  static int recent_class(std::size_t size) noexcept {
    int fl, sl;
    bin_of(size, fl, sl);
    return fl * kRecentPerLevel + sl / 2;
  }
  // Inline: the whole of a fast allocation or free. Takes a block just freed.
  void push_recent(std::uint32_t index) noexcept {
    block& b = blocks_[index];
    poison_freed(b);
    pool& p = pools_[b.pool];
    const int c = recent_class(b.size);
    b.st = state::recent;
    b.bin_next = p.recent[c];
    p.recent[c] = index;
    p.recent_bits[c / 64] |= std::uint64_t(1) << (c % 64);
  }

  // The last block freed in the request's size class when it is large
  // enough, else the last one of the first non-empty class of the next
  // kRecentSlackClasses, handed out whole: splitting it would cost what
  // fast reuse saves. A miss goes to the bins, which are exact.
  std::uint32_t take_recent(std::uint32_t pool_index, std::size_t size) noexcept {
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
    return i;
  }
  static bool has_recent(const pool& p) noexcept {
    std::uint64_t any = 0;
    for (std::uint64_t bits : p.recent_bits) any |= bits;
    return any != 0;
  }
  void merge_recent(std::uint32_t pool_index) noexcept;
  void merge_all_recent(std::uint32_t except_pool = kNone) noexcept;
  // For the const readers (snapshot, counters): merging changes how the
  // free memory is recorded, not what is free.
  void merge_all_recent() const noexcept { const_cast<caching_strategy*>(this)->merge_all_recent(); }

  // memory from the upstream
  std::uint32_t new_segment(std::uint32_t pool_index, std::size_t size);
  std::uint32_t add_segment(std::uint32_t pool_index, std::uintptr_t base, std::size_t size,
                            bool expandable);
  void ensure_mapped(segment& seg, std::uintptr_t start, std::size_t bytes, std::uint32_t target);
  // Never waits: holes of pools whose streams are busy are left alone.
  std::size_t release_holes(std::size_t bytes, std::uint32_t keep, std::uintptr_t keep_from);
  std::size_t reserve_budget(std::size_t request) const noexcept;
  std::size_t map_ahead(const segment& seg) const noexcept;
  bool backed(std::uint32_t index, std::size_t size) const noexcept;
  static void update_prefix(segment& seg) noexcept;
  // Memory freed on a stream may still be used by work queued there before
  // the free (stream-ordered free): before it goes back to the upstream,
  // that stream must have run its work. settled(): whether the stream of a
  // pool has (wait: after waiting for it; a failed wait counts as not).
  bool settled(std::uint32_t pool_index, bool wait) noexcept;
  void settle_all() noexcept;
  std::size_t release_cached(bool wait, bool dead_streams_only = false);
  std::size_t unmap_free(std::uint32_t block_index) noexcept;
  std::size_t unmap_range(segment& seg, std::uintptr_t from, std::uintptr_t to,
                          std::size_t limit, std::size_t unit) noexcept;
  void release_segment(std::uint32_t segment_index) noexcept;
  bool within_limit(std::size_t extra) const noexcept;
  std::size_t limit() const noexcept;
  void collect_garbage(std::uint32_t keep);
  std::size_t largest_free_block() const noexcept;

  // the allocation path
  std::uint32_t obtain_block(std::uint32_t pool_index, std::size_t size);
  std::uint32_t carve(std::uint32_t index, std::size_t size);
  void free_block(std::uint32_t index) noexcept;
  std::size_t record_uses(std::uint32_t index);
  void merge_free(std::uint32_t index) noexcept;
  void process_events(bool wait);
  out_of_memory oom(std::size_t bytes, const char* why) const;
  void check_stream_place(const stream_object* stream, const char* function) const;
  std::uint32_t find_live(const void* p) const;

  // statistics
  // Adds `amount` to (or takes it from) a metric of the pool (small or
  // large), and so of the whole (see pooled_stat).
  void count_up(int metric, bool small, std::int64_t amount) noexcept {
    stats_[metric].up(small, amount);
  }
  void count_down(int metric, bool small, std::int64_t amount) noexcept {
    stats_[metric].down(small, amount);
  }
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
  void count(int metric, bool small, std::int64_t delta) noexcept {
    if (delta >= 0) count_up(metric, small, delta);
    else count_down(metric, small, -delta);
  }
  void track_active() noexcept;
  void count_split(block& b, bool add) noexcept {
    const bool small = b.size <= kSmallSize;  // blocks count by size, segments by pool
    const auto bytes = static_cast<std::int64_t>(b.size);
    if (add) {
      count_up(DAO_STAT_INACTIVE_SPLIT_BYTES, small, bytes);
      count_up(DAO_STAT_INACTIVE_SPLIT_BLOCKS, small, 1);
    } else {
      count_down(DAO_STAT_INACTIVE_SPLIT_BYTES, small, bytes);
      count_down(DAO_STAT_INACTIVE_SPLIT_BLOCKS, small, 1);
    }
    b.counted_split = add;
  }
  bool is_split(const block& b) const noexcept {
    if (b.prev == kNone && b.next == kNone) return false;
    // The unused end of an expandable segment is addresses, not fragmentation.
    return !(b.expandable && b.next == kNone);
  }

  // Free blocks of host-accessible memory are poisoned for ASan (no-ops
  // without it; device memory is never touched).
  void poison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_poison(reinterpret_cast<const void*>(addr), bytes);
  }
  // A block just freed. Only blocks of the default stream: work queued on a
  // block's own stream before its free may still use it (stream-ordered).
  void poison_freed(const block& b) const noexcept {
    if (b.stream == nullptr) poison(b.addr, b.size);
  }
  void unpoison(std::uintptr_t addr, std::size_t bytes) const noexcept {
    if (host_memory_) asan_unpoison(reinterpret_cast<const void*>(addr), bytes);
  }

  caching_options options_;
  bool host_memory_ = false;  // upstream().host_accessible(), for poisoning
  std::size_t granularity_ = 0;  // 0: no virtual memory upstream
  std::size_t large_page_ = 0;   // upstream's large pages (a multiple of it), or 0
  std::size_t arena_size_ = 0;   // addresses reserved per expandable segment
  bool exact_mapping_ = false;   // under pressure: map no more than needed
  double headroom_ = -1;         // reserve_headroom in effect (widens under churn)
  std::uint64_t churn_events_ = 0;     // releases for the headroom since it widened
  std::uint64_t churn_threshold_ = 0;  // churn_events_ that widen it
  std::uint64_t allocs_at_widen_ = 0;  // alloc_count when it last widened

  mutable fast_mutex mutex_;
  std::vector<block> blocks_;
  std::vector<std::uint32_t> spare_records_;
  // Whether each record is a free block in a bin: one byte per record, so
  // that freeing checks its neighbours without touching their records.
  std::vector<std::uint8_t> in_bin_;
  std::vector<segment> segments_;
  std::vector<pool> pools_;
  std::unordered_map<std::uintptr_t, std::uint32_t> pool_index_;
  const stream_object* last_stream_ = nullptr;
  std::uint64_t last_stream_id_ = 0;
  std::uint64_t destroyed_seen_ = 0;  // destroyed_stream_count() at the last look
  std::uint32_t last_pools_[2] = {kNone, kNone};  // large, small of last_stream_
  pointer_map live_;  // allocated blocks (with fast reuse: and pending, recent ones)
  std::unordered_map<std::uint32_t, std::vector<const stream_object*>> uses_;  // record_stream
  std::deque<pending_free> pending_;
  std::vector<std::unique_ptr<event_impl>> spare_events_;
  pooled_stat stats_[DAO_STAT_METRIC_COUNT];
  // Active blocks are the allocated ones until a free is deferred
  // (record_stream): until then the active statistics are not kept apart,
  // which saves the hot paths four updates.
  bool active_tracked_ = false;
  allocator_counters counters_;  // counts and the summary of stats_
};

}  // namespace dao::detail
