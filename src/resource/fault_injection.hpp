// Fault injection: makes the system resources fail on purpose, so that tests
// can check that every failure below libdao is reported with a status and a
// message, leaks nothing, corrupts nothing, and that libdao keeps working
// once memory is available again.
//
// Four sites: `alloc` (a system allocation: allocate()), `map` (mapping
// memory into reserved addresses: map()), `copy` (enqueueing a copy on a
// stream) and `record` (recording an event on a stream: SIM's queue out of
// memory, or cuEventRecord failing). Each can fail its n-th call from now, or every call with a
// probability. Armed from the environment (DAO_FAULT_INJECT, read once, see
// docs/reliability.md) or by tests through the functions below. When nothing
// is armed a call costs two relaxed atomic operations; the sites are slow
// paths (system calls, driver calls) anyway.
#pragma once

#include <cstdint>
#include <string>

namespace dao::detail::faults {

enum site : int { alloc = 0, map = 1, copy = 2, record = 3, site_count = 4 };

// Whether this call of `s` must fail (counts the call). Thread-safe.
bool inject(site s) noexcept;

// Throws what a real failure at `s` throws: out_of_memory for alloc, map and
// record (a SIM stream's queue), backend_error for copy. `where` starts the message ("sim:0: map").
[[noreturn]] void raise_fault(site s, const std::string& where);

// raise_fault() when this call of `s` must fail.
inline void maybe_fail(site s, const char* where) {
  if (inject(s)) raise_fault(s, where);
}

// Fails the n-th call of `s` counted from now (n >= 1), once; n == 0 disarms.
void fail_nth(site s, std::uint64_t n) noexcept;

// Fails each call of `s` with probability `p`, from a generator seeded with
// `seed` (the same seed gives the same failures in a single-threaded run).
void fail_with_probability(site s, double p, std::uint64_t seed) noexcept;

// Disarms every site and zeroes the counters.
void reset() noexcept;

// Calls of `s` since the last reset (armed or not).
std::uint64_t calls(site s) noexcept;

// Failures injected at `s` since the last reset.
std::uint64_t injected(site s) noexcept;

// Arms sites from a spec such as "alloc=5,map=p0.01,seed=7" (the format of
// DAO_FAULT_INJECT). Returns false, arming nothing, when it is malformed.
bool arm_from_spec(const char* spec) noexcept;

// The name of a site, for messages.
const char* site_name(site s) noexcept;

}  // namespace dao::detail::faults
