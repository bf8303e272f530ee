// Out of host memory inside libdao's own bookkeeping, on purpose: a test-only
// replacement of the global `operator new` (tests/new_fault.cpp) that throws
// std::bad_alloc at the k-th allocation after it is armed, and counts the
// allocations that are live, so that a test can sweep k over a workload and
// check that every call returns a status and that nothing leaks.
//
// One helper for every test that needs one (test_host_oom, test_free_oom,
// test_whole_oom, test_whole_mpi_oom), linked only into those programs
// (tests/CMakeLists.txt): the replacement takes over every `new` of the
// program, libdao's included (the shared library resolves operator new to
// the program's; the static library's calls link to it). Plain, array and
// aligned forms are replaced (the nothrow forms call them and return NULL
// instead of throwing); every delete is matched.
//
// Two ways to arm it, both thread-safe:
// - fail_nth(): the k-th allocation of the whole process, on any thread (a
//   tiered pool's executor too); the counters are atomics.
// - arm_thread(): the k-th allocation of the calling thread only, so that one
//   rank of an in-process communicator fails while the others run.
#pragma once

#include <cstdint>

namespace dao_test::new_fault {

// Makes the k-th allocation counted from now (k >= 1), on any thread, throw
// std::bad_alloc, once; k == 0 disarms.
void fail_nth(std::uint64_t k) noexcept;

// Disarms fail_nth() and zeroes the allocation count (not the live count).
void reset() noexcept;

// Allocations since the last reset (armed or not, failed included).
std::uint64_t calls() noexcept;

// Allocations made to fail since the last reset.
std::uint64_t injected() noexcept;

// Allocations made by operator new and not yet deleted: equal before and
// after a call that must leak nothing.
std::int64_t live() noexcept;

// The calling thread's k-th allocation from now on (k >= 1) throws
// std::bad_alloc, once; then allocations succeed again. k <= 0 disarms.
void arm_thread(long k) noexcept;

// Disarms the calling thread. Returns whether its fault fired since armed.
bool disarm_thread() noexcept;

}  // namespace dao_test::new_fault
