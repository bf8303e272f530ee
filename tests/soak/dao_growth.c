/* dao_growth: the resource-growth soak. For each area of libdao it runs the
 * area's create/use/release cycle over and over for a given time and fails
 * when the process's memory keeps growing, or when one of libdao's own
 * counters does not come back to where it was.
 *
 *   dao_growth [--seconds S] [--area NAME]... [--inject-leak host:BYTES|dao:BYTES]
 *              [--quiet] [--list]
 *
 * --seconds: time per area (default 60; fractions allowed); --area: run only
 * these areas (repeatable; --list prints them); --inject-leak: TEST ONLY,
 * every cycle leaks BYTES of C heap (host) or of dao_alloc(cpu) (dao), to
 * prove that the checks below fail (ctest growth_detects_*). With
 * DAO_GROWTH_TRACE set it prints every sample, and what a long-lived
 * allocator still reserves after a trim.
 *
 * The areas (each cycle creates, uses and releases everything it made;
 * objects called long-lived are made once, before the first cycle):
 *   allocators      a fresh allocator per cycle, every strategy and stack
 *                   (buddy, caching with and without expandable segments and
 *                   fast_reuse, system, limit over caching, caching over
 *                   buddy) on the CPU and on SIM, used on streams with
 *                   record_stream and copies, trimmed and destroyed;
 *   allocators_long the same configs, long-lived, plus the place defaults
 *                   (dao_alloc on cpu, sim0, sim1): blocks allocated, used on
 *                   streams, freed stream-ordered, trimmed every 8 cycles;
 *   recycle         a collection of two pools (CPU, SIM) made, used
 *                   (acquire, submit, take, retain, release), closed and
 *                   destroyed, and a long-lived pool cycled;
 *   tiered          a tiered pool on SIM over its budget: tensors created,
 *                   written, kernels that force evictions, read, released,
 *                   pool destroyed (policies belady, lru, size_aware);
 *   tiered_long     one long-lived pool making temporary tensors every cycle
 *                   (issue 20, defect 9: its records grew without bound);
 *   whole           partitioned memory over the in-process transport: a
 *                   communicator of two SIM ranks, continuous, chunked and
 *                   distributed objects on device and host, scatter, barrier,
 *                   gather and check, destroy, communicator destroyed;
 *   streams         streams and events on cpu, sim0 and sim1: copies, host
 *                   functions, events recorded and waited for, destroyed;
 *   snapshots       snapshots (segments, blocks, JSON) and detailed statistics
 *                   of long-lived allocators holding live blocks, and of the
 *                   place defaults.
 *
 * What is checked, per area:
 *   - exact: after every cycle, dao_used() and dao_used_internal() of cpu,
 *     sim0 and sim1 and the area's own counters (live blocks and allocated
 *     bytes of its long-lived allocators, held and queued recycle buffers,
 *     live tensors and device/host bytes of a long-lived tiered pool) equal
 *     their values before the first cycle. These are libdao's books: they
 *     must not drift by a single byte. At every sample point, after trimming
 *     the area's long-lived allocators and the place defaults, each SIM
 *     device's free memory (dao_place_memory_info) must equal its value at
 *     the end of the warm-up.
 *   - growth: the resident memory (RSS, /proc/self/statm) and the C heap in
 *     use (glibc's mallinfo2: libdao's own bookkeeping, where a forgotten
 *     record shows first), sampled about 40 times after a warm-up of a
 *     quarter of the time. See growth_verdict() for the criterion.
 *
 * Prints one line per area (cycles, RSS and heap at the end of the warm-up
 * and at the end, slopes) and exits 1 on any failure, 2 on bad usage.
 * DAO_SIM_DEVICES, when set, must give at least 2 devices; otherwise
 * 2 x 64 MiB are configured. */
#define _GNU_SOURCE

#include <dao.h>

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ------------------------------------------------------------------------- */
/* errors                                                                      */

static long g_errors; /* __atomic: errors in the current area */
static int g_quiet;

static void report_error(const char *fmt, ...) {
  long n = __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
  if (n <= 20) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dao_growth: ERROR: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
  }
}

/* Reports a status other than DAO_OK; returns 1 when it was DAO_OK. */
#define OK(expr) expect_ok((expr), #expr, __LINE__)
static int expect_ok(dao_status got, const char *what, int line) {
  if (got == DAO_OK) return 1;
  report_error("line %d: %s gave %s: %s", line, what, dao_status_string(got), dao_last_error());
  return 0;
}
#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) report_error("line %d: %s is false", __LINE__, #cond); \
  } while (0)

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------- */
/* places and memory                                                           */

enum { PL_CPU, PL_SIM0, PL_SIM1, PL_COUNT };
static const char *const place_names[PL_COUNT] = {"cpu", "sim0", "sim1"};
static dao_place place_of(int pl) {
  return pl == PL_CPU ? dao_place_cpu() : dao_place_sim(pl == PL_SIM0 ? 0 : 1);
}

/* Resident bytes now, from /proc/self/statm (0 where there is none). */
static long long rss_bytes(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  fclose(f);
  return (long long)resident * sysconf(_SC_PAGESIZE);
}

/* Peak resident bytes (VmHWM of /proc/self/status; 0 where unknown). */
static long long hwm_bytes(void) {
  char line[256];
  long long kb = 0;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024;
}

/* Bytes of the C heap in use (glibc), -1 where unknown (a sanitizer replaces
 * malloc and mallinfo2 says nothing there). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GROWTH_OWN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GROWTH_OWN_MALLOC 1
#endif
#endif
static long long heap_in_use(void) {
#if defined(GROWTH_OWN_MALLOC)
  return -1;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  return (long long)(mi.uordblks + mi.hblkhd);
#else
  return -1;
#endif
}

/* ------------------------------------------------------------------------- */
/* the test-only leak (--inject-leak)                                          */

enum { LEAK_NONE, LEAK_HOST, LEAK_DAO };
static int g_leak_kind;
static size_t g_leak_bytes;
typedef struct leak_node {
  struct leak_node *next;
  void *dao; /* LEAK_DAO: a dao_alloc(cpu) block */
} leak_node;
static leak_node *g_leaks;

