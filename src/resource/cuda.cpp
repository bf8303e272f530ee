// The CUDA backends: device memory, pinned host memory and managed memory,
// each allocated in a device's primary context through the driver API that
// cuda_driver loads at run time.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "resource/fault_injection.hpp"
#include "resource/cuda_driver.hpp"
#include "resource/cuda_stream.hpp"
#include "resource/host.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// The three kinds share everything but the driver calls and what info()
// reports.
enum class cuda_memory { device, pinned, managed };

dao_place_kind place_kind(cuda_memory kind) noexcept {
  switch (kind) {
    case cuda_memory::device: return DAO_PLACE_CUDA;
    case cuda_memory::pinned: return DAO_PLACE_CUDA_PINNED;
    case cuda_memory::managed: return DAO_PLACE_CUDA_MANAGED;
  }
  return DAO_PLACE_CUDA;
}

const char* alloc_call(cuda_memory kind) noexcept {
  switch (kind) {
    case cuda_memory::device: return "cuMemAlloc";
    case cuda_memory::pinned: return "cuMemHostAlloc";
    case cuda_memory::managed: return "cuMemAllocManaged";
  }
  return "cuMemAlloc";
}

class cuda_resource final : public system_resource {
 public:
  // `device` is the place's device; pinned memory lives in device 0's context.
  cuda_resource(cuda_driver& driver, cuda_memory kind, int device)
      : driver_(driver), kind_(kind), device_(device) {}

