/* Simulated devices: a hard capacity, out-of-memory exactly as a full GPU
 * reports it, and recovery. Runs with DAO_SIM_DEVICES=1GiB,64MiB. */
#include "dao_test.h"

#define MIB ((size_t)1 << 20)

static void devices_come_from_the_environment(void **state) {
  int count = 0;
  size_t free_bytes = 0, total = 0;
  (void)state;
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 2);
  assert_ok(dao_place_memory_info(dao_place_sim(0), &free_bytes, &total));
  assert_int_equal(total, (size_t)1 << 30);
  assert_int_equal(free_bytes, total); /* a large capacity costs nothing until used */
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(total, 64 * MIB);
}

static void capacity_is_hard_and_recoverable(void **state) {
  dao_allocator *a = NULL;
  void *p[5] = {NULL};
  size_t free_bytes = 0, total = 0;
  int i;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_sim(1), "system", NULL, &a));
  for (i = 0; i < 4; ++i) {
    assert_ok(dao_allocator_alloc(a, 16 * MIB, NULL, &p[i]));
    dao_test_fill(p[i], 16 * MIB, (unsigned)i);
  }
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(free_bytes, 0);
  assert_failure_mentions(dao_allocator_alloc(a, 1, NULL, &p[4]), DAO_ERR_OUT_OF_MEMORY,
                          "sim:1: out of memory");
  assert_non_null(strstr(dao_last_error(), "capacity of 64.0 MiB"));
  assert_null(p[4]);
  assert_ok(dao_allocator_free(a, p[2]));
  assert_ok(dao_allocator_alloc(a, 16 * MIB, NULL, &p[4]));
  assert_true(dao_test_check(p[0], 16 * MIB, 0));
  assert_true(dao_test_check(p[3], 16 * MIB, 3));
  assert_ok(dao_allocator_free(a, p[0]));
  assert_ok(dao_allocator_free(a, p[1]));
  assert_ok(dao_allocator_free(a, p[3]));
  assert_ok(dao_allocator_free(a, p[4]));
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(free_bytes, total);
  assert_ok(dao_allocator_destroy(a));
}

static void capacity_is_shared_by_all_allocators(void **state) {
  dao_allocator *a = NULL, *b = NULL;
  void *p = NULL, *q = NULL;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_sim(1), "system", NULL, &a));
  assert_ok(dao_allocator_create(dao_place_sim(1), "buddy", "chunk_size=16MiB", &b));
  assert_ok(dao_allocator_alloc(a, 50 * MIB, NULL, &p));
  assert_ok(dao_allocator_alloc(b, 8 * MIB, NULL, &q)); /* 16 MiB chunk does not fit: 8 MiB one */
  assert_ok(dao_allocator_free(b, q));
  assert_status(dao_allocator_alloc(b, 15 * MIB, NULL, &q), DAO_ERR_OUT_OF_MEMORY);
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_alloc(b, 15 * MIB, NULL, &q));
  assert_ok(dao_allocator_free(b, q));
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_allocator_destroy(b));
}

static void place_default_fills_and_recovers(void **state) {
  void *p[80];
  void *big = NULL;
  int n = 0, i;
  size_t used = 0;
  (void)state;
  for (n = 0; n < 80; ++n)
    if (dao_alloc(dao_place_sim(1), MIB, &p[n]) != DAO_OK) break;
  assert_int_equal(n, 64); /* 1 MiB blocks fill the 64 MiB device exactly */
  assert_non_null(strstr(dao_last_error(), "sim:1"));
  assert_ok(dao_used(dao_place_sim(1), &used));
  assert_int_equal(used, 64 * MIB);
  for (i = 0; i < n; ++i) assert_ok(dao_free(dao_place_sim(1), p[i]));
  /* idle chunks are handed back so one large block can take the device */
  assert_ok(dao_alloc(dao_place_sim(1), 60 * MIB, &big));
  assert_ok(dao_free(dao_place_sim(1), big));
}

static void configure_after_use_is_refused(void **state) {
  size_t same[2] = {(size_t)1 << 30, 64 * MIB};
  size_t other[1] = {MIB};
  int count = 0;
  (void)state;
  assert_failure_mentions(dao_sim_configure(1, other), DAO_ERR_INVALID_STATE, "already in use");
  assert_ok(dao_sim_configure(2, same)); /* the same configuration is fine */
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(devices_come_from_the_environment),
      cmocka_unit_test(capacity_is_hard_and_recoverable),
      cmocka_unit_test(capacity_is_shared_by_all_allocators),
      cmocka_unit_test(place_default_fills_and_recovers),
      cmocka_unit_test(configure_after_use_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
