/*
 * The CUDA backends through the public API, without a GPU.
 *
 *   test_cuda_backend none [EXPECTED]   no usable driver: every CUDA kind has
 *                                       no device and says why (the reason
 *                                       contains EXPECTED when given)
 *   test_cuda_backend fake              DAO_CUDA_LIBRARY names the fake driver
 *                                       (tests/fake_cuda) with
 *                                       FAKE_CUDA_DEVICES=2
 *   test_cuda_backend driver            whatever driver this machine has:
 *                                       checks a real GPU when there is one,
 *                                       and the "no device" answer otherwise
 *
 * A process loads the driver once, so each mode runs as its own ctest test.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dao.h>

#define MiB ((size_t)1 << 20)

static const char *expected_reason = "";

static void assert_contains(const char *haystack, const char *needle) {
  if (haystack == NULL || strstr(haystack, needle) == NULL) {
    print_error("expected \"%s\" in \"%s\"\n", needle, haystack ? haystack : "(null)");
    fail();
  }
}

static int is_aligned(const void *p) { return ((uintptr_t)p & 255u) == 0; }

/* ------------------------------------------------------------------------
 * Mode "none": no driver
 * ---------------------------------------------------------------------- */

static const dao_place_kind cuda_kinds[] = {DAO_PLACE_CUDA, DAO_PLACE_CUDA_PINNED,
                                            DAO_PLACE_CUDA_MANAGED};

static void test_none_counts_are_zero(void **state) {
  size_t i;
  int count = -1;
  (void)state;
  for (i = 0; i < sizeof cuda_kinds / sizeof cuda_kinds[0]; ++i) {
    count = -1;
    assert_int_equal(dao_place_device_count(cuda_kinds[i], &count), DAO_OK);
    assert_int_equal(count, 0);
  }
  assert_int_equal(dao_place_device_count(DAO_PLACE_CPU, &count), DAO_OK);
  assert_int_equal(count, 1);
}

static void test_none_description_says_why(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cuda_kinds / sizeof cuda_kinds[0]; ++i) {
    const char *text = dao_place_backend_description(cuda_kinds[i]);
    assert_non_null(text);
    assert_contains(text, "not available: ");
    assert_contains(text, expected_reason);
    assert_true(strlen(text) > strlen("not available: "));
  }
}

static void expect_no_device(dao_status s) {
  assert_int_equal(s, DAO_ERR_NO_DEVICE);
  assert_contains(dao_last_error(), "is not available: ");
  assert_contains(dao_last_error(), expected_reason);
}

static void test_none_every_call_gives_no_device(void **state) {
  const dao_place places[] = {dao_place_cuda(0), dao_place_cuda(1), dao_place_cuda_pinned(),
                              dao_place_cuda_managed(0), dao_place_cuda_managed(3)};
  static const char *const strategies[] = {"buddy", "system", NULL};
  size_t i, j;
  int dummy = 0;
  (void)state;
  for (i = 0; i < sizeof places / sizeof places[0]; ++i) {
    void *p = &dummy;
    size_t bytes = 7, free_bytes = 7, total_bytes = 7;
    dao_allocator *a = (dao_allocator *)&dummy;

    expect_no_device(dao_alloc(places[i], 1024, &p));
    assert_null(p);
    expect_no_device(dao_alloc(places[i], 0, &p));
    expect_no_device(dao_free(places[i], &dummy));
    expect_no_device(dao_free(places[i], NULL));
    expect_no_device(dao_used(places[i], &bytes));
    assert_int_equal(bytes, 7);
    expect_no_device(dao_place_memory_info(places[i], &free_bytes, &total_bytes));
    assert_int_equal(free_bytes, 7);
    assert_int_equal(total_bytes, 7);
    expect_no_device(dao_place_allocator(places[i], &a));
    {
      dao_stream stream = (dao_stream)&dummy;
      dao_event event = (dao_event)&dummy;
      expect_no_device(dao_stream_create(places[i], &stream));
      expect_no_device(dao_stream_wrap(places[i], NULL, &stream));
      expect_no_device(dao_event_create(places[i], &event));
      assert_ptr_equal(stream, (dao_stream)&dummy);
      assert_ptr_equal(event, (dao_event)&dummy);
    }
    for (j = 0; j < sizeof strategies / sizeof strategies[0]; ++j) {
      expect_no_device(dao_allocator_create(places[i], strategies[j], NULL, &a));
      assert_ptr_equal(a, (dao_allocator *)&dummy);
    }
  }
}

