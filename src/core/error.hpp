// The one error idiom of libdao's C++ layers.
//
// - A failure is thrown as an `error` (a dao_status and a message naming
//   the function, the object and what to do), from any layer. Code below
//   the C API never returns a status for a failure and never writes the
//   thread's message itself.
// - Exceptions stop at two kinds of boundary, which both ask
//   current_failure() what was thrown: the C API's guarded() (capi/guard.hpp)
//   records it as the thread's last error, and capture() keeps it as an
//   `outcome` where a failure must travel as a value (partitioned memory
//   agrees on every rank's outcome before any rank throws).
// - The one exception to "throw": an operation whose *expected* results
//   include a non-OK status that callers meet in normal running (a recycle
//   pool's timeout or closed), on a path that must not allocate. It returns
//   that dao_status after recording its message with set_last_error(),
//   exactly what the C API would have made of a thrown error.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "dao/status.h"

namespace dao::detail {

class error : public std::runtime_error {
 public:
  error(dao_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  dao_status status() const noexcept { return status_; }

 private:
  dao_status status_;
};

#define DAO_DEFINE_ERROR_(name, code)                                   \
  class name : public error {                                           \
   public:                                                              \
    explicit name(const std::string& message) : error(code, message) {} \
  };

DAO_DEFINE_ERROR_(invalid_argument, DAO_ERR_INVALID_ARGUMENT)
DAO_DEFINE_ERROR_(out_of_memory, DAO_ERR_OUT_OF_MEMORY)
DAO_DEFINE_ERROR_(invalid_pointer, DAO_ERR_INVALID_POINTER)
DAO_DEFINE_ERROR_(unsupported, DAO_ERR_UNSUPPORTED)
DAO_DEFINE_ERROR_(no_device, DAO_ERR_NO_DEVICE)
DAO_DEFINE_ERROR_(backend_error, DAO_ERR_BACKEND)
DAO_DEFINE_ERROR_(invalid_state, DAO_ERR_INVALID_STATE)
DAO_DEFINE_ERROR_(busy, DAO_ERR_BUSY)
DAO_DEFINE_ERROR_(not_found, DAO_ERR_NOT_FOUND)

#undef DAO_DEFINE_ERROR_

// Throws invalid_argument("<function>: <name> must not be NULL").
[[noreturn]] void throw_null_argument(const char* function, const char* name);

// Throws as above when p is null. Inline: every call of the C API checks
// its arguments, and the hot ones (alloc, free) should not pay a call.
inline void require_non_null(const void* p, const char* function, const char* name) {
  if (__builtin_expect(p == nullptr, 0)) throw_null_argument(function, name);
}

// What the exception being handled means to a C caller. Call it only inside
// a catch block; `message` lives as long as that handler.
struct failure {
  dao_status status;
  const char* message;
};

inline failure current_failure() noexcept {
  try {
    throw;
  } catch (const error& e) {
    return {e.status(), e.what()};
  } catch (const std::bad_alloc&) {
    return {DAO_ERR_OUT_OF_MEMORY, "host memory for libdao's own bookkeeping is exhausted"};
  } catch (const std::exception& e) {
    return {DAO_ERR_INTERNAL, e.what()};
  } catch (...) {
    return {DAO_ERR_INTERNAL, "unknown internal error"};
  }
}

// Records `message` as this thread's last error (dao_last_error()) and
// returns `status`. Never throws and never allocates.
dao_status set_last_error(dao_status status, const char* message) noexcept;

// The thread's last error message ("" when none yet).
const char* last_error_message() noexcept;

// What a status value means ("out of memory", ...), for any int a C caller
// may hold in a dao_status: "unknown status" for a value that is none.
const char* status_text(int status) noexcept;

// A failure kept as a value, or none.
struct outcome {
  dao_status status = DAO_OK;
  std::string message;
  bool ok() const noexcept { return status == DAO_OK; }
};

// Runs `step`, turning what it throws into an outcome.
template <class Step>
outcome capture(Step&& step) noexcept {
  try {
    std::forward<Step>(step)();
    return {};
  } catch (...) {
    const failure f = current_failure();
    try {
      return {f.status, f.message};
    } catch (...) {  // no memory left for the message
      return {f.status, std::string()};
    }
  }
}

}  // namespace dao::detail
