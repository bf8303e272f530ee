// Recycle pools: creation, the buffer state machine (acquire, submit, take,
// retain, release), blocking with spin-then-sleep, and the statistics (see
// recycle_pool.hpp).
#include "recycle/recycle_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "util/asan_poison.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "strategy/place_defaults.hpp"
#include "resource/system_resource.hpp"
#include "util/cpu_relax.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

using clock_type = std::chrono::steady_clock;

// recycle_buffer::state: caller references in the low 32 bits, queued flag above.
constexpr std::uint64_t kRefMask = 0xffffffffull;
constexpr std::uint64_t kQueuedBit = std::uint64_t(1) << 32;

template <class T>
void raise_peak(std::atomic<T>& peak, T value) noexcept {
  T seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_seq_cst,
                                                     std::memory_order_relaxed)) {
  }
}

// a - b as a signed number (counters are modular).
std::int64_t diff(std::uint64_t a, std::uint64_t b) noexcept {
  return static_cast<std::int64_t>(a - b);
}

// `value` limited to 0 .. `most`.
std::uint64_t clamp_count(std::int64_t value, std::uint64_t most) noexcept {
  if (value <= 0) return 0;
  return static_cast<std::uint64_t>(value) > most ? most : static_cast<std::uint64_t>(value);
}

// Longer timeouts (about 31 years) wait for ever; it keeps the deadline
// arithmetic far from overflow.
constexpr double kForeverSeconds = 1e9;

// The longest a blocking call spins (and yields) before it sleeps.
constexpr std::chrono::microseconds kSpinTime{50};
// A side's score of long waits (wait_for): at most kLongWaitsMost; from
// kLongWaitsOff on, its waits skip the yielding part of the spin.
constexpr std::uint32_t kLongWaitsMost = 8;
constexpr std::uint32_t kLongWaitsOff = 4;
// The busy part of a spin: pauses that catch a partner running on another
// core, before the spin yields.
constexpr std::uint32_t kBusySpins = 64;

// Stash words (release_stash): top index, bottom index, count.
constexpr unsigned kStashIndexBits = 20;
constexpr std::uint64_t kStashIndexMask = (std::uint64_t(1) << kStashIndexBits) - 1;
static_assert((std::size_t(1) << kStashIndexBits) >= recycle_pool::kMaxBuffers,
              "a stash word must hold any record index");

std::uint32_t stash_top(std::uint64_t w) noexcept {
  return static_cast<std::uint32_t>(w & kStashIndexMask);
}
std::uint32_t stash_bottom(std::uint64_t w) noexcept {
  return static_cast<std::uint32_t>((w >> kStashIndexBits) & kStashIndexMask);
}
std::uint64_t stash_count(std::uint64_t w) noexcept { return w >> (2 * kStashIndexBits); }
std::uint64_t make_stash(std::uint32_t top, std::uint32_t bottom, std::uint64_t count) noexcept {
  return count << (2 * kStashIndexBits) | std::uint64_t(bottom) << kStashIndexBits | top;
}

// The calling thread's number, from 0 in the order threads first ask;
// modulo kStashSlots it picks the thread's stash in every pool. Constant
// initialisation (0: not numbered yet), so no guard on the hot path.
std::atomic<std::uint32_t> next_thread_number{0};
thread_local std::uint32_t thread_number_plus_one = 0;

std::uint32_t thread_number() noexcept {
  std::uint32_t n = thread_number_plus_one;
  if (n == 0) {
    n = (next_thread_number.fetch_add(1, std::memory_order_relaxed) & 0x7fffffffu) + 1;
    thread_number_plus_one = n;
  }
  return n - 1;
}

std::size_t ring_capacity(std::size_t buffers) noexcept {
  std::size_t c = 2;
  while (c < buffers) c <<= 1;
  return c;
}

// The wait point whose mutex this thread holds while it looks once more
// before sleeping (wait_for). A wake-up that look causes on the same wait
// point (a steal that puts the rest of a stash on the free list wakes the
// other acquires) must not lock that mutex again: it would deadlock on
// itself (it did, with `spin=0`, the first look being under the mutex).
// Holding the mutex already orders the notify after any sleeper's check.
thread_local const wait_point* t_holding_wait = nullptr;

// Passes through w's mutex, so that a sleeper that registered has either
// seen what was made available or is asleep and gets the notify.
void pass_through(wait_point& w) noexcept {
  if (t_holding_wait == &w) return;
  std::lock_guard<std::mutex> lock(w.mutex);
}

}  // namespace

// ---------------------------------------------------------------------------
// recycle_pool: creation and destruction

namespace {

struct pool_params {
  std::size_t element_size = 0;
  int ndim = 0;
  std::size_t shape[DAO_RECYCLE_MAX_DIMS] = {};
  std::size_t bytes = 0;
  std::size_t max_buffers = 0;
  std::size_t preallocate = 0;
  std::uint32_t spin = 2000;
  std::string name;
};

std::uint32_t parse_spin(const std::string& text, const std::string& context) {
  bool digits = !text.empty();
  for (char ch : text) digits = digits && ch >= '0' && ch <= '9';
  unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || value > (1ull << 30)) {
    throw invalid_argument(
        strprintf("%s: spin='%s' is not a whole number of iterations from 0 to %llu",
                  context.c_str(), text.c_str(), 1ull << 30));
  }
  return static_cast<std::uint32_t>(value);
}

