/* The "caching" strategy through the public API: split/merge invariants
 * checked against the snapshot after random sequences, rounding and pools,
 * max_split_size, stream-ordered reuse and record_stream (with data that
 * must not be clobbered), the out-of-memory ladder on a small device, limits,
 * statistics equal to what the test counts itself, the JSON snapshot (parsed
 * by a validator written here), snapshot API bad input, trim and garbage
 * collection.
 *
 * Runs with DAO_SIM_DEVICES=256MiB,8MiB (device 0: room for random
 * sequences; device 1: a small device that fills up). Mode "nocache" (argv[1])
 * runs with DAO_NO_CACHING=1 and checks that every free gives memory back.
 *
 * Where a check depends on how the strategy works (segment sizes, mapping
 * granularity, which cached memory is released when), the comment names the
 * place in src/strategy/caching.cpp it follows. No check depends on timing:
 * work that must stay pending waits on a gate the test opens. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dao_test.h"
#include "dao_test_gate.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

#define BIG_CAPACITY (256 * MIB)
#define SMALL_CAPACITY (8 * MIB)

static dao_place big_place(void) { return dao_place_sim(0); }
static dao_place small_place(void) { return dao_place_sim(1); }

static int setup(void **state) {
  int sims = 0;
  size_t total0 = 0, total1 = 0;
  (void)state;
  if (dao_place_device_count(DAO_PLACE_SIM, &sims) != DAO_OK || sims != 2 ||
      dao_place_memory_info(big_place(), NULL, &total0) != DAO_OK ||
      dao_place_memory_info(small_place(), NULL, &total1) != DAO_OK || total0 != BIG_CAPACITY ||
      total1 != SMALL_CAPACITY) {
    fprintf(stderr, "test_caching expects DAO_SIM_DEVICES=256MiB,8MiB\n");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static size_t page_size(void) {
  /* The mapping granularity of SIM expandable segments is the host page
     (sim.cpp: map_granularity() returns host_page_size()). */
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static size_t round_up_to(size_t x, size_t unit) { return (x + unit - 1) / unit * unit; }
static size_t round_down_to(size_t x, size_t unit) { return x / unit * unit; }

/* caching.cpp round_size(): 512 B minimum and unit; with d > 1 divisions,
   sizes above 512*d go up to the next of d steps between powers of two. */
