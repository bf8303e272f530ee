/* Recycle pools and collections through the public API (recycle.h): every
 * function with good and bad input, lazy creation up to max_buffers and then
 * waiting, timeouts, close while threads wait in acquire and in take, take
 * draining a closed pool, FIFO order and sequence numbers, a LIFO free list, reference counts
 * with several holders on several threads, statistics equal to what the
 * test counts, data that stays in a buffer from fill to operate, buffers on
 * the CPU and on SIM devices, a preallocation that does not fit a small SIM
 * device, collections, and a steady state that allocates nothing (malloc is
 * interposed in this executable and counted).
 *
 * Runs with DAO_SIM_DEVICES=64MiB,4MiB: SIM device 0 has room, device 1 is
 * small. No check depends on timing: a thread that must be waiting is
 * recognised by the pool's wait counters. */
#define _GNU_SOURCE /* __libc_* declarations below; pthread barriers */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "dao_test.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static dao_place big_sim(void) { return dao_place_sim(0); }
static dao_place small_sim(void) { return dao_place_sim(1); }

static int setup(void **state) {
  int sims = 0;
  size_t total0 = 0, total1 = 0;
  (void)state;
  if (dao_place_device_count(DAO_PLACE_SIM, &sims) != DAO_OK || sims != 2 ||
      dao_place_memory_info(big_sim(), NULL, &total0) != DAO_OK ||
      dao_place_memory_info(small_sim(), NULL, &total1) != DAO_OK || total0 != 64 * MIB ||
      total1 != 4 * MIB) {
    fprintf(stderr, "test_recycle expects DAO_SIM_DEVICES=64MiB,4MiB\n");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------
 * Allocation counting: malloc and friends of this executable forward to
 * glibc's own entry points and count calls while `counting` is set. The
 * library (and libstdc++) resolve malloc to these.
 *
 * The sanitizers (ASan, TSan) interpose malloc themselves, and a second
 * definition here would fight theirs: under them the counting is left out
 * and only the place's own counters are checked.
 * ---------------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DAO_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DAO_TEST_SANITIZED 1
#endif
#endif

static int counting; /* read and written with __atomic builtins */
static unsigned long allocations;
static unsigned long deallocations;

#ifndef DAO_TEST_SANITIZED
#define COUNT_ALLOCATIONS 1
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __libc_free(void *p);

static void count_allocation(void) {
  if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
    __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
  count_allocation();
  return __libc_malloc(size);
}
void *calloc(size_t count, size_t size) {
  count_allocation();
  return __libc_calloc(count, size);
}
void *realloc(void *p, size_t size) {
  count_allocation();
  return __libc_realloc(p, size);
}
void *memalign(size_t alignment, size_t size) {
  count_allocation();
  return __libc_memalign(alignment, size);
}
void *aligned_alloc(size_t alignment, size_t size) {
  count_allocation();
  return __libc_memalign(alignment, size);
}
void *valloc(size_t size) {
  count_allocation();
  return __libc_valloc(size);
}
void *pvalloc(size_t size) {
  count_allocation();
  return __libc_pvalloc(size);
}
int posix_memalign(void **out, size_t alignment, size_t size) {
  void *p;
  count_allocation();
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
  p = __libc_memalign(alignment, size);
  if (p == NULL && size != 0) return ENOMEM;
  *out = p;
  return 0;
}
void free(void *p) {
  if (p != NULL && __atomic_load_n(&counting, __ATOMIC_RELAXED))
    __atomic_fetch_add(&deallocations, 1, __ATOMIC_RELAXED);
  __libc_free(p);
}
#endif

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static const size_t shape_1d[1] = {1024};

/* A pool of float[1024] on `place`; asserts success. */
static dao_recycle_pool *make_pool(dao_place place, size_t max_buffers, size_t preallocate,
                                   const char *config) {
  dao_recycle_pool *pool = NULL;
  assert_ok(dao_recycle_create(place, sizeof(float), 1, shape_1d, max_buffers, preallocate, config,
                               &pool));
  assert_non_null(pool);
  return pool;
}

static dao_recycle_stats stats_of(dao_recycle_pool *pool) {
  dao_recycle_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_recycle_get_stats(pool, &s));
  /* Every buffer is in exactly one state. */
  assert_int_equal(s.created, s.free + s.queued + s.held);
  return s;
}

static void *data_of(dao_buffer *b) {
  void *p = NULL;
  assert_ok(dao_buffer_data(b, &p));
  assert_non_null(p);
  return p;
}

static uint64_t sequence_of(dao_buffer *b) {
  uint64_t s = 0;
  assert_ok(dao_buffer_sequence(b, &s));
  return s;
}

static dao_buffer *acquire_now(dao_recycle_pool *pool) {
  dao_buffer *b = NULL;
  assert_ok(dao_recycle_acquire(pool, 0, &b));
  assert_non_null(b);
  return b;
}

static dao_buffer *take_now(dao_recycle_pool *pool) {
  dao_buffer *b = NULL;
  assert_ok(dao_recycle_take(pool, 0, &b));
  assert_non_null(b);
  return b;
}

static void yield_a_little(void) { sched_yield(); }

static void sleep_ms(int ms) {
  struct timespec t;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (long)(ms % 1000) * 1000000L;
  while (nanosleep(&t, &t) != 0) {
  }
}

/* What pools hold on a place: the library's own memory, apart from the
 * caller's dao_used() (issue 20). */
static size_t used_on(dao_place place) {
  size_t bytes = 0;
  assert_ok(dao_used_internal(place, &bytes));
  return bytes;
}

/* Handles that are not handles: zeroed memory of the right size. */
static union {
  char bytes[512];
  uint64_t words[64];
  long double align;
} garbage;

#define GARBAGE_POOL ((dao_recycle_pool *)(void *)garbage.bytes)
#define GARBAGE_BUFFER ((dao_buffer *)(void *)garbage.bytes)
#define GARBAGE_COLLECTION ((dao_collection *)(void *)garbage.bytes)
#define SENTINEL_POOL ((dao_recycle_pool *)(uintptr_t)0x5e171e1)

/* ------------------------------------------------------------------------
 * Creation
 * ---------------------------------------------------------------------- */

static void create_bad_input(void **state) {
  const size_t two_d[2] = {16, 16};
  const size_t zero_extent[2] = {16, 0};
  const size_t huge[2] = {SIZE_MAX / 4, 8};
  const size_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  dao_recycle_pool *pool = SENTINEL_POOL;
  dao_place cpu = dao_place_cpu();
  dao_place bad_kind;
  int cuda = 0;
  (void)state;

  assert_failure_mentions(dao_recycle_create(cpu, 4, 1, shape_1d, 4, 0, NULL, NULL),
                          DAO_ERR_INVALID_ARGUMENT, "out");
  assert_failure_mentions(dao_recycle_create(cpu, 0, 1, shape_1d, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "element_size");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 0, shape_1d, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "ndim");
  assert_failure_mentions(dao_recycle_create(cpu, 4, -1, shape_1d, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "ndim");
  assert_failure_mentions(
      dao_recycle_create(cpu, 4, DAO_RECYCLE_MAX_DIMS + 1, nine, 4, 0, NULL, &pool),
      DAO_ERR_INVALID_ARGUMENT, "ndim");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, NULL, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "shape");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, zero_extent, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "shape[1]");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, huge, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "overflows");
  assert_failure_mentions(dao_recycle_create(cpu, SIZE_MAX / 2, 1, two_d, 4, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "overflows");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, two_d, 0, 0, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "max_buffers");
  assert_failure_mentions(
      dao_recycle_create(cpu, 4, 2, two_d, ((size_t)1 << 20) + 1, 0, NULL, &pool),
      DAO_ERR_INVALID_ARGUMENT, "max_buffers");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, two_d, 4, 5, NULL, &pool),
                          DAO_ERR_INVALID_ARGUMENT, "preallocate");

  /* Config: unknown keys, malformed values, malformed strings. */
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "bogus=1", &pool),
                          DAO_ERR_INVALID_ARGUMENT, "bogus");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "spin=-1", &pool),
                          DAO_ERR_INVALID_ARGUMENT, "spin");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "spin=lots", &pool),
                          DAO_ERR_INVALID_ARGUMENT, "spin");
  assert_failure_mentions(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "spin=99999999999", &pool),
                          DAO_ERR_INVALID_ARGUMENT, "spin");
  assert_status(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "name=", &pool),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "name", &pool),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_create(cpu, 4, 2, two_d, 4, 0, "name=a,name=b", &pool),
                DAO_ERR_INVALID_ARGUMENT);

  /* Places that do not exist. */
  assert_status(dao_recycle_create(dao_place_sim(7), 4, 2, two_d, 4, 0, NULL, &pool),
                DAO_ERR_NO_DEVICE);
  assert_status(dao_recycle_create(dao_place_sim(-1), 4, 2, two_d, 4, 0, NULL, &pool),
                DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
  if (cuda == 0) {
    assert_status(dao_recycle_create(dao_place_cuda(0), 4, 2, two_d, 4, 0, NULL, &pool),
                  DAO_ERR_NO_DEVICE);
  }
  memset(&bad_kind, 0, sizeof bad_kind);
  {
    int k = 42; /* a kind no version has: C may pass any int */
    memcpy(&bad_kind.kind, &k, sizeof k);
  }
  assert_status(dao_recycle_create(bad_kind, 4, 2, two_d, 4, 0, NULL, &pool),
                DAO_ERR_INVALID_ARGUMENT);

  /* Nothing was created: out is unchanged. */
  assert_ptr_equal(pool, SENTINEL_POOL);
}