static void test_none_other_places_still_work(void **state) {
  void *p = NULL;
  (void)state;
  assert_int_equal(dao_alloc(dao_place_cpu(), 1000, &p), DAO_OK);
  assert_non_null(p);
  memset(p, 1, 1000);
  assert_int_equal(dao_free(dao_place_cpu(), p), DAO_OK);
  assert_int_equal(dao_alloc(dao_place_cuda(-1), 10, &p), DAO_ERR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------
 * Mode "fake": the fake driver with two devices
 * ---------------------------------------------------------------------- */

/* The fake driver's own functions, found in the copy libdao loaded. */
static struct {
  int (*context_depth)(void);
  int (*current_device)(void);
  int (*retain_count)(int);
  long (*live_allocations)(void);
  size_t (*used)(int);
  int (*primary_ctx_retain)(void **, int);
  int (*primary_ctx_release)(int);
  int (*ctx_push)(void *);
  int (*ctx_pop)(void **);
  long (*live_streams)(void);
  long (*live_events)(void);
  void *(*stream_create)(int);
  int (*stream_destroy)(void *);
} fake;

static size_t device_capacity;
static size_t fail_size;

static size_t env_bytes(const char *name) {
  const char *text = getenv(name);
  return text != NULL ? (size_t)strtoull(text, NULL, 10) : 0;
}

static void *fake_symbol(void *handle, const char *name) {
  void *sym = dlsym(handle, name);
  if (sym == NULL) {
    print_error("the fake driver lacks %s\n", name);
    fail();
  }
  return sym;
}

static int setup_fake(void **state) {
  const char *path = getenv("DAO_CUDA_LIBRARY");
  void *handle;
  int count = 0;
  (void)state;
  /* Loads the driver inside libdao first, so the handle below is its copy. */
  if (dao_place_device_count(DAO_PLACE_CUDA, &count) != DAO_OK || path == NULL) return -1;
  handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle == NULL) {
    fprintf(stderr, "the fake driver %s is not loaded: %s\n", path, dlerror());
    return -1;
  }
  /* Function pointers from dlsym: POSIX allows the conversion. */
  *(void **)&fake.context_depth = fake_symbol(handle, "fake_cuda_context_depth");
  *(void **)&fake.current_device = fake_symbol(handle, "fake_cuda_current_device");
  *(void **)&fake.retain_count = fake_symbol(handle, "fake_cuda_retain_count");
  *(void **)&fake.live_allocations = fake_symbol(handle, "fake_cuda_live_allocations");
  *(void **)&fake.used = fake_symbol(handle, "fake_cuda_used");
  *(void **)&fake.primary_ctx_retain = fake_symbol(handle, "cuDevicePrimaryCtxRetain");
  *(void **)&fake.primary_ctx_release = fake_symbol(handle, "cuDevicePrimaryCtxRelease_v2");
  *(void **)&fake.ctx_push = fake_symbol(handle, "cuCtxPushCurrent_v2");
  *(void **)&fake.ctx_pop = fake_symbol(handle, "cuCtxPopCurrent_v2");
  *(void **)&fake.live_streams = fake_symbol(handle, "fake_cuda_live_streams");
  *(void **)&fake.live_events = fake_symbol(handle, "fake_cuda_live_events");
  *(void **)&fake.stream_create = fake_symbol(handle, "fake_cuda_stream_create");
  *(void **)&fake.stream_destroy = fake_symbol(handle, "fake_cuda_stream_destroy");
  /* Plain byte counts here (the fake also takes K/M/G suffixes). */
  device_capacity = env_bytes("FAKE_CUDA_CAPACITY");
  fail_size = env_bytes("FAKE_CUDA_FAIL_SIZE");
  if (device_capacity == 0 || fail_size == 0 ||
      env_bytes("FAKE_CUDA_HOST_CAPACITY") != device_capacity) {
    fprintf(stderr, "set FAKE_CUDA_CAPACITY, FAKE_CUDA_HOST_CAPACITY (the same) and "
                    "FAKE_CUDA_FAIL_SIZE in bytes\n");
    return -1;
  }
  return 0;
}

/* Every place the fake offers, and the fake device that backs it. */
static const struct {
  dao_place place;
  int fake_device; /* -1: pinned host memory */
  int host_accessible;
} fake_places[] = {
    {{DAO_PLACE_CUDA, 0}, 0, 0},         {{DAO_PLACE_CUDA, 1}, 1, 0},
    {{DAO_PLACE_CUDA_PINNED, 0}, -1, 1}, {{DAO_PLACE_CUDA_MANAGED, 0}, 0, 1},
    {{DAO_PLACE_CUDA_MANAGED, 1}, 1, 1},
};
#define FAKE_PLACE_COUNT (sizeof fake_places / sizeof fake_places[0])

static void assert_context_balanced(void) { assert_int_equal(fake.context_depth(), 0); }

static void test_fake_counts(void **state) {
  int count = -1;
  (void)state;
  assert_int_equal(dao_place_device_count(DAO_PLACE_CUDA, &count), DAO_OK);
  assert_int_equal(count, 2);
  assert_int_equal(dao_place_device_count(DAO_PLACE_CUDA_PINNED, &count), DAO_OK);
  assert_int_equal(count, 1);
  assert_int_equal(dao_place_device_count(DAO_PLACE_CUDA_MANAGED, &count), DAO_OK);
  assert_int_equal(count, 2);
}

static void test_fake_descriptions(void **state) {
  const char *text = dao_place_backend_description(DAO_PLACE_CUDA);
  (void)state;
  assert_contains(text, "CUDA driver 13.0 via ");
  assert_contains(text, getenv("DAO_CUDA_LIBRARY"));
  assert_contains(text, "2 device(s): Fake CUDA Device 0 (");
  assert_contains(text, "Fake CUDA Device 1");
  assert_contains(dao_place_backend_description(DAO_PLACE_CUDA_PINNED), "cuMemHostAlloc");
  assert_contains(dao_place_backend_description(DAO_PLACE_CUDA_MANAGED), "cuMemAllocManaged");
  assert_contains(dao_place_backend_description(DAO_PLACE_CUDA_MANAGED), "CUDA driver 13.0");
}

static void test_fake_memory_info(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < FAKE_PLACE_COUNT; ++i) {
    size_t free_bytes = 0, total_bytes = 0;
    assert_int_equal(dao_place_memory_info(fake_places[i].place, &free_bytes, &total_bytes),
                     DAO_OK);
    assert_true(free_bytes <= total_bytes);
    if (fake_places[i].fake_device >= 0) {
      /* cuMemGetInfo of the place's own device. */
      assert_int_equal(total_bytes, device_capacity);
      assert_int_equal(free_bytes,
                       device_capacity - fake.used(fake_places[i].fake_device));
    } else {
      assert_true(total_bytes > 0); /* host physical memory */
    }
    assert_context_balanced();
  }
}

