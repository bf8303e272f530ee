// The "primitive" layer: the only code that calls an OS or driver allocator.
// One small interface per place (system_resource) and one per place kind
// (backend), with an implementation per backend: host, SIM, CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "dao/place.h"
#include "resource/memory_source.hpp"
#include "util/raw_enum.hpp"

namespace dao::detail {

class stream_impl;
class event_impl;

// Memory of a place named for another process of the node, which maps it
// with system_resource::import_memory() (CUDA: an IPC handle and the offset
// in its allocation). Plain bytes of a fixed size, so that the ranks of a
// group can trade them with one allgather.
struct exported_memory {
  unsigned char bytes[128];
};

// Memory of one place, straight from the OS or driver: the bottom of every
// stack of memory sources. Implementations are thread safe and live until
// the process ends. They also make the place's streams and events.
class system_resource : public memory_source {
 public:
  system_resource& resource() noexcept final { return *this; }

  // --- streams and events of this place (see resource/stream.hpp) ---
  // The defaults run everything at once on the calling thread (the CPU
  // place's synchronous stream).
  virtual std::unique_ptr<stream_impl> create_stream();
  // Adopts a native stream (CUstream); throws unsupported where there is none.
  virtual std::unique_ptr<stream_impl> wrap_stream(void* native);
  virtual std::unique_ptr<event_impl> create_event();
  // A number that names the native stream `native` (not NULL) as long as it
  // lives, different from that of any stream destroyed before, even one whose
  // handle value it reuses (CUDA: cuStreamGetId). 0 where the backend cannot
  // tell (a driver older than CUDA 12.0). Throws invalid_argument when the
  // driver refuses the handle (a destroyed stream), unsupported where the
  // place has no native streams.
  virtual std::uint64_t native_stream_identity(void* native);
  // Waits until all work queued on every stream of this place's device has
  // run, also streams that libdao has no handle of (CUDA: cuCtxSynchronize
  // of the primary context). The default waits for nothing: the place runs
  // work at once.
  virtual void synchronize_device();

  // --- sharing device memory (partitioned memory, src/whole) ---
  // Whether code on this place's device can address memory of `other`'s
  // device directly once enable_peer_access() ran (CUDA:
  // cuDeviceCanAccessPeer); always for the same device. `why` gets the
  // reason when not. The default: only the same place.
  virtual bool can_access_peer(system_resource& other, std::string& why);
  // Lets this place's device address `other`'s memory (CUDA:
  // cuCtxEnablePeerAccess; access already enabled is fine). For the life of
  // the process. Throws unsupported when can_access_peer() is false,
  // backend_error when the driver fails.
  virtual void enable_peer_access(system_resource& other);
  // Lets `other`'s device read and write [addr, addr + bytes), which map()
  // of this resource mapped (CUDA: cuMemSetAccess for other's device; the
  // device of map() itself has access already). Throws unsupported where
  // the place cannot (the default, except for `other` == this),
  // backend_error when the driver fails.
  virtual void grant_access(void* addr, std::size_t bytes, system_resource& other);
  // Virtual memory other processes map too (continuous whole memory between
  // processes). map_exportable() maps fresh memory at [addr, addr + bytes),
  // as map() does, and names it in `out` for the processes of the node
  // (CUDA: a POSIX file descriptor of cuMemExportToShareableHandle, kept
  // open in this process until end_export()); map_imported() maps there
  // what another process named so (a copy of its descriptor, taken with
  // pidfd_getfd); unmap() undoes either. Throw unsupported where the place
  // cannot (the defaults), out_of_memory, backend_error.
  virtual void map_exportable(void* addr, std::size_t bytes, exported_memory& out);
  virtual void map_imported(void* addr, std::size_t bytes, const exported_memory& in);
  // Closes what map_exportable() kept open for the importers, once every
  // importer has mapped it (the mappings stay).
  virtual void end_export(exported_memory& out) noexcept;
  // Names [p, p + bytes), memory this resource allocated, for another
  // process of the node (CUDA: cuIpcGetMemHandle of the allocation holding
  // p, and p's offset in it). Throws unsupported where the place cannot
  // (the default), backend_error when the driver fails.
  virtual void export_memory(void* p, std::size_t bytes, exported_memory& out);
  // Maps memory another process exported into this process, in this
  // place's context; returns its first byte here. Throws unsupported (the
  // default), backend_error.
  virtual void* import_memory(const exported_memory& in);
  // Unmaps what import_memory(in) returned (`p`).
  virtual void close_imported(void* p, const exported_memory& in) noexcept;
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

// A kind exactly as a C caller passed it (util/raw_enum.hpp says why).
inline int raw_kind(const dao_place_kind& kind) noexcept { return raw_enum(kind); }

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
