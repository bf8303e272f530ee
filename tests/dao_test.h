/* Shared fixtures and assertions for the cmocka tests. */
#ifndef DAO_TEST_H
#define DAO_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dao.h>

/* Asserts that `expr` returns `expected`; on mismatch prints both statuses
 * and the library's message, so a failure explains itself. */
#define assert_status(expr, expected)                                                          \
  do {                                                                                         \
    dao_status dao_got_ = (expr);                                                              \
    dao_status dao_want_ = (expected);                                                         \
    if (dao_got_ != dao_want_) {                                                               \
      print_error("%s:%d: %s returned %d (%s), expected %d (%s); last error: %s\n", __FILE__,  \
                  __LINE__, #expr, (int)dao_got_, dao_status_string(dao_got_), (int)dao_want_, \
                  dao_status_string(dao_want_), dao_last_error());                             \
      fail();                                                                                  \
    }                                                                                          \
  } while (0)

#define assert_ok(expr) assert_status((expr), DAO_OK)

/* Asserts a failing status AND a non-empty message that contains `needle`. */
#define assert_failure_mentions(expr, expected, needle)                              \
  do {                                                                               \
    assert_status((expr), (expected));                                               \
    if (strstr(dao_last_error(), (needle)) == NULL) {                                \
      print_error("%s:%d: message '%s' does not mention '%s'\n", __FILE__, __LINE__, \
                  dao_last_error(), (needle));                                       \
      fail();                                                                        \
    }                                                                                \
  } while (0)

static inline int dao_test_is_aligned(const void *p, size_t alignment) {
  return ((uintptr_t)p % alignment) == 0;
}

/* Fills `bytes` of `p` with a pattern derived from `seed`. */
static inline void dao_test_fill(void *p, size_t bytes, unsigned seed) {
  unsigned char *c = (unsigned char *)p;
  size_t i;
  for (i = 0; i < bytes; ++i) c[i] = (unsigned char)(seed * 131u + i * 7u);
}

/* Returns 1 when `p` still holds the pattern of dao_test_fill(seed). */
static inline int dao_test_check(const void *p, size_t bytes, unsigned seed) {
  const unsigned char *c = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < bytes; ++i)
    if (c[i] != (unsigned char)(seed * 131u + i * 7u)) return 0;
  return 1;
}

/* A small deterministic generator (xorshift64*), so runs repeat. */
static inline uint64_t dao_test_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* The stats of an allocator, asserting success. */
static inline dao_allocator_stats dao_test_stats(dao_allocator *a) {
  dao_allocator_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_allocator_get_stats(a, &s));
  return s;
}

#endif /* DAO_TEST_H */
