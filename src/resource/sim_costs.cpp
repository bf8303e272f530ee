// The SIM cost profiles and the meter (see sim_costs.hpp).
#include "resource/sim_costs.hpp"

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

// NVIDIA H200 (141 GB HBM3e), driver 580, CUDA 13.0: medians of the probes
// in the project's shared/gpu/README.md (issue 16), microseconds, at
// 2 MiB / 20 MiB / 256 MiB / 1 GiB.
constexpr sim_profile kH200 = {
    "h200",
    "NVIDIA H200, driver 580, CUDA 13.0: medians measured by the project's probes (issue 16)",
    std::size_t(2) << 20,  // cuMemGetAllocationGranularity
    true,
    {{31.9, 32.9, 40.3, 127.6}},   // cuMemAlloc
    {{27.7, 37.3, 101.7, 339.8}},  // cuMemFree
    {{7.7, 8.4, 9.7, 17.1}},       // cuMemCreate
    {{0.6, 0.7, 0.7, 0.9}},        // cuMemMap
    {{33.9, 34.8, 36.9, 61.0}},    // cuMemSetAccess, per physical allocation in the range
    {{21.3, 22.5, 21.6, 30.6}},    // cuMemUnmap
    {{9.3, 15.7, 81.7, 293.4}},    // cuMemRelease
    0.19,                          // cuEventRecord
    0.18,                          // cuEventQuery / cuStreamQuery
    0.23,                          // synchronizing an idle stream
    9.3,                           // a host function runs this long after it is queued
    8.1,                           // pageable host -> device, GB/s
    11.9,                          // device -> pageable host
    0,                             // device -> device: not measured, not charged
    55.2,                          // pinned host <-> device, each way (issue 21)
};

constexpr sim_profile kNone = {
    "none", "no costs: host pages, calls counted only",
    0,      false,
    {},     {},
    {},     {},
    {},     {},
    {},     0,
    0,      0,
    0,      0,
    0,      0,
    0,
};

constexpr const sim_profile* kProfiles[] = {&kNone, &kH200};

std::uint64_t us_to_ns(double us) noexcept { return static_cast<std::uint64_t>(us * 1000.0 + 0.5); }

}  // namespace

std::uint64_t sized_cost::ns_at(std::size_t bytes) const noexcept {
  if (bytes <= kSimCostSizes[0]) return us_to_ns(us[0]);
  std::size_t i = 1;
  while (i < 3 && bytes > kSimCostSizes[i]) ++i;
  // Between (or beyond, for i == 3) sizes i-1 and i.
  const double x0 = static_cast<double>(kSimCostSizes[i - 1]);
  const double x1 = static_cast<double>(kSimCostSizes[i]);
  const double t = (static_cast<double>(bytes) - x0) / (x1 - x0);
  const double v = us[i - 1] + t * (us[i] - us[i - 1]);
  return us_to_ns(v < 0 ? 0 : v);
}

const sim_profile& find_sim_profile(std::string_view name, std::string_view context) {
  for (const sim_profile* p : kProfiles)
    if (p->name == name) return *p;
  throw invalid_argument(strprintf("%.*s: unknown SIM cost profile '%.*s'; the profiles are %s",
                                   static_cast<int>(context.size()), context.data(),
                                   static_cast<int>(name.size()), name.data(),
                                   sim_profile_names().c_str()));
}

std::string sim_profile_names() {
  std::string out;
  for (const sim_profile* p : kProfiles) {
    if (!out.empty()) out += ", ";
    out += p->name;
  }
  return out;
}

void sim_cost_meter::charge(dao_sim_op op, std::uint64_t count, std::uint64_t bytes,
                            std::uint64_t ns) noexcept {
  count_[op].fetch_add(count, std::memory_order_relaxed);
  if (bytes != 0) bytes_[op].fetch_add(bytes, std::memory_order_relaxed);
  if (ns != 0) ns_[op].fetch_add(ns, std::memory_order_relaxed);
}

void sim_cost_meter::on_alloc(std::size_t bytes) noexcept {
  charge(DAO_SIM_OP_ALLOC, 1, bytes, profile_.costs ? profile_.alloc.ns_at(bytes) : 0);
}

void sim_cost_meter::on_free(std::size_t bytes) noexcept {
  charge(DAO_SIM_OP_FREE, 1, bytes, profile_.costs ? profile_.free.ns_at(bytes) : 0);
}

