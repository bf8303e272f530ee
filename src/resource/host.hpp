// Aligned host allocation, shared by the CPU place and the SIM devices.
#pragma once

#include <cstddef>

namespace dao::detail {

// Returns `bytes` of host memory aligned to kMinAlignment, or nullptr when
// the system has none (or the size overflows when rounded).
void* host_aligned_alloc(std::size_t bytes) noexcept;
void host_aligned_free(void* p) noexcept;

// Physical memory of the machine.
std::size_t host_total_memory() noexcept;
std::size_t host_available_memory() noexcept;

}  // namespace dao::detail