pool_params check_params(std::size_t element_size, int ndim, const std::size_t* shape,
                         std::size_t max_buffers, std::size_t preallocate, const char* config_text,
                         const char* function, const std::string& default_name) {
  pool_params p;
  if (element_size == 0) {
    throw invalid_argument(strprintf("%s: element_size must be > 0", function));
  }
  if (ndim < 1 || ndim > DAO_RECYCLE_MAX_DIMS) {
    throw invalid_argument(strprintf("%s: ndim is %d; a shape has 1 to %d dimensions", function,
                                     ndim, DAO_RECYCLE_MAX_DIMS));
  }
  require_non_null(shape, function, "shape");
  std::size_t bytes = element_size;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 0) {
      throw invalid_argument(
          strprintf("%s: shape[%d] is 0; every extent must be > 0", function, d));
    }
    if (bytes > std::numeric_limits<std::size_t>::max() / shape[d]) {
      std::string text;
      for (int e = 0; e < ndim; ++e) text += strprintf("%s%zu", e == 0 ? "" : " x ", shape[e]);
      throw invalid_argument(
          strprintf("%s: element_size %zu x shape (%s) overflows the size of a buffer", function,
                    element_size, text.c_str()));
    }
    bytes *= shape[d];
    p.shape[d] = shape[d];
  }
  if (max_buffers == 0 || max_buffers > recycle_pool::kMaxBuffers) {
    throw invalid_argument(strprintf("%s: max_buffers is %zu; it must be 1 to %zu", function,
                                     max_buffers, recycle_pool::kMaxBuffers));
  }
  if (preallocate > max_buffers) {
    throw invalid_argument(strprintf("%s: preallocate (%zu) is more than max_buffers (%zu)",
                                     function, preallocate, max_buffers));
  }
  p.element_size = element_size;
  p.ndim = ndim;
  p.bytes = bytes;
  p.max_buffers = max_buffers;
  p.preallocate = preallocate;

  config c = config::parse(config_text != nullptr ? config_text : "",
                           strprintf("%s: recycle pool config", function));
  std::optional<std::string> name = c.take_string("name");
  std::optional<std::string> spin = c.take_string("spin");
  c.reject_unknown({"name", "spin"});
  p.name = name ? *name : (default_name.empty() ? std::string("unnamed") : default_name);
  if (spin) p.spin = parse_spin(*spin, c.context());
  return p;
}

}  // namespace

std::unique_ptr<recycle_pool> recycle_pool::create(dao_place place, std::size_t element_size,
                                                   int ndim, const std::size_t* shape,
                                                   std::size_t max_buffers, std::size_t preallocate,
                                                   const char* config, const char* function,
                                                   const std::string& default_name) {
  pool_params p = check_params(element_size, ndim, shape, max_buffers, preallocate, config,
                               function, default_name);
  strategy& allocator = internal_place_strategy(place);  // no_device / invalid_argument
  std::unique_ptr<recycle_pool> pool(new recycle_pool(place, allocator, p.element_size, p.ndim,
                                                      p.shape, p.bytes, p.max_buffers, p.spin,
                                                      std::move(p.name)));
  // Preallocation: on failure the pool's destructor frees what was made.
  for (std::size_t i = 0; i < p.preallocate; ++i) {
    recycle_buffer* b = pool->create_buffer(false, function);
    pool->prefault(b->data);
    pool->poison(b->data);
    pool->push_free(b->index);
  }
  return pool;
}

recycle_pool::recycle_pool(dao_place place, strategy& allocator, std::size_t element_size, int ndim,
                           const std::size_t* shape, std::size_t bytes, std::size_t max_buffers,
                           std::uint32_t spin, std::string name)
    : place_(place),
      allocator_(&allocator),
      element_size_(element_size),
      ndim_(ndim),
      bytes_(bytes),
      max_buffers_(max_buffers),
      spin_(spin),
      name_(std::move(name)),
      records_(new recycle_buffer[max_buffers]),
      ready_(ring_capacity(max_buffers)) {
  for (int d = 0; d < ndim; ++d) shape_[d] = shape[d];
  host_memory_ = allocator.upstream().host_accessible();
  std::size_t limit = kStashMost;
  if (limit > max_buffers / 4) limit = max_buffers / 4;
  if (limit > kStashBytes / bytes) limit = kStashBytes / bytes;
  stash_limit_ = static_cast<std::uint32_t>(limit);
}

recycle_pool::~recycle_pool() { free_all_memory(); }

void recycle_pool::poison(const void* data) const noexcept {
  if (host_memory_) asan_poison(data, bytes_);
}

