// The link between a tiered pool's tiers (issue 21): the clock that times
// the copies each way, the modelled rates of a SIM link, and the staging
// lanes that carry copies between a pageable host tier and the device
// through a small ring of pinned buffers.
//
// A pageable copy blocks the calling thread in the driver (the executor, if
// it made it). A staging lane instead has a worker thread of its own: to the
// device it copies a chunk of the tensor into a free pinned buffer (memcpy)
// and queues that buffer's DMA on the lane's stream, so the memcpy of the
// next chunk runs while the DMA of this one does; to the host it queues the
// DMAs of up to `buffers` chunks ahead and copies each out of its buffer
// once it has landed. The two directions have a lane each, so they run at
// once. The buffers are allocated once, with the pool.
//
// Jobs are numbered from 1 in submission order; each lane counts the jobs
// whose device side is done (`dma_done`: the data is on the device, or has
// been read from it) and the jobs wholly done (`done`). The executor waits
// on these counters (no polling), and orders the lanes with them: a job to
// the device waits for the device reads of the evictions submitted before it
// (it may land where they read), and for the eviction of its own tensor (it
// reads the host buffer that eviction writes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "resource/stream.hpp"

namespace dao::detail {

enum link_dir : int { kToDevice = 0, kToHost = 1 };

// Times the copies of a pool: per direction, the time during which at least
// one copy that way was under way, and the time during which any copy was.
// Thread safe.
class link_clock {
 public:
  // What a host function on a stream gets to time one direction.
  struct end_point {
    link_clock* clock;
    int dir;
  };
  link_clock() noexcept : ends_{{this, kToDevice}, {this, kToHost}} {}
  link_clock(const link_clock&) = delete;
  link_clock& operator=(const link_clock&) = delete;
  end_point* end_point_of(int dir) noexcept { return &ends_[dir]; }

  void begin(int dir) noexcept { begin(dir, std::chrono::steady_clock::now()); }
  void end(int dir) noexcept { end(dir, std::chrono::steady_clock::now()); }
  // The same at `now`, read by the caller (one clock read for several uses).
  void begin(int dir, std::chrono::steady_clock::time_point now) noexcept;
  void end(int dir, std::chrono::steady_clock::time_point now) noexcept;

  struct reading {
    std::uint64_t busy_ns[2] = {0, 0};
    std::uint64_t any_ns = 0;
  };
  // Includes the copies under way now, up to now.
  reading read() const noexcept;

 private:
  using steady = std::chrono::steady_clock;
  mutable std::mutex mu_;
  int active_[2] = {0, 0};
  steady::time_point since_[2];
  steady::time_point any_since_;
  std::uint64_t busy_[2] = {0, 0};
  std::uint64_t any_ = 0;
  end_point ends_[2];
};

// Queues a copy of `bytes` on `s`, timed by `clock` (if not NULL) in
// direction `dir` (host functions around it) and, when `bytes_per_s` > 0 (a
// SIM link), taking at least bytes / bytes_per_s on the stream. Allocates
// for the SIM throttle only.
void enqueue_link_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes,
                       double bytes_per_s, link_clock* clock, int dir);

// Sleeps until `start` + bytes / bytes_per_s (nothing when bytes_per_s is 0).
// With `spin`, a wait of up to 200 us spins instead (a sleep would take at
// least the timer slack, 50 us: a modelled copy of 4 KiB at 8 GB/s takes
// 0.5 us, which a caller that copies itself, as a driver does, spends busy).
void throttle_until(std::chrono::steady_clock::time_point start, std::size_t bytes,
                    double bytes_per_s, bool spin = false);

class staging_lane {
 public:
  struct params {
    int dir = kToDevice;
    stream_impl* stream = nullptr;    // the pool's H2D or D2H stream
    std::vector<void*> buffers;       // pinned, `chunk` bytes each (at least one)
    std::vector<event_impl*> events;  // one per buffer: after its last DMA
    std::size_t chunk = 0;
    double dma_bytes_per_s = 0;         // SIM: the pinned link rate, 0: not modelled
    double memcpy_bytes_per_s = 0;      // SIM: the host side's rate, 0: not modelled
    staging_lane* evictions = nullptr;  // to the device: the lane to the host
    link_clock* clock = nullptr;
  };

  // Starts the worker thread (throws backend_error if it cannot).
  explicit staging_lane(params p);
  // Finishes the queued jobs, stops the worker and waits for the stream.
  // Never throws.
  ~staging_lane();

  staging_lane(const staging_lane&) = delete;
  staging_lane& operator=(const staging_lane&) = delete;

  // Queues the copy of `bytes` from `src` to `dst`; returns its number. A
  // job to the device first waits until the lane to the host has read
  // `after_reads` jobs from the device and finished job `after_done` (0:
  // none). Allocates only when the queue grows past its largest size so
  // far. One thread submits (the executor).
  std::uint64_t submit(void* dst, const void* src, std::size_t bytes, std::uint64_t after_reads,
                       std::uint64_t after_done);
  std::uint64_t submitted() const noexcept { return submitted_; }

  // Block until job `n` (and every earlier one) has its device side done /
  // is wholly done. Throw backend_error if a copy of the lane failed.
  void wait_dma(std::uint64_t n);
  void wait_done(std::uint64_t n);
  bool is_done(std::uint64_t n);
  // Whether every job submitted so far is wholly done (the submitter).
  bool idle() { return is_done(submitted_); }
  // Every job submitted before the call done (any thread may call it).
  void drain();

 private:
  struct job {
    char* dst = nullptr;
    const char* src = nullptr;
    std::size_t bytes = 0;
    std::uint64_t number = 0;
    std::uint64_t after_reads = 0;
    std::uint64_t after_done = 0;
  };
  // A chunk whose DMA to the host is queued, to copy out of its buffer.
  struct landing {
    std::size_t buffer = 0;
    char* dst = nullptr;
    std::size_t bytes = 0;
    std::uint64_t job = 0;  // non-zero: the job's last chunk
  };

  void run() noexcept;
  void run_to_device(std::unique_lock<std::mutex>& lock);
  void run_to_host(std::unique_lock<std::mutex>& lock);
  void dma(std::size_t buffer, void* dst, const void* src, std::size_t bytes);
  void job_dma_queued();
  static void dma_finished(void* lane) noexcept;
  void wait_counter(const std::uint64_t& counter, std::uint64_t n);
  void fail(const char* what) noexcept;

  params p_;
  std::mutex mu_;
  std::condition_variable work_cv_;      // the worker waits for jobs
  std::condition_variable progress_cv_;  // waiters wait for the counters
  std::vector<job> ring_;                // queued jobs: a ring of ring_.size()
  std::size_t head_ = 0, count_ = 0;
  std::uint64_t submitted_ = 0;  // written by the submitter only, under mu_
  std::uint64_t dma_done_ = 0;   // under mu_
  std::uint64_t done_ = 0;       // under mu_
  bool stopping_ = false;
  std::string failure_;  // a copy failed: every wait throws
  // The worker's.
  std::size_t next_buffer_ = 0;
  std::vector<bool> buffer_busy_;
  std::vector<landing> landings_;  // a ring of buffers.size()
  std::thread thread_;             // last
};

}  // namespace dao::detail
