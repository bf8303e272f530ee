// String helpers for messages and effective configs (see format.hpp).
#include "util/format.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace dao::detail {

std::string strprintf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, args);
    out.resize(static_cast<std::size_t>(n));
  }
  va_end(args);
  return out;
}

std::string format_bytes(std::size_t bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return strprintf("%zu B", bytes);
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  return strprintf("%.1f %s", value, units[unit]);
}

std::string format_size_exact(std::size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return strprintf("%zu%s", bytes, units[unit]);
}

std::string format_double_exact(double x) {
  for (int precision = 6; precision < 17; ++precision) {
    std::string text = strprintf("%.*g", precision, x);
    if (std::strtod(text.c_str(), nullptr) == x) return text;
  }
  return strprintf("%.17g", x);
}

}  // namespace dao::detail