void recycle_pool::unpoison(const void* data) const noexcept {
  if (host_memory_) asan_unpoison(data, bytes_);
}

void recycle_pool::prefault(void* data) const noexcept {
  // Host and SIM memory from the C library is mapped page by page on first
  // touch: a preallocated buffer of 16 MiB would otherwise cost 4096 page
  // faults in the pipeline's first lap, at its pace. Touch one byte per
  // page now. (Not CUDA managed memory: touching it from the host would
  // move it there.)
  const int kind = raw_kind(place_.kind);
  if (!host_memory_ || (kind != DAO_PLACE_CPU && kind != DAO_PLACE_SIM)) return;
#ifdef MADV_HUGEPAGE
  // A buffer of several huge pages is filled and read whole each lap: ask
  // for transparent huge pages on the 2 MiB pages inside it (Linux gives
  // them only when asked, the default "madvise" mode), so that the touch
  // below maps them at once and a lap takes 512 times fewer TLB entries.
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes_) & ~(kHuge - 1);
  if (end > begin) {
    // Advice only: where it is refused the pages stay small.
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
#endif
  constexpr std::size_t kPage = 4096;
  auto* bytes = static_cast<volatile unsigned char*>(data);
  for (std::size_t at = 0; at < bytes_; at += kPage) bytes[at] = 0;
  bytes[bytes_ - 1] = 0;
}

void recycle_pool::free_all_memory() noexcept {
  const std::size_t n = created_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    recycle_buffer& b = records_[i];
    b.magic = 0;
    unpoison(b.data);  // a free buffer is poisoned; the allocator takes it back whole
    try {
      allocator_->deallocate(b.data);
    } catch (...) {
      // The place's allocator gave this pointer; it cannot refuse it.
    }
    b.data = nullptr;
  }
  created_.store(0, std::memory_order_release);
}

recycle_buffer* recycle_pool::create_buffer(bool held, const char* function) {
  std::lock_guard<std::mutex> lock(create_mutex_);
  const std::size_t n = created_.load(std::memory_order_relaxed);
  if (n >= max_buffers_) return nullptr;
  void* data = nullptr;
  try {
    data = allocator_->allocate(bytes_, nullptr);
  } catch (const out_of_memory& e) {
    throw out_of_memory(strprintf("%s: pool '%s' could not make buffer %zu of at most %zu (%s "
                                  "on %s): %s",
                                  function, name_.c_str(), n + 1, max_buffers_,
                                  format_bytes(bytes_).c_str(), place_to_string(place_).c_str(),
                                  e.what()));
  }
  recycle_buffer& b = records_[n];
  b.pool = this;
  b.data = data;
  b.index = static_cast<std::uint32_t>(n);
  b.state.store(held ? 1 : 0, std::memory_order_relaxed);
  b.sequence.store(UINT64_MAX, std::memory_order_relaxed);
  b.magic = recycle_buffer::kMagic;
  created_.store(n + 1, std::memory_order_seq_cst);
  // A buffer made held becomes held when acquire counts it (acquired_); a
  // snapshot between here and there counts it free, but it is no new peak
  // of free.
  if (!held) note_freed(freed_.load(std::memory_order_seq_cst));
  return &b;
}

// ---------------------------------------------------------------------------
// statistics

// The counts are not kept as such: each side of a pipeline counts its own
// events on its own cache line (acquired_, and submitted as the ready
// ring's push count, on the fill side's; freed_, and taken as the ring's pop
// count, on the operate side's), and free, queued and held are
// derived from them. Every event is counted in the same order as the state
// change of its buffer (acquire after the pop from the free list, submit
// before the push into the ready queue, take after the pop from it, the
// last release before the push onto the free list), and all four only grow.
//
// A snapshot reads the five counters twice; when both reads agree, each
// counter held that value from its first read to its second, so all five
// held them together at one instant between the two passes: the counts are
// one consistent snapshot (and exact when no call runs). A pipeline that
// changes them faster than a reader can read them twice (a few hundred
// nanoseconds) may make every try disagree; after kSnapshotTries the last
// read is used, its counts clamped to 0 .. created and still summing to
// created, a few operations apart from each other.
namespace {
constexpr int kSnapshotTries = 100;
}

recycle_pool::counts recycle_pool::read_counts() const noexcept {
  struct raw {
    std::uint64_t created, acquired, submitted, taken, freed;
    bool operator==(const raw& o) const noexcept {
      return created == o.created && acquired == o.acquired && submitted == o.submitted &&
             taken == o.taken && freed == o.freed;
    }
  };
  // Read in the reverse order of a buffer's lap (freed, taken, submitted,
  // acquired, then created), so that even a read that disagrees has
  // submitted >= taken and created >= anything counted before it.
  const auto read = [this] {
    raw r;
    r.freed = freed_.load(std::memory_order_seq_cst);
    r.taken = ready_.popped();
    r.submitted = ready_.pushed();
    r.acquired = acquired_.load(std::memory_order_seq_cst);
    r.created = created_.load(std::memory_order_seq_cst);
    return r;
  };
  raw r = read();
  for (int i = 1; i < kSnapshotTries; ++i) {
    const raw again = read();
    if (again == r) break;
    r = again;
  }
  counts c;
  c.created = r.created;
  c.queued = clamp_count(diff(r.submitted, r.taken), c.created);
  c.held =
      clamp_count(diff(r.acquired, r.submitted) + diff(r.taken, r.freed), c.created - c.queued);
  c.free = c.created - c.queued - c.held;
  return c;
}

