// Copies in and out of whole memory whose parts the host cannot address
// (CUDA device memory): the driver copies them, on a stream of the rank's
// place (cuMemcpyAsync, which infers the direction from the addresses, so
// the caller's buffer may be host or device memory), and finish() waits
// for them. Gather, scatter, store and load go through it when a storage
// has one (storage::copier()).
#pragma once

#include <cstddef>
#include <memory>

#include "dao/place.h"
#include "resource/stream.hpp"

namespace dao::detail::whole {

class device_copier {
 public:
  // A stream of `place` (throws what its creation throws).
  explicit device_copier(dao_place place);
  ~device_copier();
  device_copier(const device_copier&) = delete;
  device_copier& operator=(const device_copier&) = delete;

  // Queues a copy; the memory on both sides must stay until finish().
  void copy(void* dst, const void* src, std::size_t bytes) { stream_->copy(dst, src, bytes); }
  // Waits for every copy queued (by any thread).
  void finish() { stream_->synchronize(); }
  // Waits, and throws nothing: after a failure, before the caller's
  // buffers may go.
  void finish_quietly() noexcept;

 private:
  std::unique_ptr<stream_impl> stream_;
};

// Runs `queue(copier)` and waits for its copies, also when it throws.
template <class Queue>
void copy_and_wait(device_copier& d, Queue&& queue) {
  try {
    queue(d);
  } catch (...) {
    d.finish_quietly();
    throw;
  }
  d.finish();
}

}  // namespace dao::detail::whole