static void create_and_describe(void **state) {
  const size_t shape[3] = {3, 5, 7};
  const size_t *got_shape = NULL;
  dao_recycle_pool *pool = NULL;
  dao_buffer *b;
  dao_place place;
  size_t element = 0, bytes = 0;
  int ndim = 0;
  void *p;
  dao_recycle_stats s;
  (void)state;

  assert_ok(dao_recycle_create(dao_place_cpu(), 8, 3, shape, 4, 2, "name=cube,spin=0", &pool));
  s = stats_of(pool);
  assert_int_equal(s.created, 2); /* preallocated */
  assert_int_equal(s.free, 2);
  assert_int_equal(s.peak_free, 2);

  b = acquire_now(pool);
  assert_ok(dao_buffer_shape(b, &ndim, &got_shape));
  assert_int_equal(ndim, 3);
  assert_int_equal(got_shape[0], 3);
  assert_int_equal(got_shape[1], 5);
  assert_int_equal(got_shape[2], 7);
  assert_ok(dao_buffer_shape(b, NULL, NULL)); /* both optional */
  assert_ok(dao_buffer_size(b, &element, &bytes));
  assert_int_equal(element, 8);
  assert_int_equal(bytes, 8 * 3 * 5 * 7);
  assert_ok(dao_buffer_size(b, NULL, NULL));
  assert_ok(dao_buffer_place(b, &place));
  assert_int_equal(place.kind, DAO_PLACE_CPU);
  assert_int_equal(place.device, 0);
  p = data_of(b);
  assert_true(dao_test_is_aligned(p, 256));
  assert_true(sequence_of(b) == UINT64_MAX); /* not submitted since acquired */
  memset(p, 0xab, bytes);                    /* the whole buffer is usable */
  assert_ok(dao_buffer_release(b));

  /* The name appears in messages. */
  assert_ok(dao_recycle_close(pool));
  assert_failure_mentions(dao_recycle_acquire(pool, 0, &b), DAO_ERR_CLOSED, "'cube'");
  assert_ok(dao_recycle_destroy(pool));

  /* Config NULL, "" and a trailing comma mean defaults; one dimension of
     one element is a valid shape. */
  {
    const size_t one[1] = {1};
    assert_ok(dao_recycle_create(dao_place_cpu(), 1, 1, one, 1, 1, NULL, &pool));
    assert_ok(dao_recycle_destroy(pool));
    assert_ok(dao_recycle_create(dao_place_cpu(), 1, 1, one, 1, 0, "", &pool));
    assert_ok(dao_recycle_destroy(pool));
    assert_ok(dao_recycle_create(dao_place_cpu(), 1, 1, one, 1, 0, "spin=100,", &pool));
    assert_ok(dao_recycle_destroy(pool));
  }
  /* DAO_RECYCLE_MAX_DIMS dimensions. */
  {
    const size_t eight[DAO_RECYCLE_MAX_DIMS] = {2, 2, 2, 2, 2, 2, 2, 2};
    assert_ok(
        dao_recycle_create(dao_place_cpu(), 2, DAO_RECYCLE_MAX_DIMS, eight, 1, 1, NULL, &pool));
    b = acquire_now(pool);
    assert_ok(dao_buffer_size(b, NULL, &bytes));
    assert_int_equal(bytes, 2 * 256);
    assert_ok(dao_buffer_release(b));
    assert_ok(dao_recycle_destroy(pool));
  }
}

/* A preallocation that does not fit the 4 MiB SIM device fails with
   DAO_ERR_OUT_OF_MEMORY and keeps nothing; lazily created buffers stop at
   the device's capacity and the pool keeps working with those it has. */
static void sim_out_of_memory(void **state) {
  const size_t mib_floats[1] = {MIB / sizeof(float)};
  dao_recycle_pool *pool = SENTINEL_POOL;
  dao_buffer *held[8];
  dao_buffer *b = NULL;
  size_t before = used_on(small_sim());
  size_t n = 0, i;
  dao_status st;
  (void)state;

  assert_failure_mentions(
      dao_recycle_create(small_sim(), sizeof(float), 1, mib_floats, 8, 8, NULL, &pool),
      DAO_ERR_OUT_OF_MEMORY, "could not make buffer");
  assert_ptr_equal(pool, SENTINEL_POOL);
  assert_int_equal(used_on(small_sim()), before);

  /* Lazily: acquire until the device is full. */
  assert_ok(
      dao_recycle_create(small_sim(), sizeof(float), 1, mib_floats, 8, 0, "name=small", &pool));
  for (;;) {
    st = dao_recycle_acquire(pool, 0, &b);
    if (st != DAO_OK) break;
    held[n++] = b;
    assert_true(n < 8); /* 8 MiB of buffers cannot fit in 4 MiB */
  }
  assert_int_equal(st, DAO_ERR_OUT_OF_MEMORY);
  assert_non_null(strstr(dao_last_error(), "pool 'small' could not make buffer"));
  assert_null(b);
  assert_true(n >= 1);
  assert_int_equal(stats_of(pool).created, n);
  assert_int_equal(stats_of(pool).held, n);
  /* The pool keeps working with the buffers it has. */
  assert_ok(dao_buffer_release(held[n - 1]));
  held[n - 1] = acquire_now(pool);
  assert_int_equal(stats_of(pool).created, n);
  for (i = 0; i < n; ++i) assert_ok(dao_buffer_release(held[i]));
  assert_ok(dao_recycle_destroy(pool));
  assert_int_equal(used_on(small_sim()), before);
}

/* ------------------------------------------------------------------------
 * Bad handles
 * ---------------------------------------------------------------------- */