static size_t expected_round(size_t bytes, unsigned divisions) {
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
static void format_bytes(size_t bytes, char *out, size_t cap) {
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

static size_t place_free(dao_place place) {
  size_t free_bytes = 0;
  assert_ok(dao_place_memory_info(place, &free_bytes, NULL));
  return free_bytes;
}

/* Allocators made by a test, so that a failing test does not leave memory
   behind for the next ones: the teardown frees what the snapshot shows
   allocated and destroys them. */
static dao_allocator *tracked[16];

static dao_allocator *make(dao_place place, const char *config) {
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

static void destroy(dao_allocator *a) {
  size_t i;
  assert_ok(dao_allocator_destroy(a));
  for (i = 0; i < sizeof tracked / sizeof tracked[0]; ++i)
    if (tracked[i] == a) tracked[i] = NULL;
}

/* What the places have free when a test starts: a test that gives all its
   memory back compares with this, so that a failure before it (which may
   leave memory held) shows only once. */
static size_t big_baseline, small_baseline;

static int baseline(void **state) {
  (void)state;
  big_baseline = place_free(big_place());
  small_baseline = place_free(small_place());
  return 0;
}

static dao_stat get_stat(dao_allocator *a, dao_stat_metric metric, dao_stat_pool pool) {
  dao_stat s;
  memset(&s, 0x5a, sizeof s);
  assert_ok(dao_allocator_get_stat(a, metric, pool, &s));
  return s;
}

static int64_t reserved_now(dao_allocator *a) {
  return get_stat(a, DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL).current;
}

static size_t usable(dao_allocator *a, const void *p) {
  size_t n = 0;
  assert_ok(dao_allocator_usable_size(a, p, &n));
  return n;
}

static void *alloc_ok(dao_allocator *a, size_t bytes, dao_stream stream) {
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
static int pattern_range(unsigned char *c, size_t from, size_t to, unsigned seed, int check) {
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

static int pattern(void *p, size_t n, unsigned seed, int check) {
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

static void pattern_fill(void *p, size_t n, unsigned seed) { (void)pattern(p, n, seed, 0); }
static int pattern_check(void *p, size_t n, unsigned seed) { return pattern(p, n, seed, 1); }

/* Gates in use, so that the teardown of a failed test can open them (their
   host functions are still queued) before it destroys the streams. */
static gate *live_gates[4];

static void gate_init(gate *g) {
  size_t i;
  gate_setup(g);
  for (i = 0; i < sizeof live_gates / sizeof live_gates[0]; ++i)
    if (live_gates[i] == NULL) {
      live_gates[i] = g;
      break;
    }
}

static void gate_destroy(gate *g) {
  size_t i;
  gate_teardown(g);
  for (i = 0; i < sizeof live_gates / sizeof live_gates[0]; ++i)
    if (live_gates[i] == g) live_gates[i] = NULL;
}

/* Streams made by a test (destroyed by the teardown if the test fails). */
static dao_stream live_streams[8];

static dao_stream make_stream(dao_place place) {
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

static void drop_stream(dao_stream s) {
  size_t i;
  assert_ok(dao_stream_destroy(s));
  for (i = 0; i < sizeof live_streams / sizeof live_streams[0]; ++i)
    if (live_streams[i] == s) live_streams[i] = NULL;
}

/* After each test; does something only when the test failed half-way:
   opens its gates, frees what its allocators still have allocated (the
   snapshot lists it), runs and destroys its streams, then destroys the
   allocators. */
static int cleanup(void **state) {
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

static void json_matches_snapshot(dao_allocator *a);

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

static snap take_snap(dao_allocator *a) {
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

static void free_snap(snap *s) {
  size_t i;
  for (i = 0; i < s->count; ++i) free(s->segments[i].blocks);
  free(s->segments);
  s->segments = NULL;
  s->count = 0;
}

/* The block that starts at `p`, or NULL; `segment` receives its segment. */
static const dao_block_info *find_block(const snap *s, const void *p,
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
static size_t count_state(const snap *s, dao_block_state state) {
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
static size_t pages_in_use(const snap_segment *seg) {
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

/* Figures of a snapshot that statistics must agree with. */
typedef struct snap_totals {
  int64_t mapped[DAO_STAT_POOL_COUNT];
  int64_t segments[DAO_STAT_POOL_COUNT];
  int64_t split_bytes[DAO_STAT_POOL_COUNT];
  int64_t split_blocks[DAO_STAT_POOL_COUNT];
  size_t largest_free; /* largest free block (classic segments only) */
  size_t in_use_pages; /* sum of pages_in_use over expandable segments */
} snap_totals;

/* Inactive split, as caching.cpp is_split()/count_split() count it: free
   blocks in segments that have other blocks, except the last block of an
   expandable segment (its unused end: addresses, not fragmentation).
   Blocks count in the small or large pool by their size (<= 1 MiB: small),
   segments (reserved bytes and segments) by the pool of the segment. */
static snap_totals totals_of(const snap *s) {
  snap_totals t;
  size_t i, j;
  memset(&t, 0, sizeof t);
  for (i = 0; i < s->count; ++i) {
    const snap_segment *seg = &s->segments[i];
    const int pool = (int)seg->info.pool;
    t.mapped[DAO_STAT_POOL_ALL] += (int64_t)seg->info.mapped_bytes;
    t.mapped[pool] += (int64_t)seg->info.mapped_bytes;
    t.segments[DAO_STAT_POOL_ALL] += 1;
    t.segments[pool] += 1;
    if (seg->info.expandable) t.in_use_pages += pages_in_use(seg);
    for (j = 0; j < seg->info.block_count; ++j) {
      const dao_block_info *b = &seg->blocks[j];
      const int last = j + 1 == seg->info.block_count;
      if (b->state != DAO_BLOCK_FREE) continue;
      if (!seg->info.expandable && b->size > t.largest_free) t.largest_free = b->size;
      if (seg->info.block_count == 1 || (seg->info.expandable && last)) continue;
      t.split_bytes[DAO_STAT_POOL_ALL] += (int64_t)b->size;
      t.split_bytes[b->size <= MIB ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE] += (int64_t)b->size;
      t.split_blocks[DAO_STAT_POOL_ALL] += 1;
      t.split_blocks[b->size <= MIB ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE] += 1;
    }
  }
  return t;
}

/* ------------------------------------------------------------------------
 * A model of the live blocks and of the statistics the test counts itself
 * ---------------------------------------------------------------------- */

enum { kSlots = 48 };

typedef struct live_block {
  void *ptr;
  size_t size;    /* asked for */
  size_t rounded; /* expected block size */
  dao_stream stream;
  unsigned seed;
} live_block;

typedef struct own_stat {
  int64_t current, peak, allocated, freed;
} own_stat;

/* Metrics the model counts exactly (no record_stream: active = allocated). */
static const dao_stat_metric counted_metrics[] = {DAO_STAT_ALLOCATED_BYTES,
                                                  DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_ACTIVE_BYTES,
                                                  DAO_STAT_ACTIVE_BLOCKS, DAO_STAT_REQUESTED_BYTES};

typedef struct model {
  live_block slots[kSlots];
  size_t live;
  size_t live_requested;
  unsigned divisions;
  int fast_reuse; /* fast_reuse=true: a block may be up to 4 classes larger */
  own_stat st[DAO_STAT_METRIC_COUNT][DAO_STAT_POOL_COUNT];
  /* current of each metric at the last reset of accumulated stats: from
     then on allocated - freed == current - base */
  int64_t base[DAO_STAT_METRIC_COUNT][DAO_STAT_POOL_COUNT];
  uint64_t allocs, frees;
  uint64_t larger_blocks; /* fast reuse: blocks larger than the rounded size */
} model;

static void own_add(own_stat *s, int64_t delta) {
  s->current += delta;
  if (delta >= 0) {
    s->allocated += delta;
    if (s->current > s->peak) s->peak = s->current;
  } else {
    s->freed += -delta;
  }
}

static void model_count(model *m, dao_stat_metric metric, int small, int64_t delta) {
  own_add(&m->st[metric][DAO_STAT_POOL_ALL], delta);
  own_add(&m->st[metric][small ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE], delta);
}

static void model_on_alloc(model *m, const live_block *b) {
  const int small = b->rounded <= MIB;
  model_count(m, DAO_STAT_ALLOCATED_BYTES, small, (int64_t)b->rounded);
  model_count(m, DAO_STAT_ALLOCATED_BLOCKS, small, 1);
  model_count(m, DAO_STAT_ACTIVE_BYTES, small, (int64_t)b->rounded);
  model_count(m, DAO_STAT_ACTIVE_BLOCKS, small, 1);
  model_count(m, DAO_STAT_REQUESTED_BYTES, small, (int64_t)b->size);
  ++m->allocs;
}

static void model_on_free(model *m, const live_block *b) {
  const int small = b->rounded <= MIB;
  model_count(m, DAO_STAT_ALLOCATED_BYTES, small, -(int64_t)b->rounded);
  model_count(m, DAO_STAT_ALLOCATED_BLOCKS, small, -1);
  model_count(m, DAO_STAT_ACTIVE_BYTES, small, -(int64_t)b->rounded);
  model_count(m, DAO_STAT_ACTIVE_BLOCKS, small, -1);
  model_count(m, DAO_STAT_REQUESTED_BYTES, small, -(int64_t)b->size);
  ++m->frees;
}

static int by_ptr(const void *x, const void *y) {
  uintptr_t a = (uintptr_t)((const live_block *)x)->ptr;
  uintptr_t b = (uintptr_t)((const live_block *)y)->ptr;
  return a < b ? -1 : a > b;
}

/* The structural invariants alone (for tests that keep no model): blocks
   tile each segment in address order, free neighbours have merged, sizes
   are multiples of 512, only allocated blocks have a requested size. */
static void check_tiling(const snap *s) {
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

/* Every invariant of the snapshot against the model (item 1 of the issue's
   tests). `expandable` is what every segment must be. */
static void check_snapshot_invariants(const snap *s, const model *m, int expandable) {
  live_block sorted[kSlots];
  unsigned char seen[kSlots];
  size_t n = 0, i, j, seen_count = 0;
  const size_t g = page_size();
  for (i = 0; i < kSlots; ++i)
    if (m->slots[i].ptr != NULL) sorted[n++] = m->slots[i];
  assert_int_equal(n, m->live);
  qsort(sorted, n, sizeof *sorted, by_ptr);
  memset(seen, 0, sizeof seen);
  for (i = 0; i < s->count; ++i) {
    const snap_segment *seg = &s->segments[i];
    const dao_segment_info *in = &seg->info;
    uintptr_t cursor = in->address;
    /* segments in address order, disjoint */
    if (i > 0) {
      const dao_segment_info *prev = &s->segments[i - 1].info;
      assert_true(prev->address + prev->size <= in->address);
    }
    assert_int_equal(in->struct_size, sizeof *in);
    assert_int_equal(in->expandable, expandable);
    assert_true(in->pool == DAO_STAT_POOL_SMALL || in->pool == DAO_STAT_POOL_LARGE);
    assert_true(in->size > 0);
    assert_int_equal(in->size % 512, 0);
    assert_true(in->mapped_bytes <= in->size);
    if (!expandable) {
      assert_int_equal(in->mapped_bytes, in->size);
    } else {
      assert_int_equal(in->mapped_bytes % g, 0);
      assert_true(in->mapped_bytes >= pages_in_use(seg));
    }
    for (j = 0; j < in->block_count; ++j) {
      const dao_block_info *b = &seg->blocks[j];
      /* the blocks tile the segment */
      assert_int_equal(b->struct_size, sizeof *b);
      assert_int_equal(b->address, cursor);
      assert_true(b->size > 0);
      assert_int_equal(b->size % 512, 0);
      cursor += b->size;
      assert_ptr_equal(b->stream, in->stream);
      /* free neighbours have merged */
      if (j > 0 && b->state == DAO_BLOCK_FREE)
        assert_int_not_equal(seg->blocks[j - 1].state, DAO_BLOCK_FREE);
      if (b->state == DAO_BLOCK_ALLOCATED) {
        live_block key;
        const live_block *hit;
        size_t k;
        key.ptr = (void *)b->address;
        hit = (const live_block *)bsearch(&key, sorted, n, sizeof *sorted, by_ptr);
        if (hit == NULL) {
          print_error("allocated block %p (%zu B) in the snapshot is not held by the test\n",
                      (void *)b->address, b->size);
          fail();
        }
        k = (size_t)(hit - sorted);
        assert_false(seen[k]); /* each held block appears once */
        seen[k] = 1;
        ++seen_count;
        assert_int_equal(b->requested_size, hit->size);
        assert_int_equal(b->size, hit->rounded);
        assert_ptr_equal(b->stream, hit->stream);
        /* the pool: in classic segments, small-pool segments hold only
           requests <= 1 MiB and large-pool ones only larger requests; an
           expandable segment (one per stream) holds both and is of the
           large pool (caching.cpp pool_for()) */
        if (expandable) {
          assert_int_equal(in->pool, DAO_STAT_POOL_LARGE);
        } else if (in->pool == DAO_STAT_POOL_SMALL) {
          assert_true(b->size <= MIB);
          assert_true(b->requested_size <= MIB);
        } else {
          if (b->size <= MIB) {
            print_error(
                "block %p of %zu B (asked %zu) on stream %p in a large-pool segment %p+%zu "
                "(stream %p, expandable %d, %zu blocks)\n",
                (void *)b->address, b->size, b->requested_size, (void *)b->stream,
                (void *)in->address, in->size, (void *)in->stream, in->expandable, in->block_count);
          }
          assert_true(b->size > MIB);
        }
      } else {
        assert_int_equal(b->state, DAO_BLOCK_FREE); /* no record_stream here */
        assert_int_equal(b->requested_size, 0);
      }
    }
    assert_int_equal(cursor, in->address + in->size);
    /* one expandable segment per stream (the requests here are far
       smaller than its addresses) */
    if (expandable)
      for (j = 0; j < i; ++j) assert_ptr_not_equal(s->segments[j].info.stream, in->stream);
  }
  assert_int_equal(seen_count, n);
}

/* Statistics against the model and the snapshot (item 5). */
static void check_statistics(dao_allocator *a, const model *m, const snap *s) {
  const snap_totals t = totals_of(s);
  dao_allocator_stats summary = dao_test_stats(a);
  size_t i;
  int p;
  for (i = 0; i < sizeof counted_metrics / sizeof counted_metrics[0]; ++i) {
    for (p = 0; p < DAO_STAT_POOL_COUNT; ++p) {
      const dao_stat got = get_stat(a, counted_metrics[i], (dao_stat_pool)p);
      const own_stat *want = &m->st[counted_metrics[i]][p];
      if (got.current != want->current || got.peak != want->peak ||
          got.allocated != want->allocated || got.freed != want->freed) {
        print_error("metric %d pool %d: got {%lld %lld %lld %lld}, counted {%lld %lld %lld %lld}\n",
                    (int)counted_metrics[i], p, (long long)got.current, (long long)got.peak,
                    (long long)got.allocated, (long long)got.freed, (long long)want->current,
                    (long long)want->peak, (long long)want->allocated, (long long)want->freed);
        fail();
      }
    }
  }
  for (p = 0; p < DAO_STAT_POOL_COUNT; ++p) {
    const dao_stat reserved = get_stat(a, DAO_STAT_RESERVED_BYTES, (dao_stat_pool)p);
    const dao_stat segments = get_stat(a, DAO_STAT_RESERVED_SEGMENTS, (dao_stat_pool)p);
    const dao_stat split_bytes = get_stat(a, DAO_STAT_INACTIVE_SPLIT_BYTES, (dao_stat_pool)p);
    const dao_stat split_blocks = get_stat(a, DAO_STAT_INACTIVE_SPLIT_BLOCKS, (dao_stat_pool)p);
    assert_int_equal(reserved.current, t.mapped[p]);
    assert_int_equal(segments.current, t.segments[p]);
    assert_int_equal(split_bytes.current, t.split_bytes[p]);
    assert_int_equal(split_blocks.current, t.split_blocks[p]);
    assert_true(reserved.peak >= reserved.current);
    assert_true(segments.peak >= segments.current);
    assert_true(split_bytes.peak >= split_bytes.current);
    assert_int_equal(reserved.allocated - reserved.freed,
                     reserved.current - m->base[DAO_STAT_RESERVED_BYTES][p]);
    assert_int_equal(segments.allocated - segments.freed,
                     segments.current - m->base[DAO_STAT_RESERVED_SEGMENTS][p]);
    assert_int_equal(split_bytes.allocated - split_bytes.freed,
                     split_bytes.current - m->base[DAO_STAT_INACTIVE_SPLIT_BYTES][p]);
    assert_int_equal(split_blocks.allocated - split_blocks.freed,
                     split_blocks.current - m->base[DAO_STAT_INACTIVE_SPLIT_BLOCKS][p]);
  }
  /* the summary agrees with the detailed statistics */
  assert_int_equal(summary.allocated_bytes, m->st[DAO_STAT_ALLOCATED_BYTES][0].current);
  assert_int_equal(summary.peak_allocated_bytes, m->st[DAO_STAT_ALLOCATED_BYTES][0].peak);
  assert_int_equal(summary.requested_bytes, m->st[DAO_STAT_REQUESTED_BYTES][0].current);
  assert_int_equal(summary.live_blocks, m->live);
  assert_int_equal(summary.reserved_bytes, t.mapped[DAO_STAT_POOL_ALL]);
  assert_int_equal(summary.peak_reserved_bytes,
                   get_stat(a, DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL).peak);
  assert_int_equal(summary.alloc_count, m->allocs);
  assert_int_equal(summary.free_count, m->frees);
  if (s->count > 0 && !s->segments[0].info.expandable)
    assert_int_equal(summary.largest_free_block, t.largest_free);
  /* classic segments hold whole blocks, so reserved covers allocated */
  if (s->count == 0 || !s->segments[0].info.expandable)
    assert_true(summary.reserved_bytes >= summary.allocated_bytes);
}

/* Sizes from 1 B to 12 MiB, log-spread, with the edges of the pools. */
static size_t random_size(uint64_t *rng) {
  static const size_t edges[] = {1,        511,          512,      513,          4096,
                                 MIB - 1,  MIB,          MIB + 1,  2 * MIB,      10 * MIB - 1,
                                 10 * MIB, 10 * MIB + 1, 12 * MIB, 20 * MIB / 2, 3 * MIB / 2};
  const uint64_t r = dao_test_rand(rng);
  size_t base, size;
  if (r % 8 == 0) return edges[dao_test_rand(rng) % (sizeof edges / sizeof edges[0])];
  base = (size_t)1 << (dao_test_rand(rng) % 24);
  size = base + (size_t)(dao_test_rand(rng) % base);
  return size > 12 * MIB ? 12 * MIB : size;
}

static void model_init(model *m, unsigned divisions) {
  memset(m, 0, sizeof *m);
  m->divisions = divisions;
}

static void do_alloc(dao_allocator *a, model *m, size_t slot, size_t size, dao_stream stream,
                     unsigned seed) {
  live_block *b = &m->slots[slot];
  b->ptr = alloc_ok(a, size, stream);
  b->size = size;
  b->rounded = expected_round(size, m->divisions);
  b->stream = stream;
  b->seed = seed;
  if (m->fast_reuse) {
    /* a recent block of the request's size class or up to three classes
       above (16 per power of two; pairs of 512 B units below 16 KiB) */
    const size_t got = usable(a, b->ptr);
    if (got < b->rounded || got >= b->rounded + b->rounded / 4 + 4096) {
      print_error("fast reuse gave %zu B for %zu B (rounded %zu)\n", got, size, b->rounded);
      fail();
    }
    if (got != b->rounded) ++m->larger_blocks;
    b->rounded = got;
  }
  assert_int_equal(usable(a, b->ptr), b->rounded);
  pattern_fill(b->ptr, size, seed);
  ++m->live;
  m->live_requested += size;
  model_on_alloc(m, b);
}

static void do_free(dao_allocator *a, model *m, size_t slot) {
  live_block *b = &m->slots[slot];
  if (!pattern_check(b->ptr, b->size, b->seed)) {
    print_error("block %p (%zu B) lost its data before it was freed\n", b->ptr, b->size);
    fail();
  }
  assert_ok(dao_allocator_free(a, b->ptr));
  model_on_free(m, b);
  --m->live;
  m->live_requested -= b->size;
  b->ptr = NULL;
}

/* `steps` random frees and allocations on the NULL stream and `stream`,
   keeping at most 64 MiB asked for at once; every `check_every` steps the
   snapshot invariants and the statistics are checked. */
static void run_random(dao_allocator *a, model *m, dao_stream stream, uint64_t *rng, int steps,
                       int check_every, int expandable) {
  const size_t budget = 64 * MIB;
  int step;
  for (step = 1; step <= steps; ++step) {
    const size_t slot = (size_t)(dao_test_rand(rng) % kSlots);
    if (m->slots[slot].ptr != NULL) {
      do_free(a, m, slot);
    } else {
      const size_t size = random_size(rng);
      const dao_stream on = dao_test_rand(rng) % 3 == 0 ? stream : NULL;
      if (m->live_requested + size <= budget) do_alloc(a, m, slot, size, on, (unsigned)step);
    }
    if (step % check_every == 0) {
      snap s = take_snap(a);
      check_snapshot_invariants(&s, m, expandable);
      check_statistics(a, m, &s);
      free_snap(&s);
    }
  }
}

static void free_all(dao_allocator *a, model *m) {
  size_t i;
  for (i = 0; i < kSlots; ++i)
    if (m->slots[i].ptr != NULL) do_free(a, m, i);
  assert_int_equal(m->live, 0);
}

/* ------------------------------------------------------------------------
 * 1. Split/merge invariants after random sequences
 * ---------------------------------------------------------------------- */

static void random_sequence(const char *config, int expandable, unsigned divisions, uint64_t seed) {
  dao_allocator *a = make(big_place(), config);
  dao_stream stream = NULL;
  model *m = (model *)malloc(sizeof *m);
  uint64_t rng = seed;
  size_t released = 0, i;
  int64_t reserved_before;
  snap s;
  assert_non_null(m);
  model_init(m, divisions);
  m->fast_reuse = config != NULL && strstr(config, "fast_reuse=true") != NULL;
  stream = make_stream(big_place());
  run_random(a, m, stream, &rng, 1500, 50, expandable);
  /* fast reuse really served requests (only it hands out larger blocks) */
  if (m->fast_reuse) assert_true(m->larger_blocks > 0);
  free_all(a, m);

  /* Everything free: every segment is one free block (all neighbours
     merged), and the statistics still agree. */
  s = take_snap(a);
  check_snapshot_invariants(&s, m, expandable);
  check_statistics(a, m, &s);
  assert_true(s.count > 0); /* the cache holds on to the memory */
  for (i = 0; i < s.count; ++i) {
    assert_int_equal(s.segments[i].info.block_count, 1);
    assert_int_equal(s.segments[i].blocks[0].state, DAO_BLOCK_FREE);
  }
  free_snap(&s);
  assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current, 0);
  assert_int_equal(get_stat(a, DAO_STAT_INACTIVE_SPLIT_BYTES, DAO_STAT_POOL_ALL).current, 0);

  /* Trim gives back everything: classic segments are wholly free, and an
     expandable segment that is one free block has all its pages unmapped
     and is then released too (caching.cpp release_cached()). So no segment
     is left, not even an expandable one with mapped_bytes == 0. */
  reserved_before = reserved_now(a);
  assert_ok(dao_allocator_trim(a, &released));
  assert_int_equal(released, reserved_before);
  assert_int_equal(reserved_now(a), 0);
  assert_int_equal(get_stat(a, DAO_STAT_RESERVED_SEGMENTS, DAO_STAT_POOL_ALL).current, 0);
  s = take_snap(a);
  assert_int_equal(s.count, 0);
  free_snap(&s);
  assert_int_equal(place_free(big_place()), big_baseline);

  /* The allocator still works after a full trim. */
  run_random(a, m, stream, &rng, 200, 50, expandable);
  free_all(a, m);
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(reserved_now(a), 0);

  drop_stream(stream);
  destroy(a);
  free(m);
}

static void random_sequences_expandable(void **state) {
  static const uint64_t seeds[] = {1, 0x9e3779b97f4a7c15ull, 4242, 77777};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof seeds / sizeof seeds[0]; ++i) random_sequence(NULL, 1, 0, seeds[i]);
}

static void random_sequences_classic(void **state) {
  static const uint64_t seeds[] = {2, 0xdeadbeefcafef00dull, 31337, 5};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof seeds / sizeof seeds[0]; ++i)
    random_sequence("expandable_segments=false", 0, 0, seeds[i]);
}

static void random_sequences_other_configs(void **state) {
  (void)state;
  random_sequence("roundup_power2_divisions=4", 1, 4, 11);
  random_sequence("roundup_power2_divisions=8,expandable_segments=false", 0, 8, 12);
  /* blocks of 64 MiB and more are never split: none occur in the random
     sizes (<= 12 MiB), so this is the same as no limit, in classic mode */
  random_sequence("max_split_size_mb=64,expandable_segments=false", 0, 0, 13);
}

/* Fast reuse defers merging: the snapshot (which merges first) must still
   show every invariant, and the statistics must still match the model. */
static void random_sequences_fast_reuse(void **state) {
  (void)state;
  random_sequence("fast_reuse=true", 1, 0, 21);
  random_sequence("fast_reuse=true", 1, 0, 0x5eed5eed5eedull);
  random_sequence("fast_reuse=true,expandable_segments=false", 0, 0, 22);
  random_sequence("fast_reuse=true,roundup_power2_divisions=4", 1, 4, 23);
  random_sequence("fast_reuse=true,max_split_size_mb=64,expandable_segments=false", 0, 0, 24);
  /* garbage collection and a headroom give pages back while recent blocks
     wait unmerged */
  random_sequence("fast_reuse=true,garbage_collection_threshold=0.3,memory_fraction=0.5,"
                  "reserve_headroom=0",
                  1, 0, 25);
}

/* ------------------------------------------------------------------------
 * 2. Rounding, pools, max_split_size
 * ---------------------------------------------------------------------- */

static void rounding_and_pools(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    struct {
      size_t ask, want;
    } cases[] = {{1, 512},
                 {511, 512},
                 {512, 512},
                 {513, 1024},
                 {1000, 1024},
                 {4097, 4608},
                 {MIB - 1, MIB},
                 {MIB, MIB},
                 {MIB + 1, MIB + 512},
                 {1258291 /* 1.2 MiB */, 1258496},
                 {10 * MIB + 1, 10 * MIB + 512}};
    dao_allocator *a = make(big_place(), configs[c]);
    void *p[sizeof cases / sizeof cases[0]];
    size_t i, small = 0, large = 0;
    snap s;
    for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      p[i] = alloc_ok(a, cases[i].ask, NULL);
      assert_int_equal(usable(a, p[i]), cases[i].want);
      assert_int_equal(expected_round(cases[i].ask, 0), cases[i].want);
      if (cases[i].want <= MIB)
        small += cases[i].want;
      else
        large += cases[i].want;
    }
    /* blocks count in the pool of their size in both modes */
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_SMALL).current, small);
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_LARGE).current, large);
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_POOL_SMALL).current, 8);
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_POOL_LARGE).current, 3);
    s = take_snap(a);
    for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      const snap_segment *seg = NULL;
      const dao_block_info *b = find_block(&s, p[i], &seg);
      assert_non_null(b);
      assert_int_equal(b->state, DAO_BLOCK_ALLOCATED);
      assert_int_equal(b->size, cases[i].want);
      assert_int_equal(b->requested_size, cases[i].ask);
      assert_int_equal(seg->info.expandable, c % 2 == 0);
      if (c % 2 == 0) {
        /* one expandable segment for the stream, of the large pool */
        assert_int_equal(s.count, 1);
        assert_int_equal(seg->info.pool, DAO_STAT_POOL_LARGE);
      } else {
        assert_int_equal(seg->info.pool,
                         cases[i].ask <= MIB ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE);
        /* PyTorch's segments: 2 MiB for small requests, 20 MiB for 1-10 MiB
           (the 10 MiB + 1 request is carved from that one too: it fits) */
        assert_int_equal(seg->info.size, cases[i].want <= MIB ? 2 * MIB : 20 * MIB);
      }
    }
    free_snap(&s);
    for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) assert_ok(dao_allocator_free(a, p[i]));
    if (c % 2 == 1) {
      /* alone, requests of 10 MiB and more get a segment rounded up to
         2 MiB (caching.cpp segment_size()) */
      void *q;
      assert_ok(dao_allocator_trim(a, NULL));
      q = alloc_ok(a, 10 * MIB + 1, NULL);
      s = take_snap(a);
      assert_int_equal(s.count, 1);
      assert_int_equal(s.segments[0].info.size, 12 * MIB);
      assert_int_equal(s.segments[0].info.block_count, 2);
      free_snap(&s);
      assert_ok(dao_allocator_free(a, q));
    }
    destroy(a);
  }
}