static void test_fake_place_defaults(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < FAKE_PLACE_COUNT; ++i) {
    const dao_place place = fake_places[i].place;
    void *p = NULL, *q = NULL;
    size_t used = 1;
    assert_int_equal(dao_alloc(place, 1000, &p), DAO_OK);
    assert_non_null(p);
    assert_true(is_aligned(p));
    assert_int_equal(dao_alloc(place, 3 * MiB + 1, &q), DAO_OK);
    assert_true(is_aligned(q));
    assert_int_equal(dao_used(place, &used), DAO_OK);
    assert_true(used >= 1000 + 3 * MiB + 1);
    assert_true(fake.used(fake_places[i].fake_device) >= used);
    if (fake_places[i].host_accessible) {
      size_t k;
      memset(q, 0x5a, 3 * MiB + 1);
      for (k = 0; k < 3 * MiB + 1; k += 4099) assert_int_equal(((unsigned char *)q)[k], 0x5a);
    }
    assert_int_equal(dao_free(place, p), DAO_OK);
    assert_int_equal(dao_free(place, p), DAO_ERR_INVALID_POINTER);
    assert_true(strlen(dao_last_error()) > 0);
    assert_int_equal(dao_free(place, q), DAO_OK);
    assert_int_equal(dao_used(place, &used), DAO_OK);
    assert_int_equal(used, 0);
    assert_int_equal(dao_alloc(place, 0, &p), DAO_OK);
    assert_null(p);
    assert_int_equal(dao_free(place, NULL), DAO_OK);
    assert_context_balanced();
  }
}

/* Gives the place defaults' cached chunks back, so each test starts with
   the fake devices empty. */
static void trim_place_defaults(void) {
  size_t i;
  for (i = 0; i < FAKE_PLACE_COUNT; ++i) {
    dao_allocator *a = NULL;
    assert_int_equal(dao_place_allocator(fake_places[i].place, &a), DAO_OK);
    assert_int_equal(dao_allocator_trim(a, NULL), DAO_OK);
  }
  assert_int_equal(fake.live_allocations(), 0);
}

static const char *const strategies[] = {"buddy", "system"};

static void test_fake_allocators(void **state) {
  static const size_t sizes[] = {1, 255, 256, 257, 4097, 1 << 20, 3 * (1 << 20) + 5};
  size_t s, i, k;
  (void)state;
  trim_place_defaults();
  for (s = 0; s < 2; ++s) {
    for (i = 0; i < FAKE_PLACE_COUNT; ++i) {
      dao_allocator *a = NULL;
      void *ptrs[sizeof sizes / sizeof sizes[0]];
      const int other = fake_places[i].fake_device == 1 ? 0 : 1;
      int dummy;
      assert_int_equal(dao_allocator_create(fake_places[i].place, strategies[s], NULL, &a),
                       DAO_OK);
      for (k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        assert_int_equal(dao_allocator_alloc(a, sizes[k], DAO_STREAM_DEFAULT, &ptrs[k]), DAO_OK);
        assert_non_null(ptrs[k]);
        assert_true(is_aligned(ptrs[k]));
        if (fake_places[i].host_accessible) memset(ptrs[k], (int)k, sizes[k]);
      }
      /* The memory came from the place's own device, not the other one. */
      assert_true(fake.used(fake_places[i].fake_device) > 0);
      if (fake_places[i].fake_device >= 0) assert_int_equal(fake.used(other), 0);
      if (fake_places[i].host_accessible) {
        for (k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
          assert_int_equal(((unsigned char *)ptrs[k])[0], (unsigned char)k);
          assert_int_equal(((unsigned char *)ptrs[k])[sizes[k] - 1], (unsigned char)k);
        }
      }
      for (k = 0; k < sizeof sizes / sizeof sizes[0]; ++k)
        assert_int_equal(dao_allocator_free(a, ptrs[k]), DAO_OK);
      assert_int_equal(dao_allocator_free(a, ptrs[0]), DAO_ERR_INVALID_POINTER);
      assert_int_equal(dao_allocator_free(a, &dummy), DAO_ERR_INVALID_POINTER);
      assert_int_equal(dao_allocator_destroy(a), DAO_OK);
      /* Everything went back to the driver. */
      assert_int_equal(fake.live_allocations(), 0);
      assert_context_balanced();
    }
  }
}

/* Fills a place until the driver says no, then checks the error and that
   freeing makes room again. */
