/* Streams and events through the public API, on the CPU place and on every
 * SIM device (DAO_SIM_DEVICES=2x64MiB): ordering, events, waits between
 * streams (and between SIM devices), the default (NULL) stream, bad input,
 * and many host functions from several threads on one stream. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <time.h>

#include "dao_test.h"
#include "dao_test_gate.h"

#define KIB ((size_t)1 << 10)

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static dao_place test_places[3];
static size_t test_place_count;

static int setup(void **state) {
  int sims = 0, i;
  (void)state;
  if (dao_place_device_count(DAO_PLACE_SIM, &sims) != DAO_OK || sims != 2) {
    fprintf(stderr, "test_stream expects DAO_SIM_DEVICES=2x64MiB\n");
    return -1;
  }
  test_places[test_place_count++] = dao_place_cpu();
  for (i = 0; i < sims; ++i) test_places[test_place_count++] = dao_place_sim(i);
  return 0;
}

static int is_sim(dao_place p) { return p.kind == DAO_PLACE_SIM; }

static void sleep_ms(int ms) {
  struct timespec t;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (long)(ms % 1000) * 1000000L;
  while (nanosleep(&t, &t) != 0) {
  }
}

static void gate_init(gate *g) { gate_setup(g); }
static void gate_destroy(gate *g) { gate_teardown(g); }

/* Sleeps 20 ms, then fills a buffer: a slow producer. */
typedef struct slow_fill {
  void *buf;
  size_t bytes;
  unsigned seed;
} slow_fill;

static void slow_fill_fn(void *user_data) {
  slow_fill *f = (slow_fill *)user_data;
  sleep_ms(20);
  dao_test_fill(f->buf, f->bytes, f->seed);
}

/* Appends a value to a log: shows the order host functions ran in. */
typedef struct order_log {
  int values[512];
  int count;
} order_log;

typedef struct log_entry {
  order_log *log;
  int value;
} log_entry;

static void log_fn(void *user_data) {
  log_entry *e = (log_entry *)user_data;
  if (e->log->count < 512) e->log->values[e->log->count++] = e->value;
}

static void count_fn(void *user_data) { ++*(int *)user_data; }

static int query_stream(dao_stream s) {
  int idle = -1;
  assert_ok(dao_stream_query(s, &idle));
  assert_true(idle == 0 || idle == 1);
  return idle;
}

static int query_event(dao_event e) {
  int done = -1;
  assert_ok(dao_event_query(e, &done));
  assert_true(done == 0 || done == 1);
  return done;
}

/* ------------------------------------------------------------------------
 * Good input
 * ---------------------------------------------------------------------- */

static void create_and_destroy(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < test_place_count; ++i) {
    dao_stream s[4] = {NULL};
    dao_place where = {DAO_PLACE_CUDA, 7};
    void *native = &where;
    int k;
    for (k = 0; k < 4; ++k) {
      assert_ok(dao_stream_create(test_places[i], &s[k]));
      assert_non_null(s[k]);
    }
    assert_ptr_not_equal(s[0], s[1]);
    assert_ok(dao_stream_place(s[0], &where));
    assert_int_equal(where.kind, test_places[i].kind);
    assert_int_equal(where.device, test_places[i].device);
    assert_ok(dao_stream_native(s[0], &native));
    assert_null(native); /* only CUDA streams have one */
    assert_int_equal(query_stream(s[0]), 1);
    assert_ok(dao_stream_synchronize(s[0]));
    for (k = 0; k < 4; ++k) assert_ok(dao_stream_destroy(s[k]));
  }
}

/* Many copies and host functions run in the order they were queued; a copy
   queued after a slow writer sees what it wrote. */
