// dao_status_string and dao_last_error (the texts and the message live in
// core/error.cpp).
#include "capi/guard.hpp"
#include "dao/status.h"
#include "util/raw_enum.hpp"

// Read as the caller stored it: a value outside the enumerators must not be
// loaded as a dao_status in C++ (undefined; clang's -fsanitize=enum).
extern "C" const char* dao_status_string(dao_status status) {
  return dao::detail::status_text(dao::detail::raw_enum(status));
}

extern "C" const char* dao_last_error(void) { return dao::detail::last_error_message(); }
