// Copying one entry of whole memory: fixed-size copies (inlined) for the
// common entry sizes, where a call to memcpy per entry would cost more than
// the copy itself (a gather of 8-byte entries is a loop of such copies).
#pragma once

#include <cstddef>
#include <cstring>

namespace dao::detail::whole {

inline void copy_entry(char* dst, const char* src, std::size_t g) noexcept {
  switch (g) {
    case 4: std::memcpy(dst, src, 4); return;
    case 8: std::memcpy(dst, src, 8); return;
    case 16: std::memcpy(dst, src, 16); return;
    case 32: std::memcpy(dst, src, 32); return;
    case 64: std::memcpy(dst, src, 64); return;
    case 128: std::memcpy(dst, src, 128); return;
    default: std::memcpy(dst, src, g); return;
  }
}

}  // namespace dao::detail::whole
