// The test-only replacement of the global operator new (see new_fault.hpp).
#include "new_fault.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::uint64_t> g_calls{0};
std::atomic<std::uint64_t> g_fail_at{0};  // 0: disarmed
std::atomic<std::uint64_t> g_injected{0};
std::atomic<std::int64_t> g_live{0};

thread_local long t_countdown = 0;  // arm_thread(): 0 disarmed
thread_local bool t_fired = false;

// Counts the call; true when it is the one armed to fail (disarms).
bool must_fail() noexcept {
  const std::uint64_t n = g_calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (t_countdown != 0 && --t_countdown == 0) {
    t_fired = true;
    g_injected.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  std::uint64_t at = g_fail_at.load(std::memory_order_relaxed);
  if (at == 0 || n != at) return false;
  if (!g_fail_at.compare_exchange_strong(at, 0)) return false;  // once
  g_injected.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void* allocate(std::size_t size, std::size_t align) {
  if (must_fail()) throw std::bad_alloc();
  if (size == 0) size = 1;
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) {
    p = std::malloc(size);
  } else {
    // aligned_alloc wants a multiple of the alignment.
    const std::size_t rounded = (size + align - 1) / align * align;
    p = rounded < size ? nullptr : std::aligned_alloc(align, rounded);
  }
  if (p == nullptr) throw std::bad_alloc();
  g_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void* allocate_nothrow(std::size_t size, std::size_t align) noexcept {
  try {
    return allocate(size, align);
  } catch (...) {
    return nullptr;
  }
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

namespace dao_test::new_fault {

void fail_nth(std::uint64_t k) noexcept {
  g_calls.store(0);
  g_injected.store(0);
  g_fail_at.store(k);
}

void reset() noexcept {
  g_fail_at.store(0);
  g_calls.store(0);
  g_injected.store(0);
}

std::uint64_t calls() noexcept { return g_calls.load(); }
std::uint64_t injected() noexcept { return g_injected.load(); }
std::int64_t live() noexcept { return g_live.load(); }

void arm_thread(long k) noexcept {
  t_countdown = k > 0 ? k : 0;
  t_fired = false;
}

bool disarm_thread() noexcept {
  t_countdown = 0;
  return t_fired;
}

}  // namespace dao_test::new_fault

// The replaceable global allocation functions. The standard library's
// containers call these.
void* operator new(std::size_t size) { return allocate(size, 0); }
void* operator new[](std::size_t size) { return allocate(size, 0); }
void* operator new(std::size_t size, std::align_val_t align) {
  return allocate(size, static_cast<std::size_t>(align));
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return allocate(size, static_cast<std::size_t>(align));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size, 0);
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size, static_cast<std::size_t>(align));
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  return allocate_nothrow(size, static_cast<std::size_t>(align));
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
