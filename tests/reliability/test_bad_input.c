/* The bad-input table (issue 9): every exported function of libdao with every
 * kind of bad argument it can get, and the status it must give.
 *
 * Each row (bad_input_rows.h) names a function, labels the bad argument and
 * performs the call with it on otherwise valid objects of a fixture. The
 * runner checks, for every row:
 *   - the status is the expected one;
 *   - dao_last_error() was set by that call (it is primed with a different
 *     message first), is not empty, and names the argument or object the row
 *     says (for a garbage handle: its address);
 *   - nothing changed: the statistics of every allocator, recycle pool and
 *     tiered pool of the fixture, the bytes used per place, the usable sizes
 *     and the snapshot are as before; every live block, buffer and tensor
 *     still holds its pattern; and the next valid call on each object works.
 * Rows whose expected status is DAO_OK are for functions that return no
 * status (or take nothing that can be bad); they check the value themselves.
 *
 * Each row runs in a child process of its own (fork), with a fixture made
 * there, so that a row that crashes or trips a sanitizer is reported as a
 * failure of that row and the others still run. The parent never calls
 * libdao, so it has no threads when it forks. Set DAO_BAD_INPUT_NO_FORK=1 to
 * run the rows in this process (for a debugger), DAO_BAD_INPUT_VERBOSE=1 to
 * print every bad call's status and message; give a substring of
 * "function: label" as the second argument to run only the rows that match.
 *
 * Coverage: CMake passes the library's path as argv[1]; the test reads its
 * exported symbols with `nm -D --defined-only` and fails, listing them, when
 * an exported dao_* function has no row (or a row names a function that is
 * not exported). A new function therefore cannot be added without rows here.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dao_test.h"

/* ------------------------------------------------------------------------- */
/* the fixture                                                                */

#define MIB ((size_t)1 << 20)
#define BLOCK 4096        /* bytes of each live block of the fixture */
#define BUFFER_BYTES 1024 /* bytes of each buffer of `pool` (4 x 8 x 32) */
#define TENSOR_BYTES 4096 /* bytes of the fixture's tensors */
#define FAKE_BYTES 4096   /* garbage handles point into this many bytes */
#define MAX_CALLS 8       /* bad calls one row may make */
/* SIM devices: 0 and 1 hold the fixture and are checked; rows make their own
 * objects on SIM_SCRATCH, which is not checked; SIM_ABSENT does not exist. */
#define SIM_SCRATCH 2
#define SIM_ABSENT 3
#define NOTES_BYTES 8192

/* One bad call of a row: what it returned and the message it left. */
typedef struct call_record {
  dao_status status;
  int message_set; /* dao_last_error() differs from the primed message */
  char message[1100];
  char want[64]; /* a text the message must hold (an address), or "" */
} call_record;

/* Everything a row works on. Made afresh for each row. */
typedef struct fixture {
  /* Allocators: three strategies, and the place defaults (borrowed). */
  dao_allocator *buddy;   /* CPU, "buddy", chunk_size=1MiB */
  dao_allocator *caching; /* SIM 0, "caching" */
  dao_allocator *system;  /* CPU, "system" */
  dao_allocator *def_cpu, *def_sim0, *def_sim1;
  /* One live block of BLOCK bytes in each, filled with a pattern. */
  void *blk_buddy, *blk_caching, *blk_system;
  void *p_cpu, *p_sim0, *p_sim1; /* from dao_alloc */
  /* Streams and events. */
  dao_stream s0, s1, scpu;
  dao_event e0, e1, ecpu;
  /* A snapshot of `caching`. */
  dao_snapshot *snap;
  /* Recycle pools: `pool` (CPU, 4 x {8, 32}, at most 4 buffers) has `held`
   * (held, patterned), `b_queued` (submitted, not taken) and `b_free`
   * (released); `pool2` has `held2`; the collection `coll` has pool "a"
   * (`coll_a`) with `held_c` out. */
  dao_recycle_pool *pool, *pool2, *coll_a;
  dao_buffer *held, *held2, *held_c, *b_free, *b_queued;
  dao_collection *coll;
  /* Tiered pools: `tp` (SIM 0) has `t` (written, patterned), `t_unwritten`
   * and `t_released`; `tp2` (SIM 1) has `t2` (written). */
  dao_tiered *tp, *tp2;
  dao_tensor *t, *t_unwritten, *t_released, *t2;
  /* FAKE_BYTES of 0xA5, 4096-aligned: garbage handles point here. */
  unsigned char *fake;
  int cuda_count;

  /* --- per row --- */
  call_record calls[MAX_CALLS];
  int ncalls;
  char primed[1100]; /* the message dao_last_error() had before the call */
  char want[64];     /* set by fake(), misaligned(), named() for the next call */
} fixture;

static char g_notes[NOTES_BYTES]; /* what went wrong in this row */
static size_t g_notes_len;

