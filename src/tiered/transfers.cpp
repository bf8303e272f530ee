// The copies of a tiered pool and the streams they run on (see
// transfers.hpp).
#include "tiered/transfers.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "tiered/tensor.hpp"
#include "tiered/tier_memory.hpp"

namespace dao::detail {
namespace {

using steady = std::chrono::steady_clock;

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

transfers::transfers(system_resource& device, dao_place place, const link_model& link,
                     tier_memory& memory)
    : device_(device), memory_(memory), link_(link) {
  try {
    compute_ = make_stream(device_, place);
    h2d_ = make_stream(device_, place);
    d2h_ = make_stream(device_, place);
    d2h_ready_ = device_.create_event();
    d2h_order_ = device_.create_event();
    h2d_barrier_ = device_.create_event();
    if (link_.staged()) {
      const std::size_t n = link_.staging_buffers;
      staging_.reserve(2 * n);
      staging_events_.reserve(2 * n);
      for (std::size_t i = 0; i < 2 * n; ++i) {
        staging_.push_back(memory_.staging_allocate(link_.staging_chunk));
        staging_bytes_ += link_.staging_chunk;
        staging_events_.push_back(device_.create_event());
      }
      for (int dir : {kToHost, kToDevice}) {  // the lane to the device uses the other
        staging_lane::params p;
        p.dir = dir;
        p.stream = dir == kToDevice ? h2d_->impl.get() : d2h_->impl.get();
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t k = static_cast<std::size_t>(dir) * n + i;
          p.buffers.push_back(staging_[k]);
          p.events.push_back(staging_events_[k].get());
        }
        p.chunk = link_.staging_chunk;
        p.dma_bytes_per_s = link_.pinned_bytes_per_s;
        p.memcpy_bytes_per_s = link_.pageable_bytes_per_s[dir];
        p.evictions = to_host_.get();
        p.clock = &clock_;
        (dir == kToDevice ? to_device_ : to_host_) = std::make_unique<staging_lane>(std::move(p));
      }
    }
  } catch (...) {
    close();
    throw;
  }
}

void transfers::close() noexcept {
  // The lanes first (they finish their jobs on the streams), then the streams.
  to_device_.reset();
  to_host_.reset();
  destroy_stream(compute_);
  destroy_stream(h2d_);
  destroy_stream(d2h_);
  for (void* p : staging_) memory_.staging_free(p);
  staging_.clear();
}

void transfers::add_waited(steady::time_point since, steady::time_point until) noexcept {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until - since);
  if (ns.count() > 0) {
    waited_ns_.fetch_add(static_cast<std::uint64_t>(ns.count()), std::memory_order_relaxed);
  }
}

void transfers::direct_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes,
                            int dir) {
  const double pageable = link_.pageable_bytes_per_s[dir];
  const auto t0 = steady::now();
  if (link_.host_pageable && pageable > 0) {
    // A pageable copy (SIM model): the caller is blocked until it is done.
    clock_.begin(dir);
    try {
      s.copy(dst, src, bytes);
      s.synchronize();
      throttle_until(t0, bytes, pageable);
    } catch (...) {
      clock_.end(dir);
      add_waited(t0);
      throw;
    }
    clock_.end(dir);
  } else {
    enqueue_link_copy(s, dst, src, bytes, link_.pinned_bytes_per_s, &clock_, dir);
  }
  // A CUDA copy from pageable memory returns once the driver has staged it:
  // time the caller spends here is time it waited for the copy.
  add_waited(t0);
}

bool transfers::goes_inline(std::size_t bytes, int dir) const noexcept {
  if (!link_.staged() || bytes > link_.inline_bytes) return false;
  // SIM: only a copy that the model makes short (the executor holds the
  // pool's mutex while it copies); on a slow modelled link it goes to a lane.
  constexpr double kMaxInlineSeconds = 200e-6;
  const double rate = inline_rate(dir);
  return rate <= 0 || static_cast<double>(bytes) / rate <= kMaxInlineSeconds;
}

