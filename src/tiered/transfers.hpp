// The copies of a tiered pool and the streams they run on: device -> host
// (evictions) on the D2H stream, host -> device (fetches) on the H2D stream,
// device -> device (compaction) and kernels on the compute stream; the
// events that order them, and the link_bandwidth throttle of SIM devices.
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

#include <cstddef>
#include <memory>

#include "dao/place.h"
#include "resource/stream.hpp"

namespace dao::detail {

struct tiered_tensor;

class system_resource;

class transfers {
 public:
  // Creates the three streams and the events on `device` (of `place`).
  // `bandwidth`: bytes per second that copies are throttled to, 0 = none.
  transfers(system_resource& device, dao_place place, double bandwidth);
  ~transfers() { close(); }

  transfers(const transfers&) = delete;
  transfers& operator=(const transfers&) = delete;

  // Waits for the streams and destroys them. Never throws.
  void close() noexcept;

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
  // The same, asking each stream first (cheaper when it is idle).
  void settle_copies();

  // The copies a kernel must wait for: recorded by fence_kernel (with the
  // mutex held, before prefetches are queued), waited for by wait_fence.
  struct fence {
    bool h2d = false;
    bool d2h = false;
  };
  fence fence_kernel();
  void wait_fence(const fence& f);

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
  void throttled_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes);

  system_resource& device_;
  double bandwidth_ = 0;  // bytes per second, 0 = unlimited
  stream_object* compute_ = nullptr;
  stream_object* h2d_ = nullptr;
  stream_object* d2h_ = nullptr;
  std::unique_ptr<event_impl> h2d_ready_, d2h_ready_, d2h_order_;
  bool h2d_unwaited_ = false;   // H2D copies since h2d_ready_ was recorded
  bool d2h_unwaited_ = false;   // D2H copies since d2h_ready_ was recorded
  bool d2h_unordered_ = false;  // D2H copies the H2D stream has not waited for
};

}  // namespace dao::detail