static void note(const char *fmt, ...) {
  va_list ap;
  if (g_notes_len + 2 >= sizeof g_notes) return;
  va_start(ap, fmt);
  int n = vsnprintf(g_notes + g_notes_len, sizeof g_notes - g_notes_len - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  g_notes_len += (size_t)n;
  if (g_notes_len > sizeof g_notes - 2) g_notes_len = sizeof g_notes - 2;
  g_notes[g_notes_len++] = '\n';
  g_notes[g_notes_len] = '\0';
}

/* A valid call of the fixture or a row's preparation: notes a failure. */
#define OK(expr)                                                                 \
  do {                                                                           \
    dao_status ok_s_ = (expr);                                                   \
    if (ok_s_ != DAO_OK)                                                         \
      note("line %d: %s gave %s: %s", __LINE__, #expr, dao_status_string(ok_s_), \
           dao_last_error());                                                    \
  } while (0)

/* Makes dao_last_error() hold a known message, so that a bad call that sets
 * no message of its own is caught (a stale message would pass for one). */
static void prime_message(fixture *f) {
  int count = 0;
  (void)dao_place_device_count((dao_place_kind)-777, &count);
  snprintf(f->primed, sizeof f->primed, "%s", dao_last_error());
  f->want[0] = '\0';
}

static dao_status record_call(fixture *f, dao_status status) {
  const char *message = dao_last_error();
  if (f->ncalls < MAX_CALLS) {
    call_record *c = &f->calls[f->ncalls++];
    c->status = status;
    c->message_set = message != NULL && strcmp(message, f->primed) != 0;
    snprintf(c->message, sizeof c->message, "%s", message != NULL ? message : "(NULL)");
    snprintf(c->want, sizeof c->want, "%s", f->want);
  } else {
    note("row makes more than %d bad calls", MAX_CALLS);
  }
  return status;
}

/* The bad call of a row. */
#define BAD(expr) record_call(f, (prime_message(f), (expr)))

/* A garbage handle: FAKE_BYTES of 0xA5, aligned; the message must name it. */
static void *fake(fixture *f) {
  snprintf(f->want, sizeof f->want, "%p", (void *)f->fake);
  return f->fake;
}

/* A garbage handle at an odd address (inside the same bytes). */
static void *misaligned(fixture *f) {
  void *p = f->fake + 1;
  snprintf(f->want, sizeof f->want, "%p", p);
  return p;
}

/* The message must name this pointer. */
static void *named(fixture *f, void *p) {
  snprintf(f->want, sizeof f->want, "%p", p);
  return p;
}

static dao_place place_of(int kind, int device) {
  dao_place p;
  p.kind = (dao_place_kind)kind;
  p.device = device;
  return p;
}

/* Sentinels that out-parameters are preset to, to see whether a failing call
 * wrote them. */
static int g_sentinel_object;
#define SENTINEL ((void *)&g_sentinel_object)

static void expect_null(const void *p, const char *what) {
  if (p != NULL) note("%s was not set to NULL on failure (the header says it is)", what);
}
static void expect_unchanged_ptr(const void *p, const void *was, const char *what) {
  if (p != was) note("%s was changed by the failing call (the header says it is not)", what);
}

/* The interop entry points (interop.h) return no status: a failure shows as
 * a count of dao_interop_get_stats() going up, turned here into the status
 * the header documents for it. */
static uint64_t interop_failures(void) {
  dao_interop_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  if (dao_interop_get_stats(&s) != DAO_OK) return UINT64_MAX;
  return s.failed_mallocs + s.failed_frees;
}
static dao_status interop_status(uint64_t before, dao_status refused) {
  return interop_failures() > before ? refused : DAO_OK;
}

/* Kernels and host functions. */
static int g_kernel_runs;
static dao_status kernel_ok(void *user_data, void *const *inputs, size_t input_count,
                            void *const *outputs, size_t output_count, dao_stream stream) {
  (void)user_data, (void)inputs, (void)input_count, (void)outputs, (void)output_count, (void)stream;
  ++g_kernel_runs;
  return DAO_OK;
}
static dao_status kernel_fail(void *user_data, void *const *inputs, size_t input_count,
                              void *const *outputs, size_t output_count, dao_stream stream) {
  (void)user_data, (void)inputs, (void)input_count, (void)outputs, (void)output_count, (void)stream;
  return DAO_ERR_INTERNAL;
}
static double score_zero(void *user_data, const dao_tensor_access_info *info) {
  (void)user_data, (void)info;
  return 0.0;
}
static int g_host_runs;
static void host_fn(void *user_data) {
  (void)user_data;
  ++g_host_runs;
}

/* Host functions that make a bad call on their own stream (from the stream's
 * worker thread, whose dao_last_error() BAD reads). */
static void synchronize_own_stream(void *user_data) {
  fixture *f = (fixture *)user_data;
  BAD(dao_stream_synchronize(f->s0));
}
static void destroy_own_stream(void *user_data) {
  fixture *f = (fixture *)user_data;
  BAD(dao_stream_destroy(f->s1));
}

/* A tiered pool that has failed: a kernel of it returned an error. */
static dao_tiered *make_failed_pool(dao_tensor **tensor) {
  dao_tiered *pool = NULL;
  *tensor = NULL;
  OK(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), 256 * 1024, NULL, &pool));
  if (pool == NULL) return NULL;
  OK(dao_tensor_create(pool, 1024, tensor));
  if (*tensor == NULL) return pool;
  OK(dao_kernel_submit(pool, kernel_fail, NULL, NULL, 0, tensor, 1));
  if (dao_tiered_synchronize(pool) != DAO_ERR_INVALID_STATE)
    note("setup: a kernel that failed did not put its pool in the failed state");
  return pool;
}

/* Destroys a pool or allocator that a bad call created although it should
 * have failed, so that nothing leaks. */
static void destroy_if_made(dao_recycle_pool *pool) {
  if (pool != NULL && pool != SENTINEL) (void)dao_recycle_destroy(pool);
}
static void destroy_allocator_if_made(dao_allocator *a) {
  if (a != NULL && a != SENTINEL) (void)dao_allocator_destroy(a);
}

static size_t g_shape[2] = {8, 32};
static size_t g_zero_shape[2] = {8, 0};
static size_t g_big_shape[2] = {SIZE_MAX / 2, 3};
static unsigned char g_foreign[8192] __attribute__((aligned(4096)));

/* Rows take their own "before" state after they prepared something that
 * legitimately changes the fixture (a block allocated and freed again). */
static void resnap(fixture *f);
#define SNAP() resnap(f)

/* ------------------------------------------------------------------------- */
/* the rows                                                                   */

typedef void (*row_fn)(fixture *f);

