/*
 * Reentrancy (issue 20): every library call a callback may make, made from
 * inside the callback. Callbacks: host functions (dao_launch_host_func) on a
 * SIM stream, on the default (NULL) stream and, with the fake CUDA driver
 * (argument "cuda"), on a CUDA stream; kernels of a tiered pool
 * (dao_kernel_fn); scoring callbacks of a tiered pool (dao_score_fn). An
 * allowed call must return DAO_OK and work; a forbidden one must return
 * DAO_ERR_INVALID_STATE with a message naming the call and the callback,
 * and change nothing. A watchdog thread turns a hang into a failure: it
 * prints the pair that hung and exits.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dao_test.h"

/* ------------------------------------------------------------ watchdog */

#define PAIR_SECONDS 30

static pthread_mutex_t wd_mutex = PTHREAD_MUTEX_INITIALIZER;
static const char *wd_pair; /* the pair running, or NULL */
static time_t wd_deadline;  /* CLOCK_MONOTONIC seconds */
static int pairs_tested;

static time_t now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    usleep(100 * 1000);
    pthread_mutex_lock(&wd_mutex);
    if (wd_pair != NULL && now_s() > wd_deadline) {
      fprintf(stderr, "test_reentrancy: HANG: %s did not return within %d s\n", wd_pair,
              PAIR_SECONDS);
      fflush(stderr);
      _exit(1);
    }
    pthread_mutex_unlock(&wd_mutex);
  }
  return NULL;
}

static void pair_begin(const char *name) {
  pthread_mutex_lock(&wd_mutex);
  wd_pair = name;
  wd_deadline = now_s() + PAIR_SECONDS;
  pthread_mutex_unlock(&wd_mutex);
}

static void pair_end(void) {
  pthread_mutex_lock(&wd_mutex);
  wd_pair = NULL;
  ++pairs_tested;
  pthread_mutex_unlock(&wd_mutex);
}

/* ------------------------------------------------------------ a call */

/* What the callback did: the status and the thread's message, copied there
   (dao_last_error() is per thread). */
typedef struct result {
  int ran;
  dao_status status;
  char message[768];
} result;

static void keep(result *r, dao_status s) {
  const char *m = dao_last_error();
  r->ran = 1;
  r->status = s;
  snprintf(r->message, sizeof r->message, "%s", s != DAO_OK && m != NULL ? m : "");
}

/* Checks a forbidden call's result: the status and a message that names the
   call and the callback. */
static void expect_refused(const char *pair, const result *r, const char *call,
                           const char *callback) {
  if (!r->ran || r->status != DAO_ERR_INVALID_STATE || strstr(r->message, call) == NULL ||
      strstr(r->message, callback) == NULL) {
    fprintf(stderr,
            "%s: ran=%d status=%s message='%s' (wanted DAO_ERR_INVALID_STATE naming %s and %s)\n",
            pair, r->ran, dao_status_string(r->status), r->message, call, callback);
    fail();
  }
}

static void expect_ok(const char *pair, const result *r) {
  if (!r->ran || r->status != DAO_OK) {
    fprintf(stderr, "%s: ran=%d status=%s message='%s' (wanted DAO_OK)\n", pair, r->ran,
            dao_status_string(r->status), r->message);
    fail();
  }
}

/* ------------------------------------------------------- host functions */

enum host_call {
  H_SYNC_OWN,          /* dao_stream_synchronize(own stream) */
  H_DESTROY_OWN,       /* dao_stream_destroy(own stream) */
  H_EVENT_SYNC_LATER,  /* dao_event_synchronize(event recorded on own stream after it) */
  H_WAIT_NULL_LATER,   /* dao_stream_wait_event(NULL, that event) */
  H_EVENT_SYNC_BEFORE, /* dao_event_synchronize(event recorded before it) */
  H_SYNC_OTHER,        /* dao_stream_synchronize(another stream) */
  H_QUERY_OWN,         /* dao_stream_query(own) */
  H_EVENT_QUERY,       /* dao_event_query */
  H_RECORD_OWN,        /* dao_event_record(event, own) */
  H_WAIT_OWN,          /* dao_stream_wait_event(own, event) */
  H_COPY_OWN,          /* dao_memcpy_async(own) */
  H_LAUNCH_OWN,        /* dao_launch_host_func(own) */
  H_STREAM_CREATE,     /* dao_stream_create + destroy of a new stream */
  H_ALLOC_FREE,        /* dao_allocator_alloc + free, caching, on own stream */
  H_TRIM_OWN,          /* dao_allocator_trim of a caching allocator used on own stream */
  H_TIERED_OTHER,      /* dao_tiered_synchronize of an unrelated pool */
  H_DESTROY_ALLOC,     /* dao_allocator_destroy of a caching allocator used on own stream */
  H_COUNT
};

