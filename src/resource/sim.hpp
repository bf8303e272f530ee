// Simulated devices: host memory with a hard capacity (see include/dao/sim.h).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "resource/sim_costs.hpp"

namespace dao::detail {

inline constexpr std::size_t kSimDefaultCapacity = std::size_t(1) << 30;

// Parses a DAO_SIM_DEVICES value ("2x512MiB", "1GiB,256MiB", "0") into
// capacities. Throws invalid_argument naming the variable when malformed.
std::vector<std::size_t> parse_sim_devices(std::string_view text);

// dao_sim_configure(): throws invalid_state when SIM is already in use with
// another configuration, invalid_argument for a bad count or capacity.
void sim_configure(const std::vector<std::size_t>& capacities);

// dao_sim_set_profile(): the same rules (before first use, or the same).
void sim_set_profile(std::string_view name);

// The profile in effect; fixes the SIM configuration as a first use does.
const sim_profile& sim_current_profile();

// The cost meter of SIM device `device`; throws no_device as resource_for().
sim_cost_meter& sim_meter(int device);

}  // namespace dao::detail
