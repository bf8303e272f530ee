/* The interop entry points (include/dao/interop.h): PyTorch's and CuPy's
 * allocator ABIs over the place defaults.
 *
 *   test_interop sim        DAO_INTEROP_PLACE=sim: device n is sim:n
 *   test_interop cuda       the fake CUDA driver: device n is cuda:n, real
 *                           CUstream handles wrapped and cached
 *   test_interop bad-place  DAO_INTEROP_PLACE malformed
 */
#include <pthread.h>
#include <stdatomic.h>

#include "dao_test.h"

static dao_place_kind g_kind = DAO_PLACE_SIM;

static dao_place place_of(int device) {
  return g_kind == DAO_PLACE_SIM ? dao_place_sim(device) : dao_place_cuda(device);
}

static dao_interop_stats interop_stats(void) {
  dao_interop_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_interop_get_stats(&s));
  return s;
}

static dao_allocator_stats place_stats(int device) {
  dao_allocator *a = NULL;
  assert_ok(dao_place_allocator(place_of(device), &a));
  return dao_test_stats(a);
}

/* A stream's handle as the framework passes it: the CUstream on CUDA, the
 * dao_stream itself under DAO_INTEROP_PLACE=sim. */
static void *native_of(dao_stream s) {
  void *native = NULL;
  if (g_kind == DAO_PLACE_SIM) return (void *)s;
  assert_ok(dao_stream_native(s, &native));
  assert_non_null(native);
  return native;
}

/* Leaves a known message in dao_last_error(), to see that a call does not
 * touch it. */
static void plant_error(void) {
  assert_status(dao_free(dao_place_cpu(), (void *)&g_kind), DAO_ERR_INVALID_POINTER);
}

static void expect_message(const char *needle) {
  if (strstr(dao_last_error(), needle) == NULL) {
    print_error("message '%s' does not mention '%s'\n", dao_last_error(), needle);
    fail();
  }
}

/* ---- round trips ------------------------------------------------------- */

static void test_round_trip_default_stream(void **state) {
  static const ptrdiff_t sizes[] = {1, 255, 256, 4096, 100000, 3 << 20};
  void *p[6];
  size_t i;
  const dao_allocator_stats before = place_stats(0);
  (void)state;
  for (i = 0; i < 6; ++i) {
    p[i] = dao_pluggable_malloc(sizes[i], 0, NULL);
    assert_non_null(p[i]);
    assert_true(dao_test_is_aligned(p[i], 256));
    if (g_kind == DAO_PLACE_SIM || g_kind == DAO_PLACE_CUDA) /* fake: host memory */
      dao_test_fill(p[i], (size_t)sizes[i], (unsigned)i);
  }
  {
    const dao_allocator_stats mid = place_stats(0);
    assert_int_equal(mid.live_blocks, before.live_blocks + 6);
    assert_true(mid.allocated_bytes >= before.allocated_bytes + (3u << 20) + 100000u);
    assert_true(mid.requested_bytes >= before.requested_bytes + (3u << 20) + 100000u);
  }
  for (i = 0; i < 6; ++i) assert_true(dao_test_check(p[i], (size_t)sizes[i], (unsigned)i));
  for (i = 0; i < 6; ++i) dao_pluggable_free(p[i], sizes[i], 0, NULL);
  {
    const dao_allocator_stats after = place_stats(0);
    assert_int_equal(after.live_blocks, before.live_blocks);
    assert_int_equal(after.allocated_bytes, before.allocated_bytes);
    assert_int_equal(after.free_count, before.free_count + 6);
  }
}

/* PyTorch calls malloc(0) for empty tensors and keeps the NULL; a NULL
 * reaches free for them in some versions. Neither is an error. */
static void test_size_zero_and_free_null(void **state) {
  dao_interop_stats before, after;
  char planted[256];
  int dummy = 0;
  (void)state;
  before = interop_stats();
  plant_error();
  snprintf(planted, sizeof planted, "%s", dao_last_error());
  assert_null(dao_pluggable_malloc(0, 0, NULL));
  assert_null(dao_pluggable_malloc(0, 99, (void *)&dummy)); /* nothing else is read */
  assert_null(dao_cupy_malloc(NULL, 0, 0));
  dao_pluggable_free(NULL, 0, 0, NULL);
  dao_pluggable_free(NULL, 64, 99, NULL);
  dao_cupy_free(NULL, NULL, 0);
  assert_string_equal(dao_last_error(), planted);
  after = interop_stats();
  assert_int_equal(after.failed_mallocs, before.failed_mallocs);
  assert_int_equal(after.failed_frees, before.failed_frees);
}