void sim_cost_meter::on_map(std::size_t bytes, std::size_t granule) noexcept {
  const std::uint64_t n = granule == 0 ? 1 : (bytes + granule - 1) / granule;
  const bool c = profile_.costs;
  charge(DAO_SIM_OP_CREATE, n, bytes, c ? n * profile_.create.ns_at(granule) : 0);
  charge(DAO_SIM_OP_MAP, n, bytes, c ? n * profile_.map.ns_at(granule) : 0);
  charge(DAO_SIM_OP_SET_ACCESS, 1, bytes, c ? n * profile_.set_access.ns_at(granule) : 0);
}

void sim_cost_meter::on_unmap(std::size_t bytes, std::size_t granule) noexcept {
  const std::uint64_t n = granule == 0 ? 1 : (bytes + granule - 1) / granule;
  const bool c = profile_.costs;
  charge(DAO_SIM_OP_UNMAP, n, bytes, c ? n * profile_.unmap.ns_at(granule) : 0);
  charge(DAO_SIM_OP_RELEASE, n, bytes, c ? n * profile_.release.ns_at(granule) : 0);
}

void sim_cost_meter::on_event_record() noexcept {
  charge(DAO_SIM_OP_EVENT_RECORD, 1, 0, us_to_ns(profile_.event_record_us));
}

void sim_cost_meter::on_query() noexcept {
  charge(DAO_SIM_OP_EVENT_QUERY, 1, 0, us_to_ns(profile_.event_query_us));
}

void sim_cost_meter::on_synchronize() noexcept {
  charge(DAO_SIM_OP_SYNCHRONIZE, 1, 0, us_to_ns(profile_.synchronize_us));
}

void sim_cost_meter::on_host_func() noexcept {
  charge(DAO_SIM_OP_HOST_FUNC, 1, 0, us_to_ns(profile_.host_func_us));
}

void sim_cost_meter::note_range(const void* base, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(ranges_mutex_);
  ranges_[reinterpret_cast<std::uintptr_t>(base)] = bytes;
}

void sim_cost_meter::forget_range(const void* base) noexcept {
  std::lock_guard<std::mutex> lock(ranges_mutex_);
  ranges_.erase(reinterpret_cast<std::uintptr_t>(base));
}

bool sim_cost_meter::on_device(const void* p) const noexcept {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(ranges_mutex_);
  auto it = ranges_.upper_bound(a);
  if (it == ranges_.begin()) return false;
  --it;
  return a - it->first < it->second;
}

void sim_cost_meter::on_copy(void* dst, const void* src, std::size_t bytes) noexcept {
  const bool from = on_device(src), to = on_device(dst);
  // Host to host (neither on this device) is charged as a copy to the host.
  const dao_sim_op direction = from && to ? DAO_SIM_OP_COPY_ON_DEVICE
                               : to       ? DAO_SIM_OP_COPY_TO_DEVICE
                                          : DAO_SIM_OP_COPY_TO_HOST;
  const double gbs = direction == DAO_SIM_OP_COPY_TO_DEVICE ? profile_.to_device_gbs
                     : direction == DAO_SIM_OP_COPY_TO_HOST ? profile_.to_host_gbs
                                                            : profile_.on_device_gbs;
  // bytes / (GB/s) = ns.
  const std::uint64_t ns =
      gbs > 0 ? static_cast<std::uint64_t>(static_cast<double>(bytes) / gbs + 0.5) : 0;
  charge(direction, 1, bytes, ns);
}

dao_sim_cost sim_cost_meter::read(int op) const noexcept {
  dao_sim_cost c{};
  c.struct_size = sizeof c;
  c.count = count_[op].load(std::memory_order_relaxed);
  c.bytes = bytes_[op].load(std::memory_order_relaxed);
  c.ns = ns_[op].load(std::memory_order_relaxed);
  return c;
}

void sim_cost_meter::reset() noexcept {
  for (int i = 0; i < DAO_SIM_OP_COUNT; ++i) {
    count_[i].store(0, std::memory_order_relaxed);
    bytes_[i].store(0, std::memory_order_relaxed);
    ns_[i].store(0, std::memory_order_relaxed);
  }
}

const char* sim_op_name(int op) noexcept {
  static const char* const names[DAO_SIM_OP_COUNT] = {
      "alloc",     "free",           "create",       "map",           "set_access",
      "unmap",     "release",        "event_record", "event_query",   "synchronize",
      "host_func", "copy_to_device", "copy_to_host", "copy_on_device"};
  return op >= 0 && op < DAO_SIM_OP_COUNT ? names[op] : "unknown";
}

}  // namespace dao::detail
