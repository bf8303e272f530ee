/* Memory the "caching" strategy gives back to the place: trim, garbage
 * collection (classic and expandable segments), reserve_slack and
 * reserve_headroom, and, for contrast, a free that keeps its memory. */
#define _POSIX_C_SOURCE 200809L

#include "caching_test_util.h"

/* ------------------------------------------------------------------------
 * Trim and garbage collection
 * ---------------------------------------------------------------------- */

static void trim_gives_back_what_is_unused(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
       (caching.cpp release_cached(), segment_map.cpp unmap_range()). */
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
  dao_allocator *a = make(big_place(), "expandable_segments=false,garbage_collection_threshold=0.5,"
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
    print_error("reserved went from %lld to %lld bytes: the cached 2.5 MiB was not collected "
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

/* reserve_headroom (default 0.05): reserved memory stays within 1.05 times
   the peak of allocated memory; past it, cached pages go before more are
   mapped, starting with the end of the block about to be carved. */
static void reserve_headroom(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  const char *config = NULL;
  void *blocks[16], *big;
  int i;
  (void)state;
  assert_ok(dao_allocator_info(a, NULL, NULL, &config));
  assert_non_null(strstr(config, "reserve_headroom=0.05"));
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
  assert_true(reserved_now(a) <= (int64_t)(16 * MIB + 16 * MIB / 20 + 2 * page_size()));
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(trim_gives_back_what_is_unused, baseline, cleanup),
      cmocka_unit_test_setup_teardown(garbage_collection_classic, baseline, cleanup),
      cmocka_unit_test_setup_teardown(garbage_collection_expandable, baseline, cleanup),
      cmocka_unit_test_setup_teardown(reserve_slack, baseline, cleanup),
      cmocka_unit_test_setup_teardown(reserve_headroom, baseline, cleanup),
      cmocka_unit_test_setup_teardown(caching_keeps_memory, baseline, cleanup),
  };
  if (!no_caching_is(0)) return 2;
  return cmocka_run_group_tests_name("caching_release", tests, setup, NULL);
}
