// Chooses how the memory of a new object is built (see storage.hpp).
#include "whole/storage.hpp"

#include "dao/whole.h"

namespace dao::detail::whole {

std::unique_ptr<storage> make_storage(communicator& comm, int type, int location,
                                      const partition& layout) {
  const bool in_process = comm.net().shares_address_space();
  if (device_parts(comm, location)) {
    if (type != DAO_WHOLE_CONTINUOUS) return make_device_storage(comm, type, location, layout);
    // Continuous: a reserved range, in one process or in each.
    if (!in_process) return make_device_range_storage(comm, location, layout);
  }
  if (type == DAO_WHOLE_DISTRIBUTED) return make_parts_storage(comm, type, location, layout);
  if (!in_process) return make_shared_storage(comm, type, location, layout);
  if (type == DAO_WHOLE_CONTINUOUS) return make_continuous_storage(comm, location, layout);
  return make_parts_storage(comm, type, location, layout);
}

}  // namespace dao::detail::whole
