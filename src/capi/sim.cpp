// dao_sim_*: the simulated devices' configuration and cost profiles.
#include <vector>

#include "capi/guard.hpp"
#include "capi/sized_struct.hpp"
#include "dao/sim.h"
#include "resource/sim.hpp"
#include "util/format.hpp"
#include "util/raw_enum.hpp"

using namespace dao::detail;

extern "C" dao_status dao_sim_configure(int count, const size_t* capacities) {
  return guarded([&] {
    if (count < 0 || count > DAO_SIM_MAX_DEVICES) {
      throw invalid_argument(strprintf("dao_sim_configure: count %d is out of range 0..%d", count,
                                       DAO_SIM_MAX_DEVICES));
    }
    std::vector<std::size_t> caps(static_cast<std::size_t>(count), kSimDefaultCapacity);
    if (capacities != nullptr) caps.assign(capacities, capacities + count);
    sim_configure(caps);
  });
}

extern "C" dao_status dao_sim_set_profile(const char* profile) {
  return guarded([&] {
    require_non_null(profile, "dao_sim_set_profile", "profile");
    sim_set_profile(profile);
  });
}

extern "C" dao_status dao_sim_get_profile(const char** profile) {
  return guarded([&] {
    require_non_null(profile, "dao_sim_get_profile", "profile");
    *profile = sim_current_profile().name.data();  // static, NUL-terminated
  });
}

extern "C" dao_status dao_sim_get_cost(int device, dao_sim_op op, dao_sim_cost* out) {
  return guarded([&] {
    require_non_null(out, "dao_sim_get_cost", "out");
    const int o = raw_enum(op);
    if (o < 0 || o >= DAO_SIM_OP_COUNT) {
      throw invalid_argument(strprintf("dao_sim_get_cost: unknown operation %d (valid 0..%d)", o,
                                       DAO_SIM_OP_COUNT - 1));
    }
    check_sized(out, "dao_sim_get_cost", "out");  // before any work
    write_sized(sim_meter(device).read(o), out, "dao_sim_get_cost", "out");
  });
}

extern "C" dao_status dao_sim_reset_costs(int device) {
  return guarded([&] { sim_meter(device).reset(); });
}

extern "C" const char* dao_sim_op_name(dao_sim_op op) { return sim_op_name(raw_enum(op)); }
