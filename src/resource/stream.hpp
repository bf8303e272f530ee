// Streams and events below the C API: each backend implements stream_impl
// and event_impl (SIM: a worker thread per stream; CUDA: CUstream/CUevent;
// CPU: run at once). The handles that the C API gives out wrap them; the
// strategy layer uses them too (stream-ordered reuse polls events).
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

// The handles given to C callers. Defined here (not in the C API layer) so
// that strategies can reach a stream's implementation. The implementation is
// shared so that an allocator can hold a weak reference: whether the stream
// still lives, and if so waiting for it, without touching a destroyed handle.
struct dao_stream_st {
  static constexpr std::uint64_t kMagic = 0x64616f7374726d00ull;  // "daostrm"
  std::uint64_t magic = kMagic;
  std::uint64_t id = dao::detail::next_stream_id();
  dao_place place{};
  std::shared_ptr<dao::detail::stream_impl> impl;
};

struct dao_event_st {
  static constexpr std::uint64_t kMagic = 0x64616f6576656e74ull;  // "daoevent"
  std::uint64_t magic = kMagic;
  dao_place place{};
  std::unique_ptr<dao::detail::event_impl> impl;
};

namespace dao::detail {

// Checks a caller's handle; throws invalid_argument naming `function` when
// it is NULL or not a live handle of that type.
dao_stream_st& checked_stream(dao_stream s, const char* function);
dao_event_st& checked_event(dao_event e, const char* function);

}  // namespace dao::detail
