/* How the simulated devices are configured: dao_sim_configure before first
 * use, the DAO_SIM_DEVICES variable, the default, and a malformed variable.
 * Each mode (argv[1]) needs a fresh process, since the first use fixes it. */
#include "dao_test.h"

#define MIB ((size_t)1 << 20)

static void configure_validates_then_applies(void **state) {
  size_t caps[3] = {MIB, 2 * MIB, 3 * MIB};
  size_t zero[2] = {MIB, 0};
  size_t total = 0;
  int count = 0, i;
  (void)state;
  assert_failure_mentions(dao_sim_configure(-1, NULL), DAO_ERR_INVALID_ARGUMENT, "out of range");
  assert_status(dao_sim_configure(DAO_SIM_MAX_DEVICES + 1, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_sim_configure(2, zero), DAO_ERR_INVALID_ARGUMENT, "> 0");
  assert_ok(dao_sim_configure(DAO_SIM_MAX_DEVICES, NULL)); /* not yet used: may change again */
  assert_ok(dao_sim_configure(3, caps));
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 3);
  for (i = 0; i < 3; ++i) {
    assert_ok(dao_place_memory_info(dao_place_sim(i), NULL, &total));
    assert_int_equal(total, caps[i]);
  }
  assert_non_null(strstr(dao_place_backend_description(DAO_PLACE_SIM), "dao_sim_configure"));
  assert_status(dao_sim_configure(1, caps), DAO_ERR_INVALID_STATE);
  assert_ok(dao_sim_configure(3, caps));
  assert_status(dao_alloc(dao_place_sim(3), 1, (void **)&total), DAO_ERR_NO_DEVICE);
}

static void default_is_one_gibibyte_device(void **state) {
  int count = 0;
  size_t total = 0;
  void *p = NULL;
  (void)state;
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 1);
  assert_ok(dao_place_memory_info(dao_place_sim(0), NULL, &total));
  assert_int_equal(total, (size_t)1 << 30);
  assert_ok(dao_alloc(dao_place_sim(0), 100 * MIB, &p));
  assert_ok(dao_free(dao_place_sim(0), p));
  assert_ok(dao_sim_configure(1, NULL)); /* same as the default */
}

static void zero_devices(void **state) {
  int count = 5;
  void *p = NULL;
  (void)state;
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 0);
  assert_failure_mentions(dao_alloc(dao_place_sim(0), 16, &p), DAO_ERR_NO_DEVICE,
                          "0 simulated device(s)");
}

static void malformed_variable_is_reported_and_fixable(void **state) {
  int count = 5;
  void *p = NULL;
  size_t total = 0;
  (void)state;
  assert_failure_mentions(dao_place_device_count(DAO_PLACE_SIM, &count), DAO_ERR_INVALID_ARGUMENT,
                          "DAO_SIM_DEVICES='3y64MiB'");
  assert_int_equal(count, 5);
  assert_status(dao_alloc(dao_place_sim(0), 16, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(dao_place_backend_description(DAO_PLACE_SIM), "DAO_SIM_DEVICES"));
  /* The program can still configure the devices itself. */
  assert_ok(dao_sim_configure(1, NULL));
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 1);
  assert_ok(dao_place_memory_info(dao_place_sim(0), NULL, &total));
  assert_int_equal(total, (size_t)1 << 30);
}

/* A device of SIZE_MAX bytes with memory_fraction=1: the cap is the whole
 * device (2^64 as a double was converted to size_t, undefined, issue 20). */
static void largest_device_whole_fraction(void **state) {
  const size_t caps[1] = {SIZE_MAX};
  dao_allocator *a = NULL, *l = NULL;
  void *p = NULL, *q = NULL;
  (void)state;
  assert_ok(dao_sim_configure(1, caps));
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching",
                                 "memory_fraction=1,garbage_collection_threshold=0.5", &a));
  assert_ok(dao_allocator_alloc(a, 1 << 20, NULL, &p));
  assert_ok(
      dao_allocator_create(dao_place_sim(0), "limit", "memory_fraction=1,upstream=system", &l));
  assert_ok(dao_allocator_alloc(l, 1 << 20, NULL, &q));
  assert_ok(dao_allocator_free(l, q));
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_destroy(l));
  assert_ok(dao_allocator_destroy(a));
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "configure";
  if (strcmp(mode, "configure") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(configure_validates_then_applies)};
    return cmocka_run_group_tests_name("configure", t, NULL, NULL);
  }
  if (strcmp(mode, "default") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(default_is_one_gibibyte_device)};
    return cmocka_run_group_tests_name("default", t, NULL, NULL);
  }
  if (strcmp(mode, "zero") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(zero_devices)};
    return cmocka_run_group_tests_name("zero", t, NULL, NULL);
  }
  if (strcmp(mode, "malformed") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(malformed_variable_is_reported_and_fixable)};
    return cmocka_run_group_tests_name("malformed", t, NULL, NULL);
  }
  if (strcmp(mode, "largest") == 0) {
    const struct CMUnitTest t[] = {cmocka_unit_test(largest_device_whole_fraction)};
    return cmocka_run_group_tests_name("largest", t, NULL, NULL);
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
