/* The library's own memory is not the caller's (issue 20): recycle pools,
 * tiered pools and partitioned memory take their memory from an allocator
 * of their own per place, so dao_used() does not count it, dao_free()
 * refuses its pointers, and dao_used_internal() reports it apart. */
#include "dao_test.h"

#define MIB ((size_t)1 << 20)

static size_t used(dao_place p) {
  size_t b = 0;
  assert_ok(dao_used(p, &b));
  return b;
}

static size_t internal(dao_place p) {
  size_t b = 0;
  assert_ok(dao_used_internal(p, &b));
  return b;
}

static void test_recycle_memory_is_internal(void **state) {
  (void)state;
  const dao_place p = dao_place_sim(0);
  const size_t used0 = used(p), internal0 = internal(p);
  const size_t shape[1] = {MIB};
  dao_recycle_pool *pool = NULL;
  assert_ok(dao_recycle_create(p, 1, 1, shape, 4, 2, NULL, &pool));
  assert_int_equal(used(p), used0);
  assert_true(internal(p) >= internal0 + 2 * MIB);

  dao_buffer *b = NULL;
  void *data = NULL;
  assert_ok(dao_recycle_acquire(pool, 0, &b));
  assert_ok(dao_buffer_data(b, &data));
  /* A user cannot free a pool's memory from under it. */
  assert_failure_mentions(dao_free(p, data), DAO_ERR_INVALID_POINTER, "not a live allocation");
  memset(data, 0x5a, MIB); /* still the pool's, still usable */
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_recycle_destroy(pool));
  assert_int_equal(used(p), used0);
  assert_int_equal(internal(p), internal0);
}

static void test_tiered_memory_is_internal(void **state) {
  (void)state;
  const dao_place d = dao_place_sim(0);
  const size_t used0 = used(d), internal0 = internal(d);
  dao_tiered *t = NULL;
  assert_ok(dao_tiered_create(d, dao_place_cpu(), 4 * MIB, NULL, &t));
  assert_int_equal(used(d), used0);
  assert_true(internal(d) >= internal0 + 4 * MIB);
  assert_ok(dao_tiered_destroy(t));
  assert_int_equal(used(d), used0);
  assert_int_equal(internal(d), internal0);
}

static void test_user_memory_is_not_internal(void **state) {
  (void)state;
  const dao_place p = dao_place_sim(1);
  const size_t used0 = used(p), internal0 = internal(p);
  void *q = NULL;
  assert_ok(dao_alloc(p, MIB, &q));
  assert_true(used(p) >= used0 + MIB);
  assert_int_equal(internal(p), internal0);
  assert_ok(dao_free(p, q));
  assert_int_equal(used(p), used0);
}

static void test_used_internal_bad_input(void **state) {
  (void)state;
  size_t b = 1;
  assert_failure_mentions(dao_used_internal(dao_place_sim(0), NULL), DAO_ERR_INVALID_ARGUMENT,
                          "bytes");
  assert_status(dao_used_internal(dao_place_sim(99), &b), DAO_ERR_NO_DEVICE);
  dao_place bad = dao_place_cpu();
  bad.kind = (dao_place_kind)77;
  assert_status(dao_used_internal(bad, &b), DAO_ERR_INVALID_ARGUMENT);
  /* A place nothing internal was made on yet: zero, and nothing is made. */
  assert_ok(dao_used_internal(dao_place_cpu(), &b));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recycle_memory_is_internal),
      cmocka_unit_test(test_tiered_memory_is_internal),
      cmocka_unit_test(test_user_memory_is_not_internal),
      cmocka_unit_test(test_used_internal_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
