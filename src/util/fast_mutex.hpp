// A mutex for the allocators' hot paths: one atomic exchange to lock and one
// to unlock when nobody waits, where pthread_mutex_lock/unlock spend about
// fifty instructions per pair on checks of the mutex kind. Under contention a
// waiter spins briefly (critical sections are a few hundred nanoseconds) and
// then sleeps on a futex, so an oversubscribed machine does not burn cores.
// Meets the Lockable requirements: use it with std::lock_guard.
#pragma once

#include <atomic>
#include <cstdint>

#include "util/cpu_relax.hpp"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <thread>
#endif

namespace dao::detail {

class fast_mutex {
 public:
  fast_mutex() = default;
  fast_mutex(const fast_mutex&) = delete;
  fast_mutex& operator=(const fast_mutex&) = delete;

  void lock() noexcept {
    std::uint32_t expected = kUnlocked;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed))
      return;
    lock_contended();
  }

  bool try_lock() noexcept {
    std::uint32_t expected = kUnlocked;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  void unlock() noexcept {
    if (state_.exchange(kUnlocked, std::memory_order_release) == kSleepers) wake_one();
  }

 private:
  // Drepper's three states ("Futexes are tricky", mutex 3).
  static constexpr std::uint32_t kUnlocked = 0, kLocked = 1, kSleepers = 2;

  __attribute__((noinline)) void lock_contended() noexcept {
    for (int spin = 0; spin < 100; ++spin) {
      if (state_.load(std::memory_order_relaxed) == kUnlocked) {
        std::uint32_t expected = kUnlocked;
        if (state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire,
                                         std::memory_order_relaxed))
          return;
      }
      cpu_relax();
    }
    // From here on the lock is taken as "with sleepers", so that the unlock
    // that follows wakes the next waiter.
    while (state_.exchange(kSleepers, std::memory_order_acquire) != kUnlocked) wait();
  }

  void wait() noexcept {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&state_), FUTEX_WAIT_PRIVATE, kSleepers,
            nullptr, nullptr, 0);
#else
    std::this_thread::yield();
#endif
  }

  void wake_one() noexcept {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
#endif
  }

  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
                "the futex word is the atomic itself");
  std::atomic<std::uint32_t> state_{kUnlocked};
};

}  // namespace dao::detail
