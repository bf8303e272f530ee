// Which whole memory types a communicator can build on which location, and
// where each rank's part lives.
#pragma once

#include "dao/place.h"
#include "whole/communicator.hpp"

namespace dao::detail::whole {

const char* type_name(int type) noexcept;
const char* location_name(int location) noexcept;

// Where rank `rank`'s part lives: its own place for DAO_WHOLE_DEVICE, the
// CPU for DAO_WHOLE_HOST.
dao_place part_place(const communicator& comm, int rank, int location);

// Throws invalid_argument for an unknown type or location, unsupported
// (saying why, and what would work) when this communicator cannot build
// the type there. The answer is the same on every rank.
void check_support(const communicator& comm, int type, int location);

}  // namespace dao::detail::whole
