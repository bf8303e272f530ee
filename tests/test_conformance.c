/* The conformance suite: the same checks against every strategy on every
 * place this machine has, alone and stacked on every strategy (config key
 * `upstream`), so a new strategy or backend gets them for free: the list of
 * strategies is the library's own (strategy/strategy_list.h). */
#include "dao_test.h"

#include "strategy/strategy_list.h"

#define STRATEGY_NAME(s) #s,
static const char *const strategies[] = {DAO_STRATEGY_LIST(STRATEGY_NAME)};
#undef STRATEGY_NAME
enum { strategy_count = sizeof strategies / sizeof strategies[0] };

typedef struct {
  dao_place places[64];
  int host_visible[64];
  size_t capacity[64];
  int count;
} place_list;

static place_list available_places(void) {
  place_list list;
  int kind;
  memset(&list, 0, sizeof list);
  for (kind = 0; kind < DAO_PLACE_KIND_COUNT; ++kind) {
    int n = 0, d;
    assert_ok(dao_place_device_count((dao_place_kind)kind, &n));
    for (d = 0; d < n && list.count < 64; ++d) {
      dao_place p;
      size_t total = 0;
      p.kind = (dao_place_kind)kind;
      p.device = d;
      assert_ok(dao_place_memory_info(p, NULL, &total));
      list.places[list.count] = p;
      list.host_visible[list.count] = kind != DAO_PLACE_CUDA;
      list.capacity[list.count] = total;
      ++list.count;
    }
  }
  return list;
}

/* alignment, data integrity, usable size, stats, bad frees, destroy rules */
static void basic_contract(dao_allocator *a, int host_visible, size_t capacity) {
  static const size_t sizes[] = {1, 100, 255, 256, 257, 1000, 4096, 65536, 1 << 20, 3 << 20};
  void *ptrs[sizeof sizes / sizeof sizes[0]];
  size_t i, n = sizeof sizes / sizeof sizes[0];
  dao_allocator_stats s;
  void *p = NULL;
  uint64_t requested = 0;
  while (n > 0 && sizes[n - 1] * 4 > capacity) --n; /* keep within small devices */
  for (i = 0; i < n; ++i) {
    size_t usable = 0;
    assert_ok(dao_allocator_alloc(a, sizes[i], NULL, &ptrs[i]));
    assert_true(dao_test_is_aligned(ptrs[i], 256));
    assert_ok(dao_allocator_usable_size(a, ptrs[i], &usable));
    assert_true(usable >= sizes[i]);
    if (host_visible) dao_test_fill(ptrs[i], sizes[i], (unsigned)i);
    requested += sizes[i];
  }
  s = dao_test_stats(a);
  assert_int_equal(s.live_blocks, n);
  assert_int_equal(s.requested_bytes, requested);
  assert_true(s.allocated_bytes >= requested);
  assert_true(s.reserved_bytes >= s.allocated_bytes);
  assert_status(dao_allocator_destroy(a), DAO_ERR_BUSY);
  assert_ok(dao_allocator_alloc(a, 0, NULL, &p));
  assert_null(p);
  for (i = 0; i < n; ++i) {
    if (host_visible) assert_true(dao_test_check(ptrs[i], sizes[i], (unsigned)i));
    assert_status(dao_allocator_free(a, (char *)ptrs[i] + 1), DAO_ERR_INVALID_POINTER);
    assert_ok(dao_allocator_free(a, ptrs[i]));
    assert_status(dao_allocator_free(a, ptrs[i]), DAO_ERR_INVALID_POINTER);
  }
  s = dao_test_stats(a);
  assert_int_equal(s.live_blocks, 0);
  assert_int_equal(s.allocated_bytes, 0);
  assert_int_equal(s.requested_bytes, 0);
  assert_int_equal(s.alloc_count, n);
  assert_int_equal(s.free_count, n);
  assert_ok(dao_allocator_trim(a, NULL));
  assert_int_equal(dao_test_stats(a).reserved_bytes, 0);
}