static void test_cupy_round_trip(void **state) {
  dao_stream s = NULL;
  void *slot = NULL;
  void *a, *b;
  const dao_allocator_stats before = place_stats(0);
  (void)state;
  assert_ok(dao_stream_create(place_of(0), &s));
  a = dao_cupy_malloc(NULL, 1000, 0); /* legacy default stream */
  assert_non_null(a);
  slot = native_of(s); /* CuPy's current stream, as the Python side keeps it */
  b = dao_cupy_malloc(&slot, 5000, 0);
  assert_non_null(b);
  assert_true(a != b);
  assert_int_equal(place_stats(0).live_blocks, before.live_blocks + 2);
  dao_cupy_free(&slot, a, 0);
  slot = NULL; /* the current stream changed: frees need no stream */
  dao_cupy_free(&slot, b, 0);
  assert_int_equal(place_stats(0).live_blocks, before.live_blocks);
  assert_ok(dao_stream_synchronize(s));
  assert_ok(dao_stream_destroy(s));
}

/* A block freed through one ABI may be freed through the other, and a
 * dao_alloc() pointer of the place through either. */
static void test_mixed_frees(void **state) {
  void *p = NULL;
  (void)state;
  assert_ok(dao_alloc(place_of(1), 4096, &p));
  dao_pluggable_free(p, 4096, 1, NULL);
  p = dao_pluggable_malloc(4096, 1, NULL);
  assert_non_null(p);
  dao_cupy_free(NULL, p, 0); /* the block's device is known: 0 is not asked */
  assert_int_equal(place_stats(1).live_blocks, 0);
}

/* ---- stream order ------------------------------------------------------ */

typedef struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int open;
  unsigned char *write_to; /* written when the gate opens: work using a block */
  size_t bytes;
} gate;

static void gate_wait(void *arg) {
  gate *g = (gate *)arg;
  pthread_mutex_lock(&g->mutex);
  while (!g->open) pthread_cond_wait(&g->cond, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
  if (g->write_to != NULL) memset(g->write_to, 0xAB, g->bytes);
}

static void gate_open(gate *g) {
  pthread_mutex_lock(&g->mutex);
  g->open = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->mutex);
}

/* A block freed on stream A while A's work still uses it is reused at once
 * on A (stream order), never on B before A has run that work. */
static void test_stream_ordered_reuse(void **state) {
  enum { BYTES = 64 * 1024 };
  gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, BYTES};
  dao_stream a = NULL, b = NULL;
  void *pa, *pb, *again;
  (void)state;
  assert_ok(dao_stream_create(place_of(0), &a));
  assert_ok(dao_stream_create(place_of(0), &b));
  pa = dao_pluggable_malloc(BYTES, 0, native_of(a));
  assert_non_null(pa);
  g.write_to = (unsigned char *)pa;
  assert_ok(dao_launch_host_func(a, gate_wait, &g)); /* A's "kernel" uses pa */
  dao_pluggable_free(pa, BYTES, 0, native_of(a));    /* freed before it ran */
  pb = dao_pluggable_malloc(BYTES, 0, native_of(b));
  assert_non_null(pb);
  assert_true(pb != pa);
  dao_test_fill(pb, BYTES, 7);
  again = dao_pluggable_malloc(BYTES, 0, native_of(a)); /* same stream: ordered */
  assert_true(again == pa);
  gate_open(&g);
  assert_ok(dao_stream_synchronize(a));
  assert_true(dao_test_check(pb, BYTES, 7)); /* A's late write did not reach B's block */
  dao_pluggable_free(again, BYTES, 0, native_of(a));
  dao_pluggable_free(pb, BYTES, 0, native_of(b));
  assert_ok(dao_stream_destroy(a));
  assert_ok(dao_stream_destroy(b));
}

/* Tensor.record_stream: a block used on B as well is reused on A only after
 * B has run the work queued before the free. */