static void work_runs_in_order(void **state) {
  enum { kSteps = 64, kBytes = 4096 };
  size_t i;
  (void)state;
  for (i = 0; i < test_place_count; ++i) {
    const dao_place place = test_places[i];
    dao_stream s = NULL;
    unsigned char *buf[kSteps + 1];
    unsigned char *src = NULL, *dst = NULL;
    order_log log;
    log_entry entries[2 * kSteps];
    slow_fill fill;
    int k;
    memset(&log, 0, sizeof log);
    assert_ok(dao_stream_create(place, &s));
    for (k = 0; k <= kSteps; ++k) {
      assert_ok(dao_alloc(place, kBytes, (void **)&buf[k]));
      memset(buf[k], 0, kBytes);
    }
    assert_ok(dao_alloc(place, 64 * KIB, (void **)&src));
    assert_ok(dao_alloc(place, 64 * KIB, (void **)&dst));
    memset(src, 0, 64 * KIB);
    memset(dst, 0, 64 * KIB);

    /* A chain of copies buf[0] -> buf[1] -> ... with host functions between:
       each copy reads what the one before wrote. */
    dao_test_fill(buf[0], kBytes, 7);
    for (k = 0; k < kSteps; ++k) {
      entries[2 * k].log = &log;
      entries[2 * k].value = 2 * k;
      entries[2 * k + 1].log = &log;
      entries[2 * k + 1].value = 2 * k + 1;
      assert_ok(dao_launch_host_func(s, log_fn, &entries[2 * k]));
      assert_ok(dao_memcpy_async(buf[k + 1], buf[k], kBytes, s));
      assert_ok(dao_launch_host_func(s, log_fn, &entries[2 * k + 1]));
    }
    /* The slow writer, then a copy of what it writes. */
    fill.buf = src;
    fill.bytes = 64 * KIB;
    fill.seed = 99;
    assert_ok(dao_launch_host_func(s, slow_fill_fn, &fill));
    assert_ok(dao_memcpy_async(dst, src, 64 * KIB, s));
    assert_ok(dao_stream_synchronize(s));
    assert_int_equal(query_stream(s), 1);

    assert_true(dao_test_check(buf[kSteps], kBytes, 7));
    assert_true(dao_test_check(dst, 64 * KIB, 99));
    assert_int_equal(log.count, 2 * kSteps);
    for (k = 0; k < 2 * kSteps; ++k) assert_int_equal(log.values[k], k);

    for (k = 0; k <= kSteps; ++k) assert_ok(dao_free(place, buf[k]));
    assert_ok(dao_free(place, src));
    assert_ok(dao_free(place, dst));
    assert_ok(dao_stream_destroy(s));
  }
}

/* On SIM the work is asynchronous: the stream is busy while a host function
   runs, and idle once synchronised. */
static void sim_work_is_asynchronous(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < test_place_count; ++i) {
    dao_stream s = NULL;
    gate g;
    slow_fill fill;
    unsigned char src[256], dst[256];
    if (!is_sim(test_places[i])) continue;
    gate_init(&g);
    memset(dst, 0, sizeof dst);
    fill.buf = src;
    fill.bytes = sizeof src;
    fill.seed = 3;
    assert_ok(dao_stream_create(test_places[i], &s));
    assert_ok(dao_launch_host_func(s, gate_fn, &g));
    assert_ok(dao_launch_host_func(s, slow_fill_fn, &fill));
    assert_ok(dao_memcpy_async(dst, src, sizeof src, s));
    gate_wait_entered(&g);
    assert_int_equal(query_stream(s), 0);
    gate_open(&g);
    /* Still busy with the 20 ms writer, or done: either is right here. */
    (void)query_stream(s);
    assert_ok(dao_stream_synchronize(s));
    assert_int_equal(query_stream(s), 1);
    assert_true(dao_test_check(dst, sizeof dst, 3));
    assert_ok(dao_stream_destroy(s));
    gate_destroy(&g);
  }
}

static void events_complete_and_move(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < test_place_count; ++i) {
    const dao_place place = test_places[i];
    dao_event e = NULL;
    dao_stream a = NULL, b = NULL;
    assert_ok(dao_event_create(place, &e));
    assert_non_null(e);
    /* A new event counts as completed. */
    assert_int_equal(query_event(e), 1);
    assert_ok(dao_event_synchronize(e));
    assert_ok(dao_stream_create(place, &a));
    assert_ok(dao_stream_create(place, &b));

    assert_ok(dao_event_record(e, a));
    assert_ok(dao_event_synchronize(e));
    assert_int_equal(query_event(e), 1);

    if (is_sim(place)) {
      gate g1, g2;
      gate_init(&g1);
      gate_init(&g2);
      /* Recorded behind a blocked host function: not complete. */
      assert_ok(dao_launch_host_func(a, gate_fn, &g1));
      assert_ok(dao_event_record(e, a));
      gate_wait_entered(&g1);
      assert_int_equal(query_event(e), 0);
      /* Re-recording on the idle stream b moves the event there: complete
         although a is still blocked. */
      assert_ok(dao_event_record(e, b));
      assert_ok(dao_stream_synchronize(b));
      assert_int_equal(query_event(e), 1);
      assert_int_equal(query_stream(a), 0);
      /* Moved back behind a second blocked function on a. */
      assert_ok(dao_launch_host_func(a, gate_fn, &g2));
      assert_ok(dao_event_record(e, a));
      assert_int_equal(query_event(e), 0);
      /* Recording on the default stream completes it at once. */
      assert_ok(dao_event_record(e, NULL));
      assert_int_equal(query_event(e), 1);
      assert_ok(dao_event_record(e, a));
      assert_int_equal(query_event(e), 0);
      gate_open(&g1);
      gate_open(&g2);
      assert_ok(dao_event_synchronize(e));
      assert_int_equal(query_event(e), 1);
      assert_int_equal(query_stream(a), 1);
      gate_destroy(&g1);
      gate_destroy(&g2);
    } else {
      /* CPU: the work has run by the time the call returns. */
      int count = 0;
      assert_ok(dao_launch_host_func(a, count_fn, &count));
      assert_int_equal(count, 1);
      assert_ok(dao_event_record(e, a));
      assert_int_equal(query_event(e), 1);
      assert_ok(dao_event_record(e, NULL));
      assert_int_equal(query_event(e), 1);
    }
    assert_ok(dao_stream_destroy(a));
    assert_ok(dao_stream_destroy(b));
    assert_ok(dao_event_destroy(e));
  }
}

