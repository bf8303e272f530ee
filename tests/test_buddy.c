/* Buddy strategy invariants: alignment, no overlap, data survives, the pool
 * is whole again after everything is freed, caps, fallbacks and recovery.
 * Runs with DAO_SIM_DEVICES=64MiB,3MiB. */
#include "dao_test.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

typedef struct {
  void *ptr;
  size_t size;
  size_t usable;
  unsigned seed;
} live_block;

static int by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const live_block *)a)->ptr;
  uintptr_t y = (uintptr_t)((const live_block *)b)->ptr;
  return x < y ? -1 : x > y;
}

/* No two live blocks overlap (sorted by address, each ends before the next). */
static void assert_disjoint(live_block *blocks, size_t n) {
  live_block *sorted = malloc(n * sizeof *sorted);
  size_t i;
  assert_non_null(sorted);
  memcpy(sorted, blocks, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, by_address);
  for (i = 1; i < n; ++i)
    assert_true((uintptr_t)sorted[i - 1].ptr + sorted[i - 1].usable <= (uintptr_t)sorted[i].ptr);
  free(sorted);
}

static size_t next_power_of_two(size_t x) {
  size_t p = 256;
  while (p < x) p <<= 1;
  return p;
}

static void random_sequence_keeps_invariants(void **state) {
  enum { slots = 300, steps = 20000 };
  dao_allocator *a = NULL;
  live_block blocks[slots];
  uint64_t rng = 12345;
  size_t live = 0, step, i;
  uint64_t expected_allocated = 0, expected_requested = 0;
  dao_allocator_stats s;
  size_t released = 0;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB", &a));
  memset(blocks, 0, sizeof blocks);
  for (step = 0; step < steps; ++step) {
    uint64_t r = dao_test_rand(&rng);
    size_t slot = (size_t)(r % slots);
    live_block *b = &blocks[slot];
    if (b->ptr != NULL) {
      assert_true(dao_test_check(b->ptr, b->size, b->seed));
      assert_ok(dao_allocator_free(a, b->ptr));
      expected_allocated -= b->usable;
      expected_requested -= b->size;
      b->ptr = NULL;
      --live;
    } else {
      /* sizes log-spread from 1 B to 2 MiB (some above the 1 MiB chunk) */
      size_t size =
          ((size_t)1 << (dao_test_rand(&rng) % 22)) + (size_t)(dao_test_rand(&rng) % 1000);
      assert_ok(dao_allocator_alloc(a, size, NULL, &b->ptr));
      assert_true(dao_test_is_aligned(b->ptr, 256));
      assert_ok(dao_allocator_usable_size(a, b->ptr, &b->usable));
      if (size <= MIB) assert_int_equal(b->usable, next_power_of_two(size));
      else assert_int_equal(b->usable, size); /* served straight by the system */
      b->size = size;
      b->seed = (unsigned)step;
      dao_test_fill(b->ptr, size, b->seed);
      expected_allocated += b->usable;
      expected_requested += size;
      ++live;
    }
    if (step % 1000 == 0) {
      live_block packed[slots];
      size_t n = 0;
      for (i = 0; i < slots; ++i)
        if (blocks[i].ptr) packed[n++] = blocks[i];
      assert_int_equal(n, live);
      assert_disjoint(packed, n);
      s = dao_test_stats(a);
      assert_int_equal(s.live_blocks, live);
      assert_int_equal(s.allocated_bytes, expected_allocated);
      assert_int_equal(s.requested_bytes, expected_requested);
      assert_true(s.reserved_bytes >= s.allocated_bytes);
    }
  }
  for (i = 0; i < slots; ++i) {
    if (blocks[i].ptr == NULL) continue;
    assert_true(dao_test_check(blocks[i].ptr, blocks[i].size, blocks[i].seed));
    assert_ok(dao_allocator_free(a, blocks[i].ptr));
  }
  s = dao_test_stats(a);
  assert_int_equal(s.live_blocks, 0);
  assert_int_equal(s.allocated_bytes, 0);
  /* Every chunk merged back whole: trim can give all of them back. */
  assert_ok(dao_allocator_trim(a, &released));
  assert_int_equal(released, s.reserved_bytes);
  assert_int_equal(dao_test_stats(a).reserved_bytes, 0);
  assert_ok(dao_allocator_destroy(a));
}

