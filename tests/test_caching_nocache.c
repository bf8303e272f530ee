/* DAO_NO_CACHING=1: the "caching" strategy gives every free back to the
 * place at once (registered with DAO_NO_CACHING=1; refuses to run without
 * it). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Issue 20, defect 4: a free waits for its stream's work before the memory
   goes back; a host function of that stream that allocates meanwhile gets
   the allocator (the wait is made without its lock), and the free returns
   once the host function has. A hang is turned into a failure. */
typedef struct {
  dao_allocator *a;
  void *p;
  dao_status status;
  int finished;
} free_call;

static void *free_thread(void *arg) {
  free_call *c = (free_call *)arg;
  c->status = dao_allocator_free(c->a, c->p);
  __atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void free_waits_without_the_lock(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_stream sa = make_stream(big_place());
  static allocating_fn fn;
  free_call call;
  pthread_t thread;
  (void)state;
  gate_init(&fn.g);
  fn.a = a;
  fn.status = DAO_ERR_INTERNAL;
  memset(&call, 0, sizeof call);
  call.a = a;
  call.p = alloc_ok(a, 3 * MIB, sa);
  call.status = DAO_ERR_INTERNAL;
  assert_ok(dao_launch_host_func(sa, gated_alloc_fn, &fn));
  gate_wait_entered(&fn.g);
  assert_int_equal(pthread_create(&thread, NULL, free_thread, &call), 0);
  {
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL); /* lets the free start waiting; not needed to pass */
  }
  gate_open(&fn.g);
  wait_or_die(&call.finished, "free_waits_without_the_lock: the free");
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_ok(dao_stream_synchronize(sa));
  assert_int_equal(fn.status, DAO_OK);
  assert_int_equal(call.status, DAO_OK);
  assert_int_equal(place_free(big_place()), big_baseline); /* the free gave it back */
  gate_destroy(&fn.g);
  destroy(a);
  drop_stream(sa);
  assert_int_equal(place_free(big_place()), big_baseline);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_caching_gives_memory_back, baseline, cleanup),
      cmocka_unit_test_setup_teardown(free_waits_without_the_lock, baseline, cleanup),
  };
  if (!no_caching_is(1)) return 2;
  return cmocka_run_group_tests_name("nocache", tests, setup, NULL);
}