typedef struct row {
  const char *function; /* the exported function the row is for */
  const char *label;    /* the bad argument */
  row_fn call;
  dao_status expected;  /* DAO_OK: a function without a status; the row checks */
  const char *mentions; /* a text the message must hold, or NULL */
} row;

#define ROW(id, function, label, expected, mentions, ...) \
  static void row_##id(fixture *f) {                      \
    (void)f;                                              \
    __VA_ARGS__                                           \
  }
#include "bad_input_rows.h"
#undef ROW

static const row g_rows[] = {
#define ROW(id, function, label, expected, mentions, ...) \
  {function, label, row_##id, expected, mentions},
#include "bad_input_rows.h"
#undef ROW
};
#define ROW_COUNT (sizeof g_rows / sizeof g_rows[0])

/* ------------------------------------------------------------------------- */
/* making and checking the fixture                                            */

#define SEED_BUDDY 1u
#define SEED_CACHING 2u
#define SEED_SYSTEM 3u
#define SEED_CPU 4u
#define SEED_SIM0 5u
#define SEED_SIM1 6u
#define SEED_HELD 7u
#define SEED_HELD2 8u
#define SEED_TENSOR 10u
#define SEED_TENSOR2 11u

static void fill_buffer(dao_buffer *b, size_t bytes, unsigned seed) {
  void *data = NULL;
  if (b == NULL) return;
  OK(dao_buffer_data(b, &data));
  if (data != NULL) dao_test_fill(data, bytes, seed);
}

static void write_tensor(dao_tensor *t, unsigned seed) {
  unsigned char data[TENSOR_BYTES];
  if (t == NULL) return;
  dao_test_fill(data, sizeof data, seed);
  OK(dao_tensor_write(t, data, sizeof data));
}

/* Returns 0 when the fixture could not be made (the notes say why). */
static int setup(fixture *f) {
  size_t caps[SIM_ABSENT] = {64 * MIB, 64 * MIB, 64 * MIB};
  memset(f, 0, sizeof *f);
  /* Independent of the environment: three SIM devices of 64 MiB. */
  OK(dao_sim_configure(SIM_ABSENT, caps));
  if (posix_memalign((void **)&f->fake, 4096, FAKE_BYTES) != 0) {
    note("setup: no memory for the fake handle");
    return 0;
  }
  memset(f->fake, 0xA5, FAKE_BYTES);
  OK(dao_place_device_count(DAO_PLACE_CUDA, &f->cuda_count));

  OK(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB", &f->buddy));
  OK(dao_allocator_create(dao_place_sim(0), "caching", NULL, &f->caching));
  OK(dao_allocator_create(dao_place_cpu(), "system", NULL, &f->system));
  if (f->buddy == NULL || f->caching == NULL || f->system == NULL) return 0;
  OK(dao_allocator_alloc(f->buddy, BLOCK, NULL, &f->blk_buddy));
  OK(dao_allocator_alloc(f->caching, BLOCK, NULL, &f->blk_caching));
  OK(dao_allocator_alloc(f->system, BLOCK, NULL, &f->blk_system));
  if (f->blk_buddy == NULL || f->blk_caching == NULL || f->blk_system == NULL) return 0;
  dao_test_fill(f->blk_buddy, BLOCK, SEED_BUDDY);
  dao_test_fill(f->blk_caching, BLOCK, SEED_CACHING);
  dao_test_fill(f->blk_system, BLOCK, SEED_SYSTEM);

  OK(dao_place_allocator(dao_place_cpu(), &f->def_cpu));
  OK(dao_place_allocator(dao_place_sim(0), &f->def_sim0));
  OK(dao_place_allocator(dao_place_sim(1), &f->def_sim1));
  OK(dao_alloc(dao_place_cpu(), BLOCK, &f->p_cpu));
  OK(dao_alloc(dao_place_sim(0), BLOCK, &f->p_sim0));
  OK(dao_alloc(dao_place_sim(1), BLOCK, &f->p_sim1));
  if (f->def_cpu == NULL || f->def_sim0 == NULL || f->def_sim1 == NULL || f->p_cpu == NULL ||
      f->p_sim0 == NULL || f->p_sim1 == NULL)
    return 0;
  dao_test_fill(f->p_cpu, BLOCK, SEED_CPU);
  dao_test_fill(f->p_sim0, BLOCK, SEED_SIM0);
  dao_test_fill(f->p_sim1, BLOCK, SEED_SIM1);

  OK(dao_stream_create(dao_place_sim(0), &f->s0));
  OK(dao_stream_create(dao_place_sim(1), &f->s1));
  OK(dao_stream_create(dao_place_cpu(), &f->scpu));
  OK(dao_event_create(dao_place_sim(0), &f->e0));
  OK(dao_event_create(dao_place_sim(1), &f->e1));
  OK(dao_event_create(dao_place_cpu(), &f->ecpu));
  if (f->s0 == NULL || f->s1 == NULL || f->scpu == NULL || f->e0 == NULL || f->e1 == NULL ||
      f->ecpu == NULL)
    return 0;

  OK(dao_allocator_snapshot(f->caching, &f->snap));
  if (f->snap == NULL) return 0;

  OK(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, 4, 0, "name=table", &f->pool));
  OK(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, 2, 0, "name=other", &f->pool2));
  if (f->pool == NULL || f->pool2 == NULL) return 0;
  OK(dao_recycle_acquire(f->pool, 0, &f->held));
  OK(dao_recycle_acquire(f->pool, 0, &f->b_queued));
  OK(dao_recycle_acquire(f->pool, 0, &f->b_free));
  OK(dao_recycle_acquire(f->pool2, 0, &f->held2));
  if (f->held == NULL || f->b_queued == NULL || f->b_free == NULL || f->held2 == NULL) return 0;
  fill_buffer(f->held, BUFFER_BYTES, SEED_HELD);
  fill_buffer(f->held2, BUFFER_BYTES, SEED_HELD2);
  OK(dao_buffer_release(f->b_free));
  OK(dao_recycle_submit(f->pool, f->b_queued));
  OK(dao_collection_create(&f->coll));
  if (f->coll == NULL) return 0;
  {
    size_t shape_a[1] = {64};
    OK(dao_collection_add(f->coll, "a", dao_place_cpu(), 8, 1, shape_a, 2, 0, NULL, &f->coll_a));
  }
  if (f->coll_a == NULL) return 0;
  OK(dao_recycle_acquire(f->coll_a, 0, &f->held_c));
  if (f->held_c == NULL) return 0;

  OK(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &f->tp));
  OK(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), MIB, NULL, &f->tp2));
  if (f->tp == NULL || f->tp2 == NULL) return 0;
  OK(dao_tensor_create(f->tp, TENSOR_BYTES, &f->t));
  OK(dao_tensor_create(f->tp, TENSOR_BYTES, &f->t_unwritten));
  OK(dao_tensor_create(f->tp, TENSOR_BYTES, &f->t_released));
  OK(dao_tensor_create(f->tp2, TENSOR_BYTES, &f->t2));
  if (f->t == NULL || f->t_unwritten == NULL || f->t_released == NULL || f->t2 == NULL) return 0;
  write_tensor(f->t, SEED_TENSOR);
  write_tensor(f->t2, SEED_TENSOR2);
  write_tensor(f->t_released, 12);
  OK(dao_tensor_release(f->t_released));
  OK(dao_tiered_synchronize(f->tp));
  OK(dao_tiered_synchronize(f->tp2));

  /* Nothing cached: a failing allocation then has nothing to release, so
   * its statistics stay exactly as they were. */
  OK(dao_allocator_trim(f->buddy, NULL));
  OK(dao_allocator_trim(f->caching, NULL));
  OK(dao_allocator_trim(f->system, NULL));
  OK(dao_allocator_trim(f->def_cpu, NULL));
  OK(dao_allocator_trim(f->def_sim0, NULL));
  OK(dao_allocator_trim(f->def_sim1, NULL));
  return g_notes_len == 0;
}

