// The in-process transport: every rank is a thread of this process, driving
// one handle. Collectives meet in a group object (mutex and condition
// variable); one-sided operations are plain copies between the ranks'
// memory, which is all in this address space.
#pragma once

#include <memory>
#include <vector>

#include "whole/transport.hpp"

namespace dao::detail::whole {

// One transport per rank of a new group of `ranks` ranks.
std::vector<std::unique_ptr<transport>> make_local_group(int ranks);

}  // namespace dao::detail::whole
