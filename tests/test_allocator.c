/* Allocator objects: every dao_allocator_* function with good and bad input. */
#include "dao_test.h"

static dao_allocator *make(const char *strategy, const char *config) {
  dao_allocator *a = NULL;
  assert_ok(dao_allocator_create(dao_place_cpu(), strategy, config, &a));
  assert_non_null(a);
  return a;
}

static void create_bad_input(void **state) {
  dao_allocator *a = NULL;
  dao_place bad_kind;
  int cuda = 0;
  (void)state;
  bad_kind.kind = (dao_place_kind)42;
  bad_kind.device = 0;
  assert_failure_mentions(dao_allocator_create(dao_place_cpu(), "buddy", NULL, NULL),
                          DAO_ERR_INVALID_ARGUMENT, "out");
  assert_status(dao_allocator_create(bad_kind, "buddy", NULL, &a), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_create(dao_place_sim(-3), "buddy", NULL, &a),
                DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_allocator_create(dao_place_sim(9), "buddy", NULL, &a),
                          DAO_ERR_NO_DEVICE, "sim device 9");
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
  if (cuda == 0) {
    assert_status(dao_allocator_create(dao_place_cuda(0), "buddy", NULL, &a), DAO_ERR_NO_DEVICE);
    assert_status(dao_allocator_create(dao_place_cuda_pinned(), NULL, NULL, &a), DAO_ERR_NO_DEVICE);
  }
  assert_null(a);
}

static void create_with_default_strategy(void **state) {
  dao_allocator *a = NULL;
  const char *strategy = NULL;
  dao_place place;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_sim(1), NULL, NULL, &a));
  assert_ok(dao_allocator_info(a, &place, &strategy, NULL));
  assert_string_equal(strategy, "caching"); /* the default of device places */
  assert_int_equal(place.kind, DAO_PLACE_SIM);
  assert_int_equal(place.device, 1);
  assert_ok(dao_allocator_destroy(a));
}

static void alloc_and_free(void **state) {
  static const size_t sizes[] = {1, 100, 255, 256, 257, 4096, 65537, 1 << 20, (64 << 20) + 1};
  const char *strategies[] = {"buddy", "system"};
  size_t s, i;
  (void)state;
  for (s = 0; s < 2; ++s) {
    dao_allocator *a = make(strategies[s], NULL);
    void *ptrs[sizeof sizes / sizeof sizes[0]];
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
      size_t usable = 0;
      assert_ok(dao_allocator_alloc(a, sizes[i], DAO_STREAM_DEFAULT, &ptrs[i]));
      assert_non_null(ptrs[i]);
      assert_true(dao_test_is_aligned(ptrs[i], 256));
      assert_ok(dao_allocator_usable_size(a, ptrs[i], &usable));
      assert_true(usable >= sizes[i]);
      dao_test_fill(ptrs[i], sizes[i], (unsigned)i);
    }
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
      assert_true(dao_test_check(ptrs[i], sizes[i], (unsigned)i));
      assert_ok(dao_allocator_free(a, ptrs[i]));
    }
    assert_ok(dao_allocator_destroy(a));
  }
}