static const char *const host_call_names[H_COUNT] = {
    "dao_stream_synchronize(own stream)",
    "dao_stream_destroy(own stream)",
    "dao_event_synchronize(event recorded later on own stream)",
    "dao_stream_wait_event(NULL, event recorded later on own stream)",
    "dao_event_synchronize(event recorded before)",
    "dao_stream_synchronize(other stream)",
    "dao_stream_query(own stream)",
    "dao_event_query",
    "dao_event_record(own stream)",
    "dao_stream_wait_event(own stream)",
    "dao_memcpy_async(own stream)",
    "dao_launch_host_func(own stream)",
    "dao_stream_create/destroy(new stream)",
    "dao_allocator_alloc/free(caching, own stream)",
    "dao_allocator_trim(caching used on own stream)",
    "dao_tiered_synchronize(unrelated pool)",
    "dao_allocator_destroy(caching used on own stream)"};

typedef struct host_ctx {
  enum host_call call;
  dao_place place;
  dao_stream own, other;
  dao_event later, before, spare;
  dao_allocator *alloc;
  dao_tiered *pool;
  dao_stream fresh; /* created by the function; destroyed here if it could not */
  char src[64], dst[64];
  char other_dst[1]; /* the other stream's copy: apart from dst, which the own stream writes */
  int inner_ran;
  volatile int gate_open;
  result r;
} host_ctx;

static void inner_fn(void *p) { ((host_ctx *)p)->inner_ran = 1; }

/* Holds the stream until the test has queued what must come after. */
static void gate_fn(void *p) {
  host_ctx *c = p;
  while (!__atomic_load_n(&c->gate_open, __ATOMIC_ACQUIRE)) usleep(100);
}

static void host_fn(void *p) {
  host_ctx *c = p;
  dao_status s = DAO_OK;
  int flag = 0;
  void *ptr = NULL;
  size_t released = 0;
  switch (c->call) {
    case H_SYNC_OWN: s = dao_stream_synchronize(c->own); break;
    case H_DESTROY_OWN: s = dao_stream_destroy(c->own); break;
    case H_EVENT_SYNC_LATER: s = dao_event_synchronize(c->later); break;
    case H_WAIT_NULL_LATER: s = dao_stream_wait_event(NULL, c->later); break;
    case H_EVENT_SYNC_BEFORE: s = dao_event_synchronize(c->before); break;
    case H_SYNC_OTHER: s = dao_stream_synchronize(c->other); break;
    case H_QUERY_OWN: s = dao_stream_query(c->own, &flag); break;
    case H_EVENT_QUERY: s = dao_event_query(c->before, &flag); break;
    case H_RECORD_OWN: s = dao_event_record(c->spare, c->own); break;
    case H_WAIT_OWN: s = dao_stream_wait_event(c->own, c->before); break;
    case H_COPY_OWN: s = dao_memcpy_async(c->dst, c->src, sizeof c->src, c->own); break;
    case H_LAUNCH_OWN: s = dao_launch_host_func(c->own, inner_fn, c); break;
    case H_STREAM_CREATE:
      s = dao_stream_create(c->place, &c->fresh);
      if (s == DAO_OK) s = dao_stream_destroy(c->fresh);
      if (s == DAO_OK) c->fresh = NULL;
      break;
    case H_ALLOC_FREE:
      s = dao_allocator_alloc(c->alloc, 4096, c->own, &ptr);
      if (s == DAO_OK) s = dao_allocator_free(c->alloc, ptr);
      break;
    case H_TRIM_OWN: s = dao_allocator_trim(c->alloc, &released); break;
    case H_TIERED_OTHER: s = dao_tiered_synchronize(c->pool); break;
    case H_DESTROY_ALLOC:
      s = dao_allocator_destroy(c->alloc);
      if (s == DAO_OK) c->alloc = NULL;
      break;
    default: break;
  }
  keep(&c->r, s);
}

