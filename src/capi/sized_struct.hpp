// Size-tagged structs (dao_allocator_stats, dao_recycle_stats, ...): the
// caller sets struct_size; the library writes the fields it knows, so that
// either side may be newer.
//
// The rule (issue 20: a struct_size larger than the caller's buffer, an
// uninitialised field, made the library zero-fill up to struct_size bytes,
// and SIZE_MAX gave a wild memset):
//  - a struct_size below the struct's oldest size (oldest_size<T>: its size
//    in the first version that had it) is refused: no version had it;
//  - a struct_size above kMaxStructSize is refused: no struct of libdao will
//    ever be that large, so it is an unset or corrupted field;
//  - otherwise the library writes the fields that fit: min(struct_size,
//    sizeof(T)) bytes, so a program built against an older header (a
//    smaller struct) keeps working, and keeps the caller's struct_size.
//    Bytes past sizeof(T), the fields of a newer header, are never touched:
//    a caller that zero-fills its struct reads 0 in them.
// A refusal is DAO_ERR_INVALID_ARGUMENT, with nothing written.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "capi/guard.hpp"
#include "dao/tiered.h"
#include "util/format.hpp"

namespace dao::detail {

// The largest struct_size accepted (64 KiB), stated in the public headers.
inline constexpr std::size_t kMaxStructSize = 64 * 1024;

// The size of a sized struct in the first version that had it: the
// smallest struct_size a caller can send. A struct that grows gets a line
// here naming its first new field (docs/abi.md).
template <class T>
inline constexpr std::size_t oldest_size = sizeof(T);
// The ABI baseline (abi/libdao.abi, as recorded before issue 21's idle_trim)
// ended at tensors_live; device_range_bytes, trims and idle_trims came
// with idle_trim (issue 21).
template <>
inline constexpr std::size_t oldest_size<dao_tiered_stats> = offsetof(dao_tiered_stats,
                                                                      device_range_bytes);

// Throws invalid_argument when `caller_size` cannot be the struct_size of a
// struct this version knows as `known` bytes. The message names the field
// as "<function>: <name>->struct_size" (`function` may be NULL: a collective
// call adds its own prefix). Allocates only to throw.
inline void check_struct_size(std::size_t caller_size, std::size_t known, const char* function,
                              const char* name) {
  if (caller_size >= known && caller_size <= kMaxStructSize) return;
  const std::string what =
      function != nullptr ? strprintf("%s: %s", function, name) : std::string(name);
  if (caller_size < known) {
    throw invalid_argument(strprintf("%s->struct_size is %zu; set it to sizeof (at least %zu)",
                                     what.c_str(), caller_size, known));
  }
  throw invalid_argument(strprintf(
      "%s->struct_size is %zu, larger than any libdao struct can be (at most %zu bytes): it is "
      "probably unset; set it to sizeof (%zu in this version)",
      what.c_str(), caller_size, kMaxStructSize, known));
}

// Checks the caller's struct `target` before any work: not NULL, and a
// struct_size the rule above accepts.
template <class T>
void check_sized(const T* target, const char* function, const char* name) {
  require_non_null(target, function, name);
  check_struct_size(target->struct_size, oldest_size<T>, function, name);
}

// Copies `value` into the caller's struct `target`: checks it (check_sized),
// writes the fields that both versions know (min(struct_size, sizeof(T))
// bytes), nothing past them, and keeps the caller's struct_size.
template <class T>
void write_sized(const T& value, T* target, const char* function, const char* name) {
  check_sized(target, function, name);
  const std::size_t caller_size = target->struct_size;
  std::memcpy(target, &value, caller_size < sizeof(T) ? caller_size : sizeof(T));
  target->struct_size = caller_size;
}

}  // namespace dao::detail
