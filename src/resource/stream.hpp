// Streams and events below the C API: each backend implements stream_impl
// and event_impl (SIM: a worker thread per stream; CUDA: CUstream/CUevent;
// CPU: run at once). A stream_object / event_object holds one with its
// place; the C API's handles wrap those, and the strategy layer uses them
// (stream-ordered reuse polls events).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "dao/place.h"
#include "dao/stream.h"

namespace dao::detail {

class event_impl;

class stream_impl {
 public:
  virtual ~stream_impl() = default;
  // Queue work. Throw backend_error (or invalid_argument) and queue nothing
  // on failure.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void launch_host_func(dao_host_fn fn, void* user_data) = 0;
  // Mark `event` at the current end of this stream.
  virtual void record(event_impl& event) = 0;
  // Later work waits for `event`.
  virtual void wait(event_impl& event) = 0;
  virtual void synchronize() = 0;
  virtual bool query() = 0;
  virtual void* native() noexcept { return nullptr; }
  // Copies at once, in stream order: returns once the copy and every work
  // queued before it have run. The default queues the copy and waits for the
  // stream; a SIM stream with nothing queued copies on the calling thread
  // (no hand-off to its worker), as a driver copies a small pageable
  // transfer itself. Throws like copy() and synchronize().
  virtual void copy_now(void* dst, const void* src, std::size_t bytes) {
    copy(dst, src, bytes);
    synchronize();
  }
};

class event_impl {
 public:
  virtual ~event_impl() = default;
  virtual bool query() = 0;
  virtual void synchronize() = 0;
  // Recording on the default (NULL) stream: the event completes at once.
  virtual void complete_now() = 0;
};

// A number no other stream handle of this process has had: a handle's
// address can be reused once it is destroyed, its id cannot.
inline std::uint64_t next_stream_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}
// How many stream handles dao_stream_destroy() has destroyed: allocators
// look for the pools of dead streams only when it has changed.
inline std::atomic<std::uint64_t>& destroyed_stream_count() noexcept {
  static std::atomic<std::uint64_t> count{0};
  return count;
}

}  // namespace dao::detail

namespace dao::detail {

// A stream as the layers above the resources hold it (the C API wraps one in
// each dao_stream handle). The implementation is shared so that an
// allocator can hold a weak reference: whether the stream still lives, and
// if so waiting for it, without touching a destroyed stream.
struct stream_object {
  std::uint64_t id = next_stream_id();
  dao_place place{};
  std::shared_ptr<stream_impl> impl;
  // The C API's handle of this stream, for reports (snapshots name the
  // stream a segment belongs to); never dereferenced below the C API.
  dao_stream handle = nullptr;
};

// The C API's handle of `s` (NULL for the default stream), for reports.
inline dao_stream handle_of(const stream_object* s) noexcept {
  return s != nullptr ? s->handle : nullptr;
}

struct event_object {
  dao_place place{};
  std::unique_ptr<event_impl> impl;
};

}  // namespace dao::detail