void transfers::inline_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes,
                            int dir) {
  const double rate = inline_rate(dir);
  const auto t0 = steady::now();
  clock_.begin(dir, t0);
  try {
    // As a lane does (staging.cpp, queue_retrying): only a failure that
    // repeats fails the copy.
    constexpr int kTries = 3;
    for (int i = 1;; ++i) {
      try {
        s.copy_now(dst, src, bytes);
        break;
      } catch (const std::exception&) {
        if (i == kTries) throw;
      }
    }
    throttle_until(t0, bytes, rate, true);
  } catch (...) {
    clock_.end(dir);
    add_waited(t0);
    throw;
  }
  const auto t1 = steady::now();
  clock_.end(dir, t1);
  add_waited(t0, t1);
}

bool transfers::arrived(const tiered_tensor& t) {
  if (t.staged_dir >= 0) {
    return (t.staged_dir == kToDevice ? to_device_ : to_host_)->is_done(t.staged_job);
  }
  return t.transit == nullptr || t.transit->query();
}

void transfers::copy_to_host(tiered_tensor& t, const void* device_src) {
  if (goes_inline(t.bytes, kToHost)) {
    // Its own fetch may still be writing the memory read here (no other
    // staged job touches that memory or t.host).
    if (t.staged_dir == kToDevice && !to_device_->is_done(t.staged_job)) {
      const auto t0 = steady::now();
      to_device_->wait_done(t.staged_job);
      add_waited(t0);
    }
    inline_copy(d2h(), t.host, device_src, t.bytes, kToHost);
    t.staged_dir = -1;  // done: t.transit stays NULL when staged
    t.staged_job = 0;
    t.transit_to_device = false;
    return;
  }
  if (link_.staged()) {
    t.staged_job = to_host_->submit(t.host, device_src, t.bytes, 0, 0);
    t.staged_dir = kToHost;
    staged_bytes_.fetch_add(t.bytes, std::memory_order_relaxed);
    return;
  }
  direct_copy(d2h(), t.host, device_src, t.bytes, kToHost);
  if (t.transit == nullptr) t.transit = device_.create_event();
  d2h().record(*t.transit);
  t.staged_dir = -1;
  t.transit_to_device = false;
  d2h_unwaited_ = true;
  d2h_unordered_ = true;
}

