/*
 * The CUDA backends through the public API, without a GPU.
 *
 *   test_cuda_backend none [EXPECTED]   no usable driver: every CUDA kind has
 *                                       no device and says why (the reason
 *                                       contains EXPECTED when given)
 *   test_cuda_backend fake              DAO_CUDA_LIBRARY names the fake driver
 *                                       (tests/fake_cuda) with
 *                                       FAKE_CUDA_DEVICES=2; device memory
 *                                       has virtual memory management, so
 *                                       the caching strategy grows
 *                                       expandable segments
 *   test_cuda_backend fake-no-vmm       the same without virtual memory
 *                                       (FAKE_CUDA_NO_VMM=1, or the fake
 *                                       built without its entry points):
 *                                       classic segments
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
#include <time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "resource/cuda_api.h" /* types of the fake driver's entry points */
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
  long (*live_reservations)(void);
  long (*live_handles)(void);
  long (*live_mappings)(void);
  long (*map_calls)(void);
  void (*fail_call)(const char *, int, int);
  /* Virtual memory entry points; NULL in the fake built without them. */
  CUresult (*mem_address_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*mem_address_free)(CUdeviceptr, size_t);
  CUresult (*mem_create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                         unsigned long long);
  CUresult (*mem_release)(CUmemGenericAllocationHandle);
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                      unsigned long long);
  CUresult (*mem_unmap)(CUdeviceptr, size_t);
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
} fake;

/* Whether device memory is expected to have virtual memory (mode "fake"). */
static int expect_vmm;

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
  *(void **)&fake.live_reservations = fake_symbol(handle, "fake_cuda_live_reservations");
  *(void **)&fake.live_handles = fake_symbol(handle, "fake_cuda_live_handles");
  *(void **)&fake.live_mappings = fake_symbol(handle, "fake_cuda_live_mappings");
  *(void **)&fake.map_calls = fake_symbol(handle, "fake_cuda_map_calls");
  *(void **)&fake.fail_call = fake_symbol(handle, "fake_cuda_fail_call");
  *(void **)&fake.mem_address_reserve = dlsym(handle, "cuMemAddressReserve");
  *(void **)&fake.mem_address_free = dlsym(handle, "cuMemAddressFree");
  *(void **)&fake.mem_create = dlsym(handle, "cuMemCreate");
  *(void **)&fake.mem_release = dlsym(handle, "cuMemRelease");
  *(void **)&fake.mem_map = dlsym(handle, "cuMemMap");
  *(void **)&fake.mem_unmap = dlsym(handle, "cuMemUnmap");
  *(void **)&fake.mem_set_access = dlsym(handle, "cuMemSetAccess");
  if (expect_vmm && fake.mem_map == NULL) {
    fprintf(stderr, "mode fake needs the fake driver with virtual memory\n");
    return -1;
  }
  if (!expect_vmm && fake.mem_map != NULL && getenv("FAKE_CUDA_NO_VMM") == NULL) {
    fprintf(stderr, "mode fake-no-vmm needs FAKE_CUDA_NO_VMM=1 or dao_fake_cuda_novmm\n");
    return -1;
  }
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
      assert_int_equal(free_bytes, device_capacity - fake.used(fake_places[i].fake_device));
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
      assert_int_equal(dao_allocator_create(fake_places[i].place, strategies[s], NULL, &a), DAO_OK);
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
  if (place.kind == DAO_PLACE_CUDA_PINNED) snprintf(name, sizeof name, "cuda_pinned");
  else snprintf(name, sizeof name, "%s:%d", dao_place_kind_name(place.kind), place.device);

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

/* ---- virtual memory: the caching strategy's expandable segments ---- */

#define GRANULE (2 * MiB) /* the fake's default granularity */

/* Nothing of the driver's virtual memory is left: no reservation, mapping
   or physical allocation, and no byte in use on either device. */
static void assert_no_vmm_left(void) {
  assert_int_equal(fake.live_reservations(), 0);
  assert_int_equal(fake.live_mappings(), 0);
  assert_int_equal(fake.live_handles(), 0);
  assert_int_equal(fake.live_allocations(), 0);
  assert_int_equal(fake.used(0), 0);
  assert_int_equal(fake.used(1), 0);
}

