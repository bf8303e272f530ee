// dao_status_string and dao_last_error (the message lives in core/error.cpp).
#include "capi/guard.hpp"
#include "dao/status.h"

extern "C" const char* dao_status_string(dao_status status) {
  switch (static_cast<int>(status)) {
#define DAO_STATUS_CASE_(name, value, text) \
  case value: return text;
    DAO_STATUS_LIST(DAO_STATUS_CASE_)
#undef DAO_STATUS_CASE_
    default: return "unknown status";
  }
}

extern "C" const char* dao_last_error(void) { return dao::detail::last_error_message(); }