// Peaks. Each count rises at one kind of event only (held at acquire and
// take, queued at submit, free at the last release and at creation); the
// side that counts the event computes the new count and raises the peak.
// The count needs the other side's counters, whose lines the other side
// writes all the time; reading them on every call would bring back the
// transfers that per-side counters avoid. So a side first rules out a new
// peak from data that changes rarely (the peaks, created, a lower bound of
// the other side's counter it read last time) and reads the other side's
// line only when it cannot. When calls do not overlap the peaks are exact;
// when they do, a peak is the highest count one of them computed, which
// can be below the true high by the calls that ran at that same moment.

void recycle_pool::raise_held_peak() noexcept {
  const std::uint64_t r = freed_.load(std::memory_order_seq_cst);
  const std::uint64_t t = ready_.popped();
  const std::uint64_t s = ready_.pushed();
  const std::uint64_t a = acquired_.load(std::memory_order_seq_cst);
  const std::uint64_t c = created_.load(std::memory_order_seq_cst);
  raise_peak(peak_held_, clamp_count(diff(a, s) + diff(t, r), c));
}

void recycle_pool::note_acquired(std::uint64_t a) noexcept {
  const std::int64_t mine = diff(a, ready_.pushed());
  if (mine > fill_held_peak_.load(std::memory_order_seq_cst)) {
    // A new high of this side's part: publish it before reading the other
    // side (which publishes its own highs before reading this side), so
    // that of two sides rising at once, at least one sees the other.
    raise_peak(fill_held_peak_, mine);
    raise_held_peak();
    return;
  }
  const std::uint64_t peak = peak_held_.load(std::memory_order_relaxed);
  if (peak >= created_.load(std::memory_order_relaxed)) return;
  if (mine + op_held_peak_.load(std::memory_order_seq_cst) <= static_cast<std::int64_t>(peak))
    return;
  raise_held_peak();
}

void recycle_pool::note_taken(std::uint64_t t) noexcept {
  const std::int64_t mine = diff(t, freed_.load(std::memory_order_seq_cst));
  if (mine > op_held_peak_.load(std::memory_order_seq_cst)) {
    raise_peak(op_held_peak_, mine);
    raise_held_peak();
    return;
  }
  const std::uint64_t peak = peak_held_.load(std::memory_order_relaxed);
  if (peak >= created_.load(std::memory_order_relaxed)) return;
  if (mine + fill_held_peak_.load(std::memory_order_seq_cst) <= static_cast<std::int64_t>(peak))
    return;
  raise_held_peak();
}

void recycle_pool::note_submitted(std::uint64_t s) noexcept {
  // queued = submitted - taken <= s - (a taken this side read before).
  const std::uint64_t peak = peak_queued_.load(std::memory_order_relaxed);
  if (diff(s, taken_seen_.load(std::memory_order_relaxed)) <= static_cast<std::int64_t>(peak))
    return;
  const std::uint64_t c = created_.load(std::memory_order_relaxed);
  if (peak >= c) return;
  const std::uint64_t t = ready_.popped();
  taken_seen_.store(t, std::memory_order_relaxed);
  raise_peak(peak_queued_, clamp_count(diff(s, t), c));
}

void recycle_pool::note_freed(std::uint64_t r) noexcept {
  // free = created - acquired + freed <= created - (an acquired read before) + r.
  const std::uint64_t peak = peak_free_.load(std::memory_order_relaxed);
  const std::uint64_t c = created_.load(std::memory_order_seq_cst);
  if (peak >= c) return;
  if (diff(c, acquired_seen_.load(std::memory_order_relaxed)) + diff(r, 0) <=
      static_cast<std::int64_t>(peak))
    return;
  const std::uint64_t a = acquired_.load(std::memory_order_seq_cst);
  acquired_seen_.store(a, std::memory_order_relaxed);
  raise_peak(peak_free_, clamp_count(diff(c, a) + diff(r, 0), c));
}

