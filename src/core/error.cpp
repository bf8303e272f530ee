// The thread-local message behind dao_last_error(), set where an exception
// meets the C API (or by the few expected-status paths, see error.hpp).
#include "core/error.hpp"

#include <cstdio>

#include "util/format.hpp"

namespace dao::detail {
namespace {
// A fixed buffer: recording an error must not allocate (it may report a
// failed allocation).
thread_local char last_error_text[1024] = "";
}  // namespace

dao_status set_last_error(dao_status status, const char* message) noexcept {
  std::snprintf(last_error_text, sizeof last_error_text, "%s", message != nullptr ? message : "");
  return status;
}

const char* last_error_message() noexcept { return last_error_text; }

const char* status_text(int status) noexcept {
  switch (status) {
#define DAO_STATUS_CASE_(name, value, text) \
  case value: return text;
    DAO_STATUS_LIST(DAO_STATUS_CASE_)
#undef DAO_STATUS_CASE_
    default: return "unknown status";
  }
}

void throw_null_argument(const char* function, const char* name) {
  throw invalid_argument(strprintf("%s: %s must not be NULL", function, name));
}

}  // namespace dao::detail