/* random alloc/free against a model of what must hold */
static void random_model(dao_allocator *a, int host_visible, size_t capacity) {
  enum { slots = 64, steps = 4000 };
  void *ptr[slots] = {NULL};
  size_t size[slots] = {0};
  uint64_t rng = 99, live = 0, requested = 0;
  size_t max_size = capacity / 64 < ((size_t)128 << 10) ? capacity / 64 : ((size_t)128 << 10);
  int step;
  for (step = 0; step < steps; ++step) {
    int k = (int)(dao_test_rand(&rng) % slots);
    if (ptr[k] != NULL) {
      if (host_visible) assert_true(dao_test_check(ptr[k], size[k], (unsigned)k));
      assert_ok(dao_allocator_free(a, ptr[k]));
      requested -= size[k];
      ptr[k] = NULL;
      --live;
    } else {
      size[k] = 1 + (size_t)(dao_test_rand(&rng) % max_size);
      assert_ok(dao_allocator_alloc(a, size[k], NULL, &ptr[k]));
      if (host_visible) dao_test_fill(ptr[k], size[k], (unsigned)k);
      requested += size[k];
      ++live;
    }
  }
  assert_int_equal(dao_test_stats(a).live_blocks, live);
  assert_int_equal(dao_test_stats(a).requested_bytes, requested);
  for (step = 0; step < slots; ++step)
    if (ptr[step]) assert_ok(dao_allocator_free(a, ptr[step]));
}

/* Creates `strategy` with `config` on place k of `list`, checks what it
 * reports, runs the contract and the random model on it and destroys it. */
static void check_one(const place_list *list, int k, const char *strategy, const char *config) {
  dao_allocator *a = NULL;
  dao_place got;
  const char *name = NULL;
  print_message("  %s%s%s on %s:%d\n", strategy, config ? " " : "", config ? config : "",
                dao_place_kind_name(list->places[k].kind), list->places[k].device);
  assert_ok(dao_allocator_create(list->places[k], strategy, config, &a));
  assert_ok(dao_allocator_info(a, &got, &name, NULL));
  assert_int_equal(got.kind, list->places[k].kind);
  assert_int_equal(got.device, list->places[k].device);
  assert_string_equal(name, strategy);
  basic_contract(a, list->host_visible[k], list->capacity[k]);
  random_model(a, list->host_visible[k], list->capacity[k]);
  assert_ok(dao_allocator_destroy(a));
}

static void every_strategy_on_every_place(void **state) {
  place_list list = available_places();
  size_t s;
  int k;
  (void)state;
  assert_true(list.count >= 3); /* cpu and two SIM devices at least */
  assert_true(strategy_count >= 4);
  for (s = 0; s < strategy_count; ++s)
    for (k = 0; k < list.count; ++k) check_one(&list, k, strategies[s], NULL);
}

/* Every strategy over every strategy (`upstream=<below>`): the one on top
 * keeps the same contract whatever it takes its memory from. */
static void every_strategy_over_every_strategy(void **state) {
  place_list list = available_places();
  size_t top, below;
  int k;
  (void)state;
  for (top = 0; top < strategy_count; ++top) {
    for (below = 0; below < strategy_count; ++below) {
      char config[64];
      snprintf(config, sizeof config, "upstream=%s", strategies[below]);
      for (k = 0; k < list.count; ++k) check_one(&list, k, strategies[top], config);
    }
  }
}

static void place_defaults_on_every_place(void **state) {
  place_list list = available_places();
  int k;
  (void)state;
  for (k = 0; k < list.count; ++k) {
    dao_allocator *a = NULL;
    void *p = NULL;
    size_t used = 1;
    assert_ok(dao_place_allocator(list.places[k], &a));
    assert_ok(dao_alloc(list.places[k], 12345, &p));
    assert_true(dao_test_is_aligned(p, 256));
    if (list.host_visible[k]) dao_test_fill(p, 12345, 1);
    assert_ok(dao_used(list.places[k], &used));
    assert_true(used >= 12345);
    if (list.host_visible[k]) assert_true(dao_test_check(p, 12345, 1));
    assert_ok(dao_free(list.places[k], p));
    assert_ok(dao_used(list.places[k], &used));
    assert_int_equal(used, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_strategy_on_every_place),
      cmocka_unit_test(every_strategy_over_every_strategy),
      cmocka_unit_test(place_defaults_on_every_place),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
