// The link of a tiered pool: its clock, the SIM throttle and the staging
// lanes (see staging.hpp).
#include "tiered/staging.hpp"

#include <algorithm>
#include <cstring>
#include <system_error>

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

using steady = std::chrono::steady_clock;

std::uint64_t ns_between(steady::time_point a, steady::time_point b) noexcept {
  return b > a ? static_cast<std::uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count())
               : 0;
}

// A copy on a SIM link: starts when the stream reaches it, and the stream
// goes on no earlier than bytes / rate later.
struct throttle_task {
  steady::time_point start;
  std::size_t bytes = 0;
  double bytes_per_s = 0;
  link_clock* clock = nullptr;
  int dir = kToDevice;
};

void throttle_start(void* p) noexcept {
  auto* task = static_cast<throttle_task*>(p);
  task->start = steady::now();
  if (task->clock != nullptr) task->clock->begin(task->dir);
}

void throttle_finish(void* p) noexcept {
  auto* task = static_cast<throttle_task*>(p);
  throttle_until(task->start, task->bytes, task->bytes_per_s);
  if (task->clock != nullptr) task->clock->end(task->dir);
  delete task;
}

void clock_begin(void* p) noexcept {
  auto* e = static_cast<link_clock::end_point*>(p);
  e->clock->begin(e->dir);
}

void clock_end(void* p) noexcept {
  auto* e = static_cast<link_clock::end_point*>(p);
  e->clock->end(e->dir);
}

}  // namespace

// --- the clock ---------------------------------------------------------------

void link_clock::begin(int dir, steady::time_point now) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (active_[0] + active_[1] == 0) any_since_ = now;
  if (active_[dir]++ == 0) since_[dir] = now;
}

void link_clock::end(int dir, steady::time_point now) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (active_[dir] == 0) return;  // unpaired (a copy that failed to queue)
  if (--active_[dir] == 0) busy_[dir] += ns_between(since_[dir], now);
  if (active_[0] + active_[1] == 0) any_ += ns_between(any_since_, now);
}

link_clock::reading link_clock::read() const noexcept {
  const auto now = steady::now();
  std::lock_guard<std::mutex> lock(mu_);
  reading r;
  for (int d = 0; d < 2; ++d) {
    r.busy_ns[d] = busy_[d] + (active_[d] > 0 ? ns_between(since_[d], now) : 0);
  }
  r.any_ns = any_ + (active_[0] + active_[1] > 0 ? ns_between(any_since_, now) : 0);
  return r;
}

void throttle_until(steady::time_point start, std::size_t bytes, double bytes_per_s, bool spin) {
  if (bytes_per_s <= 0) return;
  // At most a year per copy: a longer wait would overflow the clock.
  constexpr double kMaxSeconds = 365.0 * 24 * 3600;
  constexpr double kMaxSpinSeconds = 200e-6;
  double seconds = static_cast<double>(bytes) / bytes_per_s;
  if (seconds > kMaxSeconds) seconds = kMaxSeconds;
  const auto until =
      start + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
  if (spin && seconds <= kMaxSpinSeconds) {
    while (steady::now() < until) {
    }
    return;
  }
  std::this_thread::sleep_until(until);
}

void enqueue_link_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes,
                       double bytes_per_s, link_clock* clock, int dir) {
  if (bytes_per_s > 0) {
    auto task = std::make_unique<throttle_task>();
    task->bytes = bytes;
    task->bytes_per_s = bytes_per_s;
    task->clock = clock;
    task->dir = dir;
    s.launch_host_func(throttle_start, task.get());
    // Once throttle_start is queued, throttle_finish must run to free the
    // task: a copy that fails to queue is timed as taking no time.
    try {
      s.copy(dst, src, bytes);
    } catch (...) {
      task->bytes = 0;
      s.launch_host_func(throttle_finish, task.release());
      throw;
    }
    s.launch_host_func(throttle_finish, task.get());
    task.release();  // throttle_finish deletes it
    return;
  }
  if (clock == nullptr) {
    s.copy(dst, src, bytes);
    return;
  }
  s.launch_host_func(clock_begin, clock->end_point_of(dir));
  try {
    s.copy(dst, src, bytes);
  } catch (...) {
    s.launch_host_func(clock_end, clock->end_point_of(dir));
    throw;
  }
  s.launch_host_func(clock_end, clock->end_point_of(dir));
}

