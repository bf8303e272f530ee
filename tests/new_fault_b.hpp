// A test-only replacement of the global operator new that throws
// std::bad_alloc at the k-th allocation of one thread once armed: out of
// host memory inside libdao's own bookkeeping (issue 20), on demand. Link
// new_fault_b.cpp into the test program (the static library's allocations
// then go through it). Per thread, so that one rank of an in-process
// communicator can fail while the others run.
#pragma once

namespace dao_test_b {

// The calling thread's k-th allocation from now on (k >= 1) throws
// std::bad_alloc (the nothrow forms return NULL), once; then allocations
// succeed again.
void new_fault_arm(long k) noexcept;
// Disarms the calling thread. Returns whether its fault fired since armed.
bool new_fault_disarm() noexcept;

}  // namespace dao_test_b