struct segments {
  size_t count;
  size_t expandable; /* how many are expandable */
  size_t mapped;     /* mapped bytes of all */
  size_t size;       /* address bytes of all */
};

static struct segments segments_of(dao_allocator *a) {
  struct segments out = {0, 0, 0, 0};
  dao_snapshot *snap = NULL;
  size_t i;
  assert_int_equal(dao_allocator_snapshot(a, &snap), DAO_OK);
  assert_int_equal(dao_snapshot_segment_count(snap, &out.count), DAO_OK);
  for (i = 0; i < out.count; ++i) {
    dao_segment_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(dao_snapshot_segment(snap, i, &info), DAO_OK);
    out.expandable += info.expandable == 1;
    out.mapped += info.mapped_bytes;
    out.size += info.size;
    if (info.expandable) {
      assert_int_equal(info.address % GRANULE, 0);
      assert_int_equal(info.mapped_bytes % GRANULE, 0);
      assert_true(info.mapped_bytes <= info.size);
    }
  }
  assert_int_equal(dao_snapshot_destroy(snap), DAO_OK);
  return out;
}

static void fill(void *p, size_t bytes, unsigned seed) {
  unsigned char *c = (unsigned char *)p;
  size_t k;
  for (k = 0; k < bytes; ++k) c[k] = (unsigned char)(k * 31 + seed);
}

static void assert_filled(const void *p, size_t bytes, unsigned seed) {
  const unsigned char *c = (const unsigned char *)p;
  size_t k;
  for (k = 0; k < bytes; ++k) {
    if (c[k] != (unsigned char)(k * 31 + seed)) {
      print_error("byte %zu of %p: %u, expected %u\n", k, p, c[k], (unsigned char)(k * 31 + seed));
      fail();
    }
  }
}

/* The caching strategy on cuda:N: expandable segments where the device has
   virtual memory, classic ones otherwise; either way allocations, frees and
   trims work, the data stays, and destroy gives everything back. */
