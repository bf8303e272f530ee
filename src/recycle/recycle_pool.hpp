// Recycle pools (include/dao/recycle.h): typed, shaped, reference-counted
// buffers on one place, handed from fill threads to operate threads.
//
// Everything a pool needs in steady state exists from dao_recycle_create()
// on: one array of buffer records (max_buffers entries, so a recycle_buffer*
// handle is a stable address inside it), a lock-free stack of record
// indices for the free list (LIFO: the most recently released buffer, whose
// memory is still cached, goes out first; index_stack.hpp) and a bounded
// MPMC ring of record indices for the ready queue (FIFO, Vyukov's queue: one
// sequence number per cell), each with room for every buffer. Only buffer
// *memory* is made lazily, from the place's default allocator, up to
// max_buffers; after that acquire -> submit -> take -> release allocates
// nothing and takes no lock unless a caller has to sleep.
//
// Releases go through per-thread stashes (release_stash): the last release
// of a buffer puts it in a small stash of the releasing thread's slot, and
// the stash goes onto the free list as one chain (one exchange of the
// list's head) when it holds `stash_limit_` buffers, or at once when an
// acquire sleeps. So the free list's head changes cache-line ownership
// once per batch rather than twice per buffer. An acquire takes from its
// own thread's stash first, then from the free list, and takes other
// threads' stashes ("steals") before it creates a buffer, after its first
// spins, before it sleeps and before it fails: no buffer stays out of
// reach, and a pool of N buffers can always hand out all N. A take about
// to sleep flushes its thread's stash first. Stashes are off
// (stash_limit_ < 2) for pools of fewer than 8 buffers and for buffers of
// more than 128 KiB, where the hand-off's cost is small next to the data's
// and the extra buffers a stash keeps in circulation would cost cache
// residency.
//
// Blocking: a call that finds nothing spins (config key `spin`), then sleeps
// on a condition variable. Sleepers register in an atomic waiter count
// first; the side that makes something available looks at that count after
// a full fence and takes the mutex only when someone may sleep ("register,
// re-check, wait" on one side, "publish, fence, look" on the other), so the
// fast path never touches the mutex and no wakeup is lost.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "dao/place.h"
#include "dao/recycle.h"
#include "dao/status.h"
#include "recycle/index_ring.hpp"
#include "recycle/index_stack.hpp"

namespace dao::detail {

class recycle_pool;
class strategy;

// One buffer of a pool: an element of the pool's record array. The C API's
// dao_buffer handle is the address of its record (src/capi/handles.hpp).
struct alignas(64) recycle_buffer {
  static constexpr std::uint64_t kMagic = 0x64616f6275666672ull;  // "daobuffr"

  std::uint64_t magic = 0;  // kMagic once the buffer exists: a live record's stamp
  recycle_pool* pool = nullptr;
  // References held by callers (low 32 bits) and the queued flag (bit 32):
  // free = 0; held = references >= 1, not queued; queued = flag set (its
  // references are those callers kept with retain before submit). Changed
  // only by compare-and-swap, so misuse is refused without damage.
  std::atomic<std::uint64_t> state{0};
  // Submission number, or UINT64_MAX since the last acquire. Atomic because
  // several holders may read it while one of them submits.
  std::atomic<std::uint64_t> sequence{UINT64_MAX};
  void* data = nullptr;
  std::uint32_t index = 0;
  // The record under this one in the free list while it is free
  // (index_stack): in the record, so that the acquire that pops it reads
  // the line it writes anyway.
  std::atomic<std::uint32_t> next_free{0xffffffffu};
};

// The stash of released buffers of the threads whose slot this is (threads
// are numbered when they first release or acquire, and share slots modulo
// kStashSlots): a chain of free records linked through next_free, in one
// word so that it is pushed to, flushed and stolen with single atomic
// operations. Word: top index (bits 0-19), bottom index (20-39), count
// (40-63); 0 is empty. The pushes of releasing threads only add on top and
// everything else takes the whole chain (an exchange with 0), so there is
// no ABA problem: a push's compare-and-swap succeeds only on the very chain
// it linked its record to.
struct alignas(64) release_stash {
  std::atomic<std::uint64_t> word{0};
};

// What a side's recent waits were like (wait_for): two scores from 0 to 8,
// each raised by a wait of one kind and lowered by a wait of the other. A
// lost update between threads of a side only delays a switch by a wait.
struct wait_scores {
  // Waits longer than the spin: spinning could not end them, sleep sooner.
  std::atomic<std::uint32_t> long_waits{0};
  // Waits the busy spin did not end: the partner is not running on another
  // core (it shares this one), so yield at once.
  std::atomic<std::uint32_t> busy_misses{0};
};

// The sleeping side of one condition (a buffer became free, a buffer was
// submitted). See the file comment for the protocol.
struct alignas(64) wait_point {
  std::atomic<std::uint32_t> waiters{0};
  std::mutex mutex;
  std::condition_variable cv;
};

class recycle_pool {
 public:
  static constexpr std::size_t kMaxBuffers = std::size_t(1) << 20;
  // Stash slots per pool (a power of two) and the most buffers a stash holds
  // before it goes onto the free list (and at most a quarter of the pool,
  // and at most kStashBytes of buffers).
  static constexpr unsigned kStashSlots = 16;
  static constexpr std::uint32_t kStashMost = 16;
  static constexpr std::size_t kStashBytes = std::size_t(256) << 10;