void transfers::copy_to_device(tiered_tensor& t, void* device_dst) {
  if (goes_inline(t.bytes, kToDevice)) {
    // After everything the lanes still have under way: an eviction may still
    // read where this lands, a fetch still write there (the lanes keep their
    // own order, this copy jumps it), and t's own eviction write t.host.
    if (!to_host_->idle() || !to_device_->idle()) {
      const auto t0 = steady::now();
      to_host_->wait_dma(to_host_->submitted());
      if (t.staged_dir == kToHost) to_host_->wait_done(t.staged_job);
      to_device_->wait_done(to_device_->submitted());
      add_waited(t0);
    }
    inline_copy(h2d(), device_dst, t.host, t.bytes, kToDevice);
    t.staged_dir = -1;
    t.staged_job = 0;
    t.transit_to_device = false;
    return;
  }
  if (link_.staged()) {
    // After the device reads of every eviction so far (it may land where
    // they read), and after the eviction that wrote its host buffer.
    const std::uint64_t own = t.staged_dir == kToHost ? t.staged_job : 0;
    t.staged_job = to_device_->submit(device_dst, t.host, t.bytes, to_host_->submitted(), own);
    t.staged_dir = kToDevice;
    staged_bytes_.fetch_add(t.bytes, std::memory_order_relaxed);
    return;
  }
  if (d2h_unordered_) {
    // The fetch may land where an eviction is still reading.
    d2h().record(*d2h_order_);
    h2d().wait(*d2h_order_);
    d2h_unordered_ = false;
  }
  direct_copy(h2d(), device_dst, t.host, t.bytes, kToDevice);
  if (t.transit == nullptr) t.transit = device_.create_event();
  h2d().record(*t.transit);
  t.staged_dir = -1;
  t.transit_to_device = true;
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

void transfers::drain_lanes() {
  if (!link_.staged()) return;
  to_host_->drain();
  to_device_->drain();
}

void transfers::wait_copies() {
  const auto t0 = steady::now();
  drain_lanes();
  d2h().synchronize();
  h2d().synchronize();
  d2h_unordered_ = false;
  add_waited(t0);
}

void transfers::settle_copies() {
  const auto t0 = steady::now();
  quiesce();
  add_waited(t0);
}

void transfers::quiesce() {
  drain_lanes();
  if (!d2h().query()) d2h().synchronize();
  if (!h2d().query()) h2d().synchronize();
}

void transfers::note_vacated(const tiered_tensor& t) {
  if (t.staged_dir == kToDevice) {
    if (!to_device_->is_done(t.staged_job)) {
      barrier_h2d_job_ = std::max(barrier_h2d_job_, t.staged_job);
    }
  } else if (t.transit_to_device && t.transit != nullptr && !t.transit->query()) {
    h2d().record(*h2d_barrier_);  // after every fetch so far, that one included
    barrier_pending_ = true;
  }
}

transfers::fence transfers::fence_kernel(const std::vector<tiered_tensor*>& tensors) {
  fence f;
  if (link_.staged()) {
    // Jobs finish in order: the last fetch of the kernel's tensors, and of
    // tensors evicted while their fetch ran (the kernel may write there).
    f.h2d_job = barrier_h2d_job_;
    barrier_h2d_job_ = 0;
    for (const tiered_tensor* t : tensors) {
      if (t->staged_dir == kToDevice && t->staged_job > f.h2d_job) f.h2d_job = t->staged_job;
    }
    f.d2h_job = to_host_->submitted();
    return f;
  }
  fence_events_.clear();  // keeps its capacity: no allocation per kernel
  for (const tiered_tensor* t : tensors) {
    if (t->transit_to_device && t->transit != nullptr) fence_events_.push_back(t->transit.get());
  }
  f.h2d = !fence_events_.empty();
  f.h2d_barrier = barrier_pending_;
  barrier_pending_ = false;
  f.d2h = d2h_unwaited_;
  if (f.d2h) {
    d2h().record(*d2h_ready_);
    d2h_unwaited_ = false;
  }
  return f;
}

bool transfers::wait_fence(const fence& f, steady::time_point& end) {
  // Nothing to wait for (every copy was inline, or none was needed): no
  // clock read (issue 21: two per kernel, for a wait of nothing).
  if (link_.staged() ? f.h2d_job == 0 && f.d2h_job == 0 : !f.h2d && !f.h2d_barrier && !f.d2h) {
    return false;
  }
  const auto t0 = steady::now();
  if (link_.staged()) {
    // The kernel's inputs are on the device, and no eviction still reads
    // memory the kernel may write (copying out of the staging buffers may
    // go on while it runs).
    if (f.h2d_job != 0) to_device_->wait_done(f.h2d_job);
    if (f.d2h_job != 0) to_host_->wait_dma(f.d2h_job);
  } else {
    // The executor alone records these events: none moves while it waits.
    if (f.h2d) {
      for (event_impl* e : fence_events_) e->synchronize();
    }
    if (f.h2d_barrier) h2d_barrier_->synchronize();
    if (f.d2h) d2h_ready_->synchronize();
  }
  end = steady::now();
  add_waited(t0, end);
  return true;
}

void transfers::synchronize_compute() { compute().synchronize(); }

void transfers::read_host(void* dst, const void* host, std::size_t bytes) {
  const auto t0 = steady::now();
  if (link_.staged()) to_host_->drain();  // it may be an eviction still under way
  d2h().synchronize();
  add_waited(t0);
  std::memcpy(dst, host, bytes);
}

void transfers::read_device(void* dst, const void* device_src, std::size_t bytes) {
  const auto t0 = steady::now();
  drain_lanes();        // a lane may still queue on the streams
  h2d().synchronize();  // it may be a fetch still under way
  d2h().copy(dst, device_src, bytes);
  d2h().synchronize();
  add_waited(t0);
}

}  // namespace dao::detail