// The counts free, queued and held (and created, their sum) come from
// read_counts(). The other event counters (waits, timeouts) and the peaks
// are separate counters read one after another: while other threads work,
// they can be a few operations apart from each other and from the counts.
// When no call runs, every field is exact.
void recycle_pool::read_stats(dao_recycle_stats& s) const noexcept {
  const counts c = read_counts();
  s.free = c.free;
  s.queued = c.queued;
  s.held = c.held;
  s.created = c.created;
  s.peak_free = peak_free_.load(std::memory_order_relaxed);
  s.peak_queued = peak_queued_.load(std::memory_order_relaxed);
  s.peak_held = peak_held_.load(std::memory_order_relaxed);
  s.acquired = acquired_.load(std::memory_order_relaxed);
  s.submitted = ready_.pushed();
  s.taken = ready_.popped();
  s.acquire_waits = acquire_waits_.load(std::memory_order_relaxed);
  s.take_waits = take_waits_.load(std::memory_order_relaxed);
  s.acquire_wait_ns = acquire_wait_ns_.load(std::memory_order_relaxed);
  s.take_wait_ns = take_wait_ns_.load(std::memory_order_relaxed);
  s.timeouts = timeouts_.load(std::memory_order_relaxed);
}

recycle_pool::out_counts recycle_pool::out_count() const noexcept {
  dao_recycle_stats s{};
  read_stats(s);
  return out_counts{s.held, s.queued};
}

void recycle_pool::describe_counts(char* text, std::size_t size) const noexcept {
  dao_recycle_stats s{};
  read_stats(s);
  std::snprintf(text, size, "%llu of at most %zu buffers exist: %llu free, %llu held, %llu queued",
                static_cast<unsigned long long>(s.created), max_buffers_,
                static_cast<unsigned long long>(s.free), static_cast<unsigned long long>(s.held),
                static_cast<unsigned long long>(s.queued));
}

// ---------------------------------------------------------------------------
// waiting

template <class Attempt>
recycle_pool::attempt recycle_pool::wait_for(wait_point& w, Attempt&& try_once, double timeout,
                                             std::atomic<std::uint64_t>& waits,
                                             std::atomic<std::uint64_t>& wait_ns,
                                             wait_scores& scores) {
  // Counted when the wait starts, so that others can see that it waits.
  const std::uint64_t wait_number = waits.fetch_add(1, std::memory_order_relaxed);
  const clock_type::time_point start = clock_type::now();
  const bool forever = timeout < 0 || timeout > kForeverSeconds;
  const clock_type::time_point until =
      forever ? clock_type::time_point::max()
              : start + std::chrono::duration_cast<clock_type::duration>(
                            std::chrono::duration<double>(timeout));
  attempt result = attempt::none;
  // Spinning stops after `spin` iterations or kSpinTime, whichever comes
  // first: a partner that has not answered within some tens of microseconds
  // is busy with the data (a large buffer being filled or read), and a
  // thread that keeps yielding meanwhile takes time from it when threads
  // share cores; sleeping costs a wake-up of a few microseconds instead.
  // And while most of this side's recent waits lasted longer than kSpinTime
  // (long_waits, a score raised by every such wait and lowered by every
  // shorter one), spinning could not have ended them: the wait does only
  // its first 64 busy iterations and then sleeps, as a mutex and condition
  // variable would, instead of spending up to kSpinTime of its core's time
  // per buffer (a pipeline of large buffers, each as long to fill or read
  // as a wait). A side whose waits are short keeps spinning as before.
  const bool yield_phase = scores.long_waits.load(std::memory_order_relaxed) < kLongWaitsOff;
  const clock_type::time_point spin_until =
      yield_phase ? start + std::chrono::duration_cast<clock_type::duration>(kSpinTime) : start;
  // And while the busy spin has mostly not ended this side's recent waits
  // (busy_misses), the partner is not running on another core: it waits for
  // this one (threads sharing a core, on a loaded or pinned machine), and
  // the busy iterations only delay it. The wait then yields at once, as a
  // mutex hands its core over; every 16th wait still spins, to see whether
  // that changed.
  const bool busy_phase =
      scores.busy_misses.load(std::memory_order_relaxed) < kLongWaitsOff || (wait_number & 15) == 0;
  std::uint32_t i = busy_phase ? 0 : kBusySpins;
  for (; i < spin_; ++i) {
    // A short busy spin catches a partner running on another core; after
    // that, yield, so that a partner waiting for this core gets to run
    // (on a loaded or small machine spinning would only delay it).
    if (i < kBusySpins) {
      cpu_relax();
    } else {
      if ((i & 15) == 0) {
        const clock_type::time_point now = clock_type::now();
        if (now >= spin_until || (!forever && now >= until)) break;
      }
      std::this_thread::yield();
    }
    result = try_once(i >= kBusySpins - 1);
    if (result != attempt::none) break;
  }
  const bool busy_hit = result != attempt::none && i < kBusySpins;
  if (result == attempt::none) {
    // Register, then re-check under the mutex. The registration and the
    // publisher's last write to the ring or stack (index_ring::push,
    // index_stack::push) are both sequentially consistent, and so are the
    // re-check's look at it (try_pop) and the publisher's look at `waiters`
    // (wake): either the re-check sees the new buffer, or the publisher
    // sees us and takes the mutex to notify, which it can do only once we
    // sleep. (No fence: ThreadSanitizer does not model fences.)
    w.waiters.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lock(w.mutex);
      t_holding_wait = &w;  // for the wake-ups of try_once (see pass_through)
      for (;;) {
        result = try_once(true);
        if (result != attempt::none) break;
        if (forever) {
          w.cv.wait(lock);
        } else if (w.cv.wait_until(lock, until) == std::cv_status::timeout) {
          // A notify meant for us may have come with the timeout: look once
          // more, so that it is never lost.
          result = try_once(true);
          break;
        }
      }
      t_holding_wait = nullptr;
    }
    w.waiters.fetch_sub(1, std::memory_order_relaxed);
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start);
  wait_ns.fetch_add(static_cast<std::uint64_t>(waited.count()), std::memory_order_relaxed);
  // Several threads of a side may update a score at once; a lost update
  // only delays the switch by a wait.
  auto update = [](std::atomic<std::uint32_t>& score, bool up) {
    const std::uint32_t was = score.load(std::memory_order_relaxed);
    const std::uint32_t next = up ? std::min(was + 1, kLongWaitsMost) : (was > 0 ? was - 1 : 0);
    if (next != was) score.store(next, std::memory_order_relaxed);
  };
  update(scores.long_waits, waited > kSpinTime);
  if (busy_phase) update(scores.busy_misses, !busy_hit);
  return result;
}

