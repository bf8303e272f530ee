/* dao_alloc / dao_free / dao_used and the place defaults. The same program
 * runs in several environments (argv[1] says which), because the environment
 * is read once per process. */
#include "dao_test.h"

static const dao_place *places_with_devices(size_t *n) {
  static dao_place places[8];
  *n = 0;
  places[(*n)++] = dao_place_cpu();
  places[(*n)++] = dao_place_sim(0);
  places[(*n)++] = dao_place_sim(1);
  return places;
}

static void alloc_write_free_on_every_place(void **state) {
  static const size_t sizes[] = {1, 255, 256, 257, 4096, 1 << 20, 5 << 20, 20 << 20};
  size_t n = 0, k, i;
  const dao_place *places = places_with_devices(&n);
  (void)state;
  for (k = 0; k < n; ++k) {
    void *ptrs[sizeof sizes / sizeof sizes[0]];
    size_t used_before = 0, used = 0;
    assert_ok(dao_used(places[k], &used_before));
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
      assert_ok(dao_alloc(places[k], sizes[i], &ptrs[i]));
      assert_non_null(ptrs[i]);
      assert_true(dao_test_is_aligned(ptrs[i], 256));
      dao_test_fill(ptrs[i], sizes[i], (unsigned)(i + 10 * k));
      assert_ok(dao_used(places[k], &used));
      assert_true(used >= used_before + sizes[i]);
      used_before = used;
    }
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
      assert_true(dao_test_check(ptrs[i], sizes[i], (unsigned)(i + 10 * k)));
      assert_ok(dao_free(places[k], ptrs[i]));
    }
    assert_ok(dao_used(places[k], &used));
    assert_int_equal(used, 0);
  }
}

static void size_zero_gives_null(void **state) {
  void *p = (void *)&p;
  size_t used = 1;
  (void)state;
  assert_ok(dao_alloc(dao_place_sim(0), 0, &p));
  assert_null(p);
  assert_ok(dao_used(dao_place_sim(0), &used));
  assert_int_equal(used, 0);
  assert_ok(dao_free(dao_place_sim(0), NULL));
}

static void impossible_sizes_are_out_of_memory(void **state) {
  void *p = (void *)&p;
  size_t used = 1;
  (void)state;
  assert_failure_mentions(dao_alloc(dao_place_cpu(), SIZE_MAX, &p), DAO_ERR_OUT_OF_MEMORY,
                          "tried to allocate");
  assert_null(p);
  assert_status(dao_alloc(dao_place_cpu(), SIZE_MAX - 100, &p), DAO_ERR_OUT_OF_MEMORY);
  assert_status(dao_alloc(dao_place_sim(0), SIZE_MAX, &p), DAO_ERR_OUT_OF_MEMORY);
  assert_failure_mentions(dao_alloc(dao_place_sim(0), (size_t)65 << 20, &p), DAO_ERR_OUT_OF_MEMORY,
                          "capacity of 64.0 MiB");
  assert_ok(dao_used(dao_place_sim(0), &used));
  assert_int_equal(used, 0);
}