static void inject_leak(void) {
  leak_node *n;
  if (g_leak_kind == LEAK_NONE) return;
  n = (leak_node *)malloc(g_leak_kind == LEAK_HOST ? sizeof *n + g_leak_bytes : sizeof *n);
  if (n == NULL) return;
  n->dao = NULL;
  if (g_leak_kind == LEAK_HOST) memset(n + 1, 0x5A, g_leak_bytes); /* resident */
  else if (dao_alloc(dao_place_cpu(), g_leak_bytes, &n->dao) == DAO_OK)
    memset(n->dao, 0x5A, g_leak_bytes);
  n->next = g_leaks;
  g_leaks = n;
}

static void free_leaks(void) {
  while (g_leaks != NULL) {
    leak_node *n = g_leaks;
    g_leaks = n->next;
    if (n->dao != NULL) dao_free(dao_place_cpu(), n->dao);
    free(n);
  }
}

/* ------------------------------------------------------------------------- */
/* shared helpers                                                              */

static dao_stream g_streams[PL_COUNT][2]; /* long-lived streams per place */

static void fill(void *p, size_t n, unsigned seed) { memset(p, (int)(seed & 0xFF), n); }

static int check_fill(const void *p, size_t n, unsigned seed, const char *what) {
  const unsigned char *b = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; ++i) {
    if (b[i] != (unsigned char)(seed & 0xFF)) {
      report_error("%s: byte %zu is 0x%02x, expected 0x%02x", what, i, b[i], seed & 0xFF);
      return 0;
    }
  }
  return 1;
}

/* Trims a place's default allocator (memory the place defaults cache). */
static void trim_place_defaults(void) {
  int pl;
  for (pl = 0; pl < PL_COUNT; ++pl) {
    dao_allocator *a = NULL;
    if (OK(dao_place_allocator(place_of(pl), &a))) OK(dao_allocator_trim(a, NULL));
  }
}

static int stats_of(dao_allocator *a, dao_allocator_stats *s) {
  memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  return OK(dao_allocator_get_stats(a, s));
}

/* ------------------------------------------------------------------------- */
/* allocators                                                                  */

typedef struct alloc_config {
  const char *strategy;
  const char *config;
} alloc_config;

static const alloc_config g_configs[] = {
    {"buddy", ""},
    {"buddy", "chunk_size=1MiB,initial_pool=1MiB"},
    {"caching", ""}, /* expandable segments on SIM */
    {"caching", "expandable_segments=false"},
    {"caching", "fast_reuse=true"},
    {"caching", "expandable_segments=true,fast_reuse=true,max_split_size=32MiB"},
    {"system", ""},
    {"limit", "max_pool=16MiB,upstream=caching"},
    {"caching", "upstream=buddy"},
};
#define NCONFIGS ((int)(sizeof g_configs / sizeof g_configs[0]))
static const size_t g_sizes[] = {96, 4 * KIB, 48 * KIB, 200 * KIB, 1 * MIB};
#define NSIZES ((int)(sizeof g_sizes / sizeof g_sizes[0]))

/* One use of an allocator: blocks of every size on the default stream and
 * on a stream, filled, copied on the stream, checked, record_stream'd on a
 * second stream and freed (stream-ordered where the strategy is), trimmed
 * when `trim`. Everything is synchronised before it returns, so that the
 * allocator is idle: no block live, no stream work pending. */
static void use_allocator(dao_allocator *a, int pl, uint64_t cycle, int trim) {
  void *p[NSIZES], *q[NSIZES];
  dao_stream s0 = g_streams[pl][0], s1 = g_streams[pl][1];
  int k;
  for (k = 0; k < NSIZES; ++k) p[k] = q[k] = NULL;
  for (k = 0; k < NSIZES; ++k) {
    unsigned seed = (unsigned)(cycle + (uint64_t)k);
    if (!OK(dao_allocator_alloc(a, g_sizes[k], DAO_STREAM_DEFAULT, &p[k]))) continue;
    if (!OK(dao_allocator_alloc(a, g_sizes[k], s0, &q[k]))) continue;
    fill(p[k], g_sizes[k], seed);
    OK(dao_memcpy_async(q[k], p[k], g_sizes[k], s0));
  }
  OK(dao_stream_synchronize(s0));
  for (k = 0; k < NSIZES; ++k) {
    dao_status st;
    if (q[k] == NULL) continue;
    check_fill(q[k], g_sizes[k], (unsigned)(cycle + (uint64_t)k), "copy on the stream");
    /* a reader on another stream, then a stream-ordered free */
    OK(dao_memcpy_async(p[k], q[k], g_sizes[k], s1));
    st = dao_allocator_record_stream(a, q[k], s1);
    if (st == DAO_ERR_UNSUPPORTED) OK(dao_stream_synchronize(s1));
    else OK(st);
    OK(dao_allocator_free(a, q[k]));
  }
  OK(dao_stream_synchronize(s1));
  for (k = 0; k < NSIZES; ++k)
    if (p[k] != NULL) OK(dao_allocator_free(a, p[k]));
  if (trim) OK(dao_allocator_trim(a, NULL));
}

static void cycle_allocators(uint64_t i) {
  const alloc_config *c = &g_configs[i % NCONFIGS];
  int pl = (int)((i / NCONFIGS) % PL_COUNT);
  dao_allocator *a = NULL;
  dao_allocator_stats s;
  if (!OK(dao_allocator_create(place_of(pl), c->strategy, c->config, &a))) return;
  use_allocator(a, pl, i, (int)(i & 1));
  if (stats_of(a, &s) && (s.live_blocks != 0 || s.allocated_bytes != 0))
    report_error("%s \"%s\" on %s: %" PRIu64 " blocks live after every free", c->strategy,
                 c->config, place_names[pl], s.live_blocks);
  OK(dao_allocator_destroy(a));
}

static dao_allocator *g_long[PL_COUNT][NCONFIGS];