static void roundup_power2_divisions(void **state) {
  struct {
    size_t ask, want;
  } cases[] = {{1, 512},           {1000, 1024}, /* <= 512*4: plain 512 B rounding */
               {2048, 2048},       {3000, 3072}, /* 2 KiB + quarters of 512 B */
               {4097, 5120},                     /* 4 KiB + quarters of 1 KiB (512 B steps: 4608) */
               {1258291, 1310720},               /* 1.2 MiB -> 1.25 MiB */
               {MIB + 1, 1310720}, {1310720, 1310720}, {1310721, 1572864}, /* -> 1.5 MiB */
               {1572865, 1835008},                                         /* -> 1.75 MiB */
               {1835009, 2 * MIB}, {2 * MIB, 2 * MIB}, {3 * MIB + 1, 3 * MIB + MIB / 2},
               {900 * KIB, MIB}}; /* rounds to 1 MiB: still the small pool */
  static const char *const configs[] = {"roundup_power2_divisions=4",
                                        "roundup_power2_divisions=4,expandable_segments=false"};
  dao_allocator *a = NULL;
  size_t i, c;
  (void)state;
  for (c = 0; c < 2; ++c) {
    const char *config = NULL;
    a = make(big_place(), configs[c]);
    assert_ok(dao_allocator_info(a, NULL, NULL, &config));
    assert_non_null(strstr(config, "roundup_power2_divisions=4"));
    for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      void *p = alloc_ok(a, cases[i].ask, NULL);
      const int small = cases[i].want <= MIB;
      snap s;
      const snap_segment *seg = NULL;
      assert_int_equal(usable(a, p), cases[i].want);
      assert_int_equal(expected_round(cases[i].ask, 4), cases[i].want);
      /* the pool follows the rounded size */
      assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_SMALL).current,
                       small ? cases[i].want : 0);
      assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_LARGE).current,
                       small ? 0 : cases[i].want);
      s = take_snap(a);
      assert_non_null(find_block(&s, p, &seg));
      if (c == 1)
        assert_int_equal(seg->info.pool, small ? DAO_STAT_POOL_SMALL : DAO_STAT_POOL_LARGE);
      free_snap(&s);
      assert_ok(dao_allocator_free(a, p));
    }
    destroy(a);
  }
  /* 0 or a power of two up to 64 */
  assert_failure_mentions(
      dao_allocator_create(big_place(), "caching", "roundup_power2_divisions=3", &a),
      DAO_ERR_INVALID_ARGUMENT, "roundup_power2_divisions");
}

/* max_split_size_mb=64 in classic segments: blocks of 64 MiB and more are
   never split, and serve only requests of 64 MiB and more that leave less
   than 20 MiB unused (caching.cpp fits()). */
static void max_split_size(void **state) {
  dao_allocator *a = make(big_place(), "max_split_size_mb=64,expandable_segments=false");
  void *big, *p1, *p2, *r, *t, *u;
  const snap_segment *seg = NULL;
  const dao_block_info *b;
  snap s;
  (void)state;
  big = alloc_ok(a, 100 * MIB, NULL);
  assert_int_equal(usable(a, big), 100 * MIB);
  assert_ok(dao_allocator_free(a, big));
  assert_int_equal(reserved_now(a), 100 * MIB);

  /* A 2 MiB request (large pool) is not carved from the free 100 MiB block:
     it gets a new 20 MiB segment. A 1 MiB request is of the small pool
     anyway and gets a 2 MiB segment. */
  p2 = alloc_ok(a, 2 * MIB, NULL);
  assert_false((uintptr_t)p2 >= (uintptr_t)big && (uintptr_t)p2 < (uintptr_t)big + 100 * MIB);
  assert_int_equal(reserved_now(a), 120 * MIB);
  p1 = alloc_ok(a, MIB, NULL);
  assert_false((uintptr_t)p1 >= (uintptr_t)big && (uintptr_t)p1 < (uintptr_t)big + 100 * MIB);
  assert_int_equal(reserved_now(a), 122 * MIB);
  s = take_snap(a);
  b = find_block(&s, big, &seg);
  assert_non_null(b);
  assert_int_equal(b->state, DAO_BLOCK_FREE);
  assert_int_equal(b->size, 100 * MIB);
  assert_int_equal(seg->info.block_count, 1); /* still whole */
  assert_int_equal(s.count, 3);
  free_snap(&s);

  /* 90 MiB: the 100 MiB block fits within the 20 MiB slack and is handed
     out whole, not split. */
  r = alloc_ok(a, 90 * MIB, NULL);
  assert_ptr_equal(r, big);
  assert_int_equal(usable(a, r), 100 * MIB);
  assert_int_equal(get_stat(a, DAO_STAT_REQUESTED_BYTES, DAO_STAT_POOL_LARGE).current,
                   90 * MIB + 2 * MIB);
  assert_int_equal(reserved_now(a), 122 * MIB);
  assert_ok(dao_allocator_free(a, r));

  /* 70 MiB would leave 30 MiB unused: new memory instead. */
  t = alloc_ok(a, 70 * MIB, NULL);
  assert_ptr_not_equal(t, big);
  assert_int_equal(usable(a, t), 70 * MIB);
  assert_int_equal(reserved_now(a), 192 * MIB);
  s = take_snap(a);
  b = find_block(&s, big, &seg);
  assert_non_null(b);
  assert_int_equal(b->state, DAO_BLOCK_FREE);
  assert_int_equal(seg->info.block_count, 1);
  free_snap(&s);
  assert_ok(dao_allocator_free(a, t));

  /* 110 MiB is larger than the block: new memory (the device has room
     only once the cached 100 MiB and 70 MiB are released: the ladder). */
  u = alloc_ok(a, 110 * MIB, NULL);
  assert_int_equal(usable(a, u), 110 * MIB);
  assert_int_equal(dao_test_stats(a).alloc_retry_count, 1);
  assert_ok(dao_allocator_free(a, u));

  /* A freed 120 MiB block serves a 110 MiB request (10 MiB slack), whole. */
  assert_ok(dao_allocator_free(a, p1));
  assert_ok(dao_allocator_free(a, p2));
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(reserved_now(a), 0);
  big = alloc_ok(a, 120 * MIB, NULL);
  assert_ok(dao_allocator_free(a, big));
  u = alloc_ok(a, 110 * MIB, NULL);
  assert_ptr_equal(u, big);
  assert_int_equal(usable(a, u), 120 * MIB);
  assert_int_equal(reserved_now(a), 120 * MIB);
  s = take_snap(a);
  assert_int_equal(s.count, 1);
  assert_int_equal(s.segments[0].info.block_count, 1);
  free_snap(&s);
  assert_ok(dao_allocator_free(a, u));

  destroy(a);

  /* With expandable segments the limit does not apply (their blocks are
     carved from one address range; documented as segment mode only): the
     freed 100 MiB is split for a 2 MiB request. */
  a = make(big_place(), "max_split_size_mb=64");
  big = alloc_ok(a, 100 * MIB, NULL);
  assert_ok(dao_allocator_free(a, big));
  p2 = alloc_ok(a, 2 * MIB, NULL);
  assert_ptr_equal(p2, big);
  assert_int_equal(usable(a, p2), 2 * MIB);
  assert_ok(dao_allocator_free(a, p2));

  /* Below 20 MiB the limit is refused (such blocks would never split). */
  destroy(a);
  assert_failure_mentions(dao_allocator_create(big_place(), "caching", "max_split_size_mb=20", &a),
                          DAO_ERR_INVALID_ARGUMENT, "max_split_size");
}

/* ------------------------------------------------------------------------
 * 3. Stream-ordered reuse and record_stream
 * ---------------------------------------------------------------------- */

/* A host function that waits at a gate, then fills a buffer. */
typedef struct gated_fill {
  gate g;
  void *p;
  size_t n;
  unsigned seed;
} gated_fill;

static void count_fn(void *user_data) { ++*(int *)user_data; }

/* Static, not on a test's stack: after a failed test, its host function
   still runs (once the teardown opens the gate). */
static gated_fill the_fill;

static void gated_fill_fn(void *user_data) {
  gated_fill *f = (gated_fill *)user_data;
  gate_pass(&f->g);
  dao_test_fill(f->p, f->n, f->seed);
}

static void reuse_is_per_stream(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  const size_t n = 64 * KIB;
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    dao_stream sa = NULL, sb = NULL;
    void *p, *q, *r, *others[8];
    gated_fill *fill = &the_fill;
    snap s;
    const dao_block_info *b;
    int k;
    sa = make_stream(big_place());
    sb = make_stream(big_place());

    /* Freed on A: the next same-size request on A gets it back; one on B
       does not, and B's block belongs to B. */
    p = alloc_ok(a, n, sa);
    assert_ok(dao_allocator_free(a, p));
    q = alloc_ok(a, n, sa);
    assert_ptr_equal(q, p);
    assert_ok(dao_allocator_free(a, q));
    r = alloc_ok(a, n, sb);
    assert_ptr_not_equal(r, p);
    q = alloc_ok(a, n, sa); /* A again after B: still A's block */
    assert_ptr_equal(q, p);
    s = take_snap(a);
    b = find_block(&s, r, NULL);
    assert_non_null(b);
    assert_ptr_equal(b->stream, sb);
    b = find_block(&s, q, NULL);
    assert_non_null(b);
    assert_ptr_equal(b->stream, sa);
    free_snap(&s);
    assert_ok(dao_allocator_free(a, r));

    /* Freed on A while a host function on A still writes it: never handed
       to B (work on B is not ordered after A's). */
    gate_init(&fill->g);
    fill->p = q;
    fill->n = n;
    fill->seed = 77;
    assert_ok(dao_launch_host_func(sa, gated_fill_fn, fill));
    gate_wait_entered(&fill->g);
    assert_ok(dao_allocator_free(a, q)); /* stream-ordered free on A */
    for (k = 0; k < 8; ++k) {
      others[k] = alloc_ok(a, n, sb);
      assert_false((uintptr_t)others[k] + n > (uintptr_t)q &&
                   (uintptr_t)others[k] < (uintptr_t)q + n);
      dao_test_fill(others[k], n, (unsigned)k); /* would clobber A's write */
    }
    /* On A itself, reuse is fine: later work on A runs after the writer. */
    r = alloc_ok(a, n, sa);
    assert_ptr_equal(r, q);
    gate_open(&fill->g);
    assert_ok(dao_stream_synchronize(sa));
    assert_true(dao_test_check(r, n, 77));
    for (k = 0; k < 8; ++k) {
      assert_true(dao_test_check(others[k], n, (unsigned)k));
      assert_ok(dao_allocator_free(a, others[k]));
    }
    assert_ok(dao_allocator_free(a, r));
    gate_destroy(&fill->g);

    drop_stream(sa);
    drop_stream(sb);
    destroy(a);
  }
}

/* A host function on the other stream: waits at a gate, then checks that
   the block still holds what was written before record_stream. */
typedef struct gated_check {
  gate g;
  const void *p;
  size_t n;
  unsigned seed;
  int intact;
} gated_check;

static gated_check the_check;

static void gated_check_fn(void *user_data) {
  gated_check *c = (gated_check *)user_data;
  gate_pass(&c->g);
  c->intact = dao_test_check(c->p, c->n, c->seed);
}

static void record_stream_defers_reuse(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  const size_t n = 256 * KIB;
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    dao_stream sa = NULL, sb = NULL;
    void *p, *q[8], *half, *quarter, *again;
    gated_check *check = &the_check;
    snap s;
    const dao_block_info *b;
    int k;
    sa = make_stream(big_place());
    sb = make_stream(big_place());

    p = alloc_ok(a, n, sa);
    dao_test_fill(p, n, 1234);
    gate_init(&check->g);
    check->p = p;
    check->n = n;
    check->seed = 1234;
    check->intact = -1;
    assert_ok(dao_launch_host_func(sb, gated_check_fn, check));
    gate_wait_entered(&check->g);
    /* recording its own stream or NULL does nothing; B twice is one use */
    assert_ok(dao_allocator_record_stream(a, p, sa));
    assert_ok(dao_allocator_record_stream(a, p, NULL));
    assert_ok(dao_allocator_record_stream(a, p, sb));
    assert_ok(dao_allocator_record_stream(a, p, sb));
    assert_ok(dao_allocator_free(a, p));

    /* B's work is pending: nothing handed out on A may be p, or overlap it. */
    for (k = 0; k < 8; ++k) {
      q[k] = alloc_ok(a, n, sa);
      assert_false((uintptr_t)q[k] + n > (uintptr_t)p && (uintptr_t)q[k] < (uintptr_t)p + n);
      dao_test_fill(q[k], n, 100u + (unsigned)k);
    }
    /* freeing p's neighbour does not merge it into the pending block */
    assert_ok(dao_allocator_free(a, q[0]));
    s = take_snap(a);
    b = find_block(&s, p, NULL);
    assert_non_null(b);
    assert_int_equal(b->state, DAO_BLOCK_PENDING_FREE);
    assert_int_equal(b->size, n);
    check_tiling(&s);
    free_snap(&s);
    q[0] = alloc_ok(a, n, sa);
    assert_false((uintptr_t)q[0] + n > (uintptr_t)p && (uintptr_t)q[0] < (uintptr_t)p + n);
    dao_test_fill(q[0], n, 100u);
    half = alloc_ok(a, n / 2, sa);
    quarter = alloc_ok(a, n / 4, sa);
    assert_false((uintptr_t)half + n / 2 > (uintptr_t)p && (uintptr_t)half < (uintptr_t)p + n);
    assert_false((uintptr_t)quarter + n / 4 > (uintptr_t)p &&
                 (uintptr_t)quarter < (uintptr_t)p + n);
    s = take_snap(a);
    b = find_block(&s, p, NULL);
    assert_non_null(b);
    assert_int_equal(b->state, DAO_BLOCK_PENDING_FREE);
    assert_int_equal(b->size, n);
    assert_int_equal(b->requested_size, 0);
    assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 1);
    check_tiling(&s);
    free_snap(&s);
    json_matches_snapshot(a); /* "pending_free" in the JSON too */
    /* pending: no longer allocated, still active */
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current,
                     8 * n + n / 2 + n / 4);
    assert_int_equal(get_stat(a, DAO_STAT_ACTIVE_BYTES, DAO_STAT_POOL_ALL).current,
                     9 * n + n / 2 + n / 4);
    assert_int_equal(get_stat(a, DAO_STAT_ACTIVE_BLOCKS, DAO_STAT_POOL_SMALL).current, 11);
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_POOL_SMALL).current, 10);
    assert_int_equal(dao_test_stats(a).live_blocks, 10);
    /* and not live: freeing or recording it again is a bad pointer */
    assert_status(dao_allocator_free(a, p), DAO_ERR_INVALID_POINTER);
    assert_status(dao_allocator_record_stream(a, p, sb), DAO_ERR_INVALID_POINTER);
    {
      size_t size = 0;
      assert_status(dao_allocator_usable_size(a, p, &size), DAO_ERR_INVALID_POINTER);
    }

    /* B's work runs and sees p intact. */
    gate_open(&check->g);
    assert_ok(dao_stream_synchronize(sb));
    assert_int_equal(check->intact, 1);
    gate_destroy(&check->g);

    /* The next allocation polls the event: p is free again and, being the
       only free block of exactly this size, is handed out. */
    again = alloc_ok(a, n, sa);
    assert_ptr_equal(again, p);
    s = take_snap(a);
    assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 0);
    b = find_block(&s, p, NULL);
    assert_non_null(b);
    assert_int_equal(b->state, DAO_BLOCK_ALLOCATED);
    assert_int_equal(b->requested_size, n);
    check_tiling(&s);
    free_snap(&s);
    assert_int_equal(get_stat(a, DAO_STAT_ACTIVE_BYTES, DAO_STAT_POOL_ALL).current,
                     get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current);
    for (k = 0; k < 8; ++k) {
      assert_true(dao_test_check(q[k], n, 100u + (unsigned)k));
      assert_ok(dao_allocator_free(a, q[k]));
    }
    assert_ok(dao_allocator_free(a, half));
    assert_ok(dao_allocator_free(a, quarter));

    /* A pending block whose stream's work is done: trim waits for the
       events, frees it and gives everything back. */
    assert_ok(dao_allocator_record_stream(a, again, sb));
    assert_ok(dao_allocator_free(a, again));
    s = take_snap(a);
    assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 1);
    check_tiling(&s);
    free_snap(&s);
    assert_ok(dao_allocator_trim(a, NULL));
    assert_int_equal(reserved_now(a), 0);
    assert_int_equal(get_stat(a, DAO_STAT_ACTIVE_BYTES, DAO_STAT_POOL_ALL).current, 0);
    s = take_snap(a);
    assert_int_equal(s.count, 0);
    free_snap(&s);

    /* Free without record_stream: reusable at once (no pending state). */
    p = alloc_ok(a, n, sa);
    assert_ok(dao_allocator_record_stream(a, p, sa));
    assert_ok(dao_allocator_free(a, p));
    s = take_snap(a);
    assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 0);
    free_snap(&s);

    drop_stream(sa);
    drop_stream(sb);
    destroy(a);
  }
}

