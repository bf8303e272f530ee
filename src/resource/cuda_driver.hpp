// The CUDA driver API, loaded at run time with dlopen so that one libdao
// binary works with and without an NVIDIA driver and has no link-time
// dependency on CUDA. The types and constants come from cuda_api.h, the
// private copy of the few driver API declarations used, so no CUDA toolkit is
// needed to build either.
#pragma once

#include "resource/cuda_api.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dao::detail {

// The entry points libdao calls, resolved by their versioned names (cuda.h
// #defines several names to their _v2 forms; these members are named
// differently on purpose so such macros could not touch them).
struct cuda_driver_api {
  CUresult (*init)(unsigned int flags) = nullptr;
  CUresult (*driver_get_version)(int* version) = nullptr;
  CUresult (*device_get_count)(int* count) = nullptr;
  CUresult (*device_get)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*device_get_name)(char* name, int len, CUdevice device) = nullptr;
  CUresult (*device_total_mem)(std::size_t* bytes, CUdevice device) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext* ctx, CUdevice device) = nullptr;
  // Resolved but not called: libdao keeps the primary contexts it retains
  // until the process ends, when the driver reclaims them.
  CUresult (*primary_ctx_release)(CUdevice device) = nullptr;
  CUresult (*ctx_push_current)(CUcontext ctx) = nullptr;
  CUresult (*ctx_pop_current)(CUcontext* ctx) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr* ptr, std::size_t bytes) = nullptr;
  CUresult (*mem_free)(CUdeviceptr ptr) = nullptr;
  CUresult (*mem_host_alloc)(void** ptr, std::size_t bytes, unsigned int flags) = nullptr;
  CUresult (*mem_free_host)(void* ptr) = nullptr;
  CUresult (*mem_alloc_managed)(CUdeviceptr* ptr, std::size_t bytes, unsigned int flags) = nullptr;
  CUresult (*mem_get_info)(std::size_t* free_bytes, std::size_t* total_bytes) = nullptr;
  CUresult (*get_error_name)(CUresult error, const char** name) = nullptr;
  CUresult (*get_error_string)(CUresult error, const char** text) = nullptr;
  // Streams and events (resource/cuda_stream.cpp).
  CUresult (*stream_create)(CUstream* stream, unsigned int flags) = nullptr;
  CUresult (*stream_destroy)(CUstream stream) = nullptr;
  CUresult (*stream_synchronize)(CUstream stream) = nullptr;
  CUresult (*stream_query)(CUstream stream) = nullptr;
  CUresult (*stream_wait_event)(CUstream stream, CUevent event, unsigned int flags) = nullptr;
  CUresult (*event_create)(CUevent* event, unsigned int flags) = nullptr;
  CUresult (*event_destroy)(CUevent event) = nullptr;
  CUresult (*event_record)(CUevent event, CUstream stream) = nullptr;
  CUresult (*event_query)(CUevent event) = nullptr;
  CUresult (*event_synchronize)(CUevent event) = nullptr;
  CUresult (*memcpy_async)(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                           CUstream stream) = nullptr;
  CUresult (*launch_host_func)(CUstream stream, CUhostFn fn, void* user_data) = nullptr;

  // Optional (nullptr when the driver lacks them): virtual memory management,
  // for the expandable segments of device memory (resource/cuda.cpp). Without
  // them the device resource reports map granularity 0.
  CUresult (*device_get_attribute)(int* value, CUdevice_attribute attribute,
                                   CUdevice device) = nullptr;
  CUresult (*mem_get_allocation_granularity)(std::size_t* granularity,
                                             const CUmemAllocationProp* prop,
                                             CUmemAllocationGranularity_flags option) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr* ptr, std::size_t bytes, std::size_t alignment,
                                  CUdeviceptr addr, unsigned long long flags) = nullptr;
  CUresult (*mem_address_free)(CUdeviceptr ptr, std::size_t bytes) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                         const CUmemAllocationProp* prop, unsigned long long flags) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle handle) = nullptr;
  CUresult (*mem_map)(CUdeviceptr ptr, std::size_t bytes, std::size_t offset,
                      CUmemGenericAllocationHandle handle, unsigned long long flags) = nullptr;
  CUresult (*mem_unmap)(CUdeviceptr ptr, std::size_t bytes) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr ptr, std::size_t bytes, const CUmemAccessDesc* desc,
                             std::size_t count) = nullptr;
  // Unlike cuMemFree, cuMemUnmap does not wait for work still using the
  // memory: unmapping synchronizes the context first.
  CUresult (*ctx_synchronize)() = nullptr;
  // Optional (CUDA 12.0 and later): a stream's number, unique in its
  // context for the life of the process, so that a stream handle whose value
  // a new stream reuses is told apart (resource/cuda.cpp, the interop cache).
  CUresult (*stream_get_id)(CUstream stream, unsigned long long* id) = nullptr;
  // Optional: peer access between devices and interprocess memory (CUDA
  // IPC), for partitioned memory on devices (src/whole). Without them the
  // device resource reports that it cannot share memory so.
  CUresult (*mem_get_address_range)(CUdeviceptr* base, std::size_t* bytes,
                                    CUdeviceptr ptr) = nullptr;
  CUresult (*device_can_access_peer)(int* can, CUdevice device, CUdevice peer) = nullptr;
  CUresult (*ctx_enable_peer_access)(CUcontext peer, unsigned int flags) = nullptr;
  CUresult (*ipc_get_mem_handle)(CUipcMemHandle* handle, CUdeviceptr ptr) = nullptr;
  CUresult (*ipc_open_mem_handle)(CUdeviceptr* ptr, CUipcMemHandle handle,
                                  unsigned int flags) = nullptr;
  CUresult (*ipc_close_mem_handle)(CUdeviceptr ptr) = nullptr;

  // Optional: virtual memory exported to other processes as POSIX file
  // descriptors (continuous whole memory between processes).
  CUresult (*mem_export_to_shareable_handle)(void* shareable, CUmemGenericAllocationHandle handle,
                                             CUmemAllocationHandleType type,
                                             unsigned long long flags) = nullptr;
  CUresult (*mem_import_from_shareable_handle)(CUmemGenericAllocationHandle* handle,
                                               void* os_handle,
                                               CUmemAllocationHandleType type) = nullptr;
  bool has_shareable_handles() const noexcept {
    return has_virtual_memory() && mem_export_to_shareable_handle != nullptr &&
           mem_import_from_shareable_handle != nullptr;
  }

  bool has_peer_access() const noexcept {
    return device_can_access_peer != nullptr && ctx_enable_peer_access != nullptr;
  }
  bool has_ipc() const noexcept {
    return mem_get_address_range != nullptr && ipc_get_mem_handle != nullptr &&
           ipc_open_mem_handle != nullptr && ipc_close_mem_handle != nullptr;
  }

  // Every virtual memory entry point above was found.
  bool has_virtual_memory() const noexcept {
    return device_get_attribute != nullptr && mem_get_allocation_granularity != nullptr &&
           mem_address_reserve != nullptr && mem_address_free != nullptr && mem_create != nullptr &&
           mem_release != nullptr && mem_map != nullptr && mem_unmap != nullptr &&
           mem_set_access != nullptr && ctx_synchronize != nullptr;
  }
};