static void pool_functions_bad_input(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 2, 1, NULL);
  dao_buffer *b = (dao_buffer *)(uintptr_t)0x1234;
  dao_recycle_stats s;
  dao_recycle_stats before;
  (void)state;

  /* acquire: out is set to NULL on failure. */
  assert_failure_mentions(dao_recycle_acquire(NULL, 0, &b), DAO_ERR_INVALID_ARGUMENT, "pool");
  assert_null(b);
  b = (dao_buffer *)(uintptr_t)0x1234;
  assert_failure_mentions(dao_recycle_acquire(GARBAGE_POOL, 0, &b), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_recycle_pool");
  assert_null(b);
  assert_failure_mentions(dao_recycle_acquire(pool, 0, NULL), DAO_ERR_INVALID_ARGUMENT, "out");
  b = (dao_buffer *)(uintptr_t)0x1234;
  assert_failure_mentions(dao_recycle_acquire(pool, NAN, &b), DAO_ERR_INVALID_ARGUMENT, "NaN");
  assert_null(b);

  /* take */
  b = (dao_buffer *)(uintptr_t)0x1234;
  assert_status(dao_recycle_take(NULL, 0, &b), DAO_ERR_INVALID_ARGUMENT);
  assert_null(b);
  b = (dao_buffer *)(uintptr_t)0x1234;
  assert_status(dao_recycle_take(GARBAGE_POOL, 0, &b), DAO_ERR_INVALID_ARGUMENT);
  assert_null(b);
  assert_status(dao_recycle_take(pool, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_take(pool, NAN, &b), DAO_ERR_INVALID_ARGUMENT);

  /* submit */
  b = acquire_now(pool);
  assert_status(dao_recycle_submit(NULL, b), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_submit(GARBAGE_POOL, b), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_recycle_submit(pool, NULL), DAO_ERR_INVALID_ARGUMENT, "buffer");
  assert_failure_mentions(dao_recycle_submit(pool, GARBAGE_BUFFER), DAO_ERR_INVALID_ARGUMENT,
                          "not a dao_buffer");
  assert_ok(dao_buffer_release(b));

  /* close, get_stats, destroy */
  assert_status(dao_recycle_close(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_close(GARBAGE_POOL), DAO_ERR_INVALID_ARGUMENT);
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_status(dao_recycle_get_stats(NULL, &s), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_get_stats(GARBAGE_POOL, &s), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_get_stats(pool, NULL), DAO_ERR_INVALID_ARGUMENT);
  s.struct_size = sizeof s - 1;
  assert_failure_mentions(dao_recycle_get_stats(pool, &s), DAO_ERR_INVALID_ARGUMENT, "struct_size");
  s.struct_size = 0;
  assert_status(dao_recycle_get_stats(pool, &s), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_destroy(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_recycle_destroy(GARBAGE_POOL), DAO_ERR_INVALID_ARGUMENT);

  /* A caller built against a newer, larger struct: the bytes beyond ours are
   * left as they are (never written past our struct). */
  {
    unsigned char big[sizeof(dao_recycle_stats) + 32];
    dao_recycle_stats *bs = (dao_recycle_stats *)(void *)big;
    size_t i;
    memset(big, 0xee, sizeof big);
    bs->struct_size = sizeof big;
    assert_ok(dao_recycle_get_stats(pool, bs));
    assert_int_equal(bs->struct_size, sizeof big);
    for (i = sizeof(dao_recycle_stats); i < sizeof big; ++i) assert_int_equal(big[i], 0xee);
    assert_int_equal(bs->created, 1);
  }

  /* None of that changed the pool. */
  before = stats_of(pool);
  assert_int_equal(before.acquired, 1);
  assert_int_equal(before.free, 1);
  assert_int_equal(before.held, 0);
  assert_ok(dao_recycle_destroy(pool));
}

static void buffer_functions_bad_input(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 2, 0, NULL);
  dao_buffer *b = acquire_now(pool);
  void *p = NULL;
  const size_t *shape = NULL;
  dao_place place;
  uint64_t sequence;
  size_t bytes;
  int ndim;
  (void)state;

  assert_status(dao_buffer_retain(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_buffer_retain(GARBAGE_BUFFER), DAO_ERR_INVALID_ARGUMENT,
                          "not a dao_buffer");
  assert_status(dao_buffer_release(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_release(GARBAGE_BUFFER), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_data(NULL, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_data(GARBAGE_BUFFER, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_data(b, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_shape(NULL, &ndim, &shape), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_shape(GARBAGE_BUFFER, &ndim, &shape), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_size(NULL, NULL, &bytes), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_size(GARBAGE_BUFFER, NULL, &bytes), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_place(NULL, &place), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_place(GARBAGE_BUFFER, &place), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_place(b, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_sequence(NULL, &sequence), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_sequence(GARBAGE_BUFFER, &sequence), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_buffer_sequence(b, NULL), DAO_ERR_INVALID_ARGUMENT);
  /* A pointer to the pool is not a buffer either. */
  assert_status(dao_buffer_release((dao_buffer *)(void *)pool), DAO_ERR_INVALID_ARGUMENT);

  assert_int_equal(stats_of(pool).held, 1);
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_recycle_destroy(pool));
}

/* ------------------------------------------------------------------------
 * States: double release, retain of a free buffer, submit twice, wrong pool
 * ---------------------------------------------------------------------- */

static void misuse_changes_nothing(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 4, 0, "name=states");
  dao_recycle_pool *other = make_pool(dao_place_cpu(), 4, 0, "name=other");
  dao_recycle_stats before, after;
  dao_buffer *a, *b, *t;
  (void)state;

  a = acquire_now(pool);
  b = acquire_now(pool);
  assert_ok(dao_buffer_release(b)); /* b is free now */

  before = stats_of(pool);
  assert_failure_mentions(dao_buffer_release(b), DAO_ERR_INVALID_STATE, "double release");
  assert_failure_mentions(dao_buffer_retain(b), DAO_ERR_INVALID_STATE, "free");
  assert_failure_mentions(dao_recycle_submit(pool, b), DAO_ERR_INVALID_STATE, "free");
  assert_failure_mentions(dao_recycle_submit(other, a), DAO_ERR_INVALID_ARGUMENT,
                          "belongs to pool 'states', not to pool 'other'");
  after = stats_of(pool);
  assert_memory_equal(&before, &after, sizeof before);
  assert_int_equal(stats_of(other).submitted, 0);

  /* Submit twice; release or retain of a queued buffer whose reference went
     into the queue. */
  assert_ok(dao_recycle_submit(pool, a));
  before = stats_of(pool);
  assert_failure_mentions(dao_recycle_submit(pool, a), DAO_ERR_INVALID_STATE, "already queued");
  assert_failure_mentions(dao_buffer_release(a), DAO_ERR_INVALID_STATE, "queued");
  assert_failure_mentions(dao_buffer_retain(a), DAO_ERR_INVALID_STATE, "queued");
  after = stats_of(pool);
  assert_memory_equal(&before, &after, sizeof before);
  assert_int_equal(after.queued, 1);

  t = take_now(pool);
  assert_ptr_equal(t, a);
  assert_ok(dao_buffer_release(t));
  assert_status(dao_buffer_release(t), DAO_ERR_INVALID_STATE);
  after = stats_of(pool);
  assert_int_equal(after.free, 2);
  assert_int_equal(after.held, 0);
  assert_int_equal(after.queued, 0);
  assert_ok(dao_recycle_destroy(pool));
  assert_ok(dao_recycle_destroy(other));
}

/* ------------------------------------------------------------------------
 * Lazy creation, waiting and timeouts
 * ---------------------------------------------------------------------- */

typedef struct {
  dao_recycle_pool *pool;
  double timeout;
  int take; /* 0: acquire, 1: take */
  dao_status status;
  dao_buffer *buffer;
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = (waiter *)arg;
  w->buffer = (dao_buffer *)(uintptr_t)0x1234;
  w->status = w->take ? dao_recycle_take(w->pool, w->timeout, &w->buffer)
                      : dao_recycle_acquire(w->pool, w->timeout, &w->buffer);
  return NULL;
}

/* Returns once the pool has counted `acquires` waiting acquires and `takes`
   waiting takes (they count when they start to wait). */
static void wait_for_waiters(dao_recycle_pool *pool, uint64_t acquires, uint64_t takes) {
  for (;;) {
    dao_recycle_stats s = stats_of(pool);
    if (s.acquire_waits >= acquires && s.take_waits >= takes) return;
    yield_a_little();
  }
}

static void lazy_creation_then_waiting(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 4, 0, "name=lazy");
  dao_buffer *b[4], *extra = (dao_buffer *)(uintptr_t)0x1234;
  dao_recycle_stats s;
  waiter w;
  pthread_t thread;
  int i;
  (void)state;

  s = stats_of(pool);
  assert_int_equal(s.created, 0);
  for (i = 0; i < 4; ++i) {
    b[i] = acquire_now(pool);
    s = stats_of(pool);
    assert_int_equal(s.created, (uint64_t)i + 1); /* one at a time, when needed */
    assert_int_equal(s.held, (uint64_t)i + 1);
    assert_int_equal(s.free, 0);
  }

  /* All exist and are out: try once, then a short timeout. */
  assert_failure_mentions(dao_recycle_acquire(pool, 0, &extra), DAO_ERR_TIMEOUT, "'lazy'");
  assert_null(extra);
  s = stats_of(pool);
  assert_int_equal(s.timeouts, 1);
  assert_int_equal(s.acquire_waits, 0); /* trying once is not waiting */
  extra = (dao_buffer *)(uintptr_t)0x1234;
  assert_failure_mentions(dao_recycle_acquire(pool, 0.02, &extra), DAO_ERR_TIMEOUT, "0.02 s");
  assert_null(extra);
  s = stats_of(pool);
  assert_int_equal(s.timeouts, 2);
  assert_int_equal(s.acquire_waits, 1);
  assert_true(s.acquire_wait_ns >= 19000000u); /* waited the whole 20 ms */
  assert_int_equal(s.created, 4);

  /* A thread that waits for ever gets the next released buffer. */
  w.pool = pool;
  w.timeout = -1;
  w.take = 0;
  assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
  wait_for_waiters(pool, 2, 0);
  assert_ok(dao_buffer_release(b[2]));
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(w.status, DAO_OK);
  assert_ptr_equal(w.buffer, b[2]); /* the same buffer, reused */
  s = stats_of(pool);
  assert_int_equal(s.created, 4);
  assert_int_equal(s.acquired, 5);
  assert_int_equal(s.acquire_waits, 2);

  /* A generous timeout is met by a release too. */
  w.timeout = 60;
  assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
  wait_for_waiters(pool, 3, 0);
  assert_ok(dao_buffer_release(b[0]));
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(w.status, DAO_OK);
  assert_ptr_equal(w.buffer, b[0]);

  assert_ok(dao_buffer_release(b[0]));
  assert_ok(dao_buffer_release(b[1]));
  assert_ok(dao_buffer_release(b[2]));
  assert_ok(dao_buffer_release(b[3]));
  s = stats_of(pool);
  assert_int_equal(s.free, 4);
  assert_int_equal(s.timeouts, 2);
  assert_ok(dao_recycle_destroy(pool));
}

static void take_timeouts(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 2, 0, "name=empty");
  dao_buffer *b = (dao_buffer *)(uintptr_t)0x1234;
  dao_recycle_stats s;
  waiter w;
  pthread_t thread;
  (void)state;

  assert_failure_mentions(dao_recycle_take(pool, 0, &b), DAO_ERR_TIMEOUT, "'empty'");
  assert_null(b);
  assert_status(dao_recycle_take(pool, 0.01, &b), DAO_ERR_TIMEOUT);
  s = stats_of(pool);
  assert_int_equal(s.timeouts, 2);
  assert_int_equal(s.take_waits, 1);
  assert_true(s.take_wait_ns >= 9000000u);
  assert_int_equal(s.taken, 0);

  /* A waiting take gets a buffer submitted later. */
  w.pool = pool;
  w.timeout = -1;
  w.take = 1;
  assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
  wait_for_waiters(pool, 0, 2);
  b = acquire_now(pool);
  assert_ok(dao_recycle_submit(pool, b));
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(w.status, DAO_OK);
  assert_ptr_equal(w.buffer, b);
  assert_ok(dao_buffer_release(b));
  s = stats_of(pool);
  assert_int_equal(s.taken, 1);
  assert_int_equal(s.take_waits, 2);
  assert_int_equal(s.timeouts, 2);
  assert_ok(dao_recycle_destroy(pool));
}

/* Threads waiting in acquire and in take when the pool is closed all return
   DAO_ERR_CLOSED; with spin=0 they sleep at once, with the default they may
   still be spinning: both must wake. */
static void close_wakes_waiters_with(const char *config) {
  enum { kAcquirers = 3, kTakers = 3 };
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 1, 0, config);
  dao_buffer *only = acquire_now(pool), *b = (dao_buffer *)(uintptr_t)0x1234;
  waiter w[kAcquirers + kTakers];
  pthread_t threads[kAcquirers + kTakers];
  int i;

  for (i = 0; i < kAcquirers + kTakers; ++i) {
    w[i].pool = pool;
    w[i].timeout = i % 2 == 0 ? -1.0 : 3600.0;
    w[i].take = i >= kAcquirers;
    assert_int_equal(pthread_create(&threads[i], NULL, waiter_main, &w[i]), 0);
  }
  wait_for_waiters(pool, kAcquirers, kTakers);
  /* Not needed for correctness: gives the waiters time to fall asleep, so
     that the sleeping path is what is usually tested. */
  sleep_ms(20);
  assert_ok(dao_recycle_close(pool));
  for (i = 0; i < kAcquirers + kTakers; ++i) {
    assert_int_equal(pthread_join(threads[i], NULL), 0);
    assert_int_equal(w[i].status, DAO_ERR_CLOSED);
    assert_null(w[i].buffer);
  }
  assert_int_equal(stats_of(pool).timeouts, 0);

  /* Closed: acquire is refused even with a free buffer; submits still
     work, and take drains the queue before it reports DAO_ERR_CLOSED. */
  assert_ok(dao_recycle_submit(pool, only));
  assert_ok(dao_recycle_close(pool)); /* twice is harmless */
  assert_status(dao_recycle_acquire(pool, -1, &b), DAO_ERR_CLOSED);
  assert_null(b);
  assert_ok(dao_recycle_take(pool, -1, &b));
  assert_ptr_equal(b, only);
  assert_ok(dao_buffer_release(b));
  assert_int_equal(stats_of(pool).free, 1);
  assert_failure_mentions(dao_recycle_acquire(pool, 0, &b), DAO_ERR_CLOSED, "closed");
  assert_failure_mentions(dao_recycle_take(pool, -1, &b), DAO_ERR_CLOSED, "queue is empty");
  assert_null(b);
  assert_ok(dao_recycle_destroy(pool));
}

static void close_wakes_sleeping_waiters(void **state) {
  (void)state;
  close_wakes_waiters_with("name=sleepers,spin=0");
}

static void close_wakes_spinning_waiters(void **state) {
  (void)state;
  close_wakes_waiters_with("name=spinners");
}

static void take_drains_after_close(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 4, 0, NULL);
  dao_buffer *b[3], *t = NULL;
  uint64_t i;
  (void)state;

  for (i = 0; i < 3; ++i) {
    b[i] = acquire_now(pool);
    *(float *)data_of(b[i]) = (float)i;
    assert_ok(dao_recycle_submit(pool, b[i]));
  }
  assert_ok(dao_recycle_close(pool));
  for (i = 0; i < 3; ++i) {
    assert_ok(dao_recycle_take(pool, 0, &t));
    assert_ptr_equal(t, b[i]);
    assert_true(*(float *)data_of(t) == (float)i);
    assert_int_equal(sequence_of(t), i);
    assert_ok(dao_buffer_release(t));
  }
  assert_status(dao_recycle_take(pool, 0, &t), DAO_ERR_CLOSED);
  assert_ok(dao_recycle_destroy(pool));
}

/* ------------------------------------------------------------------------
 * Order, sequence numbers, data
 * ---------------------------------------------------------------------- */

static void fifo_order_and_sequence_numbers(void **state) {
  enum { kBuffers = 8 };
  static const int order[kBuffers] = {5, 2, 7, 0, 3, 6, 1, 4};
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), kBuffers, 0, NULL);
  dao_buffer *b[kBuffers];
  uint64_t round, expected = 0;
  int i;
  (void)state;

  for (round = 0; round < 3; ++round) {
    for (i = 0; i < kBuffers; ++i) {
      b[i] = acquire_now(pool);
      assert_true(sequence_of(b[i]) == UINT64_MAX);
      *(int *)data_of(b[i]) = i;
    }
    for (i = 0; i < kBuffers; ++i) assert_ok(dao_recycle_submit(pool, b[order[i]]));
    for (i = 0; i < kBuffers; ++i) {
      dao_buffer *t = take_now(pool);
      assert_ptr_equal(t, b[order[i]]);
      assert_int_equal(*(int *)data_of(t), order[i]);
      assert_int_equal(sequence_of(t), expected); /* the pool's order of submission */
      ++expected;
      assert_ok(dao_buffer_release(t));
    }
  }
  assert_ok(dao_recycle_destroy(pool));
}