static void alloc_bad_input(void **state) {
  dao_allocator *a = make("buddy", NULL);
  void *p = (void *)&p;
  char not_a_handle[sizeof(void *) * 16];
  (void)state;
  memset(not_a_handle, 0, sizeof not_a_handle);
  assert_failure_mentions(dao_allocator_alloc(NULL, 16, NULL, &p), DAO_ERR_INVALID_ARGUMENT,
                          "allocator");
  assert_null(p); /* set to NULL on failure */
  assert_failure_mentions(dao_allocator_alloc(a, 16, NULL, NULL), DAO_ERR_INVALID_ARGUMENT, "ptr");
  assert_failure_mentions(dao_allocator_alloc((dao_allocator *)not_a_handle, 16, NULL, &p),
                          DAO_ERR_INVALID_ARGUMENT, "not a live dao_allocator");
  /* size 0: nothing, NULL, success */
  p = (void *)&p;
  assert_ok(dao_allocator_alloc(a, 0, NULL, &p));
  assert_null(p);
  /* sizes that cannot be satisfied or overflow when rounded */
  assert_failure_mentions(dao_allocator_alloc(a, SIZE_MAX, NULL, &p), DAO_ERR_OUT_OF_MEMORY,
                          "tried to allocate");
  assert_null(p);
  assert_status(dao_allocator_alloc(a, SIZE_MAX - 255, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
  assert_status(dao_allocator_alloc(a, SIZE_MAX / 2 + 1, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
  assert_null(p);
  {
    dao_allocator_stats st = dao_test_stats(a);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.failed_alloc_count, 3);
  }
  /* the non-stream-ordered strategies accept a stream of any place... */
  {
    dao_stream s = NULL;
    assert_ok(dao_stream_create(dao_place_sim(0), &s));
    assert_ok(dao_allocator_alloc(a, 64, s, &p));
    assert_ok(dao_allocator_free(a, p));
    assert_ok(dao_stream_destroy(s));
  }
  /* ...but not something that is not a stream */
  assert_failure_mentions(dao_allocator_alloc(a, 64, (dao_stream)(void *)not_a_handle, &p),
                          DAO_ERR_INVALID_ARGUMENT, "stream");
  assert_null(p);
  assert_ok(dao_allocator_destroy(a));
}

static void free_bad_input(void **state) {
  dao_allocator *a = make("buddy", NULL);
  dao_allocator *b = make("buddy", NULL);
  void *p = NULL, *q = NULL;
  char *foreign = malloc(4096);
  dao_allocator_stats before, after;
  (void)state;
  assert_non_null(foreign);
  memset(foreign, 0x5a, 4096);
  assert_ok(dao_allocator_alloc(a, 1000, NULL, &p));
  assert_ok(dao_allocator_alloc(b, 1000, NULL, &q));
  dao_test_fill(p, 1000, 1);
  before = dao_test_stats(a);

  assert_status(dao_allocator_free(NULL, p), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_free(a, NULL));
  assert_failure_mentions(dao_allocator_free(a, foreign), DAO_ERR_INVALID_POINTER, "not a live");
  assert_status(dao_allocator_free(a, (char *)p + 256), DAO_ERR_INVALID_POINTER); /* interior */
  assert_status(dao_allocator_free(a, (char *)p + 1), DAO_ERR_INVALID_POINTER);
  assert_status(dao_allocator_free(a, q), DAO_ERR_INVALID_POINTER); /* another allocator's */

  after = dao_test_stats(a);
  assert_int_equal(after.live_blocks, before.live_blocks);
  assert_int_equal(after.allocated_bytes, before.allocated_bytes);
  assert_true(dao_test_check(p, 1000, 1)); /* nothing changed */
  assert_int_equal((unsigned char)foreign[4095], 0x5a);

  assert_ok(dao_allocator_free(a, p));
  assert_failure_mentions(dao_allocator_free(a, p), DAO_ERR_INVALID_POINTER, "already freed");
  assert_ok(dao_allocator_free(b, q));
  assert_status(dao_allocator_free(b, q), DAO_ERR_INVALID_POINTER);
  free(foreign);
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_allocator_destroy(b));
}

static void usable_size_bad_input(void **state) {
  dao_allocator *a = make("buddy", NULL);
  void *p = NULL;
  size_t size = 0;
  (void)state;
  assert_ok(dao_allocator_alloc(a, 300, NULL, &p));
  assert_ok(dao_allocator_usable_size(a, p, &size));
  assert_int_equal(size, 512);
  assert_status(dao_allocator_usable_size(NULL, p, &size), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_usable_size(a, p, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_usable_size(a, (char *)p + 256, &size), DAO_ERR_INVALID_POINTER);
  assert_status(dao_allocator_usable_size(a, NULL, &size), DAO_ERR_INVALID_POINTER);
  assert_ok(dao_allocator_free(a, p));
  assert_status(dao_allocator_usable_size(a, p, &size), DAO_ERR_INVALID_POINTER);
  assert_ok(dao_allocator_destroy(a));
}

static void stats_follow_operations(void **state) {
  dao_allocator *a = make("buddy", "chunk_size=1MiB");
  void *p = NULL, *q = NULL;
  dao_allocator_stats s;
  (void)state;
  s = dao_test_stats(a);
  assert_int_equal(s.allocated_bytes, 0);
  assert_int_equal(s.reserved_bytes, 0);
  assert_int_equal(s.alloc_count, 0);

  assert_ok(dao_allocator_alloc(a, 1000, NULL, &p));
  assert_ok(dao_allocator_alloc(a, 3000, NULL, &q));
  s = dao_test_stats(a);
  assert_int_equal(s.allocated_bytes, 1024 + 4096);
  assert_int_equal(s.requested_bytes, 4000);
  assert_int_equal(s.reserved_bytes, 1 << 20);
  assert_int_equal(s.live_blocks, 2);
  assert_int_equal(s.alloc_count, 2);
  assert_int_equal(s.system_alloc_count, 1);
  assert_true(s.largest_free_block >= 256 * 1024);

  assert_ok(dao_allocator_free(a, q));
  s = dao_test_stats(a);
  assert_int_equal(s.allocated_bytes, 1024);
  assert_int_equal(s.peak_allocated_bytes, 1024 + 4096);
  assert_int_equal(s.free_count, 1);

  assert_ok(dao_allocator_reset_peak_stats(a));
  s = dao_test_stats(a);
  assert_int_equal(s.peak_allocated_bytes, 1024);
  assert_int_equal(s.peak_reserved_bytes, 1 << 20);
  assert_status(dao_allocator_reset_peak_stats(NULL), DAO_ERR_INVALID_ARGUMENT);

  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_destroy(a));
}

static void stats_struct_size_contract(void **state) {
  dao_allocator *a = make("buddy", NULL);
  union {
    dao_allocator_stats stats;
    unsigned char bytes[sizeof(dao_allocator_stats) + 64];
  } bigger;
  dao_allocator_stats s;
  size_t i;
  (void)state;
  assert_status(dao_allocator_get_stats(a, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_get_stats(NULL, &s), DAO_ERR_INVALID_ARGUMENT);
  memset(&s, 0xee, sizeof s);
  s.struct_size = 0;
  assert_failure_mentions(dao_allocator_get_stats(a, &s), DAO_ERR_INVALID_ARGUMENT, "struct_size");
  assert_int_equal(s.alloc_count, 0xeeeeeeeeeeeeeeeeull); /* untouched */
  s.struct_size = sizeof s - 8;
  assert_status(dao_allocator_get_stats(a, &s), DAO_ERR_INVALID_ARGUMENT);
  /* A caller with a newer, larger struct gets the fields we know, and the
   * bytes past them untouched (issue 20: never written past our struct). */
  memset(&bigger, 0xee, sizeof bigger);
  bigger.stats.struct_size = sizeof bigger;
  assert_ok(dao_allocator_get_stats(a, &bigger.stats));
  assert_int_equal(bigger.stats.struct_size, sizeof bigger);
  assert_int_equal(bigger.stats.live_blocks, 0);
  for (i = sizeof(dao_allocator_stats); i < sizeof bigger; ++i)
    assert_int_equal(bigger.bytes[i], 0xee);
  assert_ok(dao_allocator_destroy(a));
}

static void trim_gives_back_free_chunks(void **state) {
  dao_allocator *a = make("buddy", "chunk_size=1MiB");
  void *p[4];
  size_t released = 99;
  int i;
  dao_allocator_stats s;
  (void)state;
  for (i = 0; i < 4; ++i) assert_ok(dao_allocator_alloc(a, 1 << 20, NULL, &p[i]));
  for (i = 0; i < 3; ++i) assert_ok(dao_allocator_free(a, p[i]));
  assert_ok(dao_allocator_trim(a, &released));
  assert_int_equal(released, 3 << 20);
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, 1 << 20);
  assert_int_equal(s.system_free_count, 3);
  assert_ok(dao_allocator_trim(a, NULL));
  assert_status(dao_allocator_trim(NULL, &released), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_free(a, p[3]));
  assert_ok(dao_allocator_trim(a, &released));
  assert_int_equal(released, 1 << 20);
  assert_int_equal(dao_test_stats(a).reserved_bytes, 0);
  assert_ok(dao_allocator_destroy(a));
}

static void info_bad_input(void **state) {
  dao_allocator *a = make("system", NULL);
  const char *config = "x";
  (void)state;
  assert_status(dao_allocator_info(NULL, NULL, NULL, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_info(a, NULL, NULL, NULL));
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_string_equal(config, "");
  assert_ok(dao_allocator_destroy(a));
}

static void destroy_refuses_live_blocks(void **state) {
  dao_allocator *a = make("buddy", NULL);
  dao_allocator *place_default = NULL;
  void *p = NULL, *q = NULL;
  (void)state;
  assert_ok(dao_allocator_alloc(a, 100, NULL, &p));
  assert_ok(dao_allocator_alloc(a, 100, NULL, &q));
  dao_test_fill(p, 100, 9);
  assert_failure_mentions(dao_allocator_destroy(a), DAO_ERR_BUSY, "2 block(s)");
  /* still fully usable */
  assert_true(dao_test_check(p, 100, 9));
  assert_ok(dao_allocator_free(a, p));
  assert_failure_mentions(dao_allocator_destroy(a), DAO_ERR_BUSY, "1 block(s)");
  assert_ok(dao_allocator_free(a, q));
  assert_ok(dao_allocator_destroy(a));
  assert_status(dao_allocator_destroy(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_place_allocator(dao_place_cpu(), &place_default));
  assert_failure_mentions(dao_allocator_destroy(place_default), DAO_ERR_INVALID_ARGUMENT,
                          "belongs to libdao");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(create_bad_input),
      cmocka_unit_test(create_with_default_strategy),
      cmocka_unit_test(alloc_and_free),
      cmocka_unit_test(alloc_bad_input),
      cmocka_unit_test(free_bad_input),
      cmocka_unit_test(usable_size_bad_input),
      cmocka_unit_test(stats_follow_operations),
      cmocka_unit_test(stats_struct_size_contract),
      cmocka_unit_test(trim_gives_back_free_chunks),
      cmocka_unit_test(info_bad_input),
      cmocka_unit_test(destroy_refuses_live_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