void recycle_pool::wake(wait_point& w, std::uint64_t n) noexcept {
  // The push before this was a sequentially consistent read-modify-write.
  if (w.waiters.load(std::memory_order_seq_cst) == 0) return;
  pass_through(w);
  if (n == 1) {
    w.cv.notify_one();
  } else {
    w.cv.notify_all();
  }
}

void recycle_pool::wake_all(wait_point& w) noexcept {
  pass_through(w);
  w.cv.notify_all();
}

// ---------------------------------------------------------------------------
// the four operations

namespace {

void check_timeout(double timeout, const char* function) {
  if (std::isnan(timeout)) {
    throw invalid_argument(strprintf(
        "%s: timeout is NaN; give seconds (0 tries once, a negative value waits for ever)",
        function));
  }
}

}  // namespace

dao_status recycle_pool::closed_status(const char* function, const char* what) noexcept {
  char text[512];
  std::snprintf(text, sizeof text, "%s: pool '%s' is closed%s", function, name_.c_str(), what);
  return set_last_error(DAO_ERR_CLOSED, text);
}

dao_status recycle_pool::timeout_status(const char* function, const char* tried_once,
                                        const char* waited, double timeout) noexcept {
  timeouts_.fetch_add(1, std::memory_order_relaxed);
  char counts[256];
  describe_counts(counts, sizeof counts);
  char text[768];
  if (timeout == 0) {
    std::snprintf(text, sizeof text, "%s: pool '%s' %s (tried once: the timeout is 0; %s)",
                  function, name_.c_str(), tried_once, counts);
  } else {
    std::snprintf(text, sizeof text, "%s: pool '%s': %s within %g s (%s)", function, name_.c_str(),
                  waited, timeout, counts);
  }
  return set_last_error(DAO_ERR_TIMEOUT, text);
}

void recycle_pool::push_free(std::uint32_t index) noexcept {
  free_.push(index, [this](std::uint32_t k) -> std::atomic<std::uint32_t>& {
    return records_[k].next_free;
  });
}

// Stashes. The protocol against lost wakeups is the free list's: a release
// pushes into its stash with a sequentially consistent compare-and-swap and
// then looks at free_wait_'s waiter count (sequentially consistent); a
// sleeping acquire registers there first and then steals, reading every
// stash with sequentially consistent loads. Either the steal sees the
// buffer, or the release sees the sleeper and flushes its stash and wakes
// it. A steal or flush that pushes a chain onto the free list wakes
// sleepers the same way as a single push.

release_stash& recycle_pool::own_stash() noexcept {
  return stashes_[thread_number() & (kStashSlots - 1)];
}

void recycle_pool::free_buffer(std::uint32_t index) noexcept {
  if (stash_limit_ < 2) {
    push_free(index);
    wake(free_wait_, 1);
    return;
  }
  release_stash& s = own_stash();
  std::atomic<std::uint32_t>& link = records_[index].next_free;
  std::uint64_t w = s.word.load(std::memory_order_relaxed);
  std::uint64_t count = 0;
  for (;;) {
    count = stash_count(w);
    link.store(count == 0 ? index_stack::kEmpty : stash_top(w), std::memory_order_relaxed);
    const std::uint64_t next = make_stash(index, count == 0 ? index : stash_bottom(w), count + 1);
    if (s.word.compare_exchange_weak(w, next, std::memory_order_seq_cst, std::memory_order_relaxed))
      break;
  }
  if (count + 1 >= stash_limit_ || free_wait_.waiters.load(std::memory_order_seq_cst) != 0) {
    flush_stash(s);
  }
}

void recycle_pool::flush_stash(release_stash& s) noexcept {
  const std::uint64_t w = s.word.exchange(0, std::memory_order_seq_cst);
  const std::uint64_t count = stash_count(w);
  if (count == 0) return;  // stolen meanwhile
  free_.push_chain(
      stash_top(w), stash_bottom(w),
      [this](std::uint32_t k) -> std::atomic<std::uint32_t>& { return records_[k].next_free; });
  wake(free_wait_, count);
}