static void teardown(fixture *f) {
  dao_buffer *b = NULL;
  if (f->tp != NULL) (void)dao_tiered_destroy(f->tp);
  if (f->tp2 != NULL) (void)dao_tiered_destroy(f->tp2);
  if (f->pool != NULL) {
    (void)dao_recycle_close(f->pool);
    while (dao_recycle_take(f->pool, 0, &b) == DAO_OK) (void)dao_buffer_release(b);
  }
  if (f->held != NULL) (void)dao_buffer_release(f->held);
  if (f->held2 != NULL) (void)dao_buffer_release(f->held2);
  if (f->held_c != NULL) (void)dao_buffer_release(f->held_c);
  if (f->pool != NULL) (void)dao_recycle_destroy(f->pool);
  if (f->pool2 != NULL) (void)dao_recycle_destroy(f->pool2);
  if (f->coll != NULL) (void)dao_collection_destroy(f->coll);
  if (f->snap != NULL) (void)dao_snapshot_destroy(f->snap);
  if (f->e0 != NULL) (void)dao_event_destroy(f->e0);
  if (f->e1 != NULL) (void)dao_event_destroy(f->e1);
  if (f->ecpu != NULL) (void)dao_event_destroy(f->ecpu);
  if (f->s0 != NULL) (void)dao_stream_destroy(f->s0);
  if (f->s1 != NULL) (void)dao_stream_destroy(f->s1);
  if (f->scpu != NULL) (void)dao_stream_destroy(f->scpu);
  if (f->p_cpu != NULL) (void)dao_free(dao_place_cpu(), f->p_cpu);
  if (f->p_sim0 != NULL) (void)dao_free(dao_place_sim(0), f->p_sim0);
  if (f->p_sim1 != NULL) (void)dao_free(dao_place_sim(1), f->p_sim1);
  if (f->blk_buddy != NULL) (void)dao_allocator_free(f->buddy, f->blk_buddy);
  if (f->blk_caching != NULL) (void)dao_allocator_free(f->caching, f->blk_caching);
  if (f->blk_system != NULL) (void)dao_allocator_free(f->system, f->blk_system);
  if (f->buddy != NULL) (void)dao_allocator_destroy(f->buddy);
  if (f->caching != NULL) (void)dao_allocator_destroy(f->caching);
  if (f->system != NULL) (void)dao_allocator_destroy(f->system);
  free(f->fake);
  f->fake = NULL;
}

/* What must not change: numbers read through the API, with their names. */
#define MAX_FIELDS 256
typedef struct state {
  int n;
  const char *name[MAX_FIELDS];
  uint64_t value[MAX_FIELDS];
} state;

static void put(state *s, const char *name, uint64_t value) {
  if (s->n >= MAX_FIELDS) return;
  s->name[s->n] = name;
  s->value[s->n] = value;
  ++s->n;
}

