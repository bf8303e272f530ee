/* Config strings through the public API: every malformed or unknown input is
 * an error with a message, and nothing is created. */
#include <time.h>

#include "dao_test.h"

static void accepts_valid_configs(void **state) {
  static const char *const good[] = {
      NULL,
      "",
      "chunk_size=1MiB",
      " chunk_size = 1MiB , max_pool = 8MiB ",
      "chunk_size=1MiB,",
      "min_block=512",
      "chunk_size=1048576",
      "chunk_size=1M",
      "chunk_size=1m",
      "chunk_size=1024KiB",
      "chunk_size=1024kb",
      "chunk_size=0.5MiB",
      "max_pool=1.5GiB",
      "max_pool=0",
      "initial_pool=2MiB,chunk_size=1MiB,max_pool=4MiB",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof good / sizeof good[0]; ++i) {
    dao_allocator *a = NULL;
    dao_status s = dao_allocator_create(dao_place_cpu(), "buddy", good[i], &a);
    if (s != DAO_OK) {
      print_error("config '%s' was refused: %s\n", good[i] ? good[i] : "(null)", dao_last_error());
      fail();
    }
    assert_ok(dao_allocator_destroy(a));
  }
}

static void refuses_malformed_configs(void **state) {
  static const struct {
    const char *config;
    const char *mentions;
  } bad[] = {
      {"chunk_size", "key=value"},
      {"=1MiB", "empty key"},
      {"chunk_size=", "empty key"},
      {"chunk_size=abc", "not a size"},
      {"chunk_size=1XB", "not a size"},
      {"chunk_size=-1", "not a size"},
      {"chunk_size=1MiB,chunk_size=2MiB", "more than once"},
      {"nope=1", "unknown key 'nope'"},
      {"nope=1", "chunk_size"}, /* lists the known keys */
      {"min_block=100", "power of two"},
      {"min_block=128", "min_block"},
      {"chunk_size=3MiB", "power of two"},
      {"chunk_size=128", "power of two"},
      {"chunk_size=99999999999999999999", "too large"},
      {"chunk_size=20000000TiB", "too large"},
      {"chunk_size=0.3", "whole number"},
      {"initial_pool=8MiB,max_pool=4MiB", "initial_pool"},
      {",,", "empty item"},
      {"chunk_size=1MiB;max_pool=1MiB", "not a size"},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    dao_allocator *sentinel = (dao_allocator *)&i;
    dao_allocator *a = sentinel;
    dao_status s = dao_allocator_create(dao_place_cpu(), "buddy", bad[i].config, &a);
    if (s != DAO_ERR_INVALID_ARGUMENT || strstr(dao_last_error(), bad[i].mentions) == NULL) {
      print_error(
          "config '%s': status %s, message '%s', expected invalid argument mentioning '%s'\n",
          bad[i].config, dao_status_string(s), dao_last_error(), bad[i].mentions);
      fail();
    }
    assert_ptr_equal(a, sentinel); /* out-parameter untouched */
  }
}

static void unknown_strategy_lists_known_ones(void **state) {
  dao_allocator *a = NULL;
  (void)state;
  assert_failure_mentions(dao_allocator_create(dao_place_cpu(), "fancy", NULL, &a),
                          DAO_ERR_INVALID_ARGUMENT, "unknown strategy 'fancy'");
  assert_non_null(strstr(dao_last_error(), "buddy"));
  assert_null(a);
  assert_status(dao_allocator_create(dao_place_cpu(), "", NULL, &a), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_create(dao_place_cpu(), "BUDDY", NULL, &a), DAO_ERR_INVALID_ARGUMENT);
}

static void system_strategy_has_no_keys(void **state) {
  dao_allocator *a = NULL;
  (void)state;
  assert_failure_mentions(dao_allocator_create(dao_place_cpu(), "system", "chunk_size=1MiB", &a),
                          DAO_ERR_INVALID_ARGUMENT, "unknown key 'chunk_size'");
  assert_ok(dao_allocator_create(dao_place_cpu(), "system", "", &a));
  assert_ok(dao_allocator_destroy(a));
}

static void effective_config_round_trips(void **state) {
  dao_allocator *a = NULL, *b = NULL;
  const char *config_a = NULL, *config_b = NULL, *strategy = NULL;
  char copy[256];
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=2MiB,max_pool=1GiB", &a));
  assert_ok(dao_allocator_info(a, NULL, &strategy, &config_a));
  assert_string_equal(strategy, "buddy");
  assert_non_null(strstr(config_a, "chunk_size=2MiB"));
  assert_non_null(strstr(config_a, "max_pool=1GiB"));
  assert_non_null(strstr(config_a, "min_block=256B"));
  snprintf(copy, sizeof copy, "%s", config_a);
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", copy, &b));
  assert_ok(dao_allocator_info(b, NULL, NULL, &config_b));
  assert_string_equal(config_a, config_b);
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_allocator_destroy(b));
}

static void default_chunk_fits_small_devices(void **state) {
  dao_allocator *a = NULL;
  const char *config = NULL;
  (void)state;
  /* 64 MiB SIM device: a quarter is 16 MiB. */
  assert_ok(dao_allocator_create(dao_place_sim(0), "buddy", NULL, &a));
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "chunk_size=16MiB"));
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", NULL, &a));
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "chunk_size=64MiB"));
  assert_ok(dao_allocator_destroy(a));
}

/* 40,000 keys (issue 20: parsing was quadratic, 3.9 s to refuse this): the
 * first unknown key is named, a duplicate at the very end is found, and the
 * time is printed (never asserted). */
static void many_keys_are_refused_in_linear_time(void **state) {
  enum { kKeys = 40000 };
  char *text = malloc((size_t)kKeys * 16 + 32);
  size_t used = 0;
  dao_allocator *a = NULL;
  struct timespec t0, t1;
  int i;
  (void)state;
  assert_non_null(text);
  for (i = 0; i < kKeys; ++i) used += (size_t)sprintf(text + used, "%sk%d=1", i ? "," : "", i);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_failure_mentions(dao_allocator_create(dao_place_cpu(), "buddy", text, &a),
                          DAO_ERR_INVALID_ARGUMENT, "unknown key 'k0'");
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_null(a);
  print_message("  %d keys refused in %.1f ms\n", kKeys,
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
  sprintf(text + used, ",k0=2");
  assert_failure_mentions(dao_allocator_create(dao_place_cpu(), "buddy", text, &a),
                          DAO_ERR_INVALID_ARGUMENT, "'k0' is given more than once");
  assert_null(a);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(many_keys_are_refused_in_linear_time),
      cmocka_unit_test(accepts_valid_configs),
      cmocka_unit_test(refuses_malformed_configs),
      cmocka_unit_test(unknown_strategy_lists_known_ones),
      cmocka_unit_test(system_strategy_has_no_keys),
      cmocka_unit_test(effective_config_round_trips),
      cmocka_unit_test(default_chunk_fits_small_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