/* A block recorded on two other streams is reused only when both are
   done: C finishing first is not enough. */
static void record_stream_waits_for_every_stream(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_stream sa, sb, sc;
  gated_check *check = &the_check;
  static int c_ran; /* static: written by C's worker */
  void *p, *q;
  snap s;
  const dao_block_info *b;
  const size_t n = 8 * KIB;
  (void)state;
  sa = make_stream(big_place());
  sb = make_stream(big_place());
  sc = make_stream(big_place());
  c_ran = 0;
  p = alloc_ok(a, n, sa);
  dao_test_fill(p, n, 42);
  gate_init(&check->g);
  check->p = p;
  check->n = n;
  check->seed = 42;
  check->intact = -1;
  assert_ok(dao_launch_host_func(sb, gated_check_fn, check));
  assert_ok(dao_launch_host_func(sc, count_fn, &c_ran));
  assert_ok(dao_allocator_record_stream(a, p, sb));
  assert_ok(dao_allocator_record_stream(a, p, sc));
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_stream_synchronize(sc)); /* C is done, B is not */
  assert_int_equal(c_ran, 1);
  q = alloc_ok(a, n, sa); /* polls the events */
  assert_ptr_not_equal(q, p);
  dao_test_fill(q, n, 7);
  s = take_snap(a);
  b = find_block(&s, p, NULL);
  assert_non_null(b);
  assert_int_equal(b->state, DAO_BLOCK_PENDING_FREE);
  free_snap(&s);
  gate_open(&check->g);
  assert_ok(dao_stream_synchronize(sb));
  assert_int_equal(check->intact, 1);
  gate_destroy(&check->g);
  assert_ok(dao_allocator_free(a, q));
  q = alloc_ok(a, n, sa);
  assert_ptr_equal(q, p);
  s = take_snap(a);
  assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 0);
  check_tiling(&s);
  free_snap(&s);
  assert_ok(dao_allocator_free(a, q));
  drop_stream(sa);
  drop_stream(sb);
  drop_stream(sc);
  destroy(a);
}

/* Several threads, each on a stream of its own, allocating and freeing at
   once: every block keeps its data, and the snapshot adds up afterwards. */
typedef struct worker_args {
  dao_allocator *a;
  dao_stream stream;
  uint64_t seed;
  int failures;
} worker_args;

static void *worker(void *user_data) {
  worker_args *w = (worker_args *)user_data;
  void *ptrs[16] = {NULL};
  size_t sizes[16] = {0};
  uint64_t rng = w->seed;
  int step, i;
  for (step = 0; step < 1500; ++step) {
    const size_t slot = (size_t)(dao_test_rand(&rng) % 16);
    if (ptrs[slot] != NULL) {
      if (!pattern_check(ptrs[slot], sizes[slot], (unsigned)slot + (unsigned)w->seed))
        ++w->failures;
      if (dao_allocator_free(w->a, ptrs[slot]) != DAO_OK) ++w->failures;
      ptrs[slot] = NULL;
    } else {
      sizes[slot] = 1 + (size_t)(dao_test_rand(&rng) % (2 * MIB));
      if (dao_allocator_alloc(w->a, sizes[slot], w->stream, &ptrs[slot]) != DAO_OK) {
        ++w->failures;
        ptrs[slot] = NULL;
        continue;
      }
      pattern_fill(ptrs[slot], sizes[slot], (unsigned)slot + (unsigned)w->seed);
    }
  }
  for (i = 0; i < 16; ++i)
    if (ptrs[i] != NULL) {
      if (!pattern_check(ptrs[i], sizes[i], (unsigned)i + (unsigned)w->seed)) ++w->failures;
      if (dao_allocator_free(w->a, ptrs[i]) != DAO_OK) ++w->failures;
    }
  return NULL;
}

static void concurrent_streams(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    pthread_t threads[4];
    worker_args args[4];
    size_t released = 0;
    int i;
    snap s;
    for (i = 0; i < 4; ++i) {
      args[i].a = a;
      args[i].stream = i == 0 ? NULL : make_stream(big_place());
      args[i].seed = 1000u + (uint64_t)i;
      args[i].failures = 0;
    }
    for (i = 0; i < 4; ++i)
      assert_int_equal(pthread_create(&threads[i], NULL, worker, &args[i]), 0);
    for (i = 0; i < 4; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (i = 0; i < 4; ++i) assert_int_equal(args[i].failures, 0);
    assert_int_equal(dao_test_stats(a).live_blocks, 0);
    assert_int_equal(get_stat(a, DAO_STAT_ACTIVE_BYTES, DAO_STAT_POOL_ALL).current, 0);
    s = take_snap(a);
    check_tiling(&s);
    for (i = 0; i < (int)s.count; ++i) assert_int_equal(s.segments[i].info.block_count, 1);
    free_snap(&s);
    assert_ok(dao_allocator_trim(a, &released));
    assert_int_equal(reserved_now(a), 0);
    for (i = 1; i < 4; ++i) drop_stream(args[i].stream);
    destroy(a);
  }
}

/* Destroying an allocator with a pending free waits for it. */
static void destroy_with_pending_free(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_stream sa = NULL, sb = NULL;
  void *p;
  gated_check *check = &the_check;
  (void)state;
  sa = make_stream(big_place());
  sb = make_stream(big_place());
  p = alloc_ok(a, 4096, sa);
  dao_test_fill(p, 4096, 9);
  gate_init(&check->g);
  check->p = p;
  check->n = 4096;
  check->seed = 9;
  check->intact = -1;
  assert_ok(dao_launch_host_func(sb, gated_check_fn, check));
  assert_ok(dao_allocator_record_stream(a, p, sb));
  assert_ok(dao_allocator_free(a, p));
  gate_open(&check->g);
  destroy(a);
  assert_ok(dao_stream_synchronize(sb));
  assert_int_equal(check->intact, 1);
  gate_destroy(&check->g);
  assert_int_equal(place_free(big_place()), big_baseline);
  drop_stream(sa);
  drop_stream(sb);
}

/* Memory freed on a stream while work queued there before the free still
   uses it (a stream-ordered free) goes back to the device only after that
   work has run: trim and destroy wait for the stream, as PyTorch's
   empty_cache synchronizes. The writer waits at a gate that this thread
   opens while another thread is (most likely) inside trim or destroy; the
   check does not depend on when: whenever the call returns, the writer must
   have finished. Without the wait the writer would fill unmapped memory. */
typedef struct release_call {
  dao_allocator *a;
  int destroy;
  const int *writer_done;
  dao_status status;
  int done_at_return;
} release_call;

static int the_writer_done;

static void gated_fill_then_done_fn(void *user_data) {
  gated_fill_fn(user_data);
  __atomic_store_n(&the_writer_done, 1, __ATOMIC_RELEASE);
}

static void *release_thread(void *arg) {
  release_call *c = (release_call *)arg;
  c->status = c->destroy ? dao_allocator_destroy(c->a) : dao_allocator_trim(c->a, NULL);
  c->done_at_return = __atomic_load_n(c->writer_done, __ATOMIC_ACQUIRE);
  return NULL;
}

static void release_waits_for_queued_work(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  const size_t n = 3 * MIB;
  size_t c;
  int destroying;
  (void)state;
  for (c = 0; c < 4; ++c) {
    for (destroying = 0; destroying < 2; ++destroying) {
      dao_allocator *a = make(big_place(), configs[c]);
      dao_stream sa = make_stream(big_place());
      gated_fill *fill = &the_fill;
      release_call call;
      pthread_t thread;
      size_t i;
      void *p = alloc_ok(a, n, sa);
      gate_init(&fill->g);
      fill->p = p;
      fill->n = n;
      fill->seed = 31;
      __atomic_store_n(&the_writer_done, 0, __ATOMIC_RELEASE);
      assert_ok(dao_launch_host_func(sa, gated_fill_then_done_fn, fill));
      gate_wait_entered(&fill->g);
      assert_ok(dao_allocator_free(a, p)); /* stream-ordered: the writer still runs */
      call.a = a;
      call.destroy = destroying;
      call.writer_done = &the_writer_done;
      call.status = DAO_ERR_INTERNAL;
      call.done_at_return = -1;
      assert_int_equal(pthread_create(&thread, NULL, release_thread, &call), 0);
      {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL); /* lets the call start waiting; not needed to pass */
      }
      gate_open(&fill->g);
      assert_int_equal(pthread_join(thread, NULL), 0);
      assert_int_equal(call.status, DAO_OK);
      assert_int_equal(call.done_at_return, 1);
      assert_ok(dao_stream_synchronize(sa));
      gate_destroy(&fill->g);
      if (destroying) {
        for (i = 0; i < sizeof tracked / sizeof tracked[0]; ++i)
          if (tracked[i] == a) tracked[i] = NULL;
      } else {
        destroy(a);
      }
      drop_stream(sa);
      assert_int_equal(place_free(big_place()), big_baseline);
    }
  }
}

/* The cache of a destroyed stream's pool can serve no one: it goes back to
   the place at the next allocation on another stream, not only at trim. */
static void destroyed_streams_give_their_cache_back(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  const size_t n = 12 * MIB; /* over 10 MiB: a carved segment of its own size */
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    dao_stream s1 = make_stream(big_place());
    dao_stream s2 = make_stream(big_place()); /* made while s1 lives: another address */
    dao_allocator_stats st;
    void *p = alloc_ok(a, n, s1), *q;
    dao_test_fill(p, n, 5);
    assert_ok(dao_allocator_free(a, p));
    st = dao_test_stats(a);
    assert_true(st.reserved_bytes >= n); /* cached for s1 */
    drop_stream(s1);
    q = alloc_ok(a, n, s2);
    st = dao_test_stats(a);
    /* s2's block only (segments round it up a little), not s1's cache too */
    assert_true(st.reserved_bytes >= n);
    assert_true(st.reserved_bytes < 2 * n);
    assert_ok(dao_allocator_free(a, q));
    drop_stream(s2);
    destroy(a);
    assert_int_equal(place_free(big_place()), big_baseline);
  }
}

