/* dao_soak: a long-running stress program that mixes every feature of libdao
 * from several threads for a given time and checks every byte of live data.
 *
 *   dao_soak [--seconds N] [--threads N] [--seed N] [--quiet]
 *
 * What runs (all at once, for --seconds, default 60):
 *   - --threads worker threads (default 4), each doing random operations on
 *     eight shared allocators (buddy, caching and system on the CPU and on two
 *     SIM devices, with different configs) and on the place defaults
 *     (dao_alloc / dao_free on CPU, SIM 0 and SIM 1): allocations on the
 *     default stream and on the worker's own streams, fills by host memcpy,
 *     by dao_memcpy_async and by host functions in stream order, copies
 *     between blocks of any two places ordered with events, record_stream
 *     with a delayed reader on another (sometimes temporary) stream and a
 *     reallocation on the block's stream right after the free, frees of
 *     blocks that another worker allocated (without synchronising its
 *     stream: stream order must keep them safe), misuse (interior, foreign,
 *     wrong-allocator and wrong-place pointers must give
 *     DAO_ERR_INVALID_POINTER and change nothing), impossible sizes, trims,
 *     statistics, snapshots, private allocators of every strategy (alone or
 *     stacked with `upstream=`) created and destroyed;
 *   - recycle pools (a collection of two, CPU and SIM 0) with a producer and
 *     a consumer thread that block, while workers also produce and consume
 *     without blocking; the consumer checks every byte and the order;
 *   - one tiered pool on SIM 1 whose device budget (8 MiB) is smaller than
 *     the workers' tensors together; each worker owns its tensors, writes
 *     them, submits kernels that compute checkable results, reads them back
 *     and compares with the same kernels run on the host;
 *   - a monitor thread reading statistics, snapshots and JSON of every
 *     allocator, pool and place concurrently and checking their invariants.
 * Every live block holds a pattern derived from an id; each worker checks all
 * its blocks periodically (by host memcmp after synchronising, or by a host
 * function queued in stream order), and at the end the main thread checks
 * every byte of every block, tensor and buffer still live, frees everything,
 * destroys every object and checks that all memory came back.
 *
 * Prints a summary (operations per kind, bytes written and checked, errors)
 * and exits 1 on any error, 2 on bad usage. DAO_SIM_DEVICES, when set, must
 * give at least 2 devices; otherwise 2 x 96 MiB are configured. */
#define _GNU_SOURCE

#include <dao.h>

#include "strategy/strategy_list.h"

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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ------------------------------------------------------------------------- */
/* errors and counters                                                         */

static long g_errors; /* __atomic */
static int g_quiet;
static volatile int g_stop; /* __atomic: 1 once time is up */

static void report_error(const char *fmt, ...) {
  long n = __atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
  if (n <= 50) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dao_soak: ERROR: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
  } else if (n == 51) {
    fprintf(stderr, "dao_soak: (further errors are counted, not printed)\n");
  }
}

/* Reports a status other than `want`. Returns 1 when it was `want`. */
#define EXPECT(expr, want) expect_status((expr), (want), #expr, __FILE__, __LINE__)

static int expect_status(dao_status got, dao_status want, const char *what, const char *file,
                         int line) {
  if (got == want) return 1;
  report_error("%s:%d: %s gave %d (%s), expected %d (%s): %s", file, line, what, (int)got,
               dao_status_string(got), (int)want, dao_status_string(want), dao_last_error());
  return 0;
}

enum op_kind {
  OP_ALLOC,
  OP_ALLOC_OOM,
  OP_FREE,
  OP_CROSS_FREE,
  OP_PLACE_ALLOC,
  OP_FILL_HOST,
  OP_FILL_COPY,
  OP_FILL_HOSTFN,
  OP_COPY,
  OP_RECORD_STREAM,
  OP_TEMP_STREAM,
  OP_CHECK_SYNC,
  OP_CHECK_HOSTFN,
  OP_MISUSE,
  OP_HUGE,
  OP_TRIM,
  OP_STATS,
  OP_SNAPSHOT,
  OP_PRIVATE_ALLOCATOR,
  OP_RECYCLE_PRODUCE,
  OP_RECYCLE_CONSUME,
  OP_TENSOR_WRITE,
  OP_KERNEL,
  OP_TENSOR_READ,
  OP_TENSOR_RECREATE,
  OP_TENSOR_MISUSE,
  OP_MONITOR,
  OP_KIND_COUNT
};

static const char *const op_names[OP_KIND_COUNT] = {"alloc",
                                                    "alloc_out_of_memory",
                                                    "free",
                                                    "cross_thread_free",
                                                    "place_alloc",
                                                    "fill_host",
                                                    "fill_memcpy",
                                                    "fill_host_func",
                                                    "copy_async",
                                                    "record_stream",
                                                    "temp_stream",
                                                    "check_sync",
                                                    "check_host_func",
                                                    "misuse",
                                                    "huge_size",
                                                    "trim",
                                                    "stats",
                                                    "snapshot",
                                                    "private_allocator",
                                                    "recycle_produce",
                                                    "recycle_consume",
                                                    "tensor_write",
                                                    "kernel",
                                                    "tensor_read",
                                                    "tensor_recreate",
                                                    "tensor_misuse",
                                                    "monitor_pass"};

typedef struct counters {
  uint64_t ops[OP_KIND_COUNT];
  uint64_t bytes_written;
  uint64_t bytes_checked;
} counters;

