// The recorder's hot path, inline (issue 18: recording adds at most 20 ns
// per allocation + free): claiming a stamped cell in this thread's ring,
// filling it and publishing it. What is rare stays out of line in
// recorder.cpp: a thread's first record (its ring), stacks. Included by
// recorder.hpp; nothing here takes a lock, allocates or makes a call but
// those.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

#include "trace/ring.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define DAO_TRACE_TSC 1
#endif

namespace dao::detail::trace {

// This thread's ring, or null before its first record (initial-exec: one
// load, no call).
extern __thread thread_ring* t_ring __attribute__((tls_model("initial-exec")));
// Cells of each thread's ring in the running recording.
extern std::atomic<std::size_t> g_ring_cells;
extern std::atomic<bool> g_stacks;  // the running recording takes stacks

// Out of line: a thread's first record (or the first after the ring size
// changed) and the stack of this call.
std::uint64_t claim_with_new_ring(thread_ring*& ring) noexcept;
std::uint32_t stack_id_now() noexcept;  // 0: none, else id + 1

// Whether records are stamped with the CPU's counter (set at each start:
// where Linux does not use the time-stamp counter as its clock, it did
// not find it synchronized across cores, and CLOCK_MONOTONIC is used).
extern std::atomic<bool> g_stamp_counter;

// CLOCK_MONOTONIC in nanoseconds.
inline std::uint64_t monotonic_now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// The stamp of a record: the CPU's time-stamp counter on x86-64 (constant
// rate and synchronized across cores where Linux uses it as its clock),
// the virtual counter on AArch64, else CLOCK_MONOTONIC in nanoseconds.
inline std::uint64_t clock_now() noexcept {
#if defined(DAO_TRACE_TSC)
  if (__builtin_expect(g_stamp_counter.load(std::memory_order_relaxed), 1)) return __rdtsc();
#elif defined(__aarch64__)
  if (__builtin_expect(g_stamp_counter.load(std::memory_order_relaxed), 1)) {
    std::uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
  }
#endif
  return monotonic_now();
}

// A cell claimed and stamped now in this thread's ring, and its position
// (what publishing it stores); nullptr when the ring is full (counted).
inline cell* claim_cell(std::uint64_t& position) noexcept {
  thread_ring* r = t_ring;
  if (__builtin_expect(r != nullptr && r->size() == g_ring_cells.load(std::memory_order_relaxed),
                       1)) {
    position = r->take(clock_now());
  } else {
    position = claim_with_new_ring(r);
  }
  return position != 0 ? &r->at(position - 1) : nullptr;
}

}  // namespace dao::detail::trace
