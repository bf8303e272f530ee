// The copies of a tiered pool and the streams they run on: device -> host
// (evictions) on the D2H stream, host -> device (fetches) on the H2D stream,
// device -> device (compaction) and kernels on the compute stream; the
// events that order them, and the link model of SIM devices (link_model).
//
// With a pageable host tier (a CPU place) and staging on, the copies between
// the tiers go through two staging lanes (staging.hpp), one per direction,
// that own the H2D and D2H streams' traffic; the executor then waits on the
// lanes' job counters instead of events. Otherwise a copy is queued on its
// stream directly; from pageable memory it blocks the caller (as the CUDA
// driver does, and as the SIM link model does when it has pageable rates).
//
// A small copy (at most link_model::inline_bytes, and short on a modelled
// link) is made by the executor itself, at once (issue 21, item 6): handing
// a 4 KiB copy to a lane's worker and waiting for it cost two or three
// thread wake-ups (futex calls) each, 20-30 us per kernel on a graph that
// evicts and fetches at every kernel, for a copy of well under 1 us. A
// driver does the same with a small pageable transfer (it copies it through
// its own staging before returning). When the lanes are idle (always, when
// every copy is small) it needs no ordering; otherwise it first waits for
// the staged jobs it could overtake (a fetch for everything under way in
// both lanes, an eviction for its own tensor's fetch).
//
// Every wait of the caller for a copy (fences, drains, blocking copies) is
// timed: waited_ns(), the pool's stall_ns.
//
// A fetch into memory that an eviction is still reading waits for it (the
// H2D stream waits on an event recorded on the D2H stream); before a kernel
// runs, the executor waits on events recorded after that kernel's own copies
// (so prefetches queued after them keep running while it computes).
//
// Used by the executor thread alone (and by the pool's destructor once that
// thread has stopped), so it needs no lock of its own; calls that only
// queue work are made with the pool's mutex held, calls that wait without.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dao/place.h"
#include "resource/stream.hpp"
#include "tiered/staging.hpp"

namespace dao::detail {

struct tiered_tensor;

class system_resource;
class tier_memory;

// How copies between the tiers are made, and (SIM) how long they take.
struct link_model {
  double pinned_bytes_per_s = 0;            // SIM, each way; 0: not modelled
  double pageable_bytes_per_s[2] = {0, 0};  // SIM, [link_dir]; 0: not modelled
  bool host_pageable = true;                // the host tier is pageable memory
  std::size_t staging_buffers = 0;          // per direction; 0: no staging
  std::size_t staging_chunk = 0;
  // Staged only: copies of at most this many bytes are made by the caller
  // itself, at once (0: never; see above).
  std::size_t inline_bytes = 0;
  bool staged() const noexcept { return host_pageable && staging_buffers > 0; }
};

class transfers {
 public:
  // Creates the three streams and the events on `device` (of `place`), and
  // with staging, the staging buffers (from `memory`) and lanes.
  transfers(system_resource& device, dao_place place, const link_model& link, tier_memory& memory);
  ~transfers() { close(); }

  transfers(const transfers&) = delete;
  transfers& operator=(const transfers&) = delete;

  // Waits for the lanes and streams and destroys them. Never throws.
  void close() noexcept;

  const link_model& link() const noexcept { return link_; }
  // Whether the last copy of `t` has finished.
  bool arrived(const tiered_tensor& t);
  // Nanoseconds the caller (the executor) has waited for copies. Any thread.
  std::uint64_t waited_ns() const noexcept { return waited_ns_.load(std::memory_order_relaxed); }
  // The copies' times each way. Any thread.
  link_clock::reading copy_times() const noexcept { return clock_.read(); }
  // Bytes copied through staging buffers, and the bytes of those buffers.
  // Any thread.
  std::uint64_t staged_bytes() const noexcept {
    return staged_bytes_.load(std::memory_order_relaxed);
  }
  std::size_t staging_bytes() const noexcept { return staging_bytes_; }

  // Queues the copy of `t` (t.bytes) from the device at `device_src` into
  // t.host, then records t.transit.
  void copy_to_host(tiered_tensor& t, const void* device_src);
  // Queues the copy of `t` from t.host to the device at `device_dst`, after
  // every eviction queued so far, then records t.transit.
  void copy_to_device(tiered_tensor& t, void* device_dst);
  // Copies `bytes` from `base + from` to `base + to` (to < from) on the
  // compute stream, in ascending chunks that never overlap.
  void slide(void* base, std::size_t from, std::size_t to, std::size_t bytes);

  // Waits for both copy streams (every copy queued so far has finished).
  void wait_copies();
  // The same, asking each stream first (cheaper when it is idle), timed as
  // the executor's stall.
  void settle_copies();
  // settle_copies() untimed, for any thread once the executor is idle
  // (dao_tiered_synchronize: the caller's wait is not a stall).
  void quiesce();