static void test_record_stream(void **state) {
  enum { BYTES = 32 * 1024 };
  gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, BYTES};
  dao_stream a = NULL, b = NULL;
  dao_interop_stats before;
  void *p, *q;
  (void)state;
  assert_ok(dao_stream_create(place_of(0), &a));
  assert_ok(dao_stream_create(place_of(0), &b));
  p = dao_pluggable_malloc(BYTES, 0, native_of(a));
  assert_non_null(p);
  g.write_to = (unsigned char *)p;
  assert_ok(dao_launch_host_func(b, gate_wait, &g)); /* B uses p */
  before = interop_stats();
  dao_pluggable_record_stream(p, native_of(b));
  dao_pluggable_record_stream(p, NULL); /* nothing to do */
  assert_int_equal(interop_stats().failed_frees, before.failed_frees);
  dao_pluggable_free(p, BYTES, 0, native_of(a));
  q = dao_pluggable_malloc(BYTES, 0, native_of(a));
  assert_non_null(q);
  assert_true(q != p); /* B has not run its work */
  dao_test_fill(q, BYTES, 3);
  gate_open(&g);
  assert_ok(dao_stream_synchronize(b));
  assert_true(dao_test_check(q, BYTES, 3));
  dao_pluggable_free(q, BYTES, 0, native_of(a));
  assert_ok(dao_stream_destroy(a));
  assert_ok(dao_stream_destroy(b));
}

/* ---- the stream cache -------------------------------------------------- */

/* Thousands of streams made, used and destroyed: the cache keeps at most
 * DAO_INTEROP_STREAM_CACHE idle wrappers, every other one is dropped
 * (evicted, or retired when a new stream took a destroyed one's address),
 * and the memory of the dropped ones goes back. */
static void test_many_streams_bounded(void **state) {
  const int rounds = g_kind == DAO_PLACE_SIM ? 3000 : 1000;
  const dao_interop_stats before = interop_stats();
  const dao_allocator_stats stats_before = place_stats(0);
  dao_interop_stats after;
  dao_allocator_stats stats_after;
  int i;
  (void)state;
  for (i = 0; i < rounds; ++i) {
    dao_stream s = NULL;
    void *p;
    assert_ok(dao_stream_create(place_of(0), &s));
    p = dao_pluggable_malloc(4096 + (i % 7) * 512, 0, native_of(s));
    assert_non_null(p);
    memset(p, i & 0xFF, 4096);
    dao_pluggable_free(p, 4096, 0, native_of(s));
    assert_ok(dao_stream_destroy(s));
    if (i % 100 == 0) {
      const dao_interop_stats now = interop_stats();
      assert_true(now.idle_streams <= DAO_INTEROP_STREAM_CACHE);
      assert_true(now.cached_streams <= DAO_INTEROP_STREAM_CACHE + 1);
    }
  }
  after = interop_stats();
  print_message("%d streams: %llu wrapped, %llu evicted, %llu retired, %llu cached\n", rounds,
                (unsigned long long)(after.streams_wrapped - before.streams_wrapped),
                (unsigned long long)(after.streams_evicted - before.streams_evicted),
                (unsigned long long)(after.streams_retired - before.streams_retired),
                (unsigned long long)after.cached_streams);
  assert_true(after.streams_wrapped - before.streams_wrapped >= (uint64_t)rounds);
  assert_true(after.cached_streams <= DAO_INTEROP_STREAM_CACHE);
  assert_true((after.streams_evicted - before.streams_evicted) +
                  (after.streams_retired - before.streams_retired) >=
              (uint64_t)rounds - DAO_INTEROP_STREAM_CACHE);
  stats_after = place_stats(0);
  assert_int_equal(stats_after.live_blocks, stats_before.live_blocks);
  print_message("reserved %llu bytes after, %llu before\n",
                (unsigned long long)stats_after.reserved_bytes,
                (unsigned long long)stats_before.reserved_bytes);
  /* What the dropped streams cached went back: at most the cached ones'
   * blocks (4 KiB each, in a page of their own segment) stay. */
  assert_true(stats_after.reserved_bytes <=
              stats_before.reserved_bytes + (uint64_t)(DAO_INTEROP_STREAM_CACHE + 2) * (2u << 20));
}

/* More live streams than the cache keeps: the least recently used idle
 * wrappers are evicted (after their streams ran their work), and a stream
 * whose wrapper was evicted gets a new one when it is used again. */