  void* allocate(std::size_t bytes) override {
    if (faults::inject(faults::alloc))
      faults::raise_fault(faults::alloc, place_to_string(place()) + ": allocate");
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    const cuda_driver_api& api = driver_.api();
    void* p = nullptr;
    CUdeviceptr dptr = 0;
    CUresult r = CUDA_SUCCESS;
    switch (kind_) {
      case cuda_memory::device:
        r = api.mem_alloc(&dptr, bytes);
        p = reinterpret_cast<void*>(static_cast<std::uintptr_t>(dptr));
        break;
      case cuda_memory::pinned:
        // Portable: usable from every context, not only device 0's.
        r = api.mem_host_alloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
        break;
      case cuda_memory::managed:
        r = api.mem_alloc_managed(&dptr, bytes, CU_MEM_ATTACH_GLOBAL);
        p = reinterpret_cast<void*>(static_cast<std::uintptr_t>(dptr));
        break;
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw out_of_memory(oom_message(bytes, "allocate", alloc_call(kind_)));
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: %s(%s) failed: %s", name().c_str(), alloc_call(kind_),
                                    format_bytes(bytes).c_str(), driver_.error_text(r).c_str()));
    }
    // The driver promises more than this; a pointer that breaks libdao's
    // promise must not reach the caller.
    if (reinterpret_cast<std::uintptr_t>(p) % kMinAlignment != 0) {
      release(p);
      throw backend_error(strprintf("%s: %s(%s) returned %p, not aligned to %zu bytes",
                                    name().c_str(), alloc_call(kind_), format_bytes(bytes).c_str(),
                                    p, kMinAlignment));
    }
    return p;
  }

  void deallocate(void* p, std::size_t) noexcept override {
    // p came from allocate(), which retained the context.
    CUcontext ctx = driver_.retained_context(device_);
    if (p == nullptr || ctx == nullptr) return;
    cuda_context_scope scope(driver_, ctx);
    // Nothing to report to: a failure here means the context is already gone
    // (process teardown), and the memory went with it.
    if (scope.status() == CUDA_SUCCESS) release(p);
  }

  dao_place place() const noexcept override {
    return dao_place{place_kind(kind_), kind_ == cuda_memory::pinned ? 0 : device_};
  }

  memory_info info() const override {
    if (kind_ == cuda_memory::pinned)
      return memory_info{host_available_memory(), host_total_memory()};
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    std::size_t free_bytes = 0, total_bytes = 0;
    CUresult r = scope.status();
    if (r == CUDA_SUCCESS) r = driver_.api().mem_get_info(&free_bytes, &total_bytes);
    if (r != CUDA_SUCCESS) {
      throw backend_error(
          strprintf("%s: cuMemGetInfo failed: %s", name().c_str(), driver_.error_text(r).c_str()));
    }
    return memory_info{free_bytes, total_bytes};
  }

  bool host_accessible() const noexcept override { return kind_ != cuda_memory::device; }

  std::unique_ptr<stream_impl> create_stream() override {
    return make_cuda_stream(driver_, driver_.primary_context(device_), name());
  }
  std::unique_ptr<stream_impl> wrap_stream(void* native) override {
    return wrap_cuda_stream(driver_, driver_.primary_context(device_),
                            static_cast<CUstream>(native), name());
  }
  std::unique_ptr<event_impl> create_event() override {
    return make_cuda_event(driver_, driver_.primary_context(device_), name());
  }
  std::uint64_t native_stream_identity(void* native) override {
    if (driver_.api().stream_get_id == nullptr) return 0;
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    unsigned long long id = 0;
    CUresult r = scope.status();
    if (r == CUDA_SUCCESS) r = driver_.api().stream_get_id(static_cast<CUstream>(native), &id);
    if (r != CUDA_SUCCESS) {
      throw invalid_argument(
          strprintf("%s: stream %p is not a live CUDA stream (cuStreamGetId: %s)", name().c_str(),
                    native, driver_.error_text(r).c_str()));
    }
    return static_cast<std::uint64_t>(id) + 1;  // never 0, which means "cannot tell"
  }
  void synchronize_device() override {
    if (driver_.api().ctx_synchronize == nullptr) return;  // checked: every driver has it
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    CUresult r = scope.status();
    if (r == CUDA_SUCCESS) r = driver_.api().ctx_synchronize();
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuCtxSynchronize failed: %s", name().c_str(),
                                    driver_.error_text(r).c_str()));
    }
  }

  // --- virtual memory, device memory only (the driver's virtual memory
  // management API). Each map() call is one physical allocation with one
  // mapping and one access call: the driver charges per physical allocation
  // (cuMemSetAccess over 64 granules of 2 MiB costs 64 times one), so the
  // caching strategy maps large pieces and unmaps exactly what one call
  // mapped, which is all cuMemUnmap accepts (unmaps_in_part() is false).
  std::size_t map_granularity() const noexcept override {
    if (kind_ != cuda_memory::device) return 0;
    std::size_t g = granularity_.load(std::memory_order_acquire);
    if (g != kGranularityUnknown) return g;
    bool final_answer = true;
    g = query_granularity(final_answer);
    if (final_answer) granularity_.store(g, std::memory_order_release);
    return g;
  }

  void* reserve_addresses(std::size_t bytes) override {
    const std::size_t g = map_granularity();
    if (g == 0) return system_resource::reserve_addresses(bytes);  // throws unsupported
    if (bytes == 0 || bytes % g != 0) {
      throw invalid_argument(strprintf("%s: cannot reserve %zu bytes of addresses: not a "
                                       "positive multiple of the granularity (%s)",
                                       name().c_str(), bytes, format_bytes(g).c_str()));
    }
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    const cuda_driver_api& api = driver_.api();
    CUdeviceptr base = 0;
    CUresult r = api.mem_address_reserve(&base, bytes, g, 0, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      throw out_of_memory(strprintf("%s: out of address space: could not reserve %s "
                                    "(cuMemAddressReserve: %s)",
                                    name().c_str(), format_bytes(bytes).c_str(),
                                    driver_.error_text(r).c_str()));
    }
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuMemAddressReserve(%s) failed: %s", name().c_str(),
                                    format_bytes(bytes).c_str(), driver_.error_text(r).c_str()));
    }
    if (base % g != 0) {
      api.mem_address_free(base, bytes);
      throw backend_error(strprintf("%s: cuMemAddressReserve(%s) returned %p, not aligned to "
                                    "the granularity (%s)",
                                    name().c_str(), format_bytes(bytes).c_str(), to_pointer(base),
                                    format_bytes(g).c_str()));
    }
    return to_pointer(base);
  }

  void release_addresses(void* base, std::size_t bytes) noexcept override {
    // base came from reserve_addresses(), which retained the context.
    CUcontext ctx = driver_.retained_context(device_);
    if (kind_ != cuda_memory::device || base == nullptr || ctx == nullptr) return;
    cuda_context_scope scope(driver_, ctx);
    if (scope.status() == CUDA_SUCCESS) driver_.api().mem_address_free(to_device(base), bytes);
  }

  void map(void* addr, std::size_t bytes) override {
    if (faults::inject(faults::map))
      faults::raise_fault(faults::map, place_to_string(place()) + ": map");
    const std::size_t g = map_granularity();
    if (g == 0) return system_resource::map(addr, bytes);  // throws unsupported
    const CUdeviceptr base = to_device(addr);
    if (base % g != 0 || bytes % g != 0) {
      throw invalid_argument(strprintf("%s: cannot map %zu bytes at %p: not aligned to the "
                                       "granularity (%s)",
                                       name().c_str(), bytes, addr, format_bytes(g).c_str()));
    }
    if (bytes == 0) return;
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    const cuda_driver_api& api = driver_.api();
    const CUmemAllocationProp prop = allocation_prop();
    CUmemGenericAllocationHandle handle = 0;
    const char* call = "cuMemCreate";
    CUresult r = api.mem_create(&handle, bytes, &prop, 0);
    if (r == CUDA_SUCCESS) {
      r = map_for_this_device(base, bytes, handle, call);
      if (r == CUDA_SUCCESS) return;
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) throw out_of_memory(oom_message(bytes, "map", call));
    throw backend_error(strprintf("%s: %s failed while mapping %s at %p: %s", name().c_str(), call,
                                  format_bytes(bytes).c_str(), addr,
                                  driver_.error_text(r).c_str()));
  }

  void unmap(void* addr, std::size_t bytes) noexcept override {
    // Only what map() mapped, so the granularity is known and the context
    // retained.
    const std::size_t g = granularity_.load(std::memory_order_acquire);
    CUcontext ctx = driver_.retained_context(device_);
    if (kind_ != cuda_memory::device || g == 0 || g == kGranularityUnknown || ctx == nullptr)
      return;
    cuda_context_scope scope(driver_, ctx);
    // Nothing to report to: a failure means the context is gone (teardown).
    if (scope.status() != CUDA_SUCCESS) return;
    // Work queued before the free may still use these pages, and unlike
    // cuMemFree, cuMemUnmap does not wait for it (PyTorch's expandable
    // segments synchronize here too). A failed synchronize leaves the
    // context unusable anyway: unmap regardless.
    driver_.api().ctx_synchronize();
    driver_.api().mem_unmap(to_device(addr), bytes);
  }

  bool unmaps_in_part() const noexcept override { return false; }

  // --- sharing device memory (partitioned memory, src/whole) ---
  bool can_access_peer(system_resource& other, std::string& why) override {
    if (&other == this) return true;
    auto* peer = dynamic_cast<cuda_resource*>(&other);
    if (kind_ != cuda_memory::device || peer == nullptr || peer->kind_ != cuda_memory::device) {
      return system_resource::can_access_peer(other, why);
    }
    const cuda_driver_api& api = driver_.api();
    if (!api.has_peer_access()) {
      why = strprintf("the CUDA driver (%s) has no peer access entry points "
                      "(cuDeviceCanAccessPeer, cuCtxEnablePeerAccess)",
                      driver_.library().c_str());
      return false;
    }
    CUdevice dev = 0, peer_dev = 0;
    int can = 0;
    CUresult r = api.device_get(&dev, device_);
    if (r == CUDA_SUCCESS) r = api.device_get(&peer_dev, peer->device_);
    if (r == CUDA_SUCCESS) r = api.device_can_access_peer(&can, dev, peer_dev);
    if (r != CUDA_SUCCESS) {
      why = strprintf("cuDeviceCanAccessPeer(cuda:%d, cuda:%d) failed: %s", device_, peer->device_,
                      driver_.error_text(r).c_str());
      return false;
    }
    if (can == 0) {
      why = strprintf("cuda:%d cannot address memory of cuda:%d directly "
                      "(cuDeviceCanAccessPeer: no peer access between these two devices, e.g. "
                      "no NVLink or PCIe peer-to-peer path between them)",
                      device_, peer->device_);
      return false;
    }
    return true;
  }

  void enable_peer_access(system_resource& other) override {
    std::string why;
    if (!can_access_peer(other, why)) throw unsupported(why);
    if (&other == this) return;
    auto& peer = static_cast<cuda_resource&>(other);
    if (peer.device_ == device_) return;
    CUcontext peer_ctx = driver_.primary_context(peer.device_);
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    const CUresult r = driver_.api().ctx_enable_peer_access(peer_ctx, 0);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return;
    if (r == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) {
      throw unsupported(strprintf("cuda:%d cannot address memory of cuda:%d directly "
                                  "(cuCtxEnablePeerAccess: %s)",
                                  device_, peer.device_, driver_.error_text(r).c_str()));
    }
    throw backend_error(strprintf("cuda:%d: cuCtxEnablePeerAccess(cuda:%d) failed: %s", device_,
                                  peer.device_, driver_.error_text(r).c_str()));
  }

  // Memory map() mapped is readable and writable by this device only; a
  // range over several devices (continuous whole memory) needs the others
  // too, which takes peer access between the two devices.
  void grant_access(void* addr, std::size_t bytes, system_resource& other) override {
    if (&other == this) return;
    auto* peer = dynamic_cast<cuda_resource*>(&other);
    if (kind_ != cuda_memory::device || peer == nullptr || peer->kind_ != cuda_memory::device)
      return system_resource::grant_access(addr, bytes, other);
    if (peer->device_ == device_ || bytes == 0) return;
    std::string why;
    if (!peer->can_access_peer(*this, why)) throw unsupported(why);
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = peer->device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult r = driver_.api().mem_set_access(to_device(addr), bytes, &access, 1);
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuMemSetAccess(%s at %p, for cuda:%d) failed: %s",
                                    name().c_str(), format_bytes(bytes).c_str(), addr,
                                    peer->device_, driver_.error_text(r).c_str()));
    }
  }

  // Virtual memory for other processes: one cuMemCreate with a POSIX file
  // descriptor as its shareable handle, mapped here like map() does; the
  // descriptor stays open until end_export(), for the importers to copy it
  // (pidfd_getfd: a descriptor means nothing in another process).
  void map_exportable(void* addr, std::size_t bytes, exported_memory& out) override {
    const CUdeviceptr base = check_shareable(addr, bytes);
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    const cuda_driver_api& api = driver_.api();
    CUmemAllocationProp prop = allocation_prop();
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = api.mem_create(&handle, bytes, &prop, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw out_of_memory(oom_message(bytes, "map", "cuMemCreate"));
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuMemCreate(%s, exportable) failed: %s", name().c_str(),
                                    format_bytes(bytes).c_str(), driver_.error_text(r).c_str()));
    }
    int fd = -1;
    r = api.mem_export_to_shareable_handle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                           0);
    if (r != CUDA_SUCCESS) {
      api.mem_release(handle);
      throw backend_error(strprintf("%s: cuMemExportToShareableHandle failed: %s", name().c_str(),
                                    driver_.error_text(r).c_str()));
    }
    try {
      map_handle(base, bytes, handle, "exported");
    } catch (...) {
      ::close(fd);
      throw;
    }
    fd_record rec{};
    rec.process = static_cast<std::uint64_t>(::getpid());
    rec.fd = fd;
    rec.bytes = bytes;
    std::memset(out.bytes, 0, sizeof out.bytes);
    std::memcpy(out.bytes, &rec, sizeof rec);
  }

  void map_imported(void* addr, std::size_t bytes, const exported_memory& in) override {
    const CUdeviceptr base = check_shareable(addr, bytes);
    fd_record rec{};
    std::memcpy(&rec, in.bytes, sizeof rec);
    if (rec.bytes != bytes) {
      throw backend_error(strprintf("%s: the exported memory has %llu bytes, %zu expected",
                                    name().c_str(), static_cast<unsigned long long>(rec.bytes),
                                    bytes));
    }
    // A copy of the exporter's descriptor (Linux 5.6 and later; the same
    // permission as tracing the process: one user, one node).
    const int pidfd =
        static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(rec.process), 0));
    int fd = -1;
    int err = 0;
    if (pidfd >= 0) {
      fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, rec.fd, 0));
      if (fd < 0) err = errno;
      ::close(pidfd);
    } else {
      err = errno;
    }
    if (fd < 0) {
      throw backend_error(strprintf(
          "%s: cannot take process %llu's descriptor %d of its device memory (%s: %s); mapping "
          "another process's memory needs Linux 5.6 or later, both processes on this node and "
          "permission to trace it",
          name().c_str(), static_cast<unsigned long long>(rec.process), rec.fd,
          pidfd < 0 ? "pidfd_open" : "pidfd_getfd", std::strerror(err)));
    }
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    if (scope.status() != CUDA_SUCCESS) ::close(fd);
    check_pushed(scope);
    const cuda_driver_api& api = driver_.api();
    CUmemGenericAllocationHandle handle = 0;
    const CUresult r = api.mem_import_from_shareable_handle(
        &handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ::close(fd);
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuMemImportFromShareableHandle (process %llu) failed: %s",
                                    name().c_str(), static_cast<unsigned long long>(rec.process),
                                    driver_.error_text(r).c_str()));
    }
    map_handle(base, bytes, handle, "imported");
  }

  void end_export(exported_memory& out) noexcept override {
    fd_record rec{};
    std::memcpy(&rec, out.bytes, sizeof rec);
    if (rec.fd < 0 || rec.process != static_cast<std::uint64_t>(::getpid())) return;
    ::close(rec.fd);
    rec.fd = -1;
    std::memcpy(out.bytes, &rec, sizeof rec);
  }

  // The IPC handle names the whole cuMemAlloc allocation that holds p (the
  // part may sit inside a larger one), so the record carries p's offset in
  // it, found with cuMemGetAddressRange.
  void export_memory(void* p, std::size_t bytes, exported_memory& out) override {
    if (kind_ != cuda_memory::device) return system_resource::export_memory(p, bytes, out);
    const cuda_driver_api& api = driver_.api();
    if (!api.has_ipc()) {
      throw unsupported(strprintf("%s: the CUDA driver (%s) has no interprocess memory entry "
                                  "points (cuIpcGetMemHandle, cuIpcOpenMemHandle)",
                                  name().c_str(), driver_.library().c_str()));
    }
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    CUdeviceptr base = 0;
    std::size_t size = 0;
    CUresult r = api.mem_get_address_range(&base, &size, to_device(p));
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuMemGetAddressRange(%p) failed: %s", name().c_str(), p,
                                    driver_.error_text(r).c_str()));
    }
    ipc_record rec{};
    rec.offset = to_device(p) - base;
    rec.bytes = bytes;
    if (rec.offset > size || bytes > size - rec.offset) {
      throw backend_error(strprintf("%s: %zu bytes at %p are not inside one allocation (%zu bytes "
                                    "at %p)",
                                    name().c_str(), bytes, p, size, to_pointer(base)));
    }
    r = api.ipc_get_mem_handle(&rec.handle, base);
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuIpcGetMemHandle(%p) failed: %s", name().c_str(),
                                    to_pointer(base), driver_.error_text(r).c_str()));
    }
    std::memset(out.bytes, 0, sizeof out.bytes);
    std::memcpy(out.bytes, &rec, sizeof rec);
  }

  void* import_memory(const exported_memory& in) override {
    if (kind_ != cuda_memory::device) return system_resource::import_memory(in);
    const cuda_driver_api& api = driver_.api();
    if (!api.has_ipc()) {
      throw unsupported(strprintf("%s: the CUDA driver (%s) has no interprocess memory entry "
                                  "points (cuIpcGetMemHandle, cuIpcOpenMemHandle)",
                                  name().c_str(), driver_.library().c_str()));
    }
    ipc_record rec{};
    std::memcpy(&rec, in.bytes, sizeof rec);
    cuda_context_scope scope(driver_, driver_.primary_context(device_));
    check_pushed(scope);
    CUdeviceptr base = 0;
    // Lazy peer access: the exporter's device may be another one.
    const CUresult r =
        api.ipc_open_mem_handle(&base, rec.handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      throw out_of_memory(strprintf("%s: out of memory opening another process's memory "
                                    "(cuIpcOpenMemHandle: %s)",
                                    name().c_str(), driver_.error_text(r).c_str()));
    }
    if (r != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuIpcOpenMemHandle failed: %s", name().c_str(),
                                    driver_.error_text(r).c_str()));
    }
    return to_pointer(base + rec.offset);
  }

  void close_imported(void* p, const exported_memory& in) noexcept override {
    CUcontext ctx = driver_.retained_context(device_);
    if (kind_ != cuda_memory::device || p == nullptr || ctx == nullptr || !driver_.api().has_ipc())
      return;
    ipc_record rec{};
    std::memcpy(&rec, in.bytes, sizeof rec);
    cuda_context_scope scope(driver_, ctx);
    // Nothing to report to: a failure means the context is gone (teardown).
    if (scope.status() == CUDA_SUCCESS)
      driver_.api().ipc_close_mem_handle(to_device(p) - rec.offset);
  }

 private:
  static constexpr std::size_t kGranularityUnknown = ~std::size_t(0);

  // What map_exportable() puts into an exported_memory record.
  struct fd_record {
    std::uint64_t process;  // getpid() of the exporter
    std::int32_t fd;        // its descriptor of the memory, -1 once closed
    std::uint64_t bytes;
  };
  static_assert(sizeof(fd_record) <= sizeof(exported_memory::bytes), "exported_memory too small");

  // Checks what map_exportable() and map_imported() are given; the device
  // address of addr.
  CUdeviceptr check_shareable(void* addr, std::size_t bytes) const {
    const std::size_t g = map_granularity();
    const cuda_driver_api& api = driver_.api();
    if (kind_ != cuda_memory::device || g == 0 || !api.has_shareable_handles()) {
      throw unsupported(strprintf("%s: the driver (%s) cannot share virtual memory between "
                                  "processes (cuMemExportToShareableHandle)",
                                  name().c_str(), driver_.library().c_str()));
    }
    CUdevice dev = 0;
    int supported = 0;
    if (api.device_get(&dev, device_) != CUDA_SUCCESS ||
        api.device_get_attribute(&supported,
                                 CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                 dev) != CUDA_SUCCESS ||
        supported == 0) {
      throw unsupported(
          strprintf("%s cannot export memory as a POSIX file descriptor "
                    "(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)",
                    name().c_str()));
    }
    const CUdeviceptr base = to_device(addr);
    if (bytes == 0 || base % g != 0 || bytes % g != 0) {
      throw invalid_argument(strprintf("%s: cannot map %zu bytes at %p: not aligned to the "
                                       "granularity (%s)",
                                       name().c_str(), bytes, addr, format_bytes(g).c_str()));
    }
    return base;
  }

  // The driver calls of map() and map_handle(): maps `handle` at [base,
  // base + bytes), releases it (the mapping keeps the memory alive; without
  // one this frees it) and opens the range to this device. The context is
  // current. On failure maps nothing and names the failing call in `call`.
  CUresult map_for_this_device(CUdeviceptr base, std::size_t bytes,
                               CUmemGenericAllocationHandle handle, const char*& call) const {
    const cuda_driver_api& api = driver_.api();
    call = "cuMemMap";
    CUresult r = api.mem_map(base, bytes, 0, handle, 0);
    api.mem_release(handle);
    if (r != CUDA_SUCCESS) return r;
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    call = "cuMemSetAccess";
    r = api.mem_set_access(base, bytes, &access, 1);
    if (r != CUDA_SUCCESS) api.mem_unmap(base, bytes);
    return r;
  }

  // Maps `handle` at [base, base + bytes) for this device and releases the
  // handle (the mapping keeps the memory); the context is current. Maps
  // nothing on failure.
  void map_handle(CUdeviceptr base, std::size_t bytes, CUmemGenericAllocationHandle handle,
                  const char* what) const {
    const char* call = nullptr;
    const CUresult r = map_for_this_device(base, bytes, handle, call);
    if (r == CUDA_SUCCESS) return;
    throw backend_error(strprintf(
        "%s: %s failed while mapping %s of %s memory at %p: %s%s", name().c_str(), call,
        format_bytes(bytes).c_str(), what, to_pointer(base), driver_.error_text(r).c_str(),
        std::strcmp(what, "imported") == 0 && std::strcmp(call, "cuMemSetAccess") == 0
            ? " (this device may have no peer access to the exporting process's device)"
            : ""));
  }

  // What export_memory() puts into an exported_memory record.
  struct ipc_record {
    CUipcMemHandle handle;
    std::uint64_t offset;  // of the exported bytes in the handle's allocation
    std::uint64_t bytes;
  };
  static_assert(sizeof(ipc_record) <= sizeof(exported_memory::bytes), "exported_memory too small");

  std::string name() const { return place_to_string(place()); }

  static CUdeviceptr to_device(const void* p) noexcept {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  }
  static void* to_pointer(CUdeviceptr p) noexcept {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  }

  void check_pushed(const cuda_context_scope& scope) const {
    if (scope.status() != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuCtxPushCurrent failed: %s", name().c_str(),
                                    driver_.error_text(scope.status()).c_str()));
    }
  }

  // Plain device memory of this resource's device.
  CUmemAllocationProp allocation_prop() const noexcept {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    return prop;
  }

  // The minimum granularity of device memory, or 0 when the driver or the
  // device has no virtual memory management. `final_answer` becomes false
  // when the question could not be asked (no context): ask again later.
  std::size_t query_granularity(bool& final_answer) const noexcept {
    const cuda_driver_api& api = driver_.api();
    if (!api.has_virtual_memory()) return 0;
    CUdevice dev = 0;
    int supported = 0;
    if (api.device_get(&dev, device_) != CUDA_SUCCESS ||
        api.device_get_attribute(&supported,
                                 CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                 dev) != CUDA_SUCCESS ||
        supported == 0)
      return 0;
    CUcontext ctx = nullptr;
    try {
      ctx = driver_.primary_context(device_);
    } catch (...) {
      final_answer = false;
      return 0;
    }
    cuda_context_scope scope(driver_, ctx);
    if (scope.status() != CUDA_SUCCESS) {
      final_answer = false;
      return 0;
    }
    const CUmemAllocationProp prop = allocation_prop();
    std::size_t g = 0;
    if (api.mem_get_allocation_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
        CUDA_SUCCESS)
      return 0;
    // Granule boundaries must keep libdao's alignment promise.
    return g != kGranularityUnknown && g % kMinAlignment == 0 ? g : 0;
  }

  void release(void* p) const noexcept {
    if (kind_ == cuda_memory::pinned) {
      driver_.api().mem_free_host(p);
    } else {
      driver_.api().mem_free(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)));
    }
  }

  // Called with the context current, so cuMemGetInfo sees this device.
  // `verb` is "allocate" or "map"; `call` the driver call that failed.
  std::string oom_message(std::size_t bytes, const char* verb, const char* call) const {
    std::string head = strprintf("%s: out of memory: tried to %s %s (%s: %s)", name().c_str(), verb,
                                 format_bytes(bytes).c_str(), call,
                                 driver_.error_text(CUDA_ERROR_OUT_OF_MEMORY).c_str());
    if (kind_ == cuda_memory::pinned) {
      return head + strprintf("; the host has %s of physical memory, %s of it available",
                              format_bytes(host_total_memory()).c_str(),
                              format_bytes(host_available_memory()).c_str());
    }
    std::size_t free_bytes = 0, total_bytes = 0;
    CUresult r = driver_.api().mem_get_info(&free_bytes, &total_bytes);
    if (r != CUDA_SUCCESS)
      return head + strprintf("; cuMemGetInfo failed too: %s", driver_.error_text(r).c_str());
    return head + strprintf("; cuda:%d has a total capacity of %s of which %s is free", device_,
                            format_bytes(total_bytes).c_str(), format_bytes(free_bytes).c_str());
  }

  cuda_driver& driver_;
  cuda_memory kind_;
  int device_;
  // map_granularity(), asked once (kGranularityUnknown until then).
  mutable std::atomic<std::size_t> granularity_{kGranularityUnknown};
};