/* The free list is last in, first out: an acquire gets the buffer released
   most recently (its memory is still in the caches), on every place. A
   FIFO free list would hand out b[0] first here (issue 22). */
static void free_list_lifo_on(dao_place place) {
  enum { kBuffers = 6 };
  static const int release_order[kBuffers] = {3, 0, 5, 1, 4, 2};
  dao_recycle_pool *pool = make_pool(place, kBuffers, kBuffers, NULL);
  dao_buffer *b[kBuffers];
  int i, round;
  for (round = 0; round < 2; ++round) {
    for (i = 0; i < kBuffers; ++i) b[i] = acquire_now(pool);
    for (i = 0; i < kBuffers; ++i) assert_ok(dao_buffer_release(b[release_order[i]]));
    for (i = kBuffers - 1; i >= 0; --i) {
      dao_buffer *again = acquire_now(pool);
      assert_ptr_equal(again, b[release_order[i]]);
      b[release_order[i]] = again;
    }
    /* One buffer going round: always the same one. */
    for (i = 0; i < kBuffers; ++i) assert_ok(dao_buffer_release(b[i]));
    for (i = 0; i < 4; ++i) {
      dao_buffer *x = acquire_now(pool);
      assert_ptr_equal(x, b[kBuffers - 1]);
      assert_ok(dao_recycle_submit(pool, x));
      assert_ptr_equal(take_now(pool), x);
      assert_ok(dao_buffer_release(x));
    }
  }
  assert_ok(dao_recycle_destroy(pool));
}