static int setup_allocators_long(void) {
  int pl, k;
  for (pl = 0; pl < PL_COUNT; ++pl)
    for (k = 0; k < NCONFIGS; ++k)
      if (!OK(dao_allocator_create(place_of(pl), g_configs[k].strategy, g_configs[k].config,
                                   &g_long[pl][k])))
        return 0;
  return 1;
}

static void teardown_allocators_long(void) {
  int pl, k;
  for (pl = 0; pl < PL_COUNT; ++pl)
    for (k = 0; k < NCONFIGS; ++k) {
      if (g_long[pl][k] != NULL) OK(dao_allocator_destroy(g_long[pl][k]));
      g_long[pl][k] = NULL;
    }
}

static void trim_allocators_long(void) {
  int pl, k;
  for (pl = 0; pl < PL_COUNT; ++pl)
    for (k = 0; k < NCONFIGS; ++k)
      if (g_long[pl][k] != NULL) {
        dao_allocator_stats st;
        OK(dao_allocator_trim(g_long[pl][k], NULL));
        if (getenv("DAO_GROWTH_TRACE") != NULL && stats_of(g_long[pl][k], &st) && st.reserved_bytes)
          fprintf(stderr, "  %s %s %s: reserved %" PRIu64 " after trim\n", place_names[pl],
                  g_configs[k].strategy, g_configs[k].config, st.reserved_bytes);
      }
}

/* The long-lived allocators' live blocks and allocated bytes. */
static int counters_allocators_long(uint64_t *v, int max) {
  int pl, k, n = 0;
  for (pl = 0; pl < PL_COUNT; ++pl)
    for (k = 0; k < NCONFIGS && n + 2 <= max; ++k) {
      dao_allocator_stats s;
      if (g_long[pl][k] == NULL || !stats_of(g_long[pl][k], &s)) continue;
      v[n++] = s.live_blocks;
      v[n++] = s.allocated_bytes;
    }
  return n;
}

static void cycle_allocators_long(uint64_t i) {
  int pl = (int)(i % PL_COUNT), k = (int)((i / PL_COUNT) % NCONFIGS);
  void *p = NULL;
  /* one long-lived allocator per cycle, and the place default */
  if (g_long[pl][k] != NULL) use_allocator(g_long[pl][k], pl, i, (i & 7) == 0);
  if (OK(dao_alloc(place_of(pl), g_sizes[i % NSIZES], &p))) {
    fill(p, g_sizes[i % NSIZES], (unsigned)i);
    OK(dao_free(place_of(pl), p));
  }
}

/* ------------------------------------------------------------------------- */
/* recycle pools and collections                                               */

static dao_recycle_pool *g_recycle_long;

static int setup_recycle(void) {
  size_t shape[2] = {64, 32};
  return OK(dao_recycle_create(dao_place_sim(0), sizeof(float), 2, shape, 4, 1, "name=long",
                               &g_recycle_long));
}

static void teardown_recycle(void) {
  if (g_recycle_long != NULL) OK(dao_recycle_destroy(g_recycle_long));
  g_recycle_long = NULL;
}

static int counters_recycle(uint64_t *v, int max) {
  dao_recycle_stats s;
  if (g_recycle_long == NULL || max < 3) return 0;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  if (!OK(dao_recycle_get_stats(g_recycle_long, &s))) return 0;
  v[0] = s.held;
  v[1] = s.queued;
  v[2] = s.created;
  return 3;
}

/* acquire, fill, submit, take, check, retain, release twice */
static void recycle_round(dao_recycle_pool *pool, unsigned seed) {
  dao_buffer *b = NULL, *t = NULL;
  void *data = NULL;
  size_t bytes = 0, elem = 0;
  if (!OK(dao_recycle_acquire(pool, 1.0, &b))) return;
  if (OK(dao_buffer_data(b, &data)) && OK(dao_buffer_size(b, &elem, &bytes)))
    fill(data, bytes, seed);
  if (!OK(dao_recycle_submit(pool, b))) {
    OK(dao_buffer_release(b));
    return;
  }
  if (!OK(dao_recycle_take(pool, 1.0, &t))) return;
  if (OK(dao_buffer_data(t, &data))) check_fill(data, bytes, seed, "recycle buffer");
  OK(dao_buffer_retain(t));
  OK(dao_buffer_release(t));
  OK(dao_buffer_release(t));
}

static void cycle_recycle(uint64_t i) {
  dao_collection *c = NULL;
  dao_recycle_pool *pool = NULL;
  size_t shape1[1] = {1000 + (size_t)(i % 7) * 100};
  size_t shape3[3] = {4, 8, 16};
  int k;
  recycle_round(g_recycle_long, (unsigned)i);
  if (!OK(dao_collection_create(&c))) return;
  OK(dao_collection_add(c, "cpu", dao_place_cpu(), sizeof(double), 1, shape1, 3, i & 1, NULL,
                        NULL));
  OK(dao_collection_add(c, "sim", dao_place_sim(1), 2, 3, shape3, 2, 0, "spin=0", NULL));
  if (OK(dao_collection_find(c, (i & 1) ? "cpu" : "sim", &pool)))
    for (k = 0; k < 3; ++k) recycle_round(pool, (unsigned)(i + (uint64_t)k));
  /* a standalone pool, made and destroyed with a buffer queued at close */
  if (OK(dao_recycle_create(dao_place_cpu(), 8, 1, shape1, 2, 2, NULL, &pool))) {
    dao_buffer *b = NULL;
    if (OK(dao_recycle_acquire(pool, 1.0, &b))) OK(dao_recycle_submit(pool, b));
    OK(dao_recycle_close(pool));
    /* a closed pool still hands out what was queued */
    if (OK(dao_recycle_take(pool, 0, &b))) OK(dao_buffer_release(b));
    OK(dao_recycle_destroy(pool));
  }
  OK(dao_collection_close(c));
  OK(dao_collection_destroy(c));
}

/* ------------------------------------------------------------------------- */
/* tiered pools                                                                */

