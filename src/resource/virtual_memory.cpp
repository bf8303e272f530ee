// Host virtual memory: reserving addresses and committing or decommitting
// pages in them (mmap, mprotect, madvise), and the defaults of memory sources
// without virtual memory.
#include "resource/virtual_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

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

namespace {
constexpr std::size_t kHugePage = std::size_t(2) << 20;  // x86-64 and AArch64 (4 KiB base pages)
}  // namespace

std::size_t host_huge_page_size() noexcept {
  static const std::size_t size = [] {
    // "always [madvise] never": huge pages unless the mode in brackets is never.
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == nullptr) return std::size_t(0);
    char line[128] = {0};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    if (!read || std::strstr(line, "[never]") != nullptr) return std::size_t(0);
    return kHugePage;
  }();
  return size;
}

// Reservations start on a 2 MiB boundary and ask for transparent huge pages
// (honoured where /sys/kernel/mm/transparent_hugepage/enabled is "madvise"
// or "always"): a caching allocator hands out addresses all over its
// segments, and with 4 KiB pages nearly every first touch of a block missed
// the TLB (bench_alloc: 260 -> 165 ns per free+alloc pair on the CPU place).
// Mapping and unmapping stay page-grained; the kernel splits a huge page
// when part of it is given back.
void* host_reserve(std::size_t bytes) noexcept {
  if (bytes > SIZE_MAX - kHugePage) return nullptr;
  const std::size_t padded = bytes + kHugePage;
  void* p = mmap(nullptr, padded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(p, aligned - start);
  const std::uintptr_t tail = aligned + bytes, end = start + padded;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // a hint: failure is harmless
  return reinterpret_cast<void*>(aligned);
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

// Defaults for memory sources without virtual memory.
void* memory_source::reserve_addresses(std::size_t) {
  throw unsupported(strprintf("%s: virtual memory (reserve and map) is not supported",
                              place_to_string(place()).c_str()));
}
void memory_source::release_addresses(void*, std::size_t) noexcept {}
void memory_source::map(void*, std::size_t) {
  throw unsupported(strprintf("%s: virtual memory (reserve and map) is not supported",
                              place_to_string(place()).c_str()));
}
void memory_source::unmap(void*, std::size_t) noexcept {}

}  // namespace dao::detail
