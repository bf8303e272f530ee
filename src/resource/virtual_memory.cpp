#include "resource/virtual_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

std::size_t host_page_size() noexcept {
  static const std::size_t page = [] {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<std::size_t>(p) : std::size_t(4096);
  }();
  return page;
}

void* host_reserve(std::size_t bytes) noexcept {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void host_release(void* base, std::size_t bytes) noexcept { munmap(base, bytes); }

bool host_commit(void* addr, std::size_t bytes) noexcept {
  return mprotect(addr, bytes, PROT_READ | PROT_WRITE) == 0;
}

void host_decommit(void* addr, std::size_t bytes) noexcept {
  // Drop the pages (the next commit sees zeros) and make stray accesses
  // fault, as on an unmapped GPU range.
  madvise(addr, bytes, MADV_DONTNEED);
  mprotect(addr, bytes, PROT_NONE);
}

// Defaults for resources without virtual memory.
void* system_resource::reserve_addresses(std::size_t) {
  throw unsupported(strprintf("%s: virtual memory (reserve and map) is not supported",
                              place_to_string(place()).c_str()));
}
void system_resource::release_addresses(void*, std::size_t) noexcept {}
void system_resource::map(void*, std::size_t) {
  throw unsupported(strprintf("%s: virtual memory (reserve and map) is not supported",
                              place_to_string(place()).c_str()));
}
void system_resource::unmap(void*, std::size_t) noexcept {}

}  // namespace dao::detail