#define TENSOR_FLOATS (64 * 1024) /* 256 KiB */
#define TENSOR_BYTES (TENSOR_FLOATS * sizeof(float))

/* out[0][j] = in[0][j] + in[1][j] (inputs may be absent: then 1.0) */
static dao_status k_add(void *user, void *const *in, size_t nin, void *const *out, size_t nout,
                        dao_stream stream) {
  size_t j;
  float *o = (float *)out[0];
  (void)user;
  (void)stream;
  (void)nout;
  for (j = 0; j < TENSOR_FLOATS; ++j) {
    float a = nin > 0 ? ((const float *)in[0])[j] : 1.0f;
    float b = nin > 1 ? ((const float *)in[1])[j] : 1.0f;
    o[j] = a + b;
  }
  return DAO_OK;
}

static float g_host_tensor[TENSOR_FLOATS];

static void write_tensor(dao_tensor *t, float v) {
  size_t j;
  for (j = 0; j < TENSOR_FLOATS; ++j) g_host_tensor[j] = v;
  OK(dao_tensor_write(t, g_host_tensor, TENSOR_BYTES));
}

static void read_check_tensor(dao_tensor *t, float v, const char *what) {
  size_t j;
  if (!OK(dao_tensor_read(t, g_host_tensor, TENSOR_BYTES))) return;
  for (j = 0; j < TENSOR_FLOATS; ++j) {
    if (g_host_tensor[j] != v) {
      report_error("%s: element %zu is %g, expected %g", what, j, (double)g_host_tensor[j],
                   (double)v);
      return;
    }
  }
}

/* A chain over `n` tensors that do not all fit in the budget:
 * t[0] = 1, t[1] = 2, t[k] = t[k-1] + t[k-2] (so evictions and fetches),
 * then the last is read back and every tensor released. */
static void tiered_chain(dao_tiered *pool, int n, const char *what) {
  dao_tensor *t[8];
  float expect[8];
  int k, made = 0;
  for (k = 0; k < n; ++k) {
    if (!OK(dao_tensor_create(pool, TENSOR_BYTES, &t[k]))) break;
    ++made;
  }
  if (made == n) {
    write_tensor(t[0], 1.0f);
    write_tensor(t[1], 2.0f);
    expect[0] = 1.0f;
    expect[1] = 2.0f;
    for (k = 2; k < n; ++k) {
      dao_tensor *in[2] = {t[k - 1], t[k - 2]};
      OK(dao_kernel_submit(pool, k_add, NULL, in, 2, &t[k], 1));
      expect[k] = expect[k - 1] + expect[k - 2];
    }
    read_check_tensor(t[n - 1], expect[n - 1], what);
    read_check_tensor(t[0], expect[0], what); /* evicted by now: fetched back */
  }
  for (k = 0; k < made; ++k) OK(dao_tensor_release(t[k]));
}

static void cycle_tiered(uint64_t i) {
  static const char *const configs[] = {"policy=belady", "policy=lru,prefetch=0",
                                        "policy=size_aware,prefetch=1"};
  dao_tiered *pool = NULL;
  dao_tiered_stats s;
  if (!OK(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 3 * TENSOR_BYTES, configs[i % 3],
                            &pool)))
    return;
  tiered_chain(pool, 6, "tiered pool");
  OK(dao_tiered_synchronize(pool));
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  if (OK(dao_tiered_get_stats(pool, &s)) && s.evictions == 0)
    report_error("tiered pool (%s): no eviction, the cycle does not test eviction", configs[i % 3]);
  OK(dao_tiered_destroy(pool));
}

static dao_tiered *g_tiered_long;
static dao_tensor *g_tiered_long_kept; /* a tensor that lives as long as the pool */

static int setup_tiered_long(void) {
  if (!OK(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 3 * TENSOR_BYTES, "",
                            &g_tiered_long)))
    return 0;
  if (!OK(dao_tensor_create(g_tiered_long, TENSOR_BYTES, &g_tiered_long_kept))) return 0;
  write_tensor(g_tiered_long_kept, 5.0f);
  return 1;
}

static void teardown_tiered_long(void) {
  if (g_tiered_long_kept != NULL) OK(dao_tensor_release(g_tiered_long_kept));
  if (g_tiered_long != NULL) OK(dao_tiered_destroy(g_tiered_long));
  g_tiered_long_kept = NULL;
  g_tiered_long = NULL;
}

static int counters_tiered_long(uint64_t *v, int max) {
  dao_tiered_stats s;
  if (g_tiered_long == NULL || max < 1) return 0;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  if (!OK(dao_tiered_get_stats(g_tiered_long, &s))) return 0;
  v[0] = s.tensors_live; /* (the kept tensor's bytes move between the tiers) */
  return 1;
}

static void cycle_tiered_long(uint64_t i) {
  dao_tensor *tmp = NULL;
  tiered_chain(g_tiered_long, 5, "long-lived tiered pool");
  /* a temporary tensor computed from the kept one */
  if (OK(dao_tensor_create(g_tiered_long, TENSOR_BYTES, &tmp))) {
    dao_tensor *in[1] = {g_tiered_long_kept};
    OK(dao_kernel_submit(g_tiered_long, k_add, NULL, in, 1, &tmp, 1));
    if ((i & 3) == 0) read_check_tensor(tmp, 6.0f, "temporary tensor");
    OK(dao_tensor_release(tmp));
  }
  OK(dao_tiered_synchronize(g_tiered_long));
}

/* ------------------------------------------------------------------------- */
/* partitioned memory (in-process transport)                                  */

#define WHOLE_RANKS 2
#define WHOLE_ENTRIES 3000
#define WHOLE_ENTRY 24 /* not a page divisor */

typedef struct whole_job {
  pthread_t thread;
  dao_comm *comm;
  int rank;
  dao_whole_type type;
  dao_whole_location location;
  uint64_t cycle;
} whole_job;

