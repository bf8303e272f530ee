// The CPU place: aligned host memory from the C library.
#include "resource/fault_injection.hpp"
#include "resource/host.hpp"

#include <unistd.h>

#include <cstdlib>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "resource/virtual_memory.hpp"
#include "util/format.hpp"

namespace dao::detail {

// No request above the 47-bit user address space of x86-64 and AArch64 can
// succeed; refusing it here also keeps sanitizer allocators from aborting.
constexpr std::size_t kMaxHostRequest = std::size_t(1) << 47;

void* host_aligned_alloc(std::size_t bytes) noexcept {
  if (bytes == 0 || bytes > kMaxHostRequest) return nullptr;
  void* p = nullptr;
  if (posix_memalign(&p, kMinAlignment, bytes) != 0) return nullptr;
  return p;
}

void host_aligned_free(void* p) noexcept { std::free(p); }

std::size_t host_total_memory() noexcept {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * page_size : 0;
}

std::size_t host_available_memory() noexcept {
  long pages = sysconf(_SC_AVPHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<std::size_t>(pages) * page_size : 0;
}

namespace {

class host_resource final : public system_resource {
 public:
  void* allocate(std::size_t bytes) override {
    faults::maybe_fail(faults::alloc, "cpu: allocate");
    void* p = host_aligned_alloc(bytes);
    if (p == nullptr) {
      throw out_of_memory(strprintf(
          "cpu: out of memory: tried to allocate %s (%zu bytes); the operating system refused",
          format_bytes(bytes).c_str(), bytes));
    }
    return p;
  }
  void deallocate(void* p, std::size_t) noexcept override { host_aligned_free(p); }
  dao_place place() const noexcept override { return dao_place{DAO_PLACE_CPU, 0}; }
  memory_info info() const override {
    return memory_info{host_available_memory(), host_total_memory()};
  }
  bool host_accessible() const noexcept override { return true; }

  std::size_t map_granularity() const noexcept override { return host_page_size(); }
  std::size_t large_page_size() const noexcept override { return host_huge_page_size(); }
  void* reserve_addresses(std::size_t bytes) override {
    void* p = host_reserve(bytes);
    if (p == nullptr) {
      throw out_of_memory(strprintf("cpu: out of address space: could not reserve %s",
                                    format_bytes(bytes).c_str()));
    }
    return p;
  }
  void release_addresses(void* base, std::size_t bytes) noexcept override {
    host_release(base, bytes);
  }
  void map(void* addr, std::size_t bytes) override {
    faults::maybe_fail(faults::map, "cpu: map");
    if (!host_commit(addr, bytes)) {
      throw out_of_memory(
          strprintf("cpu: out of memory: tried to map %s; the operating system refused",
                    format_bytes(bytes).c_str()));
    }
  }
  void unmap(void* addr, std::size_t bytes) noexcept override { host_decommit(addr, bytes); }
};

class host_backend_impl final : public backend {
 public:
  int device_count() override { return 1; }
  std::string description() override {
    return strprintf("host memory (posix_memalign, %zu-byte alignment), %s physical", kMinAlignment,
                     format_bytes(host_total_memory()).c_str());
  }
  system_resource& resource(int device) override {
    if (device != 0) {
      throw no_device(
          strprintf("cpu device %d does not exist: the cpu place has only device 0", device));
    }
    return resource_;
  }

 private:
  host_resource resource_;
};

}  // namespace

backend& host_backend() {
  static host_backend_impl* instance = new host_backend_impl();  // never destroyed: used until exit
  return *instance;
}

}  // namespace dao::detail
