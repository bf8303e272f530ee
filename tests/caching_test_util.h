/* Fixtures and helpers shared by the test_caching_* programs (the "caching"
 * strategy through the public API): the two SIM places, allocators, streams
 * and gates that the teardown cleans up after a failed test, data patterns,
 * snapshots read into plain arrays, and the tiling invariants.
 *
 * Every program runs with DAO_SIM_DEVICES=256MiB,8MiB (device 0: room for
 * random sequences; device 1: a small device that fills up), and with
 * DAO_NO_CACHING=1 for test_caching_nocache only.
 *
 * Where a check depends on how the strategy works (segment sizes, mapping
 * granularity, which cached memory is released when), the comment names the
 * place in src/strategy/caching*.cpp, block_pool.*, segment_map.* or stream_order.* it follows. No
 * check depends on timing: work that must stay pending waits on a gate the test opens.
 *
 * Header-only (static inline): each program includes it once, after
 * defining _POSIX_C_SOURCE. */
#ifndef CACHING_TEST_UTIL_H
#define CACHING_TEST_UTIL_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "dao_test.h"
#include "dao_test_gate.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

#define BIG_CAPACITY (256 * MIB)
#define SMALL_CAPACITY (8 * MIB)

static inline dao_place big_place(void) { return dao_place_sim(0); }
static inline dao_place small_place(void) { return dao_place_sim(1); }

