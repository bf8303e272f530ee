// Loads the CUDA driver API at run time (see cuda_driver.hpp).
#include "resource/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <exception>
#include <new>

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

constexpr const char* kDefaultLibrary = "libcuda.so.1";

// dlerror() text, or a placeholder: dlerror may return NULL.
std::string last_dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "no error text";
}

// Resolves `name` into `fn`. dlsym gives a void*; POSIX guarantees it can be
// converted to a function pointer.
template <class Fn>
bool resolve(void* handle, const char* name, Fn& fn) {
  dlerror();
  void* sym = dlsym(handle, name);
  if (sym == nullptr) return false;
  fn = reinterpret_cast<Fn>(sym);
  return true;
}

}  // namespace

cuda_driver& cuda_driver::get() noexcept {
  // Never destroyed: resources hold pointers into it until the process ends.
  static cuda_driver* instance = [] {
    cuda_driver* d = new (std::nothrow) cuda_driver();
    if (d != nullptr) d->load();
    return d;
  }();
  if (instance == nullptr) {
    // Not even this object fits in memory: an unavailable driver (holding
    // nothing, see why_unavailable) still lets the process go on.
    static cuda_driver none;
    return none;
  }
  return *instance;
}

void cuda_driver::load() noexcept {
  try {
    load_or_throw();
  } catch (const std::exception& e) {
    available_ = false;
    devices_.clear();
    try {
      reason_ = strprintf("initialisation failed: %s", e.what());
    } catch (...) {
    }
  } catch (...) {
    available_ = false;
    devices_.clear();
  }
}

