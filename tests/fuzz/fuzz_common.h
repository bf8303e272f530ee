// Shared helpers of the libFuzzer harnesses (C++17, public API plus, for
// fuzz_config, the internal parser).
#pragma once

#include <dao.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

// Hot loops that the coverage feedback has nothing to learn from (the
// harness's own reference computations): not instrumented, so they run at
// full speed.
#if defined(__clang__) && __clang_major__ >= 13
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NO_COVERAGE
#endif

namespace fuzz {

// A broken invariant: say which, with the library's last message, and trap
// so that libFuzzer keeps the input.
[[noreturn]] inline void fail(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

inline void fail(const char* file, int line, const char* fmt, ...) {
  std::fprintf(stderr, "\n=== INVARIANT BROKEN at %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n=== dao_last_error() on this thread: %s\n", dao_last_error());
  std::fflush(stderr);
  __builtin_trap();
}

#define FUZZ_FAIL(...) ::fuzz::fail(__FILE__, __LINE__, __VA_ARGS__)
#define FUZZ_CHECK(cond, ...)            \
  do {                                   \
    if (!(cond)) FUZZ_FAIL(__VA_ARGS__); \
  } while (0)

// Expects exactly `want` from a call.
#define FUZZ_EXPECT(expr, want)                                                                \
  do {                                                                                         \
    dao_status fuzz_got_ = (expr);                                                             \
    dao_status fuzz_want_ = (want);                                                            \
    if (fuzz_got_ != fuzz_want_)                                                               \
      FUZZ_FAIL("%s gave %d (%s), expected %d (%s)", #expr, (int)fuzz_got_,                    \
                dao_status_string(fuzz_got_), (int)fuzz_want_, dao_status_string(fuzz_want_)); \
  } while (0)

#define FUZZ_OK(expr) FUZZ_EXPECT((expr), DAO_OK)

// A failing status must come with a message.
inline void require_message(dao_status s, const char* file, int line) {
  if (s != DAO_OK && dao_last_error()[0] == '\0')
    fail(file, line, "status %d (%s) without a message", (int)s, dao_status_string(s));
}
#define FUZZ_MESSAGE(s) ::fuzz::require_message((s), __FILE__, __LINE__)

// DAO_FUZZ_SKIP_KNOWN steers the harnesses around the libdao bugs they
// already found (tests/fuzz/README.md lists them with their tags), so that a
// long run can look for new ones: "1" or "all" for every known bug, or a
// comma-separated list of tags. Unset, every known bug still makes its
// harness fail.
inline bool skip_known_bug(const char* tag) {
  const char* v = std::getenv("DAO_FUZZ_SKIP_KNOWN");
  if (v == nullptr || *v == '\0') return false;
  if (std::strcmp(v, "1") == 0 || std::strcmp(v, "all") == 0) return true;
  const std::size_t n = std::strlen(tag);
  for (const char* p = v; (p = std::strstr(p, tag)) != nullptr; p += n)
    if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return true;
  return false;
}

// Block contents: a byte pattern of a seed, copied from a table so that a
// fill or a check is one memcpy / memcmp even under AddressSanitizer.
constexpr std::size_t kPatternPeriod = 4093;  // prime
constexpr std::size_t kPatternMax = std::size_t(17) << 20;

FUZZ_NO_COVERAGE inline unsigned char* make_pattern_table() {
  auto* t = static_cast<unsigned char*>(std::malloc(kPatternPeriod + kPatternMax));
  if (t == nullptr) std::abort();
  std::uint64_t s = 0x243F6A8885A308D3ull;
  for (std::size_t i = 0; i < kPatternPeriod; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    t[i] = static_cast<unsigned char>(s >> 24);
  }
  for (std::size_t i = kPatternPeriod; i < kPatternPeriod + kPatternMax; ++i)
    t[i] = t[i - kPatternPeriod];
  return t;
}

inline const unsigned char* pattern_table() {
  static const unsigned char* table = make_pattern_table();
  return table;
}

inline const unsigned char* pattern(std::uint64_t seed) {
  return pattern_table() + (seed * 0x9E3779B97F4A7C15ull >> 20) % kPatternPeriod;
}

inline void fill(void* p, std::size_t n, std::uint64_t seed) {
  if (n > kPatternMax) std::abort();
  std::memcpy(p, pattern(seed), n);
}

// Index of the first byte that differs from the pattern, or n.
FUZZ_NO_COVERAGE inline std::size_t first_mismatch(const void* p, std::size_t n,
                                                   std::uint64_t seed) {
  const unsigned char* want = pattern(seed);
  if (std::memcmp(p, want, n) == 0) return n;
  const auto* got = static_cast<const unsigned char*>(p);
  std::size_t i = 0;
  while (got[i] == want[i]) ++i;
  return i;
}

}  // namespace fuzz