static void free_list_lifo(void **state) {
  (void)state;
  free_list_lifo_on(dao_place_cpu());
  free_list_lifo_on(big_sim());
}

/* Releases go through a stash of the releasing thread (up to 16 buffers of
   a pool of 64 small ones) on their way to the free list. Within one thread
   the order stays last in, first out, across the stash's flushes to the
   free list. */
static void stash_keeps_lifo_in_a_thread(void **state) {
  enum { kBuffers = 64, kOut = 40 };
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), kBuffers, kBuffers, NULL);
  dao_buffer *b[kOut];
  int order[kOut], i, round;
  (void)state;
  for (i = 0; i < kOut; ++i) order[i] = (i * 7) % kOut; /* 7 and 40 are coprime */
  for (round = 0; round < 2; ++round) {
    for (i = 0; i < kOut; ++i) b[i] = acquire_now(pool);
    for (i = 0; i < kOut; ++i) assert_ok(dao_buffer_release(b[order[i]]));
    for (i = kOut - 1; i >= 0; --i) {
      dao_buffer *again = acquire_now(pool);
      assert_ptr_equal(again, b[order[i]]);
    }
    for (i = 0; i < kOut; ++i) assert_ok(dao_buffer_release(b[i]));
    assert_int_equal(stats_of(pool).free, kBuffers);
  }
  assert_int_equal(stats_of(pool).created, kBuffers);
  assert_ok(dao_recycle_destroy(pool));
}

typedef struct {
  dao_buffer **buffers;
  int count;
  dao_status status;
} releaser;

static void *releaser_main(void *arg) {
  releaser *r = (releaser *)arg;
  int i;
  r->status = DAO_OK;
  for (i = 0; i < r->count && r->status == DAO_OK; ++i)
    r->status = dao_buffer_release(r->buffers[i]);
  return NULL;
}

static void release_in_a_thread(dao_buffer **buffers, int count) {
  releaser r;
  pthread_t thread;
  r.buffers = buffers;
  r.count = count;
  r.status = DAO_ERR_INTERNAL;
  assert_int_equal(pthread_create(&thread, NULL, releaser_main, &r), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(r.status, DAO_OK);
}

/* Buffers that another thread released and left in its stash (that thread
   has ended) are free, and every acquire can get them: one that tries
   once, one that may wait (it takes them before it sleeps), and a sleeping
   acquire is woken by a release into a stash. A pool of N buffers hands out
   all N. */
static void stashed_buffers_reach_every_thread(void **state) {
  enum { kBuffers = 64, kReleased = 61 }; /* 3 batches of 16 and 13 left in the stash */
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), kBuffers, kBuffers, "name=stash");
  dao_buffer *b[kBuffers], *none = NULL;
  dao_recycle_stats s;
  waiter w;
  pthread_t thread;
  struct timespec pause = {0, 20 * 1000 * 1000};
  int i;
  (void)state;

  for (i = 0; i < kBuffers; ++i) b[i] = acquire_now(pool);
  release_in_a_thread(b, kReleased);
  s = stats_of(pool);
  assert_int_equal(s.free, kReleased);
  assert_int_equal(s.held, kBuffers - kReleased);

  /* Trying once finds them all. */
  for (i = 0; i < kReleased; ++i) b[i] = acquire_now(pool);
  assert_status(dao_recycle_acquire(pool, 0, &none), DAO_ERR_TIMEOUT);
  assert_null(none);
  s = stats_of(pool);
  assert_int_equal(s.free, 0);
  assert_int_equal(s.held, kBuffers);

  /* So do acquires that may wait. */
  release_in_a_thread(b, kReleased);
  for (i = 0; i < kReleased; ++i) {
    b[i] = NULL;
    assert_ok(dao_recycle_acquire(pool, 10.0, &b[i]));
    assert_non_null(b[i]);
  }
  assert_int_equal(stats_of(pool).free, 0);

  /* A sleeping acquire gets the buffer this thread releases next. */
  s = stats_of(pool);
  w.pool = pool;
  w.timeout = -1;
  w.take = 0;
  assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
  wait_for_waiters(pool, s.acquire_waits + 1, 0);
  nanosleep(&pause, NULL); /* past its spinning (at most 50 us), asleep */
  assert_ok(dao_buffer_release(b[7]));
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(w.status, DAO_OK);
  assert_ptr_equal(w.buffer, b[7]);

  for (i = 0; i < kBuffers; ++i) assert_ok(dao_buffer_release(b[i]));
  s = stats_of(pool);
  assert_int_equal(s.free, kBuffers);
  assert_int_equal(s.created, kBuffers);
  assert_ok(dao_recycle_destroy(pool));
}

/* Without spinning (`spin=0`) an acquire's first look at other threads'
   stashes is made under the wait point's mutex, just before it sleeps.
   Taking a stash of several buffers there puts the rest on the free list
   and wakes the other acquires: that wake-up once locked the same mutex
   again and the thread deadlocked on itself (found by running the
   benchmark with spin=0 on one core). */
static void steal_under_the_wait_lock(void **state) {
  enum { kBuffers = 64, kReleased = 61 }; /* 3 batches of 16 and 13 left in the stash */
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), kBuffers, kBuffers, "name=nospin,spin=0");
  dao_buffer *b[kBuffers];
  int i;
  (void)state;
  for (i = 0; i < kBuffers; ++i) b[i] = acquire_now(pool);
  release_in_a_thread(b, kReleased);
  for (i = 0; i < kReleased; ++i) {
    b[i] = NULL;
    assert_ok(dao_recycle_acquire(pool, 10.0, &b[i]));
    assert_non_null(b[i]);
  }
  assert_int_equal(stats_of(pool).free, 0);
  for (i = 0; i < kBuffers; ++i) assert_ok(dao_buffer_release(b[i]));
  assert_int_equal(stats_of(pool).free, kBuffers);
  assert_ok(dao_recycle_destroy(pool));
}

