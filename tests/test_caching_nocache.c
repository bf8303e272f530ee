/* DAO_NO_CACHING=1: the "caching" strategy gives every free back to the
 * place at once (registered with DAO_NO_CACHING=1; refuses to run without
 * it). */
#define _POSIX_C_SOURCE 200809L

#include "caching_test_util.h"

/* ------------------------------------------------------------------------
 * DAO_NO_CACHING=1 (mode "nocache")
 * ---------------------------------------------------------------------- */

static void no_caching_gives_memory_back(void **state) {
  static const size_t sizes[] = {1, 1000, 100 * KIB, MIB, 3 * MIB, 12 * MIB};
  dao_allocator *a = make(big_place(), NULL);
  dao_stream stream = NULL;
  const char *config = NULL;
  size_t i;
  (void)state;
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "expandable_segments=false"));
  stream = make_stream(big_place());
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    void *p = alloc_ok(a, sizes[i], i % 2 ? stream : NULL);
    void *q = alloc_ok(a, sizes[i], NULL);
    snap s;
    /* each block is a system allocation of its own, of its rounded size */
    assert_int_equal(reserved_now(a), 2 * expected_round(sizes[i], 0));
    s = take_snap(a);
    assert_int_equal(s.count, 2);
    assert_int_equal(s.segments[0].info.block_count, 1);
    assert_int_equal(s.segments[1].info.block_count, 1);
    assert_int_equal(s.segments[0].info.expandable, 0);
    free_snap(&s);
    dao_test_fill(p, sizes[i], 1);
    assert_ok(dao_allocator_free(a, p));
    assert_int_equal(reserved_now(a), expected_round(sizes[i], 0));
    assert_ok(dao_allocator_free(a, q));
    assert_int_equal(reserved_now(a), 0);
    assert_int_equal(get_stat(a, DAO_STAT_RESERVED_SEGMENTS, DAO_STAT_POOL_ALL).current, 0);
    assert_int_equal(place_free(big_place()), BIG_CAPACITY);
  }
  /* the place's default allocator (caching on SIM) too */
  {
    void *p = NULL;
    assert_ok(dao_alloc(small_place(), 3 * MIB, &p));
    assert_true(place_free(small_place()) <= SMALL_CAPACITY - 3 * MIB);
    assert_ok(dao_free(small_place(), p));
    assert_int_equal(place_free(small_place()), SMALL_CAPACITY);
  }
  drop_stream(stream);
  destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_caching_gives_memory_back, baseline, cleanup),
  };
  if (!no_caching_is(1)) return 2;
  return cmocka_run_group_tests_name("nocache", tests, setup, NULL);
}