struct cuda_device_info {
  std::string name;
  std::size_t total_bytes = 0;
};

// The process's one view of the driver. Loaded and initialised on the first
// call of cuda_driver::get(); libcuda is never unloaded, because the memory
// and contexts it hands out are used until the process ends.
class cuda_driver {
 public:
  // Loads the library named by DAO_CUDA_LIBRARY, else "libcuda.so.1", and
  // calls cuInit once. Thread safe. Never throws: a failure is recorded and
  // available() is then false.
  static cuda_driver& get() noexcept;

  // The library loaded, every entry point found, and cuInit succeeded.
  bool available() const noexcept { return available_; }
  // Why available() is false, e.g. "libcuda.so.1 not found: no NVIDIA
  // driver (dlopen: ...)"; empty when it is true.
  const std::string& reason() const noexcept { return reason_; }
  // The name or path given to dlopen.
  const std::string& library() const noexcept { return library_; }
  // cuDriverGetVersion, e.g. 13000 for 13.0; 0 when unknown.
  int version() const noexcept { return version_; }
  // Devices the driver reports; empty when not available.
  const std::vector<cuda_device_info>& devices() const noexcept { return devices_; }
  int device_count() const noexcept { return static_cast<int>(devices_.size()); }
  const cuda_driver_api& api() const noexcept { return api_; }

  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or the number when the driver
  // does not know it.
  std::string error_text(CUresult status) const;

  // Why there is no device: reason(), or that the driver reports none.
  std::string why_unavailable() const;

  // "CUDA driver 13.0 via libcuda.so.1, 1 device(s): NVIDIA H100 (79.1 GiB)"
  std::string summary() const;

  // The primary context of `device` (0 <= device < device_count()), retained
  // on first use and kept until exit. Throws backend_error when the driver
  // refuses it; a later call tries again.
  CUcontext primary_context(int device);
  // The context primary_context() retained, or nullptr if none yet.
  CUcontext retained_context(int device) const noexcept {
    return contexts_[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
  }

 private:
  cuda_driver() = default;
  void load() noexcept;
  void load_or_throw();

  bool available_ = false;
  std::string reason_;
  std::string library_;
  int version_ = 0;
  std::vector<cuda_device_info> devices_;
  cuda_driver_api api_;

  std::mutex context_mutex_;
  std::unique_ptr<std::atomic<CUcontext>[]> contexts_;
};

// Makes a context current on this thread for a scope, then restores the
// caller's one, so libdao never changes which context its caller sees.
class cuda_context_scope {
 public:
  cuda_context_scope(const cuda_driver& driver, CUcontext ctx) noexcept
      : driver_(driver), status_(driver.api().ctx_push_current(ctx)) {}
  ~cuda_context_scope() {
    if (status_ == CUDA_SUCCESS) {
      CUcontext popped = nullptr;
      driver_.api().ctx_pop_current(&popped);
    }
  }
  cuda_context_scope(const cuda_context_scope&) = delete;
  cuda_context_scope& operator=(const cuda_context_scope&) = delete;

  // CUDA_SUCCESS when the context was pushed.
  CUresult status() const noexcept { return status_; }

 private:
  const cuda_driver& driver_;
  CUresult status_;
};

}  // namespace dao::detail