/* Whether `call` is refused on a stream of `kind` (NULL stream: nothing is,
   the function runs on the caller's thread). */
static int host_refused(enum host_call call, int kind) {
  if (kind == 0) return 0;
  switch (call) {
    case H_SYNC_OWN:
    case H_DESTROY_OWN:
    case H_EVENT_SYNC_LATER:
    case H_WAIT_NULL_LATER:
    case H_DESTROY_ALLOC: return 1;
    /* CUDA: the driver allows no driver call in a host function; every
       wait on a CUDA stream or event is refused there. */
    case H_SYNC_OTHER:
    case H_EVENT_SYNC_BEFORE:
    case H_STREAM_CREATE: return kind == 2;
    default: return 0;
  }
}

/* kind: 0 the NULL stream (CPU), 1 SIM, 2 CUDA. */
static void host_pairs(dao_place place, int kind) {
  static const char *const kinds[] = {"NULL-stream host function", "SIM host function",
                                      "CUDA host function"};
  int call;
  for (call = 0; call < H_COUNT; ++call) {
    char pair[256];
    host_ctx *c = calloc(1, sizeof *c);
    void *warm = NULL;
    assert_non_null(c);
    if (kind == 0 &&
        (call == H_EVENT_SYNC_LATER || call == H_WAIT_NULL_LATER || call == H_DESTROY_OWN)) {
      free(c);
      continue; /* nothing runs after a function that runs at once; NULL is no handle */
    }
    if (kind == 2 && call == H_TIERED_OTHER) {
      free(c);
      continue; /* the pool is on SIM: nothing new on CUDA */
    }
    snprintf(pair, sizeof pair, "%s x %s", kinds[kind], host_call_names[call]);
    c->call = (enum host_call)call;
    c->place = kind == 0 ? dao_place_sim(0) : place;
    memset(c->src, 0x5a, sizeof c->src);
    if (kind != 0) assert_ok(dao_stream_create(place, &c->own));
    assert_ok(dao_stream_create(c->place, &c->other));
    assert_ok(dao_event_create(c->place, &c->later));
    assert_ok(dao_event_create(c->place, &c->before));
    assert_ok(dao_event_create(c->place, &c->spare));
    assert_ok(dao_allocator_create(c->place, "caching", NULL, &c->alloc));
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 1 << 20, NULL, &c->pool));
    /* Memory cached on the own stream, for the trim to find. */
    assert_ok(dao_allocator_alloc(c->alloc, 1 << 16, c->own, &warm));
    assert_ok(dao_allocator_free(c->alloc, warm));
    assert_ok(dao_memcpy_async(c->other_dst, c->src, 1, c->other));
    if (kind != 0) assert_ok(dao_event_record(c->before, c->own));

    pair_begin(pair);
    if (kind == 0) {
      c->gate_open = 1;
      assert_ok(dao_launch_host_func(NULL, host_fn, c));
    } else {
      assert_ok(dao_launch_host_func(c->own, gate_fn, c));
      assert_ok(dao_launch_host_func(c->own, host_fn, c));
      assert_ok(dao_event_record(c->later, c->own));
      __atomic_store_n(&c->gate_open, 1, __ATOMIC_RELEASE);
      assert_ok(dao_stream_synchronize(c->own));
    }
    pair_end();

    if (host_refused(c->call, kind)) {
      const char *names[] = {"dao_stream_synchronize", "dao_stream_destroy",
                             "dao_event_synchronize",  "dao_event_synchronize",
                             "dao_event_synchronize",  "dao_stream_synchronize"};
      const char *name = call == H_SYNC_OTHER      ? names[5]
                         : call == H_STREAM_CREATE ? names[1]
                         : call == H_DESTROY_ALLOC ? "dao_allocator_destroy"
                                                   : names[call < 5 ? call : 0];
      expect_refused(pair, &c->r, name, "host function");
    } else {
      expect_ok(pair, &c->r);
    }
    /* The refused destroy destroyed nothing: the stream still works (and
       runs what the function queued, after the first synchronize). */
    if (kind != 0) assert_ok(dao_stream_synchronize(c->own));
    if (c->fresh != NULL) assert_ok(dao_stream_destroy(c->fresh));
    if (call == H_COPY_OWN) assert_memory_equal(c->dst, c->src, sizeof c->src);
    if (call == H_LAUNCH_OWN) assert_int_equal(c->inner_ran, 1);
    assert_ok(dao_tiered_destroy(c->pool));
    /* A refused destroy destroyed nothing: the allocator still serves. */
    if (c->alloc != NULL) {
      assert_ok(dao_allocator_alloc(c->alloc, 4096, c->own, &warm));
      assert_ok(dao_allocator_free(c->alloc, warm));
      assert_ok(dao_allocator_destroy(c->alloc));
    }
    assert_ok(dao_event_destroy(c->spare));
    assert_ok(dao_event_destroy(c->before));
    assert_ok(dao_event_destroy(c->later));
    assert_ok(dao_stream_destroy(c->other));
    if (kind != 0) assert_ok(dao_stream_destroy(c->own));
    free(c);
  }
}