static void test_eviction(void **state) {
  enum { STREAMS = 3 * DAO_INTEROP_STREAM_CACHE };
  dao_stream streams[STREAMS];
  const dao_interop_stats before = interop_stats();
  dao_interop_stats after;
  int i;
  void *p;
  (void)state;
  for (i = 0; i < STREAMS; ++i) {
    assert_ok(dao_stream_create(place_of(0), &streams[i]));
    p = dao_pluggable_malloc(1024, 0, native_of(streams[i]));
    assert_non_null(p);
    dao_pluggable_free(p, 1024, 0, native_of(streams[i]));
    assert_true(interop_stats().idle_streams <= DAO_INTEROP_STREAM_CACHE);
  }
  after = interop_stats();
  assert_true(after.streams_evicted - before.streams_evicted >=
              (uint64_t)(STREAMS - DAO_INTEROP_STREAM_CACHE));
  p = dao_pluggable_malloc(1024, 0, native_of(streams[0])); /* evicted: wrapped again */
  assert_non_null(p);
  assert_int_equal(interop_stats().streams_wrapped, after.streams_wrapped + 1);
  dao_pluggable_free(p, 1024, 0, native_of(streams[0]));
  for (i = 0; i < STREAMS; ++i) assert_ok(dao_stream_destroy(streams[i]));
}

/* A wrapper with a live block is never dropped, however many other streams
 * pass through the cache; its block frees normally afterwards. */
static void test_live_block_keeps_wrapper(void **state) {
  dao_stream keep = NULL;
  void *held;
  int i;
  dao_interop_stats s;
  (void)state;
  assert_ok(dao_stream_create(place_of(0), &keep));
  held = dao_pluggable_malloc(8192, 0, native_of(keep));
  assert_non_null(held);
  dao_test_fill(held, 8192, 11);
  for (i = 0; i < 3 * DAO_INTEROP_STREAM_CACHE; ++i) {
    dao_stream t = NULL;
    void *p;
    assert_ok(dao_stream_create(place_of(0), &t));
    p = dao_pluggable_malloc(1024, 0, native_of(t));
    assert_non_null(p);
    dao_pluggable_free(p, 1024, 0, native_of(t));
    assert_ok(dao_stream_destroy(t));
  }
  s = interop_stats();
  assert_true(s.cached_streams > s.idle_streams); /* the live one */
  assert_true(dao_test_check(held, 8192, 11));
  {
    /* Allocating on it again finds the same wrapper (none is made). */
    const uint64_t wrapped = interop_stats().streams_wrapped;
    void *again;
    dao_pluggable_free(held, 8192, 0, native_of(keep));
    again = dao_pluggable_malloc(8192, 0, native_of(keep));
    assert_non_null(again);
    assert_int_equal(interop_stats().streams_wrapped, wrapped);
    dao_pluggable_free(again, 8192, 0, native_of(keep));
  }
  assert_ok(dao_stream_destroy(keep));
}

/* ---- threads ----------------------------------------------------------- */

enum { THREADS = 8, ITERATIONS = 3000 };

typedef struct worker {
  int index;
  dao_stream stream;
  atomic_int failures;
} worker;

static void *worker_main(void *arg) {
  worker *w = (worker *)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(w->index + 1);
  void *held[8] = {NULL};
  ptrdiff_t sizes[8] = {0};
  int i;
  for (i = 0; i < ITERATIONS; ++i) {
    const int slot = (int)(dao_test_rand(&rng) % 8);
    void *stream = (i + w->index) % 3 == 0 ? NULL : native_of(w->stream);
    if (held[slot] != NULL) {
      if (!dao_test_check(held[slot], (size_t)sizes[slot], (unsigned)(w->index * 8 + slot)))
        atomic_fetch_add(&w->failures, 1);
      if (i % 2) dao_pluggable_free(held[slot], sizes[slot], w->index % 2, stream);
      else dao_cupy_free(NULL, held[slot], w->index % 2);
      held[slot] = NULL;
      continue;
    }
    sizes[slot] = (ptrdiff_t)(1 + dao_test_rand(&rng) % (256 * 1024));
    held[slot] =
        i % 2 ? dao_pluggable_malloc(sizes[slot], w->index % 2, stream)
              : dao_cupy_malloc(stream != NULL ? &stream : NULL, (size_t)sizes[slot], w->index % 2);
    if (held[slot] == NULL) {
      print_error("thread %d: malloc of %td bytes failed: %s\n", w->index, sizes[slot],
                  dao_last_error());
      atomic_fetch_add(&w->failures, 1);
      continue;
    }
    dao_test_fill(held[slot], (size_t)sizes[slot], (unsigned)(w->index * 8 + slot));
    if (i % 64 == 0) {
      /* Now and then a stream of its own, made and dropped. */
      dao_stream t = NULL;
      void *p;
      if (dao_stream_create(place_of(w->index % 2), &t) != DAO_OK) {
        atomic_fetch_add(&w->failures, 1);
        continue;
      }
      p = dao_pluggable_malloc(2048, w->index % 2, native_of(t));
      if (p == NULL) atomic_fetch_add(&w->failures, 1);
      dao_pluggable_free(p, 2048, w->index % 2, native_of(t));
      if (dao_stream_destroy(t) != DAO_OK) atomic_fetch_add(&w->failures, 1);
    }
  }
  for (i = 0; i < 8; ++i)
    if (held[i] != NULL) dao_pluggable_free(held[i], sizes[i], w->index % 2, NULL);
  return NULL;
}