static void test_fake_caching_segments(void **state) {
  enum { kCount = 6 };
  static const size_t sizes[kCount] = {1000, 4 * MiB, 4 * MiB, 4 * MiB, 3 * MiB + 5, 12 * MiB + 1};
  int device;
  (void)state;
  trim_place_defaults();
  for (device = 0; device < 2; ++device) {
    const dao_place place = dao_place_cuda(device);
    const long maps0 = fake.map_calls();
    dao_allocator *a = NULL;
    const char *strategy = NULL, *config = NULL;
    void *p[kCount];
    struct segments seg;
    size_t k, released = 0, used_before;
    /* Mappings of one granule each (map_chunk), so that a trim can give
       back a freed block between live ones: the default maps 20 MiB pages,
       which these blocks share. */
    assert_int_equal(dao_allocator_create(place, "caching", "map_chunk=2MiB", &a), DAO_OK);
    assert_int_equal(dao_allocator_info(a, NULL, &strategy, &config), DAO_OK);
    assert_string_equal(strategy, "caching");
    assert_contains(config, expect_vmm ? "expandable_segments=true" : "expandable_segments=false");

    for (k = 0; k < kCount; ++k) {
      assert_int_equal(dao_allocator_alloc(a, sizes[k], DAO_STREAM_DEFAULT, &p[k]), DAO_OK);
      assert_true(is_aligned(p[k]));
      /* The fake's device memory is host memory: write all of it. */
      fill(p[k], sizes[k], (unsigned)k);
    }
    assert_context_balanced();
    seg = segments_of(a);
    assert_true(seg.count >= 1);
    assert_int_equal(seg.expandable, expect_vmm ? seg.count : 0);
    /* What the driver counts is what the segments hold. */
    assert_int_equal(fake.used(device), seg.mapped);
    assert_int_equal(fake.used(1 - device), 0);
    if (expect_vmm) {
      assert_true(fake.map_calls() > maps0);
      assert_int_equal((size_t)fake.live_mappings() * GRANULE, seg.mapped);
      assert_true(fake.live_reservations() >= 1);
    } else {
      assert_int_equal(fake.map_calls(), maps0);
      assert_int_equal(fake.live_reservations(), 0);
    }

    /* Free the middle 4 MiB block and trim: its granules go back (in an
       expandable segment: the mappings wholly inside it, each unmapped
       whole, as the driver demands), the neighbours keep their data. */
    used_before = fake.used(device);
    assert_int_equal(dao_allocator_free(a, p[2]), DAO_OK);
    assert_int_equal(dao_allocator_trim(a, &released), DAO_OK);
    assert_context_balanced();
    if (expect_vmm) {
      assert_true(released >= GRANULE);
      assert_int_equal(fake.used(device), used_before - released);
      assert_int_equal(segments_of(a).mapped, fake.used(device));
    }
    for (k = 0; k < kCount; ++k)
      if (k != 2) assert_filled(p[k], sizes[k], (unsigned)k);
    /* And come back when needed. */
    assert_int_equal(dao_allocator_alloc(a, sizes[2], DAO_STREAM_DEFAULT, &p[2]), DAO_OK);
    fill(p[2], sizes[2], 99);
    assert_int_equal(fake.used(device), segments_of(a).mapped);
    for (k = 0; k < kCount; ++k) assert_filled(p[k], sizes[k], k == 2 ? 99 : (unsigned)k);

    /* Everything freed and trimmed: no memory, and no segment left. */
    for (k = 0; k < kCount; ++k) assert_int_equal(dao_allocator_free(a, p[k]), DAO_OK);
    assert_int_equal(dao_allocator_trim(a, NULL), DAO_OK);
    seg = segments_of(a);
    assert_int_equal(seg.count, 0);
    assert_int_equal(fake.used(device), 0);
    assert_int_equal(dao_allocator_destroy(a), DAO_OK);
    assert_no_vmm_left();
    assert_context_balanced();

    /* Destroy without a trim gives back what is cached, too. */
    assert_int_equal(dao_allocator_create(place, "caching", NULL, &a), DAO_OK);
    for (k = 0; k < kCount; ++k)
      assert_int_equal(dao_allocator_alloc(a, sizes[k], DAO_STREAM_DEFAULT, &p[k]), DAO_OK);
    for (k = 0; k < kCount; k += 2) assert_int_equal(dao_allocator_free(a, p[k]), DAO_OK);
    for (k = 1; k < kCount; k += 2) assert_int_equal(dao_allocator_free(a, p[k]), DAO_OK);
    assert_true(fake.used(device) > 0);
    assert_int_equal(dao_allocator_destroy(a), DAO_OK);
    assert_no_vmm_left();
    assert_context_balanced();
  }
}

/* Filling a device: out of memory, nothing leaked by the failed map, and
   room again after frees. */