void recycle_pool::flush_own_stash() noexcept {
  if (stash_limit_ < 2) return;
  release_stash& s = own_stash();
  if (s.word.load(std::memory_order_relaxed) != 0) flush_stash(s);
}

bool recycle_pool::take_stash(release_stash& s, std::uint32_t& index) noexcept {
  const std::uint64_t w = s.word.exchange(0, std::memory_order_seq_cst);
  const std::uint64_t count = stash_count(w);
  if (count == 0) return false;
  index = stash_top(w);
  if (count > 1) {
    // The rest, in the same order, onto the free list (whose top it becomes:
    // these were released more recently than what is there, or by another
    // thread).
    free_.push_chain(
        records_[index].next_free.load(std::memory_order_relaxed), stash_bottom(w),
        [this](std::uint32_t k) -> std::atomic<std::uint32_t>& { return records_[k].next_free; });
    wake(free_wait_, count - 1);
  }
  return true;
}

bool recycle_pool::take_free_index(std::uint32_t& index, bool steal) noexcept {
  const bool stashes = stash_limit_ >= 2;
  if (stashes) {
    release_stash& own = own_stash();
    if (own.word.load(std::memory_order_relaxed) != 0 && take_stash(own, index)) return true;
  }
  if (free_.try_pop(index, [this](std::uint32_t k) -> std::atomic<std::uint32_t>& {
        return records_[k].next_free;
      })) {
    // The next acquire's record (free, so nobody else writes it now): fetch
    // its line while this thread fills the buffer.
    const std::uint32_t below = records_[index].next_free.load(std::memory_order_relaxed);
    if (below != index_stack::kEmpty) __builtin_prefetch(&records_[below], 1);
    return true;
  }
  if (!steal || !stashes) return false;
  for (release_stash& s : stashes_) {
    if (s.word.load(std::memory_order_seq_cst) != 0 && take_stash(s, index)) return true;
  }
  return false;
}

bool recycle_pool::pop_free(recycle_buffer*& out, std::uint64_t& acquired, bool steal) noexcept {
  std::uint32_t i;
  if (!take_free_index(i, steal)) return false;
  // Counted right after the pop, while the store buffer is empty (the pop's
  // exchange drained it): after the stores to the buffer's record below, a
  // locked add would wait until they reach this core's cache, and the
  // record's line usually comes from the thread that released the buffer.
  acquired = acquired_.fetch_add(1, std::memory_order_seq_cst) + 1;
  recycle_buffer& b = records_[i];
  unpoison(b.data);
  // A free buffer's state is 0 and nobody may change it (retain and release
  // refuse a free buffer without writing), so a plain store takes it.
  b.state.store(1, std::memory_order_relaxed);
  out = &b;
  return true;
}

bool recycle_pool::pop_ready(recycle_buffer*& out, std::uint64_t& position) noexcept {
  return ready_.try_pop([&](std::uint32_t i, std::uint64_t pos) {
    recycle_buffer& b = records_[i];
    // Clear the queued flag and give the queue's reference to the caller in
    // one step; holders that retained before submit may change the count
    // meanwhile, hence an atomic add rather than a store.
    b.state.fetch_add(std::uint64_t(1) - kQueuedBit, std::memory_order_acq_rel);
    out = &b;
    position = pos;
  });
}

dao_status recycle_pool::acquire(double timeout, recycle_buffer*& out) {
  static const char* const kFunction = "dao_recycle_acquire";
  check_timeout(timeout, kFunction);
  recycle_buffer* b = nullptr;
  std::uint64_t acquired = 0;  // acquired_ after this acquire counted itself
  // `steal`: take other threads' stashes too (see recycle_pool.hpp). Not
  // at the first try of a call that may wait: a pipeline's releasing
  // thread is likely to hand its stash over within the first spins, as a
  // batch, whereas stealing it early would move buffers one at a time.
  auto try_once = [&](bool steal) {
    if (closed_.load(std::memory_order_acquire)) return attempt::closed;
    return pop_free(b, acquired, steal) ? attempt::got : attempt::none;
  };
  attempt result = try_once(false);
  const bool can_create = created_.load(std::memory_order_acquire) < max_buffers_;
  if (result == attempt::none && (timeout == 0 || can_create)) result = try_once(true);
  if (result == attempt::none && can_create) {
    // Throws out_of_memory; nullptr when another thread made the last one.
    b = create_buffer(true, kFunction);
    if (b != nullptr) {
      acquired = acquired_.fetch_add(1, std::memory_order_seq_cst) + 1;
      result = attempt::got;
    }
  }
  if (result == attempt::none && timeout != 0) {
    result =
        wait_for(free_wait_, try_once, timeout, acquire_waits_, acquire_wait_ns_, acquire_scores_);
  }
  switch (result) {
    case attempt::got:
      b->sequence.store(UINT64_MAX, std::memory_order_relaxed);
      note_acquired(acquired);
      out = b;
      return DAO_OK;
    case attempt::closed: return closed_status(kFunction, "; it gives out no more buffers");
    case attempt::none:
    default:
      return timeout_status(kFunction, "has no free buffer", "no buffer became free", timeout);
  }
}