static void buddies_merge_back(void **state) {
  dao_allocator *a = NULL;
  void *halves[2], *quarters[4], *whole = NULL;
  int i;
  dao_allocator_stats s;
  (void)state;
  assert_ok(
      dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB,initial_pool=1MiB", &a));
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, MIB);
  assert_int_equal(s.largest_free_block, MIB);
  for (i = 0; i < 4; ++i) assert_ok(dao_allocator_alloc(a, 256 * KIB, NULL, &quarters[i]));
  assert_int_equal(dao_test_stats(a).largest_free_block, 0);
  for (i = 0; i < 4; ++i) assert_ok(dao_allocator_free(a, quarters[i]));
  for (i = 0; i < 2; ++i) assert_ok(dao_allocator_alloc(a, 512 * KIB, NULL, &halves[i]));
  assert_ok(dao_allocator_free(a, halves[1]));
  assert_int_equal(dao_test_stats(a).largest_free_block, 512 * KIB);
  assert_ok(dao_allocator_free(a, halves[0]));
  assert_ok(dao_allocator_alloc(a, MIB, NULL, &whole));
  s = dao_test_stats(a);
  assert_int_equal(s.system_alloc_count, 1); /* never grew: the halves merged */
  assert_int_equal(s.reserved_bytes, MIB);
  assert_ok(dao_allocator_free(a, whole));
  assert_ok(dao_allocator_destroy(a));
}

static void splitting_serves_small_blocks_from_one_chunk(void **state) {
  dao_allocator *a = NULL;
  live_block blocks[4096];
  size_t i;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB", &a));
  for (i = 0; i < 4096; ++i) {
    blocks[i].size = 256;
    blocks[i].usable = 256;
    assert_ok(dao_allocator_alloc(a, 256, NULL, &blocks[i].ptr));
  }
  assert_int_equal(dao_test_stats(a).system_alloc_count, 1); /* 4096 x 256 B = 1 MiB */
  assert_disjoint(blocks, 4096);
  for (i = 0; i < 4096; ++i) assert_ok(dao_allocator_free(a, blocks[i].ptr));
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(dao_test_stats(a).reserved_bytes, 0);
  assert_ok(dao_allocator_destroy(a));
}

static void large_requests_bypass_the_pool(void **state) {
  dao_allocator *a = NULL;
  void *p = NULL;
  size_t usable = 0;
  dao_allocator_stats s;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB", &a));
  assert_ok(dao_allocator_alloc(a, 3 * MIB + 5, NULL, &p));
  assert_ok(dao_allocator_usable_size(a, p, &usable));
  assert_int_equal(usable, 3 * MIB + 5);
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, 3 * MIB + 5);
  dao_test_fill(p, usable, 3);
  assert_true(dao_test_check(p, usable, 3));
  assert_ok(dao_allocator_free(a, p));
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, 0); /* given back at once */
  assert_int_equal(s.system_free_count, 1);
  assert_status(dao_allocator_free(a, p), DAO_ERR_INVALID_POINTER);
  assert_ok(dao_allocator_destroy(a));
}

static void max_pool_is_a_hard_cap(void **state) {
  dao_allocator *a = NULL;
  void *p[5] = {NULL};
  int i;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB,max_pool=4MiB", &a));
  for (i = 0; i < 4; ++i) assert_ok(dao_allocator_alloc(a, MIB, NULL, &p[i]));
  assert_failure_mentions(dao_allocator_alloc(a, 256, NULL, &p[4]), DAO_ERR_OUT_OF_MEMORY,
                          "max_pool");
  assert_null(p[4]);
  assert_status(dao_allocator_alloc(a, 2 * MIB, NULL, &p[4]), DAO_ERR_OUT_OF_MEMORY);
  assert_int_equal(dao_test_stats(a).failed_alloc_count, 2);
  assert_int_equal(dao_test_stats(a).reserved_bytes, 4 * MIB);
  assert_ok(dao_allocator_free(a, p[0]));
  assert_ok(dao_allocator_alloc(a, 1000, NULL, &p[0])); /* recovers */
  assert_ok(dao_allocator_free(a, p[0]));
  assert_ok(dao_allocator_free(a, p[1]));
  /* two free chunks are given back to make room for a 2 MiB large block */
  assert_ok(dao_allocator_alloc(a, 2 * MIB, NULL, &p[4]));
  assert_int_equal(dao_test_stats(a).reserved_bytes, 4 * MIB);
  for (i = 2; i < 5; ++i) assert_ok(dao_allocator_free(a, p[i]));
  assert_ok(dao_allocator_destroy(a));
}

static void cap_below_a_chunk_uses_smaller_chunks(void **state) {
  dao_allocator *a = NULL;
  void *p[3] = {NULL};
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB,max_pool=512KiB", &a));
  assert_ok(dao_allocator_alloc(a, 256 * KIB, NULL, &p[0]));
  assert_ok(dao_allocator_alloc(a, 256 * KIB, NULL, &p[1]));
  assert_status(dao_allocator_alloc(a, 256, NULL, &p[2]), DAO_ERR_OUT_OF_MEMORY);
  assert_int_equal(dao_test_stats(a).reserved_bytes, 512 * KIB);
  assert_ok(dao_allocator_free(a, p[0]));
  assert_ok(dao_allocator_free(a, p[1]));
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(dao_test_stats(a).reserved_bytes, 0);
  assert_ok(dao_allocator_destroy(a));
}