static void test_fake_caching_exhaustion(void **state) {
  enum { kMax = 64 };
  const size_t block = 4 * MiB;
  int device;
  (void)state;
  trim_place_defaults();
  for (device = 0; device < 2; ++device) {
    const dao_place place = dao_place_cuda(device);
    dao_allocator *a = NULL;
    void *ptrs[kMax], *big = NULL;
    size_t n = 0, k, used;
    dao_status s = DAO_OK;
    /* One granule per mapping (map_chunk), so that what is mapped can be
       counted in granules; the default's larger mappings fill it too
       (test_fake_caching_exhaustion_default). */
    assert_int_equal(dao_allocator_create(place, "caching", "map_chunk=2MiB", &a), DAO_OK);
    while (n < kMax &&
           (s = dao_allocator_alloc(a, block, DAO_STREAM_DEFAULT, &ptrs[n])) == DAO_OK) {
      fill(ptrs[n], 4096, (unsigned)n);
      ++n;
    }
    assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
    assert_contains(dao_last_error(), "out of memory");
    assert_contains(dao_last_error(), device == 0 ? "cuda:0" : "cuda:1");
    assert_context_balanced();
    /* One segment grown to the whole device: not a byte lost. */
    if (expect_vmm) {
      assert_int_equal(n, device_capacity / block);
      assert_int_equal(fake.used(device), device_capacity);
    } else {
      assert_true(n >= 1 && n <= device_capacity / block);
    }
    used = fake.used(device);
    if (expect_vmm) assert_int_equal((size_t)fake.live_mappings() * GRANULE, used);

    /* Room again after a free. */
    assert_int_equal(dao_allocator_free(a, ptrs[n - 1]), DAO_OK);
    assert_int_equal(dao_allocator_alloc(a, block, DAO_STREAM_DEFAULT, &ptrs[n - 1]), DAO_OK);
    assert_int_equal(fake.used(device), used);

    /* A request that fits only in part: the granules mapped before the
       device ran out are unmapped again. */
    for (k = 0; k < 3; ++k) assert_int_equal(dao_allocator_free(a, ptrs[k]), DAO_OK);
    assert_int_equal(dao_allocator_trim(a, NULL), DAO_OK);
    used = fake.used(device);
    if (expect_vmm) assert_int_equal(used, device_capacity - 3 * block);
    assert_int_equal(dao_allocator_alloc(a, 4 * block, DAO_STREAM_DEFAULT, &big),
                     DAO_ERR_OUT_OF_MEMORY);
    assert_null(big);
    assert_int_equal(fake.used(device), used);
    if (expect_vmm) assert_int_equal((size_t)fake.live_mappings() * GRANULE, used);
    assert_int_equal(dao_allocator_alloc(a, 3 * block, DAO_STREAM_DEFAULT, &big), DAO_OK);
    fill(big, 3 * block, 7);
    for (k = 3; k < n; ++k) assert_filled(ptrs[k], 4096, (unsigned)k);
    assert_filled(big, 3 * block, 7);
    assert_context_balanced();

    assert_int_equal(dao_allocator_free(a, big), DAO_OK);
    for (k = 3; k < n; ++k) assert_int_equal(dao_allocator_free(a, ptrs[k]), DAO_OK);
    assert_int_equal(dao_allocator_destroy(a), DAO_OK);
    assert_no_vmm_left();
  }
}

/* The same with the default's mappings (20 MiB pages and larger): the
   device still fills to its last granule, every mapping is unmapped whole
   (the fake refuses anything else), and the data stays. */
static void test_fake_caching_exhaustion_default(void **state) {
  enum { kMax = 64 };
  const size_t block = 4 * MiB;
  dao_allocator *a = NULL;
  void *ptrs[kMax];
  size_t n = 0, k, released = 0;
  dao_status s = DAO_OK;
  (void)state;
  if (!expect_vmm) skip();
  trim_place_defaults();
  assert_int_equal(dao_allocator_create(dao_place_cuda(0), "caching", NULL, &a), DAO_OK);
  while (n < kMax && (s = dao_allocator_alloc(a, block, DAO_STREAM_DEFAULT, &ptrs[n])) == DAO_OK) {
    fill(ptrs[n], 4096, (unsigned)n);
    ++n;
  }
  assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
  assert_int_equal(n, device_capacity / block);
  assert_int_equal(fake.used(0), device_capacity);
  assert_int_equal(segments_of(a).mapped, device_capacity);
  /* Every other block freed: a trim gives back only mappings no live block
     touches, whole, and reserved memory stays what the driver holds. */
  for (k = 0; k < n; k += 2) assert_int_equal(dao_allocator_free(a, ptrs[k]), DAO_OK);
  assert_int_equal(dao_allocator_trim(a, &released), DAO_OK);
  assert_int_equal(fake.used(0), device_capacity - released);
  assert_int_equal(segments_of(a).mapped, fake.used(0));
  for (k = 1; k < n; k += 2) assert_filled(ptrs[k], 4096, (unsigned)k);
  for (k = 1; k < n; k += 2) assert_int_equal(dao_allocator_free(a, ptrs[k]), DAO_OK);
  assert_int_equal(dao_allocator_trim(a, NULL), DAO_OK);
  assert_int_equal(fake.used(0), 0);
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
  assert_no_vmm_left();
  assert_context_balanced();
}