static void bad_places(void **state) {
  void *p = NULL;
  size_t used = 0;
  int cuda = 0;
  dao_place bad_kind;
  (void)state;
  bad_kind.kind = (dao_place_kind)42;
  bad_kind.device = 0;
  assert_failure_mentions(dao_alloc(bad_kind, 16, &p), DAO_ERR_INVALID_ARGUMENT, "place kind 42");
  assert_status(dao_free(bad_kind, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_used(bad_kind, &used), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_alloc(dao_place_sim(-1), 16, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_alloc(dao_place_sim(2), 16, &p), DAO_ERR_NO_DEVICE, "sim device 2");
  assert_failure_mentions(dao_alloc(dao_place_sim(1000), 16, &p), DAO_ERR_NO_DEVICE,
                          "sim device 1000");
  assert_status(dao_used(dao_place_sim(7), &used), DAO_ERR_NO_DEVICE);
  assert_status(dao_free(dao_place_sim(7), NULL), DAO_ERR_NO_DEVICE);
  assert_failure_mentions(dao_alloc((dao_place){DAO_PLACE_CPU, 1}, 16, &p), DAO_ERR_NO_DEVICE,
                          "only device 0");
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
  if (cuda == 0) {
    assert_status(dao_alloc(dao_place_cuda(0), 16, &p), DAO_ERR_NO_DEVICE);
    assert_true(strlen(dao_last_error()) > 30); /* says why */
    assert_status(dao_alloc(dao_place_cuda_pinned(), 16, &p), DAO_ERR_NO_DEVICE);
    assert_status(dao_alloc(dao_place_cuda_managed(0), 16, &p), DAO_ERR_NO_DEVICE);
    assert_status(dao_free(dao_place_cuda(0), NULL), DAO_ERR_NO_DEVICE);
    assert_status(dao_used(dao_place_cuda(0), &used), DAO_ERR_NO_DEVICE);
  }
  assert_null(p);
}

static void null_out_parameters(void **state) {
  (void)state;
  assert_failure_mentions(dao_alloc(dao_place_cpu(), 16, NULL), DAO_ERR_INVALID_ARGUMENT, "ptr");
  assert_failure_mentions(dao_used(dao_place_cpu(), NULL), DAO_ERR_INVALID_ARGUMENT, "bytes");
  assert_status(dao_place_allocator(dao_place_cpu(), NULL), DAO_ERR_INVALID_ARGUMENT);
}

static void bad_frees_change_nothing(void **state) {
  void *p = NULL, *on_sim = NULL;
  char *foreign = malloc(1024);
  size_t used_before = 0, used = 0;
  (void)state;
  assert_non_null(foreign);
  memset(foreign, 7, 1024);
  assert_ok(dao_alloc(dao_place_cpu(), 1000, &p));
  assert_ok(dao_alloc(dao_place_sim(0), 1000, &on_sim));
  dao_test_fill(p, 1000, 5);
  dao_test_fill(on_sim, 1000, 6);
  assert_ok(dao_used(dao_place_cpu(), &used_before));

  assert_failure_mentions(dao_free(dao_place_cpu(), foreign), DAO_ERR_INVALID_POINTER,
                          "not a live");
  assert_status(dao_free(dao_place_cpu(), (char *)p + 512), DAO_ERR_INVALID_POINTER);
  assert_status(dao_free(dao_place_cpu(), on_sim), DAO_ERR_INVALID_POINTER); /* wrong place */
  assert_status(dao_free(dao_place_sim(1), on_sim), DAO_ERR_INVALID_POINTER);
  assert_ok(dao_used(dao_place_cpu(), &used));
  assert_int_equal(used, used_before);
  assert_true(dao_test_check(p, 1000, 5));
  assert_true(dao_test_check(on_sim, 1000, 6));
  assert_int_equal(foreign[1023], 7);

  assert_ok(dao_free(dao_place_cpu(), p));
  assert_failure_mentions(dao_free(dao_place_cpu(), p), DAO_ERR_INVALID_POINTER, "already freed");
  assert_ok(dao_free(dao_place_sim(0), on_sim));
  assert_status(dao_free(dao_place_sim(0), on_sim), DAO_ERR_INVALID_POINTER);
  free(foreign);
}

static void place_allocator_is_the_default(void **state) {
  dao_allocator *a = NULL, *b = NULL;
  void *p = NULL;
  dao_place place;
  (void)state;
  assert_ok(dao_place_allocator(dao_place_sim(1), &a));
  assert_ok(dao_place_allocator(dao_place_sim(1), &b));
  assert_ptr_equal(a, b);
  assert_ok(dao_allocator_info(a, &place, NULL, NULL));
  assert_int_equal(place.kind, DAO_PLACE_SIM);
  assert_int_equal(place.device, 1);
  assert_ok(dao_alloc(dao_place_sim(1), 3000, &p));
  assert_int_equal(dao_test_stats(a).live_blocks, 1);
  /* memory from dao_alloc can be freed through the place's allocator handle */
  assert_ok(dao_allocator_free(a, p));
  assert_int_equal(dao_test_stats(a).live_blocks, 0);
  assert_status(dao_allocator_destroy(a), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_place_allocator(dao_place_sim(5), &a), DAO_ERR_NO_DEVICE);
}

static void expect_default_strategy(dao_place_kind kind, const char *strategy, const char *config) {
  const char *s = NULL, *c = NULL;
  dao_allocator *a = NULL;
  assert_ok(dao_place_default_config(kind, &s, &c));
  assert_string_equal(s, strategy);
  assert_string_equal(c, config);
  if (kind == DAO_PLACE_CPU || kind == DAO_PLACE_SIM) {
    dao_place place = kind == DAO_PLACE_CPU ? dao_place_cpu() : dao_place_sim(0);
    assert_ok(dao_place_allocator(place, &a));
    assert_ok(dao_allocator_info(a, NULL, &s, NULL));
    assert_string_equal(s, strategy);
  }
}

static void default_config_bad_input(void **state) {
  (void)state;
  assert_status(dao_place_default_config((dao_place_kind)42, NULL, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_place_default_config(DAO_PLACE_CPU, NULL, NULL));
}

static void defaults_by_kind(void **state) {
  int k;
  (void)state;
  expect_default_strategy(DAO_PLACE_CPU, "buddy", "");
  for (k = 1; k < DAO_PLACE_KIND_COUNT; ++k)
    expect_default_strategy((dao_place_kind)k, "caching", "");
}

static void defaults_are_system(void **state) {
  int k;
  (void)state;
  for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k)
    expect_default_strategy((dao_place_kind)k, "system", "");
}

static void defaults_per_kind(void **state) {
  const char *config = NULL;
  dao_allocator *a = NULL;
  (void)state;
  expect_default_strategy(DAO_PLACE_SIM, "system", "");
  expect_default_strategy(DAO_PLACE_CPU, "buddy", "chunk_size=2MiB");
  expect_default_strategy(DAO_PLACE_CUDA, "buddy", "");
  assert_ok(dao_place_allocator(dao_place_cpu(), &a));
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "chunk_size=2MiB"));
}