static void put_allocator(state *s, const char *who, dao_allocator *a) {
  dao_allocator_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (a == NULL) return;
  if (dao_allocator_get_stats(a, &st) != DAO_OK) {
    note("%s: dao_allocator_get_stats failed: %s", who, dao_last_error());
    return;
  }
  /* The names live in static tables, one per allocator. */
  static char names[8][16][64];
  static const char *whos[8];
  static int nwho;
  int w;
  for (w = 0; w < nwho && strcmp(whos[w], who) != 0; ++w) {
  }
  if (w == nwho && nwho < 8) whos[nwho++] = who;
  if (w >= 8) return;
  {
    const char *fields[13] = {"allocated_bytes",    "peak_allocated_bytes", "requested_bytes",
                              "reserved_bytes",     "peak_reserved_bytes",  "live_blocks",
                              "alloc_count",        "free_count",           "failed_alloc_count",
                              "system_alloc_count", "system_free_count",    "largest_free_block",
                              "alloc_retry_count"};
    uint64_t values[13];
    int i;
    values[0] = st.allocated_bytes;
    values[1] = st.peak_allocated_bytes;
    values[2] = st.requested_bytes;
    values[3] = st.reserved_bytes;
    values[4] = st.peak_reserved_bytes;
    values[5] = st.live_blocks;
    values[6] = st.alloc_count;
    values[7] = st.free_count;
    values[8] = st.failed_alloc_count;
    values[9] = st.system_alloc_count;
    values[10] = st.system_free_count;
    values[11] = st.largest_free_block;
    values[12] = st.alloc_retry_count;
    for (i = 0; i < 13; ++i) {
      snprintf(names[w][i], sizeof names[w][i], "%s.%s", who, fields[i]);
      put(s, names[w][i], values[i]);
    }
  }
}

static void put_recycle(state *s, const char *who, dao_recycle_pool *pool) {
  static char names[4][15][64];
  static const char *whos[4];
  static int nwho;
  const char *fields[15] = {"created",         "free",         "queued",        "held",
                            "peak_free",       "peak_queued",  "peak_held",     "acquired",
                            "submitted",       "taken",        "acquire_waits", "take_waits",
                            "acquire_wait_ns", "take_wait_ns", "timeouts"};
  dao_recycle_stats st;
  uint64_t values[15];
  int w, i;
  if (pool == NULL) return;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (dao_recycle_get_stats(pool, &st) != DAO_OK) {
    note("%s: dao_recycle_get_stats failed: %s", who, dao_last_error());
    return;
  }
  for (w = 0; w < nwho && strcmp(whos[w], who) != 0; ++w) {
  }
  if (w == nwho && nwho < 4) whos[nwho++] = who;
  if (w >= 4) return;
  values[0] = st.created;
  values[1] = st.free;
  values[2] = st.queued;
  values[3] = st.held;
  values[4] = st.peak_free;
  values[5] = st.peak_queued;
  values[6] = st.peak_held;
  values[7] = st.acquired;
  values[8] = st.submitted;
  values[9] = st.taken;
  values[10] = st.acquire_waits;
  values[11] = st.take_waits;
  values[12] = st.acquire_wait_ns;
  values[13] = st.take_wait_ns;
  values[14] = st.timeouts;
  for (i = 0; i < 15; ++i) {
    snprintf(names[w][i], sizeof names[w][i], "%s.%s", who, fields[i]);
    put(s, names[w][i], values[i]);
  }
}

static void put_tiered(state *s, const char *who, dao_tiered *pool) {
  static char names[4][14][64];
  static const char *whos[4];
  static int nwho;
  /* stall_ns is left out: it is a time. */
  const char *fields[13] = {
      "kernels_submitted", "kernels_run",       "evictions",  "bytes_evicted",
      "fetches",           "bytes_fetched",     "prefetches", "prefetches_in_time",
      "device_bytes",      "peak_device_bytes", "host_bytes", "peak_host_bytes",
      "tensors_live"};
  dao_tiered_stats st;
  uint64_t values[13];
  int w, i;
  if (pool == NULL) return;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  if (dao_tiered_get_stats(pool, &st) != DAO_OK) {
    note("%s: dao_tiered_get_stats failed: %s", who, dao_last_error());
    return;
  }
  for (w = 0; w < nwho && strcmp(whos[w], who) != 0; ++w) {
  }
  if (w == nwho && nwho < 4) whos[nwho++] = who;
  if (w >= 4) return;
  values[0] = st.kernels_submitted;
  values[1] = st.kernels_run;
  values[2] = st.evictions;
  values[3] = st.bytes_evicted;
  values[4] = st.fetches;
  values[5] = st.bytes_fetched;
  values[6] = st.prefetches;
  values[7] = st.prefetches_in_time;
  values[8] = st.device_bytes;
  values[9] = st.peak_device_bytes;
  values[10] = st.host_bytes;
  values[11] = st.peak_host_bytes;
  values[12] = st.tensors_live;
  for (i = 0; i < 13; ++i) {
    snprintf(names[w][i], sizeof names[w][i], "%s.%s", who, fields[i]);
    put(s, names[w][i], values[i]);
  }
}