/* The pattern written at fill time is there at take time, on the CPU and
   on a SIM device. */
static void data_persists_on(dao_place place) {
  enum { kBuffers = 6, kRounds = 5 };
  const size_t shape[2] = {64, 33};
  dao_recycle_pool *pool = NULL;
  dao_buffer *b;
  dao_place got;
  size_t bytes = 0;
  unsigned seed = 1;
  int round, i;

  assert_ok(dao_recycle_create(place, sizeof(double), 2, shape, kBuffers, 2, NULL, &pool));
  for (round = 0; round < kRounds; ++round) {
    unsigned first = seed;
    for (i = 0; i < kBuffers; ++i) {
      b = acquire_now(pool);
      assert_ok(dao_buffer_place(b, &got));
      assert_int_equal(got.kind, place.kind);
      assert_int_equal(got.device, place.device);
      assert_ok(dao_buffer_size(b, NULL, &bytes));
      assert_int_equal(bytes, sizeof(double) * 64 * 33);
      assert_true(dao_test_is_aligned(data_of(b), 256));
      dao_test_fill(data_of(b), bytes, seed++);
      assert_ok(dao_recycle_submit(pool, b));
    }
    for (i = 0; i < kBuffers; ++i) {
      b = take_now(pool);
      assert_true(dao_test_check(data_of(b), bytes, first + (unsigned)i));
      assert_ok(dao_buffer_release(b));
    }
  }
  assert_int_equal(stats_of(pool).created, kBuffers);
  assert_ok(dao_recycle_destroy(pool));
}

static void data_persists_cpu(void **state) {
  (void)state;
  data_persists_on(dao_place_cpu());
}

static void data_persists_sim(void **state) {
  size_t before = used_on(big_sim());
  (void)state;
  data_persists_on(big_sim());
  data_persists_on(small_sim());
  assert_int_equal(used_on(big_sim()), before); /* destroy gave everything back */
}

/* ------------------------------------------------------------------------
 * Reference counts
 * ---------------------------------------------------------------------- */

typedef struct {
  dao_buffer *buffer;
  pthread_barrier_t *retained;
  pthread_barrier_t *go_release;
  dao_status retain_status;
  dao_status release_status;
  int pattern_ok;
} holder;

static void *holder_main(void *arg) {
  holder *h = (holder *)arg;
  void *p = NULL;
  h->retain_status = dao_buffer_retain(h->buffer);
  pthread_barrier_wait(h->retained);
  pthread_barrier_wait(h->go_release);
  h->pattern_ok = dao_buffer_data(h->buffer, &p) == DAO_OK && dao_test_check(p, 4096, 77);
  h->release_status = dao_buffer_release(h->buffer);
  return NULL;
}

static void reference_counts_across_threads(void **state) {
  enum { kHolders = 3 };
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 2, 0, NULL);
  pthread_barrier_t retained, go_release;
  holder h[kHolders];
  pthread_t threads[kHolders];
  dao_buffer *b, *t;
  dao_recycle_stats s;
  int i;
  (void)state;

  b = acquire_now(pool);
  dao_test_fill(data_of(b), 4096, 77);
  pthread_barrier_init(&retained, NULL, kHolders + 1);
  pthread_barrier_init(&go_release, NULL, kHolders + 1);
  for (i = 0; i < kHolders; ++i) {
    h[i].buffer = b;
    h[i].retained = &retained;
    h[i].go_release = &go_release;
    assert_int_equal(pthread_create(&threads[i], NULL, holder_main, &h[i]), 0);
  }
  pthread_barrier_wait(&retained); /* 1 + 3 references */
  /* Our own reference goes first: the three holders keep it held. */
  assert_ok(dao_buffer_release(b));
  s = stats_of(pool);
  assert_int_equal(s.held, 1);
  assert_int_equal(s.free, 0);
  pthread_barrier_wait(&go_release);
  for (i = 0; i < kHolders; ++i) {
    assert_int_equal(pthread_join(threads[i], NULL), 0);
    assert_int_equal(h[i].retain_status, DAO_OK);
    assert_int_equal(h[i].release_status, DAO_OK);
    assert_true(h[i].pattern_ok);
  }
  /* The last release returned it to the free list, and only that one. */
  s = stats_of(pool);
  assert_int_equal(s.held, 0);
  assert_int_equal(s.free, 1);
  assert_status(dao_buffer_release(b), DAO_ERR_INVALID_STATE);
  pthread_barrier_destroy(&retained);
  pthread_barrier_destroy(&go_release);

  /* Step by step: retain x3, the buffer stays held until the fourth
     release. */
  b = acquire_now(pool);
  for (i = 0; i < 3; ++i) assert_ok(dao_buffer_retain(b));
  for (i = 0; i < 3; ++i) {
    assert_ok(dao_buffer_release(b));
    assert_int_equal(stats_of(pool).held, 1);
  }
  assert_ok(dao_buffer_release(b));
  s = stats_of(pool);
  assert_int_equal(s.held, 0);
  assert_int_equal(s.free, 1);

  /* "Retain first to keep using the buffer" (recycle.h, submit): the
     retained reference survives the submit and can be dropped while the
     buffer is queued or after it is taken; the buffer is free only when the
     taker's reference is dropped too. */
  b = acquire_now(pool);
  assert_ok(dao_buffer_retain(b));
  assert_ok(dao_recycle_submit(pool, b));
  assert_int_equal(stats_of(pool).queued, 1);
  assert_ok(dao_buffer_retain(b)); /* we still hold one: allowed */
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_buffer_release(b)); /* our last reference; the queue keeps its own */
  assert_status(dao_buffer_release(b), DAO_ERR_INVALID_STATE);
  s = stats_of(pool);
  assert_int_equal(s.created, 1); /* only one buffer was ever needed */
  assert_int_equal(s.queued, 1);
  assert_int_equal(s.free, 0);
  t = take_now(pool);
  assert_ptr_equal(t, b);
  assert_ok(dao_buffer_release(t));
  s = stats_of(pool);
  assert_int_equal(s.free, 1);
  assert_int_equal(s.held + s.queued, 0);

  /* The same, with the taker first and the retainer last. */
  b = acquire_now(pool);
  assert_ok(dao_buffer_retain(b));
  assert_ok(dao_recycle_submit(pool, b));
  t = take_now(pool);
  assert_ok(dao_buffer_release(t));
  assert_int_equal(stats_of(pool).held, 1);
  assert_ok(dao_buffer_release(b));
  assert_int_equal(stats_of(pool).free, 1);
  assert_ok(dao_recycle_destroy(pool));
}

/* ------------------------------------------------------------------------
 * Statistics
 * ---------------------------------------------------------------------- */