/* Stream b waits for an event recorded on stream a after a slow writer; a
   copy on b then sees what a wrote. Also between the two SIM devices. */
static void cross_stream(dao_place pa, dao_place pb, dao_place pe) {
  dao_stream a = NULL, b = NULL;
  dao_event e = NULL;
  gate g;
  slow_fill fill;
  unsigned char *x = NULL, *y = NULL;
  const size_t bytes = 256 * KIB;
  gate_init(&g);
  assert_ok(dao_stream_create(pa, &a));
  assert_ok(dao_stream_create(pb, &b));
  assert_ok(dao_event_create(pe, &e));
  assert_ok(dao_alloc(pa, bytes, (void **)&x));
  assert_ok(dao_alloc(pb, bytes, (void **)&y));
  memset(x, 0, bytes);
  memset(y, 0, bytes);
  fill.buf = x;
  fill.bytes = bytes;
  fill.seed = 11;

  if (is_sim(pa)) assert_ok(dao_launch_host_func(a, gate_fn, &g));
  assert_ok(dao_launch_host_func(a, slow_fill_fn, &fill));
  assert_ok(dao_event_record(e, a));
  assert_ok(dao_stream_wait_event(b, e));
  assert_ok(dao_memcpy_async(y, x, bytes, b));
  if (is_sim(pa)) {
    gate_wait_entered(&g);
    assert_int_equal(query_event(e), 0);
    assert_int_equal(query_stream(b), 0); /* b is held back by a */
    gate_open(&g);
  }
  assert_ok(dao_stream_synchronize(b));
  assert_true(dao_test_check(y, bytes, 11));
  assert_int_equal(query_event(e), 1);

  /* Waiting on an event recorded earlier on the same stream: already
     complete when the wait is reached, no deadlock. */
  assert_ok(dao_event_record(e, a));
  assert_ok(dao_stream_wait_event(a, e));
  assert_ok(dao_memcpy_async(x, y, bytes, a));
  assert_ok(dao_stream_synchronize(a));
  assert_true(dao_test_check(x, bytes, 11));

  assert_ok(dao_free(pa, x));
  assert_ok(dao_free(pb, y));
  assert_ok(dao_event_destroy(e));
  assert_ok(dao_stream_destroy(a));
  assert_ok(dao_stream_destroy(b));
  gate_destroy(&g);
}

static void cross_stream_waits(void **state) {
  (void)state;
  cross_stream(dao_place_cpu(), dao_place_cpu(), dao_place_cpu());
  cross_stream(dao_place_sim(0), dao_place_sim(0), dao_place_sim(0));
  cross_stream(dao_place_sim(1), dao_place_sim(1), dao_place_sim(1));
}

/* A stream of sim:1 waits on an event of sim:0. */
static void cross_sim_device_wait(void **state) {
  dao_stream a = NULL, b = NULL;
  dao_event e = NULL;
  gate g;
  int count = 0;
  unsigned char x[512], y[512];
  (void)state;
  gate_init(&g);
  memset(x, 0, sizeof x);
  memset(y, 0, sizeof y);
  assert_ok(dao_stream_create(dao_place_sim(0), &a));
  assert_ok(dao_stream_create(dao_place_sim(1), &b));
  assert_ok(dao_event_create(dao_place_sim(0), &e));
  assert_ok(dao_launch_host_func(a, gate_fn, &g));
  assert_ok(dao_memcpy_async(x, "0123456789", 10, a));
  assert_ok(dao_event_record(e, a));
  assert_ok(dao_stream_wait_event(b, e));
  assert_ok(dao_memcpy_async(y, x, sizeof x, b));
  assert_ok(dao_launch_host_func(b, count_fn, &count));
  gate_wait_entered(&g);
  assert_int_equal(query_stream(b), 0);
  gate_open(&g);
  assert_ok(dao_stream_synchronize(b));
  assert_int_equal(count, 1);
  assert_memory_equal(y, "0123456789", 10);
  assert_ok(dao_event_destroy(e));
  assert_ok(dao_stream_destroy(a));
  assert_ok(dao_stream_destroy(b));
  gate_destroy(&g);
}