static void *whole_rank(void *arg) {
  whole_job *j = (whole_job *)arg;
  dao_whole_desc d;
  dao_whole *w = NULL;
  dao_whole_range r;
  void *local = NULL;
  int64_t *idx = NULL;
  unsigned char *buf = NULL;
  size_t e, n;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.type = j->type;
  d.location = j->location;
  d.total_size = (size_t)WHOLE_ENTRIES * WHOLE_ENTRY;
  d.entry_size = WHOLE_ENTRY;
  if (!OK(dao_whole_create(j->comm, &d, &w))) return NULL;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  OK(dao_whole_get_local(w, &local, &r));
  /* each rank scatters the entries of the other rank, then all gather all */
  n = WHOLE_ENTRIES;
  idx = (int64_t *)malloc(n * sizeof *idx);
  buf = (unsigned char *)malloc(n * WHOLE_ENTRY);
  if (idx != NULL && buf != NULL) {
    size_t count = 0;
    for (e = 0; e < n; ++e) {
      int owner = 0;
      OK(dao_whole_entry_rank(w, (int64_t)e, &owner));
      if (owner == j->rank) continue;
      idx[count] = (int64_t)e;
      memset(buf + count * WHOLE_ENTRY, (int)((e + j->cycle) & 0xFF), WHOLE_ENTRY);
      ++count;
    }
    OK(dao_whole_scatter(w, buf, idx, count));
    OK(dao_comm_barrier(j->comm));
    for (e = 0; e < n; ++e) idx[e] = (int64_t)(n - 1 - e);
    if (OK(dao_whole_gather(w, idx, n, buf))) {
      for (e = 0; e < n; ++e) {
        size_t entry = n - 1 - e;
        unsigned char want = (unsigned char)((entry + j->cycle) & 0xFF);
        if (buf[e * WHOLE_ENTRY] != want || buf[e * WHOLE_ENTRY + WHOLE_ENTRY - 1] != want) {
          report_error("whole %s on %s: rank %d gathered entry %zu wrong",
                       dao_whole_type_name(j->type), dao_whole_location_name(j->location), j->rank,
                       entry);
          break;
        }
      }
    }
  } else {
    report_error("whole: out of host memory");
  }
  free(idx);
  free(buf);
  OK(dao_whole_destroy(w));
  return NULL;
}

static void cycle_whole(uint64_t i) {
  dao_place places[WHOLE_RANKS] = {dao_place_sim(0), dao_place_sim(1)};
  dao_comm *comms[WHOLE_RANKS];
  whole_job jobs[WHOLE_RANKS];
  int r;
  if (!OK(dao_comm_create_local(WHOLE_RANKS, places, comms))) return;
  for (r = 0; r < WHOLE_RANKS; ++r) {
    jobs[r].comm = comms[r];
    jobs[r].rank = r;
    jobs[r].type = (dao_whole_type)(i % 3);
    jobs[r].location = (dao_whole_location)((i / 3) % 2);
    jobs[r].cycle = i;
    if (pthread_create(&jobs[r].thread, NULL, whole_rank, &jobs[r]) != 0) {
      report_error("pthread_create failed");
      jobs[r].thread = pthread_self();
    }
  }
  for (r = 0; r < WHOLE_RANKS; ++r)
    if (!pthread_equal(jobs[r].thread, pthread_self())) pthread_join(jobs[r].thread, NULL);
  for (r = 0; r < WHOLE_RANKS; ++r) OK(dao_comm_destroy(comms[r]));
}

/* ------------------------------------------------------------------------- */
/* streams and events                                                          */

static void host_fn_count(void *user) { __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED); }

static void cycle_streams(uint64_t i) {
  int pl = (int)(i % PL_COUNT), ran = 0, done = 0, idle = 0;
  dao_stream a = NULL, b = NULL;
  dao_event e = NULL;
  char src[4096];
  void *dst = NULL;
  if (!OK(dao_stream_create(place_of(pl), &a))) return;
  if (OK(dao_stream_create(place_of(pl), &b)) && OK(dao_event_create(place_of(pl), &e))) {
    memset(src, (int)(i & 0xFF), sizeof src);
    if (OK(dao_alloc(place_of(pl), sizeof src, &dst))) {
      OK(dao_memcpy_async(dst, src, sizeof src, a));
      OK(dao_launch_host_func(a, host_fn_count, &ran));
      OK(dao_event_record(e, a));
      OK(dao_stream_wait_event(b, e));
      OK(dao_launch_host_func(b, host_fn_count, &ran));
      OK(dao_stream_synchronize(b));
      OK(dao_event_query(e, &done));
      CHECK(done == 1);
      OK(dao_event_synchronize(e));
      OK(dao_stream_query(a, &idle));
      OK(dao_stream_synchronize(a));
      CHECK(__atomic_load_n(&ran, __ATOMIC_RELAXED) == 2);
      check_fill(dst, sizeof src, (unsigned)i, "stream copy");
      OK(dao_free(place_of(pl), dst));
    }
  }
  if (e != NULL) OK(dao_event_destroy(e));
  if (b != NULL) OK(dao_stream_destroy(b));
  OK(dao_stream_destroy(a));
}

/* ------------------------------------------------------------------------- */
/* snapshots                                                                   */

static dao_allocator *g_snap[2];
static void *g_snap_blocks[2][4];
static char g_json[256 * KIB];

static int setup_snapshots(void) {
  int k, b;
  static const char *const configs[2] = {"", "expandable_segments=false"};
  for (k = 0; k < 2; ++k) {
    if (!OK(dao_allocator_create(dao_place_sim(k), "caching", configs[k], &g_snap[k]))) return 0;
    for (b = 0; b < 4; ++b)
      if (!OK(dao_allocator_alloc(g_snap[k], g_sizes[b + 1], g_streams[PL_SIM0 + k][b & 1],
                                  &g_snap_blocks[k][b])))
        return 0;
  }
  return 1;
}

static void teardown_snapshots(void) {
  int k, b;
  for (k = 0; k < 2; ++k) {
    if (g_snap[k] == NULL) continue;
    for (b = 0; b < 4; ++b)
      if (g_snap_blocks[k][b] != NULL) OK(dao_allocator_free(g_snap[k], g_snap_blocks[k][b]));
    OK(dao_stream_synchronize(g_streams[PL_SIM0 + k][0]));
    OK(dao_stream_synchronize(g_streams[PL_SIM0 + k][1]));
    OK(dao_allocator_destroy(g_snap[k]));
    g_snap[k] = NULL;
  }
}