/* Checked bytes counted by host functions on stream threads. */
static uint64_t g_hostfn_bytes_checked; /* __atomic */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_next(uint64_t *state) { /* xorshift64* */
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static size_t rng_below(uint64_t *state, size_t n) { return (size_t)(rng_next(state) % n); }

/* ------------------------------------------------------------------------- */
/* patterns: block contents are g_table + offset_of(id), so a fill is one     */
/* memcpy from a read-only table (also on a stream) and a check one memcmp.  */

#define PATTERN_PERIOD 65521u /* prime */
#define MAX_BLOCK (8 * MIB)
static unsigned char *g_table; /* PATTERN_PERIOD + MAX_BLOCK bytes */

static size_t offset_of(uint64_t id) {
  uint64_t h = id * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return (size_t)(h % PATTERN_PERIOD);
}

static const unsigned char *pattern_of(uint64_t id) { return g_table + offset_of(id); }

static void make_table(void) {
  uint64_t s = 0x1234567887654321ull;
  size_t i;
  g_table = (unsigned char *)malloc(PATTERN_PERIOD + MAX_BLOCK);
  if (g_table == NULL) {
    fprintf(stderr, "dao_soak: no memory for the pattern table\n");
    exit(2);
  }
  for (i = 0; i < PATTERN_PERIOD; ++i) g_table[i] = (unsigned char)(rng_next(&s) >> 56);
  for (i = PATTERN_PERIOD; i < PATTERN_PERIOD + MAX_BLOCK; ++i)
    g_table[i] = g_table[i - PATTERN_PERIOD];
}

/* Returns 1 when `p` holds the pattern of `id`, else reports and returns 0. */
static int check_bytes(const void *p, size_t n, uint64_t id, const char *what) {
  const unsigned char *want = pattern_of(id);
  if (memcmp(p, want, n) == 0) return 1;
  {
    const unsigned char *got = (const unsigned char *)p;
    size_t i = 0;
    while (i < n && got[i] == want[i]) ++i;
    report_error("%s: %p (%zu bytes, id %" PRIu64
                 ") corrupted at byte %zu: 0x%02x, expected 0x%02x",
                 what, p, n, id, i, got[i], want[i]);
  }
  return 0;
}

/* ------------------------------------------------------------------------- */
/* places, shared allocators, streams                                          */

enum { PL_CPU, PL_SIM0, PL_SIM1, PL_COUNT };
static dao_place place_of(int pl) {
  return pl == PL_CPU ? dao_place_cpu() : dao_place_sim(pl == PL_SIM0 ? 0 : 1);
}
static const char *const place_names[PL_COUNT] = {"cpu", "sim0", "sim1"};

typedef struct slot {
  const char *strategy;
  int pl;
  const char *config;
  int caching;      /* stream-ordered */
  dao_allocator *a; /* NULL for a place default used through dao_alloc */
} slot;

/* The shared allocators, then the three place defaults. */
static slot g_slots[] = {
    {"buddy", PL_CPU, "chunk_size=4MiB", 0, NULL},
    {"caching", PL_CPU, "fast_reuse=true", 1, NULL},
    {"system", PL_CPU, "", 0, NULL},
    {"buddy", PL_SIM0, "chunk_size=8MiB,max_pool=96MiB", 0, NULL},
    {"caching", PL_SIM0, "", 1, NULL},
    {"system", PL_SIM0, "", 0, NULL},
    {"caching", PL_SIM1,
     "expandable_segments=false,roundup_power2_divisions=4,"
     "garbage_collection_threshold=0.8",
     1, NULL},
    {"caching", PL_SIM1, "max_split_size=32MiB,reserve_slack=0.5,max_pool=64MiB,fast_reuse=true", 1,
     NULL},
    {"(dao_alloc)", PL_CPU, NULL, 0, NULL},
    {"(dao_alloc)", PL_SIM0, NULL, 0, NULL},
    {"(dao_alloc)", PL_SIM1, NULL, 0, NULL},
};
#define NSLOTS ((int)(sizeof g_slots / sizeof g_slots[0]))
#define NSHARED 8 /* slots with an allocator object */

/* Whether an out-of-memory status is a legitimate outcome on this slot: SIM
 * devices have a hard capacity and some slots a max_pool. */
static int may_run_out(int s) { return g_slots[s].pl != PL_CPU || s == 0; }

static dao_status slot_alloc(int s, size_t n, dao_stream stream, void **p) {
  if (g_slots[s].a != NULL) return dao_allocator_alloc(g_slots[s].a, n, stream, p);
  return dao_alloc(place_of(g_slots[s].pl), n, p);
}

static dao_status slot_free(int s, void *p) {
  if (g_slots[s].a != NULL) return dao_allocator_free(g_slots[s].a, p);
  return dao_free(place_of(g_slots[s].pl), p);
}

/* ------------------------------------------------------------------------- */
/* blocks and workers                                                           */

typedef struct block {
  void *p;
  size_t n;
  uint64_t id; /* pattern id */
  int slot;
  dao_stream stream; /* the stream its writes are queued on (NULL: none) */
} block;

#define MAX_BLOCKS 48
#define MAX_LIVE_BYTES (24 * MIB)
#define STREAMS_PER_PLACE 2

/* tiered tensors of one worker */
#define TENSORS_PER_WORKER 6
typedef struct wtensor {
  dao_tensor *t;
  size_t words;
  uint32_t *model; /* host reference */
  int written;
} wtensor;

typedef struct worker {
  int index;
  pthread_t thread;
  uint64_t rng;
  uint64_t next_id;
  block blocks[MAX_BLOCKS];
  int nblocks;
  size_t live_bytes;
  dao_stream streams[PL_COUNT][STREAMS_PER_PLACE];
  dao_event events[PL_COUNT];
  wtensor tensors[TENSORS_PER_WORKER];
  uint32_t kernel_id;
  uint64_t recycle_last_seq[2];
  counters c;
  uint64_t oom;      /* out-of-memory results where they may happen */
  uint64_t progress; /* __atomic: loop iterations, for the progress line */
} worker;

static worker *g_workers;
static int g_nworkers;

/* Blocks handed from one worker to another, freed there. */
#define EXCHANGE_SLOTS 64
static pthread_mutex_t g_exchange_mu = PTHREAD_MUTEX_INITIALIZER;
static block g_exchange[EXCHANGE_SLOTS];
static int g_exchange_from[EXCHANGE_SLOTS];
static int g_exchange_count;

static uint64_t new_id(worker *w) { return ((uint64_t)(w->index + 1) << 40) | ++w->next_id; }

/* Where a stream of a worker lives; -1 for NULL. */
static int stream_place(dao_stream s) {
  dao_place pl;
  if (s == NULL) return -1;
  if (dao_stream_place(s, &pl) != DAO_OK) {
    report_error("dao_stream_place failed: %s", dao_last_error());
    return -1;
  }
  return pl.kind == DAO_PLACE_CPU ? PL_CPU : pl.device == 0 ? PL_SIM0 : PL_SIM1;
}

/* --- host functions queued on streams --- */

typedef struct hostfn_task {
  void *p;
  size_t n;
  uint64_t id;
  int spin_us; /* a delay before the work, to widen race windows */
  int check;   /* 1: check, 0: fill */
} hostfn_task;

static void spin_for_us(int us) {
  double until = now_seconds() + us * 1e-6;
  while (now_seconds() < until) {
  }
}

static void hostfn_run(void *user_data) {
  hostfn_task *t = (hostfn_task *)user_data;
  if (t->spin_us > 0) spin_for_us(t->spin_us);
  if (t->p != NULL) {
    if (t->check) {
      if (check_bytes(t->p, t->n, t->id, "host-function check"))
        __atomic_add_fetch(&g_hostfn_bytes_checked, (uint64_t)t->n, __ATOMIC_RELAXED);
    } else {
      memcpy(t->p, pattern_of(t->id), t->n);
    }
  }
  free(t);
}

static void queue_hostfn(dao_stream s, void *p, size_t n, uint64_t id, int check, int spin_us) {
  hostfn_task *t = (hostfn_task *)malloc(sizeof *t);
  if (t == NULL) {
    report_error("out of host memory for a host function");
    return;
  }
  t->p = p;
  t->n = n;
  t->id = id;
  t->check = check;
  t->spin_us = spin_us;
  if (!EXPECT(dao_launch_host_func(s, hostfn_run, t), DAO_OK)) free(t);
}

/* --- fills and checks --- */

static void sync_stream(dao_stream s) {
  if (s != NULL) EXPECT(dao_stream_synchronize(s), DAO_OK);
}

/* Writes the block's pattern, in the block's stream order. */
static void fill_block(worker *w, block *b) {
  unsigned how = b->stream == NULL ? 0u : (unsigned)rng_below(&w->rng, 3);
  if (how == 0) {
    sync_stream(b->stream);
    memcpy(b->p, pattern_of(b->id), b->n);
    ++w->c.ops[OP_FILL_HOST];
  } else if (how == 1) {
    EXPECT(dao_memcpy_async(b->p, pattern_of(b->id), b->n, b->stream), DAO_OK);
    ++w->c.ops[OP_FILL_COPY];
  } else {
    queue_hostfn(b->stream, b->p, b->n, b->id, 0, 0);
    ++w->c.ops[OP_FILL_HOSTFN];
  }
  w->c.bytes_written += b->n;
}

/* Checks a block: on the host after its stream is done, or by a host function
 * in its stream order. */
static void check_block(worker *w, block *b, int allow_async) {
  if (b->stream != NULL && allow_async && (rng_next(&w->rng) & 1)) {
    queue_hostfn(b->stream, b->p, b->n, b->id, 1, 0);
    ++w->c.ops[OP_CHECK_HOSTFN];
    return;
  }
  sync_stream(b->stream);
  if (check_bytes(b->p, b->n, b->id, g_slots[b->slot].strategy)) w->c.bytes_checked += b->n;
  ++w->c.ops[OP_CHECK_SYNC];
}

/* Frees a block (its contents checked first unless told not to). Buddy and
 * system give memory back at once: their stream is synchronised first;
 * caching is stream-ordered and is freed with work still queued. */
static void free_block(worker *w, block *b, int check) {
  if (check) check_block(w, b, 1);
  if (!g_slots[b->slot].caching && g_slots[b->slot].a != NULL) sync_stream(b->stream);
  EXPECT(slot_free(b->slot, b->p), DAO_OK);
}

static void drop_block(worker *w, int i) {
  w->live_bytes -= w->blocks[i].n;
  w->blocks[i] = w->blocks[--w->nblocks];
}

static size_t random_size(worker *w) {
  unsigned r = (unsigned)rng_below(&w->rng, 100);
  if (r < 55) return 1 + rng_below(&w->rng, 4096);
  if (r < 85) return 4096 + rng_below(&w->rng, 252 * KIB);
  if (r < 98) return 256 * KIB + rng_below(&w->rng, 1792 * KIB);
  return 2 * MIB + rng_below(&w->rng, 6 * MIB);
}

/* A stream for an allocation on slot s: NULL, or one of the worker's streams
 * of the slot's place (caching needs its own place; buddy and system take
 * any, so sometimes another place's). */
static dao_stream pick_stream(worker *w, int s) {
  unsigned r = (unsigned)rng_below(&w->rng, 8);
  int pl = g_slots[s].pl;
  if (g_slots[s].a == NULL || r == 0) return NULL;
  if (!g_slots[s].caching && r == 1) pl = (int)rng_below(&w->rng, PL_COUNT);
  return w->streams[pl][rng_below(&w->rng, STREAMS_PER_PLACE)];
}

/* Allocates a new block on a random slot; returns its index or -1. */
static int alloc_block(worker *w, int s, size_t n, dao_stream stream) {
  block *b;
  void *p = (void *)1;
  dao_status st;
  if (w->nblocks >= MAX_BLOCKS || w->live_bytes + n > MAX_LIVE_BYTES) return -1;
  st = slot_alloc(s, n, stream, &p);
  if (st == DAO_ERR_OUT_OF_MEMORY && may_run_out(s)) {
    ++w->oom;
    ++w->c.ops[OP_ALLOC_OOM];
    if (p != NULL) report_error("a failed allocation did not set the pointer to NULL");
    return -1;
  }
  if (!EXPECT(st, DAO_OK)) return -1;
  ++w->c.ops[s < NSHARED ? OP_ALLOC : OP_PLACE_ALLOC];
  if (p == NULL || ((uintptr_t)p % 256) != 0) {
    report_error("%s on %s gave %p for %zu bytes (NULL or not 256-aligned)", g_slots[s].strategy,
                 place_names[g_slots[s].pl], p, n);
    return -1;
  }
  if (g_slots[s].a != NULL) {
    size_t usable = 0;
    if (EXPECT(dao_allocator_usable_size(g_slots[s].a, p, &usable), DAO_OK) && usable < n)
      report_error("usable size %zu < %zu asked", usable, n);
  }
  b = &w->blocks[w->nblocks++];
  b->p = p;
  b->n = n;
  b->id = new_id(w);
  b->slot = s;
  b->stream = stream;
  w->live_bytes += n;
  fill_block(w, b);
  return w->nblocks - 1;
}

/* ------------------------------------------------------------------------- */
/* operations of a worker                                                      */

static void op_alloc(worker *w) {
  int s = (int)rng_below(&w->rng, NSLOTS);
  size_t n = random_size(w);
  void *p = (void *)1;
  if (rng_below(&w->rng, 64) == 0) { /* size 0: NULL and OK */
    EXPECT(slot_alloc(s, 0, NULL, &p), DAO_OK);
    if (p != NULL) report_error("a 0-byte allocation gave %p, not NULL", p);
    return;
  }
  alloc_block(w, s, n, pick_stream(w, s));
}

static void op_free(worker *w) {
  int i;
  if (w->nblocks == 0) return;
  i = (int)rng_below(&w->rng, (size_t)w->nblocks);
  free_block(w, &w->blocks[i], 1);
  drop_block(w, i);
  ++w->c.ops[OP_FREE];
}

/* Hands a block to the exchange, or frees one another worker left there. */
static void op_exchange(worker *w) {
  int i;
  if ((rng_next(&w->rng) & 1) && w->nblocks > 0) {
    i = (int)rng_below(&w->rng, (size_t)w->nblocks);
    /* Buddy and system free at once: whoever frees must find the work done. */
    if (!g_slots[w->blocks[i].slot].caching) sync_stream(w->blocks[i].stream);
    pthread_mutex_lock(&g_exchange_mu);
    if (g_exchange_count < EXCHANGE_SLOTS) {
      g_exchange_from[g_exchange_count] = w->index;
      g_exchange[g_exchange_count++] = w->blocks[i];
      w->live_bytes -= w->blocks[i].n;
      w->blocks[i] = w->blocks[--w->nblocks];
    }
    pthread_mutex_unlock(&g_exchange_mu);
  } else {
    block b;
    int found = 0;
    pthread_mutex_lock(&g_exchange_mu);
    for (i = 0; i < g_exchange_count; ++i) {
      if (g_exchange_from[i] != w->index || g_nworkers == 1) {
        b = g_exchange[i];
        g_exchange[i] = g_exchange[g_exchange_count - 1];
        g_exchange_from[i] = g_exchange_from[g_exchange_count - 1];
        --g_exchange_count;
        found = 1;
        break;
      }
    }
    pthread_mutex_unlock(&g_exchange_mu);
    if (!found) return;
    /* Caching: check in the owner's stream order (a host function on its
     * stream), then free at once: the allocator must not reuse or unmap the
     * block before that work has run. Buddy and system: the owner finished
     * its work before handing the block over. */
    if (b.stream != NULL && g_slots[b.slot].caching) {
      queue_hostfn(b.stream, b.p, b.n, b.id, 1, (int)rng_below(&w->rng, 50));
      ++w->c.ops[OP_CHECK_HOSTFN];
    } else {
      if (check_bytes(b.p, b.n, b.id, "cross-thread block")) w->c.bytes_checked += b.n;
      ++w->c.ops[OP_CHECK_SYNC];
    }
    EXPECT(slot_free(b.slot, b.p), DAO_OK);
    ++w->c.ops[OP_CROSS_FREE];
  }
}

/* Copies a live block into a new block of any slot, on a stream of the new
 * block, ordered after the source's stream with an event. */
static void op_copy(worker *w) {
  block src;
  int s, j, src_pl, dst_pl;
  dao_stream ds;
  if (w->nblocks == 0) return;
  src = w->blocks[rng_below(&w->rng, (size_t)w->nblocks)];
  s = (int)rng_below(&w->rng, NSLOTS);
  ds = pick_stream(w, s);
  if (w->nblocks >= MAX_BLOCKS || w->live_bytes + src.n > MAX_LIVE_BYTES) return;
  {
    void *p = NULL;
    dao_status st = slot_alloc(s, src.n, ds, &p);
    if (st == DAO_ERR_OUT_OF_MEMORY && may_run_out(s)) {
      ++w->oom;
      ++w->c.ops[OP_ALLOC_OOM];
      return;
    }
    if (!EXPECT(st, DAO_OK)) return;
    ++w->c.ops[s < NSHARED ? OP_ALLOC : OP_PLACE_ALLOC];
    j = w->nblocks++;
    w->blocks[j].p = p;
    w->blocks[j].n = src.n;
    w->blocks[j].id = src.id; /* the copy carries the source's pattern */
    w->blocks[j].slot = s;
    w->blocks[j].stream = ds;
    w->live_bytes += src.n;
  }
  src_pl = stream_place(src.stream);
  dst_pl = stream_place(ds);
  if (ds == NULL) {
    sync_stream(src.stream);
    EXPECT(dao_memcpy_async(w->blocks[j].p, src.p, src.n, NULL), DAO_OK);
  } else {
    if (src.stream != NULL && src.stream != ds) {
      dao_event ev = w->events[src_pl];
      EXPECT(dao_event_record(ev, src.stream), DAO_OK);
      if (dst_pl != PL_CPU && src_pl != PL_CPU) EXPECT(dao_stream_wait_event(ds, ev), DAO_OK);
      else EXPECT(dao_event_synchronize(ev), DAO_OK);
    }
    EXPECT(dao_memcpy_async(w->blocks[j].p, src.p, src.n, ds), DAO_OK);
    if (src.stream != ds) {
      /* The source is read on ds: tell a caching allocator, or wait. */
      if (g_slots[src.slot].caching && g_slots[src.slot].a != NULL &&
          dst_pl == g_slots[src.slot].pl)
        EXPECT(dao_allocator_record_stream(g_slots[src.slot].a, src.p, ds), DAO_OK);
      else sync_stream(ds);
    }
  }
  w->c.bytes_written += src.n;
  ++w->c.ops[OP_COPY];
}

/* The record_stream race: a caching block is filled on its stream S, read
 * on another stream T after a delay, recorded on T and freed at once; then
 * a block of the same size is allocated on S and overwritten at once. If
 * the allocator handed the block out before T's read ran, the read sees the
 * new pattern. T is sometimes a temporary stream, destroyed afterwards. */
static void op_record_stream(worker *w) {
  static const int caching_slots[] = {1, 4, 6, 7};
  int s = caching_slots[rng_below(&w->rng, 4)];
  int pl = g_slots[s].pl, i, k;
  dao_stream S = w->streams[pl][0], T = w->streams[pl][1];
  int temp = (int)(rng_next(&w->rng) & 1);
  size_t n = random_size(w);
  unsigned char *staging;
  uint64_t id;
  if (n > 2 * MIB) n = 2 * MIB;
  staging = (unsigned char *)malloc(n);
  if (staging == NULL) return;
  i = alloc_block(w, s, n, S);
  if (i < 0) {
    free(staging);
    return;
  }
  id = w->blocks[i].id;
  if (temp) {
    if (!EXPECT(dao_stream_create(place_of(pl), &T), DAO_OK)) {
      free(staging);
      return;
    }
    ++w->c.ops[OP_TEMP_STREAM];
  }
  EXPECT(dao_event_record(w->events[pl], S), DAO_OK);
  if (pl != PL_CPU) EXPECT(dao_stream_wait_event(T, w->events[pl]), DAO_OK);
  else EXPECT(dao_event_synchronize(w->events[pl]), DAO_OK);
  queue_hostfn(T, NULL, 0, 0, 0, 20 + (int)rng_below(&w->rng, 300)); /* a delay on T */
  EXPECT(dao_memcpy_async(staging, w->blocks[i].p, n, T), DAO_OK);
  EXPECT(dao_allocator_record_stream(g_slots[s].a, w->blocks[i].p, T), DAO_OK);
  EXPECT(dao_allocator_free(g_slots[s].a, w->blocks[i].p), DAO_OK);
  drop_block(w, i);
  /* Reallocate on S at once and overwrite. */
  k = alloc_block(w, s, n, S);
  sync_stream(T);
  if (check_bytes(staging, n, id, "record_stream reader")) w->c.bytes_checked += n;
  if (temp) EXPECT(dao_stream_destroy(T), DAO_OK);
  (void)k;
  free(staging);
  ++w->c.ops[OP_RECORD_STREAM];
}

/* Misuse that must give DAO_ERR_INVALID_POINTER and change nothing. */
static void op_misuse(worker *w) {
  block *b;
  int other;
  size_t usable = 0;
  char local[512];
  if (w->nblocks == 0) return;
  b = &w->blocks[rng_below(&w->rng, (size_t)w->nblocks)];
  switch (rng_below(&w->rng, 5)) {
    case 0: /* interior pointer */
      if (b->n > 1)
        EXPECT(slot_free(b->slot, (char *)b->p + 1 + rng_below(&w->rng, b->n - 1)),
               DAO_ERR_INVALID_POINTER);
      break;
    case 1: /* foreign pointer: the stack */
      EXPECT(slot_free(b->slot, local + 256 - ((uintptr_t)local % 256)), DAO_ERR_INVALID_POINTER);
      break;
    case 2: /* another allocator */
      other = (int)rng_below(&w->rng, NSHARED);
      if (other != b->slot)
        EXPECT(dao_allocator_free(g_slots[other].a, b->p), DAO_ERR_INVALID_POINTER);
      break;
    case 3: /* another place */
      if (g_slots[b->slot].a == NULL) {
        int pl = (g_slots[b->slot].pl + 1 + (int)rng_below(&w->rng, PL_COUNT - 1)) % PL_COUNT;
        EXPECT(dao_free(place_of(pl), b->p), DAO_ERR_INVALID_POINTER);
      } else {
        EXPECT(dao_free(dao_place_cpu(), b->p), DAO_ERR_INVALID_POINTER);
      }
      break;
    default: /* usable size of an interior pointer */
      if (g_slots[b->slot].a != NULL && b->n > 1)
        EXPECT(dao_allocator_usable_size(g_slots[b->slot].a, (char *)b->p + 1, &usable),
               DAO_ERR_INVALID_POINTER);
      break;
  }
  ++w->c.ops[OP_MISUSE];
}

static void op_huge(worker *w) {
  int s = (int)rng_below(&w->rng, NSLOTS);
  void *p = (void *)1;
  size_t n = rng_next(&w->rng) & 1 ? SIZE_MAX - rng_below(&w->rng, 4096) : (size_t)1 << 52;
  EXPECT(slot_alloc(s, n, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
  if (p != NULL) report_error("a failed huge allocation left %p in the pointer", p);
  ++w->c.ops[OP_HUGE];
}

static void op_trim(worker *w) {
  size_t released = 0;
  EXPECT(dao_allocator_trim(g_slots[rng_below(&w->rng, NSHARED)].a, &released), DAO_OK);
  ++w->c.ops[OP_TRIM];
}

/* Invariants of one consistent statistics snapshot. */
static void check_stats(dao_allocator *a, const char *what) {
  dao_allocator_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  if (!EXPECT(dao_allocator_get_stats(a, &s), DAO_OK)) return;
  if (s.peak_allocated_bytes < s.allocated_bytes || s.peak_reserved_bytes < s.reserved_bytes ||
      s.reserved_bytes < s.allocated_bytes || s.requested_bytes > s.allocated_bytes ||
      s.alloc_count - s.free_count != s.live_blocks ||
      (s.live_blocks == 0) != (s.allocated_bytes == 0))
    report_error("%s: inconsistent statistics: allocated %" PRIu64 " (peak %" PRIu64
                 "), requested %" PRIu64 ", reserved %" PRIu64 " (peak %" PRIu64 "), live %" PRIu64
                 ", allocs %" PRIu64 ", frees %" PRIu64,
                 what, s.allocated_bytes, s.peak_allocated_bytes, s.requested_bytes,
                 s.reserved_bytes, s.peak_reserved_bytes, s.live_blocks, s.alloc_count,
                 s.free_count);
}

/* Structure of a snapshot: blocks in address order tile each segment. */
static void check_snapshot(dao_allocator *a, const char *what) {
  dao_snapshot *snap = NULL;
  size_t count = 0, i, j;
  if (!EXPECT(dao_allocator_snapshot(a, &snap), DAO_OK)) return;
  EXPECT(dao_snapshot_segment_count(snap, &count), DAO_OK);
  for (i = 0; i < count; ++i) {
    dao_segment_info seg;
    uintptr_t at;
    memset(&seg, 0, sizeof seg);
    seg.struct_size = sizeof seg;
    if (!EXPECT(dao_snapshot_segment(snap, i, &seg), DAO_OK)) break;
    at = seg.address;
    if (seg.mapped_bytes > seg.size) report_error("%s: segment maps more than it spans", what);
    for (j = 0; j < seg.block_count; ++j) {
      dao_block_info b;
      memset(&b, 0, sizeof b);
      b.struct_size = sizeof b;
      if (!EXPECT(dao_snapshot_block(snap, i, j, &b), DAO_OK)) break;
      if (b.address != at || b.size == 0 ||
          (b.state == DAO_BLOCK_ALLOCATED && b.requested_size > b.size))
        report_error("%s: segment %zu block %zu at %#" PRIxPTR
                     " (size %zu) does not follow %#" PRIxPTR,
                     what, i, j, b.address, b.size, at);
      at = b.address + b.size;
    }
    if (at != seg.address + seg.size)
      report_error("%s: the blocks of segment %zu end at %#" PRIxPTR ", the segment at %#" PRIxPTR,
                   what, i, at, seg.address + seg.size);
  }
  EXPECT(dao_snapshot_destroy(snap), DAO_OK);
}

static void op_stats(worker *w) {
  int s = (int)rng_below(&w->rng, NSHARED);
  dao_stat st;
  check_stats(g_slots[s].a, g_slots[s].strategy);
  if (EXPECT(dao_allocator_get_stat(g_slots[s].a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &st),
             DAO_OK) &&
      (st.peak < st.current || st.current < 0))
    report_error("%s: allocated stat current %" PRId64 " peak %" PRId64, g_slots[s].strategy,
                 st.current, st.peak);
  ++w->c.ops[OP_STATS];
  if (g_slots[s].caching) {
    check_snapshot(g_slots[s].a, "snapshot");
    ++w->c.ops[OP_SNAPSHOT];
  }
}

/* Every strategy, from the library's own list (strategy/strategy_list.h). */
#define SOAK_STRATEGY_NAME(s) #s,
static const char *const g_strategies[] = {DAO_STRATEGY_LIST(SOAK_STRATEGY_NAME)};
#undef SOAK_STRATEGY_NAME
#define NSTRATEGIES ((int)(sizeof g_strategies / sizeof g_strategies[0]))

/* A config for a private allocator of strategy `k`: its defaults, a few keys
 * of its own, or stacked on a random strategy (`upstream=`). Sets *capped
 * when a max_pool may refuse the allocations of op_private_allocator. */
static void private_config(worker *w, int k, char *buf, size_t n, int *capped) {
  const char *name = g_strategies[k];
  const char *below = g_strategies[rng_below(&w->rng, NSTRATEGIES)];
  *capped = 0;
  buf[0] = '\0';
  switch (rng_below(&w->rng, 4)) {
    case 1:
      if (strcmp(name, "buddy") == 0) snprintf(buf, n, "chunk_size=1MiB,initial_pool=1MiB");
      if (strcmp(name, "limit") == 0) snprintf(buf, n, "max_pool=2MiB");
      *capped = strcmp(name, "limit") == 0;
      break;
    case 2: snprintf(buf, n, "upstream=%s", below); break;
    case 3:
      if (strcmp(name, "limit") == 0) snprintf(buf, n, "max_pool=1MiB,upstream=%s", below);
      *capped = strcmp(name, "limit") == 0;
      break;
    default: break;
  }
}

/* A private allocator of any strategy (alone or stacked): created, used,
 * refused destruction while a block is live, then emptied and destroyed. */
static void op_private_allocator(worker *w) {
  char config[96];
  int k = (int)rng_below(&w->rng, NSTRATEGIES), pl = (int)rng_below(&w->rng, PL_COUNT), i, n = 0;
  int capped = 0;
  dao_allocator *a = NULL;
  void *ps[8];
  uint64_t ids[8];
  size_t sizes[8];
  dao_status st;
  private_config(w, k, config, sizeof config, &capped);
  st = dao_allocator_create(place_of(pl), g_strategies[k], config, &a);
  if (st == DAO_ERR_OUT_OF_MEMORY && pl != PL_CPU) {
    ++w->oom;
    return;
  }
  if (!EXPECT(st, DAO_OK)) return;
  for (i = 0; i < 8; ++i) {
    sizes[n] = random_size(w) % (512 * KIB) + 1;
    st = dao_allocator_alloc(a, sizes[n], NULL, &ps[n]);
    if (st == DAO_ERR_OUT_OF_MEMORY && (pl != PL_CPU || capped)) {
      ++w->oom;
      continue;
    }
    if (!EXPECT(st, DAO_OK)) continue;
    ids[n] = new_id(w);
    memcpy(ps[n], pattern_of(ids[n]), sizes[n]);
    w->c.bytes_written += sizes[n];
    ++n;
  }
  if (n > 0) EXPECT(dao_allocator_destroy(a), DAO_ERR_BUSY);
  for (i = 0; i < n; ++i) {
    if (check_bytes(ps[i], sizes[i], ids[i], "private allocator")) w->c.bytes_checked += sizes[i];
    EXPECT(dao_allocator_free(a, ps[i]), DAO_OK);
    EXPECT(dao_allocator_free(a, ps[i]), DAO_ERR_INVALID_POINTER); /* double free */
  }
  check_stats(a, "private allocator");
  EXPECT(dao_allocator_destroy(a), DAO_OK);
  ++w->c.ops[OP_PRIVATE_ALLOCATOR];
}

static void check_all_blocks(worker *w, int allow_async) {
  int i;
  for (i = 0; i < w->nblocks; ++i) check_block(w, &w->blocks[i], allow_async);
}

/* ------------------------------------------------------------------------- */
/* recycle pools                                                               */

static dao_collection *g_collection;
static dao_recycle_pool *g_pools[2];
static size_t g_pool_bytes[2];
static const char *const pool_names[2] = {"frames", "tiles"};

/* The first 16 bytes of a buffer: its id and its own data pointer; the rest
 * is the pattern of the id. */
static void recycle_fill(dao_buffer *b, uint64_t id, size_t bytes) {
  unsigned char *d = NULL;
  if (!EXPECT(dao_buffer_data(b, (void **)&d), DAO_OK)) return;
  memcpy(d, &id, 8);
  memcpy(d + 8, &d, sizeof d);
  memcpy(d + 16, pattern_of(id), bytes - 16);
}

static int recycle_check(dao_buffer *b, size_t bytes) {
  unsigned char *d = NULL, *self = NULL;
  uint64_t id;
  if (!EXPECT(dao_buffer_data(b, (void **)&d), DAO_OK)) return 0;
  memcpy(&id, d, 8);
  memcpy(&self, d + 8, sizeof self);
  if (self != d) {
    report_error("recycle buffer %p holds the data of buffer %p", (void *)d, (void *)self);
    return 0;
  }
  return check_bytes(d + 16, bytes - 16, id, "recycle buffer");
}

/* Takes one buffer (timeout seconds), checks order and bytes, releases it.
 * Returns 1 taken, 0 none, -1 closed. */
static int recycle_consume(int k, double timeout, uint64_t *last_seq, counters *c, uint64_t *rng) {
  dao_buffer *b = NULL;
  uint64_t seq = 0;
  size_t bytes = 0;
  dao_status st = dao_recycle_take(g_pools[k], timeout, &b);
  if (st == DAO_ERR_TIMEOUT) return 0;
  if (st == DAO_ERR_CLOSED) return -1;
  if (!EXPECT(st, DAO_OK)) return 0;
  EXPECT(dao_buffer_sequence(b, &seq), DAO_OK);
  if (*last_seq != UINT64_MAX && seq <= *last_seq)
    report_error("recycle pool %s: took sequence %" PRIu64 " after %" PRIu64, pool_names[k], seq,
                 *last_seq);
  *last_seq = seq;
  EXPECT(dao_buffer_size(b, NULL, &bytes), DAO_OK);
  if (bytes != g_pool_bytes[k])
    report_error("recycle buffer of %zu bytes, expected %zu", bytes, g_pool_bytes[k]);
  if (recycle_check(b, g_pool_bytes[k])) c->bytes_checked += g_pool_bytes[k];
  if (rng_next(rng) & 1) { /* a second holder */
    EXPECT(dao_buffer_retain(b), DAO_OK);
    EXPECT(dao_buffer_release(b), DAO_OK);
  }
  EXPECT(dao_buffer_release(b), DAO_OK);
  ++c->ops[OP_RECYCLE_CONSUME];
  return 1;
}

/* Acquires (timeout seconds), fills and submits one buffer. Returns 1 done,
 * 0 none free, -1 closed. */
static int recycle_produce(int k, double timeout, uint64_t id, counters *c) {
  dao_buffer *b = NULL;
  dao_status st = dao_recycle_acquire(g_pools[k], timeout, &b);
  if (st == DAO_ERR_TIMEOUT) return 0;
  if (st == DAO_ERR_CLOSED) return -1;
  if (st == DAO_ERR_OUT_OF_MEMORY && k == 1) return 0; /* SIM 0 is full for now */
  if (!EXPECT(st, DAO_OK)) return 0;
  recycle_fill(b, id, g_pool_bytes[k]);
  c->bytes_written += g_pool_bytes[k];
  EXPECT(dao_recycle_submit(g_pools[k], b), DAO_OK);
  ++c->ops[OP_RECYCLE_PRODUCE];
  return 1;
}

typedef struct pipeline_thread {
  pthread_t thread;
  int producer;
  uint64_t rng;
  counters c;
} pipeline_thread;

static void *pipeline_main(void *arg) {
  pipeline_thread *t = (pipeline_thread *)arg;
  uint64_t last[2] = {UINT64_MAX, UINT64_MAX}, next = 0;
  int closed[2] = {0, 0};
  while (!closed[0] || !closed[1]) {
    int k = (int)rng_below(&t->rng, 2);
    if (closed[k]) k = 1 - k;
    if (t->producer) {
      if (recycle_produce(k, 0.05, ((uint64_t)0xFF << 40) | ++next, &t->c) < 0) closed[k] = 1;
    } else {
      if (recycle_consume(k, 0.05, &last[k], &t->c, &t->rng) < 0) closed[k] = 1;
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------------- */
/* the tiered pool                                                             */

static dao_tiered *g_tiered;
#define TIERED_BUDGET (8 * MIB)

typedef struct kernel_args {
  uint32_t id;
  int nin, nout;
  size_t in_words[3], out_words[2];
} kernel_args;

/* out_o[i] = id * 2654435761 + i * (o + 1) + sum_j in_j[i % words_j]; word i
 * of an output is written after every input word i was read, so in place is
 * fine, and the host reference runs the same code on the same aliasing. */
static void kernel_compute(const kernel_args *k, uint32_t *const *in, uint32_t *const *out) {
  int o, j;
  for (o = 0; o < k->nout; ++o) {
    size_t i;
    for (i = 0; i < k->out_words[o]; ++i) {
      uint32_t v = k->id * 2654435761u + (uint32_t)i * (uint32_t)(o + 1);
      for (j = 0; j < k->nin; ++j) v += in[j][i % k->in_words[j]];
      out[o][i] = v;
    }
  }
}

static dao_status kernel_fn(void *user_data, void *const *inputs, size_t input_count,
                            void *const *outputs, size_t output_count, dao_stream stream) {
  kernel_args *k = (kernel_args *)user_data;
  dao_status st = DAO_OK;
  (void)stream;
  if ((int)input_count != k->nin || (int)output_count != k->nout) {
    report_error("kernel %u called with %zu inputs and %zu outputs, submitted with %d and %d",
                 k->id, input_count, output_count, k->nin, k->nout);
    st = DAO_ERR_INTERNAL;
  } else {
    kernel_compute(k, (uint32_t *const *)inputs, (uint32_t *const *)outputs);
  }
  free(k);
  return st;
}

static size_t tensor_words(worker *w) { return (16 * KIB + rng_below(&w->rng, 1008 * KIB)) / 4; }

static void tensor_make(worker *w, wtensor *t) {
  t->words = tensor_words(w);
  t->written = 0;
  t->model = (uint32_t *)malloc(t->words * 4);
  if (t->model == NULL) {
    report_error("no host memory for a tensor model");
    return;
  }
  EXPECT(dao_tensor_create(g_tiered, t->words * 4, &t->t), DAO_OK);
}

static void op_tensor_write(worker *w) {
  wtensor *t = &w->tensors[rng_below(&w->rng, TENSORS_PER_WORKER)];
  uint64_t id = new_id(w);
  memcpy(t->model, pattern_of(id), t->words * 4);
  if (EXPECT(dao_tensor_write(t->t, t->model, t->words * 4), DAO_OK)) t->written = 1;
  w->c.bytes_written += t->words * 4;
  ++w->c.ops[OP_TENSOR_WRITE];
}

static void op_kernel(worker *w) {
  kernel_args *k = (kernel_args *)malloc(sizeof *k);
  dao_tensor *ins[3], *outs[2];
  uint32_t *min[3], *mout[2];
  int idx_in[3], idx_out[2], j, m, avail = 0;
  if (k == NULL) return;
  for (j = 0; j < TENSORS_PER_WORKER; ++j) avail += w->tensors[j].written;
  if (avail == 0) {
    free(k);
    return;
  }
  k->id = ++w->kernel_id ^ ((uint32_t)w->index << 24);
  k->nin = 1 + (int)rng_below(&w->rng, (size_t)(avail < 3 ? avail : 3));
  k->nout = 1 + (int)rng_below(&w->rng, 2);
  for (j = 0; j < k->nin; ++j) { /* distinct written inputs */
    int dup;
    do {
      idx_in[j] = (int)rng_below(&w->rng, TENSORS_PER_WORKER);
      dup = !w->tensors[idx_in[j]].written;
      for (m = 0; m < j; ++m) dup |= idx_in[m] == idx_in[j];
    } while (dup);
  }
  for (j = 0; j < k->nout; ++j) { /* distinct outputs, half the time in place */
    int dup;
    do {
      idx_out[j] = (rng_next(&w->rng) & 1) ? idx_in[rng_below(&w->rng, (size_t)k->nin)]
                                           : (int)rng_below(&w->rng, TENSORS_PER_WORKER);
      dup = 0;
      for (m = 0; m < j; ++m) dup |= idx_out[m] == idx_out[j];
    } while (dup);
  }
  for (j = 0; j < k->nin; ++j) {
    wtensor *t = &w->tensors[idx_in[j]];
    ins[j] = t->t;
    min[j] = t->model;
    k->in_words[j] = t->words;
  }
  for (j = 0; j < k->nout; ++j) {
    wtensor *t = &w->tensors[idx_out[j]];
    outs[j] = t->t;
    mout[j] = t->model;
    k->out_words[j] = t->words;
  }
  {
    kernel_args ref = *k; /* k belongs to the kernel once submitted */
    if (!EXPECT(
            dao_kernel_submit(g_tiered, kernel_fn, k, ins, (size_t)k->nin, outs, (size_t)k->nout),
            DAO_OK)) {
      free(k);
      return;
    }
    kernel_compute(&ref, min, mout);
    for (j = 0; j < ref.nout; ++j) w->tensors[idx_out[j]].written = 1;
  }
  ++w->c.ops[OP_KERNEL];
}

static void tensor_check(counters *c, wtensor *t, const char *what) {
  uint32_t *buf;
  if (!t->written) {
    EXPECT(dao_tensor_read(t->t, t->model, t->words * 4), DAO_ERR_INVALID_STATE);
    return;
  }
  buf = (uint32_t *)malloc(t->words * 4);
  if (buf == NULL) return;
  if (EXPECT(dao_tensor_read(t->t, buf, t->words * 4), DAO_OK)) {
    if (memcmp(buf, t->model, t->words * 4) != 0) {
      size_t i = 0;
      while (buf[i] == t->model[i]) ++i;
      report_error("%s: tensor of %zu words differs from the host reference at word %zu: %08x, "
                   "expected %08x",
                   what, t->words, i, buf[i], t->model[i]);
    } else {
      c->bytes_checked += t->words * 4;
    }
  }
  free(buf);
}

static void op_tensor_read(worker *w) {
  tensor_check(&w->c, &w->tensors[rng_below(&w->rng, TENSORS_PER_WORKER)], "tensor read");
  ++w->c.ops[OP_TENSOR_READ];
}

static void op_tensor_recreate(worker *w) {
  wtensor *t = &w->tensors[rng_below(&w->rng, TENSORS_PER_WORKER)];
  dao_tensor *old = t->t;
  uint32_t word = 0;
  EXPECT(dao_tensor_release(old), DAO_OK);
  /* A released handle is refused while the pool lives. */
  EXPECT(dao_tensor_read(old, &word, 4), DAO_ERR_INVALID_ARGUMENT);
  EXPECT(dao_tensor_release(old), DAO_ERR_INVALID_ARGUMENT);
  {
    dao_tensor *list[1];
    list[0] = old;
    EXPECT(dao_kernel_submit(g_tiered, kernel_fn, NULL, list, 1, NULL, 0),
           DAO_ERR_INVALID_ARGUMENT);
  }
  free(t->model);
  tensor_make(w, t);
  ++w->c.ops[OP_TENSOR_RECREATE];
  ++w->c.ops[OP_TENSOR_MISUSE];
}

/* ------------------------------------------------------------------------- */
/* the worker loop                                                             */

static void *worker_main(void *arg) {
  worker *w = (worker *)arg;
  double next_check = now_seconds() + 0.5;
  uint64_t produced = 0;
  while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
    unsigned r = (unsigned)rng_below(&w->rng, 1000);
    if (r < 220) op_alloc(w);
    else if (r < 400) op_free(w);
    else if (r < 470) op_exchange(w);
    else if (r < 540) op_copy(w);
    else if (r < 570) op_record_stream(w);
    else if (r < 600) op_misuse(w);
    else if (r < 605) op_huge(w);
    else if (r < 615) op_trim(w);
    else if (r < 640) op_stats(w);
    else if (r < 650) op_private_allocator(w);
    else if (r < 690) {
      int k = (int)rng_below(&w->rng, 2);
      recycle_produce(k, 0, ((uint64_t)(w->index + 1) << 48) | ++produced, &w->c);
    } else if (r < 730) {
      int k = (int)rng_below(&w->rng, 2);
      recycle_consume(k, 0, &w->recycle_last_seq[k], &w->c, &w->rng);
    } else if (r < 790) op_tensor_write(w);
    else if (r < 900) op_kernel(w);
    else if (r < 950) op_tensor_read(w);
    else if (r < 960) op_tensor_recreate(w);
    else {
      int i;
      for (i = 0; i < w->nblocks && i < 4; ++i)
        check_block(w, &w->blocks[rng_below(&w->rng, (size_t)w->nblocks)], 1);
    }
    __atomic_fetch_add(&w->progress, 1, __ATOMIC_RELAXED);
    if (now_seconds() >= next_check) { /* every live block, periodically */
      check_all_blocks(w, 1);
      next_check = now_seconds() + 0.5 + (double)rng_below(&w->rng, 1000) * 1e-3;
    }
  }
  return NULL;
}

/* ------------------------------------------------------------------------- */
/* the monitor                                                                 */

static void *monitor_main(void *arg) {
  counters *c = (counters *)arg;
  char *json = NULL;
  size_t cap = 0;
  uint64_t rng = 99;
  while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
    int s, pl, k;
    for (s = 0; s < NSHARED; ++s) {
      check_stats(g_slots[s].a, "monitor");
      if (g_slots[s].caching) {
        size_t len = 0;
        int m;
        check_snapshot(g_slots[s].a, "monitor snapshot");
        for (m = 0; m < DAO_STAT_METRIC_COUNT; ++m) {
          dao_stat st;
          EXPECT(dao_allocator_get_stat(g_slots[s].a, (dao_stat_metric)m,
                                        (dao_stat_pool)rng_below(&rng, DAO_STAT_POOL_COUNT), &st),
                 DAO_OK);
          if (st.peak < st.current) report_error("monitor: stat %d has peak < current", m);
        }
        /* The JSON document, as a caller would read it. */
        for (;;) {
          if (!EXPECT(dao_allocator_snapshot_json(g_slots[s].a, json, cap, &len), DAO_OK)) break;
          if (len < cap) {
            if (json[0] != '{' || strlen(json) != len) report_error("monitor: malformed JSON");
            break;
          }
          free(json);
          cap = len + 4096;
          json = (char *)malloc(cap);
          if (json == NULL) {
            cap = 0;
            break;
          }
        }
      }
    }
    for (pl = 0; pl < PL_COUNT; ++pl) {
      dao_allocator *a = NULL;
      size_t used = 0, free_b = 0, total = 0;
      EXPECT(dao_used(place_of(pl), &used), DAO_OK);
      EXPECT(dao_place_memory_info(place_of(pl), &free_b, &total), DAO_OK);
      if (free_b > total)
        report_error("monitor: %s has more free than total bytes", place_names[pl]);
      if (EXPECT(dao_place_allocator(place_of(pl), &a), DAO_OK)) check_stats(a, "place default");
    }
    for (k = 0; k < 2; ++k) {
      dao_recycle_stats rs;
      memset(&rs, 0, sizeof rs);
      rs.struct_size = sizeof rs;
      if (EXPECT(dao_recycle_get_stats(g_pools[k], &rs), DAO_OK) &&
          rs.created != rs.free + rs.queued + rs.held)
        report_error("monitor: recycle pool %s: created %" PRIu64 " != free %" PRIu64
                     " + queued %" PRIu64 " + held %" PRIu64,
                     pool_names[k], rs.created, rs.free, rs.queued, rs.held);
    }
    {
      dao_tiered_stats ts;
      memset(&ts, 0, sizeof ts);
      ts.struct_size = sizeof ts;
      if (EXPECT(dao_tiered_get_stats(g_tiered, &ts), DAO_OK) &&
          (ts.device_bytes > TIERED_BUDGET || ts.peak_device_bytes > TIERED_BUDGET ||
           ts.peak_device_bytes < ts.device_bytes || ts.peak_host_bytes < ts.host_bytes ||
           ts.kernels_run > ts.kernels_submitted))
        report_error("monitor: tiered statistics inconsistent: device %" PRIu64 " (peak %" PRIu64
                     "), host %" PRIu64 " (peak %" PRIu64 "), kernels %" PRIu64 "/%" PRIu64,
                     ts.device_bytes, ts.peak_device_bytes, ts.host_bytes, ts.peak_host_bytes,
                     ts.kernels_run, ts.kernels_submitted);
    }
    ++c->ops[OP_MONITOR];
    usleep(2000);
  }
  free(json);
  return NULL;
}

/* ------------------------------------------------------------------------- */
/* setup, teardown, summary                                                    */

static void usage(void) {
  fprintf(stderr, "usage: dao_soak [--seconds N] [--threads N] [--seed N] [--quiet]\n");
  exit(2);
}

static long parse_long(const char *s, long lo, long hi) {
  char *end = NULL;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) usage();
  return v;
}

/* Bytes of the C heap in use (glibc), -1 where unknown: after everything is
 * destroyed it tells memory still held from memory only cached by malloc. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_OWN_MALLOC 1 /* the sanitizer replaces malloc: mallinfo2 says nothing */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_OWN_MALLOC 1
#endif
#endif
static long long heap_in_use(void) {
#if defined(SOAK_OWN_MALLOC)
  return -1;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  struct mallinfo2 mi = mallinfo2();
  return (long long)(mi.uordblks + mi.hblkhd);
#else
  return -1;
#endif
}

static const char *mib_text(long long bytes, char *buf, size_t size) {
  if (bytes < 0) return "(unknown)";
  snprintf(buf, size, "%.1f", (double)bytes / 1048576.0);
  return buf;
}

/* Resident memory now, from /proc (0 where there is none). */
static long current_rss_mib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

static void add_counters(counters *to, const counters *from) {
  int k;
  for (k = 0; k < OP_KIND_COUNT; ++k) to->ops[k] += from->ops[k];
  to->bytes_written += from->bytes_written;
  to->bytes_checked += from->bytes_checked;
}

static void setup_sim(void) {
  const char *env = getenv("DAO_SIM_DEVICES");
  int count = 0;
  if (env == NULL || env[0] == '\0') {
    size_t caps[2] = {96 * MIB, 96 * MIB};
    if (dao_sim_configure(2, caps) != DAO_OK) {
      fprintf(stderr, "dao_soak: dao_sim_configure: %s\n", dao_last_error());
      exit(2);
    }
  }
  if (dao_place_device_count(DAO_PLACE_SIM, &count) != DAO_OK || count < 2) {
    fprintf(stderr, "dao_soak: needs 2 SIM devices (DAO_SIM_DEVICES=%s)\n", env ? env : "");
    exit(2);
  }
}

int main(int argc, char **argv) {
  long seconds = 60, nthreads = 4, seed = 1;
  int i, k, pl;
  double start, elapsed;
  counters total;
  uint64_t oom = 0, live_at_end = 0;
  pipeline_thread pipes[2];
  pthread_t monitor;
  counters monitor_counters;
  struct rusage ru;
  long rss_start_kb, rss_end_kb;
  dao_tiered_stats ts;
  uint64_t default_reserved[PL_COUNT] = {0, 0, 0}, default_peak[PL_COUNT] = {0, 0, 0};
  long long heap_at_setup;
  char text[32], text2[32];

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = parse_long(argv[++i], 1, 31L * 86400);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      nthreads = parse_long(argv[++i], 1, 64);
    else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      seed = parse_long(argv[++i], 0, 1L << 30);
    else if (strcmp(argv[i], "--quiet") == 0) g_quiet = 1;
    else usage();
  }
  make_table();
  setup_sim();
  memset(&total, 0, sizeof total);
  memset(&monitor_counters, 0, sizeof monitor_counters);

  /* shared allocators */
  for (k = 0; k < NSHARED; ++k) {
    if (dao_allocator_create(place_of(g_slots[k].pl), g_slots[k].strategy, g_slots[k].config,
                             &g_slots[k].a) != DAO_OK) {
      fprintf(stderr, "dao_soak: creating %s on %s (%s): %s\n", g_slots[k].strategy,
              place_names[g_slots[k].pl], g_slots[k].config, dao_last_error());
      return 1;
    }
  }
  /* recycle pools in a collection */
  {
    size_t shape0[2] = {64, 1024};        /* uint32 frames: 256 KiB */
    size_t shape1[4] = {3, 5, 7, 11 * 8}; /* doubles: 92 KiB */
    EXPECT(dao_collection_create(&g_collection), DAO_OK);
    EXPECT(dao_collection_add(g_collection, pool_names[0], dao_place_cpu(), 4, 2, shape0, 8, 2,
                              "spin=100", &g_pools[0]),
           DAO_OK);
    EXPECT(dao_collection_add(g_collection, pool_names[1], dao_place_sim(0), 8, 4, shape1, 6, 0,
                              "name=tiles", &g_pools[1]),
           DAO_OK);
    g_pool_bytes[0] = 4 * 64 * 1024;
    g_pool_bytes[1] = 8 * 3 * 5 * 7 * 11 * 8;
    if (g_errors) return 1;
  }
  /* the tiered pool: 8 MiB of SIM 1 for tensors of about 4 MiB per worker */
  if (!EXPECT(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), TIERED_BUDGET, "prefetch=2",
                                &g_tiered),
              DAO_OK))
    return 1;

  g_nworkers = (int)nthreads;
  g_workers = (worker *)calloc((size_t)nthreads, sizeof *g_workers);
  if (g_workers == NULL) return 2;
  for (i = 0; i < g_nworkers; ++i) {
    worker *w = &g_workers[i];
    w->index = i;
    w->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(seed * 64 + i + 1);
    w->recycle_last_seq[0] = w->recycle_last_seq[1] = UINT64_MAX;
    for (pl = 0; pl < PL_COUNT; ++pl) {
      for (k = 0; k < STREAMS_PER_PLACE; ++k)
        if (!EXPECT(dao_stream_create(place_of(pl), &w->streams[pl][k]), DAO_OK)) return 1;
      if (!EXPECT(dao_event_create(place_of(pl), &w->events[pl]), DAO_OK)) return 1;
    }
    for (k = 0; k < TENSORS_PER_WORKER; ++k) tensor_make(w, &w->tensors[k]);
  }
  getrusage(RUSAGE_SELF, &ru);
  rss_start_kb = ru.ru_maxrss;
  heap_at_setup = heap_in_use();

  if (!g_quiet)
    printf("dao_soak %s: %ld s, %ld worker threads + producer, consumer and monitor threads, "
           "seed %ld\n",
           dao_version_string(), seconds, nthreads, seed);
  fflush(stdout);
  start = now_seconds();
  for (k = 0; k < 2; ++k) {
    memset(&pipes[k], 0, sizeof pipes[k]);
    pipes[k].producer = k == 0;
    pipes[k].rng = 0xABCDEFull + (uint64_t)seed * 7 + (uint64_t)k;
    pthread_create(&pipes[k].thread, NULL, pipeline_main, &pipes[k]);
  }
  pthread_create(&monitor, NULL, monitor_main, &monitor_counters);
  for (i = 0; i < g_nworkers; ++i)
    pthread_create(&g_workers[i].thread, NULL, worker_main, &g_workers[i]);

  {
    double last_report = start;
    while (now_seconds() - start < (double)seconds) {
      usleep(100000);
      if (!g_quiet && now_seconds() - last_report >= 60) {
        uint64_t ops = 0;
        last_report = now_seconds();
        for (i = 0; i < g_nworkers; ++i)
          ops += __atomic_load_n(&g_workers[i].progress, __ATOMIC_RELAXED);
        printf(
            "  %.0f s: %" PRIu64 " worker steps, RSS %ld MiB, C heap in use %s MiB, %ld errors\n",
            last_report - start, ops, current_rss_mib(), mib_text(heap_in_use(), text, sizeof text),
            __atomic_load_n(&g_errors, __ATOMIC_RELAXED));
        fflush(stdout);
      }
    }
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
  for (i = 0; i < g_nworkers; ++i) pthread_join(g_workers[i].thread, NULL);
  pthread_join(monitor, NULL);
  /* close the pipeline: the threads drain and stop on DAO_ERR_CLOSED */
  EXPECT(dao_collection_close(g_collection), DAO_OK);
  for (k = 0; k < 2; ++k) pthread_join(pipes[k].thread, NULL);
  elapsed = now_seconds() - start;

  /* The end: every byte of every live block, tensor and queued buffer. */
  for (i = 0; i < g_nworkers; ++i) {
    worker *w = &g_workers[i];
    live_at_end += (uint64_t)w->nblocks;
    check_all_blocks(w, 0);
    for (k = 0; k < TENSORS_PER_WORKER; ++k)
      tensor_check(&w->c, &w->tensors[k], "final tensor read");
  }
  for (k = 0; k < 2; ++k) {
    uint64_t last = UINT64_MAX;
    while (recycle_consume(k, 0, &last, &total, &g_workers[0].rng) == 1) {
    }
  }
  for (i = 0; i < g_exchange_count; ++i) {
    block *b = &g_exchange[i];
    sync_stream(b->stream);
    if (check_bytes(b->p, b->n, b->id, "exchange block at the end")) total.bytes_checked += b->n;
    EXPECT(slot_free(b->slot, b->p), DAO_OK);
    ++live_at_end;
  }
  for (i = 0; i < g_nworkers; ++i) {
    worker *w = &g_workers[i];
    while (w->nblocks > 0) {
      free_block(w, &w->blocks[0], 0);
      drop_block(w, 0);
    }
    for (pl = 0; pl < PL_COUNT; ++pl) {
      for (k = 0; k < STREAMS_PER_PLACE; ++k)
        EXPECT(dao_stream_synchronize(w->streams[pl][k]), DAO_OK);
    }
  }
  EXPECT(dao_tiered_synchronize(g_tiered), DAO_OK);
  memset(&ts, 0, sizeof ts);
  ts.struct_size = sizeof ts;
  EXPECT(dao_tiered_get_stats(g_tiered, &ts), DAO_OK);
  for (i = 0; i < g_nworkers; ++i) {
    worker *w = &g_workers[i];
    for (k = 0; k < TENSORS_PER_WORKER; ++k) {
      EXPECT(dao_tensor_release(w->tensors[k].t), DAO_OK);
      free(w->tensors[k].model);
    }
  }
  EXPECT(dao_tiered_destroy(g_tiered), DAO_OK);
  EXPECT(dao_collection_destroy(g_collection), DAO_OK);
  /* Every allocator is empty and can be destroyed; every place is back to 0. */
  for (k = 0; k < NSHARED; ++k) {
    dao_allocator_stats s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    check_stats(g_slots[k].a, "at the end");
    if (EXPECT(dao_allocator_get_stats(g_slots[k].a, &s), DAO_OK) &&
        (s.live_blocks != 0 || s.allocated_bytes != 0 || s.requested_bytes != 0))
      report_error("%s on %s: %" PRIu64 " blocks, %" PRIu64 " bytes still allocated at the end",
                   g_slots[k].strategy, place_names[g_slots[k].pl], s.live_blocks,
                   s.allocated_bytes);
    EXPECT(dao_allocator_destroy(g_slots[k].a), DAO_OK);
  }
  for (i = 0; i < g_nworkers; ++i) {
    worker *w = &g_workers[i];
    for (pl = 0; pl < PL_COUNT; ++pl) {
      for (k = 0; k < STREAMS_PER_PLACE; ++k) EXPECT(dao_stream_destroy(w->streams[pl][k]), DAO_OK);
      EXPECT(dao_event_destroy(w->events[pl]), DAO_OK);
    }
  }
  for (pl = 0; pl < PL_COUNT; ++pl) {
    size_t used = 1, released = 0;
    dao_allocator *a = NULL;
    dao_allocator_stats s;
    EXPECT(dao_used(place_of(pl), &used), DAO_OK);
    if (used != 0)
      report_error("dao_used(%s) is %zu after everything was freed", place_names[pl], used);
    /* What the place defaults still hold (they live until the process ends). */
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (EXPECT(dao_place_allocator(place_of(pl), &a), DAO_OK) &&
        EXPECT(dao_allocator_get_stats(a, &s), DAO_OK)) {
      default_reserved[pl] = s.reserved_bytes;
      default_peak[pl] = s.peak_reserved_bytes;
      EXPECT(dao_allocator_trim(a, &released), DAO_OK);
    }
  }
  total.bytes_checked += __atomic_load_n(&g_hostfn_bytes_checked, __ATOMIC_RELAXED);
  for (i = 0; i < g_nworkers; ++i) {
    add_counters(&total, &g_workers[i].c);
    oom += g_workers[i].oom;
  }
  for (k = 0; k < 2; ++k) add_counters(&total, &pipes[k].c);
  add_counters(&total, &monitor_counters);
  getrusage(RUSAGE_SELF, &ru);
  rss_end_kb = ru.ru_maxrss;

  {
    uint64_t all = 0;
    for (k = 0; k < OP_KIND_COUNT; ++k) all += total.ops[k];
    printf(
        "dao_soak summary: %.1f s, %d worker threads (+ producer, consumer, monitor), seed %ld\n",
        elapsed, g_nworkers, seed);
    printf("  operations: %" PRIu64 " (%.0f/s)\n", all, (double)all / elapsed);
    for (k = 0; k < OP_KIND_COUNT; ++k)
      printf("    %-20s %12" PRIu64 "\n", op_names[k], total.ops[k]);
    printf("  bytes written: %" PRIu64 " (%.1f GiB), bytes checked: %" PRIu64 " (%.1f GiB)\n",
           total.bytes_written, (double)total.bytes_written / (double)(1u << 30),
           total.bytes_checked, (double)total.bytes_checked / (double)(1u << 30));
    printf("  tiered: %" PRIu64 " kernels run, %" PRIu64 " evictions, %" PRIu64
           " fetches, peak device "
           "%" PRIu64 " of %zu bytes\n",
           ts.kernels_run, ts.evictions, ts.fetches, ts.peak_device_bytes, (size_t)TIERED_BUDGET);
    printf("  out of memory (SIM capacity / max_pool, expected): %" PRIu64 "\n", oom);
    printf("  blocks live at the end, checked and freed: %" PRIu64 "\n", live_at_end);
    printf(
        "  place defaults at the end (reserved / peak reserved, MiB): cpu %.1f / %.1f, sim0 %.1f / "
        "%.1f, sim1 %.1f / %.1f\n",
        default_reserved[0] / 1048576.0, default_peak[0] / 1048576.0,
        default_reserved[1] / 1048576.0, default_peak[1] / 1048576.0,
        default_reserved[2] / 1048576.0, default_peak[2] / 1048576.0);
    printf("  RSS: peak %ld MiB after setup, peak %ld MiB at the end, %ld MiB now (everything "
           "destroyed, place defaults trimmed); C heap in use: %s MiB after setup, %s MiB now\n",
           rss_start_kb / 1024, rss_end_kb / 1024, current_rss_mib(),
           mib_text(heap_at_setup, text, sizeof text),
           mib_text(heap_in_use(), text2, sizeof text2));
    printf("  errors: %ld\n", __atomic_load_n(&g_errors, __ATOMIC_RELAXED));
  }
  free(g_workers);
  free(g_table);
  return __atomic_load_n(&g_errors, __ATOMIC_RELAXED) == 0 ? 0 : 1;
}