/* NULL is the default stream: everything runs before the call returns. */
static void default_stream(void **state) {
  char src[64] = "the default stream copies at once";
  char dst[64];
  int count = 0;
  int idle = -1;
  size_t i;
  (void)state;
  memset(dst, 0, sizeof dst);
  assert_ok(dao_memcpy_async(dst, src, sizeof src, NULL));
  assert_memory_equal(dst, src, sizeof src);
  assert_ok(dao_memcpy_async(dst, src, sizeof src, DAO_STREAM_DEFAULT));
  assert_ok(dao_launch_host_func(NULL, count_fn, &count));
  assert_int_equal(count, 1);
  assert_ok(dao_stream_synchronize(NULL));
  assert_ok(dao_stream_query(NULL, &idle));
  assert_int_equal(idle, 1);

  for (i = 0; i < test_place_count; ++i) {
    dao_stream s = NULL;
    dao_event e = NULL;
    slow_fill fill;
    unsigned char buf[128];
    memset(buf, 0, sizeof buf);
    fill.buf = buf;
    fill.bytes = sizeof buf;
    fill.seed = 5;
    assert_ok(dao_stream_create(test_places[i], &s));
    assert_ok(dao_event_create(test_places[i], &e));
    /* Waiting on the default stream waits on the calling thread. */
    assert_ok(dao_launch_host_func(s, slow_fill_fn, &fill));
    assert_ok(dao_event_record(e, s));
    assert_ok(dao_stream_wait_event(NULL, e));
    assert_int_equal(query_event(e), 1);
    assert_true(dao_test_check(buf, sizeof buf, 5));
    /* An event recorded on the default stream completes at once. */
    assert_ok(dao_event_record(e, NULL));
    assert_int_equal(query_event(e), 1);
    assert_ok(dao_stream_synchronize(s));
    assert_ok(dao_event_destroy(e));
    assert_ok(dao_stream_destroy(s));
  }
}

static void zero_byte_copies(void **state) {
  size_t i;
  char c = 'x';
  uint64_t garbage[8];
  (void)state;
  memset(garbage, 0, sizeof garbage);
  assert_ok(dao_memcpy_async(NULL, NULL, 0, NULL));
  assert_ok(dao_memcpy_async(&c, &c, 0, NULL)); /* the same range, but empty */
  for (i = 0; i < test_place_count; ++i) {
    dao_stream s = NULL;
    assert_ok(dao_stream_create(test_places[i], &s));
    assert_ok(dao_memcpy_async(NULL, NULL, 0, s));
    assert_ok(dao_memcpy_async(&c, NULL, 0, s));
    assert_ok(dao_stream_synchronize(s));
    assert_ok(dao_stream_destroy(s));
  }
  /* The handle is still checked. */
  assert_failure_mentions(dao_memcpy_async(NULL, NULL, 0, (dao_stream)garbage),
                          DAO_ERR_INVALID_ARGUMENT, "not a live dao_stream handle");
  assert_int_equal(c, 'x');
}

/* Destroying a stream runs what is still queued first. */
static void destroy_drains_pending_work(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < test_place_count; ++i) {
    dao_stream s = NULL;
    int count = 0, k;
    unsigned char buf[64];
    slow_fill fill;
    fill.buf = buf;
    fill.bytes = sizeof buf;
    fill.seed = 21;
    assert_ok(dao_stream_create(test_places[i], &s));
    assert_ok(dao_launch_host_func(s, slow_fill_fn, &fill));
    for (k = 0; k < 100; ++k) assert_ok(dao_launch_host_func(s, count_fn, &count));
    assert_ok(dao_stream_destroy(s));
    assert_int_equal(count, 100);
    assert_true(dao_test_check(buf, sizeof buf, 21));
  }
}

