// The C boundary: every extern "C" function runs its body through guarded(),
// which turns any exception into a dao_status and the thread-local message.
#pragma once

#include <exception>
#include <new>
#include <utility>

#include "core/error.hpp"
#include "dao/status.h"

namespace dao::detail {

// Records `message` as this thread's last error and returns `status`.
// Never throws and never allocates.
dao_status set_last_error(dao_status status, const char* message) noexcept;

template <class Body>
dao_status guarded(Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return DAO_OK;
  } catch (const error& e) {
    return set_last_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_last_error(DAO_ERR_OUT_OF_MEMORY,
                          "host memory for libdao's own bookkeeping is exhausted");
  } catch (const std::exception& e) {
    return set_last_error(DAO_ERR_INTERNAL, e.what());
  } catch (...) {
    return set_last_error(DAO_ERR_INTERNAL, "unknown internal error");
  }
}

// Throws invalid_argument("<function>: <name> must not be NULL").
[[noreturn]] void throw_null_argument(const char* function, const char* name);

// Throws as above when p is null. Inline: every call of the C API checks
// its arguments, and the hot ones (alloc, free) should not pay a call.
inline void require_non_null(const void* p, const char* function, const char* name) {
  if (__builtin_expect(p == nullptr, 0)) throw_null_argument(function, name);
}

}  // namespace dao::detail