class cuda_backend_impl final : public backend {
 public:
  // Loads the driver (once per process) and makes one resource per device.
  explicit cuda_backend_impl(cuda_memory kind) : driver_(cuda_driver::get()), kind_(kind) {
    int count = driver_.device_count();
    if (kind_ == cuda_memory::pinned && count > 0) count = 1;
    for (int i = 0; i < count; ++i)
      resources_.push_back(std::make_unique<cuda_resource>(driver_, kind_, i));
  }

  int device_count() override { return static_cast<int>(resources_.size()); }

  std::string description() override {
    if (resources_.empty()) return "not available: " + driver_.why_unavailable();
    switch (kind_) {
      case cuda_memory::device: return driver_.summary();
      case cuda_memory::pinned:
        return "page-locked host memory (cuMemHostAlloc, portable) through " + driver_.summary();
      case cuda_memory::managed:
        return "managed memory (cuMemAllocManaged, attached globally) through " + driver_.summary();
    }
    return driver_.summary();
  }

  system_resource& resource(int device) override {
    const char* kind_name = dao_place_kind_name(place_kind(kind_));
    if (resources_.empty()) {
      throw no_device(strprintf("%s device %d is not available: %s", kind_name, device,
                                driver_.why_unavailable().c_str()));
    }
    if (device < 0 || device >= static_cast<int>(resources_.size())) {
      if (kind_ == cuda_memory::pinned) {
        throw no_device(strprintf("%s device %d does not exist: the %s place has only device 0",
                                  kind_name, device, kind_name));
      }
      throw no_device(strprintf("%s device %d does not exist: the driver reports %d device(s)",
                                kind_name, device, driver_.device_count()));
    }
    return *resources_[static_cast<std::size_t>(device)];
  }

 private:
  cuda_driver& driver_;
  cuda_memory kind_;
  std::vector<std::unique_ptr<cuda_resource>> resources_;
};

}  // namespace

// Never destroyed: used until the process ends, like every backend.
backend& cuda_device_backend() {
  static cuda_backend_impl* b = new cuda_backend_impl(cuda_memory::device);
  return *b;
}
backend& cuda_pinned_backend() {
  static cuda_backend_impl* b = new cuda_backend_impl(cuda_memory::pinned);
  return *b;
}
backend& cuda_managed_backend() {
  static cuda_backend_impl* b = new cuda_backend_impl(cuda_memory::managed);
  return *b;
}

}  // namespace dao::detail