/* An event may be destroyed while work that completes it is still queued. */
static void destroy_event_with_pending_record(void **state) {
  dao_stream s = NULL;
  dao_event e = NULL, other = NULL;
  gate g;
  (void)state;
  gate_init(&g);
  assert_ok(dao_stream_create(dao_place_sim(0), &s));
  assert_ok(dao_event_create(dao_place_sim(0), &e));
  assert_ok(dao_event_create(dao_place_sim(0), &other));
  assert_ok(dao_launch_host_func(s, gate_fn, &g));
  assert_ok(dao_event_record(e, s));
  assert_ok(dao_stream_wait_event(s, e));
  assert_ok(dao_event_record(other, s));
  assert_ok(dao_event_destroy(e));
  gate_open(&g);
  assert_ok(dao_event_synchronize(other));
  assert_ok(dao_stream_destroy(s));
  assert_ok(dao_event_destroy(other));
  gate_destroy(&g);
}

/* A host function that waits for its own stream would wait for itself:
   refused with a status, never a hang or an abort. */
typedef struct self_call {
  dao_stream stream;
  dao_status synchronize_status;
  dao_status destroy_status;
} self_call;

static void self_call_fn(void *user_data) {
  self_call *c = (self_call *)user_data;
  c->synchronize_status = dao_stream_synchronize(c->stream);
  c->destroy_status = dao_stream_destroy(c->stream);
}

static void host_function_cannot_wait_for_its_stream(void **state) {
  self_call c;
  (void)state;
  c.stream = NULL;
  c.synchronize_status = DAO_OK;
  c.destroy_status = DAO_OK;
  assert_ok(dao_stream_create(dao_place_sim(0), &c.stream));
  assert_ok(dao_launch_host_func(c.stream, self_call_fn, &c));
  assert_ok(dao_stream_synchronize(c.stream));
  assert_int_equal(c.synchronize_status, DAO_ERR_INVALID_STATE);
  assert_int_equal(c.destroy_status, DAO_ERR_INVALID_STATE);
  assert_ok(dao_stream_destroy(c.stream));
}

/* ------------------------------------------------------------------------
 * Bad input: a status and a message, and nothing changed
 * ---------------------------------------------------------------------- */

static void bad_places(void **state) {
  dao_place bad_kind;
  const dao_place missing[] = {{DAO_PLACE_SIM, 2}, {DAO_PLACE_SIM, 1000}, {DAO_PLACE_CPU, 1}};
  dao_stream s = (dao_stream)&bad_kind;
  dao_event e = (dao_event)&bad_kind;
  size_t i;
  (void)state;
  bad_kind.kind = (dao_place_kind)42;
  bad_kind.device = 0;
  assert_failure_mentions(dao_stream_create(bad_kind, &s), DAO_ERR_INVALID_ARGUMENT,
                          "unknown place kind 42");
  assert_failure_mentions(dao_event_create(bad_kind, &e), DAO_ERR_INVALID_ARGUMENT,
                          "unknown place kind 42");
  assert_failure_mentions(dao_stream_wrap(bad_kind, NULL, &s), DAO_ERR_INVALID_ARGUMENT,
                          "unknown place kind 42");
  assert_failure_mentions(dao_stream_create(dao_place_sim(-1), &s), DAO_ERR_INVALID_ARGUMENT,
                          "negative");
  assert_failure_mentions(dao_event_create(dao_place_sim(-1), &e), DAO_ERR_INVALID_ARGUMENT,
                          "negative");
  for (i = 0; i < sizeof missing / sizeof missing[0]; ++i) {
    assert_failure_mentions(dao_stream_create(missing[i], &s), DAO_ERR_NO_DEVICE, "does not exist");
    assert_failure_mentions(dao_event_create(missing[i], &e), DAO_ERR_NO_DEVICE, "does not exist");
    assert_failure_mentions(dao_stream_wrap(missing[i], NULL, &s), DAO_ERR_NO_DEVICE,
                            "does not exist");
  }
  assert_ptr_equal(s, (dao_stream)&bad_kind);
  assert_ptr_equal(e, (dao_event)&bad_kind);
}

static void wrap_needs_native_streams(void **state) {
  int dummy = 0;
  dao_stream s = (dao_stream)&dummy;
  size_t i;
  (void)state;
  for (i = 0; i < test_place_count; ++i) {
    assert_failure_mentions(dao_stream_wrap(test_places[i], &dummy, &s), DAO_ERR_UNSUPPORTED,
                            "no native streams");
    assert_failure_mentions(dao_stream_wrap(test_places[i], NULL, &s), DAO_ERR_UNSUPPORTED,
                            is_sim(test_places[i]) ? "sim:" : "cpu");
    assert_failure_mentions(dao_stream_wrap(test_places[i], NULL, NULL), DAO_ERR_INVALID_ARGUMENT,
                            "out must not be NULL");
  }
  assert_ptr_equal(s, (dao_stream)&dummy);
}