  // The copies a kernel must wait for: recorded by fence_kernel (with the
  // mutex held, before prefetches are queued), waited for by wait_fence:
  // the fetches of the kernel's own tensors (not the prefetches queued
  // before it for later kernels, issue 21: waiting for those left one
  // kernel of prefetch where the config asked for more), and every eviction
  // so far (it may read memory the kernel writes).
  struct fence {
    bool h2d = false;
    bool d2h = false;
    std::uint64_t h2d_job = 0;  // staged: the lanes' jobs to wait for
    std::uint64_t d2h_job = 0;
    bool h2d_barrier = false;  // not staged: wait for h2d_barrier_
  };
  fence fence_kernel(const std::vector<tiered_tensor*>& tensors);
  // `t` leaves the device (evicted) while its last fetch may still be
  // writing where it was: the next kernel's fence waits for that fetch too,
  // as that kernel may write there.
  void note_vacated(const tiered_tensor& t);
  // Returns whether it waited (timed as stall_ns), with `end` then the time
  // it returned; false (and no clock read) when the fence asks for nothing.
  bool wait_fence(const fence& f, std::chrono::steady_clock::time_point& end);

  // The compute stream's handle, as a kernel receives it, and a wait for it.
  dao_stream compute_handle() const noexcept { return compute_->handle; }
  // The compute stream itself: the C API gives it a handle (compute_handle()).
  stream_object& compute_stream() const noexcept { return *compute_; }
  void synchronize_compute();
  // Whether `impl` (a stream_impl, compared only) is one of the pool's streams.
  bool owns_stream(const void* impl) const noexcept {
    return impl == compute_->impl.get() || impl == h2d_->impl.get() || impl == d2h_->impl.get();
  }

  // For dao_tensor_read: copies `bytes` to the caller's `dst` from the host
  // tier once evictions are done, or from the device once fetches are done.
  void read_host(void* dst, const void* host, std::size_t bytes);
  void read_device(void* dst, const void* device_src, std::size_t bytes);

 private:
  stream_impl& compute() const noexcept { return *compute_->impl; }
  stream_impl& h2d() const noexcept { return *h2d_->impl; }
  stream_impl& d2h() const noexcept { return *d2h_->impl; }
  // A copy that is not staged, in direction `dir` (blocking when its host
  // side is pageable and the model has a pageable rate).
  void direct_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes, int dir);
  // Waits for both lanes to finish every job (staged only).
  void drain_lanes();
  // Whether a staged copy of `bytes` in direction `dir` is made inline (small, and short on a
  // modelled link). A decision of the sizes and the config alone, never of
  // timing: a run makes the same copies each time.
  bool goes_inline(std::size_t bytes, int dir) const noexcept;
  // SIM: the modelled rate of a copy made inline `dir`-ward (the pageable
  // rate where modelled, else the pinned one; 0: not modelled).
  double inline_rate(int dir) const noexcept {
    const double pageable = link_.pageable_bytes_per_s[dir];
    return pageable > 0 ? pageable : link_.pinned_bytes_per_s;
  }
  // Copies at once on the caller's thread, in direction `dir`, timed as a
  // copy and as the caller's stall (SIM: taking bytes / the pageable rate).
  void inline_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes, int dir);
  void add_waited(std::chrono::steady_clock::time_point since) noexcept {
    add_waited(since, std::chrono::steady_clock::now());
  }
  void add_waited(std::chrono::steady_clock::time_point since,
                  std::chrono::steady_clock::time_point until) noexcept;

  system_resource& device_;
  tier_memory& memory_;
  link_model link_;
  link_clock clock_;
  std::atomic<std::uint64_t> waited_ns_{0};
  std::atomic<std::uint64_t> staged_bytes_{0};
  std::size_t staging_bytes_ = 0;
  std::vector<void*> staging_;  // every buffer, both directions
  std::vector<std::unique_ptr<event_impl>> staging_events_;
  std::unique_ptr<staging_lane> to_device_, to_host_;
  std::vector<event_impl*> fence_events_;  // not staged: the kernel's fetches
  // Fetches into memory vacated while they ran (note_vacated).
  std::uint64_t barrier_h2d_job_ = 0;        // staged
  std::unique_ptr<event_impl> h2d_barrier_;  // not staged: recorded on H2D
  bool barrier_pending_ = false;
  stream_object* compute_ = nullptr;
  stream_object* h2d_ = nullptr;
  stream_object* d2h_ = nullptr;
  std::unique_ptr<event_impl> d2h_ready_, d2h_order_;
  bool d2h_unwaited_ = false;   // D2H copies since d2h_ready_ was recorded
  bool d2h_unordered_ = false;  // D2H copies the H2D stream has not waited for
};

}  // namespace dao::detail
