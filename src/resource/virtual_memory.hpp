// Host virtual memory: reserve address ranges without memory, then back
// parts of them. Serves the CPU place and the SIM devices, whose memory is
// host memory, so that the caching strategy can grow expandable segments.
#pragma once

#include <cstddef>

namespace dao::detail {

// The host page size: the granularity of host mappings.
std::size_t host_page_size() noexcept;
// The size of a transparent huge page when the kernel gives them to
// reservations (host_reserve asks for them), else 0.
std::size_t host_huge_page_size() noexcept;

// Reserves `bytes` of addresses (no memory); nullptr when none are left.
void* host_reserve(std::size_t bytes) noexcept;
void host_release(void* base, std::size_t bytes) noexcept;

// Backs [addr, addr+bytes) with zero-filled memory; false when the system
// refuses. Page-aligned arguments inside a reservation.
bool host_commit(void* addr, std::size_t bytes) noexcept;
// Gives the memory back; the addresses stay reserved.
void host_decommit(void* addr, std::size_t bytes) noexcept;

}  // namespace dao::detail
