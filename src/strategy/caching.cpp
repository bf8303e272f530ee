// The caching strategy composed: the allocation path, the out-of-memory
// ladder and the policy of giving cached memory back, over the parts of
// caching.hpp's list.
#include "strategy/caching.hpp"

#include <algorithm>
#include <vector>

#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

// ------------------------------------------------------------ construction

caching_strategy::caching_strategy(memory_source& upstream, const caching_options& options)
    : strategy(upstream),
      options_(options),
      segments_(upstream, options_, stats_),
      blocks_(options_, segments_.host_accessible(), stats_) {
  grow_bookkeeping();
}

caching_strategy::~caching_strategy() {
  // Destroy is refused while blocks are live; wait for pending frees. The
  // segments go back when segments_ is destroyed.
  try {
    process_events(true);
  } catch (...) {
  }
  streams_.settle_all();
}

std::string caching_strategy::effective_config() const {
  return options_.effective_config(segments_.expandable());
}

void caching_strategy::grow_bookkeeping() {
  blocks_.grow();
  segments_.grow();
  streams_.grow();
}

std::uint32_t caching_strategy::find_pool(stream_handle stream, bool small) {
  // A stream was destroyed since the last look: give the cache of dead
  // streams' pools back now rather than at the next trim or out-of-memory
  // retry.
  if (streams_.switch_to(stream)) release_cached(true);
  std::uint32_t pi = streams_.lookup(stream, small);
  if (pi == kNone) {
    // Room for the new pool's entry in release_cached()'s scratch, which a
    // trim must find without allocating.
    quiet_.reserve(blocks_.pool_count() + std::size_t(1));
    pi = blocks_.add_pool(small);
    streams_.add(stream, small, pi);
  }
  streams_.bind(pi, stream, small);
  return pi;
}

// ------------------------------------------------------- upstream memory

