// Out of host memory inside libdao's own bookkeeping, on purpose: a test-only
// replacement of the global `operator new` (tests/new_fault.cpp) that throws
// std::bad_alloc at the k-th allocation after it is armed, and counts the
// allocations that are live, so that a test can sweep k over a workload and
// check that every call returns a status and that nothing leaks.
//
// Linked only into the test programs that need it (tests/CMakeLists.txt):
// the replacement takes over every `new` of the program, libdao's included
// (the shared library resolves operator new to the program's). Plain and
// aligned forms are replaced (new[] and the nothrow forms call them); every
// delete is matched. Thread-safe: the counters are atomics, so the k-th
// allocation may fall on any thread (a tiered pool's executor too).
#pragma once

#include <cstdint>

namespace dao_test::new_fault {

// Makes the k-th allocation counted from now (k >= 1) throw std::bad_alloc,
// once; k == 0 disarms.
void fail_nth(std::uint64_t k) noexcept;

// Disarms and zeroes the allocation count (not the live count).
void reset() noexcept;

// Allocations since the last reset (armed or not, failed included).
std::uint64_t calls() noexcept;

// Allocations made to fail since the last reset.
std::uint64_t injected() noexcept;

// Allocations made by operator new and not yet deleted: equal before and
// after a call that must leak nothing.
std::int64_t live() noexcept;

}  // namespace dao_test::new_fault
