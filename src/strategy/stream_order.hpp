// The caching strategy's stream ordering: which pool serves each stream,
// whether a stream has run the work queued on it (settled), and deferred
// frees of blocks used on other streams (record_stream), each waiting for
// an event. The only part of the strategy that looks inside a stream handle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "dao/place.h"
#include "resource/stream.hpp"

namespace dao::detail {

// A stream as the strategy's callers give it (nullptr: the default stream,
// which runs work at once).
using stream_handle = const stream_object*;

class stream_order {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // The pool (small or large) of `stream` when it is the stream last looked
  // up, else kNone: then switch_to(), lookup(), add() and bind().
  std::uint32_t cached_pool(stream_handle stream, bool small) const noexcept {
    const std::uint64_t id = stream != nullptr ? stream->id : 0;
    if (stream == last_stream_ && id == last_stream_id_) return last_pools_[small];
    return kNone;
  }
  // Makes `stream` the last one looked up. True when a stream was destroyed
  // since the last look: the cache of its pools can serve no one (unless a
  // new stream gets its address), so the caller gives it back now.
  bool switch_to(stream_handle stream) noexcept;
  // The pool of (stream, small), or kNone when it has none yet.
  std::uint32_t lookup(stream_handle stream, bool small) const;
  // Registers pool `pool_index` (just added, the next index) for (stream, small).
  void add(stream_handle stream, bool small, std::uint32_t pool_index);
  // Binds pool `pool_index` to the stream now behind `stream` (new, or a
  // destroyed stream's handle address given to a new stream: the old one
  // ran all its work when it was destroyed, so its blocks may serve the new
  // one) and remembers it as the last stream's.
  void bind(std::uint32_t pool_index, stream_handle stream, bool small) noexcept;
  void grow();  // room for two more pools (may throw; changes nothing)

  stream_handle stream_of(std::uint32_t pool_index) const noexcept {
    return pools_[pool_index].stream;
  }
  // The handle of the stream of a pool, for reports (see pool_stream).
  dao_stream handle_of_pool(std::uint32_t pool_index) const noexcept {
    return pools_[pool_index].handle;
  }
  // Memory freed on a stream may still be used by work queued there before
  // the free (stream-ordered free): before it goes back to the upstream,
  // that stream must have run its work. settled(): whether the stream of a
  // pool has. Never waits: the caller holds the allocator's lock, and a
  // host function on that stream may need it (docs/reliability.md, "Locks
  // and waiting"); to wait, take waits() and wait without the lock.
  bool settled(std::uint32_t pool_index) noexcept;
  // Waits for every pool's stream and deferred free (the destructor: no
  // lock held).
  void settle_all() noexcept;
  // What waiting for every pool's stream and every deferred free would wait
  // for, kept alive so that the caller can wait without its lock: a host
  // function on one of those streams may need that lock itself (issue 20:
  // a trim that waited under the lock deadlocked with it). Waiting ignores
  // failures (then the stream does not count as settled).
  struct wait_list {
    std::vector<std::shared_ptr<stream_impl>> streams;
    std::vector<std::shared_ptr<event_impl>> events;
    void wait() const noexcept;
  };
  // Every one, or only pool `pool_index`'s stream (out of host memory: what
  // fits in the lists).
  wait_list waits() const noexcept;
  wait_list waits_of(std::uint32_t pool_index) const noexcept;
  // Whether waits() would wait for the stream whose implementation is
  // `stream` (compared only): a live pool's stream, or a deferred free's
  // event recorded on it (or its stream, where the record failed).
  bool waits_for(const void* stream) const noexcept;
  // Whether the pool's stream has been destroyed.
  bool dead(std::uint32_t pool_index) const noexcept {
    const pool_stream& p = pools_[pool_index];
    return p.stream != nullptr && p.stream_ref.expired();
  }
  // Only streams of the allocator's own place (`mine`) order its memory:
  // throws invalid_argument, naming `function`, for others.
  static void check_place(stream_handle stream, const dao_place& mine, const char* function);

  // record_stream: block `index` is used on `stream` too. Takes here what
  // the block's free will need (an event from `new_event` unless one is
  // spare, and the queue node that holds it), so that the free allocates
  // nothing (issue 20). May throw; then nothing has changed.
  void add_use(std::uint32_t index, stream_handle stream,
               const std::function<std::unique_ptr<event_impl>()>& new_event);
  // A block used on other streams and just freed: records its event on each
  // of them, queues a deferred free behind each, and forgets the uses.
  // Returns how many were queued. Allocates nothing and never waits (the
  // caller holds the allocator's lock): where a stream cannot record (its
  // own queue out of memory), the deferred free waits for that stream to
  // run dry instead of for an event, which orders the free as well.
  std::size_t defer_free(std::uint32_t index) noexcept;
  bool has_pending() const noexcept { return !pending_.empty(); }
  // Calls ready(block) for each deferred free whose event has completed, or
  // whose stream has run dry where the event could not be recorded (wait:
  // for every one, after waiting for it: only without the lock), oldest
  // first.
  template <class F>
  void run_completed(bool wait, F&& ready) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (wait) {
        if (it->by_stream) it->stream->synchronize();
        else it->event->synchronize();
      } else if (!(it->by_stream ? it->stream->query() : it->event->query())) {
        ++it;
        continue;
      }
      const std::uint32_t index = it->block;
      it->by_stream = false;
      it->stream.reset();
      auto done = it++;
      spare_.splice(spare_.end(), pending_, done);  // node and event kept for reuse
      ready(index);
    }
  }

 private:
  struct pool_stream {
    stream_handle stream = nullptr;  // compared, never dereferenced: it may be gone
    // The C API's handle of the stream, taken while it was live: what
    // snapshots report (the stream object may be destroyed since).
    dao_stream handle = nullptr;
    // The stream's implementation, weakly: expired once the handle is
    // destroyed (which first runs its work), so never waited for then.
    std::weak_ptr<stream_impl> stream_ref;
    std::uint64_t stream_id = 0;  // the handle's id: its address may be reused
  };
  // One use of a block on another stream, with its event: held by uses_
  // from record_stream, then queued in pending_ by the free, then spare
  // (spare_) for the next use. Moved between the lists by splice, which
  // allocates nothing.
  struct pending_free {
    std::shared_ptr<event_impl> event;  // shared: waited for without the lock
    std::uint32_t block = 0;
    // The other stream, kept alive until the block's free has recorded
    // the event on it, so that a stream destroyed in between is still there
    // to record on (issue 20); and, when it could not record, until the
    // deferred free has seen it run dry (by_stream).
    std::shared_ptr<stream_impl> stream;
    bool by_stream = false;
    const void* recorded_on = nullptr;  // the stream of the event (compared only)
  };

  std::vector<pool_stream> pools_;  // by pool index
  std::unordered_map<std::uintptr_t, std::uint32_t> pool_index_;
  stream_handle last_stream_ = nullptr;
  std::uint64_t last_stream_id_ = 0;
  std::uint64_t destroyed_seen_ = 0;              // destroyed_stream_count() at the last look
  std::uint32_t last_pools_[2] = {kNone, kNone};  // large, small of last_stream_
  // record_stream: the other streams of each block, with their events.
  std::unordered_map<std::uint32_t, std::list<pending_free>> uses_;
  std::list<pending_free> pending_;
  std::list<pending_free> spare_;
};

}  // namespace dao::detail