static void statistics_match_what_happened(void **state) {
  dao_recycle_pool *pool = make_pool(dao_place_cpu(), 8, 3, NULL);
  dao_buffer *b[6], *t;
  dao_recycle_stats s;
  int i;
  (void)state;

  s = stats_of(pool);
  assert_int_equal(s.created, 3);
  assert_int_equal(s.free, 3);
  assert_int_equal(s.peak_free, 3);
  assert_int_equal(s.peak_held, 0);
  assert_int_equal(s.acquired + s.submitted + s.taken, 0);

  for (i = 0; i < 6; ++i) b[i] = acquire_now(pool); /* 3 from the free list, 3 new */
  s = stats_of(pool);
  assert_int_equal(s.created, 6);
  assert_int_equal(s.free, 0);
  assert_int_equal(s.held, 6);
  assert_int_equal(s.peak_held, 6);
  assert_int_equal(s.acquired, 6);

  for (i = 0; i < 5; ++i) assert_ok(dao_recycle_submit(pool, b[i]));
  s = stats_of(pool);
  assert_int_equal(s.queued, 5);
  assert_int_equal(s.held, 1);
  assert_int_equal(s.peak_queued, 5);
  assert_int_equal(s.submitted, 5);

  for (i = 0; i < 2; ++i) {
    t = take_now(pool);
    assert_ok(dao_buffer_release(t));
  }
  assert_ok(dao_buffer_release(b[5]));
  s = stats_of(pool);
  assert_int_equal(s.created, 6);
  assert_int_equal(s.free, 3);
  assert_int_equal(s.queued, 3);
  assert_int_equal(s.held, 0);
  assert_int_equal(s.peak_free, 3);
  assert_int_equal(s.peak_queued, 5);
  assert_int_equal(s.peak_held, 6);
  assert_int_equal(s.acquired, 6);
  assert_int_equal(s.submitted, 5);
  assert_int_equal(s.taken, 2);
  assert_int_equal(s.acquire_waits + s.take_waits + s.timeouts, 0);
  assert_int_equal(s.acquire_wait_ns + s.take_wait_ns, 0);

  while (dao_recycle_take(pool, 0, &t) == DAO_OK) assert_ok(dao_buffer_release(t));
  s = stats_of(pool);
  assert_int_equal(s.free, 6);
  assert_int_equal(s.peak_free, 6);
  assert_int_equal(s.taken, 5);
  assert_int_equal(s.timeouts, 1); /* the take that ended the loop */
  assert_ok(dao_recycle_destroy(pool));
}

/* ------------------------------------------------------------------------
 * Destroy
 * ---------------------------------------------------------------------- */

static void destroy_refused_while_out(void **state) {
  dao_recycle_pool *pool = make_pool(big_sim(), 4, 4, "name=busy");
  size_t used_with_pool = used_on(big_sim());
  dao_buffer *a, *b, *t;
  (void)state;

  a = acquire_now(pool);
  b = acquire_now(pool);
  assert_ok(dao_recycle_submit(pool, b));
  assert_failure_mentions(dao_recycle_destroy(pool), DAO_ERR_BUSY,
                          "2 buffer(s) of pool 'busy' are still out: 1 held, 1 queued");
  /* Nothing changed: the pool works on. */
  assert_int_equal(used_on(big_sim()), used_with_pool);
  t = take_now(pool);
  assert_ptr_equal(t, b);
  assert_ok(dao_buffer_release(t));
  assert_failure_mentions(dao_recycle_destroy(pool), DAO_ERR_BUSY,
                          "1 buffer(s) of pool 'busy' are still out: 1 held, 0 queued");
  assert_ok(dao_buffer_release(a));
  assert_ok(dao_recycle_destroy(pool));
  /* Its memory went back to the place. */
  assert_true(used_on(big_sim()) + 4 * 1024 * sizeof(float) <= used_with_pool);
}

/* ------------------------------------------------------------------------
 * Collections
 * ---------------------------------------------------------------------- */