static void exhaust(dao_place place, const char *strategy, const char *config) {
  enum { kMax = 256 };
  void *ptrs[kMax];
  size_t n = 0, k;
  dao_allocator *a = NULL;
  dao_status s = DAO_OK;
  const size_t block = 4 * MiB;
  char name[32];
  if (place.kind == DAO_PLACE_CUDA_PINNED)
    snprintf(name, sizeof name, "cuda_pinned");
  else
    snprintf(name, sizeof name, "%s:%d", dao_place_kind_name(place.kind), place.device);

  assert_int_equal(dao_allocator_create(place, strategy, config, &a), DAO_OK);
  while (n < kMax) {
    s = dao_allocator_alloc(a, block, DAO_STREAM_DEFAULT, &ptrs[n]);
    if (s != DAO_OK) break;
    ++n;
  }
  assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
  assert_true(n >= 1 && n <= device_capacity / block);
  assert_contains(dao_last_error(), name);
  assert_contains(dao_last_error(), "out of memory");
  if (strcmp(strategy, "system") == 0) {
    /* The backend's own message, passed through unchanged. */
    assert_contains(dao_last_error(), "CUDA_ERROR_OUT_OF_MEMORY");
    assert_contains(dao_last_error(), "tried to allocate 4.0 MiB");
    if (place.kind != DAO_PLACE_CUDA_PINNED) assert_contains(dao_last_error(), "is free");
  }
  assert_context_balanced();

  /* Room again after a free. */
  assert_int_equal(dao_allocator_free(a, ptrs[n - 1]), DAO_OK);
  assert_int_equal(dao_allocator_alloc(a, block, DAO_STREAM_DEFAULT, &ptrs[n - 1]), DAO_OK);
  for (k = 0; k < n; ++k) assert_int_equal(dao_allocator_free(a, ptrs[k]), DAO_OK);
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
  assert_int_equal(fake.live_allocations(), 0);
}

static void test_fake_exhaustion(void **state) {
  size_t i;
  (void)state;
  trim_place_defaults();
  for (i = 0; i < FAKE_PLACE_COUNT; ++i) {
    exhaust(fake_places[i].place, "system", NULL);
    exhaust(fake_places[i].place, "buddy", NULL);
    exhaust(fake_places[i].place, "buddy", "chunk_size=4MiB");
  }
}

static void test_fake_place_default_exhaustion(void **state) {
  void *ptrs[64];
  size_t n = 0, k;
  dao_status s = DAO_OK;
  (void)state;
  trim_place_defaults();
  while (n < 64 && (s = dao_alloc(dao_place_cuda(1), 4 * MiB, &ptrs[n])) == DAO_OK) ++n;
  assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
  assert_contains(dao_last_error(), "cuda:1");
  assert_true(n >= 1);
  assert_int_equal(dao_free(dao_place_cuda(1), ptrs[0]), DAO_OK);
  assert_int_equal(dao_alloc(dao_place_cuda(1), 4 * MiB, &ptrs[0]), DAO_OK);
  for (k = 0; k < n; ++k) assert_int_equal(dao_free(dao_place_cuda(1), ptrs[k]), DAO_OK);
  trim_place_defaults();
}

