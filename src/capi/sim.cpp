// dao_sim_configure.
#include <vector>

#include "capi/guard.hpp"
#include "dao/sim.h"
#include "resource/sim.hpp"
#include "util/format.hpp"

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
