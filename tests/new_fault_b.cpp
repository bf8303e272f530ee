// The k-th allocation fails (see new_fault_b.hpp). Replaces the plain and
// array forms of operator new and delete; the aligned forms keep the
// library's own pair.
#include "new_fault_b.hpp"

#include <cstdlib>
#include <new>

namespace {

thread_local long countdown = 0;  // 0: disarmed
thread_local bool fired = false;

// True when this allocation is the one to fail.
bool should_fail() noexcept {
  if (countdown == 0) return false;
  if (--countdown != 0) return false;
  fired = true;
  return true;
}

void* checked_malloc(std::size_t n) noexcept { return std::malloc(n != 0 ? n : 1); }

}  // namespace

namespace dao_test_b {

void new_fault_arm(long k) noexcept {
  countdown = k > 0 ? k : 0;
  fired = false;
}

bool new_fault_disarm() noexcept {
  countdown = 0;
  return fired;
}

}  // namespace dao_test_b

void* operator new(std::size_t n) {
  void* p = should_fail() ? nullptr : checked_malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) {
  void* p = should_fail() ? nullptr : checked_malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return should_fail() ? nullptr : checked_malloc(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return should_fail() ? nullptr : checked_malloc(n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
