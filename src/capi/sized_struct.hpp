// Size-tagged structs (dao_allocator_stats, dao_recycle_stats, ...): the
// caller sets struct_size; the library writes what fits, so that either side
// may be newer.
#pragma once

#include <cstring>

#include "capi/guard.hpp"
#include "util/format.hpp"

namespace dao::detail {

// Copies `value` into the caller's struct `target`: refuses a struct_size
// smaller than this version's, zero-fills the fields a newer caller has
// beyond ours, and keeps the caller's struct_size.
template <class T>
void write_sized(const T& value, T* target, const char* function, const char* name) {
  require_non_null(target, function, name);
  const std::size_t caller_size = target->struct_size;
  if (caller_size < sizeof(T)) {
    throw invalid_argument(strprintf("%s: %s->struct_size is %zu; set it to sizeof (at least %zu)",
                                     function, name, caller_size, sizeof(T)));
  }
  std::memset(reinterpret_cast<char*>(target) + sizeof(T), 0, caller_size - sizeof(T));
  std::memcpy(target, &value, sizeof(T));
  target->struct_size = caller_size;
}

}  // namespace dao::detail