static void collections(void **state) {
  const size_t vis_shape[3] = {16, 4, 2}; /* baselines x channels x polarisations */
  const size_t flag_shape[2] = {16, 4};
  const size_t gain_shape[1] = {8};
  dao_collection *c = NULL;
  dao_recycle_pool *vis = NULL, *flags = NULL, *gains = NULL, *found = NULL;
  dao_buffer *b, *f;
  (void)state;

  assert_status(dao_collection_create(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_collection_create(&c));
  assert_non_null(c);

  assert_failure_mentions(dao_collection_find(c, "visibilities", &found), DAO_ERR_NOT_FOUND,
                          "no pools");
  assert_ok(
      dao_collection_add(c, "visibilities", dao_place_cpu(), 8, 3, vis_shape, 4, 2, NULL, &vis));
  assert_ok(dao_collection_add(c, "flags", big_sim(), 1, 2, flag_shape, 4, 0, "spin=10", &flags));
  assert_ok(dao_collection_add(c, "gains", dao_place_cpu(), 16, 1, gain_shape, 2, 0, NULL,
                               NULL)); /* out may be NULL */
  assert_non_null(vis);
  assert_non_null(flags);

  assert_ok(dao_collection_find(c, "visibilities", &found));
  assert_ptr_equal(found, vis);
  assert_ok(dao_collection_find(c, "flags", &found));
  assert_ptr_equal(found, flags);
  assert_ok(dao_collection_find(c, "gains", &gains));
  assert_non_null(gains);
  found = SENTINEL_POOL;
  assert_failure_mentions(dao_collection_find(c, "jones", &found), DAO_ERR_NOT_FOUND,
                          "'visibilities', 'flags', 'gains'");
  assert_ptr_equal(found, SENTINEL_POOL);

  /* Bad input. */
  found = SENTINEL_POOL;
  assert_failure_mentions(
      dao_collection_add(c, "flags", dao_place_cpu(), 1, 1, gain_shape, 1, 0, NULL, &found),
      DAO_ERR_INVALID_ARGUMENT, "already has a pool named 'flags'");
  assert_status(dao_collection_add(c, "", dao_place_cpu(), 1, 1, gain_shape, 1, 0, NULL, &found),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_add(c, NULL, dao_place_cpu(), 1, 1, gain_shape, 1, 0, NULL, &found),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_add(c, "bad", dao_place_cpu(), 0, 1, gain_shape, 1, 0, NULL, &found),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(
      dao_collection_add(c, "bad", dao_place_cpu(), 1, 1, gain_shape, 1, 0, "x=1", &found),
      DAO_ERR_INVALID_ARGUMENT);
  assert_status(
      dao_collection_add(c, "bad", dao_place_sim(9), 1, 1, gain_shape, 1, 0, NULL, &found),
      DAO_ERR_NO_DEVICE);
  assert_status(dao_collection_add(c, "bad", small_sim(), MIB, 1, gain_shape, 1, 1, NULL, &found),
                DAO_ERR_OUT_OF_MEMORY);
  assert_ptr_equal(found, SENTINEL_POOL);
  assert_status(dao_collection_find(c, "bad", &found), DAO_ERR_NOT_FOUND); /* none was kept */
  assert_status(
      dao_collection_add(NULL, "x", dao_place_cpu(), 1, 1, gain_shape, 1, 0, NULL, &found),
      DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_add(GARBAGE_COLLECTION, "x", dao_place_cpu(), 1, 1, gain_shape, 1, 0,
                                   NULL, &found),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_find(NULL, "flags", &found), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_find(GARBAGE_COLLECTION, "flags", &found), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_find(c, NULL, &found), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_find(c, "flags", NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_close(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_close(GARBAGE_COLLECTION), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_destroy(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_collection_destroy(GARBAGE_COLLECTION), DAO_ERR_INVALID_ARGUMENT);

  /* The collection owns its pools. */
  assert_failure_mentions(dao_recycle_destroy(vis), DAO_ERR_INVALID_ARGUMENT, "collection");

  /* A pipeline step: take visibilities, fill flags from them. */
  b = acquire_now(vis);
  dao_test_fill(data_of(b), 16 * 4 * 2 * 8, 5);
  assert_ok(dao_recycle_submit(vis, b));
  b = take_now(vis);
  f = acquire_now(flags);
  assert_true(dao_test_check(data_of(b), 16 * 4 * 2 * 8, 5));
  memset(data_of(f), 1, 16 * 4);

  /* Destroy refused while buffers are out; the message names the pools. */
  assert_failure_mentions(dao_collection_destroy(c), DAO_ERR_BUSY,
                          "'visibilities': 1 (1 held, 0 queued); 'flags': 1 (1 held, 0 queued)");
  assert_ok(dao_collection_find(c, "gains", &found)); /* still there */
  assert_ok(dao_recycle_submit(flags, f));
  assert_failure_mentions(dao_collection_destroy(c), DAO_ERR_BUSY, "'flags': 1 (0 held, 1 queued)");

  /* Close all: acquires are refused everywhere, queues drain. */
  assert_ok(dao_collection_close(c));
  assert_status(dao_recycle_acquire(vis, 0, &f), DAO_ERR_CLOSED);
  assert_status(dao_recycle_acquire(flags, 0, &f), DAO_ERR_CLOSED);
  assert_status(dao_recycle_acquire(gains, -1, &f), DAO_ERR_CLOSED);
  f = take_now(flags);
  {
    dao_buffer *none = NULL;
    assert_status(dao_recycle_take(flags, -1, &none), DAO_ERR_CLOSED);
    assert_null(none);
  }
  assert_ok(dao_buffer_release(f));
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_collection_destroy(c));
}

/* ------------------------------------------------------------------------
 * Steady state: no allocation at all
 * ---------------------------------------------------------------------- */

enum { kSteadyCycles = 100000, kSteadyBuffers = 8 };

static dao_allocator_stats place_stats(dao_place place) {
  dao_allocator *a = NULL;
  assert_ok(dao_place_allocator(place, &a));
  return dao_test_stats(a);
}

typedef struct {
  dao_recycle_pool *pool;
  pthread_barrier_t *start;
  pthread_barrier_t *done;
  long failures;
} steady_side;

static void *steady_producer(void *arg) {
  steady_side *s = (steady_side *)arg;
  long i;
  pthread_barrier_wait(s->start);
  for (i = 0; i < kSteadyCycles; ++i) {
    dao_buffer *b = NULL;
    if (dao_recycle_acquire(s->pool, -1, &b) != DAO_OK) ++s->failures;
    else if (dao_recycle_submit(s->pool, b) != DAO_OK) ++s->failures;
  }
  pthread_barrier_wait(s->done);
  return NULL;
}

static void *steady_consumer(void *arg) {
  steady_side *s = (steady_side *)arg;
  long i;
  pthread_barrier_wait(s->start);
  for (i = 0; i < kSteadyCycles; ++i) {
    dao_buffer *b = NULL;
    if (dao_recycle_take(s->pool, -1, &b) != DAO_OK) ++s->failures;
    else if (dao_buffer_release(b) != DAO_OK) ++s->failures;
  }
  pthread_barrier_wait(s->done);
  return NULL;
}

static void steady_state_allocates_nothing_on(dao_place place) {
  dao_recycle_pool *pool = make_pool(place, kSteadyBuffers, 0, "name=steady");
  dao_buffer *b[kSteadyBuffers];
  dao_allocator_stats before, after;
  size_t used_before;
  unsigned long allocs, frees;
  long failures = 0, i;
  dao_recycle_stats s;

  /* Warm up: every buffer exists, every path has run once. */
  for (i = 0; i < kSteadyBuffers; ++i) b[i] = acquire_now(pool);
  for (i = 0; i < kSteadyBuffers; ++i) assert_ok(dao_recycle_submit(pool, b[i]));
  for (i = 0; i < kSteadyBuffers; ++i) assert_ok(dao_buffer_release(take_now(pool)));
  assert_int_equal(stats_of(pool).created, kSteadyBuffers);
  used_before = used_on(place);
  before = place_stats(place);

  /* One thread through all four calls. */
  __atomic_store_n(&allocations, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&deallocations, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
  for (i = 0; i < kSteadyCycles; ++i) {
    dao_buffer *x = NULL, *y = NULL;
    if (dao_recycle_acquire(pool, 0, &x) != DAO_OK || dao_recycle_submit(pool, x) != DAO_OK ||
        dao_recycle_take(pool, 0, &y) != DAO_OK || dao_buffer_release(y) != DAO_OK)
      ++failures;
  }
  __atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
  allocs = __atomic_load_n(&allocations, __ATOMIC_SEQ_CST);
  frees = __atomic_load_n(&deallocations, __ATOMIC_SEQ_CST);
  assert_int_equal(failures, 0);
#ifdef COUNT_ALLOCATIONS
  assert_int_equal(allocs, 0);
  assert_int_equal(frees, 0);
#else
  (void)allocs;
  (void)frees;
#endif
  after = place_stats(place);
  assert_int_equal(used_on(place), used_before);
  assert_int_equal(after.alloc_count, before.alloc_count);
  assert_int_equal(after.free_count, before.free_count);

  /* A producer and a consumer thread, waiting on each other (the sleeping
     path too). The threads exist before counting starts and are joined
     after it stops. */
  {
    pthread_barrier_t start, done;
    steady_side producer_side, consumer_side;
    pthread_t producer, consumer;
    pthread_barrier_init(&start, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    producer_side.pool = consumer_side.pool = pool;
    producer_side.start = consumer_side.start = &start;
    producer_side.done = consumer_side.done = &done;
    producer_side.failures = consumer_side.failures = 0;
    assert_int_equal(pthread_create(&producer, NULL, steady_producer, &producer_side), 0);
    assert_int_equal(pthread_create(&consumer, NULL, steady_consumer, &consumer_side), 0);
    __atomic_store_n(&allocations, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&deallocations, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&done);
    __atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
    allocs = __atomic_load_n(&allocations, __ATOMIC_SEQ_CST);
    frees = __atomic_load_n(&deallocations, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(producer, NULL), 0);
    assert_int_equal(pthread_join(consumer, NULL), 0);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    assert_int_equal(producer_side.failures + consumer_side.failures, 0);
#ifdef COUNT_ALLOCATIONS
    assert_int_equal(allocs, 0);
    assert_int_equal(frees, 0);
#else
    (void)allocs;
    (void)frees;
#endif
  }
  after = place_stats(place);
  assert_int_equal(used_on(place), used_before);
  assert_int_equal(after.alloc_count, before.alloc_count);

  s = stats_of(pool);
  assert_int_equal(s.created, kSteadyBuffers);
  assert_int_equal(s.free, kSteadyBuffers);
  assert_int_equal(s.acquired, kSteadyBuffers + 2 * kSteadyCycles);
  assert_int_equal(s.taken, kSteadyBuffers + 2 * kSteadyCycles);
  assert_ok(dao_recycle_destroy(pool));
}

static void steady_state_allocates_nothing(void **state) {
  (void)state;
#ifdef COUNT_ALLOCATIONS
  /* The counting sees the library's allocations (or the test would prove
     nothing): creating a pool allocates its records and rings. */
  {
    dao_recycle_pool *pool = NULL;
    __atomic_store_n(&allocations, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
    assert_ok(dao_recycle_create(dao_place_cpu(), 4, 1, shape_1d, 4, 1, NULL, &pool));
    __atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
    assert_true(__atomic_load_n(&allocations, __ATOMIC_SEQ_CST) > 0);
    assert_ok(dao_recycle_destroy(pool));
  }
#endif
  steady_state_allocates_nothing_on(dao_place_cpu());
  steady_state_allocates_nothing_on(big_sim());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(create_bad_input),
      cmocka_unit_test(create_and_describe),
      cmocka_unit_test(sim_out_of_memory),
      cmocka_unit_test(pool_functions_bad_input),
      cmocka_unit_test(buffer_functions_bad_input),
      cmocka_unit_test(misuse_changes_nothing),
      cmocka_unit_test(lazy_creation_then_waiting),
      cmocka_unit_test(take_timeouts),
      cmocka_unit_test(close_wakes_sleeping_waiters),
      cmocka_unit_test(close_wakes_spinning_waiters),
      cmocka_unit_test(take_drains_after_close),
      cmocka_unit_test(fifo_order_and_sequence_numbers),
      cmocka_unit_test(free_list_lifo),
      cmocka_unit_test(stash_keeps_lifo_in_a_thread),
      cmocka_unit_test(stashed_buffers_reach_every_thread),
      cmocka_unit_test(steal_under_the_wait_lock),
      cmocka_unit_test(data_persists_cpu),
      cmocka_unit_test(data_persists_sim),
      cmocka_unit_test(reference_counts_across_threads),
      cmocka_unit_test(statistics_match_what_happened),
      cmocka_unit_test(destroy_refused_while_out),
      cmocka_unit_test(collections),
      cmocka_unit_test(steady_state_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
