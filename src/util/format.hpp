// Small string helpers for error messages and config round-trips.
#pragma once

#include <cstddef>
#include <string>

namespace dao::detail {

// printf into a std::string.
std::string strprintf(const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

// Human-readable byte count: "512 B", "1.5 MiB", "64.0 GiB".
std::string format_bytes(std::size_t bytes);

// Exact byte count in the shortest unit that divides it ("64MiB", "1000B"),
// accepted back by parse_size(): used to print effective configs.
std::string format_size_exact(std::size_t bytes);

// The shortest decimal form of `x` that reads back as exactly `x` ("0.1",
// "0.99999999"): effective configs must parse back to the same values.
std::string format_double_exact(double x);

}  // namespace dao::detail
