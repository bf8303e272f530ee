// Simulated devices: host memory with a hard capacity (see include/dao/sim.h).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace dao::detail {

inline constexpr std::size_t kSimDefaultCapacity = std::size_t(1) << 30;

// Parses a DAO_SIM_DEVICES value ("2x512MiB", "1GiB,256MiB", "0") into
// capacities. Throws invalid_argument naming the variable when malformed.
std::vector<std::size_t> parse_sim_devices(std::string_view text);

// dao_sim_configure(): throws invalid_state when SIM is already in use with
// another configuration, invalid_argument for a bad count or capacity.
void sim_configure(const std::vector<std::size_t>& capacities);

}  // namespace dao::detail