static void test_fake_driver_error(void **state) {
  dao_allocator *a = NULL;
  void *p = &a;
  (void)state;
  assert_int_equal(dao_allocator_create(dao_place_cuda(0), "system", NULL, &a), DAO_OK);
  assert_int_equal(dao_allocator_alloc(a, fail_size, DAO_STREAM_DEFAULT, &p), DAO_ERR_BACKEND);
  assert_null(p);
  assert_contains(dao_last_error(), "cuda:0: cuMemAlloc(");
  assert_contains(dao_last_error(),
                  "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
  assert_context_balanced();
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
}

static void test_fake_missing_devices(void **state) {
  const dao_place missing[] = {dao_place_cuda(2), dao_place_cuda(64), dao_place_cuda_managed(2)};
  const dao_place pinned1 = {DAO_PLACE_CUDA_PINNED, 1};
  size_t i;
  void *p = NULL;
  dao_allocator *a = NULL;
  (void)state;
  for (i = 0; i < sizeof missing / sizeof missing[0]; ++i) {
    assert_int_equal(dao_alloc(missing[i], 100, &p), DAO_ERR_NO_DEVICE);
    assert_contains(dao_last_error(), "does not exist: the driver reports 2 device(s)");
    assert_int_equal(dao_allocator_create(missing[i], "system", NULL, &a), DAO_ERR_NO_DEVICE);
    assert_contains(dao_last_error(), "does not exist: the driver reports 2 device(s)");
    assert_int_equal(dao_place_memory_info(missing[i], NULL, NULL), DAO_ERR_NO_DEVICE);
  }
  assert_int_equal(dao_allocator_create(pinned1, "buddy", NULL, &a), DAO_ERR_NO_DEVICE);
  assert_contains(dao_last_error(), "cuda_pinned device 1 does not exist");
  assert_int_equal(dao_alloc(dao_place_cuda(-1), 100, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_null(a);
}

/* libdao pushes its own context and pops it again: a caller's current
   context stays current, and the memory still lands on the place's device. */
static void test_fake_caller_context_untouched(void **state) {
  void *ctx1 = NULL, *popped = NULL;
  dao_allocator *a = NULL;
  void *p = NULL;
  size_t used0, used1;
  (void)state;
  trim_place_defaults();
  assert_int_equal(fake.primary_ctx_retain(&ctx1, 1), 0);
  assert_int_equal(fake.ctx_push(ctx1), 0);
  used0 = fake.used(0);
  used1 = fake.used(1);

  assert_int_equal(dao_allocator_create(dao_place_cuda(0), "system", NULL, &a), DAO_OK);
  assert_int_equal(dao_allocator_alloc(a, MiB, DAO_STREAM_DEFAULT, &p), DAO_OK);
  assert_int_equal(fake.context_depth(), 1);
  assert_int_equal(fake.current_device(), 1);
  assert_int_equal(fake.used(0), used0 + MiB);
  assert_int_equal(fake.used(1), used1);
  assert_int_equal(dao_place_memory_info(dao_place_cuda(0), NULL, NULL), DAO_OK);
  assert_int_equal(fake.current_device(), 1);
  assert_int_equal(dao_allocator_free(a, p), DAO_OK);
  assert_int_equal(fake.used(0), used0);
  assert_int_equal(fake.current_device(), 1);
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);

  assert_int_equal(fake.ctx_pop(&popped), 0);
  assert_ptr_equal(popped, ctx1);
  assert_int_equal(fake.primary_ctx_release(1), 0);
  assert_context_balanced();
}

struct worker {
  int index;
  int failures;
};

static void *worker_main(void *arg) {
  struct worker *w = (struct worker *)arg;
  int i;
  for (i = 0; i < 300; ++i) {
    const dao_place place = fake_places[(size_t)(i + w->index) % FAKE_PLACE_COUNT].place;
    void *p = NULL;
    size_t bytes = (size_t)(1 + (i * 7919 + w->index * 104729) % (256 * 1024));
    if (dao_alloc(place, bytes, &p) != DAO_OK || !is_aligned(p)) {
      ++w->failures;
      continue;
    }
    if (dao_free(place, p) != DAO_OK) ++w->failures;
  }
  if (fake.context_depth() != 0) ++w->failures;
  return NULL;
}

static void test_fake_threads(void **state) {
  enum { kThreads = 6 };
  pthread_t threads[kThreads];
  struct worker workers[kThreads];
  int t;
  (void)state;
  for (t = 0; t < kThreads; ++t) {
    workers[t].index = t;
    workers[t].failures = 0;
    assert_int_equal(pthread_create(&threads[t], NULL, worker_main, &workers[t]), 0);
  }
  for (t = 0; t < kThreads; ++t) {
    assert_int_equal(pthread_join(threads[t], NULL), 0);
    assert_int_equal(workers[t].failures, 0);
  }
  trim_place_defaults();
}

/* ---- streams and events on the fake driver ---- */

/* Blocks a stream until the test opens it (see test_stream.c). */
struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int entered;
  int open;
};

static void gate_init(struct gate *g) {
  pthread_mutex_init(&g->mutex, NULL);
  pthread_cond_init(&g->changed, NULL);
  g->entered = 0;
  g->open = 0;
}

static void gate_fn(void *user_data) {
  struct gate *g = (struct gate *)user_data;
  pthread_mutex_lock(&g->mutex);
  g->entered = 1;
  pthread_cond_broadcast(&g->changed);
  while (!g->open) pthread_cond_wait(&g->changed, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
}

static void gate_wait_entered(struct gate *g) {
  pthread_mutex_lock(&g->mutex);
  while (!g->entered) pthread_cond_wait(&g->changed, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
}

static void gate_open(struct gate *g) {
  pthread_mutex_lock(&g->mutex);
  g->open = 1;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->mutex);
}

static void gate_destroy(struct gate *g) {
  pthread_cond_destroy(&g->changed);
  pthread_mutex_destroy(&g->mutex);
}

static void count_fn(void *user_data) { ++*(int *)user_data; }

static int stream_idle(dao_stream s) {
  int idle = -1;
  assert_int_equal(dao_stream_query(s, &idle), DAO_OK);
  return idle;
}

static int event_done(dao_event e) {
  int done = -1;
  assert_int_equal(dao_event_query(e, &done), DAO_OK);
  return done;
}

/* Copies host -> place -> host on one stream, a host function between;
   the driver's streams are asynchronous, so a blocked host function keeps
   the stream and an event behind it pending. */
static void test_fake_streams(void **state) {
  enum { kBytes = 64 * 1024 };
  size_t i;
  (void)state;
  for (i = 0; i < FAKE_PLACE_COUNT; ++i) {
    const dao_place place = fake_places[i].place;
    const long streams0 = fake.live_streams(), events0 = fake.live_events();
    dao_stream a = NULL, b = NULL;
    dao_event e = NULL;
    dao_place where;
    void *native = NULL, *mem = NULL;
    unsigned char *in = (unsigned char *)malloc(kBytes), *out = (unsigned char *)malloc(kBytes);
    struct gate g;
    int count = 0, k;
    assert_non_null(in);
    assert_non_null(out);
    for (k = 0; k < kBytes; ++k) in[k] = (unsigned char)(k * 7 + (int)i);
    memset(out, 0, kBytes);
    gate_init(&g);

    assert_int_equal(dao_stream_create(place, &a), DAO_OK);
    assert_int_equal(dao_stream_create(place, &b), DAO_OK);
    assert_int_equal(fake.live_streams(), streams0 + 2);
    assert_int_equal(dao_stream_native(a, &native), DAO_OK);
    assert_non_null(native);
    assert_int_equal(dao_stream_place(a, &where), DAO_OK);
    assert_int_equal(where.kind, place.kind);
    assert_int_equal(where.device, place.device);
    assert_int_equal(dao_event_create(place, &e), DAO_OK);
    assert_int_equal(fake.live_events(), events0 + 1);
    assert_int_equal(event_done(e), 1); /* a new event counts as completed */
    assert_int_equal(dao_alloc(place, kBytes, &mem), DAO_OK);

    assert_int_equal(dao_launch_host_func(a, gate_fn, &g), DAO_OK);
    assert_int_equal(dao_memcpy_async(mem, in, kBytes, a), DAO_OK);
    assert_int_equal(dao_launch_host_func(a, count_fn, &count), DAO_OK);
    assert_int_equal(dao_event_record(e, a), DAO_OK);
    assert_int_equal(dao_stream_wait_event(b, e), DAO_OK);
    assert_int_equal(dao_memcpy_async(out, mem, kBytes, b), DAO_OK);
    gate_wait_entered(&g);
    assert_int_equal(stream_idle(a), 0);
    assert_int_equal(stream_idle(b), 0);
    assert_int_equal(event_done(e), 0);
    assert_int_equal(count, 0);
    assert_context_balanced();
    gate_open(&g);
    assert_int_equal(dao_event_synchronize(e), DAO_OK);
    assert_int_equal(event_done(e), 1);
    assert_int_equal(count, 1);
    assert_int_equal(dao_stream_synchronize(b), DAO_OK);
    assert_int_equal(stream_idle(b), 1);
    assert_memory_equal(out, in, kBytes);
    /* The default stream: an event recorded on it is complete at once. */
    assert_int_equal(dao_event_record(e, NULL), DAO_OK);
    assert_int_equal(event_done(e), 1);
    assert_int_equal(dao_stream_wait_event(NULL, e), DAO_OK);
    assert_context_balanced();

    assert_int_equal(dao_free(place, mem), DAO_OK);
    assert_int_equal(dao_stream_destroy(a), DAO_OK);
    assert_int_equal(dao_stream_destroy(b), DAO_OK);
    assert_int_equal(dao_event_destroy(e), DAO_OK);
    assert_int_equal(fake.live_streams(), streams0);
    assert_int_equal(fake.live_events(), events0);
    assert_context_balanced();
    gate_destroy(&g);
    free(in);
    free(out);
  }
  trim_place_defaults();
}

/* dao_stream_wrap adopts a caller's CUstream and leaves it alive. */
static void test_fake_wrapped_stream(void **state) {
  void *native = fake.stream_create(1), *got = NULL;
  const long streams0 = fake.live_streams();
  dao_stream s = NULL;
  dao_event e = NULL;
  int count = 0;
  char src[32] = "through a wrapped stream", dst[32];
  (void)state;
  assert_non_null(native);
  memset(dst, 0, sizeof dst);
  assert_int_equal(dao_stream_wrap(dao_place_cuda(1), native, &s), DAO_OK);
  assert_int_equal(dao_stream_native(s, &got), DAO_OK);
  assert_ptr_equal(got, native);
  assert_int_equal(dao_event_create(dao_place_cuda(1), &e), DAO_OK);
  assert_int_equal(dao_memcpy_async(dst, src, sizeof src, s), DAO_OK);
  assert_int_equal(dao_launch_host_func(s, count_fn, &count), DAO_OK);
  assert_int_equal(dao_event_record(e, s), DAO_OK);
  assert_int_equal(dao_event_synchronize(e), DAO_OK);
  assert_int_equal(count, 1);
  assert_string_equal(dst, src);
  assert_int_equal(dao_stream_destroy(s), DAO_OK);
  assert_int_equal(fake.live_streams(), streams0); /* still the caller's */
  assert_int_equal(fake.stream_destroy(native), 0);
  assert_int_equal(fake.live_streams(), streams0 - 1);

  /* NULL: the legacy default stream, which runs the work at once here. */
  count = 0;
  assert_int_equal(dao_stream_wrap(dao_place_cuda(0), NULL, &s), DAO_OK);
  assert_int_equal(dao_stream_native(s, &got), DAO_OK);
  assert_null(got);
  assert_int_equal(dao_launch_host_func(s, count_fn, &count), DAO_OK);
  assert_int_equal(dao_stream_synchronize(s), DAO_OK);
  assert_int_equal(count, 1);
  assert_int_equal(dao_stream_destroy(s), DAO_OK);
  assert_int_equal(dao_event_destroy(e), DAO_OK);
  assert_context_balanced();
}

static void test_fake_stream_bad_input(void **state) {
  dao_stream s0 = NULL, s1 = NULL, s = (dao_stream)&state;
  dao_event e1 = NULL, e = (dao_event)&state;
  char buf[64];
  (void)state;
  assert_int_equal(dao_stream_create(dao_place_cuda(2), &s), DAO_ERR_NO_DEVICE);
  assert_contains(dao_last_error(), "does not exist: the driver reports 2 device(s)");
  assert_int_equal(dao_stream_wrap(dao_place_cuda(2), NULL, &s), DAO_ERR_NO_DEVICE);
  assert_int_equal(dao_event_create(dao_place_cuda_managed(2), &e), DAO_ERR_NO_DEVICE);
  assert_int_equal(dao_stream_create(dao_place_cuda(0), NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ptr_equal(s, (dao_stream)&state);
  assert_ptr_equal(e, (dao_event)&state);

  assert_int_equal(dao_stream_create(dao_place_cuda(0), &s0), DAO_OK);
  assert_int_equal(dao_stream_create(dao_place_cuda(1), &s1), DAO_OK);
  assert_int_equal(dao_event_create(dao_place_cuda(1), &e1), DAO_OK);
  /* Places must match: cuda:0 is not cuda:1, nor cuda_managed:1. */
  assert_int_equal(dao_event_record(e1, s0), DAO_ERR_INVALID_ARGUMENT);
  assert_contains(dao_last_error(), "the stream is on cuda:0 but the event is on cuda:1");
  assert_int_equal(dao_stream_wait_event(s0, e1), DAO_ERR_INVALID_ARGUMENT);
  assert_int_equal(dao_memcpy_async(buf, buf + 8, 16, s0), DAO_ERR_INVALID_ARGUMENT);
  assert_int_equal(dao_launch_host_func(s1, NULL, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_int_equal(dao_event_record(e1, s1), DAO_OK);
  assert_int_equal(dao_stream_wait_event(s1, e1), DAO_OK);
  assert_int_equal(dao_stream_synchronize(s1), DAO_OK);
  assert_int_equal(dao_stream_destroy(s0), DAO_OK);
  assert_int_equal(dao_stream_destroy(s1), DAO_OK);
  assert_int_equal(dao_event_destroy(e1), DAO_OK);
  assert_context_balanced();
}

/* Last: whatever ran before, each device's primary context was retained
   exactly once by libdao. */
static void test_fake_retained_once(void **state) {
  (void)state;
  assert_int_equal(fake.retain_count(0), 1);
  assert_int_equal(fake.retain_count(1), 1);
  assert_context_balanced();
}

/* ------------------------------------------------------------------------
 * Mode "driver": the machine's own driver, if any
 * ---------------------------------------------------------------------- */

static int driver_devices;

static int setup_driver(void **state) {
  (void)state;
  return dao_place_device_count(DAO_PLACE_CUDA, &driver_devices) == DAO_OK ? 0 : -1;
}

static void test_driver_counts_agree(void **state) {
  int pinned = -1, managed = -1;
  const char *text = dao_place_backend_description(DAO_PLACE_CUDA);
  void *p = NULL;
  (void)state;
  assert_int_equal(dao_place_device_count(DAO_PLACE_CUDA_PINNED, &pinned), DAO_OK);
  assert_int_equal(dao_place_device_count(DAO_PLACE_CUDA_MANAGED, &managed), DAO_OK);
  assert_int_equal(pinned, driver_devices > 0 ? 1 : 0);
  assert_int_equal(managed, driver_devices);
  print_message("cuda: %s\n", text);
  if (driver_devices == 0) {
    assert_contains(text, "not available: ");
    assert_int_equal(dao_alloc(dao_place_cuda(0), 100, &p), DAO_ERR_NO_DEVICE);
    assert_int_equal(dao_alloc(dao_place_cuda_pinned(), 100, &p), DAO_ERR_NO_DEVICE);
  } else {
    assert_contains(text, "CUDA driver ");
    assert_int_equal(dao_alloc(dao_place_cuda(driver_devices), 100, &p), DAO_ERR_NO_DEVICE);
    assert_contains(dao_last_error(), "does not exist");
  }
}

static void test_driver_alloc_free(void **state) {
  const dao_place places[] = {dao_place_cuda(0), dao_place_cuda_pinned(),
                              dao_place_cuda_managed(0)};
  size_t i, s;
  (void)state;
  if (driver_devices == 0) skip();
  for (i = 0; i < sizeof places / sizeof places[0]; ++i) {
    void *p = NULL;
    size_t used = 0;
    const int host = places[i].kind != DAO_PLACE_CUDA;
    assert_int_equal(dao_alloc(places[i], 5 * MiB + 3, &p), DAO_OK);
    assert_true(is_aligned(p));
    if (host) {
      memset(p, 0x33, 5 * MiB + 3);
      assert_int_equal(((unsigned char *)p)[5 * MiB + 2], 0x33);
    }
    assert_int_equal(dao_used(places[i], &used), DAO_OK);
    assert_true(used >= 5 * MiB + 3);
    assert_int_equal(dao_free(places[i], p), DAO_OK);
    assert_int_equal(dao_free(places[i], p), DAO_ERR_INVALID_POINTER);
    for (s = 0; s < 2; ++s) {
      dao_allocator *a = NULL;
      assert_int_equal(dao_allocator_create(places[i], strategies[s], NULL, &a), DAO_OK);
      assert_int_equal(dao_allocator_alloc(a, 1000, DAO_STREAM_DEFAULT, &p), DAO_OK);
      assert_true(is_aligned(p));
      if (host) memset(p, 1, 1000);
      assert_int_equal(dao_allocator_free(a, p), DAO_OK);
      assert_int_equal(dao_allocator_destroy(a), DAO_OK);
    }
  }
}

static void test_driver_out_of_memory(void **state) {
  size_t free_bytes = 0, total_bytes = 0;
  dao_allocator *a = NULL;
  void *p = NULL;
  (void)state;
  if (driver_devices == 0) skip();
  assert_int_equal(dao_place_memory_info(dao_place_cuda(0), &free_bytes, &total_bytes), DAO_OK);
  assert_true(free_bytes <= total_bytes && total_bytes > 0);
  assert_int_equal(dao_allocator_create(dao_place_cuda(0), "system", NULL, &a), DAO_OK);
  assert_int_equal(dao_allocator_alloc(a, total_bytes + ((size_t)1 << 30), DAO_STREAM_DEFAULT, &p),
                   DAO_ERR_OUT_OF_MEMORY);
  assert_contains(dao_last_error(), "cuda:0: out of memory");
  assert_contains(dao_last_error(), "CUDA_ERROR_OUT_OF_MEMORY");
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
}

/* Streams and events on a real GPU: pinned -> device -> pinned across two
   streams ordered by an event, with a host function holding the first. */
static void test_driver_streams(void **state) {
  const size_t bytes = 4 * MiB;
  dao_stream a = NULL, b = NULL, legacy = NULL;
  dao_event e = NULL;
  unsigned char *in = NULL, *out = NULL;
  void *dev = NULL, *native = NULL;
  struct gate g;
  int count = 0;
  size_t k;
  (void)state;
  if (driver_devices == 0) skip();
  gate_init(&g);
  assert_int_equal(dao_alloc(dao_place_cuda(0), bytes, &dev), DAO_OK);
  assert_int_equal(dao_alloc(dao_place_cuda_pinned(), bytes, (void **)&in), DAO_OK);
  assert_int_equal(dao_alloc(dao_place_cuda_pinned(), bytes, (void **)&out), DAO_OK);
  for (k = 0; k < bytes; ++k) in[k] = (unsigned char)(k * 13 + 1);
  memset(out, 0, bytes);
  assert_int_equal(dao_stream_create(dao_place_cuda(0), &a), DAO_OK);
  assert_int_equal(dao_stream_create(dao_place_cuda(0), &b), DAO_OK);
  assert_int_equal(dao_stream_native(a, &native), DAO_OK);
  assert_non_null(native);
  assert_int_equal(dao_event_create(dao_place_cuda(0), &e), DAO_OK);
  assert_int_equal(event_done(e), 1);

  assert_int_equal(dao_launch_host_func(a, gate_fn, &g), DAO_OK);
  assert_int_equal(dao_memcpy_async(dev, in, bytes, a), DAO_OK);
  assert_int_equal(dao_launch_host_func(a, count_fn, &count), DAO_OK);
  assert_int_equal(dao_event_record(e, a), DAO_OK);
  assert_int_equal(dao_stream_wait_event(b, e), DAO_OK);
  assert_int_equal(dao_memcpy_async(out, dev, bytes, b), DAO_OK);
  gate_wait_entered(&g);
  assert_int_equal(stream_idle(a), 0);
  assert_int_equal(stream_idle(b), 0);
  assert_int_equal(event_done(e), 0);
  gate_open(&g);
  assert_int_equal(dao_stream_synchronize(b), DAO_OK);
  assert_int_equal(stream_idle(b), 1);
  assert_int_equal(event_done(e), 1);
  assert_int_equal(count, 1);
  assert_memory_equal(out, in, bytes);

  assert_int_equal(dao_event_record(e, NULL), DAO_OK);
  assert_int_equal(event_done(e), 1);
  /* The legacy default stream, wrapped. */
  memset(out, 0, bytes);
  assert_int_equal(dao_stream_wrap(dao_place_cuda(0), NULL, &legacy), DAO_OK);
  assert_int_equal(dao_memcpy_async(out, dev, bytes, legacy), DAO_OK);
  assert_int_equal(dao_stream_synchronize(legacy), DAO_OK);
  assert_memory_equal(out, in, bytes);
  assert_int_equal(dao_stream_destroy(legacy), DAO_OK);

  assert_int_equal(dao_stream_destroy(a), DAO_OK);
  assert_int_equal(dao_stream_destroy(b), DAO_OK);
  assert_int_equal(dao_event_destroy(e), DAO_OK);
  assert_int_equal(dao_free(dao_place_cuda(0), dev), DAO_OK);
  assert_int_equal(dao_free(dao_place_cuda_pinned(), in), DAO_OK);
  assert_int_equal(dao_free(dao_place_cuda_pinned(), out), DAO_OK);
  gate_destroy(&g);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "none") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_counts_are_zero),
        cmocka_unit_test(test_none_description_says_why),
        cmocka_unit_test(test_none_every_call_gives_no_device),
        cmocka_unit_test(test_none_other_places_still_work),
    };
    if (argc > 2) expected_reason = argv[2];
    return cmocka_run_group_tests_name("cuda_backend_none", tests, NULL, NULL);
  }
  if (strcmp(mode, "fake") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_counts),
        cmocka_unit_test(test_fake_descriptions),
        cmocka_unit_test(test_fake_memory_info),
        cmocka_unit_test(test_fake_place_defaults),
        cmocka_unit_test(test_fake_allocators),
        cmocka_unit_test(test_fake_exhaustion),
        cmocka_unit_test(test_fake_place_default_exhaustion),
        cmocka_unit_test(test_fake_driver_error),
        cmocka_unit_test(test_fake_missing_devices),
        cmocka_unit_test(test_fake_caller_context_untouched),
        cmocka_unit_test(test_fake_threads),
        cmocka_unit_test(test_fake_streams),
        cmocka_unit_test(test_fake_wrapped_stream),
        cmocka_unit_test(test_fake_stream_bad_input),
        cmocka_unit_test(test_fake_retained_once),
    };
    return cmocka_run_group_tests_name("cuda_backend_fake", tests, setup_fake, NULL);
  }
  if (strcmp(mode, "driver") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_counts_agree),
        cmocka_unit_test(test_driver_alloc_free),
        cmocka_unit_test(test_driver_out_of_memory),
        cmocka_unit_test(test_driver_streams),
    };
    return cmocka_run_group_tests_name("cuda_backend_driver", tests, setup_driver, NULL);
  }
  fprintf(stderr, "usage: %s none [EXPECTED-REASON] | fake | driver\n", argv[0]);
  return 2;
}