/* Driver failures while mapping: the error names the call, and what the
   failed mapping had mapped, and the mappings made before it for the same
   request, are undone. */
static void test_fake_vmm_driver_errors(void **state) {
  static const struct {
    const char *call;
    int skip;
    int result;
    dao_status status;
    const char *message;
  } cases[] = {
      {"cuMemMap", 2, CUDA_ERROR_ILLEGAL_ADDRESS, DAO_ERR_BACKEND,
       "cuda:0: cuMemMap failed while mapping "},
      {"cuMemCreate", 1, CUDA_ERROR_INVALID_VALUE, DAO_ERR_BACKEND,
       "cuda:0: cuMemCreate failed while mapping "},
      {"cuMemSetAccess", 0, CUDA_ERROR_INVALID_DEVICE, DAO_ERR_BACKEND,
       "cuda:0: cuMemSetAccess failed while mapping "},
      {"cuMemAddressReserve", 0, CUDA_ERROR_INVALID_VALUE, DAO_ERR_BACKEND,
       "cuda:0: cuMemAddressReserve("},
      /* Out of memory once: the caching strategy retries, and succeeds. */
      {"cuMemCreate", 1, CUDA_ERROR_OUT_OF_MEMORY, DAO_OK, NULL},
  };
  size_t i;
  (void)state;
  if (!expect_vmm) skip();
  trim_place_defaults();
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    dao_allocator *a = NULL;
    void *p = NULL;
    /* 8 MiB in four mappings (map_chunk), so that a call can fail after
       others succeeded: those are undone too. */
    assert_int_equal(dao_allocator_create(dao_place_cuda(0), "caching", "map_chunk=2MiB", &a),
                     DAO_OK);
    fake.fail_call(cases[i].call, cases[i].skip, cases[i].result);
    assert_int_equal(dao_allocator_alloc(a, 8 * MiB, DAO_STREAM_DEFAULT, &p), cases[i].status);
    fake.fail_call(NULL, 0, 0);
    assert_context_balanced();
    if (cases[i].message != NULL) {
      assert_null(p);
      assert_contains(dao_last_error(), cases[i].message);
      assert_int_equal(fake.live_mappings(), 0);
      assert_int_equal(fake.live_handles(), 0);
      assert_int_equal(fake.used(0), 0);
      /* The allocator still works. */
      assert_int_equal(dao_allocator_alloc(a, 8 * MiB, DAO_STREAM_DEFAULT, &p), DAO_OK);
    }
    fill(p, 8 * MiB, 3);
    assert_filled(p, 8 * MiB, 3);
    assert_int_equal(dao_allocator_free(a, p), DAO_OK);
    assert_int_equal(dao_allocator_destroy(a), DAO_OK);
    assert_no_vmm_left();
  }
}

struct trim_job {
  dao_allocator *a;
  size_t released;
  dao_status status;
};

static void *trim_main(void *arg) {
  struct trim_job *job = (struct trim_job *)arg;
  job->status = dao_allocator_trim(job->a, &job->released);
  return NULL;
}

/* Unmapping waits for work queued before the free: a copy out of a freed
   block, held up on its stream, still reads the block's data, although a
   trim unmaps the block meanwhile (without the wait the fake's copy would
   read unmapped pages and crash). */
