// Calls a strategy's out-of-memory observer (dao_allocator_set_oom_callback,
// issue 18) after an allocation failed for lack of memory: on the failing
// thread, inside a callback_scope that refuses allocating from, destroying
// or re-arming the same allocator, keeping the failure's message as the
// thread's last error afterwards.
#pragma once

#include <string>

#include "core/callback_scope.hpp"
#include "core/error.hpp"
#include "dao/trace.h"
#include "strategy/strategy.hpp"
#include "util/format.hpp"

namespace dao::detail {

inline void notify_oom(strategy& s, std::size_t size, dao_stream stream) noexcept {
  const strategy::oom_observer* o = s.observer();
  if (o == nullptr) return;
  try {
    const std::string message = dao_last_error();
    {
      callback_scope scope(callback_scope::kind::oom, &s);
      reinterpret_cast<dao_oom_callback>(o->fn)(static_cast<dao_allocator*>(o->handle), size,
                                                stream, o->user_data);
    }
    set_last_error(DAO_ERR_OUT_OF_MEMORY, message.c_str());
  } catch (...) {  // copying the message failed: the callback is skipped
  }
}

// Throws invalid_state when this thread runs `s`'s out-of-memory callback.
inline void refuse_inside_oom_callback(const strategy& s, const char* function) {
  if (s.observer() != nullptr && callback_scope::inside(callback_scope::kind::oom, &s)) {
    throw invalid_state(strprintf(
        "%s: called from this allocator's out-of-memory callback, where allocating from it, "
        "destroying it or setting its callback is not allowed (free memory, take a snapshot or "
        "stop the recording there instead)",
        function));
  }
}

}  // namespace dao::detail
