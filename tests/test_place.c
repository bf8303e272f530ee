/* Places: constructors, device counts, memory info, names and descriptions. */
#include "dao_test.h"

static void constructors_fill_kind_and_device(void **state) {
  (void)state;
  assert_int_equal(dao_place_cpu().kind, DAO_PLACE_CPU);
  assert_int_equal(dao_place_cpu().device, 0);
  assert_int_equal(dao_place_cuda(3).kind, DAO_PLACE_CUDA);
  assert_int_equal(dao_place_cuda(3).device, 3);
  assert_int_equal(dao_place_cuda_pinned().kind, DAO_PLACE_CUDA_PINNED);
  assert_int_equal(dao_place_cuda_pinned().device, 0);
  assert_int_equal(dao_place_cuda_managed(1).kind, DAO_PLACE_CUDA_MANAGED);
  assert_int_equal(dao_place_cuda_managed(1).device, 1);
  assert_int_equal(dao_place_sim(2).kind, DAO_PLACE_SIM);
  assert_int_equal(dao_place_sim(2).device, 2);
}

static void device_counts(void **state) {
  int count = -1, cuda = -1, pinned = -1, managed = -1;
  (void)state;
  assert_ok(dao_place_device_count(DAO_PLACE_CPU, &count));
  assert_int_equal(count, 1);
  assert_ok(dao_place_device_count(DAO_PLACE_SIM, &count));
  assert_int_equal(count, 2); /* DAO_SIM_DEVICES=2x64MiB */
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA_PINNED, &pinned));
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA_MANAGED, &managed));
  assert_true(cuda >= 0);
  assert_int_equal(managed, cuda);
  assert_int_equal(pinned, cuda > 0 ? 1 : 0);
}

static void device_count_bad_input(void **state) {
  int count = 77;
  (void)state;
  assert_failure_mentions(dao_place_device_count(DAO_PLACE_CPU, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "count");
  assert_failure_mentions(dao_place_device_count((dao_place_kind)42, &count),
                          DAO_ERR_INVALID_ARGUMENT, "42");
  assert_status(dao_place_device_count((dao_place_kind)-1, &count), DAO_ERR_INVALID_ARGUMENT);
  assert_int_equal(count, 77); /* unchanged on failure */
}

static void memory_info_of_cpu_and_sim(void **state) {
  size_t free_bytes = 0, total = 0;
  (void)state;
  assert_ok(dao_place_memory_info(dao_place_cpu(), &free_bytes, &total));
  assert_true(total > 0);
  assert_true(free_bytes <= total);
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(total, (size_t)64 << 20);
  assert_int_equal(free_bytes, (size_t)64 << 20); /* nothing taken yet */
  assert_ok(dao_place_memory_info(dao_place_sim(0), NULL, NULL));
}

static void memory_info_bad_places(void **state) {
  size_t free_bytes = 5, total = 6;
  dao_place bad_kind;
  int cuda = 0;
  (void)state;
  bad_kind.kind = (dao_place_kind)42;
  bad_kind.device = 0;
  assert_status(dao_place_memory_info(bad_kind, &free_bytes, &total), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_place_memory_info(dao_place_sim(-1), &free_bytes, &total),
                          DAO_ERR_INVALID_ARGUMENT, "negative");
  assert_failure_mentions(dao_place_memory_info(dao_place_sim(2), &free_bytes, &total),
                          DAO_ERR_NO_DEVICE, "sim device 2");
  assert_failure_mentions(dao_place_memory_info((dao_place){DAO_PLACE_CPU, 1}, &free_bytes, &total),
                          DAO_ERR_NO_DEVICE, "cpu");
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
  if (cuda == 0) {
    assert_status(dao_place_memory_info(dao_place_cuda(0), &free_bytes, &total), DAO_ERR_NO_DEVICE);
    assert_true(strlen(dao_last_error()) > 20); /* says why */
    assert_status(dao_place_memory_info(dao_place_cuda_pinned(), &free_bytes, &total),
                  DAO_ERR_NO_DEVICE);
    assert_status(dao_place_memory_info(dao_place_cuda_managed(0), &free_bytes, &total),
                  DAO_ERR_NO_DEVICE);
  }
  assert_int_equal(free_bytes, 5);
  assert_int_equal(total, 6);
}

static void kind_names(void **state) {
  (void)state;
  assert_string_equal(dao_place_kind_name(DAO_PLACE_CPU), "cpu");
  assert_string_equal(dao_place_kind_name(DAO_PLACE_CUDA), "cuda");
  assert_string_equal(dao_place_kind_name(DAO_PLACE_CUDA_PINNED), "cuda_pinned");
  assert_string_equal(dao_place_kind_name(DAO_PLACE_CUDA_MANAGED), "cuda_managed");
  assert_string_equal(dao_place_kind_name(DAO_PLACE_SIM), "sim");
  assert_string_equal(dao_place_kind_name((dao_place_kind)9), "unknown");
}

static void backend_descriptions_explain(void **state) {
  int k, cuda = 0;
  (void)state;
  for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k) {
    const char *d = dao_place_backend_description((dao_place_kind)k);
    assert_non_null(d);
    assert_true(strlen(d) > 10);
    /* Stable pointer: callers may keep it. */
    assert_ptr_equal(d, dao_place_backend_description((dao_place_kind)k));
  }
  assert_non_null(strstr(dao_place_backend_description(DAO_PLACE_SIM), "DAO_SIM_DEVICES=2x64MiB"));
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
  if (cuda == 0)
    assert_non_null(strstr(dao_place_backend_description(DAO_PLACE_CUDA), "not available"));
  assert_string_equal(dao_place_backend_description((dao_place_kind)42), "unknown place kind");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(constructors_fill_kind_and_device),
      cmocka_unit_test(device_counts),
      cmocka_unit_test(device_count_bad_input),
      cmocka_unit_test(memory_info_of_cpu_and_sim),
      cmocka_unit_test(memory_info_bad_places),
      cmocka_unit_test(kind_names),
      cmocka_unit_test(backend_descriptions_explain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