static void test_host_functions_sim(void **state) {
  (void)state;
  host_pairs(dao_place_sim(0), 1);
}

static void test_host_functions_null_stream(void **state) {
  (void)state;
  host_pairs(dao_place_sim(0), 0);
}

static void test_host_functions_cuda(void **state) {
  (void)state;
  host_pairs(dao_place_cuda(0), 2);
}

/* ------------------------------------------------------------ kernels */

enum kernel_call {
  K_SYNC_OWN,       /* dao_tiered_synchronize(own pool) */
  K_READ_OWN,       /* dao_tensor_read(tensor of own pool) */
  K_DESTROY_OWN,    /* dao_tiered_destroy(own pool) */
  K_STREAM_DESTROY, /* dao_stream_destroy(the kernel's stream) */
  K_HOSTFN_SYNC,    /* a host function on the kernel's stream: dao_tiered_synchronize(own) */
  K_SUBMIT,         /* dao_kernel_submit(own pool) */
  K_WRITE,          /* dao_tensor_write(own pool) */
  K_CREATE_RELEASE, /* dao_tensor_create + dao_tensor_release(own pool) */
  K_STATE,          /* dao_tensor_get_state */
  K_STATS,          /* dao_tiered_get_stats(own pool) */
  K_STREAM_SYNC,    /* dao_stream_synchronize(the kernel's stream) */
  K_LAUNCH,         /* dao_launch_host_func(the kernel's stream) */
  K_OTHER_POOL,     /* dao_tiered_synchronize + dao_tensor_read(another pool) */
  K_ALLOC_FREE,     /* dao_allocator_alloc + free */
  K_COUNT
};

static const char *const kernel_call_names[K_COUNT] = {
    "dao_tiered_synchronize(own pool)",
    "dao_tensor_read(own pool)",
    "dao_tiered_destroy(own pool)",
    "dao_stream_destroy(kernel's stream)",
    "host function on kernel's stream x dao_tiered_synchronize(own pool)",
    "dao_kernel_submit(own pool)",
    "dao_tensor_write(own pool)",
    "dao_tensor_create/release(own pool)",
    "dao_tensor_get_state(own pool)",
    "dao_tiered_get_stats(own pool)",
    "dao_stream_synchronize(kernel's stream)",
    "dao_launch_host_func(kernel's stream)",
    "dao_tiered_synchronize/dao_tensor_read(other pool)",
    "dao_allocator_alloc/free"};

typedef struct kernel_ctx {
  enum kernel_call call;
  dao_allocator *alloc;
  dao_tiered *pool, *other;
  dao_tensor *t, *u, *other_t;
  int nested_ran, inner_ran;
  result r;
} kernel_ctx;

static dao_status nested_kernel(void *p, void *const *in, size_t nin, void *const *out, size_t nout,
                                dao_stream stream) {
  (void)in, (void)nin, (void)out, (void)nout, (void)stream;
  ((kernel_ctx *)p)->nested_ran = 1;
  return DAO_OK;
}

static void kernel_inner_fn(void *p) { ((kernel_ctx *)p)->inner_ran = 1; }

static void kernel_host_fn(void *p) {
  kernel_ctx *c = p;
  keep(&c->r, dao_tiered_synchronize(c->pool));
}

