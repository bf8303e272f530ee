// Where a tiered pool's memory comes from: its device range (one allocation
// of device_budget bytes, which the device arena cuts up) and the buffers of
// its host tier, counted in the pool's statistics against host_budget. The
// only place that reaches the places' allocators.
#pragma once

#include <cstddef>

#include "dao/place.h"
#include "dao/tiered.h"

namespace dao::detail {

class system_resource;

// The bytes of a device budget that a pool reserves and uses: rounded down
// to whole 512-byte blocks (the caching allocator's unit, so that the
// allocator does not round the range up past the budget: a budget equal to
// the device's free memory fits), or to whole arena granules (256 bytes)
// under 512 bytes.
inline constexpr std::size_t kReserveUnit = 512;
inline std::size_t reserved_budget(std::size_t device_budget) noexcept {
  const std::size_t unit = device_budget >= kReserveUnit ? kReserveUnit : 256;
  return device_budget / unit * unit;
}

class tier_memory {
 public:
  // Checks both places (throws invalid_argument / no_device) and allocates
  // the device range of `device_budget` bytes (reserved_budget(): throws
  // out_of_memory saying how much it asked for when it does not fit). `stats` (host_bytes,
  // peak_host_bytes) must outlive this object.
  tier_memory(dao_place device, dao_place host, std::size_t device_budget, std::size_t host_budget,
              dao_tiered_stats& stats);
  // Frees the device range. Never throws.
  ~tier_memory();

  tier_memory(const tier_memory&) = delete;
  tier_memory& operator=(const tier_memory&) = delete;

  // The device's resource (streams and events come from it) and its place.
  system_resource& device_resource() const noexcept { return *device_resource_; }
  dao_place device_place() const noexcept { return device_; }

  // The device range.
  void* device_ptr(std::size_t offset) const noexcept {
    return static_cast<char*>(device_base_) + offset;
  }
  // dao_tiered_trim: gives the device range back to the place's allocator
  // (nothing may be resident), and takes it again when a kernel needs it
  // (throws out_of_memory if the device has no room now). Executor only.
  bool device_held() const noexcept { return device_base_ != nullptr; }
  // The bytes of device memory held now: the range, or 0 once given back.
  std::size_t device_range_bytes() const noexcept { return device_held() ? device_budget_ : 0; }
  void release_device() noexcept;
  void acquire_device();

  // --- host tier: with the pool's mutex held unless said otherwise ---
  std::size_t host_budget() const noexcept { return host_budget_; }
  // Whether `more` bytes fit in host_budget (always, when it is 0).
  bool host_fits(std::size_t more) const noexcept {
    return host_budget_ == 0 || stats_.host_bytes + more <= host_budget_;
  }
  // A buffer, counted.
  void* host_allocate(std::size_t bytes);
  // Frees a counted buffer. Never throws.
  void host_free(void* p, std::size_t bytes) noexcept;
  // Counts `bytes` for a buffer allocated later, without the mutex, by
  // host_allocate_reserved; host_unreserve takes them back if that fails.
  void host_reserve(std::size_t bytes) noexcept;
  void host_unreserve(std::size_t bytes) noexcept { stats_.host_bytes -= bytes; }
  // A buffer whose bytes were reserved. Needs no mutex.
  void* host_allocate_reserved(std::size_t bytes) const;

  // A staging buffer of a pageable host tier: pinned host memory for a CUDA
  // device, host memory for a SIM one (its link model treats it as pinned).
  // Not counted in the host tier. Needs no mutex.
  void* staging_allocate(std::size_t bytes) const;
  void staging_free(void* p) const noexcept;

 private:
  dao_place device_{};
  dao_place host_{};
  system_resource* device_resource_ = nullptr;
  void* device_base_ = nullptr;
  // The device range, or throws out_of_memory (the message names `function`).
  void* allocate_device(const char* function) const;

  std::size_t device_budget_ = 0;
  std::size_t host_budget_ = 0;
  dao_tiered_stats& stats_;
};

}  // namespace dao::detail
