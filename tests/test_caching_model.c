/* The "caching" strategy against a model of its live blocks: random
 * sequences of allocations and frees (every configuration that changes how
 * blocks split and merge) with the snapshot's split/merge invariants and
 * the statistics checked against what the test counts itself, peak and
 * accumulated resets, and dao_allocator_get_stat bad input. */
#define _POSIX_C_SOURCE 200809L

#include "caching_test_util.h"

/* Figures of a snapshot that statistics must agree with. */
typedef struct snap_totals {
  int64_t mapped[DAO_STAT_POOL_COUNT];
  int64_t segments[DAO_STAT_POOL_COUNT];
  int64_t split_bytes[DAO_STAT_POOL_COUNT];
  int64_t split_blocks[DAO_STAT_POOL_COUNT];
  size_t largest_free; /* largest free block (classic segments only) */
  size_t in_use_pages; /* sum of pages_in_use over expandable segments */
} snap_totals;

/* Inactive split, as block_pool.hpp is_split()/count_split() count it: free
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
  int fast_reuse; /* fast reuse (the default): a block may be up to 4 classes larger */
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
           large pool (caching.hpp pool_for()) */
        if (expandable) {
          assert_int_equal(in->pool, DAO_STAT_POOL_LARGE);
        } else if (in->pool == DAO_STAT_POOL_SMALL) {
          assert_true(b->size <= MIB);
          assert_true(b->requested_size <= MIB);
        } else {
          if (b->size <= MIB) {
            print_error("block %p of %zu B (asked %zu) on stream %p in a large-pool segment %p+%zu "
                        "(stream %p, expandable %d, %zu blocks)\n",
                        (void *)b->address, b->size, b->requested_size, (void *)b->stream,
                        (void *)in->address, in->size, (void *)in->stream, in->expandable,
                        in->block_count);
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
 * Split/merge invariants after random sequences
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
  m->fast_reuse = config == NULL || strstr(config, "fast_reuse=false") == NULL;
  stream = make_stream(big_place());
  run_random(a, m, stream, &rng, 1500, 50, expandable);
  /* fast reuse really served requests (only it hands out larger blocks);
     with the default headroom few blocks wait, so only asked for */
  if (config != NULL && strstr(config, "fast_reuse=true") != NULL)
    assert_true(m->larger_blocks > 0);
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
    random_sequence("expandable_segments=false,fast_reuse=false", 0, 0, seeds[i]);
}

static void random_sequences_other_configs(void **state) {
  (void)state;
  random_sequence("roundup_power2_divisions=4,fast_reuse=false", 1, 4, 11);
  random_sequence("roundup_power2_divisions=8,expandable_segments=false,fast_reuse=false", 0, 8,
                  12);
  /* blocks of 64 MiB and more are never split: none occur in the random
     sizes (<= 12 MiB), so this is the same as no limit, in classic mode */
  random_sequence("max_split_size_mb=64,expandable_segments=false,fast_reuse=false", 0, 0, 13);
}

/* Fast reuse defers merging: the snapshot (which merges first) must still
   show every invariant, and the statistics must still match the model. */
static void random_sequences_fast_reuse(void **state) {
  (void)state;
  random_sequence("fast_reuse=true,reserve_headroom=none", 1, 0, 21);
  random_sequence("fast_reuse=true,reserve_headroom=0.5", 1, 0, 0x5eed5eed5eedull);
  random_sequence("fast_reuse=true,reserve_headroom=none,expandable_segments=false", 0, 0, 22);
  random_sequence("fast_reuse=true,reserve_headroom=none,roundup_power2_divisions=4", 1, 4, 23);
  random_sequence("fast_reuse=true,reserve_headroom=none,max_split_size_mb=64,"
                  "expandable_segments=false",
                  0, 0, 24);
  /* garbage collection and a headroom give pages back while recent blocks
     wait unmerged */
  random_sequence("fast_reuse=true,garbage_collection_threshold=0.3,memory_fraction=0.5,"
                  "reserve_headroom=0.1",
                  1, 0, 25);
}

/* ------------------------------------------------------------------------
 * Statistics equal to what the test counts
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
    m->fast_reuse = c < 2;
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
int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(random_sequences_expandable, baseline, cleanup),
      cmocka_unit_test_setup_teardown(random_sequences_classic, baseline, cleanup),
      cmocka_unit_test_setup_teardown(random_sequences_other_configs, baseline, cleanup),
      cmocka_unit_test_setup_teardown(random_sequences_fast_reuse, baseline, cleanup),
      cmocka_unit_test_setup_teardown(statistics_match_own_counts, baseline, cleanup),
      cmocka_unit_test_setup_teardown(statistics_bad_input, baseline, cleanup),
  };
  if (!no_caching_is(0)) return 2;
  return cmocka_run_group_tests_name("caching_model", tests, setup, NULL);
}