dao_status recycle_pool::submit(recycle_buffer& b) {
  std::uint64_t s = b.state.load(std::memory_order_relaxed);
  for (;;) {
    if ((s & kQueuedBit) != 0) {
      throw invalid_state(strprintf(
          "dao_recycle_submit: buffer %p of pool '%s' is already queued (submitted and not yet "
          "taken); nothing changed",
          static_cast<void*>(&b), name_.c_str()));
    }
    if ((s & kRefMask) == 0) {
      throw invalid_state(
          strprintf("dao_recycle_submit: buffer %p of pool '%s' is free: all its references were "
                    "released; nothing changed",
                    static_cast<void*>(&b), name_.c_str()));
    }
    if (b.state.compare_exchange_weak(s, (s - 1) | kQueuedBit, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
      break;
  }
  // The position in the ready ring is the submission number: take pops in
  // the same order. Claiming it counts the submission (ready_.pushed()).
  std::uint64_t position = 0;
  ready_.push(b.index, [&b, &position](std::uint64_t p) {
    b.sequence.store(p, std::memory_order_relaxed);
    position = p;
  });
  note_submitted(position + 1);
  wake(ready_wait_, 1);
  return DAO_OK;
}

dao_status recycle_pool::take(double timeout, recycle_buffer*& out) {
  static const char* const kFunction = "dao_recycle_take";
  check_timeout(timeout, kFunction);
  recycle_buffer* b = nullptr;
  std::uint64_t position = 0;
  auto try_once = [&](bool last) {
    if (pop_ready(b, position)) return attempt::got;
    // About to sleep (or to fail): the buffers this thread released go
    // where acquires find them without stealing.
    if (last) flush_own_stash();
    if (!closed_.load(std::memory_order_acquire)) return attempt::none;
    // Closed: a submit may have landed between the pop and the look.
    return pop_ready(b, position) ? attempt::got : attempt::closed;
  };
  attempt result = try_once(timeout == 0);
  if (result == attempt::none && timeout != 0) {
    result = wait_for(ready_wait_, try_once, timeout, take_waits_, take_wait_ns_, take_scores_);
  }
  switch (result) {
    case attempt::got:
      note_taken(position + 1);  // counted by the pop (ready_.popped())
      out = b;
      return DAO_OK;
    case attempt::closed: return closed_status(kFunction, " and its queue is empty");
    case attempt::none:
    default:
      return timeout_status(kFunction, "has nothing queued", "nothing was submitted", timeout);
  }
}

void recycle_pool::close() noexcept {
  closed_.store(true, std::memory_order_seq_cst);
  wake_all(free_wait_);
  wake_all(ready_wait_);
}

dao_status recycle_pool::retain(recycle_buffer& b) {
  std::uint64_t s = b.state.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t refs = s & kRefMask;
    if (refs == 0) {
      throw invalid_state(strprintf(
          "recycle_buffer_retain: buffer %p of pool '%s' is %s: the caller holds no reference to "
          "it; nothing changed",
          static_cast<void*>(&b), name_.c_str(),
          (s & kQueuedBit) != 0 ? "queued (submit moved the reference into the queue)"
                                : "free (all its references were released)"));
    }
    if (refs == kRefMask) {
      throw invalid_state(
          strprintf("recycle_buffer_retain: buffer %p of pool '%s' already has %llu "
                    "references, the most it can have",
                    static_cast<void*>(&b), name_.c_str(), static_cast<unsigned long long>(refs)));
    }
    if (b.state.compare_exchange_weak(s, s + 1, std::memory_order_relaxed,
                                      std::memory_order_relaxed))
      return DAO_OK;
  }
}

dao_status recycle_pool::release(recycle_buffer& b) {
  std::uint64_t s = b.state.load(std::memory_order_relaxed);
  for (;;) {
    if ((s & kRefMask) == 0) {
      throw invalid_state(strprintf(
          "recycle_buffer_release: buffer %p of pool '%s' is %s; nothing changed",
          static_cast<void*>(&b), name_.c_str(),
          (s & kQueuedBit) != 0
              ? "queued and the caller holds no reference to it (submit moved the reference "
                "into the queue; take gives it back)"
              : "free: all its references were already released (a double release?)"));
    }
    if (b.state.compare_exchange_weak(s, s - 1, std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
      break;
  }
  if (s - 1 == 0) {  // the last reference of a buffer that is not queued
    note_freed(freed_.fetch_add(1, std::memory_order_seq_cst) + 1);
    poison(b.data);  // a use after the last release is reported under ASan
    free_buffer(b.index);
  }
  return DAO_OK;
}

}  // namespace dao::detail