static void capture(fixture *f, state *s) {
  size_t n = 0, bytes = 0, free_bytes = 0, total = 0;
  int count = 0;
  dao_segment_info seg;
  dao_block_info blk;
  memset(s, 0, sizeof *s);
  /* Work a row may have queued runs first (valid calls). */
  OK(dao_stream_synchronize(f->s0));
  OK(dao_stream_synchronize(f->s1));
  OK(dao_tiered_synchronize(f->tp));
  OK(dao_tiered_synchronize(f->tp2));

  put_allocator(s, "buddy", f->buddy);
  put_allocator(s, "caching", f->caching);
  put_allocator(s, "system", f->system);
  put_allocator(s, "default(cpu)", f->def_cpu);
  put_allocator(s, "default(sim:0)", f->def_sim0);
  put_allocator(s, "default(sim:1)", f->def_sim1);
  OK(dao_used(dao_place_cpu(), &bytes));
  put(s, "dao_used(cpu)", bytes);
  OK(dao_used(dao_place_sim(0), &bytes));
  put(s, "dao_used(sim:0)", bytes);
  OK(dao_used(dao_place_sim(1), &bytes));
  put(s, "dao_used(sim:1)", bytes);
  OK(dao_place_memory_info(dao_place_sim(0), &free_bytes, &total));
  put(s, "memory_info(sim:0).free", free_bytes);
  put(s, "memory_info(sim:0).total", total);
  OK(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  put(s, "memory_info(sim:1).free", free_bytes);
  put(s, "memory_info(sim:1).total", total);
  OK(dao_place_device_count(DAO_PLACE_SIM, &count));
  put(s, "device_count(sim)", (uint64_t)count);
  OK(dao_allocator_usable_size(f->buddy, f->blk_buddy, &n));
  put(s, "usable_size(buddy block)", n);
  OK(dao_allocator_usable_size(f->caching, f->blk_caching, &n));
  put(s, "usable_size(caching block)", n);
  OK(dao_allocator_usable_size(f->system, f->blk_system, &n));
  put(s, "usable_size(system block)", n);
  OK(dao_allocator_usable_size(f->def_cpu, f->p_cpu, &n));
  put(s, "usable_size(dao_alloc cpu block)", n);
  OK(dao_allocator_usable_size(f->def_sim0, f->p_sim0, &n));
  put(s, "usable_size(dao_alloc sim:0 block)", n);

  OK(dao_snapshot_segment_count(f->snap, &n));
  put(s, "snapshot.segments", n);
  memset(&seg, 0, sizeof seg);
  seg.struct_size = sizeof seg;
  OK(dao_snapshot_segment(f->snap, 0, &seg));
  put(s, "snapshot.segment[0].address", seg.address);
  put(s, "snapshot.segment[0].size", seg.size);
  put(s, "snapshot.segment[0].block_count", seg.block_count);
  memset(&blk, 0, sizeof blk);
  blk.struct_size = sizeof blk;
  OK(dao_snapshot_block(f->snap, 0, 0, &blk));
  put(s, "snapshot.block[0][0].address", blk.address);
  put(s, "snapshot.block[0][0].size", blk.size);
  put(s, "snapshot.block[0][0].state", (uint64_t)blk.state);

  put_recycle(s, "pool 'table'", f->pool);
  put_recycle(s, "pool 'other'", f->pool2);
  put_recycle(s, "collection pool 'a'", f->coll_a);
  put_tiered(s, "tiered sim:0", f->tp);
  put_tiered(s, "tiered sim:1", f->tp2);
}

static void compare(const state *before, const state *after, dao_status expected) {
  int i;
  if (before->n != after->n) {
    note("could not read the same statistics before and after the call (%d vs %d)", before->n,
         after->n);
    return;
  }
  for (i = 0; i < before->n; ++i) {
    if (before->value[i] == after->value[i]) continue;
    /* A failed allocation is counted as such: that is no change of state. */
    if (expected == DAO_ERR_OUT_OF_MEMORY && strstr(before->name[i], "failed_alloc_count"))
      continue;
    note("changed: %s was %llu, is %llu", before->name[i], (unsigned long long)before->value[i],
         (unsigned long long)after->value[i]);
  }
}

/* The live data, and a valid call on every object. */
static void check_objects(fixture *f) {
  void *data = NULL, *p = NULL;
  unsigned char bytes[TENSOR_BYTES];
  dao_buffer *b = NULL;
  dao_recycle_pool *found = NULL;
  dao_tensor_state ts;
  int done = 0;

  if (!dao_test_check(f->blk_buddy, BLOCK, SEED_BUDDY)) note("the buddy block's data changed");
  if (!dao_test_check(f->blk_caching, BLOCK, SEED_CACHING))
    note("the caching block's data changed");
  if (!dao_test_check(f->blk_system, BLOCK, SEED_SYSTEM)) note("the system block's data changed");
  if (!dao_test_check(f->p_cpu, BLOCK, SEED_CPU)) note("the dao_alloc(cpu) block's data changed");
  if (!dao_test_check(f->p_sim0, BLOCK, SEED_SIM0))
    note("the dao_alloc(sim:0) block's data changed");
  if (!dao_test_check(f->p_sim1, BLOCK, SEED_SIM1))
    note("the dao_alloc(sim:1) block's data changed");
  OK(dao_buffer_data(f->held, &data));
  if (data == NULL || !dao_test_check(data, BUFFER_BYTES, SEED_HELD))
    note("the held buffer's data changed");
  data = NULL;
  OK(dao_buffer_data(f->held2, &data));
  if (data == NULL || !dao_test_check(data, BUFFER_BYTES, SEED_HELD2))
    note("pool 'other''s held buffer's data changed");
  memset(bytes, 0, sizeof bytes);
  OK(dao_tensor_read(f->t, bytes, sizeof bytes));
  if (!dao_test_check(bytes, sizeof bytes, SEED_TENSOR)) note("tensor t's data changed");
  memset(bytes, 0, sizeof bytes);
  OK(dao_tensor_read(f->t2, bytes, sizeof bytes));
  if (!dao_test_check(bytes, sizeof bytes, SEED_TENSOR2)) note("tensor t2's data changed");

  /* The next valid call works on every object. */
  OK(dao_allocator_alloc(f->buddy, 512, NULL, &p));
  OK(dao_allocator_free(f->buddy, p));
  OK(dao_allocator_alloc(f->caching, 512, f->s0, &p));
  OK(dao_allocator_free(f->caching, p));
  OK(dao_allocator_alloc(f->system, 512, NULL, &p));
  OK(dao_allocator_free(f->system, p));
  OK(dao_alloc(dao_place_cpu(), 512, &p));
  OK(dao_free(dao_place_cpu(), p));
  OK(dao_alloc(dao_place_sim(0), 512, &p));
  OK(dao_free(dao_place_sim(0), p));
  OK(dao_alloc(dao_place_sim(1), 512, &p));
  OK(dao_free(dao_place_sim(1), p));
  OK(dao_memcpy_async(bytes, f->p_sim0, 64, f->s0));
  OK(dao_event_record(f->e0, f->s0));
  OK(dao_stream_wait_event(f->s1, f->e0));
  OK(dao_event_record(f->e1, f->s1));
  OK(dao_event_synchronize(f->e1));
  OK(dao_event_query(f->e0, &done));
  if (!dao_test_check(bytes, 64, SEED_SIM0)) note("a copy on stream s0 did not copy");
  OK(dao_launch_host_func(f->scpu, host_fn, NULL));
  OK(dao_event_record(f->ecpu, f->scpu));
  OK(dao_event_synchronize(f->ecpu));
  OK(dao_recycle_acquire(f->pool, 0, &b));
  if (b != NULL) OK(dao_buffer_release(b));
  b = NULL;
  OK(dao_recycle_acquire(f->pool2, 0, &b));
  if (b != NULL) OK(dao_buffer_release(b));
  b = NULL;
  OK(dao_collection_find(f->coll, "a", &found));
  if (found != f->coll_a) note("the collection no longer finds pool 'a'");
  OK(dao_recycle_acquire(f->coll_a, 0, &b));
  if (b != NULL) OK(dao_buffer_release(b));
  OK(dao_tensor_get_state(f->t, &ts));
  OK(dao_kernel_submit(f->tp, kernel_ok, NULL, &f->t, 1, NULL, 0));
  OK(dao_tiered_synchronize(f->tp));
  OK(dao_kernel_submit(f->tp2, kernel_ok, NULL, &f->t2, 1, NULL, 0));
  OK(dao_tiered_synchronize(f->tp2));
}

static fixture g_fixture;
static state g_before, g_after;

static void resnap(fixture *f) { capture(f, &g_before); }

/* Whether `message` holds `text` outside the name of `function` (so that
 * "allocator" is not found in "dao_allocator_trim: ..." alone). */
static int mentions(const char *message, const char *function, const char *text) {
  char rest[1100];
  size_t n = 0, flen = strlen(function);
  const char *m = message;
  while (*m != '\0' && n + 1 < sizeof rest) {
    if (strncmp(m, function, flen) == 0) {
      rest[n++] = ' ';
      m += flen;
    } else {
      rest[n++] = *m++;
    }
  }
  rest[n] = '\0';
  return strstr(rest, text) != NULL;
}

/* Runs one row and leaves what went wrong in g_notes. */
static void run_row(const row *r) {
  fixture *f = &g_fixture;
  int i;
  g_notes_len = 0;
  g_notes[0] = '\0';
  if (!setup(f)) {
    note("the fixture could not be made");
    teardown(f);
    return;
  }
  capture(f, &g_before);
  r->call(f);
  if (r->expected == DAO_OK) {
    if (f->ncalls != 0) note("a row without a status made %d bad call(s)", f->ncalls);
  } else if (f->ncalls == 0) {
    note("the row made no bad call");
  }
  for (i = 0; i < f->ncalls; ++i) {
    const call_record *c = &f->calls[i];
    const char *verbose = getenv("DAO_BAD_INPUT_VERBOSE");
    const char *which = f->ncalls > 1 ? " (one of the row's calls)" : "";
    if (verbose != NULL && verbose[0] == '1')
      printf("      %s [%s]: %s: %s\n", r->function, r->label, dao_status_string(c->status),
             c->message);
    if (c->status != r->expected) {
      note("returned %d (%s), expected %d (%s)%s; message: '%s'", (int)c->status,
           dao_status_string(c->status), (int)r->expected, dao_status_string(r->expected), which,
           c->message_set ? c->message : "");
    }
    if (!c->message_set || c->message[0] == '\0') {
      note("dao_last_error() was not set by the failing call%s", which);
    } else {
      if (r->mentions != NULL && !mentions(c->message, r->function, r->mentions))
        note("the message '%s' does not mention '%s'%s", c->message, r->mentions, which);
      if (c->want[0] != '\0' && strstr(c->message, c->want) == NULL)
        note("the message '%s' does not name the pointer %s%s", c->message, c->want, which);
    }
  }
  capture(f, &g_after);
  compare(&g_before, &g_after, r->expected);
  check_objects(f);
  teardown(f);
}

/* ------------------------------------------------------------------------- */
/* the runner                                                                 */

static const char *g_library_path;
static const char *g_filter;

static int row_selected(const row *r) {
  char name[512];
  if (g_filter == NULL) return 1;
  snprintf(name, sizeof name, "%s: %s", r->function, r->label);
  return strstr(name, g_filter) != NULL;
}

/* Runs a row in a child process; returns 1 when it passed. `out` receives
 * what went wrong. */
static int run_row_isolated(const row *r, char *out, size_t out_size) {
  int fds[2];
  pid_t pid;
  size_t len = 0;
  int status = 0;
  out[0] = '\0';
  if (pipe(fds) != 0) {
    snprintf(out, out_size, "pipe failed: %s\n", strerror(errno));
    return 0;
  }
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) {
    snprintf(out, out_size, "fork failed: %s\n", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return 0;
  }
  if (pid == 0) {
    size_t written = 0;
    /* A crash must end the child: cmocka's handlers would carry on with
     * the parent's copy of the test run. */
    const int signals[6] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
    int i;
    for (i = 0; i < 6; ++i) signal(signals[i], SIG_DFL);
    close(fds[0]);
    run_row(r);
    while (written < g_notes_len) {
      ssize_t n = write(fds[1], g_notes + written, g_notes_len - written);
      if (n <= 0) break;
      written += (size_t)n;
    }
    close(fds[1]);
    /* exit, not _exit: a leak checker runs at exit. */
    exit(g_notes_len == 0 ? 0 : 1);
  }
  close(fds[1]);
  for (;;) {
    ssize_t n = read(fds[0], out + len, out_size - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
    if (len >= out_size - 1) {
      char sink[256];
      while (read(fds[0], sink, sizeof sink) > 0) {
      }
      break;
    }
  }
  out[len] = '\0';
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    snprintf(out + len, out_size - len, "crashed: killed by signal %d (%s)\n", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
    return 0;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && len == 0) {
    snprintf(out + len, out_size - len,
             "the child exited with status %d after the row's checks passed (a sanitizer or "
             "leak report above?)\n",
             WEXITSTATUS(status));
    return 0;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && len == 0;
}

static void print_indented(const char *text) {
  const char *line = text;
  while (*line != '\0') {
    const char *end = strchr(line, '\n');
    size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
    print_message("      %.*s\n", (int)n, line);
    line += n;
    if (*line == '\n') ++line;
  }
}

static void every_row_gives_its_status_and_changes_nothing(void **state_) {
  static char out[NOTES_BYTES + 512];
  const char *no_fork = getenv("DAO_BAD_INPUT_NO_FORK");
  size_t i, ran = 0, failed = 0;
  /* DAO_BAD_INPUT_PART=k/n: only every n-th row from the k-th (1-based), so
     that ctest runs the table in parts, in parallel, each well under its
     time limit on a busy machine (issue 20). */
  const char *part = getenv("DAO_BAD_INPUT_PART");
  unsigned part_k = 1, part_n = 1;
  (void)state_;
  if (part != NULL && (sscanf(part, "%u/%u", &part_k, &part_n) != 2 || part_n == 0 || part_k == 0 ||
                       part_k > part_n)) {
    print_error("DAO_BAD_INPUT_PART='%s': expected k/n with 1 <= k <= n\n", part);
    fail();
  }
  for (i = 0; i < ROW_COUNT; ++i) {
    const row *r = &g_rows[i];
    int passed;
    if (i % part_n != part_k - 1 || !row_selected(r)) continue;
    ++ran;
    if (no_fork != NULL && no_fork[0] == '1') {
      run_row(r);
      snprintf(out, sizeof out, "%s", g_notes);
      passed = g_notes_len == 0;
    } else {
      passed = run_row_isolated(r, out, sizeof out);
    }
    if (!passed) {
      ++failed;
      print_message("FAIL  %s [%s]\n", r->function, r->label);
      print_indented(out);
    }
  }
  print_message("%zu of %zu rows ran, %zu failed\n", ran, (size_t)ROW_COUNT, failed);
  if (ran == 0) {
    print_error("no row matches '%s'\n", g_filter != NULL ? g_filter : "");
    fail();
  }
  if (failed != 0) fail_msg("%zu of %zu rows failed (listed above)", failed, ran);
}

/* The exported dao_* functions of the library, from nm. */
#define MAX_SYMBOLS 1024
static char g_symbols[MAX_SYMBOLS][256];
static size_t g_symbol_count;

static int read_exports(const char *library) {
  char command[4096], line[512];
  FILE *pipe_in;
  int status;
  g_symbol_count = 0;
  snprintf(command, sizeof command, "nm -D --defined-only '%s' 2>&1", library);
  pipe_in = popen(command, "r");
  if (pipe_in == NULL) return 0;
  while (fgets(line, sizeof line, pipe_in) != NULL) {
    char address[64], type[8], name[256];
    if (sscanf(line, "%63s %7s %255s", address, type, name) != 3) continue;
    if (strcmp(type, "T") != 0 || strncmp(name, "dao_", 4) != 0) continue;
    if (g_symbol_count < MAX_SYMBOLS) {
      snprintf(g_symbols[g_symbol_count], sizeof g_symbols[0], "%s", name);
      ++g_symbol_count;
    }
  }
  status = pclose(pipe_in);
  return status == 0;
}

static void every_exported_function_has_a_row(void **state_) {
  size_t i, j, missing = 0, unknown = 0, covered = 0;
  (void)state_;
  if (g_library_path == NULL) {
    fail_msg("give the path of libdao as the first argument (CMake passes $<TARGET_FILE:dao>)");
  }
  if (!read_exports(g_library_path) || g_symbol_count == 0) {
    fail_msg("could not read the exported symbols of %s with nm -D --defined-only", g_library_path);
  }
  for (i = 0; i < g_symbol_count; ++i) {
    int has_row = 0;
    for (j = 0; j < ROW_COUNT && !has_row; ++j)
      has_row = strcmp(g_rows[j].function, g_symbols[i]) == 0;
    if (has_row) {
      ++covered;
    } else {
      print_error("exported function %s has no row in the bad-input table\n", g_symbols[i]);
      ++missing;
    }
  }
  for (j = 0; j < ROW_COUNT; ++j) {
    int exported = 0, earlier = 0;
    for (i = 0; i < j && !earlier; ++i)
      earlier = strcmp(g_rows[i].function, g_rows[j].function) == 0;
    if (earlier) continue;
    for (i = 0; i < g_symbol_count && !exported; ++i)
      exported = strcmp(g_rows[j].function, g_symbols[i]) == 0;
    if (!exported) {
      print_error("the table has rows for %s, which %s does not export\n", g_rows[j].function,
                  g_library_path);
      ++unknown;
    }
  }
  print_message("%zu exported functions, %zu with rows; %zu rows in the table\n", g_symbol_count,
                covered, (size_t)ROW_COUNT);
  if (missing != 0 || unknown != 0) {
    fail_msg("%zu exported function(s) without rows, %zu row function(s) not exported (listed "
             "above)",
             missing, unknown);
  }
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_exported_function_has_a_row),
      cmocka_unit_test(every_row_gives_its_status_and_changes_nothing),
  };
  g_library_path = argc > 1 ? argv[1] : NULL;
  g_filter = argc > 2 ? argv[2] : NULL;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