static inline int setup(void **state) {
  int sims = 0;
  size_t total0 = 0, total1 = 0;
  (void)state;
  if (dao_place_device_count(DAO_PLACE_SIM, &sims) != DAO_OK || sims != 2 ||
      dao_place_memory_info(big_place(), NULL, &total0) != DAO_OK ||
      dao_place_memory_info(small_place(), NULL, &total1) != DAO_OK || total0 != BIG_CAPACITY ||
      total1 != SMALL_CAPACITY) {
    fprintf(stderr, "the test_caching_* programs expect DAO_SIM_DEVICES=256MiB,8MiB\n");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static inline size_t page_size(void) {
  /* The mapping granularity of SIM expandable segments is the host page
     (sim.cpp: map_granularity() returns host_page_size()). */
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static inline size_t round_up_to(size_t x, size_t unit) { return (x + unit - 1) / unit * unit; }
static inline size_t round_down_to(size_t x, size_t unit) { return x / unit * unit; }

/* block_pool.cpp round_size(): 512 B minimum and unit; with d > 1 divisions,
   sizes above 512*d go up to the next of d steps between powers of two. */
static inline size_t expected_round(size_t bytes, unsigned divisions) {
  if (bytes <= 512) return 512;
  if (divisions > 1 && bytes > (size_t)512 * divisions) {
    size_t floor2 = 1, step;
    while (floor2 <= bytes / 2) floor2 <<= 1;
    if (floor2 == bytes) return bytes;
    step = floor2 / divisions;
    return floor2 + round_up_to(bytes - floor2, step);
  }
  return round_up_to(bytes, 512);
}

/* util/format.cpp format_bytes(), as the out-of-memory message prints sizes. */
static inline void format_bytes(size_t bytes, char *out, size_t cap) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value;
  int unit = 0;
  if (bytes < 1024) {
    snprintf(out, cap, "%zu B", bytes);
    return;
  }
  value = (double)bytes / 1024.0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(out, cap, "%.1f %s", value, units[unit]);
}

static inline size_t place_free(dao_place place) {
  size_t free_bytes = 0;
  assert_ok(dao_place_memory_info(place, &free_bytes, NULL));
  return free_bytes;
}

/* Allocators made by a test, so that a failing test does not leave memory
   behind for the next ones: the teardown frees what the snapshot shows
   allocated and destroys them. */
static dao_allocator *tracked[16];

static inline dao_allocator *make(dao_place place, const char *config) {
  dao_allocator *a = NULL;
  size_t i;
  assert_ok(dao_allocator_create(place, "caching", config, &a));
  assert_non_null(a);
  for (i = 0; i < sizeof tracked / sizeof tracked[0]; ++i)
    if (tracked[i] == NULL) {
      tracked[i] = a;
      break;
    }
  return a;
}

static inline void destroy(dao_allocator *a) {
  size_t i;
  assert_ok(dao_allocator_destroy(a));
  for (i = 0; i < sizeof tracked / sizeof tracked[0]; ++i)
    if (tracked[i] == a) tracked[i] = NULL;
}

/* What the places have free when a test starts: a test that gives all its
   memory back compares with this, so that a failure before it (which may
   leave memory held) shows only once. */
static size_t big_baseline, small_baseline;

static inline int baseline(void **state) {
  (void)state;
  big_baseline = place_free(big_place());
  small_baseline = place_free(small_place());
  return 0;
}

static inline dao_stat get_stat(dao_allocator *a, dao_stat_metric metric, dao_stat_pool pool) {
  dao_stat s;
  memset(&s, 0x5a, sizeof s);
  assert_ok(dao_allocator_get_stat(a, metric, pool, &s));
  return s;
}

static inline int64_t reserved_now(dao_allocator *a) {
  return get_stat(a, DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL).current;
}

static inline size_t usable(dao_allocator *a, const void *p) {
  size_t n = 0;
  assert_ok(dao_allocator_usable_size(a, p, &n));
  return n;
}

static inline void *alloc_ok(dao_allocator *a, size_t bytes, dao_stream stream) {
  void *p = NULL;
  assert_ok(dao_allocator_alloc(a, bytes, stream, &p));
  assert_non_null(p);
  assert_true(dao_test_is_aligned(p, 256));
  return p;
}

/* Data patterns. Blocks up to 64 KiB are filled whole; larger ones (up to
   12 MiB, many of them) in their first and last 16 KiB and 64 bytes of every
   4 KiB between, which is enough to see a block overlap or lose its memory
   and keeps the sanitizer runs short. */
static inline int pattern_range(unsigned char *c, size_t from, size_t to, unsigned seed,
                                int check) {
  size_t i;
  for (i = from; i < to; ++i) {
    unsigned char v = (unsigned char)(seed * 131u + i * 7u);
    if (check) {
      if (c[i] != v) return 0;
    } else {
      c[i] = v;
    }
  }
  return 1;
}

static inline int pattern(void *p, size_t n, unsigned seed, int check) {
  unsigned char *c = (unsigned char *)p;
  size_t off;
  if (n <= 64 * KIB) return pattern_range(c, 0, n, seed, check);
  if (!pattern_range(c, 0, 16 * KIB, seed, check)) return 0;
  for (off = 16 * KIB; off < n - 16 * KIB; off += 4 * KIB) {
    size_t end = off + 64 < n - 16 * KIB ? off + 64 : n - 16 * KIB;
    if (!pattern_range(c, off, end, seed, check)) return 0;
  }
  return pattern_range(c, n - 16 * KIB, n, seed, check);
}

static inline void pattern_fill(void *p, size_t n, unsigned seed) { (void)pattern(p, n, seed, 0); }
static inline int pattern_check(void *p, size_t n, unsigned seed) { return pattern(p, n, seed, 1); }

/* Gates in use, so that the teardown of a failed test can open them (their
   host functions are still queued) before it destroys the streams. */
static gate *live_gates[4];

static inline void gate_init(gate *g) {
  size_t i;
  gate_setup(g);
  for (i = 0; i < sizeof live_gates / sizeof live_gates[0]; ++i)
    if (live_gates[i] == NULL) {
      live_gates[i] = g;
      break;
    }
}

static inline void gate_destroy(gate *g) {
  size_t i;
  gate_teardown(g);
  for (i = 0; i < sizeof live_gates / sizeof live_gates[0]; ++i)
    if (live_gates[i] == g) live_gates[i] = NULL;
}

/* A host function that, once its gate opens, allocates 64 KiB from `a` on
   the default stream and frees it (issue 20, defect 4: while another
   thread's call of `a` waits for the host function's stream). */
typedef struct {
  gate g;
  dao_allocator *a;
  dao_status status; /* of the allocation and the free */
} allocating_fn;

static inline void gated_alloc_fn(void *user_data) {
  allocating_fn *f = (allocating_fn *)user_data;
  void *p = NULL;
  gate_pass(&f->g);
  f->status = dao_allocator_alloc(f->a, 64 * KIB, NULL, &p);
  if (f->status == DAO_OK) f->status = dao_allocator_free(f->a, p);
}

/* Waits up to 20 s for *finished; a hang ends the process with a message
   naming `what` (the threads involved cannot be joined). */
static inline void wait_or_die(const int *finished, const char *what) {
  int waited_ms = 0;
  while (!__atomic_load_n(finished, __ATOMIC_ACQUIRE)) {
    struct timespec tick = {0, 1000 * 1000};
    if (++waited_ms > 20000) {
      fprintf(stderr, "%s: still waiting after 20 s: deadlock\n", what);
      _exit(1);
    }
    nanosleep(&tick, NULL);
  }
}

/* Streams made by a test (destroyed by the teardown if the test fails). */
static dao_stream live_streams[8];

static inline dao_stream make_stream(dao_place place) {
  dao_stream s = NULL;
  size_t i;
  assert_ok(dao_stream_create(place, &s));
  assert_non_null(s);
  for (i = 0; i < sizeof live_streams / sizeof live_streams[0]; ++i)
    if (live_streams[i] == NULL) {
      live_streams[i] = s;
      break;
    }
  return s;
}

static inline void drop_stream(dao_stream s) {
  size_t i;
  assert_ok(dao_stream_destroy(s));
  for (i = 0; i < sizeof live_streams / sizeof live_streams[0]; ++i)
    if (live_streams[i] == s) live_streams[i] = NULL;
}

/* After each test; does something only when the test failed half-way:
   opens its gates, frees what its allocators still have allocated (the
   snapshot lists it), runs and destroys its streams, then destroys the
   allocators. */
static inline int cleanup(void **state) {
  size_t i, k, j;
  (void)state;
  for (i = 0; i < sizeof live_gates / sizeof live_gates[0]; ++i)
    if (live_gates[i] != NULL) gate_open(live_gates[i]);
  for (i = 0; i < sizeof tracked / sizeof tracked[0]; ++i) {
    dao_snapshot *s = NULL;
    size_t count = 0;
    if (tracked[i] == NULL) continue;
    if (dao_allocator_snapshot(tracked[i], &s) != DAO_OK) continue;
    if (dao_snapshot_segment_count(s, &count) == DAO_OK) {
      for (k = 0; k < count; ++k) {
        dao_segment_info seg;
        memset(&seg, 0, sizeof seg);
        seg.struct_size = sizeof seg;
        if (dao_snapshot_segment(s, k, &seg) != DAO_OK) continue;
        for (j = 0; j < seg.block_count; ++j) {
          dao_block_info b;
          memset(&b, 0, sizeof b);
          b.struct_size = sizeof b;
          if (dao_snapshot_block(s, k, j, &b) == DAO_OK && b.state == DAO_BLOCK_ALLOCATED)
            (void)dao_allocator_free(tracked[i], (void *)b.address);
        }
      }
    }
    dao_snapshot_destroy(s);
  }
  for (i = 0; i < sizeof live_streams / sizeof live_streams[0]; ++i)
    if (live_streams[i] != NULL) {
      (void)dao_stream_destroy(live_streams[i]); /* runs what is queued first */
      live_streams[i] = NULL;
    }
  for (i = 0; i < sizeof live_gates / sizeof live_gates[0]; ++i)
    if (live_gates[i] != NULL) gate_destroy(live_gates[i]);
  for (i = 0; i < sizeof tracked / sizeof tracked[0]; ++i)
    if (tracked[i] != NULL) {
      (void)dao_allocator_destroy(tracked[i]);
      tracked[i] = NULL;
    }
  return 0;
}

/* The programs run with the cache on, test_caching_nocache with
   DAO_NO_CACHING=1: each main checks that it was started as it expects
   (`want`: 1 for DAO_NO_CACHING=1). */
static inline int no_caching_is(int want) {
  const char *env = getenv("DAO_NO_CACHING");
  const int on = env != NULL && strcmp(env, "1") == 0;
  if (on != want) {
    fprintf(stderr, want ? "test_caching_nocache expects DAO_NO_CACHING=1\n"
                         : "this test_caching_* program must run without DAO_NO_CACHING=1\n");
    return 0;
  }
  return 1;
}

/* ------------------------------------------------------------------------
 * Snapshots read into plain arrays
 * ---------------------------------------------------------------------- */

typedef struct snap_segment {
  dao_segment_info info;
  dao_block_info *blocks;
} snap_segment;

typedef struct snap {
  size_t count;
  snap_segment *segments;
} snap;

static inline snap take_snap(dao_allocator *a) {
  dao_snapshot *s = NULL;
  snap out;
  size_t i, j;
  assert_ok(dao_allocator_snapshot(a, &s));
  assert_non_null(s);
  assert_ok(dao_snapshot_segment_count(s, &out.count));
  out.segments = (snap_segment *)calloc(out.count + 1, sizeof *out.segments);
  assert_non_null(out.segments);
  for (i = 0; i < out.count; ++i) {
    snap_segment *seg = &out.segments[i];
    seg->info.struct_size = sizeof seg->info;
    assert_ok(dao_snapshot_segment(s, i, &seg->info));
    assert_int_equal(seg->info.struct_size, sizeof seg->info);
    assert_true(seg->info.block_count >= 1);
    seg->blocks = (dao_block_info *)calloc(seg->info.block_count, sizeof *seg->blocks);
    assert_non_null(seg->blocks);
    for (j = 0; j < seg->info.block_count; ++j) {
      seg->blocks[j].struct_size = sizeof seg->blocks[j];
      assert_ok(dao_snapshot_block(s, i, j, &seg->blocks[j]));
    }
  }
  assert_ok(dao_snapshot_destroy(s));
  return out;
}

static inline void free_snap(snap *s) {
  size_t i;
  for (i = 0; i < s->count; ++i) free(s->segments[i].blocks);
  free(s->segments);
  s->segments = NULL;
  s->count = 0;
}

/* The block that starts at `p`, or NULL; `segment` receives its segment. */
static inline const dao_block_info *find_block(const snap *s, const void *p,
                                               const snap_segment **segment) {
  size_t i, j;
  for (i = 0; i < s->count; ++i)
    for (j = 0; j < s->segments[i].info.block_count; ++j)
      if (s->segments[i].blocks[j].address == (uintptr_t)p) {
        if (segment) *segment = &s->segments[i];
        return &s->segments[i].blocks[j];
      }
  return NULL;
}

/* Counts block states over a snapshot. */
static inline size_t count_state(const snap *s, dao_block_state state) {
  size_t i, j, n = 0;
  for (i = 0; i < s->count; ++i)
    for (j = 0; j < s->segments[i].info.block_count; ++j)
      n += s->segments[i].blocks[j].state == state;
  return n;
}

/* Bytes an expandable segment must have mapped at least: every page that a
   block in use (allocated or pending) touches (ensure_mapped maps them, and
   unmap_free only unmaps pages wholly inside free blocks, so right after a
   trim it is exactly this). */
static inline size_t pages_in_use(const snap_segment *seg) {
  const size_t g = page_size();
  size_t j, total = 0, covered_to = 0; /* offsets from the segment start */
  for (j = 0; j < seg->info.block_count; ++j) {
    const dao_block_info *b = &seg->blocks[j];
    size_t lo, hi;
    if (b->state == DAO_BLOCK_FREE) continue;
    lo = round_down_to(b->address - seg->info.address, g);
    hi = round_up_to(b->address - seg->info.address + b->size, g);
    if (lo < covered_to) lo = covered_to;
    if (hi > lo) total += hi - lo;
    if (hi > covered_to) covered_to = hi;
  }
  return total;
}
/* The structural invariants alone (for tests that keep no model): blocks
   tile each segment in address order, free neighbours have merged, sizes
   are multiples of 512, only allocated blocks have a requested size. */
static inline void check_tiling(const snap *s) {
  size_t i, j;
  for (i = 0; i < s->count; ++i) {
    const snap_segment *seg = &s->segments[i];
    uintptr_t cursor = seg->info.address;
    assert_true(seg->info.mapped_bytes <= seg->info.size);
    if (seg->info.expandable) assert_true(seg->info.mapped_bytes >= pages_in_use(seg));
    for (j = 0; j < seg->info.block_count; ++j) {
      const dao_block_info *b = &seg->blocks[j];
      assert_int_equal(b->address, cursor);
      assert_int_equal(b->size % 512, 0);
      cursor += b->size;
      if (j > 0 && b->state == DAO_BLOCK_FREE)
        assert_int_not_equal(seg->blocks[j - 1].state, DAO_BLOCK_FREE);
      if (b->state != DAO_BLOCK_ALLOCATED) assert_int_equal(b->requested_size, 0);
    }
    assert_int_equal(cursor, seg->info.address + seg->info.size);
  }
}

#endif /* CACHING_TEST_UTIL_H */