void cuda_driver::load_or_throw() {
  const char* env = std::getenv("DAO_CUDA_LIBRARY");
  const bool from_env = env != nullptr && *env != '\0';
  library_ = from_env ? env : kDefaultLibrary;

  // RTLD_LOCAL: the driver's symbols must not satisfy anyone else's lookups.
  void* handle = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::string why = last_dl_error();
    reason_ = from_env ? strprintf("%s (from DAO_CUDA_LIBRARY) could not be loaded (dlopen: %s)",
                                   library_.c_str(), why.c_str())
                       : strprintf("%s not found: no NVIDIA driver (dlopen: %s)", library_.c_str(),
                                   why.c_str());
    return;
  }
  // The handle is never closed: see the class comment.

  // Resolves every entry point, remembering the first one that is missing.
  const char* missing = nullptr;
  std::string why;
  auto need = [&](auto& fn, const char* name, const char* fallback = nullptr) {
    if (missing != nullptr || resolve(handle, name, fn)) return;
    why = last_dl_error();
    // Older drivers export only the unversioned name.
    if (fallback != nullptr && resolve(handle, fallback, fn)) return;
    missing = name;
  };
  need(api_.init, "cuInit");
  need(api_.driver_get_version, "cuDriverGetVersion");
  need(api_.device_get_count, "cuDeviceGetCount");
  need(api_.device_get, "cuDeviceGet");
  need(api_.device_get_name, "cuDeviceGetName");
  need(api_.device_total_mem, "cuDeviceTotalMem_v2");
  need(api_.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  need(api_.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  need(api_.ctx_push_current, "cuCtxPushCurrent_v2");
  need(api_.ctx_pop_current, "cuCtxPopCurrent_v2");
  need(api_.mem_alloc, "cuMemAlloc_v2");
  need(api_.mem_free, "cuMemFree_v2");
  need(api_.mem_host_alloc, "cuMemHostAlloc");
  need(api_.mem_free_host, "cuMemFreeHost");
  need(api_.mem_alloc_managed, "cuMemAllocManaged");
  need(api_.mem_get_info, "cuMemGetInfo_v2");
  need(api_.get_error_name, "cuGetErrorName");
  need(api_.get_error_string, "cuGetErrorString");
  need(api_.stream_create, "cuStreamCreate");
  need(api_.stream_destroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  need(api_.stream_synchronize, "cuStreamSynchronize");
  need(api_.stream_query, "cuStreamQuery");
  need(api_.stream_wait_event, "cuStreamWaitEvent");
  need(api_.event_create, "cuEventCreate");
  need(api_.event_destroy, "cuEventDestroy_v2", "cuEventDestroy");
  need(api_.event_record, "cuEventRecord");
  need(api_.event_query, "cuEventQuery");
  need(api_.event_synchronize, "cuEventSynchronize");
  need(api_.memcpy_async, "cuMemcpyAsync");
  need(api_.launch_host_func, "cuLaunchHostFunc");
  // Entry points libdao can do without: a driver that lacks one of a
  // feature's entry points simply does not offer the feature.
  auto optional = [&](auto& fn, const char* name) {
    if (!resolve(handle, name, fn)) fn = nullptr;
  };
  optional(api_.device_get_attribute, "cuDeviceGetAttribute");
  optional(api_.mem_get_allocation_granularity, "cuMemGetAllocationGranularity");
  optional(api_.mem_address_reserve, "cuMemAddressReserve");
  optional(api_.mem_address_free, "cuMemAddressFree");
  optional(api_.mem_create, "cuMemCreate");
  optional(api_.mem_release, "cuMemRelease");
  optional(api_.mem_map, "cuMemMap");
  optional(api_.mem_unmap, "cuMemUnmap");
  optional(api_.mem_set_access, "cuMemSetAccess");
  optional(api_.ctx_synchronize, "cuCtxSynchronize");
  optional(api_.stream_get_id, "cuStreamGetId");
  optional(api_.mem_get_address_range, "cuMemGetAddressRange_v2");
  optional(api_.mem_export_to_shareable_handle, "cuMemExportToShareableHandle");
  optional(api_.mem_import_from_shareable_handle, "cuMemImportFromShareableHandle");
  optional(api_.device_can_access_peer, "cuDeviceCanAccessPeer");
  optional(api_.ctx_enable_peer_access, "cuCtxEnablePeerAccess");
  optional(api_.ipc_get_mem_handle, "cuIpcGetMemHandle");
  optional(api_.ipc_open_mem_handle, "cuIpcOpenMemHandle_v2");
  optional(api_.ipc_close_mem_handle, "cuIpcCloseMemHandle");
  if (missing != nullptr) {
    api_ = cuda_driver_api{};
    reason_ = strprintf("%s lacks %s: the driver is too old or not a CUDA driver (dlsym: %s)",
                        library_.c_str(), missing, why.c_str());
    return;
  }

  if (CUresult r = api_.init(0); r != CUDA_SUCCESS) {
    reason_ = strprintf("cuInit failed: %s", error_text(r).c_str());
    return;
  }
  if (api_.driver_get_version(&version_) != CUDA_SUCCESS) version_ = 0;
  int count = 0;
  if (CUresult r = api_.device_get_count(&count); r != CUDA_SUCCESS) {
    reason_ = strprintf("cuDeviceGetCount failed: %s", error_text(r).c_str());
    return;
  }
  std::vector<cuda_device_info> devices(static_cast<std::size_t>(count > 0 ? count : 0));
  for (int i = 0; i < count; ++i) {
    cuda_device_info& info = devices[static_cast<std::size_t>(i)];
    CUdevice dev = 0;
    char name[256] = {0};
    // The name and size only describe the device; a driver that cannot give
    // them still allocates, so a failure here is not fatal.
    if (api_.device_get(&dev, i) == CUDA_SUCCESS &&
        api_.device_get_name(name, static_cast<int>(sizeof name - 1), dev) == CUDA_SUCCESS) {
      info.name = name;
      if (api_.device_total_mem(&info.total_bytes, dev) != CUDA_SUCCESS) info.total_bytes = 0;
    } else {
      info.name = strprintf("device %d (name unknown)", i);
    }
  }
  contexts_.reset(new std::atomic<CUcontext>[devices.size()]);
  for (std::size_t i = 0; i < devices.size(); ++i) contexts_[i].store(nullptr);
  devices_ = std::move(devices);
  available_ = true;
}

std::string cuda_driver::error_text(CUresult status) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.get_error_name == nullptr || api_.get_error_name(status, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    return strprintf("CUDA error %d", static_cast<int>(status));
  }
  if (api_.get_error_string == nullptr || api_.get_error_string(status, &text) != CUDA_SUCCESS ||
      text == nullptr) {
    return name;
  }
  return strprintf("%s (%s)", name, text);
}

std::string cuda_driver::why_unavailable() const {
  if (!reason_.empty()) return reason_;
  if (available_) return strprintf("the CUDA driver (%s) reports no device", library_.c_str());
  return "the CUDA driver could not be initialised (host memory exhausted)";
}

std::string cuda_driver::summary() const {
  std::string out = version_ > 0 ? strprintf("CUDA driver %d.%d via %s", version_ / 1000,
                                             (version_ % 1000) / 10, library_.c_str())
                                 : strprintf("CUDA driver via %s", library_.c_str());
  out += strprintf(", %d device(s)", device_count());
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    out += i == 0 ? ": " : ", ";
    out += devices_[i].name;
    if (devices_[i].total_bytes != 0) out += " (" + format_bytes(devices_[i].total_bytes) + ")";
  }
  return out;
}

CUcontext cuda_driver::primary_context(int device) {
  std::atomic<CUcontext>& slot = contexts_[static_cast<std::size_t>(device)];
  if (CUcontext ctx = slot.load(std::memory_order_acquire)) return ctx;
  // One retain per device for the whole process, whichever backend asks first.
  std::lock_guard<std::mutex> lock(context_mutex_);
  if (CUcontext ctx = slot.load(std::memory_order_relaxed)) return ctx;
  CUdevice dev = 0;
  CUresult r = api_.device_get(&dev, device);
  CUcontext ctx = nullptr;
  if (r == CUDA_SUCCESS) r = api_.primary_ctx_retain(&ctx, dev);
  if (r != CUDA_SUCCESS || ctx == nullptr) {
    throw backend_error(
        strprintf("cuda:%d: cuDevicePrimaryCtxRetain failed: %s", device, error_text(r).c_str()));
  }
  slot.store(ctx, std::memory_order_release);
  return ctx;
}

}  // namespace dao::detail
