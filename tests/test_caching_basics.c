/* How the "caching" strategy turns requests into blocks: rounding (plain
 * and roundup_power2_divisions), the small and large pools, max_split_size,
 * fast_reuse, and the CPU place's expandable segment under a limited
 * address space. */
#define _POSIX_C_SOURCE 200809L

#include <sys/resource.h>
#include <sys/wait.h>

#include "caching_test_util.h"

/* ------------------------------------------------------------------------
 * Rounding, pools, max_split_size
 * ---------------------------------------------------------------------- */

static void rounding_and_pools(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
      if (cases[i].want <= MIB) small += cases[i].want;
      else large += cases[i].want;
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
         2 MiB (segment_map.cpp segment_size()) */
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
   than 20 MiB unused (block_pool.hpp fits()). */
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

/* Fast reuse (on by default): a free goes, unmerged, to a list of its size
   class; the next request of that class gets the same block back. Before
   the allocator would map more, the recent blocks are merged, so a request
   that fits only in the merged memory still succeeds without growing or
   the out-of-memory ladder. With reserve_headroom=none the lists have no
   bound (the bound is tested in fast_reuse_bounded_by_headroom). */
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
  assert_non_null(strstr(config, "fast_reuse=true"));
  assert_non_null(strstr(config, "reserve_headroom=0.05"));
  destroy(a);
  a = NULL;
  assert_failure_mentions(dao_allocator_create(big_place(), "caching", "fast_reuse=sometimes", &a),
                          DAO_ERR_INVALID_ARGUMENT, "fast_reuse");
  assert_null(a);
  a = make(big_place(), "fast_reuse=false");
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "fast_reuse=false"));
  assert_non_null(strstr(config, "reserve_headroom=0.05"));
  destroy(a);

  a = make(small_place(), "reserve_headroom=none");
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
/* The recent lists hold at most reserve_headroom times the memory in use:
   beyond, a free merges at once (the exact path), so a slightly smaller
   request gets an exact block, not the larger one just freed. */
static void fast_reuse_bounded_by_headroom(void **state) {
  static const char *const configs[] = {NULL, "reserve_headroom=0.2", "reserve_headroom=none",
                                        "fast_reuse=false"};
  /* 0.05 x 13 x 512 KiB = 333 KiB < 512 KiB: merged; 0.2 x 13 x 512 KiB
     = 1.3 MiB: recent; none: recent; fast_reuse=false: never recent */
  static const int recent[] = {0, 1, 1, 0};
  size_t c;
  (void)state;
  for (c = 0; c < 4; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    void *blocks[14], *q;
    int i;
    for (i = 0; i < 14; ++i) blocks[i] = alloc_ok(a, 512 * KIB, NULL);
    assert_ok(dao_allocator_free(a, blocks[5]));
    q = alloc_ok(a, 480 * KIB, NULL);
    assert_ptr_equal(q, blocks[5]); /* best fit finds the same hole */
    assert_int_equal(usable(a, q), recent[c] ? 512 * KIB : 480 * KIB);
    blocks[5] = q;
    for (i = 0; i < 14; ++i) assert_ok(dao_allocator_free(a, blocks[i]));
    destroy(a);
  }
  {
    /* reserve_headroom=0: no block waits; small blocks freed and asked
       for again come back exact */
    dao_allocator *a = make(big_place(), "reserve_headroom=0");
    void *p = alloc_ok(a, 64 * KIB, NULL), *keep = alloc_ok(a, MIB, NULL), *q;
    assert_ok(dao_allocator_free(a, p));
    q = alloc_ok(a, 60 * KIB, NULL);
    assert_int_equal(usable(a, q), 60 * KIB);
    assert_ok(dao_allocator_free(a, q));
    assert_ok(dao_allocator_free(a, keep));
    destroy(a);
  }
}

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(rounding_and_pools, baseline, cleanup),
      cmocka_unit_test_setup_teardown(roundup_power2_divisions, baseline, cleanup),
      cmocka_unit_test_setup_teardown(max_split_size, baseline, cleanup),
      cmocka_unit_test_setup_teardown(fast_reuse, baseline, cleanup),
      cmocka_unit_test_setup_teardown(fast_reuse_bounded_by_headroom, baseline, cleanup),
      cmocka_unit_test(limited_address_space),
  };
  if (!no_caching_is(0)) return 2;
  return cmocka_run_group_tests_name("caching_basics", tests, setup, NULL);
}