static void malformed_environment_is_reported(void **state) {
  void *p = (void *)&p;
  size_t used = 0;
  (void)state;
  assert_failure_mentions(dao_alloc(dao_place_cpu(), 16, &p), DAO_ERR_INVALID_ARGUMENT,
                          "DAO_ALLOC_CONF");
  assert_non_null(strstr(dao_last_error(), "unknown key 'bogus'"));
  assert_null(p);
  assert_status(dao_used(dao_place_sim(0), &used), DAO_ERR_INVALID_ARGUMENT);
  /* Allocator objects with an explicit config are unaffected. */
  {
    dao_allocator *a = NULL;
    assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "", &a));
    assert_ok(dao_allocator_destroy(a));
  }
}

int main(int argc, char **argv) {
  const struct CMUnitTest common[] = {
      cmocka_unit_test(alloc_write_free_on_every_place),
      cmocka_unit_test(size_zero_gives_null),
      cmocka_unit_test(impossible_sizes_are_out_of_memory),
      cmocka_unit_test(bad_places),
      cmocka_unit_test(null_out_parameters),
      cmocka_unit_test(bad_frees_change_nothing),
      cmocka_unit_test(place_allocator_is_the_default),
      cmocka_unit_test(default_config_bad_input),
  };
  const char *mode = argc > 1 ? argv[1] : "defaults";
  int failures = 0;
  if (strcmp(mode, "bad_env") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(malformed_environment_is_reported)};
    return cmocka_run_group_tests_name("bad_env", tests, NULL, NULL);
  }
  if (strcmp(mode, "defaults") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(defaults_by_kind)};
    failures += cmocka_run_group_tests_name("defaults", tests, NULL, NULL);
  } else if (strcmp(mode, "system") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(defaults_are_system)};
    failures += cmocka_run_group_tests_name("system", tests, NULL, NULL);
  } else if (strcmp(mode, "per_kind") == 0) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(defaults_per_kind)};
    failures += cmocka_run_group_tests_name("per_kind", tests, NULL, NULL);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  failures += cmocka_run_group_tests_name("common", common, NULL, NULL);
  return failures;
}