/* DAO_OK, or DAO_ERR_UNSUPPORTED where `unsupported_ok` (a place default of
 * a strategy without segments or without some metric). */
#define OK_OR_UNSUPPORTED(expr, unsupported_ok) \
  ok_or_unsupported((expr), (unsupported_ok), #expr, __LINE__)
static int ok_or_unsupported(dao_status got, int unsupported_ok, const char *what, int line) {
  if (got == DAO_ERR_UNSUPPORTED && unsupported_ok) return 0;
  return expect_ok(got, what, line);
}

static void snapshot_of(dao_allocator *a, int unsupported_ok) {
  dao_snapshot *snap = NULL;
  size_t segments = 0, s, b, length = 0;
  int m;
  if (OK_OR_UNSUPPORTED(dao_allocator_snapshot(a, &snap), unsupported_ok)) {
    OK(dao_snapshot_segment_count(snap, &segments));
    for (s = 0; s < segments; ++s) {
      dao_segment_info si;
      memset(&si, 0, sizeof si);
      si.struct_size = sizeof si;
      if (!OK(dao_snapshot_segment(snap, s, &si))) break;
      for (b = 0; b < si.block_count; ++b) {
        dao_block_info bi;
        memset(&bi, 0, sizeof bi);
        bi.struct_size = sizeof bi;
        if (!OK(dao_snapshot_block(snap, s, b, &bi))) break;
      }
    }
    OK(dao_snapshot_destroy(snap));
  }
  OK_OR_UNSUPPORTED(dao_allocator_snapshot_json(a, g_json, sizeof g_json, &length), unsupported_ok);
  for (m = 0; m < DAO_STAT_METRIC_COUNT; ++m) {
    dao_stat st;
    memset(&st, 0, sizeof st);
    OK_OR_UNSUPPORTED(dao_allocator_get_stat(a, (dao_stat_metric)m, DAO_STAT_POOL_ALL, &st),
                      unsupported_ok);
  }
}

static int counters_snapshots(uint64_t *v, int max) {
  int k, n = 0;
  for (k = 0; k < 2 && n + 2 <= max; ++k) {
    dao_allocator_stats s;
    if (g_snap[k] == NULL || !stats_of(g_snap[k], &s)) continue;
    v[n++] = s.live_blocks;
    v[n++] = s.allocated_bytes;
  }
  return n;
}

static void cycle_snapshots(uint64_t i) {
  dao_allocator *a = NULL;
  snapshot_of(g_snap[i & 1], 0);
  if (OK(dao_place_allocator(place_of((int)(i % PL_COUNT)), &a))) snapshot_of(a, 1);
}

/* ------------------------------------------------------------------------- */
/* the areas                                                                   */

typedef struct area {
  const char *name;
  int (*setup)(void);               /* long-lived objects; may be NULL */
  void (*cycle)(uint64_t i);        /* one create/use/release cycle */
  void (*teardown)(void);           /* may be NULL */
  int (*counters)(uint64_t *, int); /* exact counters of its own; may be NULL */
  void (*trim)(void);               /* trims its long-lived allocators; may be NULL */
} area;

static const area g_areas[] = {
    {"allocators", NULL, cycle_allocators, NULL, NULL, NULL},
    {"allocators_long", setup_allocators_long, cycle_allocators_long, teardown_allocators_long,
     counters_allocators_long, trim_allocators_long},
    {"recycle", setup_recycle, cycle_recycle, teardown_recycle, counters_recycle, NULL},
    {"tiered", NULL, cycle_tiered, NULL, NULL, NULL},
    {"tiered_long", setup_tiered_long, cycle_tiered_long, teardown_tiered_long,
     counters_tiered_long, NULL},
    {"whole", NULL, cycle_whole, NULL, NULL, NULL},
    {"streams", NULL, cycle_streams, NULL, NULL, NULL},
    {"snapshots", setup_snapshots, cycle_snapshots, teardown_snapshots, counters_snapshots, NULL},
};
#define NAREAS ((int)(sizeof g_areas / sizeof g_areas[0]))

/* libdao's books after a cycle: dao_used and dao_used_internal of every
 * place, then the area's own counters. */
#define MAX_COUNTERS 128
static int read_counters(const area *ar, uint64_t *v) {
  int pl, n = 0;
  for (pl = 0; pl < PL_COUNT; ++pl) {
    size_t used = 0, internal = 0;
    OK(dao_used(place_of(pl), &used));
    OK(dao_used_internal(place_of(pl), &internal));
    v[n++] = used;
    v[n++] = internal;
  }
  if (ar->counters != NULL) n += ar->counters(v + n, MAX_COUNTERS - n);
  return n;
}

static const char *counter_name(const area *ar, int k, char *buf, size_t size) {
  if (k < 2 * PL_COUNT)
    snprintf(buf, size, "%s(%s)", (k & 1) ? "dao_used_internal" : "dao_used", place_names[k / 2]);
  else snprintf(buf, size, "%s's counter #%d", ar->name, k - 2 * PL_COUNT);
  return buf;
}

/* Each SIM device's free memory, after the area's long-lived allocators and
 * the place defaults gave back what they cache. */
static void sim_free(const area *ar, size_t *free_bytes) {
  int d;
  if (ar->trim != NULL) ar->trim();
  trim_place_defaults();
  for (d = 0; d < 2; ++d) {
    free_bytes[d] = 0;
    OK(dao_place_memory_info(dao_place_sim(d), &free_bytes[d], NULL));
  }
}

#define MAX_SAMPLES 48
typedef struct series {
  const char *what;
  double cycle[MAX_SAMPLES];
  double value[MAX_SAMPLES];
  int n;
} series;

/* The growth criterion. Allocator noise is not growth: glibc's arenas and
 * tcache keep freed chunks, a new thread (SIM streams, whole ranks) may get
 * an arena of its own, pages are touched lazily, so RSS rises in steps
 * during the first cycles and then now and then by a few pages. A leak, by
 * contrast, adds about the same amount every cycle for ever. So an area
 * fails only when both hold:
 *   1. the trend is still rising over the later half of the samples: the
 *      least-squares slope (bytes per cycle) times the cycles that half spans
 *      is above `margin` -- a step during the warm-up, or one step later, is
 *      no trend over the whole later half; and
 *   2. the last sample is above the first one after the warm-up by more than
 *      `margin`: what a trend predicts did happen.
 * The margins (RSS 8 MiB, C heap 128 KiB) are far above the steps seen in
 * clean runs (at most a few hundred KiB) and far below what a leak of even a
 * few bytes per cycle adds in a long run (10 minutes: 10^5 to 10^7 cycles).
 * The C heap in use counts only live chunks, so it does not see glibc's
 * caches at all: it is the sharper test of libdao's bookkeeping (a record
 * kept per tensor ever made, defect 9), RSS the test of everything else
 * (mapped pages, thread stacks, memory of SIM devices). Returns 1 when the
 * series grows. */
static int growth_verdict(const char *area_name, const series *s, double margin,
                          double *slope_out) {
  int first = s->n / 2, k, m;
  double sx = 0, sy = 0, sxx = 0, sxy = 0, slope = 0, span, rise;
  *slope_out = 0;
  m = s->n - first;
  if (m < 4) return 0; /* too few samples to tell */
  for (k = first; k < s->n; ++k) {
    sx += s->cycle[k];
    sy += s->value[k];
  }
  sx /= m;
  sy /= m;
  for (k = first; k < s->n; ++k) {
    sxx += (s->cycle[k] - sx) * (s->cycle[k] - sx);
    sxy += (s->cycle[k] - sx) * (s->value[k] - sy);
  }
  if (sxx > 0) slope = sxy / sxx;
  *slope_out = slope;
  span = s->cycle[s->n - 1] - s->cycle[first];
  rise = s->value[s->n - 1] - s->value[0];
  if (slope * span > margin && rise > margin) {
    fprintf(stderr,
            "dao_growth: FAIL: area %s: %s keeps growing: %+.2f MiB from the end of the warm-up "
            "(%.2f -> %.2f MiB), %+.1f bytes/cycle over the later half (%.0f cycles); margin "
            "%.2f MiB\n",
            area_name, s->what, rise / 1048576.0, s->value[0] / 1048576.0,
            s->value[s->n - 1] / 1048576.0, slope, span, margin / 1048576.0);
    return 1;
  }
  return 0;
}

#define RSS_MARGIN (8.0 * 1048576.0)
#define HEAP_MARGIN (128.0 * 1024.0)

/* Runs one area for `seconds`; returns 0 when it passed. */
static int run_area(const area *ar, double seconds) {
  uint64_t base[MAX_COUNTERS], now[MAX_COUNTERS], cycles = 0, warm_cycles = 0;
  int nbase, failed = 0, k;
  size_t sim_base[2] = {0, 0}, sim_now[2];
  series rss, heap;
  double start, warm_end, period, next_sample, slope_rss = 0, slope_heap = 0, t;
  int warm = 1;
  char name[96];

  __atomic_store_n(&g_errors, 0, __ATOMIC_RELAXED);
  memset(&rss, 0, sizeof rss);
  memset(&heap, 0, sizeof heap);
  rss.what = "resident memory (RSS)";
  heap.what = "C heap in use";
  if (ar->setup != NULL && !ar->setup()) {
    fprintf(stderr, "dao_growth: FAIL: area %s: setup failed\n", ar->name);
    if (ar->teardown != NULL) ar->teardown();
    return 1;
  }
  nbase = read_counters(ar, base);
  start = now_seconds();
  warm_end = start + seconds / 4;
  period = (seconds - seconds / 4) / (MAX_SAMPLES - 8);
  next_sample = warm_end;
  for (;;) {
    ar->cycle(cycles);
    inject_leak();
    ++cycles;
    /* libdao's books must be back where they were, after every cycle */
    if (read_counters(ar, now) != nbase) {
      report_error("area %s: the number of counters changed", ar->name);
    } else {
      for (k = 0; k < nbase; ++k) {
        if (now[k] != base[k]) {
          fprintf(stderr,
                  "dao_growth: FAIL: area %s: %s is %" PRIu64 " after cycle %" PRIu64
                  ", it was %" PRIu64 " before the first cycle (drift %+lld)\n",
                  ar->name, counter_name(ar, k, name, sizeof name), now[k], cycles, base[k],
                  (long long)(now[k] - base[k]));
          failed = 1;
          break;
        }
      }
    }
    if (failed || __atomic_load_n(&g_errors, __ATOMIC_RELAXED) != 0) break;
    t = now_seconds();
    if (warm && t >= warm_end) {
      warm = 0;
      warm_cycles = cycles;
      sim_free(ar, sim_base);
    }
    if (!warm && t >= next_sample) {
      long long h;
      if (rss.n == MAX_SAMPLES || t - start >= seconds) break;
      /* measured with the caches trimmed: what stays is not a cache */
      sim_free(ar, sim_now);
      h = heap_in_use();
      for (k = 0; k < 2; ++k)
        if (sim_now[k] != sim_base[k]) {
          fprintf(stderr,
                  "dao_growth: FAIL: area %s: sim%d has %zu bytes free after cycle %" PRIu64
                  ", %zu at the end of the warm-up (drift %+lld), with every cache trimmed\n",
                  ar->name, k, sim_now[k], cycles, sim_base[k],
                  (long long)sim_base[k] - (long long)sim_now[k]);
          failed = 1;
        }
      if (failed) break;
      rss.cycle[rss.n] = (double)cycles;
      rss.value[rss.n++] = (double)rss_bytes();
      if (getenv("DAO_GROWTH_TRACE") != NULL)
        fprintf(stderr, "  sample %d: cycle %" PRIu64 " rss %lld heap %lld\n", rss.n, cycles,
                rss_bytes(), h);
      if (h >= 0) {
        heap.cycle[heap.n] = (double)cycles;
        heap.value[heap.n++] = (double)h;
      }
      next_sample += period;
    }
  }
  if (ar->teardown != NULL) ar->teardown();
  if (__atomic_load_n(&g_errors, __ATOMIC_RELAXED) != 0) {
    fprintf(stderr, "dao_growth: FAIL: area %s: %ld errors in %" PRIu64 " cycles\n", ar->name,
            __atomic_load_n(&g_errors, __ATOMIC_RELAXED), cycles);
    return 1;
  }
  if (failed) return 1;
  failed |= growth_verdict(ar->name, &rss, RSS_MARGIN, &slope_rss);
  failed |= growth_verdict(ar->name, &heap, HEAP_MARGIN, &slope_heap);
  if (!g_quiet || failed) {
    printf("  %-16s %9" PRIu64 " cycles in %5.1f s (warm-up %" PRIu64 "), RSS %.1f -> %.1f MiB "
           "(%+.1f B/cycle)",
           ar->name, cycles, now_seconds() - start, warm_cycles,
           rss.n ? rss.value[0] / 1048576.0 : 0.0, rss.n ? rss.value[rss.n - 1] / 1048576.0 : 0.0,
           slope_rss);
    if (heap.n)
      printf(", C heap %.2f -> %.2f MiB (%+.1f B/cycle)", heap.value[0] / 1048576.0,
             heap.value[heap.n - 1] / 1048576.0, slope_heap);
    printf(", %d samples%s\n", rss.n, failed ? "  FAILED" : "");
    fflush(stdout);
  }
  return failed;
}

/* ------------------------------------------------------------------------- */
/* main                                                                        */

static void usage(void) {
  fprintf(stderr, "usage: dao_growth [--seconds S] [--area NAME]... "
                  "[--inject-leak host:BYTES|dao:BYTES] [--quiet] [--list]\n");
  exit(2);
}

static void setup_sim(void) {
  const char *env = getenv("DAO_SIM_DEVICES");
  int count = 0;
  if (env == NULL || env[0] == '\0') {
    size_t caps[2] = {64 * MIB, 64 * MIB};
    if (dao_sim_configure(2, caps) != DAO_OK) {
      fprintf(stderr, "dao_growth: dao_sim_configure: %s\n", dao_last_error());
      exit(2);
    }
  }
  if (dao_place_device_count(DAO_PLACE_SIM, &count) != DAO_OK || count < 2) {
    fprintf(stderr, "dao_growth: needs 2 SIM devices (DAO_SIM_DEVICES)\n");
    exit(2);
  }
}

int main(int argc, char **argv) {
  double seconds = 60;
  int selected[NAREAS], any_selected = 0, i, k, failures = 0, pl;
  long long rss0, hwm;
  double start;
  memset(selected, 0, sizeof selected);
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      char *end = NULL;
      seconds = strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(seconds > 0) || seconds > 1e7) usage();
    } else if (strcmp(argv[i], "--area") == 0 && i + 1 < argc) {
      const char *name = argv[++i];
      for (k = 0; k < NAREAS && strcmp(g_areas[k].name, name) != 0; ++k) {
      }
      if (k == NAREAS) usage();
      selected[k] = any_selected = 1;
    } else if (strcmp(argv[i], "--inject-leak") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      char *end = NULL;
      if (strncmp(v, "host:", 5) == 0) g_leak_kind = LEAK_HOST;
      else if (strncmp(v, "dao:", 4) == 0) g_leak_kind = LEAK_DAO;
      else usage();
      v = strchr(v, ':') + 1;
      errno = 0;
      g_leak_bytes = (size_t)strtoull(v, &end, 10);
      if (errno != 0 || end == v || *end != '\0' || g_leak_bytes == 0 || g_leak_bytes > 64 * MIB)
        usage();
    } else if (strcmp(argv[i], "--quiet") == 0) {
      g_quiet = 1;
    } else if (strcmp(argv[i], "--list") == 0) {
      for (k = 0; k < NAREAS; ++k) printf("%s\n", g_areas[k].name);
      return 0;
    } else {
      usage();
    }
  }
