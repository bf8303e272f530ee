// Cost profiles of simulated devices: which card a SIM device stands in for
// (its map granularity, and what each driver call of that card costs), and
// the meter that accounts the simulated driver time of each call (counted,
// never slept). See include/dao/sim.h and docs/places.md.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dao/sim.h"

namespace dao::detail {

// A driver call's cost at the sizes it was measured at (kSimCostSizes),
// interpolated linearly in between and extrapolated beyond the largest.
struct sized_cost {
  double us[4];
  std::uint64_t ns_at(std::size_t bytes) const noexcept;
};

inline constexpr std::size_t kSimCostSizes[4] = {std::size_t(2) << 20, std::size_t(20) << 20,
                                                 std::size_t(256) << 20, std::size_t(1) << 30};

struct sim_profile {
  std::string_view name;
  std::string_view source;  // where the figures come from
  std::size_t granularity;  // of mapping, in bytes; 0: the host's page
  bool costs;               // false: counts only, no time
  sized_cost alloc, free, create, map, set_access, unmap, release;
  double event_record_us, event_query_us, synchronize_us, host_func_us;
  // Copies (GB/s, 0: not charged): host memory is pageable on SIM.
  double to_device_gbs, to_host_gbs, on_device_gbs;
  // Copies between pinned host memory and the device, each way (GB/s, 0:
  // not measured). Used by tiered pools' link model, not by the meter.
  double pinned_gbs;
};

// The profile named `name`; throws invalid_argument listing the profiles.
const sim_profile& find_sim_profile(std::string_view name, std::string_view context);

// "none, h200", for messages and `dao info`.
std::string sim_profile_names();

// The costs one SIM device has accounted. Thread safe (relaxed atomics).
class sim_cost_meter {
 public:
  explicit sim_cost_meter(const sim_profile& profile) noexcept : profile_(profile) {}

  const sim_profile& profile() const noexcept { return profile_; }

  // A segment allocation or free of `bytes`.
  void on_alloc(std::size_t bytes) noexcept;
  void on_free(std::size_t bytes) noexcept;
  // Mapping `bytes` as physical allocations of `granule` each (create and
  // map per granule, one access call over the range, which the driver
  // charges per physical allocation in it), and unmapping them.
  void on_map(std::size_t bytes, std::size_t granule) noexcept;
  void on_unmap(std::size_t bytes, std::size_t granule) noexcept;
  void on_event_record() noexcept;
  void on_query() noexcept;
  void on_synchronize() noexcept;
  void on_host_func() noexcept;
  // A copy, charged by its direction: to the device, to host memory, or on
  // the device (which addresses are the device's: note_range()).
  void on_copy(void* dst, const void* src, std::size_t bytes) noexcept;

  // The device's address ranges (allocations and reservations), so that a
  // copy's direction is known. Noting one may throw std::bad_alloc.
  void note_range(const void* base, std::size_t bytes);
  void forget_range(const void* base) noexcept;

  dao_sim_cost read(int op) const noexcept;
  void reset() noexcept;

 private:
  void charge(dao_sim_op op, std::uint64_t count, std::uint64_t bytes, std::uint64_t ns) noexcept;

  bool on_device(const void* p) const noexcept;

  const sim_profile& profile_;
  mutable std::mutex ranges_mutex_;
  std::map<std::uintptr_t, std::size_t> ranges_;  // base -> bytes
  std::atomic<std::uint64_t> count_[DAO_SIM_OP_COUNT] = {};
  std::atomic<std::uint64_t> bytes_[DAO_SIM_OP_COUNT] = {};
  std::atomic<std::uint64_t> ns_[DAO_SIM_OP_COUNT] = {};
};

// "alloc", "create", ... ; "unknown" out of range.
const char* sim_op_name(int op) noexcept;

}  // namespace dao::detail