static void record_stream_bad_input(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_allocator *buddy = NULL;
  dao_stream sb = NULL;
  uint64_t zeros[64];
  dao_stream garbage = (dao_stream)(void *)zeros;
  int local = 0;
  void *p, *bp;
  (void)state;
  memset(zeros, 0, sizeof zeros);
  sb = make_stream(big_place());
  p = alloc_ok(a, 1000, NULL);
  assert_failure_mentions(dao_allocator_record_stream(NULL, p, sb), DAO_ERR_INVALID_ARGUMENT,
                          "dao_allocator_record_stream");
  assert_status(dao_allocator_record_stream(a, &local, sb), DAO_ERR_INVALID_POINTER);
  assert_status(dao_allocator_record_stream(a, (char *)p + 512, sb), DAO_ERR_INVALID_POINTER);
  assert_status(dao_allocator_record_stream(a, NULL, sb), DAO_ERR_INVALID_POINTER);
  assert_failure_mentions(dao_allocator_record_stream(a, p, garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_stream");
  assert_ok(dao_allocator_record_stream(a, p, NULL));
  /* nothing was recorded by the failures: the free is not deferred */
  assert_ok(dao_allocator_free(a, p));
  {
    snap s = take_snap(a);
    assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 0);
    free_snap(&s);
  }
  assert_status(dao_allocator_record_stream(a, p, sb), DAO_ERR_INVALID_POINTER); /* freed */

  /* buddy is not stream-ordered: a good pointer is unsupported, a bad one
     is reported as such first */
  assert_ok(dao_allocator_create(big_place(), "buddy", NULL, &buddy));
  bp = alloc_ok(buddy, 1000, NULL);
  assert_failure_mentions(dao_allocator_record_stream(buddy, bp, sb), DAO_ERR_UNSUPPORTED,
                          "not stream-ordered");
  assert_status(dao_allocator_record_stream(buddy, &local, sb), DAO_ERR_INVALID_POINTER);
  assert_ok(dao_allocator_free(buddy, bp));
  assert_ok(dao_allocator_destroy(buddy));

  drop_stream(sb);
  destroy(a);
}

/* record_stream with a stream of another place (the CPU place's
   synchronous stream, or a stream of the other SIM device) is refused at
   once, changing nothing: the pointer stays live and frees normally (it
   used to be accepted, and the later free then failed forever). */
static void record_stream_foreign_place_stream(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_stream cpu = NULL, other_sim = NULL;
  void *p;
  snap s;
  (void)state;
  cpu = make_stream(dao_place_cpu());
  other_sim = make_stream(small_place());
  p = alloc_ok(a, 4096, NULL);
  assert_failure_mentions(dao_allocator_record_stream(a, p, cpu), DAO_ERR_INVALID_ARGUMENT,
                          "the stream is on cpu");
  assert_failure_mentions(dao_allocator_record_stream(a, p, other_sim), DAO_ERR_INVALID_ARGUMENT,
                          "sim:1");
  assert_int_equal(usable(a, p), 4096);
  assert_ok(dao_allocator_free(a, p));
  s = take_snap(a);
  assert_int_equal(count_state(&s, DAO_BLOCK_PENDING_FREE), 0);
  assert_int_equal(count_state(&s, DAO_BLOCK_ALLOCATED), 0);
  free_snap(&s);
  assert_int_equal(dao_test_stats(a).live_blocks, 0);
  destroy(a);
  drop_stream(cpu);
  drop_stream(other_sim);
}

/* ------------------------------------------------------------------------
 * 4. The out-of-memory ladder on the 8 MiB device, and limits
 * ---------------------------------------------------------------------- */

static void assert_mentions_all(const char *msg, const char *const *needles, size_t n) {
  size_t k;
  for (k = 0; k < n; ++k) {
    if (strstr(msg, needles[k]) == NULL) {
      print_error("message '%s' does not mention '%s'\n", msg, needles[k]);
      fail();
    }
  }
}

/* Cached memory that the request cannot use (another stream's blocks, or
   the small pool's segments) is given back and the request retried. */
static void ladder_releases_cache(void **state) {
  /* reserve_headroom=none: with it the cache would go before the device is
     full (reserve_headroom below), and the ladder would not be needed */
  static const char *const configs[] = {"reserve_headroom=none", "expandable_segments=false",
                                        "reserve_headroom=none,fast_reuse=true",
                                        "expandable_segments=false,fast_reuse=true"};
  size_t c;
  int other_stream;
  (void)state;
  for (c = 0; c < 4; ++c) {
    for (other_stream = 1; other_stream >= (c % 2 == 1 ? 0 : 1); --other_stream) {
      dao_allocator *a = make(small_place(), configs[c]);
      dao_stream sa = NULL;
      void *blocks[12], *large;
      dao_allocator_stats before, after;
      int i;
      snap s;
      /* 6 MiB of 512 KiB blocks (on stream A, or in the small pool of the
         NULL stream in classic mode), then all freed: cached */
      if (other_stream) sa = make_stream(small_place());
      for (i = 0; i < 12; ++i) {
        blocks[i] = alloc_ok(a, 512 * KIB, sa);
        dao_test_fill(blocks[i], 512 * KIB, (unsigned)i);
      }
      for (i = 0; i < 12; ++i) {
        assert_true(dao_test_check(blocks[i], 512 * KIB, (unsigned)i));
        assert_ok(dao_allocator_free(a, blocks[i]));
      }
      before = dao_test_stats(a);
      assert_true(before.reserved_bytes >= 6 * MIB); /* cached */
      assert_int_equal(before.allocated_bytes, 0);
      assert_int_equal(before.alloc_retry_count, 0);
      assert_true(place_free(small_place()) < 6 * MIB);

      /* 6 MiB on the NULL stream fits only once the cache is given back */
      large = alloc_ok(a, 6 * MIB, NULL);
      pattern_fill(large, 6 * MIB, 5);
      after = dao_test_stats(a);
      assert_int_equal(after.alloc_retry_count, 1);
      assert_int_equal(after.failed_alloc_count, 0);
      assert_int_equal(after.allocated_bytes, 6 * MIB);
      /* the cache is gone; under pressure nothing is mapped ahead */
      assert_int_equal(after.reserved_bytes, 6 * MIB);
      s = take_snap(a);
      assert_int_equal(s.count, 1);
      assert_ptr_equal(s.segments[0].info.stream, NULL);
      assert_int_equal(s.segments[0].info.pool, DAO_STAT_POOL_LARGE);
      free_snap(&s);
      assert_true(pattern_check(large, 6 * MIB, 5));
      assert_ok(dao_allocator_free(a, large));
      assert_ok(dao_allocator_trim(a, NULL));
      assert_int_equal(place_free(small_place()), small_baseline);
      if (sa != NULL) drop_stream(sa);
      destroy(a);
    }
  }
}

/* Holes between live blocks: an expandable segment gives their pages back
   and maps the request at its end; classic segments cannot, and report the
   largest free block. */
static void ladder_reuses_holes(void **state) {
  static const char *const configs[] = {"reserve_headroom=none", "expandable_segments=false",
                                        "reserve_headroom=none,fast_reuse=true",
                                        "expandable_segments=false,fast_reuse=true"};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(small_place(), configs[c]);
    void *blocks[12], *p = NULL;
    int i;
    for (i = 0; i < 12; ++i) blocks[i] = alloc_ok(a, 512 * KIB, NULL);
    for (i = 1; i < 12; i += 2) assert_ok(dao_allocator_free(a, blocks[i]));
    for (i = 0; i < 12; i += 2) dao_test_fill(blocks[i], 512 * KIB, (unsigned)i);
    assert_true(place_free(small_place()) < 4 * MIB);
    if (c % 2 == 0) {
      p = alloc_ok(a, 4 * MIB, NULL);
      assert_int_equal(dao_test_stats(a).alloc_retry_count, 1);
      pattern_fill(p, 4 * MIB, 1);
      assert_true(pattern_check(p, 4 * MIB, 1));
      /* live 3 MiB + 4 MiB, nothing else mapped */
      assert_int_equal(reserved_now(a), 7 * MIB);
      assert_ok(dao_allocator_free(a, p));
    } else {
      static const char *const needles[] = {"tried to allocate 4.0 MiB", "3.0 MiB is allocated",
                                            "3.0 MiB is reserved but unallocated",
                                            "largest free block is 512.0 KiB"};
      assert_status(dao_allocator_alloc(a, 4 * MIB, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
      assert_mentions_all(dao_last_error(), needles, sizeof needles / sizeof needles[0]);
      assert_int_equal(dao_test_stats(a).failed_alloc_count, 1);
      assert_int_equal(dao_test_stats(a).largest_free_block, 512 * KIB);
    }
    for (i = 0; i < 12; i += 2) {
      assert_true(dao_test_check(blocks[i], 512 * KIB, (unsigned)i));
      assert_ok(dao_allocator_free(a, blocks[i]));
    }
    destroy(a);
  }
}

/* More than the device: out of memory, with PyTorch's explanation, counted,
   and the allocator keeps working. */
static void larger_than_the_device(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    static const char *const needles[] = {"out of memory",
                                          "tried to allocate 16.0 MiB",
                                          "capacity of 8.0 MiB",
                                          "2.0 MiB is allocated",
                                          "reserved",
                                          "largest free block"};
    dao_allocator *a = make(small_place(), configs[c]);
    void *keep = alloc_ok(a, 2 * MIB, NULL), *p = (void *)&keep;
    dao_allocator_stats st;
    dao_test_fill(keep, 2 * MIB, 4);
    assert_status(dao_allocator_alloc(a, 16 * MIB, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
    assert_null(p);
    assert_mentions_all(dao_last_error(), needles, sizeof needles / sizeof needles[0]);
    st = dao_test_stats(a);
    assert_int_equal(st.failed_alloc_count, 1);
    assert_int_equal(st.alloc_count, 1);
    assert_int_equal(st.allocated_bytes, 2 * MIB);
    assert_int_equal(st.live_blocks, 1);
    assert_true(dao_test_check(keep, 2 * MIB, 4));
    /* an impossible size too */
    assert_status(dao_allocator_alloc(a, SIZE_MAX, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
    assert_int_equal(dao_test_stats(a).failed_alloc_count, 2);
    /* still works, up to what the device holds */
    p = alloc_ok(a, 5 * MIB, NULL);
    pattern_fill(p, 5 * MIB, 3);
    assert_true(pattern_check(p, 5 * MIB, 3));
    assert_ok(dao_allocator_free(a, p));
    assert_ok(dao_allocator_free(a, keep));
    assert_ok(dao_allocator_trim(a, NULL));
    assert_int_equal(place_free(small_place()), small_baseline);
    destroy(a);
  }
}

/* The "largest free block" of the out-of-memory message is a block that
   exists: in classic segments, the largest free block in the snapshot (as
   dao_allocator_stats::largest_free_block says). */
static void oom_message_largest_free_block(void **state) {
  dao_allocator *a = make(small_place(), "expandable_segments=false");
  void *p, *keep, *hole;
  char text[64], needle[96];
  dao_allocator_stats st;
  (void)state;
  /* A 6 MiB segment (20 MiB does not fit: exactly the size), freed and
     given back: no free block is left. */
  p = alloc_ok(a, 6 * MIB, NULL);
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(reserved_now(a), 0);
  assert_status(dao_allocator_alloc(a, 16 * MIB, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
  st = dao_test_stats(a);
  assert_int_equal(st.largest_free_block, 0);
  format_bytes((size_t)st.largest_free_block, text, sizeof text);
  snprintf(needle, sizeof needle, "largest free block is %s ", text);
  if (strstr(dao_last_error(), needle) == NULL) {
    print_error("message '%s' does not mention '%s'\n", dao_last_error(), needle);
    fail();
  }

  /* A real free block in a split segment is reported. */
  keep = alloc_ok(a, 512 * KIB, NULL); /* 2 MiB small segment */
  hole = alloc_ok(a, 1024 * KIB, NULL);
  assert_ok(dao_allocator_free(a, hole));
  assert_status(dao_allocator_alloc(a, 16 * MIB, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
  st = dao_test_stats(a);
  assert_int_equal(st.largest_free_block, 2 * MIB - 512 * KIB);
  format_bytes((size_t)st.largest_free_block, text, sizeof text);
  snprintf(needle, sizeof needle, "largest free block is %s ", text);
  if (strstr(dao_last_error(), needle) == NULL) {
    print_error("message '%s' does not mention '%s'\n", dao_last_error(), needle);
    fail();
  }
  assert_ok(dao_allocator_free(a, keep));
  destroy(a);
}

static void limits(void **state) {
  static const char *const configs[] = {"max_pool=4MiB", "max_pool=4MiB,expandable_segments=false",
                                        "memory_fraction=0.5",
                                        "memory_fraction=0.5,expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < sizeof configs / sizeof configs[0]; ++c) {
    dao_allocator *a = make(small_place(), configs[c]);
    void *p3, *p2 = (void *)&p2, *p1, *s1;
    dao_allocator_stats st;
    p3 = alloc_ok(a, 3 * MIB, NULL);
    assert_status(dao_allocator_alloc(a, 2 * MIB, NULL, &p2), DAO_ERR_OUT_OF_MEMORY);
    assert_null(p2);
    assert_non_null(strstr(dao_last_error(), "limit: 4.0 MiB"));
    assert_true(place_free(small_place()) >= 4 * MIB); /* the device had room */
    st = dao_test_stats(a);
    assert_int_equal(st.failed_alloc_count, 1);
    assert_true(st.reserved_bytes <= 4 * MIB);
    /* within the limit still works */
    p1 = alloc_ok(a, MIB / 2, NULL);
    assert_true(dao_test_stats(a).reserved_bytes <= 4 * MIB);
    /* after freeing, the limit has room again (the ladder releases the cache) */
    assert_ok(dao_allocator_free(a, p3));
    p2 = alloc_ok(a, 2 * MIB, NULL);
    s1 = alloc_ok(a, 1000, NULL);
    assert_true(dao_test_stats(a).reserved_bytes <= 4 * MIB);
    assert_ok(dao_allocator_free(a, p1));
    assert_ok(dao_allocator_free(a, p2));
    assert_ok(dao_allocator_free(a, s1));
    /* a single request over the limit */
    assert_status(dao_allocator_alloc(a, 5 * MIB, NULL, &p2), DAO_ERR_OUT_OF_MEMORY);
    destroy(a);
  }
}

/* ------------------------------------------------------------------------
 * 5. Statistics equal to what the test counts
 * ---------------------------------------------------------------------- */

static void check_peaks_reset(dao_allocator *a) {
  int m, p;
  for (m = 0; m < DAO_STAT_METRIC_COUNT; ++m)
    for (p = 0; p < DAO_STAT_POOL_COUNT; ++p) {
      const dao_stat s = get_stat(a, (dao_stat_metric)m, (dao_stat_pool)p);
      assert_int_equal(s.peak, s.current);
    }
}

static void statistics_match_own_counts(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    dao_stream stream = NULL;
    model *m = (model *)malloc(sizeof *m);
    uint64_t rng = 99 + c;
    int metric, pool;
    dao_allocator_stats st;
    snap s;
    assert_non_null(m);
    model_init(m, 0);
    m->fast_reuse = c >= 2;
    stream = make_stream(big_place());
    /* fresh: all zero */
    for (metric = 0; metric < DAO_STAT_METRIC_COUNT; ++metric)
      for (pool = 0; pool < DAO_STAT_POOL_COUNT; ++pool) {
        const dao_stat z = get_stat(a, (dao_stat_metric)metric, (dao_stat_pool)pool);
        assert_int_equal(z.current, 0);
        assert_int_equal(z.peak, 0);
        assert_int_equal(z.allocated, 0);
        assert_int_equal(z.freed, 0);
      }
    run_random(a, m, stream, &rng, 800, 20, c % 2 == 0);

    /* reset peaks: every peak is its current value */
    assert_ok(dao_allocator_reset_peak_stats(a));
    check_peaks_reset(a);
    for (metric = 0; metric < DAO_STAT_METRIC_COUNT; ++metric)
      for (pool = 0; pool < DAO_STAT_POOL_COUNT; ++pool)
        m->st[metric][pool].peak = m->st[metric][pool].current;
    s = take_snap(a);
    check_statistics(a, m, &s);
    free_snap(&s);
    run_random(a, m, stream, &rng, 400, 20, c % 2 == 0);

    /* reset accumulated: allocated = freed = 0, counters 0, current and
       peak kept */
    assert_ok(dao_allocator_reset_accumulated_stats(a));
    for (metric = 0; metric < DAO_STAT_METRIC_COUNT; ++metric)
      for (pool = 0; pool < DAO_STAT_POOL_COUNT; ++pool) {
        const dao_stat z = get_stat(a, (dao_stat_metric)metric, (dao_stat_pool)pool);
        assert_int_equal(z.allocated, 0);
        assert_int_equal(z.freed, 0);
        m->st[metric][pool].allocated = m->st[metric][pool].freed = 0;
        m->base[metric][pool] = z.current;
        if (metric < (int)(sizeof counted_metrics / sizeof counted_metrics[0]))
          assert_int_equal(get_stat(a, counted_metrics[metric], (dao_stat_pool)pool).current,
                           m->st[counted_metrics[metric]][pool].current);
      }
    st = dao_test_stats(a);
    assert_int_equal(st.alloc_count, 0);
    assert_int_equal(st.free_count, 0);
    assert_int_equal(st.failed_alloc_count, 0);
    assert_int_equal(st.system_alloc_count, 0);
    assert_int_equal(st.system_free_count, 0);
    assert_int_equal(st.alloc_retry_count, 0);
    assert_int_equal(st.live_blocks, m->live);
    m->allocs = m->frees = 0;
    run_random(a, m, stream, &rng, 400, 20, c % 2 == 0);
    free_all(a, m);
    s = take_snap(a);
    check_statistics(a, m, &s);
    free_snap(&s);
    for (pool = 0; pool < DAO_STAT_POOL_COUNT; ++pool) {
      assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, (dao_stat_pool)pool).current, 0);
      assert_int_equal(get_stat(a, DAO_STAT_ACTIVE_BLOCKS, (dao_stat_pool)pool).current, 0);
      assert_int_equal(get_stat(a, DAO_STAT_REQUESTED_BYTES, (dao_stat_pool)pool).current, 0);
    }
    assert_ok(dao_allocator_trim(a, NULL));
    s = take_snap(a);
    check_statistics(a, m, &s);
    free_snap(&s);
    drop_stream(stream);
    destroy(a);
    free(m);
  }
}

static void statistics_bad_input(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_allocator *buddy = NULL;
  dao_stat s;
  int metric, pool;
  (void)state;
  memset(&s, 0, sizeof s);
  assert_status(dao_allocator_get_stat(NULL, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &s),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, NULL),
                DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_allocator_get_stat(a, (dao_stat_metric)99, DAO_STAT_POOL_ALL, &s),
                          DAO_ERR_INVALID_ARGUMENT, "metric");
  assert_status(dao_allocator_get_stat(a, (dao_stat_metric)-1, DAO_STAT_POOL_ALL, &s),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(
      dao_allocator_get_stat(a, (dao_stat_metric)DAO_STAT_METRIC_COUNT, DAO_STAT_POOL_ALL, &s),
      DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_allocator_get_stat(a, DAO_STAT_ALLOCATED_BYTES, (dao_stat_pool)7, &s),
                          DAO_ERR_INVALID_ARGUMENT, "pool");
  assert_status(dao_allocator_get_stat(a, DAO_STAT_ALLOCATED_BYTES, (dao_stat_pool)-1, &s),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_reset_peak_stats(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_reset_accumulated_stats(NULL), DAO_ERR_INVALID_ARGUMENT);
  /* caching keeps every metric of every pool */
  for (metric = 0; metric < DAO_STAT_METRIC_COUNT; ++metric)
    for (pool = 0; pool < DAO_STAT_POOL_COUNT; ++pool)
      assert_ok(dao_allocator_get_stat(a, (dao_stat_metric)metric, (dao_stat_pool)pool, &s));
  destroy(a);

  assert_ok(dao_allocator_create(big_place(), "buddy", NULL, &buddy));
  assert_status(dao_allocator_get_stat(buddy, DAO_STAT_INACTIVE_SPLIT_BYTES, DAO_STAT_POOL_ALL, &s),
                DAO_ERR_UNSUPPORTED);
  assert_status(dao_allocator_get_stat(buddy, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_SMALL, &s),
                DAO_ERR_UNSUPPORTED);
  assert_ok(dao_allocator_get_stat(buddy, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &s));
  assert_ok(dao_allocator_get_stat(buddy, DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL, &s));
  assert_ok(dao_allocator_get_stat(buddy, DAO_STAT_REQUESTED_BYTES, DAO_STAT_POOL_ALL, &s));
  assert_status(dao_allocator_get_stat(buddy, (dao_stat_metric)99, DAO_STAT_POOL_ALL, &s),
                DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_destroy(buddy));
}

/* ------------------------------------------------------------------------
 * 6. The JSON snapshot parses
 * ---------------------------------------------------------------------- */

/* A recursive-descent JSON validator (RFC 8259) that also gathers what the
   test compares with the C snapshot. */
enum json_context {
  JSON_ANY,
  JSON_ROOT,
  JSON_STATS,
  JSON_STAT,
  JSON_SEGMENTS,
  JSON_SEGMENT,
  JSON_BLOCKS,
  JSON_BLOCK
};

typedef struct json_doc {
  const char *s;
  size_t pos, len;
  int depth;
  /* gathered */
  char strategy[32];
  int has_stats, has_segments;
  size_t stats_members;
  size_t segments;
  uint64_t segment_address[64];
  size_t segment_blocks[64];
  size_t blocks, allocated_blocks, pending_blocks;
  int64_t allocated_bytes_all_current;
  int saw_allocated_bytes_all;
  int in_allocated_all;
} json_doc;

static int json_value(json_doc *d, enum json_context ctx, const char *key, char *str_out,
                      size_t str_cap, uint64_t *num_out);

static void json_ws(json_doc *d) {
  while (d->pos < d->len && (d->s[d->pos] == ' ' || d->s[d->pos] == '\t' || d->s[d->pos] == '\n' ||
                             d->s[d->pos] == '\r'))
    ++d->pos;
}

static int json_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string; its decoded ASCII text (escapes other than \uXXXX kept as the
   character) into `out` when given. */
static int json_string(json_doc *d, char *out, size_t cap) {
  size_t n = 0;
  if (d->pos >= d->len || d->s[d->pos] != '"') return 0;
  ++d->pos;
  while (d->pos < d->len) {
    unsigned char c = (unsigned char)d->s[d->pos++];
    char decoded;
    if (c == '"') {
      if (out && cap) out[n < cap ? n : cap - 1] = '\0';
      return 1;
    }
    if (c < 0x20) return 0;
    if (c == '\\') {
      if (d->pos >= d->len) return 0;
      c = (unsigned char)d->s[d->pos++];
      switch (c) {
        case '"':
          decoded = '"';
          break;
        case '\\':
          decoded = '\\';
          break;
        case '/':
          decoded = '/';
          break;
        case 'b':
          decoded = '\b';
          break;
        case 'f':
          decoded = '\f';
          break;
        case 'n':
          decoded = '\n';
          break;
        case 'r':
          decoded = '\r';
          break;
        case 't':
          decoded = '\t';
          break;
        case 'u': {
          int k;
          for (k = 0; k < 4; ++k)
            if (d->pos >= d->len || !json_hex(d->s[d->pos++])) return 0;
          decoded = '?';
          break;
        }
        default:
          return 0;
      }
    } else {
      decoded = (char)c;
    }
    if (out && n + 1 < cap) out[n++] = decoded;
  }
  return 0;
}

/* A number; a plain non-negative integer also into `out`. */
static int json_number(json_doc *d, uint64_t *out) {
  const size_t start = d->pos;
  int integer = 1;
  if (d->pos < d->len && d->s[d->pos] == '-') {
    ++d->pos;
    integer = 0;
  }
  if (d->pos >= d->len) return 0;
  if (d->s[d->pos] == '0') {
    ++d->pos;
  } else if (d->s[d->pos] >= '1' && d->s[d->pos] <= '9') {
    while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9') ++d->pos;
  } else {
    return 0;
  }
  if (d->pos < d->len && d->s[d->pos] == '.') {
    integer = 0;
    ++d->pos;
    if (d->pos >= d->len || d->s[d->pos] < '0' || d->s[d->pos] > '9') return 0;
    while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9') ++d->pos;
  }
  if (d->pos < d->len && (d->s[d->pos] == 'e' || d->s[d->pos] == 'E')) {
    integer = 0;
    ++d->pos;
    if (d->pos < d->len && (d->s[d->pos] == '+' || d->s[d->pos] == '-')) ++d->pos;
    if (d->pos >= d->len || d->s[d->pos] < '0' || d->s[d->pos] > '9') return 0;
    while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9') ++d->pos;
  }
  if (out) {
    *out = 0;
    if (integer) {
      size_t i;
      for (i = start; i < d->pos; ++i) *out = *out * 10 + (uint64_t)(d->s[i] - '0');
    }
  }
  return 1;
}

static int json_literal(json_doc *d, const char *word) {
  size_t n = strlen(word);
  if (d->len - d->pos < n || memcmp(d->s + d->pos, word, n) != 0) return 0;
  d->pos += n;
  return 1;
}

static int json_object(json_doc *d, enum json_context ctx) {
  ++d->pos; /* '{' */
  json_ws(d);
  if (d->pos < d->len && d->s[d->pos] == '}') {
    ++d->pos;
    return 1;
  }
  for (;;) {
    char key[64];
    char text[64];
    uint64_t number = 0;
    enum json_context inner = JSON_ANY;
    json_ws(d);
    if (!json_string(d, key, sizeof key)) return 0;
    json_ws(d);
    if (d->pos >= d->len || d->s[d->pos] != ':') return 0;
    ++d->pos;
    if (ctx == JSON_ROOT && strcmp(key, "stats") == 0) inner = JSON_STATS;
    if (ctx == JSON_ROOT && strcmp(key, "segments") == 0) inner = JSON_SEGMENTS;
    if (ctx == JSON_SEGMENT && strcmp(key, "blocks") == 0) inner = JSON_BLOCKS;
    if (ctx == JSON_STATS) {
      ++d->stats_members;
      inner = JSON_STAT;
      d->in_allocated_all = strcmp(key, "allocated_bytes.all") == 0;
    }
    text[0] = '\0';
    if (!json_value(d, inner, key, text, sizeof text, &number)) return 0;
    if (ctx == JSON_ROOT && strcmp(key, "strategy") == 0)
      snprintf(d->strategy, sizeof d->strategy, "%.31s", text);
    if (ctx == JSON_ROOT && strcmp(key, "stats") == 0) d->has_stats = 1;
    if (ctx == JSON_ROOT && strcmp(key, "segments") == 0) d->has_segments = 1;
    if (ctx == JSON_SEGMENT && strcmp(key, "address") == 0 && d->segments > 0 && d->segments <= 64)
      d->segment_address[d->segments - 1] = number;
    if (ctx == JSON_STAT && d->in_allocated_all && strcmp(key, "current") == 0) {
      d->allocated_bytes_all_current = (int64_t)number;
      d->saw_allocated_bytes_all = 1;
    }
    if (ctx == JSON_BLOCK && strcmp(key, "state") == 0 && strcmp(text, "allocated") == 0)
      ++d->allocated_blocks;
    if (ctx == JSON_BLOCK && strcmp(key, "state") == 0 && strcmp(text, "pending_free") == 0)
      ++d->pending_blocks;
    json_ws(d);
    if (d->pos >= d->len) return 0;
    if (d->s[d->pos] == ',') {
      ++d->pos;
      continue;
    }
    if (d->s[d->pos] == '}') {
      ++d->pos;
      return 1;
    }
    return 0;
  }
}

static int json_array(json_doc *d, enum json_context ctx) {
  enum json_context inner = ctx == JSON_SEGMENTS ? JSON_SEGMENT
                            : ctx == JSON_BLOCKS ? JSON_BLOCK
                                                 : JSON_ANY;
  ++d->pos; /* '[' */
  json_ws(d);
  if (d->pos < d->len && d->s[d->pos] == ']') {
    ++d->pos;
    return 1;
  }
  for (;;) {
    if (inner == JSON_SEGMENT) ++d->segments;
    if (inner == JSON_BLOCK) {
      ++d->blocks;
      if (d->segments > 0 && d->segments <= 64) ++d->segment_blocks[d->segments - 1];
    }
    if (!json_value(d, inner, NULL, NULL, 0, NULL)) return 0;
    json_ws(d);
    if (d->pos >= d->len) return 0;
    if (d->s[d->pos] == ',') {
      ++d->pos;
      continue;
    }
    if (d->s[d->pos] == ']') {
      ++d->pos;
      return 1;
    }
    return 0;
  }
}

static int json_value(json_doc *d, enum json_context ctx, const char *key, char *str_out,
                      size_t str_cap, uint64_t *num_out) {
  int ok;
  (void)key;
  json_ws(d);
  if (d->pos >= d->len) return 0;
  if (++d->depth > 64) return 0;
  switch (d->s[d->pos]) {
    case '{':
      ok = json_object(d, ctx == JSON_SEGMENTS || ctx == JSON_BLOCKS ? JSON_ANY : ctx);
      break;
    case '[':
      ok = json_array(d, ctx);
      break;
    case '"':
      ok = json_string(d, str_out, str_cap);
      break;
    case 't':
      ok = json_literal(d, "true");
      break;
    case 'f':
      ok = json_literal(d, "false");
      break;
    case 'n':
      ok = json_literal(d, "null");
      break;
    default:
      ok = json_number(d, num_out);
      break;
  }
  --d->depth;
  return ok;
}

/* Parses a whole document: one value and nothing but white space after. */
static int json_parse(json_doc *d, const char *text, size_t len) {
  memset(d, 0, sizeof *d);
  d->s = text;
  d->len = len;
  json_ws(d);
  if (d->pos >= d->len || d->s[d->pos] != '{') {
    return json_value(d, JSON_ANY, NULL, NULL, 0, NULL) && (json_ws(d), d->pos == d->len);
  }
  if (!json_object(d, JSON_ROOT)) return 0;
  json_ws(d);
  return d->pos == d->len;
}

static int json_ok(const char *text) {
  json_doc d;
  return json_parse(&d, text, strlen(text));
}

static void json_validator_itself(void **state) {
  (void)state;
  assert_true(json_ok("{}"));
  assert_true(json_ok("[]"));
  assert_true(json_ok(
      " {\"a\" : [1, -2.5e+3, 0, true, false, null, \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"]} "));
  assert_true(json_ok("{\"a\":{\"b\":{}}}"));
  assert_true(json_ok("0"));
  assert_false(json_ok(""));
  assert_false(json_ok("{"));
  assert_false(json_ok("{\"a\":}"));
  assert_false(json_ok("{\"a\" 1}"));
  assert_false(json_ok("{a:1}"));
  assert_false(json_ok("[1,]"));
  assert_false(json_ok("[1 2]"));
  assert_false(json_ok("{\"a\":1,}"));
  assert_false(json_ok("01"));
  assert_false(json_ok("1."));
  assert_false(json_ok("-"));
  assert_false(json_ok("1e"));
  assert_false(json_ok("\"\\x\""));
  assert_false(json_ok("\"\\u12g4\""));
  assert_false(json_ok("\"a\nb\""));
  assert_false(json_ok("\"open"));
  assert_false(json_ok("tru"));
  assert_false(json_ok("{} x"));
  assert_false(json_ok("{}{}"));
}

/* The document of `a`, in a buffer of the exact size. */
static char *snapshot_json(dao_allocator *a, size_t *length) {
  char *buf;
  size_t len = 0, len2 = 0;
  assert_ok(dao_allocator_snapshot_json(a, NULL, 0, &len));
  assert_true(len > 0);
  buf = (char *)malloc(len + 1);
  assert_non_null(buf);
  assert_ok(dao_allocator_snapshot_json(a, buf, len + 1, &len2));
  assert_int_equal(len2, len);
  assert_int_equal(strlen(buf), len);
  *length = len;
  return buf;
}

static void json_matches_snapshot(dao_allocator *a) {
  size_t len = 0, i, blocks = 0, allocated = 0;
  char *text = snapshot_json(a, &len);
  json_doc d;
  snap s = take_snap(a);
  if (!json_parse(&d, text, len)) {
    print_error("the JSON does not parse at byte %zu: %.*s\n", d.pos,
                (int)(len < 2000 ? len : 2000), text);
    fail();
  }
  assert_string_equal(d.strategy, "caching");
  assert_true(d.has_stats);
  assert_true(d.has_segments);
  assert_int_equal(d.stats_members, DAO_STAT_METRIC_COUNT * DAO_STAT_POOL_COUNT);
  assert_true(d.saw_allocated_bytes_all);
  assert_int_equal(d.allocated_bytes_all_current,
                   get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current);
  assert_int_equal(d.segments, s.count);
  assert_true(s.count <= 64);
  for (i = 0; i < s.count; ++i) {
    assert_int_equal(d.segment_address[i], s.segments[i].info.address);
    assert_int_equal(d.segment_blocks[i], s.segments[i].info.block_count);
    blocks += s.segments[i].info.block_count;
  }
  allocated = count_state(&s, DAO_BLOCK_ALLOCATED);
  assert_int_equal(d.blocks, blocks);
  assert_int_equal(d.allocated_blocks, allocated);
  assert_int_equal(d.pending_blocks, count_state(&s, DAO_BLOCK_PENDING_FREE));
  free_snap(&s);
  free(text);
}

static void json_snapshot(void **state) {
  dao_allocator *a = make(big_place(), "expandable_segments=false");
  dao_allocator *e = make(big_place(), NULL);
  dao_allocator *buddy = NULL;
  dao_stream stream = NULL;
  void *p[12], *q[3];
  size_t len = 0, got = 0, half, i;
  char *full, *buf;
  (void)state;
  stream = make_stream(big_place());

  /* empty */
  json_matches_snapshot(a);
  /* segments of both pools and two streams, split blocks and holes */
  for (i = 0; i < 12; ++i)
    p[i] = alloc_ok(a, (i % 3 == 0 ? 3 * MIB : 100 * KIB) + i, i % 2 ? stream : NULL);
  for (i = 0; i < 12; i += 4) assert_ok(dao_allocator_free(a, p[i]));
  json_matches_snapshot(a);
  for (i = 0; i < 3; ++i) q[i] = alloc_ok(e, MIB * i + 1000, stream);
  assert_ok(dao_allocator_free(e, q[1]));
  json_matches_snapshot(e);

  /* snprintf semantics */
  full = snapshot_json(a, &len);
  assert_ok(dao_allocator_snapshot_json(a, NULL, 0, &got));
  assert_int_equal(got, len);
  half = len / 2;
  buf = (char *)malloc(len + 16);
  assert_non_null(buf);
  memset(buf, 'Z', len + 16);
  got = 0;
  assert_ok(dao_allocator_snapshot_json(a, buf, half, &got));
  assert_int_equal(got, len);
  assert_int_equal(buf[half - 1], '\0');
  assert_int_equal(strlen(buf), half - 1);
  assert_memory_equal(buf, full, half - 1);
  assert_int_equal(buf[half], 'Z'); /* nothing past the capacity */
  memset(buf, 'Z', len + 16);
  assert_ok(dao_allocator_snapshot_json(a, buf, 1, &got));
  assert_int_equal(buf[0], '\0');
  assert_int_equal(buf[1], 'Z');
  assert_int_equal(got, len);
  memset(buf, 'Z', len + 16);
  assert_ok(dao_allocator_snapshot_json(a, buf, len, &got)); /* one short: the last byte is cut */
  assert_int_equal(strlen(buf), len - 1);
  assert_int_equal(buf[len], 'Z');
  assert_ok(dao_allocator_snapshot_json(a, buf, len + 16, &got));
  assert_string_equal(buf, full);
  free(buf);
  free(full);

  /* bad input */
  assert_status(dao_allocator_snapshot_json(a, NULL, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_snapshot_json(a, NULL, 10, &got), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_snapshot_json(NULL, NULL, 0, &got), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_create(big_place(), "buddy", NULL, &buddy));
  assert_status(dao_allocator_snapshot_json(buddy, NULL, 0, &got), DAO_ERR_UNSUPPORTED);
  assert_ok(dao_allocator_destroy(buddy));

  for (i = 0; i < 12; ++i)
    if (i % 4 != 0) assert_ok(dao_allocator_free(a, p[i]));
  assert_ok(dao_allocator_free(e, q[0]));
  assert_ok(dao_allocator_free(e, q[2]));
  destroy(a);
  destroy(e);
  drop_stream(stream);
}

/* ------------------------------------------------------------------------
 * 7. Snapshot API bad input
 * ---------------------------------------------------------------------- */

static void snapshot_bad_input(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_allocator *buddy = NULL;
  dao_snapshot *s = NULL;
  size_t count = 0;
  void *p;
  struct {
    dao_segment_info info;
    unsigned char extra[32];
  } seg_big;
  struct {
    dao_block_info info;
    unsigned char extra[32];
  } block_big;
  dao_segment_info seg;
  dao_block_info block;
  size_t k;
  (void)state;
  p = alloc_ok(a, 5000, NULL);

  assert_status(dao_allocator_snapshot(NULL, &s), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_snapshot(a, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_snapshot(a, &s));
  assert_status(dao_snapshot_segment_count(NULL, &count), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_segment_count(s, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_snapshot_segment_count(s, &count));
  assert_int_equal(count, 1);

  memset(&seg, 0, sizeof seg);
  seg.struct_size = sizeof seg;
  assert_status(dao_snapshot_segment(NULL, 0, &seg), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_segment(s, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_snapshot_segment(s, 1, &seg), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_status(dao_snapshot_segment(s, (size_t)-1, &seg), DAO_ERR_INVALID_ARGUMENT);
  seg.struct_size = 0;
  assert_status(dao_snapshot_segment(s, 0, &seg), DAO_ERR_INVALID_ARGUMENT);
  seg.struct_size = sizeof seg - 1;
  assert_status(dao_snapshot_segment(s, 0, &seg), DAO_ERR_INVALID_ARGUMENT);
  seg.struct_size = sizeof seg;
  assert_ok(dao_snapshot_segment(s, 0, &seg));
  assert_int_equal(seg.block_count, 2); /* the block and the rest */

  /* a caller's newer, larger struct: zeros past the fields we know */
  memset(&seg_big, 0xab, sizeof seg_big);
  seg_big.info.struct_size = sizeof seg_big;
  assert_ok(dao_snapshot_segment(s, 0, &seg_big.info));
  assert_int_equal(seg_big.info.struct_size, sizeof seg_big);
  assert_int_equal(seg_big.info.address, seg.address);
  assert_int_equal(seg_big.info.block_count, seg.block_count);
  for (k = 0; k < sizeof seg_big.extra; ++k) assert_int_equal(seg_big.extra[k], 0);

  memset(&block, 0, sizeof block);
  block.struct_size = sizeof block;
  assert_status(dao_snapshot_block(NULL, 0, 0, &block), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_block(s, 0, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_block(s, 1, 0, &block), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_snapshot_block(s, 0, 2, &block), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  block.struct_size = 0;
  assert_status(dao_snapshot_block(s, 0, 0, &block), DAO_ERR_INVALID_ARGUMENT);
  block.struct_size = sizeof block;
  assert_ok(dao_snapshot_block(s, 0, 0, &block));
  assert_int_equal(block.address, (uintptr_t)p);
  assert_int_equal(block.requested_size, 5000);
  memset(&block_big, 0xcd, sizeof block_big);
  block_big.info.struct_size = sizeof block_big;
  assert_ok(dao_snapshot_block(s, 0, 0, &block_big.info));
  assert_int_equal(block_big.info.struct_size, sizeof block_big);
  assert_int_equal(block_big.info.size, 5120);
  for (k = 0; k < sizeof block_big.extra; ++k) assert_int_equal(block_big.extra[k], 0);

  /* the snapshot is a copy: freeing later does not change it */
  assert_ok(dao_allocator_free(a, p));
  memset(&block, 0, sizeof block);
  block.struct_size = sizeof block;
  assert_ok(dao_snapshot_block(s, 0, 0, &block));
  assert_int_equal(block.state, DAO_BLOCK_ALLOCATED);
  assert_ok(dao_snapshot_destroy(s));
  assert_ok(dao_snapshot_destroy(NULL));

  assert_ok(dao_allocator_create(big_place(), "buddy", NULL, &buddy));
  s = (dao_snapshot *)&count;
  assert_status(dao_allocator_snapshot(buddy, &s), DAO_ERR_UNSUPPORTED);
  assert_ok(dao_allocator_destroy(buddy));
  destroy(a);
}

/* ------------------------------------------------------------------------
 * 9. Trim and garbage collection
 * ---------------------------------------------------------------------- */

static void trim_gives_back_what_is_unused(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=true",
                                        "fast_reuse=true,expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    /* the 12 MiB block first: in classic mode a segment of its own */
    static const size_t sizes[] = {12 * MIB,  1000,        5000,    300 * KIB,
                                   700 * KIB, 3 * MIB / 2, 5 * MIB, 64 * KIB};
    void *p[8];
    size_t i, released = 1, expected_after = 0;
    int64_t before;
    snap s;
    /* nothing cached yet */
    assert_ok(dao_allocator_trim(a, &released));
    assert_int_equal(released, 0);
    for (i = 0; i < 8; ++i) p[i] = alloc_ok(a, sizes[i], NULL);
    for (i = 0; i < 8; i += 2) assert_ok(dao_allocator_free(a, p[i]));

    /* What must stay after a trim: classic segments with an allocated block
       (whole); in expandable segments the pages that allocated blocks touch
       (caching.cpp release_cached()/unmap_free()). */
    s = take_snap(a);
    for (i = 0; i < s.count; ++i) {
      const snap_segment *seg = &s.segments[i];
      if (seg->info.expandable) {
        expected_after += pages_in_use(seg);
      } else if (seg->info.block_count > 1 || seg->blocks[0].state != DAO_BLOCK_FREE) {
        expected_after += seg->info.size;
      }
    }
    free_snap(&s);
    before = reserved_now(a);
    assert_true((size_t)before > expected_after); /* something is cached */
    assert_ok(dao_allocator_trim(a, &released));
    assert_int_equal(released, (size_t)before - expected_after);
    assert_int_equal(reserved_now(a), expected_after);
    s = take_snap(a);
    for (i = 0; i < s.count; ++i) {
      const snap_segment *seg = &s.segments[i];
      if (seg->info.expandable) assert_int_equal(seg->info.mapped_bytes, pages_in_use(seg));
      /* no wholly free segment is left */
      assert_false(seg->info.block_count == 1 && seg->blocks[0].state == DAO_BLOCK_FREE);
    }
    free_snap(&s);
    /* the live blocks are untouched: still writable */
    for (i = 1; i < 8; i += 2) pattern_fill(p[i], sizes[i], (unsigned)i);
    for (i = 1; i < 8; i += 2) assert_true(pattern_check(p[i], sizes[i], (unsigned)i));
    /* a second trim has nothing left */
    assert_ok(dao_allocator_trim(a, &released));
    assert_int_equal(released, 0);
    for (i = 1; i < 8; i += 2) assert_ok(dao_allocator_free(a, p[i]));
    assert_ok(dao_allocator_trim(a, &released));
    assert_int_equal(released, expected_after);
    assert_int_equal(reserved_now(a), 0);
    assert_status(dao_allocator_trim(NULL, &released), DAO_ERR_INVALID_ARGUMENT);
    destroy(a);
  }
}

/* garbage_collection_threshold=0.5 with a 4 MiB limit, classic segments:
   once reserved is above 2 MiB, an allocation that needs new memory first
   releases the cache (caching.cpp collect_garbage()), so it does not need
   the out-of-memory ladder's retry. */
static void garbage_collection_classic(void **state) {
  dao_allocator *a = make(big_place(),
                          "expandable_segments=false,garbage_collection_threshold=0.5,"
                          "max_pool=4MiB");
  void *s1, *a1, *s2, *s3;
  dao_allocator_stats st;
  snap s;
  (void)state;
  s1 = alloc_ok(a, 64 * KIB, NULL);    /* a 2 MiB small segment */
  a1 = alloc_ok(a, 5 * MIB / 4, NULL); /* 20 MiB is over the limit: exactly 1.25 MiB */
  assert_int_equal(reserved_now(a), 2 * MIB + 5 * MIB / 4);
  assert_ok(dao_allocator_free(a, a1));
  /* no new memory needed: the cache stays */
  s2 = alloc_ok(a, MIB, NULL);
  assert_int_equal(reserved_now(a), 2 * MIB + 5 * MIB / 4);
  /* a new small segment is needed: the cached 1.25 MiB goes first */
  s3 = alloc_ok(a, MIB, NULL);
  st = dao_test_stats(a);
  assert_int_equal(st.reserved_bytes, 4 * MIB);
  assert_int_equal(st.alloc_retry_count, 0);
  assert_int_equal(st.failed_alloc_count, 0);
  s = take_snap(a);
  assert_int_equal(s.count, 2);
  assert_int_equal(s.segments[0].info.pool, DAO_STAT_POOL_SMALL);
  assert_int_equal(s.segments[1].info.pool, DAO_STAT_POOL_SMALL);
  free_snap(&s);
  assert_ok(dao_allocator_free(a, s1));
  assert_ok(dao_allocator_free(a, s2));
  assert_ok(dao_allocator_free(a, s3));
  destroy(a);

  /* With an 8 MiB limit (threshold 4 MiB) the new memory would fit without
     releasing anything: reserved shows the collection. */
  a = make(big_place(), "expandable_segments=false,garbage_collection_threshold=0.5,max_pool=8MiB");
  s1 = alloc_ok(a, 64 * KIB, NULL);
  a1 = alloc_ok(a, 3 * MIB, NULL);
  assert_int_equal(reserved_now(a), 5 * MIB);
  assert_ok(dao_allocator_free(a, a1));
  s2 = alloc_ok(a, MIB, NULL);
  assert_int_equal(reserved_now(a), 5 * MIB);
  s3 = alloc_ok(a, MIB, NULL);
  assert_int_equal(reserved_now(a), 4 * MIB); /* not 7 MiB */
  assert_int_equal(dao_test_stats(a).alloc_retry_count, 0);
  assert_ok(dao_allocator_free(a, s1));
  assert_ok(dao_allocator_free(a, s2));
  assert_ok(dao_allocator_free(a, s3));
  destroy(a);
}

/* The same with expandable segments (the default on SIM): an allocation
   that must map new pages while reserved is above the threshold first gives
   the cached pages back. (Expandable segments map a little ahead, up to a
   sixteenth of what they map: the bounds below allow for it.) */
static void garbage_collection_expandable(void **state) {
  dao_allocator *a = make(big_place(), "garbage_collection_threshold=0.5,max_pool=16MiB");
  void *s1, *a1, *s2, *s3;
  int64_t before, after;
  const size_t in_use = 64 * KIB + 6 * MIB + 3 * MIB;
  (void)state;
  s1 = alloc_ok(a, 64 * KIB, NULL);
  a1 = alloc_ok(a, 5 * MIB / 2, NULL);
  s2 = alloc_ok(a, 6 * MIB, NULL);
  assert_ok(dao_allocator_free(a, a1)); /* a cached 2.5 MiB hole */
  before = reserved_now(a);
  assert_true(before > (int64_t)(8 * MIB)); /* above the threshold */
  /* 3 MiB does not fit the hole: new pages at the end (which fit the
     limit even with the hole kept: no out-of-memory retry either way) */
  s3 = alloc_ok(a, 3 * MIB, NULL);
  after = reserved_now(a);
  assert_int_equal(dao_test_stats(a).alloc_retry_count, 0);
  /* the hole was given back before growing: not ~before + 3 MiB */
  if (after > (int64_t)(in_use + in_use / 16 + page_size())) {
    print_error(
        "reserved went from %lld to %lld bytes: the cached 2.5 MiB was not collected "
        "(in use: %zu)\n",
        (long long)before, (long long)after, in_use);
    fail();
  }
  assert_ok(dao_allocator_free(a, s1));
  assert_ok(dao_allocator_free(a, s2));
  assert_ok(dao_allocator_free(a, s3));
  destroy(a);

  /* With the 4 MiB limit, the same shape needs the out-of-memory retry
     unless the collection gives the hole back first. */
  a = make(big_place(), "garbage_collection_threshold=0.5,max_pool=4MiB");
  s1 = alloc_ok(a, 64 * KIB, NULL);
  a1 = alloc_ok(a, 3 * MIB / 2, NULL);
  s2 = alloc_ok(a, 512 * KIB, NULL);
  assert_ok(dao_allocator_free(a, a1));
  assert_true(reserved_now(a) > (int64_t)(2 * MIB));
  s3 = alloc_ok(a, 2 * MIB, NULL);
  assert_int_equal(dao_test_stats(a).alloc_retry_count, 0);
  assert_true(reserved_now(a) <= (int64_t)(4 * MIB));
  assert_ok(dao_allocator_free(a, s1));
  assert_ok(dao_allocator_free(a, s2));
  assert_ok(dao_allocator_free(a, s3));
  destroy(a);

  /* Without a limit the threshold is a fraction of the place's capacity
     (8 MiB here: 4 MiB). */
  a = make(small_place(), "garbage_collection_threshold=0.5");
  s1 = alloc_ok(a, 64 * KIB, NULL);
  a1 = alloc_ok(a, 5 * MIB / 2, NULL);
  s2 = alloc_ok(a, 2 * MIB, NULL);
  assert_ok(dao_allocator_free(a, a1));
  before = reserved_now(a);
  assert_true(before > (int64_t)(4 * MIB));
  s3 = alloc_ok(a, 3 * MIB, NULL);
  after = reserved_now(a);
  assert_int_equal(dao_test_stats(a).alloc_retry_count, 0);
  {
    const size_t used = 64 * KIB + 2 * MIB + 3 * MIB;
    if (after > (int64_t)(used + used / 16 + page_size())) {
      print_error("reserved went from %lld to %lld bytes: the cached 2.5 MiB was not collected\n",
                  (long long)before, (long long)after);
      fail();
    }
  }
  assert_ok(dao_allocator_free(a, s1));
  assert_ok(dao_allocator_free(a, s2));
  assert_ok(dao_allocator_free(a, s3));
  destroy(a);
}

/* reserve_slack=0: before an expandable segment maps more, cached pages
   are given back so that reserved stays at what is in use (plus the pages
   that blocks share). */
static void reserve_slack(void **state) {
  dao_allocator *a = make(big_place(), "reserve_slack=0");
  const char *config = NULL;
  void *x, *y, *z, *p = (void *)&p;
  (void)state;
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "reserve_slack=0"));
  x = alloc_ok(a, 3 * MIB, NULL);
  y = alloc_ok(a, MIB, NULL);
  assert_ok(dao_allocator_free(a, x)); /* a cached 3 MiB hole */
  assert_true(reserved_now(a) >= (int64_t)(4 * MIB));
  z = alloc_ok(a, 4 * MIB, NULL); /* does not fit the hole: grows */
  assert_true(reserved_now(a) <= (int64_t)(5 * MIB + 2 * page_size()));
  assert_ok(dao_allocator_free(a, y));
  assert_ok(dao_allocator_free(a, z));
  destroy(a);
  /* without it (and without reserve_headroom) the hole stays cached */
  a = make(big_place(), "reserve_headroom=none");
  x = alloc_ok(a, 3 * MIB, NULL);
  y = alloc_ok(a, MIB, NULL);
  assert_ok(dao_allocator_free(a, x));
  z = alloc_ok(a, 4 * MIB, NULL);
  assert_true(reserved_now(a) >= (int64_t)(8 * MIB));
  /* size 0: NULL and nothing else */
  assert_ok(dao_allocator_alloc(a, 0, NULL, &p));
  assert_null(p);
  assert_int_equal(dao_test_stats(a).live_blocks, 2);
  assert_ok(dao_allocator_free(a, NULL));
  assert_ok(dao_allocator_free(a, y));
  assert_ok(dao_allocator_free(a, z));
  destroy(a);
  assert_failure_mentions(dao_allocator_create(big_place(), "caching", "reserve_slack=abc", &a),
                          DAO_ERR_INVALID_ARGUMENT, "reserve_slack");
}

/* reserve_headroom (default 0.1): reserved memory stays within 1.1 times
   the peak of allocated memory; past it, cached pages go before more are
   mapped, starting with the end of the block about to be carved. */
static void reserve_headroom(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  const char *config = NULL;
  void *blocks[16], *big;
  int i;
  (void)state;
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "reserve_headroom=0.1"));
  /* peak 16 MiB in use; then every other block freed: 8 MiB of holes */
  for (i = 0; i < 16; ++i) {
    blocks[i] = alloc_ok(a, MIB, NULL);
    dao_test_fill(blocks[i], MIB, (unsigned)i);
  }
  for (i = 0; i < 16; i += 2) assert_ok(dao_allocator_free(a, blocks[i]));
  assert_true(reserved_now(a) >= (int64_t)(16 * MIB));
  /* 8 MiB fits no hole: without the headroom reserved would reach 24 MiB */
  big = alloc_ok(a, 8 * MIB, NULL);
  pattern_fill(big, 8 * MIB, 3);
  assert_true(reserved_now(a) <= (int64_t)(16 * MIB + 16 * MIB / 10 + 2 * page_size()));
  for (i = 1; i < 16; i += 2) assert_true(dao_test_check(blocks[i], MIB, (unsigned)i));
  assert_true(pattern_check(big, 8 * MIB, 3));
  for (i = 1; i < 16; i += 2) assert_ok(dao_allocator_free(a, blocks[i]));
  assert_ok(dao_allocator_free(a, big));
  destroy(a);
  /* reserve_headroom=none: the holes stay cached */
  a = make(big_place(), "reserve_headroom=none");
  for (i = 0; i < 16; ++i) blocks[i] = alloc_ok(a, MIB, NULL);
  for (i = 0; i < 16; i += 2) assert_ok(dao_allocator_free(a, blocks[i]));
  big = alloc_ok(a, 8 * MIB, NULL);
  assert_true(reserved_now(a) >= (int64_t)(24 * MIB));
  for (i = 1; i < 16; i += 2) assert_ok(dao_allocator_free(a, blocks[i]));
  assert_ok(dao_allocator_free(a, big));
  destroy(a);
  assert_failure_mentions(dao_allocator_create(big_place(), "caching", "reserve_headroom=-1", &a),
                          DAO_ERR_INVALID_ARGUMENT, "reserve_headroom");
  assert_failure_mentions(dao_allocator_create(big_place(), "caching", "reserve_headroom=x", &a),
                          DAO_ERR_INVALID_ARGUMENT, "reserve_headroom");
}

/* ------------------------------------------------------------------------
 * 8. DAO_NO_CACHING=1 (mode "nocache")
 * ---------------------------------------------------------------------- */

static void no_caching_gives_memory_back(void **state) {
  static const size_t sizes[] = {1, 1000, 100 * KIB, MIB, 3 * MIB, 12 * MIB};
  dao_allocator *a = make(big_place(), NULL);
  dao_stream stream = NULL;
  const char *config = NULL;
  size_t i;
  (void)state;
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "expandable_segments=false"));
  stream = make_stream(big_place());
  for (i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    void *p = alloc_ok(a, sizes[i], i % 2 ? stream : NULL);
    void *q = alloc_ok(a, sizes[i], NULL);
    snap s;
    /* each block is a system allocation of its own, of its rounded size */
    assert_int_equal(reserved_now(a), 2 * expected_round(sizes[i], 0));
    s = take_snap(a);
    assert_int_equal(s.count, 2);
    assert_int_equal(s.segments[0].info.block_count, 1);
    assert_int_equal(s.segments[1].info.block_count, 1);
    assert_int_equal(s.segments[0].info.expandable, 0);
    free_snap(&s);
    dao_test_fill(p, sizes[i], 1);
    assert_ok(dao_allocator_free(a, p));
    assert_int_equal(reserved_now(a), expected_round(sizes[i], 0));
    assert_ok(dao_allocator_free(a, q));
    assert_int_equal(reserved_now(a), 0);
    assert_int_equal(get_stat(a, DAO_STAT_RESERVED_SEGMENTS, DAO_STAT_POOL_ALL).current, 0);
    assert_int_equal(place_free(big_place()), BIG_CAPACITY);
  }
  /* the place's default allocator (caching on SIM) too */
  {
    void *p = NULL;
    assert_ok(dao_alloc(small_place(), 3 * MIB, &p));
    assert_true(place_free(small_place()) <= SMALL_CAPACITY - 3 * MIB);
    assert_ok(dao_free(small_place(), p));
    assert_int_equal(place_free(small_place()), SMALL_CAPACITY);
  }
  drop_stream(stream);
  destroy(a);
}

/* fast_reuse=true: a free goes, unmerged, to a list of its size class; the
   next request of that class gets the same block back. Before the
   allocator would map more, the recent blocks are merged, so a request
   that fits only in the merged memory still succeeds without growing or
   the out-of-memory ladder. Off by default. */
static void fast_reuse(void **state) {
  dao_allocator *a = NULL;
  const char *config = NULL;
  void *blocks[14], *p, *q, *big;
  dao_allocator_stats before;
  snap s;
  int i;
  (void)state;
  a = make(big_place(), NULL);
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "fast_reuse=false"));
  destroy(a);
  a = NULL;
  assert_failure_mentions(dao_allocator_create(big_place(), "caching", "fast_reuse=sometimes", &a),
                          DAO_ERR_INVALID_ARGUMENT, "fast_reuse");
  assert_null(a);

  /* fast reuse takes no headroom unless asked for one */
  a = make(big_place(), "fast_reuse=true,reserve_headroom=0.1");
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "reserve_headroom=0.1"));
  destroy(a);

  a = make(small_place(), "fast_reuse=true");
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "fast_reuse=true"));
  assert_non_null(strstr(config, "reserve_headroom=none"));
  /* 7 MiB of the 8 MiB device in 512 KiB blocks */
  for (i = 0; i < 14; ++i) {
    blocks[i] = alloc_ok(a, 512 * KIB, NULL);
    dao_test_fill(blocks[i], 512 * KIB, (unsigned)i);
  }
  /* the same class: the block just freed, at its address; a slightly
     smaller request may take it too (up to three classes larger) */
  assert_ok(dao_allocator_free(a, blocks[5]));
  {
    /* a recent block is not live: freeing or asking about it again is a bad
       pointer, and changes nothing */
    size_t size = 0;
    dao_stream other = make_stream(small_place());
    assert_status(dao_allocator_free(a, blocks[5]), DAO_ERR_INVALID_POINTER);
    assert_status(dao_allocator_usable_size(a, blocks[5], &size), DAO_ERR_INVALID_POINTER);
    assert_status(dao_allocator_record_stream(a, blocks[5], other), DAO_ERR_INVALID_POINTER);
    assert_int_equal(dao_test_stats(a).live_blocks, 13);
    drop_stream(other);
  }
  p = alloc_ok(a, 512 * KIB, NULL);
  assert_ptr_equal(p, blocks[5]);
  assert_ok(dao_allocator_free(a, p));
  q = alloc_ok(a, 480 * KIB, NULL);
  assert_ptr_equal(q, blocks[5]);
  assert_int_equal(usable(a, q), 512 * KIB);
  assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current, 7 * MIB);
  assert_int_equal(get_stat(a, DAO_STAT_REQUESTED_BYTES, DAO_STAT_POOL_ALL).current,
                   13 * 512 * KIB + 480 * KIB);
  blocks[5] = q;
  dao_test_fill(q, 480 * KIB, 5);
  /* every other block freed: 3.5 MiB in recent lists, unmerged; the data
     of the others untouched */
  for (i = 0; i < 14; i += 2) assert_ok(dao_allocator_free(a, blocks[i]));
  for (i = 1; i < 14; i += 2) {
    assert_true(dao_test_check(blocks[i], i == 5 ? 480 * KIB : 512 * KIB, (unsigned)i));
    assert_ok(dao_allocator_free(a, blocks[i]));
  }
  /* all free now: one 7 MiB hole, but only once merged */
  before = dao_test_stats(a);
  big = alloc_ok(a, 6 * MIB, NULL);
  pattern_fill(big, 6 * MIB, 3);
  assert_true(pattern_check(big, 6 * MIB, 3));
  assert_int_equal(dao_test_stats(a).system_alloc_count, before.system_alloc_count);
  assert_int_equal(dao_test_stats(a).alloc_retry_count, 0);
  assert_int_equal(reserved_now(a), (int64_t)before.reserved_bytes); /* nothing mapped */
  assert_ok(dao_allocator_free(a, big));
  /* the snapshot shows the memory merged: one free block */
  s = take_snap(a);
  assert_int_equal(s.count, 1);
  assert_int_equal(s.segments[0].info.block_count, 1);
  assert_int_equal(s.segments[0].blocks[0].state, DAO_BLOCK_FREE);
  free_snap(&s);
  assert_int_equal(get_stat(a, DAO_STAT_INACTIVE_SPLIT_BYTES, DAO_STAT_POOL_ALL).current, 0);
  /* trim gives all of it back, recent lists included */
  p = alloc_ok(a, MIB, NULL);
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(reserved_now(a), 0);
  destroy(a);
  assert_int_equal(place_free(small_place()), small_baseline);
}