static dao_status reentrant_kernel(void *p, void *const *in, size_t nin, void *const *out,
                                   size_t nout, dao_stream stream) {
  kernel_ctx *c = p;
  dao_status s = DAO_OK;
  char buf[256];
  dao_tensor *fresh = NULL;
  dao_tensor_state st;
  dao_tiered_stats stats;
  void *ptr = NULL;
  (void)in, (void)nin, (void)out, (void)nout;
  memset(buf, 7, sizeof buf);
  switch (c->call) {
    case K_SYNC_OWN: s = dao_tiered_synchronize(c->pool); break;
    case K_READ_OWN: s = dao_tensor_read(c->t, buf, sizeof buf); break;
    case K_DESTROY_OWN: s = dao_tiered_destroy(c->pool); break;
    case K_STREAM_DESTROY: s = dao_stream_destroy(stream); break;
    case K_HOSTFN_SYNC: return dao_launch_host_func(stream, kernel_host_fn, c);
    case K_SUBMIT: s = dao_kernel_submit(c->pool, nested_kernel, c, &c->u, 1, NULL, 0); break;
    case K_WRITE: s = dao_tensor_write(c->u, buf, sizeof buf); break;
    case K_CREATE_RELEASE:
      s = dao_tensor_create(c->pool, 256, &fresh);
      if (s == DAO_OK) s = dao_tensor_release(fresh);
      break;
    case K_STATE: s = dao_tensor_get_state(c->u, &st); break;
    case K_STATS:
      memset(&stats, 0, sizeof stats);
      stats.struct_size = sizeof stats;
      s = dao_tiered_get_stats(c->pool, &stats);
      break;
    case K_STREAM_SYNC: s = dao_stream_synchronize(stream); break;
    case K_LAUNCH: s = dao_launch_host_func(stream, kernel_inner_fn, c); break;
    case K_OTHER_POOL:
      s = dao_tiered_synchronize(c->other);
      if (s == DAO_OK) s = dao_tensor_read(c->other_t, buf, sizeof buf);
      break;
    case K_ALLOC_FREE:
      s = dao_allocator_alloc(c->alloc, 4096, NULL, &ptr);
      if (s == DAO_OK) s = dao_allocator_free(c->alloc, ptr);
      break;
    default: break;
  }
  keep(&c->r, s);
  return DAO_OK;
}

static void test_kernels(void **state) {
  int call;
  (void)state;
  for (call = 0; call < K_COUNT; ++call) {
    kernel_ctx c;
    char pair[256], buf[256];
    memset(&c, 0, sizeof c);
    memset(buf, 1, sizeof buf);
    c.call = (enum kernel_call)call;
    snprintf(pair, sizeof pair, "kernel x %s", kernel_call_names[call]);
    assert_ok(dao_allocator_create(dao_place_sim(1), "caching", NULL, &c.alloc));
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 1 << 20, NULL, &c.pool));
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 1 << 20, NULL, &c.other));
    assert_ok(dao_tensor_create(c.pool, sizeof buf, &c.t));
    assert_ok(dao_tensor_create(c.pool, sizeof buf, &c.u));
    assert_ok(dao_tensor_create(c.other, sizeof buf, &c.other_t));
    assert_ok(dao_tensor_write(c.t, buf, sizeof buf));
    assert_ok(dao_tensor_write(c.u, buf, sizeof buf));
    assert_ok(dao_tensor_write(c.other_t, buf, sizeof buf));

    pair_begin(pair);
    assert_ok(dao_kernel_submit(c.pool, reentrant_kernel, &c, &c.t, 1, NULL, 0));
    assert_ok(dao_tiered_synchronize(c.pool));
    pair_end();

    switch (c.call) {
      case K_SYNC_OWN: expect_refused(pair, &c.r, "dao_tiered_synchronize", "kernel"); break;
      case K_READ_OWN: expect_refused(pair, &c.r, "dao_tensor_read", "kernel"); break;
      case K_DESTROY_OWN: expect_refused(pair, &c.r, "dao_tiered_destroy", "kernel"); break;
      case K_STREAM_DESTROY: expect_refused(pair, &c.r, "dao_stream_destroy", "kernels"); break;
      case K_HOSTFN_SYNC:
        expect_refused(pair, &c.r, "dao_tiered_synchronize", "host function");
        break;
      default: expect_ok(pair, &c.r); break;
    }
    /* What the kernel queued came after the first synchronize's target. */
    assert_ok(dao_tiered_synchronize(c.pool));
    if (c.call == K_SUBMIT) assert_int_equal(c.nested_ran, 1);
    if (c.call == K_LAUNCH) assert_int_equal(c.inner_ran, 1);
    /* The pool still works after a refused call. */
    assert_ok(dao_tensor_read(c.t, buf, sizeof buf));
    assert_ok(dao_tiered_destroy(c.other));
    assert_ok(dao_tiered_destroy(c.pool));
    assert_ok(dao_allocator_destroy(c.alloc));
  }
}

