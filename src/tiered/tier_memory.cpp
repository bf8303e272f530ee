// Where a tiered pool's memory comes from: the device range and the host
// tier's buffers (see tier_memory.hpp).
#include "tiered/tier_memory.hpp"

#include <algorithm>

#include "strategy/place_defaults.hpp"
#include "resource/system_resource.hpp"
#include "core/error.hpp"
#include "strategy/strategy.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// The allocator of a place: the pool's one way to its memory.
strategy& allocator_for(dao_place place) { return internal_place_strategy(place); }

}  // namespace

tier_memory::tier_memory(dao_place device, dao_place host, std::size_t device_budget,
                         std::size_t host_budget, dao_tiered_stats& stats)
    : device_budget_(device_budget), host_budget_(host_budget), stats_(stats) {
  device_resource_ = &resource_for(device);
  resource_for(host);
  device_ = device_resource_->place();
  host_ = host;
  device_base_ = allocate_device("dao_tiered_create");
}

void* tier_memory::allocate_device(const char* function) const {
  try {
    return allocator_for(device_).allocate(device_budget_, nullptr);
  } catch (const out_of_memory& e) {
    throw out_of_memory(strprintf(
        "%s: the device range of %zu bytes (the device budget rounded down to whole %zu-byte "
        "blocks) does not fit: %s",
        function, device_budget_, kReserveUnit, e.what()));
  }
}

tier_memory::~tier_memory() { release_device(); }

void tier_memory::release_device() noexcept {
  if (device_base_ == nullptr) return;
  try {
    allocator_for(device_).deallocate(device_base_);
  } catch (...) {
  }
  device_base_ = nullptr;
}

void tier_memory::acquire_device() {
  if (device_base_ != nullptr) return;
  device_base_ = allocate_device("the tiered pool");
}

void* tier_memory::host_allocate(std::size_t bytes) {
  void* p = host_allocate_reserved(bytes);
  host_reserve(bytes);
  return p;
}

void tier_memory::host_free(void* p, std::size_t bytes) noexcept {
  try {
    allocator_for(host_).deallocate(p);
  } catch (...) {
  }
  stats_.host_bytes -= bytes;
}

void tier_memory::host_reserve(std::size_t bytes) noexcept {
  stats_.host_bytes += bytes;
  stats_.peak_host_bytes = std::max(stats_.peak_host_bytes, stats_.host_bytes);
}

void* tier_memory::host_allocate_reserved(std::size_t bytes) const {
  return allocator_for(host_).allocate(bytes, nullptr);
}

namespace {

dao_place staging_place(dao_place device) noexcept {
  return raw_kind(device.kind) == DAO_PLACE_CUDA ? dao_place_cuda_pinned() : dao_place_cpu();
}

}  // namespace

void* tier_memory::staging_allocate(std::size_t bytes) const {
  return allocator_for(staging_place(device_)).allocate(bytes, nullptr);
}

void tier_memory::staging_free(void* p) const noexcept {
  if (p == nullptr) return;
  try {
    allocator_for(staging_place(device_)).deallocate(p);
  } catch (...) {
  }
}

}  // namespace dao::detail
