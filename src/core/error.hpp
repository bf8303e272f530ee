// Internal error hierarchy. Everything below the C API reports failures by
// throwing one of these; src/capi/guard.hpp turns them into a dao_status and
// the thread-local message.
#pragma once

#include <stdexcept>
#include <string>

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

#define DAO_DEFINE_ERROR_(name, code)                                  \
  class name : public error {                                          \
   public:                                                             \
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

}  // namespace dao::detail
