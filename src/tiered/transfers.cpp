// The copies of a tiered pool and the streams they run on (see
// transfers.hpp).
#include "tiered/transfers.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "resource/system_resource.hpp"
#include "tiered/tensor.hpp"

namespace dao::detail {
namespace {

using steady = std::chrono::steady_clock;

struct throttle_task {
  steady::time_point start;
  double seconds = 0;
};

void throttle_start(void* p) { static_cast<throttle_task*>(p)->start = steady::now(); }

void throttle_finish(void* p) {
  auto* task = static_cast<throttle_task*>(p);
  // At most a year per copy: a longer wait would overflow the clock.
  constexpr double kMaxSeconds = 365.0 * 24 * 3600;
  const double seconds = task->seconds < kMaxSeconds ? task->seconds : kMaxSeconds;
  const auto until = task->start + std::chrono::duration_cast<steady::duration>(
                                       std::chrono::duration<double>(seconds));
  std::this_thread::sleep_until(until);
  delete task;
}

stream_object* make_stream(system_resource& resource, dao_place place) {
  auto s = std::make_unique<stream_object>();
  s->place = place;
  s->impl = resource.create_stream();
  return s.release();
}

void destroy_stream(stream_object*& s) noexcept {
  if (s == nullptr) return;
  try {
    s->impl->synchronize();
  } catch (...) {
  }
  delete s;
  s = nullptr;
}

}  // namespace

transfers::transfers(system_resource& device, dao_place place, double bandwidth)
    : device_(device), bandwidth_(bandwidth) {
  try {
    compute_ = make_stream(device_, place);
    h2d_ = make_stream(device_, place);
    d2h_ = make_stream(device_, place);
    h2d_ready_ = device_.create_event();
    d2h_ready_ = device_.create_event();
    d2h_order_ = device_.create_event();
  } catch (...) {
    close();
    throw;
  }
}

void transfers::close() noexcept {
  destroy_stream(compute_);
  destroy_stream(h2d_);
  destroy_stream(d2h_);
}

void transfers::throttled_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes) {
  if (bandwidth_ <= 0) {
    s.copy(dst, src, bytes);
    return;
  }
  auto task = std::make_unique<throttle_task>();
  task->seconds = static_cast<double>(bytes) / bandwidth_;
  s.launch_host_func(throttle_start, task.get());
  s.copy(dst, src, bytes);
  s.launch_host_func(throttle_finish, task.get());
  task.release();  // throttle_finish deletes it
}

void transfers::copy_to_host(tiered_tensor& t, const void* device_src) {
  throttled_copy(d2h(), t.host, device_src, t.bytes);
  if (t.transit == nullptr) t.transit = device_.create_event();
  d2h().record(*t.transit);
  d2h_unwaited_ = true;
  d2h_unordered_ = true;
}

void transfers::copy_to_device(tiered_tensor& t, void* device_dst) {
  if (d2h_unordered_) {
    // The fetch may land where an eviction is still reading.
    d2h().record(*d2h_order_);
    h2d().wait(*d2h_order_);
    d2h_unordered_ = false;
  }
  throttled_copy(h2d(), device_dst, t.host, t.bytes);
  if (t.transit == nullptr) t.transit = device_.create_event();
  h2d().record(*t.transit);
  h2d_unwaited_ = true;
}

void transfers::slide(void* base, std::size_t from, std::size_t to, std::size_t bytes) {
  char* b = static_cast<char*>(base);
  const std::size_t gap = from - to;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(gap, bytes - done);
    compute().copy(b + to + done, b + from + done, n);
    done += n;
  }
}

void transfers::wait_copies() {
  d2h().synchronize();
  h2d().synchronize();
  d2h_unordered_ = false;
}

void transfers::settle_copies() {
  if (!d2h().query()) d2h().synchronize();
  if (!h2d().query()) h2d().synchronize();
}

transfers::fence transfers::fence_kernel() {
  fence f;
  f.h2d = h2d_unwaited_;
  f.d2h = d2h_unwaited_;
  if (f.h2d) {
    h2d().record(*h2d_ready_);
    h2d_unwaited_ = false;
  }
  if (f.d2h) {
    d2h().record(*d2h_ready_);
    d2h_unwaited_ = false;
  }
  return f;
}

void transfers::wait_fence(const fence& f) {
  if (f.h2d) h2d_ready_->synchronize();
  if (f.d2h) d2h_ready_->synchronize();
}

void transfers::synchronize_compute() { compute().synchronize(); }

void transfers::read_host(void* dst, const void* host, std::size_t bytes) {
  d2h().synchronize();  // it may be an eviction still under way
  std::memcpy(dst, host, bytes);
}

void transfers::read_device(void* dst, const void* device_src, std::size_t bytes) {
  h2d().synchronize();  // it may be a fetch still under way
  d2h().copy(dst, device_src, bytes);
  d2h().synchronize();
}

}  // namespace dao::detail