/* --------------------------------------------------- scoring callbacks */

enum score_call {
  S_STATE,       /* dao_tensor_get_state(info->tensor) */
  S_STATS,       /* dao_tiered_get_stats(own pool) */
  S_SUBMIT,      /* dao_kernel_submit(own pool) */
  S_CREATE,      /* dao_tensor_create(own pool) */
  S_WRITE,       /* dao_tensor_write(own pool) */
  S_RELEASE,     /* dao_tensor_release(own pool) */
  S_SYNC,        /* dao_tiered_synchronize(own pool) */
  S_READ,        /* dao_tensor_read(own pool) */
  S_DESTROY,     /* dao_tiered_destroy(own pool) */
  S_SET_SCORE,   /* dao_tiered_set_score_callback(own pool) */
  S_OTHER_STATS, /* dao_tiered_get_stats(another pool) */
  S_POOL_CREATE, /* dao_tiered_create */
  S_ALLOC_FREE,  /* dao_allocator_alloc + free (allowed) */
  S_STREAM,      /* dao_stream_create + synchronize + destroy (allowed) */
  S_COUNT
};

static const char *const score_calls[S_COUNT][2] = {
    {"dao_tensor_get_state", "dao_tensor_get_state(own pool)"},
    {"dao_tiered_get_stats", "dao_tiered_get_stats(own pool)"},
    {"dao_kernel_submit", "dao_kernel_submit(own pool)"},
    {"dao_tensor_create", "dao_tensor_create(own pool)"},
    {"dao_tensor_write", "dao_tensor_write(own pool)"},
    {"dao_tensor_release", "dao_tensor_release(own pool)"},
    {"dao_tiered_synchronize", "dao_tiered_synchronize(own pool)"},
    {"dao_tensor_read", "dao_tensor_read(own pool)"},
    {"dao_tiered_destroy", "dao_tiered_destroy(own pool)"},
    {"dao_tiered_set_score_callback", "dao_tiered_set_score_callback(own pool)"},
    {"dao_tiered_get_stats", "dao_tiered_get_stats(other pool)"},
    {"dao_tiered_create", "dao_tiered_create"},
    {NULL, "dao_allocator_alloc/free"},
    {NULL, "dao_stream_create/synchronize/destroy"}};

typedef struct score_ctx {
  enum score_call call;
  dao_allocator *alloc;
  dao_tiered *pool, *other;
  dao_tensor *t[3];
  result r;
} score_ctx;

static dao_status noop_kernel(void *p, void *const *in, size_t nin, void *const *out, size_t nout,
                              dao_stream stream) {
  (void)p, (void)in, (void)nin, (void)out, (void)nout, (void)stream;
  return DAO_OK;
}