  // Checks every argument and the config, then creates the pool and its
  // `preallocate` buffers. Throws invalid_argument, no_device or
  // out_of_memory; on failure nothing is kept. `function` names the C
  // function in messages; `default_name` labels the pool when the config has
  // no `name` ("unnamed" when it is empty too).
  static std::unique_ptr<recycle_pool> create(dao_place place, std::size_t element_size, int ndim,
                                              const std::size_t* shape, std::size_t max_buffers,
                                              std::size_t preallocate, const char* config,
                                              const char* function,
                                              const std::string& default_name);
  // Frees every buffer's memory. The caller has checked out_count().
  ~recycle_pool();
  recycle_pool(const recycle_pool&) = delete;
  recycle_pool& operator=(const recycle_pool&) = delete;

  // The operations of recycle.h on a pool and on its buffers. The outcomes
  // a working pipeline meets (timeout, closed) are returned as a status with
  // the thread's message set, without allocating; misuse (a buffer in the
  // wrong state: invalid_state), bad input and allocation failures throw.
  dao_status acquire(double timeout, recycle_buffer*& out);
  dao_status submit(recycle_buffer& buffer);
  dao_status take(double timeout, recycle_buffer*& out);
  void close() noexcept;
  dao_status retain(recycle_buffer& buffer);
  dao_status release(recycle_buffer& buffer);

  // Fills every field of `out` after struct_size (see the .cpp on how
  // consistent the snapshot is).
  void read_stats(dao_recycle_stats& out) const noexcept;

  struct out_counts {
    std::uint64_t held = 0;
    std::uint64_t queued = 0;
  };
  // Buffers held by callers and queued; meaningful when no call runs.
  out_counts out_count() const noexcept;

  const std::string& name() const noexcept { return name_; }
  dao_place place() const noexcept { return place_; }
  int ndim() const noexcept { return ndim_; }
  const std::size_t* shape() const noexcept { return shape_; }
  std::size_t element_size() const noexcept { return element_size_; }
  std::size_t bytes() const noexcept { return bytes_; }
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

 private:
  enum class attempt { none, got, closed };

  recycle_pool(dao_place place, strategy& allocator, std::size_t element_size, int ndim,
               const std::size_t* shape, std::size_t bytes, std::size_t max_buffers,
               std::uint32_t spin, std::string name);

  // Makes the next buffer (held by the caller, or free and not yet in the
  // free list); nullptr when max_buffers exist. Throws out_of_memory naming
  // `function` and the pool.
  recycle_buffer* create_buffer(bool held, const char* function);
  void free_all_memory() noexcept;
  // Spins (less while the side's waits are long or the busy spin misses:
  // `scores`), then sleeps
  // on `w`, until try_once(last) gives something or the timeout (> 0, or < 0
  // for ever) runs out. `last` is false during the first, busy spins and
  // true from then on (the caller may do costlier work then: steal
  // stashes, flush its own).
  template <class Attempt>
  attempt wait_for(wait_point& w, Attempt&& try_once, double timeout,
                   std::atomic<std::uint64_t>& waits, std::atomic<std::uint64_t>& wait_ns,
                   wait_scores& scores);
  void wake_all(wait_point& w) noexcept;
  // Wakes up to `n` waiters of `w` (all when n > 1).
  void wake(wait_point& w, std::uint64_t n) noexcept;
  void push_free(std::uint32_t index) noexcept;
  // The last release of record `index`: into the calling thread's stash,
  // or onto the free list when stashes are off.
  void free_buffer(std::uint32_t index) noexcept;
  // Moves the stash's chain onto the free list and wakes acquires for it.
  void flush_stash(release_stash& s) noexcept;
  // Takes a whole stash: its top record in `index`, the rest onto the free
  // list. False when it was empty.
  bool take_stash(release_stash& s, std::uint32_t& index) noexcept;
  // Flushes the calling thread's stash (a take about to sleep).
  void flush_own_stash() noexcept;
  // A free record: the calling thread's stash, then the free list, then
  // (when `steal`) every other stash. False when none was found.
  bool take_free_index(std::uint32_t& index, bool steal) noexcept;
  release_stash& own_stash() noexcept;
  // `acquired`: acquired_ after counting this acquire. `steal`: see
  // take_free_index.
  bool pop_free(recycle_buffer*& out, std::uint64_t& acquired, bool steal) noexcept;
  // `position`: the buffer's position in the ready ring (its sequence).
  bool pop_ready(recycle_buffer*& out, std::uint64_t& position) noexcept;
  struct counts {
    std::uint64_t created, free, queued, held;
  };
  // The four counts, derived from one read of the counters (see the .cpp).
  counts read_counts() const noexcept;
  void note_acquired(std::uint64_t acquired) noexcept;
  void note_submitted(std::uint64_t submitted) noexcept;
  void note_taken(std::uint64_t taken) noexcept;
  void note_freed(std::uint64_t freed) noexcept;
  void raise_held_peak() noexcept;
  dao_status closed_status(const char* function, const char* what) noexcept;
  dao_status timeout_status(const char* function, const char* tried_once, const char* waited,
                            double timeout) noexcept;
  void describe_counts(char* text, std::size_t size) const noexcept;