static void nearly_full_device_is_still_usable(void **state) {
  /* sim:1 holds 3 MiB: one 2 MiB chunk fits, then only smaller ones. */
  dao_allocator *a = NULL;
  void *big = NULL, *mid = NULL, *small = NULL;
  size_t free_bytes = 0, total = 0;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_sim(1), "buddy", "chunk_size=2MiB", &a));
  assert_ok(dao_allocator_alloc(a, 2 * MIB, NULL, &big));
  assert_ok(dao_allocator_alloc(a, MIB, NULL, &mid));
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(free_bytes, 0);
  assert_failure_mentions(dao_allocator_alloc(a, 256, NULL, &small), DAO_ERR_OUT_OF_MEMORY,
                          "sim:1");
  assert_non_null(strstr(dao_last_error(), "capacity of 3.0 MiB"));
  assert_ok(dao_allocator_free(a, mid));
  assert_ok(dao_allocator_alloc(a, 256, NULL, &small)); /* recovered */
  assert_ok(dao_allocator_free(a, small));
  assert_ok(dao_allocator_free(a, big));
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(free_bytes, total); /* destroy gave everything back */
}

static void initial_pool_is_reserved_or_nothing(void **state) {
  dao_allocator *a = NULL;
  size_t free_bytes = 0, total = 0;
  dao_allocator_stats s;
  (void)state;
  assert_ok(
      dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB,initial_pool=3MiB", &a));
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, 3 * MIB);
  assert_int_equal(s.system_alloc_count, 3);
  assert_ok(dao_allocator_destroy(a));
  /* max_pool below chunk_size (64 MiB on the CPU): the largest powers of two
     that fit under the cap, not a whole chunk that never could */
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "max_pool=4MiB,initial_pool=1MiB", &a));
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, 1 * MIB);
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "max_pool=5MiB,initial_pool=5MiB", &a));
  s = dao_test_stats(a);
  assert_int_equal(s.reserved_bytes, 5 * MIB);
  assert_int_equal(s.system_alloc_count, 2); /* 4 MiB + 1 MiB */
  assert_ok(dao_allocator_destroy(a));
  /* 4 MiB cannot be had on a 3 MiB device: creation fails, nothing leaks */
  a = NULL;
  assert_failure_mentions(
      dao_allocator_create(dao_place_sim(1), "buddy", "chunk_size=1MiB,initial_pool=4MiB", &a),
      DAO_ERR_OUT_OF_MEMORY, "sim:1");
  assert_null(a);
  assert_ok(dao_place_memory_info(dao_place_sim(1), &free_bytes, &total));
  assert_int_equal(free_bytes, total);
}

static void idle_chunks_make_room_for_large_blocks(void **state) {
  /* sim:0 holds 64 MiB; fill it with 16 MiB chunks, free, then ask for 60 MiB. */
  dao_allocator *a = NULL;
  void *p[64];
  void *large = NULL;
  int i;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_sim(0), "buddy", "chunk_size=16MiB", &a));
  for (i = 0; i < 64; ++i) assert_ok(dao_allocator_alloc(a, MIB, NULL, &p[i]));
  assert_status(dao_allocator_alloc(a, MIB, NULL, &large), DAO_ERR_OUT_OF_MEMORY);
  for (i = 0; i < 64; ++i) assert_ok(dao_allocator_free(a, p[i]));
  assert_int_equal(dao_test_stats(a).reserved_bytes, 64 * MIB);
  assert_ok(dao_allocator_alloc(a, 60 * MIB, NULL, &large));
  assert_int_equal(dao_test_stats(a).reserved_bytes, 60 * MIB);
  assert_ok(dao_allocator_free(a, large));
  assert_ok(dao_allocator_destroy(a));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_sequence_keeps_invariants),
      cmocka_unit_test(buddies_merge_back),
      cmocka_unit_test(splitting_serves_small_blocks_from_one_chunk),
      cmocka_unit_test(large_requests_bypass_the_pool),
      cmocka_unit_test(max_pool_is_a_hard_cap),
      cmocka_unit_test(cap_below_a_chunk_uses_smaller_chunks),
      cmocka_unit_test(nearly_full_device_is_still_usable),
      cmocka_unit_test(initial_pool_is_reserved_or_nothing),
      cmocka_unit_test(idle_chunks_make_room_for_large_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