static void stream_functions_bad_input(void **state) {
  uint64_t zeros[16];
  dao_stream garbage = (dao_stream)zeros;
  dao_stream s = NULL;
  dao_event e = NULL;
  void *native = &s;
  dao_place where = {DAO_PLACE_CUDA, 9};
  int idle = 7;
  (void)state;
  memset(zeros, 0, sizeof zeros);
  assert_ok(dao_stream_create(dao_place_sim(0), &s));
  assert_ok(dao_event_create(dao_place_sim(0), &e));

  assert_failure_mentions(dao_stream_create(dao_place_sim(0), NULL), DAO_ERR_INVALID_ARGUMENT,
                          "dao_stream_create: out must not be NULL");

  assert_failure_mentions(dao_stream_native(NULL, &native), DAO_ERR_INVALID_ARGUMENT,
                          "stream must not be NULL");
  assert_failure_mentions(dao_stream_native(garbage, &native), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");
  assert_failure_mentions(dao_stream_native(s, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "native must not be NULL");
  assert_ptr_equal(native, &s);

  assert_failure_mentions(dao_stream_place(NULL, &where), DAO_ERR_INVALID_ARGUMENT,
                          "stream must not be NULL");
  assert_failure_mentions(dao_stream_place(garbage, &where), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");
  assert_failure_mentions(dao_stream_place(s, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "place must not be NULL");
  assert_int_equal(where.kind, DAO_PLACE_CUDA);
  assert_int_equal(where.device, 9);

  assert_failure_mentions(dao_stream_synchronize(garbage), DAO_ERR_INVALID_ARGUMENT,
                          "dao_stream_synchronize");

  assert_failure_mentions(dao_stream_query(s, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "idle must not be NULL");
  assert_failure_mentions(dao_stream_query(NULL, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "idle must not be NULL");
  assert_failure_mentions(dao_stream_query(garbage, &idle), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");
  assert_int_equal(idle, 7);

  assert_failure_mentions(dao_stream_wait_event(s, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_stream_wait_event(NULL, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_stream_wait_event(garbage, e), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");
  assert_failure_mentions(dao_stream_wait_event(s, (dao_event)zeros), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_event handle");

  assert_failure_mentions(dao_stream_destroy(NULL), DAO_ERR_INVALID_ARGUMENT,
                          "stream must not be NULL");
  assert_failure_mentions(dao_stream_destroy(garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");

  /* An event handle is not a stream handle, and the other way round. */
  assert_failure_mentions(dao_stream_synchronize((dao_stream)e), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");
  assert_failure_mentions(dao_event_synchronize((dao_event)s), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_event handle");

  /* Still usable after all that. */
  assert_ok(dao_event_record(e, s));
  assert_ok(dao_stream_synchronize(s));
  assert_ok(dao_event_destroy(e));
  assert_ok(dao_stream_destroy(s));
  assert_true(zeros[0] == 0 && zeros[15] == 0);
}

static void event_functions_bad_input(void **state) {
  uint64_t zeros[16];
  dao_event garbage = (dao_event)zeros;
  dao_stream s = NULL;
  dao_event e = NULL;
  int done = 7;
  (void)state;
  memset(zeros, 0, sizeof zeros);
  assert_ok(dao_stream_create(dao_place_sim(0), &s));
  assert_ok(dao_event_create(dao_place_sim(0), &e));

  assert_failure_mentions(dao_event_create(dao_place_sim(0), NULL), DAO_ERR_INVALID_ARGUMENT,
                          "dao_event_create: out must not be NULL");
  assert_failure_mentions(dao_event_record(NULL, s), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_event_record(NULL, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_event_record(garbage, s), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_event handle");
  assert_failure_mentions(dao_event_record(e, (dao_stream)zeros), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream handle");
  assert_failure_mentions(dao_event_query(NULL, &done), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_event_query(garbage, &done), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_event handle");
  assert_failure_mentions(dao_event_query(e, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "done must not be NULL");
  assert_int_equal(done, 7);
  assert_failure_mentions(dao_event_synchronize(NULL), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_event_synchronize(garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_event handle");
  assert_failure_mentions(dao_event_destroy(NULL), DAO_ERR_INVALID_ARGUMENT,
                          "event must not be NULL");
  assert_failure_mentions(dao_event_destroy(garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_event handle");

  assert_ok(dao_event_destroy(e));
  assert_ok(dao_stream_destroy(s));
  assert_true(zeros[0] == 0 && zeros[15] == 0);
}

/* Events and streams of different places do not mix, except that a SIM
   stream may wait on any SIM device's event. */
static void place_mismatch(void **state) {
  dao_stream cpu_s = NULL, sim0_s = NULL, sim1_s = NULL;
  dao_event cpu_e = NULL, sim0_e = NULL, sim1_e = NULL;
  (void)state;
  assert_ok(dao_stream_create(dao_place_cpu(), &cpu_s));
  assert_ok(dao_stream_create(dao_place_sim(0), &sim0_s));
  assert_ok(dao_stream_create(dao_place_sim(1), &sim1_s));
  assert_ok(dao_event_create(dao_place_cpu(), &cpu_e));
  assert_ok(dao_event_create(dao_place_sim(0), &sim0_e));
  assert_ok(dao_event_create(dao_place_sim(1), &sim1_e));

  assert_failure_mentions(dao_event_record(sim0_e, cpu_s), DAO_ERR_INVALID_ARGUMENT,
                          "the stream is on cpu but the event is on sim:0");
  assert_failure_mentions(dao_event_record(cpu_e, sim0_s), DAO_ERR_INVALID_ARGUMENT,
                          "the stream is on sim:0 but the event is on cpu");
  assert_failure_mentions(dao_event_record(sim0_e, sim1_s), DAO_ERR_INVALID_ARGUMENT,
                          "the stream is on sim:1 but the event is on sim:0");
  assert_failure_mentions(dao_stream_wait_event(cpu_s, sim0_e), DAO_ERR_INVALID_ARGUMENT,
                          "dao_stream_wait_event");
  assert_failure_mentions(dao_stream_wait_event(sim0_s, cpu_e), DAO_ERR_INVALID_ARGUMENT,
                          "the stream is on sim:0 but the event is on cpu");
  /* Allowed: */
  assert_ok(dao_event_record(sim1_e, sim1_s));
  assert_ok(dao_stream_wait_event(sim0_s, sim1_e));
  assert_ok(dao_stream_wait_event(sim1_s, sim0_e));
  assert_ok(dao_stream_wait_event(NULL, cpu_e));
  assert_ok(dao_stream_wait_event(NULL, sim1_e));
  assert_ok(dao_event_record(cpu_e, NULL));
  assert_ok(dao_event_record(sim0_e, NULL));

  assert_ok(dao_stream_destroy(cpu_s));
  assert_ok(dao_stream_destroy(sim0_s));
  assert_ok(dao_stream_destroy(sim1_s));
  assert_ok(dao_event_destroy(cpu_e));
  assert_ok(dao_event_destroy(sim0_e));
  assert_ok(dao_event_destroy(sim1_e));
}

static void copy_and_host_func_bad_input(void **state) {
  uint64_t zeros[16];
  unsigned char buf[256];
  size_t i;
  int count = 0;
  (void)state;
  memset(zeros, 0, sizeof zeros);
  for (i = 0; i < sizeof buf; ++i) buf[i] = (unsigned char)i;
  for (i = 0; i <= test_place_count; ++i) {
    /* The default stream, then each place's stream. */
    dao_stream s = NULL;
    if (i > 0) assert_ok(dao_stream_create(test_places[i - 1], &s));
    assert_failure_mentions(dao_memcpy_async(NULL, buf, 1, s), DAO_ERR_INVALID_ARGUMENT,
                            "dst must not be NULL");
    assert_failure_mentions(dao_memcpy_async(buf, NULL, 1, s), DAO_ERR_INVALID_ARGUMENT,
                            "src must not be NULL");
    assert_failure_mentions(dao_memcpy_async(buf + 1, buf, 2, s), DAO_ERR_INVALID_ARGUMENT,
                            "overlap");
    assert_failure_mentions(dao_memcpy_async(buf, buf + 100, 101, s), DAO_ERR_INVALID_ARGUMENT,
                            "overlap");
    assert_failure_mentions(dao_memcpy_async(buf, buf, 16, s), DAO_ERR_INVALID_ARGUMENT, "overlap");
    assert_failure_mentions(dao_memcpy_async((void *)(UINTPTR_MAX - 8), buf, 64, s),
                            DAO_ERR_INVALID_ARGUMENT, "end of the address space");
    /* Adjacent ranges do not overlap. */
    assert_ok(dao_memcpy_async(buf, buf + 128, 128, s));
    assert_ok(dao_stream_synchronize(s));
    assert_int_equal(buf[0], 128);
    assert_int_equal(buf[255], 255);
    for (size_t k = 0; k < sizeof buf; ++k) buf[k] = (unsigned char)k;

    assert_failure_mentions(dao_launch_host_func(s, NULL, &count), DAO_ERR_INVALID_ARGUMENT,
                            "fn must not be NULL");
    if (s != NULL) assert_ok(dao_stream_destroy(s));
  }
  assert_failure_mentions(dao_memcpy_async(buf, buf + 128, 16, (dao_stream)zeros),
                          DAO_ERR_INVALID_ARGUMENT, "dao_memcpy_async: ");
  assert_failure_mentions(dao_launch_host_func((dao_stream)zeros, count_fn, &count),
                          DAO_ERR_INVALID_ARGUMENT, "not a live dao_stream handle");
  assert_int_equal(count, 0);
  assert_int_equal(buf[0], 0);
  assert_int_equal(buf[200], 200);
}

/* ------------------------------------------------------------------------
 * Stress: two threads queue 10000 host functions each on one SIM stream
 * ---------------------------------------------------------------------- */

enum { kProducers = 2, kPerProducer = 10000 };

typedef struct shared_counts {
  long total;
  int next[kProducers]; /* the sequence number each producer expects next */
  long out_of_order;
} shared_counts;

typedef struct stress_item {
  shared_counts *counts;
  int producer;
  int sequence;
} stress_item;

/* Runs on the stream's worker, one at a time: no locking needed. */
static void stress_fn(void *user_data) {
  stress_item *it = (stress_item *)user_data;
  shared_counts *c = it->counts;
  if (c->next[it->producer] != it->sequence) ++c->out_of_order;
  c->next[it->producer] = it->sequence + 1;
  ++c->total;
}

typedef struct producer {
  dao_stream stream;
  stress_item *items;
  int failures;
} producer;

static void *producer_main(void *arg) {
  producer *p = (producer *)arg;
  int i;
  for (i = 0; i < kPerProducer; ++i) {
    if (dao_launch_host_func(p->stream, stress_fn, &p->items[i]) != DAO_OK) ++p->failures;
    /* Now and then, wait in the middle of the other producer's work. */
    if (i % 2500 == 1249 && dao_stream_synchronize(p->stream) != DAO_OK) ++p->failures;
  }
  return NULL;
}

static void two_producers_one_stream(void **state) {
  dao_stream s = NULL;
  shared_counts counts;
  producer producers[kProducers];
  pthread_t threads[kProducers];
  int p, i, idle = 0;
  (void)state;
  memset(&counts, 0, sizeof counts);
  assert_ok(dao_stream_create(dao_place_sim(1), &s));
  for (p = 0; p < kProducers; ++p) {
    producers[p].stream = s;
    producers[p].failures = 0;
    producers[p].items = (stress_item *)malloc(kPerProducer * sizeof(stress_item));
    assert_non_null(producers[p].items);
    for (i = 0; i < kPerProducer; ++i) {
      producers[p].items[i].counts = &counts;
      producers[p].items[i].producer = p;
      producers[p].items[i].sequence = i;
    }
  }
  for (p = 0; p < kProducers; ++p)
    assert_int_equal(pthread_create(&threads[p], NULL, producer_main, &producers[p]), 0);
  for (p = 0; p < kProducers; ++p) assert_int_equal(pthread_join(threads[p], NULL), 0);
  assert_ok(dao_stream_synchronize(s));
  assert_ok(dao_stream_query(s, &idle));
  assert_int_equal(idle, 1);
  assert_int_equal(counts.total, (long)kProducers * kPerProducer);
  assert_int_equal(counts.out_of_order, 0);
  for (p = 0; p < kProducers; ++p) {
    assert_int_equal(producers[p].failures, 0);
    assert_int_equal(counts.next[p], kPerProducer);
    free(producers[p].items);
  }
  assert_ok(dao_stream_destroy(s));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(create_and_destroy),
      cmocka_unit_test(work_runs_in_order),
      cmocka_unit_test(sim_work_is_asynchronous),
      cmocka_unit_test(events_complete_and_move),
      cmocka_unit_test(cross_stream_waits),
      cmocka_unit_test(cross_sim_device_wait),
      cmocka_unit_test(default_stream),
      cmocka_unit_test(zero_byte_copies),
      cmocka_unit_test(destroy_drains_pending_work),
      cmocka_unit_test(destroy_event_with_pending_record),
      cmocka_unit_test(host_function_cannot_wait_for_its_stream),
      cmocka_unit_test(bad_places),
      cmocka_unit_test(wrap_needs_native_streams),
      cmocka_unit_test(stream_functions_bad_input),
      cmocka_unit_test(event_functions_bad_input),
      cmocka_unit_test(place_mismatch),
      cmocka_unit_test(copy_and_host_func_bad_input),
      cmocka_unit_test(two_producers_one_stream),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