static double reentrant_score(void *p, const dao_tensor_access_info *info) {
  score_ctx *c = p;
  dao_status s = DAO_OK;
  char buf[4096];
  dao_tensor_state st;
  dao_tiered_stats stats;
  dao_tensor *fresh = NULL;
  dao_tiered *made = NULL;
  dao_stream stream = NULL;
  void *ptr = NULL;
  if (c->r.ran) return 0; /* once is enough */
  memset(buf, 3, sizeof buf);
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  switch (c->call) {
    case S_STATE: s = dao_tensor_get_state(info->tensor, &st); break;
    case S_STATS: s = dao_tiered_get_stats(c->pool, &stats); break;
    case S_SUBMIT: s = dao_kernel_submit(c->pool, noop_kernel, NULL, NULL, 0, NULL, 0); break;
    case S_CREATE: s = dao_tensor_create(c->pool, 64, &fresh); break;
    case S_WRITE: s = dao_tensor_write(c->t[0], buf, sizeof buf); break;
    case S_RELEASE: s = dao_tensor_release(c->t[0]); break;
    case S_SYNC: s = dao_tiered_synchronize(c->pool); break;
    case S_READ: s = dao_tensor_read(c->t[0], buf, sizeof buf); break;
    case S_DESTROY: s = dao_tiered_destroy(c->pool); break;
    case S_SET_SCORE: s = dao_tiered_set_score_callback(c->pool, reentrant_score, c); break;
    case S_OTHER_STATS: s = dao_tiered_get_stats(c->other, &stats); break;
    case S_POOL_CREATE:
      s = dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 1 << 20, NULL, &made);
      if (s == DAO_OK) dao_tiered_destroy(made);
      break;
    case S_ALLOC_FREE:
      s = dao_allocator_alloc(c->alloc, 4096, NULL, &ptr);
      if (s == DAO_OK) s = dao_allocator_free(c->alloc, ptr);
      break;
    case S_STREAM:
      s = dao_stream_create(dao_place_sim(0), &stream);
      if (s == DAO_OK) s = dao_stream_synchronize(stream);
      if (stream != NULL && s == DAO_OK) s = dao_stream_destroy(stream);
      break;
    default: break;
  }
  keep(&c->r, s);
  return 0;
}

static void test_scoring_callbacks(void **state) {
  int call, i;
  (void)state;
  for (call = 0; call < S_COUNT; ++call) {
    score_ctx c;
    char pair[256], buf[4096];
    memset(&c, 0, sizeof c);
    memset(buf, 1, sizeof buf);
    c.call = (enum score_call)call;
    snprintf(pair, sizeof pair, "scoring callback x %s", score_calls[call][1]);
    /* Room for two of the three tensors: the third kernel evicts. */
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * sizeof buf + 1024,
                                "policy=callback,prefetch=0", &c.pool));
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 1 << 20, NULL, &c.other));
    assert_ok(dao_allocator_create(dao_place_sim(1), "caching", NULL, &c.alloc));
    assert_ok(dao_tiered_set_score_callback(c.pool, reentrant_score, &c));
    for (i = 0; i < 3; ++i) {
      assert_ok(dao_tensor_create(c.pool, sizeof buf, &c.t[i]));
      assert_ok(dao_tensor_write(c.t[i], buf, sizeof buf));
    }
    pair_begin(pair);
    for (i = 0; i < 3; ++i)
      assert_ok(dao_kernel_submit(c.pool, noop_kernel, NULL, &c.t[i], 1, NULL, 0));
    assert_ok(dao_tiered_synchronize(c.pool));
    pair_end();
    if (score_calls[call][0] != NULL) {
      expect_refused(pair, &c.r, score_calls[call][0], "scoring callback");
    } else {
      expect_ok(pair, &c.r);
    }
    /* Nothing changed: every tensor reads back as written. */
    for (i = 0; i < 3; ++i) {
      char back[sizeof buf];
      assert_ok(dao_tensor_read(c.t[i], back, sizeof back));
      assert_memory_equal(back, buf, sizeof buf);
    }
    assert_ok(dao_tiered_destroy(c.other));
    assert_ok(dao_tiered_destroy(c.pool));
    assert_ok(dao_allocator_destroy(c.alloc));
  }
}

int main(int argc, char **argv) {
  pthread_t wd;
  int rc;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_functions_sim),
      cmocka_unit_test(test_host_functions_null_stream),
      cmocka_unit_test(test_kernels),
      cmocka_unit_test(test_scoring_callbacks),
  };
  const struct CMUnitTest cuda_tests[] = {
      cmocka_unit_test(test_host_functions_cuda),
  };
  if (pthread_create(&wd, NULL, watchdog, NULL) != 0) return 1;
  pthread_detach(wd);
  if (argc > 1 && strcmp(argv[1], "cuda") == 0) {
    rc = cmocka_run_group_tests_name("reentrancy_cuda", cuda_tests, NULL, NULL);
  } else {
    rc = cmocka_run_group_tests_name("reentrancy", tests, NULL, NULL);
  }
  printf("test_reentrancy: %d (callback x call) pairs run\n", pairs_tested);
  return rc;
}