// --- a staging lane ------------------------------------------------------------

staging_lane::staging_lane(params p) : p_(std::move(p)) {
  if (p_.buffers.empty() || p_.events.size() != p_.buffers.size() || p_.chunk == 0 ||
      p_.stream == nullptr || p_.clock == nullptr) {
    throw error(DAO_ERR_INTERNAL, "tiered pool: a staging lane needs buffers, events and a stream");
  }
  ring_.resize(16);
  buffer_busy_.assign(p_.buffers.size(), false);
  landings_.resize(p_.buffers.size());
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    throw backend_error(
        strprintf("dao_tiered_create: could not start a staging thread: %s", e.what()));
  }
}

staging_lane::~staging_lane() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The last jobs' host functions (dma_finished) may still be queued.
  try {
    p_.stream->synchronize();
  } catch (...) {
  }
}

std::uint64_t staging_lane::submit(void* dst, const void* src, std::size_t bytes,
                                   std::uint64_t after_reads, std::uint64_t after_done) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!failure_.empty()) throw backend_error(failure_);
  if (count_ == ring_.size()) {
    std::vector<job> bigger(ring_.size() * 2);  // may throw: nothing queued
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(bigger);
    head_ = 0;
  }
  job& j = ring_[(head_ + count_) % ring_.size()];
  j.dst = static_cast<char*>(dst);
  j.src = static_cast<const char*>(src);
  j.bytes = bytes;
  j.number = ++submitted_;
  j.after_reads = after_reads;
  j.after_done = after_done;
  ++count_;
  lock.unlock();
  work_cv_.notify_one();
  return j.number;
}

void staging_lane::wait_counter(const std::uint64_t& counter, std::uint64_t n) {
  std::unique_lock<std::mutex> lock(mu_);
  progress_cv_.wait(lock, [&] { return counter >= n || !failure_.empty(); });
  if (counter < n) throw backend_error(failure_);
}

void staging_lane::wait_dma(std::uint64_t n) { wait_counter(dma_done_, n); }

void staging_lane::drain() {
  std::uint64_t n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    n = submitted_;
  }
  wait_done(n);
}

void staging_lane::wait_done(std::uint64_t n) { wait_counter(done_, n); }

bool staging_lane::is_done(std::uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ >= n;
}

void staging_lane::fail(const char* what) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_.empty()) {
    try {
      failure_ = strprintf("a staged copy %s failed: %s",
                           p_.dir == kToDevice ? "to the device" : "to the host", what);
    } catch (...) {
      failure_ = "a staged copy failed";
    }
  }
  progress_cv_.notify_all();
}

namespace {

// A call that queues work on the stream, tried up to three times: the
// executor learns of a lane's failure only when it waits, after it has
// counted the copy as made (an evicted tensor's host copy as current), so a
// lane gives up only on a failure that repeats. Queuing a copy twice is
// harmless (the same bytes).
template <class Queue>
void queue_retrying(Queue queue) {
  constexpr int kTries = 3;
  for (int i = 1;; ++i) {
    try {
      queue();
      return;
    } catch (const std::exception&) {
      if (i == kTries) throw;
    }
  }
}

}  // namespace

void staging_lane::dma(std::size_t buffer, void* dst, const void* src, std::size_t bytes) {
  queue_retrying([&] {
    enqueue_link_copy(*p_.stream, dst, src, bytes, p_.dma_bytes_per_s, nullptr, p_.dir);
    p_.stream->record(*p_.events[buffer]);
  });
}

// After a job's last DMA: its device side is done when the stream gets here.
void staging_lane::job_dma_queued() {
  queue_retrying([&] { p_.stream->launch_host_func(dma_finished, this); });
}

void staging_lane::dma_finished(void* p) noexcept {
  auto* lane = static_cast<staging_lane*>(p);
  {
    std::lock_guard<std::mutex> lock(lane->mu_);
    ++lane->dma_done_;
    if (lane->p_.dir == kToDevice) lane->done_ = lane->dma_done_;
  }
  if (lane->p_.dir == kToDevice) lane->p_.clock->end(kToDevice);
  lane->progress_cv_.notify_all();
}

void staging_lane::run() noexcept {
  std::unique_lock<std::mutex> lock(mu_);
  if (p_.dir == kToDevice) {
    run_to_device(lock);
  } else {
    run_to_host(lock);
  }
}

