// The C boundary: every extern "C" function runs its body through guarded(),
// which turns any exception into a dao_status and the thread-local message.
#pragma once

#include <utility>

#include "core/error.hpp"
#include "dao/status.h"

namespace dao::detail {

template <class Body>
dao_status guarded(Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return DAO_OK;
  } catch (...) {
    const failure f = current_failure();  // the one mapping (core/error.hpp)
    return set_last_error(f.status, f.message);
  }
}

}  // namespace dao::detail
