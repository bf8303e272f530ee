// Handle checks of the C API: every handle type starts with a 64-bit magic
// value, checked on every call, so that a handle of another type, a pointer
// to something else or the zeroed memory of a destroyed handle is refused
// with DAO_ERR_INVALID_ARGUMENT instead of being used.
#pragma once

#include <cstdint>
#include <cstring>

namespace dao::detail {

// Whether `p` may be a live T handle: aligned as a T, with T::kMagic at its
// start. The magic is read as bytes, so a misaligned pointer or one to
// another type is refused without undefined behaviour.
template <class T>
bool has_magic(const void* p) noexcept {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0) return false;
  std::uint64_t magic = 0;
  std::memcpy(&magic, p, sizeof magic);
  return magic == T::kMagic;
}

}  // namespace dao::detail