static void test_fake_vmm_unmap_waits(void **state) {
  const size_t bytes = 8 * MiB;
  const struct timespec pause = {0, 50 * 1000 * 1000};
  dao_allocator *a = NULL;
  dao_stream stream = NULL;
  void *p = NULL;
  unsigned char *out = (unsigned char *)malloc(bytes);
  struct gate g;
  struct trim_job job = {NULL, 0, DAO_ERR_BACKEND};
  pthread_t thread;
  (void)state;
  assert_non_null(out);
  if (!expect_vmm) {
    free(out);
    skip();
  }
  trim_place_defaults();
  memset(out, 0, bytes);
  gate_init(&g);
  assert_int_equal(dao_allocator_create(dao_place_cuda(0), "caching", NULL, &a), DAO_OK);
  assert_int_equal(dao_stream_create(dao_place_cuda(0), &stream), DAO_OK);
  assert_int_equal(dao_allocator_alloc(a, bytes, stream, &p), DAO_OK);
  fill(p, bytes, 11);
  assert_int_equal(dao_launch_host_func(stream, gate_fn, &g), DAO_OK);
  assert_int_equal(dao_memcpy_async(out, p, bytes, stream), DAO_OK);
  gate_wait_entered(&g);
  /* Stream-ordered: the block is free for the stream's later work at once. */
  assert_int_equal(dao_allocator_free(a, p), DAO_OK);
  job.a = a;
  assert_int_equal(pthread_create(&thread, NULL, trim_main, &job), 0);
  nanosleep(&pause, NULL); /* time for a trim that does not wait to unmap */
  gate_open(&g);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(job.status, DAO_OK);
  assert_true(job.released >= bytes);
  assert_int_equal(dao_stream_synchronize(stream), DAO_OK);
  assert_filled(out, bytes, 11);
  assert_int_equal(dao_stream_destroy(stream), DAO_OK);
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
  assert_no_vmm_left();
  assert_context_balanced();
  gate_destroy(&g);
  free(out);
}

/* The fake holds libdao to the real driver's rules: cuMemUnmap takes only
   the exact range of one cuMemMap call, memory lives while mapped, and a
   reservation with mappings cannot be freed. */
