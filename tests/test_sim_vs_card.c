/* A SIM device with a card's cost profile behaves as that card under the
 * same allocator and config (issue 16, item 0): the same sequence of
 * allocations and frees on cuda:0 (the fake driver, with the H200's 2 MiB
 * granularity) and on sim:0 (DAO_SIM_COSTS=h200, the same capacity) must
 * give the same reserved memory after every step, the same peaks and the
 * same number of driver allocations. With the host's 4 KiB pages (profile
 * none) the two part ways: the SIM maps finer than the card can. */
#include <unistd.h>

#include "dao_test.h"

#define MIB ((size_t)1 << 20)

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* 64 B to 8 MiB, log-uniform. */
static size_t random_size(void) {
  const unsigned shift = 6 + (unsigned)(next_random() % 18);
  return ((size_t)1 << shift) + (size_t)(next_random() % ((size_t)1 << shift));
}

static void same_capacity(void **state) {
  size_t card_free = 0, card_total = 0, sim_free = 0, sim_total = 0;
  (void)state;
  assert_ok(dao_place_memory_info(dao_place_cuda(0), &card_free, &card_total));
  assert_ok(dao_place_memory_info(dao_place_sim(0), &sim_free, &sim_total));
  assert_int_equal(card_total, sim_total);
  assert_int_equal(card_free, sim_free);
}

static void same_reserved_memory_step_by_step(void **state) {
  enum { kSlots = 64, kSteps = 3000 };
  dao_allocator *card = NULL, *sim = NULL;
  void *on_card[kSlots] = {0}, *on_sim[kSlots] = {0};
  dao_allocator_stats c, s;
  size_t released_card = 0, released_sim = 0;
  int step, i;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cuda(0), "caching", NULL, &card));
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching", NULL, &sim));
  for (step = 0; step < kSteps; ++step) {
    const int slot = (int)(next_random() % kSlots);
    if (on_card[slot] != NULL) {
      assert_ok(dao_allocator_free(card, on_card[slot]));
      assert_ok(dao_allocator_free(sim, on_sim[slot]));
      on_card[slot] = on_sim[slot] = NULL;
    } else {
      const size_t n = random_size();
      assert_ok(dao_allocator_alloc(card, n, NULL, &on_card[slot]));
      assert_ok(dao_allocator_alloc(sim, n, NULL, &on_sim[slot]));
    }
    c = dao_test_stats(card);
    s = dao_test_stats(sim);
    if (c.reserved_bytes != s.reserved_bytes) {
      print_error("step %d: reserved %llu on the card, %llu on SIM\n", step,
                  (unsigned long long)c.reserved_bytes, (unsigned long long)s.reserved_bytes);
      fail();
    }
    assert_int_equal(c.allocated_bytes, s.allocated_bytes);
  }
  c = dao_test_stats(card);
  s = dao_test_stats(sim);
  assert_int_equal(c.peak_reserved_bytes, s.peak_reserved_bytes);
  assert_int_equal(c.system_alloc_count, s.system_alloc_count);
  assert_int_equal(c.largest_free_block, s.largest_free_block);
  for (i = 0; i < kSlots; ++i) {
    if (on_card[i] == NULL) continue;
    assert_ok(dao_allocator_free(card, on_card[i]));
    assert_ok(dao_allocator_free(sim, on_sim[i]));
  }
  assert_ok(dao_allocator_trim(card, &released_card));
  assert_ok(dao_allocator_trim(sim, &released_sim));
  assert_int_equal(released_card, released_sim);
  assert_ok(dao_allocator_destroy(card));
  assert_ok(dao_allocator_destroy(sim));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_capacity),
      cmocka_unit_test(same_reserved_memory_step_by_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
