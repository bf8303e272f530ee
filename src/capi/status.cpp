// dao_status_string, dao_last_error and the thread-local message buffer.
#include <cstdio>
#include <cstring>

#include "capi/guard.hpp"
#include "dao/status.h"
#include "util/format.hpp"

namespace dao::detail {
namespace {
// A fixed buffer: recording an error must not allocate (it may report a
// failed allocation).
thread_local char last_error_message[1024] = "";
}  // namespace

dao_status set_last_error(dao_status status, const char* message) noexcept {
  std::snprintf(last_error_message, sizeof last_error_message, "%s",
                message != nullptr ? message : "");
  return status;
}

void throw_null_argument(const char* function, const char* name) {
  throw invalid_argument(strprintf("%s: %s must not be NULL", function, name));
}

}  // namespace dao::detail

extern "C" const char* dao_status_string(dao_status status) {
  switch (static_cast<int>(status)) {
#define DAO_STATUS_CASE_(name, value, text) \
  case value:                               \
    return text;
    DAO_STATUS_LIST(DAO_STATUS_CASE_)
#undef DAO_STATUS_CASE_
    default:
      return "unknown status";
  }
}

extern "C" const char* dao_last_error(void) { return dao::detail::last_error_message; }