static void test_fake_vmm_driver_rules(void **state) {
  void *ctx = NULL, *popped = NULL;
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp prop;
  CUmemAccessDesc access;
  (void)state;
  if (!expect_vmm) skip();
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  assert_int_equal(fake.primary_ctx_retain(&ctx, 1), 0);
  assert_int_equal(fake.ctx_push(ctx), 0);

  assert_int_equal(fake.mem_address_reserve(&base, 8 * MiB, GRANULE, 0, 0), CUDA_SUCCESS);
  assert_int_equal(base % GRANULE, 0);
  assert_int_equal(fake.mem_create(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
  assert_int_equal(fake.used(1), 4 * MiB);
  assert_int_equal(fake.mem_map(base, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
  assert_int_equal(fake.mem_map(base + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_release(h), CUDA_SUCCESS);
  assert_int_equal(fake.mem_release(h), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.used(1), 4 * MiB); /* the mapping keeps it */
  assert_int_equal(fake.mem_set_access(base, 6 * MiB, &access, 1), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_set_access(base, 4 * MiB, &access, 1), CUDA_SUCCESS);
  fill((void *)(uintptr_t)base, 4 * MiB, 5);
  assert_filled((void *)(uintptr_t)base, 4 * MiB, 5);
  /* Not a sub-range, not a larger one. */
  assert_int_equal(fake.mem_unmap(base, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_unmap(base + 2 * MiB, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_unmap(base, 8 * MiB), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_address_free(base, 8 * MiB), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_unmap(base, 4 * MiB), CUDA_SUCCESS);
  assert_int_equal(fake.used(1), 0);
  assert_int_equal(fake.mem_address_free(base, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(fake.mem_address_free(base, 8 * MiB), CUDA_SUCCESS);
  assert_no_vmm_left();

  assert_int_equal(fake.ctx_pop(&popped), 0);
  assert_int_equal(fake.primary_ctx_release(1), 0);
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

/* The caching strategy on a real GPU: expandable segments where the device
   has virtual memory management; a trim that unmaps the pages between two
   blocks leaves the blocks' data alone. */
static void test_driver_caching(void **state) {
  const size_t bytes = 6 * MiB + 3;
  dao_allocator *a = NULL;
  const char *config = NULL;
  dao_stream s = NULL;
  dao_snapshot *snap = NULL;
  dao_segment_info info;
  void *d[3] = {NULL, NULL, NULL};
  unsigned char *in = NULL, *out = NULL;
  size_t count = 0, k;
  (void)state;
  if (driver_devices == 0) skip();
  assert_int_equal(dao_allocator_create(dao_place_cuda(0), "caching", NULL, &a), DAO_OK);
  assert_int_equal(dao_allocator_info(a, NULL, NULL, &config), DAO_OK);
  print_message("caching on cuda:0: %s\n", config);
  assert_int_equal(dao_stream_create(dao_place_cuda(0), &s), DAO_OK);
  assert_int_equal(dao_alloc(dao_place_cuda_pinned(), bytes, (void **)&in), DAO_OK);
  assert_int_equal(dao_alloc(dao_place_cuda_pinned(), bytes, (void **)&out), DAO_OK);
  for (k = 0; k < bytes; ++k) in[k] = (unsigned char)(k * 29 + 3);
  memset(out, 0, bytes);
  for (k = 0; k < 3; ++k) assert_int_equal(dao_allocator_alloc(a, bytes, s, &d[k]), DAO_OK);
  assert_int_equal(dao_memcpy_async(d[0], in, bytes, s), DAO_OK);
  assert_int_equal(dao_memcpy_async(d[2], in, bytes, s), DAO_OK);
  assert_int_equal(dao_allocator_free(a, d[1]), DAO_OK);
  assert_int_equal(dao_allocator_trim(a, NULL), DAO_OK);
  assert_int_equal(dao_memcpy_async(out, d[2], bytes, s), DAO_OK);
  assert_int_equal(dao_stream_synchronize(s), DAO_OK);
  assert_memory_equal(out, in, bytes);
  memset(out, 0, bytes);
  assert_int_equal(dao_memcpy_async(out, d[0], bytes, s), DAO_OK);
  assert_int_equal(dao_stream_synchronize(s), DAO_OK);
  assert_memory_equal(out, in, bytes);

  assert_int_equal(dao_allocator_snapshot(a, &snap), DAO_OK);
  assert_int_equal(dao_snapshot_segment_count(snap, &count), DAO_OK);
  assert_true(count >= 1);
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  assert_int_equal(dao_snapshot_segment(snap, 0, &info), DAO_OK);
  assert_int_equal(info.expandable, strstr(config, "expandable_segments=true") != NULL);
  assert_int_equal(dao_snapshot_destroy(snap), DAO_OK);

  assert_int_equal(dao_allocator_free(a, d[0]), DAO_OK);
  assert_int_equal(dao_allocator_free(a, d[2]), DAO_OK);
  assert_int_equal(dao_stream_destroy(s), DAO_OK);
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
  assert_int_equal(dao_free(dao_place_cuda_pinned(), in), DAO_OK);
  assert_int_equal(dao_free(dao_place_cuda_pinned(), out), DAO_OK);
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
  if (strcmp(mode, "fake") == 0 || strcmp(mode, "fake-no-vmm") == 0) {
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
        cmocka_unit_test(test_fake_caching_segments),
        cmocka_unit_test(test_fake_caching_exhaustion),
        cmocka_unit_test(test_fake_caching_exhaustion_default),
        cmocka_unit_test(test_fake_vmm_driver_errors),
        cmocka_unit_test(test_fake_vmm_unmap_waits),
        cmocka_unit_test(test_fake_vmm_driver_rules),
        cmocka_unit_test(test_fake_retained_once),
    };
    expect_vmm = strcmp(mode, "fake") == 0;
    return cmocka_run_group_tests_name(
        expect_vmm ? "cuda_backend_fake" : "cuda_backend_fake_no_vmm", tests, setup_fake, NULL);
  }
  if (strcmp(mode, "driver") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_counts_agree),  cmocka_unit_test(test_driver_alloc_free),
        cmocka_unit_test(test_driver_out_of_memory), cmocka_unit_test(test_driver_streams),
        cmocka_unit_test(test_driver_caching),
    };
    return cmocka_run_group_tests_name("cuda_backend_driver", tests, setup_driver, NULL);
  }
  fprintf(stderr, "usage: %s none [EXPECTED-REASON] | fake | fake-no-vmm | driver\n", argv[0]);
  return 2;
}
