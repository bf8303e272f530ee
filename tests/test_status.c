/* Version, status strings and the thread-local last-error message. */
#include <pthread.h>

#include "dao_test.h"

static void version_matches_header(void **state) {
  (void)state;
  assert_int_equal(dao_version_number(), DAO_VERSION_NUMBER);
  assert_string_equal(dao_version_string(), DAO_VERSION_STRING);
  assert_int_equal(DAO_VERSION_NUMBER,
                   DAO_VERSION_MAJOR * 10000 + DAO_VERSION_MINOR * 100 + DAO_VERSION_PATCH);
}

static void status_numbers_are_fixed(void **state) {
  (void)state;
  /* The ABI: these numbers may never change. */
  assert_int_equal(DAO_OK, 0);
  assert_int_equal(DAO_ERR_INVALID_ARGUMENT, 1);
  assert_int_equal(DAO_ERR_OUT_OF_MEMORY, 2);
  assert_int_equal(DAO_ERR_INVALID_POINTER, 3);
  assert_int_equal(DAO_ERR_UNSUPPORTED, 4);
  assert_int_equal(DAO_ERR_NO_DEVICE, 5);
  assert_int_equal(DAO_ERR_TIMEOUT, 6);
  assert_int_equal(DAO_ERR_CLOSED, 7);
  assert_int_equal(DAO_ERR_BACKEND, 8);
  assert_int_equal(DAO_ERR_INTERNAL, 9);
  assert_int_equal(DAO_ERR_INVALID_STATE, 10);
  assert_int_equal(DAO_ERR_BUSY, 11);
  assert_int_equal(DAO_ERR_NOT_FOUND, 12);
}

static void every_status_has_a_distinct_name(void **state) {
  int i, j;
  (void)state;
  for (i = 0; i < DAO_STATUS_END_; ++i) {
    const char *name = dao_status_string((dao_status)i);
    assert_non_null(name);
    assert_true(strlen(name) > 0);
    assert_string_not_equal(name, "unknown status");
    for (j = 0; j < i; ++j) assert_string_not_equal(name, dao_status_string((dao_status)j));
  }
  assert_string_equal(dao_status_string(DAO_OK), "success");
  assert_string_equal(dao_status_string(DAO_ERR_OUT_OF_MEMORY), "out of memory");
}

static void unknown_status_is_named_not_crashed(void **state) {
  (void)state;
  assert_string_equal(dao_status_string((dao_status)DAO_STATUS_END_), "unknown status");
  assert_string_equal(dao_status_string((dao_status)-1), "unknown status");
  assert_string_equal(dao_status_string((dao_status)100000), "unknown status");
}

static void *fail_on_other_thread(void *arg) {
  void *p = NULL;
  (void)arg;
  /* A failure on this thread must not touch the main thread's message. */
  if (dao_alloc(dao_place_sim(99), 16, &p) != DAO_ERR_NO_DEVICE) return (void *)1;
  if (strstr(dao_last_error(), "sim device 99") == NULL) return (void *)2;
  return NULL;
}

static void last_error_is_thread_local_and_sticky(void **state) {
  pthread_t thread;
  void *result = (void *)42;
  char before[1024];
  (void)state;
  assert_status(dao_place_device_count(DAO_PLACE_CPU, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(dao_last_error(), "count"));
  snprintf(before, sizeof before, "%s", dao_last_error());
  assert_int_equal(pthread_create(&thread, NULL, fail_on_other_thread, NULL), 0);
  assert_int_equal(pthread_join(thread, &result), 0);
  assert_null(result);
  assert_string_equal(dao_last_error(), before);
  /* Success leaves the message alone, like errno. */
  {
    int count = 0;
    assert_ok(dao_place_device_count(DAO_PLACE_CPU, &count));
  }
  assert_string_equal(dao_last_error(), before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(version_matches_header),
      cmocka_unit_test(status_numbers_are_fixed),
      cmocka_unit_test(every_status_has_a_distinct_name),
      cmocka_unit_test(unknown_status_is_named_not_crashed),
      cmocka_unit_test(last_error_is_thread_local_and_sticky),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