/* For contrast, without DAO_NO_CACHING a free keeps the memory. */
static void caching_keeps_memory(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  void *p = alloc_ok(a, 3 * MIB, NULL);
  (void)state;
  assert_ok(dao_allocator_free(a, p));
  assert_int_equal(reserved_now(a), 3 * MIB);
  assert_true(place_free(big_place()) < big_baseline);
  destroy(a);
  assert_int_equal(place_free(big_place()), big_baseline);
}

/* Sanitizers reserve terabytes of shadow memory: no address-space limit. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

/* With the address space limited (ulimit -v, valgrind), the CPU place's
 * expandable segment cannot reserve its usual four times the machine's
 * memory; caching.cpp new_segment() settles for less and still serves. Runs
 * in a child process so that the limit stays there. */
static void limited_address_space(void **state) {
  pid_t child;
  int status = 0;
  (void)state;
#ifdef UNDER_SANITIZER
  skip();
#endif
  child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    struct rlimit limit;
    dao_allocator *a = NULL;
    void *p = NULL;
    size_t total = 0;
    int ok;
    if (dao_place_memory_info(dao_place_cpu(), NULL, &total) != DAO_OK) _exit(3);
    limit.rlim_cur = limit.rlim_max = (rlim_t)4 << 30; /* far below 4 x total */
    if (total < ((size_t)2 << 30) || setrlimit(RLIMIT_AS, &limit) != 0) _exit(4);
    ok = dao_allocator_create(dao_place_cpu(), "caching", NULL, &a) == DAO_OK &&
         dao_allocator_alloc(a, 3 * MIB, NULL, &p) == DAO_OK && p != NULL;
    if (ok) memset(p, 1, 3 * MIB);
    ok = ok && dao_allocator_free(a, p) == DAO_OK && dao_allocator_destroy(a) == DAO_OK;
    if (!ok) fprintf(stderr, "child: %s\n", dao_last_error());
    _exit(ok ? 0 : 1);
  }
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 4) skip(); /* a small machine, or no setrlimit */
  assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "caching";
  if (strcmp(mode, "nocache") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_caching_gives_memory_back, baseline, cleanup)};
    const char *env = getenv("DAO_NO_CACHING");
    if (env == NULL || strcmp(env, "1") != 0) {
      fprintf(stderr, "mode nocache expects DAO_NO_CACHING=1\n");
      return 2;
    }
    return cmocka_run_group_tests_name("nocache", tests, setup, NULL);
  }
  if (strcmp(mode, "caching") == 0) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(random_sequences_expandable, baseline, cleanup),
        cmocka_unit_test_setup_teardown(random_sequences_classic, baseline, cleanup),
        cmocka_unit_test_setup_teardown(random_sequences_other_configs, baseline, cleanup),
        cmocka_unit_test_setup_teardown(random_sequences_fast_reuse, baseline, cleanup),
        cmocka_unit_test_setup_teardown(rounding_and_pools, baseline, cleanup),
        cmocka_unit_test_setup_teardown(roundup_power2_divisions, baseline, cleanup),
        cmocka_unit_test_setup_teardown(max_split_size, baseline, cleanup),
        cmocka_unit_test_setup_teardown(reuse_is_per_stream, baseline, cleanup),
        cmocka_unit_test_setup_teardown(record_stream_defers_reuse, baseline, cleanup),
        cmocka_unit_test_setup_teardown(record_stream_waits_for_every_stream, baseline, cleanup),
        cmocka_unit_test_setup_teardown(destroy_with_pending_free, baseline, cleanup),
        cmocka_unit_test_setup_teardown(release_waits_for_queued_work, baseline, cleanup),
        cmocka_unit_test_setup_teardown(destroyed_streams_give_their_cache_back, baseline, cleanup),
        cmocka_unit_test_setup_teardown(concurrent_streams, baseline, cleanup),
        cmocka_unit_test_setup_teardown(record_stream_bad_input, baseline, cleanup),
        cmocka_unit_test_setup_teardown(record_stream_foreign_place_stream, baseline, cleanup),
        cmocka_unit_test_setup_teardown(ladder_releases_cache, baseline, cleanup),
        cmocka_unit_test_setup_teardown(ladder_reuses_holes, baseline, cleanup),
        cmocka_unit_test_setup_teardown(larger_than_the_device, baseline, cleanup),
        cmocka_unit_test_setup_teardown(oom_message_largest_free_block, baseline, cleanup),
        cmocka_unit_test_setup_teardown(limits, baseline, cleanup),
        cmocka_unit_test_setup_teardown(statistics_match_own_counts, baseline, cleanup),
        cmocka_unit_test_setup_teardown(statistics_bad_input, baseline, cleanup),
        cmocka_unit_test_setup_teardown(json_validator_itself, baseline, cleanup),
        cmocka_unit_test_setup_teardown(json_snapshot, baseline, cleanup),
        cmocka_unit_test_setup_teardown(snapshot_bad_input, baseline, cleanup),
        cmocka_unit_test_setup_teardown(trim_gives_back_what_is_unused, baseline, cleanup),
        cmocka_unit_test_setup_teardown(garbage_collection_classic, baseline, cleanup),
        cmocka_unit_test_setup_teardown(garbage_collection_expandable, baseline, cleanup),
        cmocka_unit_test_setup_teardown(reserve_slack, baseline, cleanup),
        cmocka_unit_test_setup_teardown(reserve_headroom, baseline, cleanup),
        cmocka_unit_test_setup_teardown(caching_keeps_memory, baseline, cleanup),
        cmocka_unit_test_setup_teardown(fast_reuse, baseline, cleanup),
        cmocka_unit_test(limited_address_space),
    };
    if (getenv("DAO_NO_CACHING") != NULL && strcmp(getenv("DAO_NO_CACHING"), "1") == 0) {
      fprintf(stderr, "the caching mode must run without DAO_NO_CACHING=1\n");
      return 2;
    }
    return cmocka_run_group_tests_name("caching", tests, setup, NULL);
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