#if defined(__GLIBC__) && !defined(GROWTH_OWN_MALLOC)
  /* glibc raises its mmap threshold each time a large block is freed, up to
   * 32 MiB, after which multi-MiB blocks (SIM and host resources take them
   * with posix_memalign) are kept by the arenas: RSS rises in steps that are
   * glibc's policy, not growth (tests/soak/README.md). A fixed threshold
   * keeps large blocks in mmap and RSS honest. */
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  setup_sim();
  for (pl = 0; pl < PL_COUNT; ++pl)
    for (k = 0; k < 2; ++k)
      if (dao_stream_create(place_of(pl), &g_streams[pl][k]) != DAO_OK) {
        fprintf(stderr, "dao_growth: dao_stream_create: %s\n", dao_last_error());
        return 1;
      }
  rss0 = rss_bytes();
  start = now_seconds();
  printf("dao_growth %s: %.1f s per area%s\n", dao_version_string(), seconds,
         g_leak_kind != LEAK_NONE ? " (--inject-leak: this run must fail)" : "");
  fflush(stdout);
  for (k = 0; k < NAREAS; ++k) {
    if (any_selected && !selected[k]) continue;
    failures += run_area(&g_areas[k], seconds);
  }
  for (pl = 0; pl < PL_COUNT; ++pl)
    for (k = 0; k < 2; ++k) dao_stream_destroy(g_streams[pl][k]);
  free_leaks();
  hwm = hwm_bytes();
  printf("dao_growth summary: %.1f s, RSS %.1f MiB at the start, %.1f MiB at the end, peak (VmHWM) "
         "%.1f MiB; %d area(s) failed\n",
         now_seconds() - start, rss0 / 1048576.0, rss_bytes() / 1048576.0, hwm / 1048576.0,
         failures);
  return failures == 0 ? 0 : 1;
}