  // --- fixed at create (read-mostly) ---
  dao_place place_;
  // Free buffers of host memory are poisoned for ASan (no-ops without it).
  void poison(const void* data) const noexcept;
  void unpoison(const void* data) const noexcept;
  // Maps the pages of a preallocated buffer of host or SIM memory now, not
  // in the pipeline's first lap.
  void prefault(void* data) const noexcept;

  strategy* allocator_;       // the place default
  bool host_memory_ = false;  // the place's memory is host memory: poisoned when free
  std::size_t element_size_;
  int ndim_;
  std::size_t shape_[DAO_RECYCLE_MAX_DIMS] = {};
  std::size_t bytes_;
  std::size_t max_buffers_;
  std::uint32_t spin_;
  std::uint32_t stash_limit_ = 0;  // buffers a stash holds before it is flushed; < 2: off
  std::string name_;
  std::unique_ptr<recycle_buffer[]> records_;
  std::atomic<bool> closed_{false};

  // --- the free list (last in, first out: the most recently released
  // buffer, still in the caches, goes out first) and the ready queue (first
  // in, first out: the order of submission) ---
  index_stack free_;
  index_ring ready_;
  // Released buffers on their way to free_, per thread slot (see the file
  // comment): counted free (freed_) from the release on.
  release_stash stashes_[kStashSlots];

  // --- buffer creation (not in steady state) ---
  std::mutex create_mutex_;
  alignas(64) std::atomic<std::size_t> created_{0};

  // --- statistics (see read_stats in the .cpp): four event counters, each
  // on the line of the side that writes it, from which free, queued and
  // held are derived; no line is written by both sides of a pipeline.
  // submitted and taken are the ready ring's push and pop counts
  // (ready_.pushed(), ready_.popped()), which it keeps anyway ---
  //   held   = acquired - submitted + taken - freed
  //   queued = submitted - taken
  //   free   = created - held - queued
  // Fill side: acquire and submit.
  alignas(64) std::atomic<std::uint64_t> acquired_{0};
  std::atomic<std::uint64_t> acquire_waits_{0};
  std::atomic<std::uint64_t> acquire_wait_ns_{0};
  // What the acquires' waits were like (wait_for).
  wait_scores acquire_scores_;
  // The last ready_.popped() the fill side read: a lower bound of taken, so that
  // submit can rule out a new peak of queued without reading the ring's
  // pop count.
  std::atomic<std::uint64_t> taken_seen_{0};
  // Operate side: the last release of a buffer (and take, in ready_).
  alignas(64) std::atomic<std::uint64_t> freed_{0};  // releases that made a buffer free
  std::atomic<std::uint64_t> take_waits_{0};
  std::atomic<std::uint64_t> take_wait_ns_{0};
  wait_scores take_scores_;  // as acquire_scores_
  // The last `acquired_` the operate side read (a lower bound, as above).
  std::atomic<std::uint64_t> acquired_seen_{0};
  // Peaks: read on every call, written only when a count reaches a new
  // high, so they stay in both sides' caches. fill_held_peak_ and
  // op_held_peak_ are the highs of acquired - submitted and of taken -
  // freed (the two sides' parts of held, signed): a side rules out a new
  // peak of held from its own part and the other's high.
  alignas(64) std::atomic<std::uint64_t> peak_free_{0};
  std::atomic<std::uint64_t> peak_queued_{0};
  std::atomic<std::uint64_t> peak_held_{0};
  std::atomic<std::int64_t> fill_held_peak_{0};
  std::atomic<std::int64_t> op_held_peak_{0};
  std::atomic<std::uint64_t> timeouts_{0};

  // --- sleepers ---
  wait_point free_wait_;   // acquires waiting for a free buffer
  wait_point ready_wait_;  // takes waiting for a submitted buffer
};

}  // namespace dao::detail