// A new segment able to hold `size`, with its one free block: garbage
// collection first for a classic segment (an expandable one is addresses).
std::uint32_t caching_strategy::new_segment(std::uint32_t pool_index, std::size_t size) {
  if (!segments_.expandable()) collect_garbage(kNone);
  const segment_map::range got = segments_.obtain(size);
  std::uint32_t si = kNone;
  try {
    blocks_.reserve_segments(segments_.count() + std::size_t(1));
    si = segments_.add(pool_index, blocks_.small(pool_index), got);
  } catch (...) {
    segments_.give_back(got);
    throw;
  }
  return blocks_.add_whole(si, pool_index, got.base, got.size, got.expandable,
                           streams_.stream_of(pool_index));
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
  blocks_.merge_all_recent(keep != kNone ? blocks_[keep].pool : kNone);
  std::vector<std::uint32_t> holes;
  std::vector<std::int8_t> quiet(blocks_.pool_count(), -1);  // settled(pool), asked once
  const std::size_t granularity = segments_.granularity();
  for (std::uint32_t si = 0; si < segments_.count(); ++si) {
    const segment_map::segment& seg = segments_[si];
    if (!seg.live || !seg.expandable) continue;
    std::int8_t& q = quiet[seg.pool];
    if (q < 0) q = streams_.settled(seg.pool) ? 1 : 0;
    if (q == 0) continue;
    for (std::uint32_t i = blocks_.first_of(si); i != kNone; i = blocks_[i].next)
      if (i != keep && blocks_[i].st == state::free && blocks_[i].size >= granularity)
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
    released += segments_.unmap_range(b.segment, from, b.addr + b.size,
                                      bytes == SIZE_MAX ? SIZE_MAX : bytes - released, unit);
  };
  const bool keep_tail = keep != kNone && keep_from < blocks_[keep].addr + blocks_[keep].size &&
                         quiet[blocks_[keep].pool] == 1;
  // Less than a large page short, where that is within 1/64 of what is
  // reserved: close enough to the budget not to split a large page for it.
  const auto reserved = static_cast<std::size_t>(stats_.total(DAO_STAT_RESERVED_BYTES));
  const std::size_t large_page = segments_.large_page();
  const std::size_t close_enough =
      large_page != 0 && bytes != SIZE_MAX && large_page <= reserved / 64 ? large_page : 0;
  for (std::size_t unit : {large_page, granularity}) {
    if (unit == 0) continue;
    if (unit == granularity && released + close_enough >= bytes) break;
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
void caching_strategy::ensure_mapped(std::uint32_t segment, std::uintptr_t start, std::size_t bytes,
                                     std::uint32_t target) {
  if (segments_.prefix_holds(segment, start, bytes)) return;  // the common case
  collect_garbage(target);
  segment_map::mapping m;
  if (!segments_.plan_mapping(segment, start, bytes, m)) return;
  if (const std::size_t excess = segments_.over_budget(m, bytes); excess > 0) {
    release_holes(excess, target, start + bytes);
    segments_.note_churn();
  }
  segments_.map(segment, m);
  if (m.n == 64) ensure_mapped(segment, start, bytes, target);
}

void caching_strategy::release_segment(std::uint32_t segment_index) noexcept {
  blocks_.drop_whole(segment_index);
  segments_.release(segment_index);
}

// Gives back every wholly free segment and, in expandable segments, every
// granule that no block uses, of the pools whose streams have run their work.
// Never waits (the lock is held): callers that must wait, as PyTorch's
// empty_cache does, wait first without it (wait_unlocked()). Returns the
// bytes released.
std::size_t caching_strategy::release_cached(bool dead_streams_only) {
  blocks_.merge_all_recent();
  std::size_t released = 0;
  // settled(pool), asked once; capacity reserved as pools are added,
  // so that a trim allocates nothing here.
  std::vector<std::int8_t>& quiet = quiet_;
  quiet.assign(blocks_.pool_count(), -1);
  for (std::uint32_t si = 0; si < segments_.count(); ++si) {
    const segment_map::segment& seg = segments_[si];
    if (!seg.live) continue;
    std::int8_t& q = quiet[seg.pool];
    if (q < 0) {
      const bool dead = streams_.dead(seg.pool);
      q = (dead || !dead_streams_only) && streams_.settled(seg.pool) ? 1 : 0;
    }
    if (q == 0) continue;
    const std::uint32_t first = blocks_.first_of(si);
    if (seg.expandable) {
      for (std::uint32_t i = first; i != kNone; i = blocks_[i].next) {
        const block& b = blocks_[i];
        if (b.st == state::free)
          released +=
              segments_.unmap_range(si, b.addr, b.addr + b.size, SIZE_MAX, segments_.granularity());
      }
      if (blocks_[first].st == state::free && blocks_[first].next == kNone && seg.mapped.empty())
        release_segment(si);
    } else if (blocks_[first].st == state::free && blocks_[first].next == kNone) {
      released += seg.size;
      release_segment(si);
    }
  }
  return released;
}

// Before new memory is taken: when reserved memory has passed the threshold
// (a fraction of the limit, or of the place's capacity when no limit is
// set), give cached memory back first, except the block about to be used.
void caching_strategy::collect_garbage(std::uint32_t keep) {
  if (options_.garbage_collection_threshold <= 0) return;
  std::size_t cap = segments_.limit();
  if (cap == 0) cap = segments_.info().total_bytes;
  if (cap == 0) return;
  auto reserved = static_cast<double>(stats_.total(DAO_STAT_RESERVED_BYTES));
  if (reserved <= options_.garbage_collection_threshold * static_cast<double>(cap)) return;
  if (segments_.expandable()) release_holes(SIZE_MAX, keep, UINTPTR_MAX);
  else release_cached();
}

// --------------------------------------------------------- the hot path

// A free block of the pool that holds `size` and is backed by memory: from
// the cache, else from new memory, else after releasing the cache (the
// out-of-memory ladder). Throws out_of_memory when all fail.
std::uint32_t caching_strategy::obtain_block(std::unique_lock<fast_mutex>& lock,
                                             std::uint32_t pool_index, std::size_t size) {
  auto attempt = [&]() -> std::uint32_t {
    try {
      std::uint32_t i = blocks_.find_free(pool_index, size);
      if (options_.fast_reuse &&
          (i == kNone || !segments_.backed(blocks_[i].segment, blocks_[i].addr, size)) &&
          blocks_.has_recent(pool_index)) {
        // About to take new memory: merged, the recent blocks may hold it.
        blocks_.merge_recent(pool_index);
        i = blocks_.find_free(pool_index, size);
      }
      if (i == kNone) i = new_segment(pool_index, size);
      const std::uint32_t si = blocks_[i].segment;
      if (segments_[si].expandable && !segments_.prefix_holds(si, blocks_[i].addr, size))
        ensure_mapped(si, blocks_[i].addr, size, i);  // not all mapped yet
      return i;
    } catch (const out_of_memory&) {
      return kNone;
    }
  };
  std::uint32_t i = attempt();
  if (i != kNone) return i;
  // Wait for pending frees, give back what is cached, and try again. The
  // wait is without the lock: a host function on a stream waited for may
  // allocate here itself (issue 20). Others may allocate meanwhile, so the
  // room for this allocation's records is made again.
  wait_unlocked(lock);
  reserve_bookkeeping();
  process_events(false);
  release_cached();
  segments_.set_exact_mapping(true);
  i = attempt();
  segments_.set_exact_mapping(false);
  if (i != kNone) {
    ++stats_.counters().alloc_retry_count;
    return i;
  }
  ++stats_.counters().failed_alloc_count;
  // Say which bound stopped it: the allocator's own limit, or the place.
  throw oom(size, segments_.within_limit(size)
                      ? "the place has no room for it"
                      : "the allocator's limit (max_pool or memory_fraction) would be exceeded");
}

void* caching_strategy::do_allocate(std::size_t bytes, const stream_object* stream) {
  if (bytes > (SIZE_MAX >> 2)) {
    std::lock_guard<fast_mutex> lock(mutex_);
    ++stats_.counters().failed_alloc_count;
    throw oom(bytes, "no place can hold it");
  }
  if (stream != nullptr) check_stream_place(stream, "dao_allocator_alloc");
  const std::size_t size = blocks_.round_size(bytes);
  const bool small = size <= kSmallSize;
  std::unique_lock<fast_mutex> lock(mutex_);
  reserve_bookkeeping();
  if (streams_.has_pending()) process_events(false);
  const std::uint32_t pi = pool_for(stream, small);
  std::uint32_t index = options_.fast_reuse ? blocks_.take_recent(pi, size) : kNone;
  const bool recent = index != kNone;  // still in the map
  if (!recent) {
    index = obtain_block(lock, pi, size);
    blocks_.bin_remove(index);
    blocks_.carve(index, size);
  }
  block& b = blocks_[index];
  b.st = state::allocated;
  b.requested = bytes;
  blocks_.unpoison(b.addr, b.size);                   // all of it: usable_size() promises it
  if (!recent) blocks_.live().insert(b.addr, index);  // room reserved
  // Statistics count blocks by their size (a recent block may be larger).
  stats_.on_alloc(b.size <= kSmallSize, b.size, bytes);
  trace::t_block_size = b.size;  // for a recording (strategy.hpp)
  return reinterpret_cast<void*>(b.addr);
}

void caching_strategy::do_deallocate(void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::unique_lock<fast_mutex> lock(mutex_);
  // With fast reuse a block keeps its map entry until it is merged: a
  // recent block taken again needs no new one.
  const std::uint32_t index =
      options_.fast_reuse ? blocks_.live().find(addr) : blocks_.live().take(addr);
  if (index == pointer_map::npos || blocks_[index].st != state::allocated) {
    throw invalid_pointer(
        strprintf("caching allocator on %s: pointer %p is not a live allocation of this allocator "
                  "(allocated elsewhere, already freed, or not the start of a block)",
                  place_to_string(segments_.place()).c_str(), p));
  }
  // Events first: if recording fails, nothing has changed.
  const std::size_t queued = blocks_[index].has_uses ? record_uses(index) : 0;
  block& b = blocks_[index];
  stats_.on_free(b.size <= kSmallSize, b.size, b.requested);
  b.requested = 0;
  if (queued > 0) {
    // Reused only once the other streams' work up to now has run.
    b.st = state::pending;
    b.event_count = static_cast<std::uint16_t>(queued);
    return;
  }
  if (options_.fast_reuse && !stats_.active_tracked() && recent_room(b.size)) {
    blocks_.push_recent(index);  // free_block()'s fast case, inline
    return;
  }
  if (!free_block(index) && options_.no_caching) release_if_whole(lock, index);
}

// DAO_NO_CACHING=1: the segment of block `index`, when the block is all of
// it, goes back once the pool's stream has run its work, waited for without
// the lock (a host function on it may allocate: issue 20). Meanwhile
// another thread may have used the segment: then it stays.
void caching_strategy::release_if_whole(std::unique_lock<fast_mutex>& lock,
                                        std::uint32_t index) noexcept {
  const block& b = blocks_[index];
  if (b.prev != kNone || b.next != kNone || b.st != state::free) return;
  const std::uint32_t si = b.segment, pool = b.pool;
  const std::uintptr_t base = segments_[si].base;
  if (!streams_.settled(pool)) {
    const stream_order::wait_list w = streams_.waits_of(pool);
    lock.unlock();
    w.wait();
    lock.lock();
    const std::uint32_t first =
        segments_[si].live && segments_[si].base == base ? blocks_.first_of(si) : kNone;
    if (first == kNone || blocks_[first].next != kNone || blocks_[first].st != state::free ||
        !streams_.settled(pool))
      return;
  }
  release_segment(si);
}

// Waits for every stream with pools here and every pending free, without
// the lock, which is held again on return.
void caching_strategy::wait_unlocked(std::unique_lock<fast_mutex>& lock) noexcept {
  const stream_order::wait_list w = streams_.waits();
  lock.unlock();
  w.wait();
  lock.lock();
}

// A block used on other streams (record_stream) and just freed: records an
// event on each of them, and forgets the uses. Returns how many were
// recorded. On failure nothing has changed: the block is live again.
std::size_t caching_strategy::record_uses(std::uint32_t index) {
  const std::uintptr_t addr = blocks_[index].addr;
  std::size_t queued = 0;
  try {
    queued = streams_.defer_free(index);
  } catch (...) {
    if (!options_.fast_reuse)
      blocks_.live().insert(addr, index);  // the slot it left is free: cannot fail
    throw;
  }
  if (queued > 0) stats_.track_active();  // before allocated and active part
  blocks_[index].has_uses = false;
  return queued;
}

// Returns whether the block's segment went back (DAO_NO_CACHING=1); then
// `index` is no block any more.
bool caching_strategy::free_block(std::uint32_t index) noexcept {
  const block& b = blocks_[index];
  stats_.on_inactive(b.size <= kSmallSize, b.size);
  if (options_.fast_reuse) {
    if (recent_room(b.size)) {
      blocks_.push_recent(index);
      return false;
    }
    blocks_.live().take(b.addr);  // merged at once: no longer in the map
  }
  blocks_.free_and_merge(index);
  if (options_.no_caching) {
    // Without waiting (the lock is held): deallocate() waits, unlocked.
    const block& whole = blocks_[index];
    if (whole.prev == kNone && whole.next == kNone && streams_.settled(whole.pool)) {
      release_segment(whole.segment);
      return true;
    }
  }
  return false;
}

void caching_strategy::process_events(bool wait) {
  streams_.run_completed(wait, [this](std::uint32_t index) {
    if (--blocks_[index].event_count == 0) free_block(index);
  });
}

void caching_strategy::do_record_stream(void* p, const stream_object* stream) {
  std::lock_guard<fast_mutex> lock(mutex_);
  const std::uint32_t index = find_live(p);
  block& b = blocks_[index];
  if (stream == nullptr || stream == b.stream) return;
  check_stream_place(stream, "dao_allocator_record_stream");
  streams_.add_use(index, stream, [this] { return segments_.new_event(); });
  b.has_uses = true;
}

// The record of live allocation `p`; throws invalid_pointer if there is none.
// With fast reuse, the map also holds freed blocks not merged yet.
std::uint32_t caching_strategy::find_live(const void* p) const {
  const std::uint32_t index = blocks_.live().find(reinterpret_cast<std::uintptr_t>(p));
  if (index == pointer_map::npos || blocks_[index].st != state::allocated) {
    throw invalid_pointer(strprintf("caching allocator on %s: pointer %p is not a live allocation",
                                    place_to_string(segments_.place()).c_str(), p));
  }
  return index;
}

void caching_strategy::check_stream_place(stream_handle stream, const char* function) const {
  stream_order::check_place(stream, segments_.place(), function);
}

std::size_t caching_strategy::usable_size(const void* p) const {
  std::lock_guard<fast_mutex> lock(mutex_);
  return blocks_[find_live(p)].size;
}

// Waits for the streams without the lock (a host function on one of them
// may call this allocator: issue 20), then gives back what they have
// settled; work queued meanwhile keeps its pool's memory cached.
std::size_t caching_strategy::do_trim() {
  std::unique_lock<fast_mutex> lock(mutex_);
  wait_unlocked(lock);
  process_events(false);
  return release_cached();
}

// The destructor waits for every pool's stream and every deferred free.
bool caching_strategy::destroy_waits_for(const void* stream) const {
  std::lock_guard<fast_mutex> lock(mutex_);
  return streams_.waits_for(stream);
}

out_of_memory caching_strategy::oom(std::size_t bytes, const char* why) const {
  const memory_info info = segments_.info();
  return stats_.oom(bytes, why, place_to_string(segments_.place()), info, segments_.limit(),
                    segments_.expandable(), largest_free_block());
}

// ------------------------------------------------------------- statistics

// The largest block servable without new memory.
std::size_t caching_strategy::largest_free_block() const noexcept {
  blocks_.merge_all_recent();
  return dao::detail::largest_free_block(segments_, blocks_);
}

allocator_counters caching_strategy::counters() const {
  std::lock_guard<fast_mutex> lock(mutex_);
  return stats_.summary(largest_free_block());
}

bool caching_strategy::stat(int metric, int pool_kind, dao_stat& out) const {
  std::lock_guard<fast_mutex> lock(mutex_);
  // Recent blocks count as inactive split once merged (see fast reuse).
  if (metric == DAO_STAT_INACTIVE_SPLIT_BYTES || metric == DAO_STAT_INACTIVE_SPLIT_BLOCKS)
    blocks_.merge_all_recent();
  out = stats_.stat(metric, pool_kind);
  return true;
}

void caching_strategy::reset_peaks() {
  std::lock_guard<fast_mutex> lock(mutex_);
  stats_.reset_peaks();
}

void caching_strategy::reset_accumulated() {
  std::lock_guard<fast_mutex> lock(mutex_);
  stats_.reset_accumulated();
}

std::unique_ptr<snapshot_data> caching_strategy::snapshot() const {
  std::lock_guard<fast_mutex> lock(mutex_);
  // The blocks as they would be with every free merged.
  blocks_.merge_all_recent();
  return build_snapshot(segments_, blocks_, streams_);
}

}  // namespace dao::detail