// One job at a time, chunk by chunk: the memcpy of a chunk into the next
// buffer runs while the DMAs of the chunks before it do; a buffer is
// reused once its last DMA has read it.
void staging_lane::run_to_device(std::unique_lock<std::mutex>& lock) {
  const std::size_t nbuf = p_.buffers.size();
  for (;;) {
    work_cv_.wait(lock, [&] { return count_ > 0 || stopping_; });
    if (count_ == 0) return;
    const job j = ring_[head_];
    const bool skip = !failure_.empty();
    lock.unlock();
    if (!skip) {
      p_.clock->begin(kToDevice);
      try {
        if (j.after_done != 0) p_.evictions->wait_done(j.after_done);
        bool ordered = false;
        for (std::size_t off = 0; off < j.bytes;) {
          const std::size_t n = std::min(p_.chunk, j.bytes - off);
          const std::size_t b = next_buffer_;
          next_buffer_ = (b + 1) % nbuf;
          if (buffer_busy_[b]) p_.events[b]->synchronize();
          const auto t0 = steady::now();
          std::memcpy(p_.buffers[b], j.src + off, n);
          throttle_until(t0, n, p_.memcpy_bytes_per_s);
          if (!ordered) {
            // It may land where an eviction queued before it still reads.
            if (j.after_reads != 0) p_.evictions->wait_dma(j.after_reads);
            ordered = true;
          }
          dma(b, j.dst + off, p_.buffers[b], n);
          buffer_busy_[b] = true;
          off += n;
        }
        job_dma_queued();
      } catch (const std::exception& e) {
        p_.clock->end(kToDevice);
        fail(e.what());
      }
    }
    lock.lock();
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
}

// Up to one DMA per buffer ahead (across jobs), each chunk copied out of its
// buffer once it has landed, in order.
void staging_lane::run_to_host(std::unique_lock<std::mutex>& lock) {
  const std::size_t nbuf = p_.buffers.size();
  std::size_t issued_jobs = 0;  // jobs from head_ whose DMAs are all queued
  std::size_t issue_off = 0;    // of the next job to queue
  std::size_t pending = 0, first_pending = 0;
  for (;;) {
    if (!failure_.empty()) {
      // Nothing more is copied: the waits throw.
      count_ = 0;
      issued_jobs = issue_off = pending = 0;
      if (stopping_) return;
      work_cv_.wait(lock);
      continue;
    }
    if (issued_jobs < count_ && pending < nbuf) {
      const job j = ring_[(head_ + issued_jobs) % ring_.size()];
      lock.unlock();
      const std::size_t n = std::min(p_.chunk, j.bytes - issue_off);
      const bool last = issue_off + n == j.bytes;
      const std::size_t b = next_buffer_;
      bool ok = true;
      try {
        if (issue_off == 0) p_.clock->begin(kToHost);
        next_buffer_ = (b + 1) % nbuf;
        dma(b, p_.buffers[b], j.src + issue_off, n);
        if (last) job_dma_queued();
      } catch (const std::exception& e) {
        p_.clock->end(kToHost);
        fail(e.what());
        ok = false;
      }
      lock.lock();
      if (!ok) continue;
      landings_[(first_pending + pending) % nbuf] =
          landing{b, j.dst + issue_off, n, last ? j.number : 0};
      ++pending;
      issue_off += n;
      if (last) {
        ++issued_jobs;
        issue_off = 0;
      }
      continue;
    }
    if (pending > 0) {
      const landing l = landings_[first_pending];
      lock.unlock();
      bool ok = true;
      try {
        p_.events[l.buffer]->synchronize();
        const auto t0 = steady::now();
        std::memcpy(l.dst, p_.buffers[l.buffer], l.bytes);
        throttle_until(t0, l.bytes, p_.memcpy_bytes_per_s);
        if (l.job != 0) p_.clock->end(kToHost);
      } catch (const std::exception& e) {
        p_.clock->end(kToHost);
        fail(e.what());
        ok = false;
      }
      lock.lock();
      if (!ok) continue;
      first_pending = (first_pending + 1) % nbuf;
      --pending;
      if (l.job != 0) {
        done_ = l.job;
        head_ = (head_ + 1) % ring_.size();
        --count_;
        --issued_jobs;
        progress_cv_.notify_all();
      }
      continue;
    }
    if (stopping_ && count_ == 0) return;
    work_cv_.wait(lock);
  }
}

}  // namespace dao::detail
