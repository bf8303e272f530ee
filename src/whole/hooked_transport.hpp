// A transport handed in through the C hook dao_comm_transport (whole.h,
// DAO_EXPERIMENTAL): libdao-mpi's, or another library's.
#pragma once

#include <memory>

// The including file defines DAO_EXPERIMENTAL before its first include, so
// that whole.h declares the hook wherever it is included first.
#ifndef DAO_EXPERIMENTAL
#error "define DAO_EXPERIMENTAL before the first include of this file"
#endif
#include "dao/whole.h"
#include "whole/transport.hpp"

namespace dao::detail::whole {

// Checks the operations (invalid_argument naming what is missing) and takes
// ownership: from here on, `destroy` is called exactly once, when the
// result goes (or at once, when the check or the adoption throws). Out of
// host memory with usable operations, it first takes part in the agreement
// of the communicator's creation (`function`, make_communicator()) with its
// failure, so that every rank throws alike.
std::unique_ptr<transport> adopt_transport(const dao_comm_transport& ops, const char* function);

}  // namespace dao::detail::whole