static void test_threads(void **state) {
  pthread_t threads[THREADS];
  worker workers[THREADS];
  const dao_interop_stats before = interop_stats();
  const dao_allocator_stats s0 = place_stats(0), s1 = place_stats(1);
  int i;
  (void)state;
  for (i = 0; i < THREADS; ++i) {
    workers[i].index = i;
    atomic_init(&workers[i].failures, 0);
    assert_ok(dao_stream_create(place_of(i % 2), &workers[i].stream));
  }
  for (i = 0; i < THREADS; ++i)
    assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  for (i = 0; i < THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (i = 0; i < THREADS; ++i) {
    assert_int_equal(atomic_load(&workers[i].failures), 0);
    assert_ok(dao_stream_destroy(workers[i].stream));
  }
  assert_int_equal(place_stats(0).live_blocks, s0.live_blocks);
  assert_int_equal(place_stats(1).live_blocks, s1.live_blocks);
  {
    const dao_interop_stats after = interop_stats();
    assert_int_equal(after.failed_mallocs, before.failed_mallocs);
    assert_int_equal(after.failed_frees, before.failed_frees);
    assert_true(after.idle_streams <= DAO_INTEROP_STREAM_CACHE);
  }
}

/* ---- bad input --------------------------------------------------------- */

static void expect_malloc_fails(void *p, const char *needle, uint64_t *failed) {
  const dao_interop_stats s = interop_stats();
  assert_null(p);
  expect_message(needle);
  assert_int_equal(s.failed_mallocs, *failed + 1);
  *failed = s.failed_mallocs;
}

static void expect_free_fails(const char *needle, uint64_t *failed) {
  const dao_interop_stats s = interop_stats();
  expect_message(needle);
  assert_int_equal(s.failed_frees, *failed + 1);
  *failed = s.failed_frees;
}

static void test_bad_input(void **state) {
  dao_interop_stats s = interop_stats();
  uint64_t mallocs = s.failed_mallocs, frees = s.failed_frees;
  const dao_allocator_stats before = place_stats(0);
  int on_stack = 0;
  uint64_t garbage[8] = {0};
  dao_stream other = NULL;
  void *p;
  (void)state;

  expect_malloc_fails(dao_pluggable_malloc(-1, 0, NULL), "negative", &mallocs);
  expect_malloc_fails(dao_pluggable_malloc(PTRDIFF_MIN, 0, NULL), "dao_pluggable_malloc", &mallocs);
  expect_malloc_fails(dao_pluggable_malloc(64, -1, NULL), "dao_pluggable_malloc", &mallocs);
  expect_malloc_fails(dao_pluggable_malloc(64, 7, NULL), g_kind == DAO_PLACE_SIM ? "sim" : "cuda",
                      &mallocs);
  expect_malloc_fails(dao_cupy_malloc(NULL, 64, 7), "dao_cupy_malloc", &mallocs);
  expect_malloc_fails(dao_pluggable_malloc(PTRDIFF_MAX, 0, NULL), "dao_pluggable_malloc", &mallocs);
  expect_malloc_fails(dao_cupy_malloc(NULL, SIZE_MAX, 0), "dao_cupy_malloc", &mallocs);
  if (g_kind == DAO_PLACE_SIM) {
    /* A stream handle that is none, and a stream of another device. */
    expect_malloc_fails(dao_pluggable_malloc(64, 0, garbage), "stream", &mallocs);
    assert_ok(dao_stream_create(dao_place_sim(1), &other));
    expect_malloc_fails(dao_pluggable_malloc(64, 0, other), "sim:1", &mallocs);
    {
      void *slot = other;
      expect_malloc_fails(dao_cupy_malloc(&slot, 64, 0), "sim:1", &mallocs);
    }
    assert_ok(dao_stream_destroy(other));
  } else {
    /* A CUstream destroyed by its owner is refused by the driver. */
    void *native;
    assert_ok(dao_stream_create(place_of(0), &other));
    native = native_of(other);
    assert_ok(dao_stream_destroy(other));
    expect_malloc_fails(dao_pluggable_malloc(64, 0, native), "not a live CUDA stream", &mallocs);
  }

  /* Frees that are refused: reported, never an abort, nothing changed. */
  dao_pluggable_free(&on_stack, 64, 0, NULL);
  expect_free_fails("dao_pluggable_free", &frees);
  dao_cupy_free(NULL, garbage, 0);
  expect_free_fails("dao_cupy_free", &frees);
  p = dao_pluggable_malloc(4096, 0, NULL);
  assert_non_null(p);
  dao_pluggable_free((char *)p + 256, 4096, 0, NULL); /* interior */
  expect_free_fails("dao_pluggable_free", &frees);
  dao_pluggable_free(&on_stack, 64, 9, NULL); /* unknown device */
  expect_free_fails("dao_pluggable_free", &frees);
  dao_pluggable_record_stream(&on_stack, NULL);
  expect_free_fails("dao_pluggable_record_stream", &frees);
  if (g_kind == DAO_PLACE_SIM) {
    dao_pluggable_record_stream(p, garbage);
    expect_free_fails("dao_pluggable_record_stream", &frees);
  }
  dao_pluggable_free(p, 4096, 0, NULL);
  dao_pluggable_free(p, 4096, 0, NULL); /* twice */
  expect_free_fails("dao_pluggable_free", &frees);
  dao_pluggable_record_stream(p, NULL); /* freed */
  expect_free_fails("dao_pluggable_record_stream", &frees);
  {
    const dao_allocator_stats after = place_stats(0);
    assert_int_equal(after.live_blocks, before.live_blocks);
    assert_int_equal(after.allocated_bytes, before.allocated_bytes);
  }

  /* dao_interop_get_stats itself. */
  assert_failure_mentions(dao_interop_get_stats(NULL), DAO_ERR_INVALID_ARGUMENT, "stats");
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  assert_failure_mentions(dao_interop_get_stats(&s), DAO_ERR_INVALID_ARGUMENT, "struct_size");
  assert_int_equal(s.failed_frees, 0x5A5A5A5A5A5A5A5Aull);
}

static void test_kind(void **state) {
  (void)state;
  assert_int_equal(interop_stats().kind, g_kind);
}

/* ---- DAO_INTEROP_PLACE malformed ------------------------------------------ */

static void test_bad_place(void **state) {
  dao_interop_stats s;
  (void)state;
  assert_null(dao_pluggable_malloc(64, 0, NULL));
  expect_message("DAO_INTEROP_PLACE");
  assert_null(dao_cupy_malloc(NULL, 64, 0));
  expect_message("DAO_INTEROP_PLACE");
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_failure_mentions(dao_interop_get_stats(&s), DAO_ERR_INVALID_ARGUMENT, "DAO_INTEROP_PLACE");
  /* Read once: setting it now changes nothing. */
  setenv("DAO_INTEROP_PLACE", "sim", 1);
  assert_null(dao_pluggable_malloc(64, 0, NULL));
  expect_message("DAO_INTEROP_PLACE");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "sim";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kind),
      cmocka_unit_test(test_round_trip_default_stream),
      cmocka_unit_test(test_size_zero_and_free_null),
      cmocka_unit_test(test_cupy_round_trip),
      cmocka_unit_test(test_mixed_frees),
      cmocka_unit_test(test_stream_ordered_reuse),
      cmocka_unit_test(test_record_stream),
      cmocka_unit_test(test_many_streams_bounded),
      cmocka_unit_test(test_eviction),
      cmocka_unit_test(test_live_block_keeps_wrapper),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_bad_input),
  };
  const struct CMUnitTest bad_place_tests[] = {cmocka_unit_test(test_bad_place)};
  if (strcmp(mode, "bad-place") == 0) return cmocka_run_group_tests(bad_place_tests, NULL, NULL);
  if (strcmp(mode, "cuda") == 0) {
    g_kind = DAO_PLACE_CUDA;
  } else if (strcmp(mode, "sim") != 0) {
    fprintf(stderr, "usage: test_interop [sim|cuda|bad-place]\n");
    return 2;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
