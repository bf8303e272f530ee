/* Helpers shared by the benchmarks: command-line parsing, sizes, host
 * allocation, whether a sanitizer is on. Header-only (static inline), so a
 * benchmark needs no extra file to build. */
#ifndef DAO_BENCH_COMMON_H
#define DAO_BENCH_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when the benchmark is built with AddressSanitizer or ThreadSanitizer
   (GCC defines __SANITIZE_*, Clang answers __has_feature): timings then
   mean little, and the benchmarks say so. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif
#ifndef BENCH_SANITIZED
#define BENCH_SANITIZED 0
#endif

/* Prints "prog: message", points to --help and exits with status 2. */
static inline void bad_flag(const char *prog, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry '%s --help'.\n", prog);
  exit(2);
}

/* A decimal count in [lo, hi], or bad_flag(). */
static inline uint64_t parse_count(const char *prog, const char *flag, const char *text,
                                   uint64_t lo, uint64_t hi) {
  const char *s = text;
  uint64_t v = 0;
  if (*s == '\0') bad_flag(prog, "%s needs a number, got an empty string", flag);
  for (; *s != '\0'; ++s) {
    uint64_t digit;
    if (*s < '0' || *s > '9') bad_flag(prog, "%s: '%s' is not a decimal number", flag, text);
    digit = (uint64_t)(*s - '0');
    if (v > (UINT64_MAX - digit) / 10) bad_flag(prog, "%s: '%s' is too large", flag, text);
    v = v * 10 + digit;
  }
  if (v < lo || v > hi) {
    bad_flag(prog, "%s: %s is out of range %llu..%llu", flag, text, (unsigned long long)lo,
             (unsigned long long)hi);
  }
  return v;
}

/* If argv[*i] is one of the `count` flags that take a value ("--flag V" or
 * "--flag=V"), returns that flag and sets *value (advancing *i past a
 * separate value); returns NULL for any other argument. */
static inline const char *match_valued_flag(const char *prog, int argc, char **argv, int *i,
                                            const char *const *valued, size_t count,
                                            const char **value) {
  const char *arg = argv[*i];
  size_t f;
  for (f = 0; f < count; ++f) {
    size_t n = strlen(valued[f]);
    if (strncmp(arg, valued[f], n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
      if (arg[n] == '=') {
        *value = arg + n + 1;
      } else if (*i + 1 < argc) {
        *value = argv[++*i];
      } else {
        bad_flag(prog, "%s needs a value", valued[f]);
      }
      return valued[f];
    }
  }
  return NULL;
}

/* "512 B", "1.50 MiB", "64 GiB" into buf. */
static inline const char *format_bytes(double bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  snprintf(buf, len, bytes == (double)(uint64_t)bytes ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

/* Whether a CMake build type optimises (timings of others mislead). */
static inline int is_optimised_build_type(const char *t) {
  return strcmp(t, "Release") == 0 || strcmp(t, "RelWithDebInfo") == 0 ||
         strcmp(t, "MinSizeRel") == 0;
}

/* malloc that exits with status 1 when the host has no memory. */
static inline void *xmalloc(size_t n) {
  void *p = malloc(n != 0 ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "benchmark: out of host memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

#endif /* DAO_BENCH_COMMON_H */
