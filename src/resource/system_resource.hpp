// The "primitive" layer: the only code that calls an OS or driver allocator.
// One small interface per place (system_resource) and one per place kind
// (backend), with an implementation per backend: host, SIM, CUDA.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "dao/place.h"

namespace dao::detail {

class stream_impl;
class event_impl;

// Every pointer a system resource hands out is aligned at least this much.
inline constexpr std::size_t kMinAlignment = 256;

struct memory_info {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

// Memory of one place, straight from the OS or driver. Implementations are
// thread safe and live until the process ends.
class system_resource {
 public:
  virtual ~system_resource() = default;

  // Returns `bytes` (> 0) aligned to >= kMinAlignment. Throws out_of_memory
  // when the place has no room (message says how much it has),
  // backend_error when the driver fails otherwise.
  virtual void* allocate(std::size_t bytes) = 0;

  // Gives back what allocate() returned, with the same `bytes`.
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;

  virtual dao_place place() const noexcept = 0;
  virtual memory_info info() const = 0;

  // Whether host code may read and write this memory directly.
  virtual bool host_accessible() const noexcept = 0;

  // --- streams and events of this place (see resource/stream.hpp) ---
  // The defaults run everything at once on the calling thread (the CPU
  // place's synchronous stream).
  virtual std::unique_ptr<stream_impl> create_stream();
  // Adopts a native stream (CUstream); throws unsupported where there is none.
  virtual std::unique_ptr<stream_impl> wrap_stream(void* native);
  virtual std::unique_ptr<event_impl> create_event();

  // --- virtual memory: reserve addresses, then map and unmap memory in them.
  // Lets the caching strategy grow one contiguous arena instead of carving
  // separate segments (no fragmentation across segments). Resources without
  // it keep the defaults (granularity 0: not supported).
  virtual std::size_t map_granularity() const noexcept { return 0; }
  // The page size the memory is backed with when larger than the
  // granularity (host memory in transparent huge pages), else 0. Giving back
  // part of such a page splits it into small pages for good: callers that
  // can choose what to unmap prefer whole ones.
  virtual std::size_t large_page_size() const noexcept { return 0; }
  // Reserves `bytes` (a multiple of the granularity) of addresses, mapping
  // nothing; costs no memory. Throws out_of_memory / backend_error.
  virtual void* reserve_addresses(std::size_t bytes);
  virtual void release_addresses(void* base, std::size_t bytes) noexcept;
  // Backs [addr, addr+bytes) (granularity-aligned, inside a reservation)
  // with memory. Throws out_of_memory when the place is full; maps nothing
  // then.
  virtual void map(void* addr, std::size_t bytes);
  virtual void unmap(void* addr, std::size_t bytes) noexcept;
};

// All places of one kind: counts devices and hands out their resources.
class backend {
 public:
  virtual ~backend() = default;

  // Number of devices; 0 when the backend is unavailable (see description()).
  // May throw invalid_argument when its configuration is malformed.
  virtual int device_count() = 0;

  // One line on what serves this kind, or why nothing does.
  virtual std::string description() = 0;

  // The resource of `device` (0 <= device < device_count()). Throws no_device
  // with the reason otherwise.
  virtual system_resource& resource(int device) = 0;
};

// A kind exactly as a C caller passed it. C may pass any int in an enum, but
// C++ must not load an enum holding a value outside its enumerators, so the
// C API reads kinds as plain ints through this and validates them.
inline int raw_kind(const dao_place_kind& kind) noexcept {
  static_assert(sizeof(dao_place_kind) == sizeof(int), "dao_place_kind is int-sized");
  int value;
  std::memcpy(&value, &kind, sizeof value);
  return value;
}

// Backends by kind (src/resource/*.cpp). Each is a process-lifetime singleton.
backend& host_backend();
backend& sim_backend();
backend& cuda_device_backend();
backend& cuda_pinned_backend();
backend& cuda_managed_backend();

// The backend of a kind; throws invalid_argument for an unknown kind.
backend& backend_for(int kind);

// "cpu", "cuda", ... for a valid kind, "unknown" otherwise.
const char* kind_name(int kind) noexcept;

// Checks the place (kind known, device index valid and present) and returns
// its resource. Throws invalid_argument or no_device with a clear message.
system_resource& resource_for(dao_place place);

// "cpu", "sim:1", "cuda:0", ...
std::string place_to_string(dao_place place);

}  // namespace dao::detail
