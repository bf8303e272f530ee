/* Running out of memory with the "caching" strategy: the out-of-memory
 * ladder on the 8 MiB device (cache released, holes reused), requests
 * larger than the device, the message's largest free block, and the
 * max_pool and memory_fraction limits. */
#define _POSIX_C_SOURCE 200809L

#include "caching_test_util.h"

/* ------------------------------------------------------------------------
 * The out-of-memory ladder on the 8 MiB device, and limits
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
                                        "reserve_headroom=none,fast_reuse=false",
                                        "expandable_segments=false,fast_reuse=false"};
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
                                        "reserve_headroom=none,fast_reuse=false",
                                        "expandable_segments=false,fast_reuse=false"};
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(ladder_releases_cache, baseline, cleanup),
      cmocka_unit_test_setup_teardown(ladder_reuses_holes, baseline, cleanup),
      cmocka_unit_test_setup_teardown(larger_than_the_device, baseline, cleanup),
      cmocka_unit_test_setup_teardown(oom_message_largest_free_block, baseline, cleanup),
      cmocka_unit_test_setup_teardown(limits, baseline, cleanup),
  };
  if (!no_caching_is(0)) return 2;
  return cmocka_run_group_tests_name("caching_oom", tests, setup, NULL);
}
