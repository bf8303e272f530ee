/* Misuse detection (issue 9): the mistakes a program makes with memory and
 * handles are refused with a status and a message that names the object,
 * and change nothing: other live data stays intact, statistics are as
 * before, and the objects keep working.
 *
 *   - double free (place level, and each strategy on CPU and SIM);
 *   - free on the wrong place, or through the wrong allocator;
 *   - free of an interior pointer;
 *   - a handle that is not live: garbage, a zeroed one (what destroy leaves
 *     behind: the magic is cleared before the memory is freed), or a handle
 *     of another type. A really destroyed handle points at freed memory, so
 *     reading it is undefined; those cases are modelled by zeroed copies;
 *   - recycle buffers released too often, released or retained while
 *     queued, submitted twice or to another pool;
 *   - tensors released twice, used after release, or passed to another pool;
 *   - destroying objects that are still in use, or that belong to libdao or
 *     to a collection;
 *   - size-tagged structs whose struct_size is larger than the buffer or
 *     absurd (SIZE_MAX): libdao writes only the fields it knows.
 *
 * The status asserted is the one the header documents for each function.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dao_test.h"

#define MIB ((size_t)1 << 20)
#define BLOCK 4096

/* Asserts that the last error names pointer `p` (as printf's %p prints it). */
static void assert_message_names(const void *p) {
  char text[64];
  snprintf(text, sizeof text, "%p", p);
  if (strstr(dao_last_error(), text) == NULL) {
    print_error("message '%s' does not name the pointer %s\n", dao_last_error(), text);
    fail();
  }
}

static void assert_message_has(const char *needle) {
  if (strstr(dao_last_error(), needle) == NULL) {
    print_error("message '%s' does not mention '%s'\n", dao_last_error(), needle);
    fail();
  }
}

/* Two allocator statistics are equal field by field. */
static void assert_same_stats(const dao_allocator_stats *a, const dao_allocator_stats *b) {
  assert_int_equal(a->allocated_bytes, b->allocated_bytes);
  assert_int_equal(a->peak_allocated_bytes, b->peak_allocated_bytes);
  assert_int_equal(a->requested_bytes, b->requested_bytes);
  assert_int_equal(a->reserved_bytes, b->reserved_bytes);
  assert_int_equal(a->peak_reserved_bytes, b->peak_reserved_bytes);
  assert_int_equal(a->live_blocks, b->live_blocks);
  assert_int_equal(a->alloc_count, b->alloc_count);
  assert_int_equal(a->free_count, b->free_count);
  assert_int_equal(a->failed_alloc_count, b->failed_alloc_count);
  assert_int_equal(a->system_alloc_count, b->system_alloc_count);
  assert_int_equal(a->system_free_count, b->system_free_count);
  assert_int_equal(a->largest_free_block, b->largest_free_block);
}

static void assert_same_recycle_stats(const dao_recycle_stats *a, const dao_recycle_stats *b) {
  assert_int_equal(a->created, b->created);
  assert_int_equal(a->free, b->free);
  assert_int_equal(a->queued, b->queued);
  assert_int_equal(a->held, b->held);
  assert_int_equal(a->acquired, b->acquired);
  assert_int_equal(a->submitted, b->submitted);
  assert_int_equal(a->taken, b->taken);
  assert_int_equal(a->peak_held, b->peak_held);
  assert_int_equal(a->peak_queued, b->peak_queued);
}

static dao_recycle_stats recycle_stats(dao_recycle_pool *pool) {
  dao_recycle_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_recycle_get_stats(pool, &s));
  return s;
}

static dao_tiered_stats tiered_stats(dao_tiered *pool) {
  dao_tiered_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_tiered_get_stats(pool, &s));
  return s;
}

/* The strategies on the places they are tested on. */
typedef struct target {
  const char *strategy;
  dao_place place;
} target;

static target g_targets[6];
static void init_targets(void) {
  g_targets[0].strategy = "buddy";
  g_targets[0].place = dao_place_cpu();
  g_targets[1].strategy = "caching";
  g_targets[1].place = dao_place_cpu();
  g_targets[2].strategy = "system";
  g_targets[2].place = dao_place_cpu();
  g_targets[3].strategy = "buddy";
  g_targets[3].place = dao_place_sim(0);
  g_targets[4].strategy = "caching";
  g_targets[4].place = dao_place_sim(0);
  g_targets[5].strategy = "system";
  g_targets[5].place = dao_place_sim(0);
}

static const char *g_config[3] = {"chunk_size=1MiB", NULL, NULL};
static const char *config_for(const char *strategy) {
  return strcmp(strategy, "buddy") == 0 ? g_config[0] : NULL;
}

/* ------------------------------------------------------------------------- */
/* double free                                                                */

static void double_free_place_level_is_refused(void **state) {
  dao_place places[2];
  int i;
  (void)state;
  places[0] = dao_place_cpu();
  places[1] = dao_place_sim(0);
  for (i = 0; i < 2; ++i) {
    void *keep = NULL, *q = NULL, *again = NULL;
    size_t used = 0, used_after = 0;
    dao_allocator *a = NULL;
    dao_allocator_stats before, after;
    assert_ok(dao_alloc(places[i], BLOCK, &keep));
    dao_test_fill(keep, BLOCK, 21);
    assert_ok(dao_alloc(places[i], 3000, &q));
    assert_ok(dao_free(places[i], q));
    assert_ok(dao_used(places[i], &used));
    assert_ok(dao_place_allocator(places[i], &a));
    before = dao_test_stats(a);

    assert_status(dao_free(places[i], q), DAO_ERR_INVALID_POINTER);
    assert_message_names(q);
    assert_message_has("allocator");

    after = dao_test_stats(a);
    assert_same_stats(&before, &after);
    assert_ok(dao_used(places[i], &used_after));
    assert_int_equal(used, used_after);
    assert_true(dao_test_check(keep, BLOCK, 21));
    /* Still works: the freed block can be had again, and freed once. */
    assert_ok(dao_alloc(places[i], 3000, &again));
    dao_test_fill(again, 3000, 22);
    assert_true(dao_test_check(keep, BLOCK, 21));
    assert_ok(dao_free(places[i], again));
    assert_ok(dao_free(places[i], keep));
  }
}

static void double_free_is_refused_by_every_strategy(void **state) {
  size_t t;
  (void)state;
  for (t = 0; t < 6; ++t) {
    dao_allocator *a = NULL;
    void *keep = NULL, *q = NULL, *r = NULL;
    dao_allocator_stats before, after;
    size_t n = 0;
    assert_ok(dao_allocator_create(g_targets[t].place, g_targets[t].strategy,
                                   config_for(g_targets[t].strategy), &a));
    assert_ok(dao_allocator_alloc(a, BLOCK, NULL, &keep));
    dao_test_fill(keep, BLOCK, 31);
    assert_ok(dao_allocator_alloc(a, 5000, NULL, &q));
    assert_ok(dao_allocator_free(a, q));
    before = dao_test_stats(a);

    assert_status(dao_allocator_free(a, q), DAO_ERR_INVALID_POINTER);
    assert_message_names(q);
    assert_message_has("allocator");
    assert_status(dao_allocator_usable_size(a, q, &n), DAO_ERR_INVALID_POINTER);

    after = dao_test_stats(a);
    assert_same_stats(&before, &after);
    assert_true(dao_test_check(keep, BLOCK, 31));
    assert_ok(dao_allocator_usable_size(a, keep, &n));
    assert_true(n >= BLOCK);
    /* The allocator's bookkeeping is intact: it allocates, frees and, with
     * no live block left, can be destroyed. */
    assert_ok(dao_allocator_alloc(a, 5000, NULL, &r));
    dao_test_fill(r, 5000, 32);
    assert_true(dao_test_check(keep, BLOCK, 31));
    assert_ok(dao_allocator_free(a, r));
    assert_ok(dao_allocator_free(a, keep));
    assert_ok(dao_allocator_destroy(a));
  }
}

/* ------------------------------------------------------------------------- */
/* wrong place, wrong allocator                                               */

static void free_on_the_wrong_place_is_refused(void **state) {
  void *p_sim = NULL, *p_cpu = NULL;
  size_t used_sim = 0, used_cpu = 0, used_sim1 = 0, n = 0;
  (void)state;
  assert_ok(dao_alloc(dao_place_sim(0), BLOCK, &p_sim));
  assert_ok(dao_alloc(dao_place_cpu(), BLOCK, &p_cpu));
  dao_test_fill(p_sim, BLOCK, 41);
  dao_test_fill(p_cpu, BLOCK, 42);
  assert_ok(dao_used(dao_place_sim(0), &used_sim));
  assert_ok(dao_used(dao_place_sim(1), &used_sim1));
  assert_ok(dao_used(dao_place_cpu(), &used_cpu));

  assert_status(dao_free(dao_place_sim(1), p_sim), DAO_ERR_INVALID_POINTER);
  assert_message_names(p_sim);
  assert_status(dao_free(dao_place_cpu(), p_sim), DAO_ERR_INVALID_POINTER);
  assert_message_names(p_sim);
  assert_status(dao_free(dao_place_sim(0), p_cpu), DAO_ERR_INVALID_POINTER);
  assert_message_names(p_cpu);

  assert_ok(dao_used(dao_place_sim(0), &n));
  assert_int_equal(n, used_sim);
  assert_ok(dao_used(dao_place_sim(1), &n));
  assert_int_equal(n, used_sim1);
  assert_ok(dao_used(dao_place_cpu(), &n));
  assert_int_equal(n, used_cpu);
  assert_true(dao_test_check(p_sim, BLOCK, 41));
  assert_true(dao_test_check(p_cpu, BLOCK, 42));
  /* Freed where they belong, they go. */
  assert_ok(dao_free(dao_place_sim(0), p_sim));
  assert_ok(dao_free(dao_place_cpu(), p_cpu));
}

static void free_through_the_wrong_allocator_is_refused(void **state) {
  size_t t;
  (void)state;
  for (t = 0; t < 6; ++t) {
    dao_allocator *a = NULL, *b = NULL, *def = NULL;
    void *p = NULL, *q = NULL, *d = NULL;
    dao_allocator_stats a_before, b_before, after;
    assert_ok(dao_allocator_create(g_targets[t].place, g_targets[t].strategy,
                                   config_for(g_targets[t].strategy), &a));
    assert_ok(dao_allocator_create(g_targets[t].place, g_targets[t].strategy,
                                   config_for(g_targets[t].strategy), &b));
    assert_ok(dao_place_allocator(g_targets[t].place, &def));
    assert_ok(dao_allocator_alloc(a, BLOCK, NULL, &p));
    assert_ok(dao_allocator_alloc(b, BLOCK, NULL, &q));
    assert_ok(dao_alloc(g_targets[t].place, BLOCK, &d));
    dao_test_fill(p, BLOCK, 51);
    dao_test_fill(q, BLOCK, 52);
    dao_test_fill(d, BLOCK, 53);
    a_before = dao_test_stats(a);
    b_before = dao_test_stats(b);

    /* Same strategy, same place, another allocator object. */
    assert_status(dao_allocator_free(b, p), DAO_ERR_INVALID_POINTER);
    assert_message_names(p);
    assert_status(dao_allocator_free(a, q), DAO_ERR_INVALID_POINTER);
    assert_message_names(q);
    /* The place default and an allocator object. */
    assert_status(dao_allocator_free(a, d), DAO_ERR_INVALID_POINTER);
    assert_message_names(d);
    assert_status(dao_free(g_targets[t].place, p), DAO_ERR_INVALID_POINTER);
    assert_message_names(p);
    assert_status(dao_allocator_free(def, q), DAO_ERR_INVALID_POINTER);
    assert_message_names(q);

    after = dao_test_stats(a);
    assert_same_stats(&a_before, &after);
    after = dao_test_stats(b);
    assert_same_stats(&b_before, &after);
    assert_true(dao_test_check(p, BLOCK, 51));
    assert_true(dao_test_check(q, BLOCK, 52));
    assert_true(dao_test_check(d, BLOCK, 53));
    assert_ok(dao_allocator_free(a, p));
    assert_ok(dao_allocator_free(b, q));
    assert_ok(dao_free(g_targets[t].place, d));
    assert_ok(dao_allocator_destroy(a));
    assert_ok(dao_allocator_destroy(b));
  }
}

/* ------------------------------------------------------------------------- */
/* interior pointers                                                          */

static void free_of_an_interior_pointer_is_refused(void **state) {
  size_t t;
  (void)state;
  for (t = 0; t < 6; ++t) {
    dao_allocator *a = NULL;
    char *p = NULL;
    void *vp = NULL;
    const size_t offsets[4] = {1, 256, 512, 8192};
    dao_allocator_stats before, after;
    size_t i, n = 0;
    assert_ok(dao_allocator_create(g_targets[t].place, g_targets[t].strategy,
                                   config_for(g_targets[t].strategy), &a));
    assert_ok(dao_allocator_alloc(a, 3 * BLOCK, NULL, &vp));
    p = (char *)vp;
    dao_test_fill(p, 3 * BLOCK, 61);
    before = dao_test_stats(a);
    for (i = 0; i < 4; ++i) {
      assert_status(dao_allocator_free(a, p + offsets[i]), DAO_ERR_INVALID_POINTER);
      assert_message_names(p + offsets[i]);
      assert_status(dao_allocator_usable_size(a, p + offsets[i], &n), DAO_ERR_INVALID_POINTER);
    }
    after = dao_test_stats(a);
    assert_same_stats(&before, &after);
    assert_true(dao_test_check(p, 3 * BLOCK, 61));
    assert_ok(dao_allocator_usable_size(a, p, &n));
    assert_true(n >= 3 * BLOCK);
    assert_ok(dao_allocator_free(a, p));
    assert_ok(dao_allocator_destroy(a));
  }
}

static void free_of_an_interior_pointer_at_place_level_is_refused(void **state) {
  char *p = NULL;
  void *vp = NULL;
  size_t used = 0, n = 0;
  (void)state;
  assert_ok(dao_alloc(dao_place_sim(1), 3 * BLOCK, &vp));
  p = (char *)vp;
  dao_test_fill(p, 3 * BLOCK, 62);
  assert_ok(dao_used(dao_place_sim(1), &used));
  assert_status(dao_free(dao_place_sim(1), p + 256), DAO_ERR_INVALID_POINTER);
  assert_message_names(p + 256);
  assert_status(dao_free(dao_place_sim(1), p + BLOCK), DAO_ERR_INVALID_POINTER);
  assert_message_names(p + BLOCK);
  assert_ok(dao_used(dao_place_sim(1), &n));
  assert_int_equal(n, used);
  assert_true(dao_test_check(p, 3 * BLOCK, 62));
  assert_ok(dao_free(dao_place_sim(1), p));
}

/* ------------------------------------------------------------------------- */
/* handles that are not live                                                  */

/* 4 KiB that stands in for a handle: garbage, or zeroes (a destroyed handle:
 * destroy clears the magic before freeing). Aligned for every handle type. */
static unsigned char g_handle_bytes[4096] __attribute__((aligned(4096)));

static void check_handles_refused(void) {
  void *h = g_handle_bytes;
  void *p = NULL;
  size_t n = 0;
  int idle = 0;
  dao_buffer *b = NULL;
  dao_tensor *t = NULL;
  dao_recycle_pool *found = NULL;

  assert_status(dao_allocator_alloc((dao_allocator *)h, 64, NULL, &p), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("allocator");
  assert_null(p);
  assert_status(dao_allocator_free((dao_allocator *)h, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_allocator_trim((dao_allocator *)h, &n), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_allocator_destroy((dao_allocator *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_stream_query((dao_stream)h, &idle), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("stream");
  assert_status(dao_stream_destroy((dao_stream)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_event_synchronize((dao_event)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("event");
  assert_status(dao_event_destroy((dao_event)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_recycle_acquire((dao_recycle_pool *)h, 0, &b), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("pool");
  assert_null(b);
  assert_status(dao_recycle_destroy((dao_recycle_pool *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_buffer_release((dao_buffer *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("buffer");
  assert_status(dao_buffer_retain((dao_buffer *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_collection_find((dao_collection *)h, "a", &found), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("collection");
  assert_status(dao_collection_destroy((dao_collection *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_tensor_create((dao_tiered *)h, 64, &t), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("tiered");
  assert_status(dao_tiered_destroy((dao_tiered *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_status(dao_tensor_release((dao_tensor *)h), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_message_has("tensor");
}

static void garbage_handles_are_refused(void **state) {
  (void)state;
  memset(g_handle_bytes, 0xA5, sizeof g_handle_bytes);
  check_handles_refused();
}

static void destroyed_handles_are_refused(void **state) {
  (void)state;
  /* What a destroyed handle's memory holds until it is reused: the magic is
   * cleared first. */
  memset(g_handle_bytes, 0, sizeof g_handle_bytes);
  check_handles_refused();
}

/* Snapshots: only the call that reads no further than the handle itself
 * (a garbage or zeroed snapshot reads as an empty vector). */
static void garbage_and_destroyed_snapshot_handles_are_refused(void **state) {
  size_t n = 12345;
  const dao_snapshot *h = (const dao_snapshot *)(void *)g_handle_bytes;
  (void)state;
  memset(g_handle_bytes, 0xA5, sizeof g_handle_bytes);
  assert_status(dao_snapshot_segment_count(h, &n), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_int_equal(n, 12345);
  memset(g_handle_bytes, 0, sizeof g_handle_bytes);
  assert_status(dao_snapshot_segment_count(h, &n), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(h);
  assert_int_equal(n, 12345);
}

static void handles_of_another_type_are_refused(void **state) {
  dao_allocator *a = NULL;
  dao_stream s = NULL;
  dao_event e = NULL;
  dao_recycle_pool *pool = NULL;
  dao_collection *coll = NULL;
  dao_tiered *tp = NULL;
  dao_tensor *t = NULL;
  dao_buffer *b = NULL;
  size_t shape[1] = {256};
  void *p = NULL, *native = NULL;
  int done = 0;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB", &a));
  assert_ok(dao_stream_create(dao_place_sim(0), &s));
  assert_ok(dao_event_create(dao_place_sim(0), &e));
  assert_ok(dao_recycle_create(dao_place_cpu(), 4, 1, shape, 2, 0, "name=mis", &pool));
  assert_ok(dao_collection_create(&coll));
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &tp));
  assert_ok(dao_tensor_create(tp, 1024, &t));
  assert_ok(dao_recycle_acquire(pool, 0, &b));

  assert_status(dao_allocator_alloc((dao_allocator *)(void *)pool, 64, NULL, &p),
                DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(pool);
  assert_status(dao_allocator_destroy((dao_allocator *)(void *)tp), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(tp);
  assert_status(dao_stream_native((dao_stream)(void *)e, &native), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(e);
  assert_status(dao_stream_destroy((dao_stream)(void *)a), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(a);
  assert_status(dao_event_query((dao_event)(void *)s, &done), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(s);
  assert_status(dao_event_destroy((dao_event)(void *)coll), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(coll);
  assert_status(dao_recycle_close((dao_recycle_pool *)(void *)coll), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(coll);
  assert_status(dao_recycle_destroy((dao_recycle_pool *)(void *)b), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(b);
  assert_status(dao_buffer_release((dao_buffer *)(void *)t), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(t);
  assert_status(dao_collection_close((dao_collection *)(void *)pool), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(pool);
  assert_status(dao_tiered_synchronize((dao_tiered *)(void *)t), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(t);
  assert_status(dao_tensor_release((dao_tensor *)(void *)b), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(b);
  assert_status(dao_tensor_release((dao_tensor *)(void *)tp), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(tp);

  /* Every object still works, and goes away normally. */
  assert_ok(dao_allocator_alloc(a, 64, NULL, &p));
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_event_record(e, s));
  assert_ok(dao_stream_synchronize(s));
  assert_ok(dao_event_query(e, &done));
  assert_int_equal(done, 1);
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_tensor_release(t));
  assert_ok(dao_tiered_synchronize(tp));
  assert_ok(dao_tiered_destroy(tp));
  assert_ok(dao_collection_destroy(coll));
  assert_ok(dao_recycle_destroy(pool));
  assert_ok(dao_event_destroy(e));
  assert_ok(dao_stream_destroy(s));
  assert_ok(dao_allocator_destroy(a));
}

/* ------------------------------------------------------------------------- */
/* recycle buffers                                                            */

static void recycle_buffers_released_too_often_are_refused(void **state) {
  size_t shape[2] = {16, 16};
  dao_recycle_pool *pool = NULL;
  dao_buffer *keep = NULL, *b = NULL, *again = NULL, *other = NULL;
  dao_recycle_stats before, after;
  void *data = NULL;
  (void)state;
  assert_ok(dao_recycle_create(dao_place_cpu(), 4, 2, shape, 3, 0, "name=mis", &pool));
  assert_ok(dao_recycle_acquire(pool, 0, &keep));
  assert_ok(dao_buffer_data(keep, &data));
  dao_test_fill(data, 1024, 71);
  assert_ok(dao_recycle_acquire(pool, 0, &b));
  assert_ok(dao_buffer_retain(b)); /* two references */
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_buffer_release(b)); /* the last: b is free */
  before = recycle_stats(pool);
  assert_int_equal(before.free, 1);

  /* One release too many, and a retain of a free buffer. */
  assert_status(dao_buffer_release(b), DAO_ERR_INVALID_STATE);
  assert_message_names(b);
  assert_message_has("buffer");
  assert_message_has("'mis'");
  assert_status(dao_buffer_release(b), DAO_ERR_INVALID_STATE);
  assert_status(dao_buffer_retain(b), DAO_ERR_INVALID_STATE);
  assert_message_names(b);
  assert_status(dao_recycle_submit(pool, b), DAO_ERR_INVALID_STATE);
  assert_message_names(b);

  after = recycle_stats(pool);
  assert_same_recycle_stats(&before, &after);
  assert_true(dao_test_check(data, 1024, 71));
  /* The free list holds b exactly once: two acquires give b and a new one,
   * then the pool is exhausted (max 3). */
  assert_ok(dao_recycle_acquire(pool, 0, &again));
  assert_ptr_equal(again, b);
  assert_ok(dao_recycle_acquire(pool, 0, &other));
  assert_ptr_not_equal(other, b);
  assert_status(dao_recycle_acquire(pool, 0, &b), DAO_ERR_TIMEOUT);
  after = recycle_stats(pool);
  assert_int_equal(after.created, 3);
  assert_int_equal(after.held, 3);
  assert_int_equal(after.free, 0);
  assert_ok(dao_buffer_release(again));
  assert_ok(dao_buffer_release(other));
  assert_ok(dao_buffer_release(keep));
  assert_ok(dao_recycle_destroy(pool));
}

static void queued_buffers_misused_are_refused(void **state) {
  size_t shape[1] = {256};
  dao_recycle_pool *pool = NULL, *pool2 = NULL;
  dao_buffer *b = NULL, *c = NULL, *taken = NULL;
  dao_recycle_stats before, after;
  void *data = NULL;
  uint64_t seq = 0;
  (void)state;
  assert_ok(dao_recycle_create(dao_place_sim(0), 4, 1, shape, 2, 0, "name=mis", &pool));
  assert_ok(dao_recycle_create(dao_place_sim(0), 4, 1, shape, 2, 0, "name=other", &pool2));
  assert_ok(dao_recycle_acquire(pool, 0, &b));
  assert_ok(dao_recycle_acquire(pool2, 0, &c));
  assert_ok(dao_buffer_data(b, &data));
  dao_test_fill(data, 1024, 81);
  assert_ok(dao_recycle_submit(pool, b)); /* the queue holds b's only reference */
  before = recycle_stats(pool);

  assert_status(dao_buffer_release(b), DAO_ERR_INVALID_STATE);
  assert_message_names(b);
  assert_message_has("queued");
  assert_status(dao_buffer_retain(b), DAO_ERR_INVALID_STATE);
  assert_message_names(b);
  assert_status(dao_recycle_submit(pool, b), DAO_ERR_INVALID_STATE);
  assert_message_names(b);
  assert_message_has("queued");
  /* A buffer of another pool. */
  assert_status(dao_recycle_submit(pool, c), DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(c);
  assert_message_has("'other'");

  after = recycle_stats(pool);
  assert_same_recycle_stats(&before, &after);
  after = recycle_stats(pool2);
  assert_int_equal(after.held, 1);
  assert_int_equal(after.queued, 0);
  /* The queue still gives b, once, with its data and sequence number. */
  assert_ok(dao_recycle_take(pool, 0, &taken));
  assert_ptr_equal(taken, b);
  assert_ok(dao_buffer_sequence(taken, &seq));
  assert_int_equal(seq, 0);
  assert_true(dao_test_check(data, 1024, 81));
  assert_status(dao_recycle_take(pool, 0, &taken), DAO_ERR_TIMEOUT);
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_buffer_release(c));
  assert_ok(dao_recycle_destroy(pool));
  assert_ok(dao_recycle_destroy(pool2));
}

/* ------------------------------------------------------------------------- */
/* tensors                                                                    */

static dao_status copy_kernel(void *user_data, void *const *inputs, size_t input_count,
                              void *const *outputs, size_t output_count, dao_stream stream) {
  (void)user_data, (void)stream;
  if (input_count != 1 || output_count != 1) return DAO_ERR_INTERNAL;
  memcpy(outputs[0], inputs[0], 4096);
  return DAO_OK;
}

static void tensors_released_twice_or_used_after_release_are_refused(void **state) {
  dao_tiered *tp = NULL, *tp2 = NULL;
  dao_tensor *keep = NULL, *dead = NULL, *out = NULL, *foreign = NULL;
  dao_tensor *list[2];
  unsigned char data[4096], back[4096];
  dao_tiered_stats before, after;
  dao_tensor_state st;
  (void)state;
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &tp));
  assert_ok(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), MIB, NULL, &tp2));
  assert_ok(dao_tensor_create(tp, sizeof data, &keep));
  assert_ok(dao_tensor_create(tp, sizeof data, &dead));
  assert_ok(dao_tensor_create(tp, sizeof data, &out));
  assert_ok(dao_tensor_create(tp2, sizeof data, &foreign));
  dao_test_fill(data, sizeof data, 91);
  assert_ok(dao_tensor_write(keep, data, sizeof data));
  assert_ok(dao_tensor_write(dead, data, sizeof data));
  assert_ok(dao_tensor_write(foreign, data, sizeof data));
  assert_ok(dao_tensor_release(dead));
  assert_ok(dao_tiered_synchronize(tp));
  before = tiered_stats(tp);

  /* Released twice. */
  assert_status(dao_tensor_release(dead), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("tensor");
  assert_message_has("released");
  /* Used after release. */
  assert_status(dao_tensor_write(dead, data, sizeof data), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("released");
  assert_status(dao_tensor_read(dead, back, sizeof back), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("released");
  assert_status(dao_tensor_get_state(dead, &st), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("released");
  list[0] = keep;
  list[1] = dead;
  assert_status(dao_kernel_submit(tp, copy_kernel, NULL, list + 1, 1, &out, 1),
                DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("released");
  assert_status(dao_kernel_submit(tp, copy_kernel, NULL, list, 1, list + 1, 1),
                DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("released");
  /* A tensor of another pool. */
  assert_status(dao_kernel_submit(tp, copy_kernel, NULL, &foreign, 1, &out, 1),
                DAO_ERR_INVALID_ARGUMENT);
  assert_message_names(foreign);
  assert_message_has("another");

  assert_ok(dao_tiered_synchronize(tp));
  after = tiered_stats(tp);
  assert_int_equal(before.kernels_submitted, after.kernels_submitted);
  assert_int_equal(before.kernels_run, after.kernels_run);
  assert_int_equal(before.tensors_live, after.tensors_live);
  assert_int_equal(before.device_bytes, after.device_bytes);
  assert_int_equal(before.host_bytes, after.host_bytes);

  /* The pool still works and the live tensors hold their data. */
  assert_ok(dao_kernel_submit(tp, copy_kernel, NULL, &keep, 1, &out, 1));
  assert_ok(dao_tiered_synchronize(tp));
  memset(back, 0, sizeof back);
  assert_ok(dao_tensor_read(out, back, sizeof back));
  assert_true(dao_test_check(back, sizeof back, 91));
  memset(back, 0, sizeof back);
  assert_ok(dao_tensor_read(keep, back, sizeof back));
  assert_true(dao_test_check(back, sizeof back, 91));
  memset(back, 0, sizeof back);
  assert_ok(dao_tensor_read(foreign, back, sizeof back));
  assert_true(dao_test_check(back, sizeof back, 91));
  assert_ok(dao_tensor_release(keep));
  assert_ok(dao_tensor_release(out));
  assert_ok(dao_tensor_release(foreign));
  assert_ok(dao_tiered_destroy(tp));
  assert_ok(dao_tiered_destroy(tp2));
}

/* ------------------------------------------------------------------------- */
/* destroying what is in use                                                  */

static void destroying_objects_in_use_is_refused(void **state) {
  size_t t;
  size_t shape[1] = {64};
  dao_recycle_pool *pool = NULL, *member = NULL;
  dao_collection *coll = NULL;
  dao_buffer *b = NULL, *m = NULL;
  dao_allocator *def = NULL;
  void *data = NULL;
  (void)state;
  for (t = 0; t < 6; ++t) {
    dao_allocator *a = NULL;
    void *p = NULL, *q = NULL;
    assert_ok(dao_allocator_create(g_targets[t].place, g_targets[t].strategy,
                                   config_for(g_targets[t].strategy), &a));
    assert_ok(dao_allocator_alloc(a, BLOCK, NULL, &p));
    assert_ok(dao_allocator_alloc(a, 2 * BLOCK, NULL, &q));
    dao_test_fill(p, BLOCK, 101);
    assert_status(dao_allocator_destroy(a), DAO_ERR_BUSY);
    assert_message_has("2 block");
    assert_message_has(g_targets[t].strategy);
    assert_true(dao_test_check(p, BLOCK, 101));
    assert_ok(dao_allocator_free(a, q));
    assert_status(dao_allocator_destroy(a), DAO_ERR_BUSY);
    assert_message_has("1 block");
    assert_ok(dao_allocator_free(a, p));
    assert_ok(dao_allocator_destroy(a));
  }
  /* The place defaults belong to libdao. */
  assert_ok(dao_place_allocator(dao_place_sim(0), &def));
  assert_status(dao_allocator_destroy(def), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("default");
  assert_ok(dao_allocator_alloc(def, 64, NULL, &data));
  assert_ok(dao_allocator_free(def, data));

  /* Pools and collections with buffers out, a pool of a collection. */
  assert_ok(dao_recycle_create(dao_place_cpu(), 8, 1, shape, 2, 0, "name=mis", &pool));
  assert_ok(dao_recycle_acquire(pool, 0, &b));
  assert_ok(dao_buffer_data(b, &data));
  dao_test_fill(data, 512, 102);
  assert_status(dao_recycle_destroy(pool), DAO_ERR_BUSY);
  assert_message_has("'mis'");
  assert_true(dao_test_check(data, 512, 102));
  assert_ok(dao_collection_create(&coll));
  assert_ok(dao_collection_add(coll, "member", dao_place_cpu(), 8, 1, shape, 2, 0, NULL, &member));
  assert_ok(dao_recycle_acquire(member, 0, &m));
  assert_status(dao_recycle_destroy(member), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("collection");
  assert_status(dao_collection_destroy(coll), DAO_ERR_BUSY);
  assert_message_has("'member'");
  /* Nothing was destroyed. */
  assert_ok(dao_buffer_release(m));
  assert_ok(dao_recycle_acquire(member, 0, &m));
  assert_ok(dao_buffer_release(m));
  assert_ok(dao_buffer_release(b));
  assert_ok(dao_recycle_destroy(pool));
  assert_ok(dao_collection_destroy(coll));
}

/* --- size-tagged structs ------------------------------------------------
 * A struct_size larger than the caller's buffer (an unset field) must not
 * make libdao write past what it knows: it writes the fields of its own
 * version only, and refuses a struct_size no libdao struct can have (above
 * 64 KiB, SIZE_MAX) with nothing written (issue 20). */

typedef dao_status (*sized_out_fn)(void *ctx, void *out);

static void sized_out_case(const char *what, sized_out_fn call, void *ctx, size_t known) {
  static const size_t larger[] = {1, 8, 100, 4096, 65536};
  static const size_t absurd[] = {65537, (size_t)1 << 40, SIZE_MAX / 2, SIZE_MAX};
  size_t i, b, size;
  unsigned char *buf;
  for (i = 0; i < sizeof larger / sizeof larger[0]; ++i) {
    /* The buffer is exactly struct_size bytes (ASan sees any byte past it). */
    size = larger[i] == 65536 ? 65536 : known + larger[i];
    buf = malloc(size);
    assert_non_null(buf);
    memset(buf, 0xA5, size);
    memcpy(buf, &size, sizeof size);
    if (call(ctx, buf) != DAO_OK) {
      print_error("%s, struct_size %zu (known %zu): %s\n", what, size, known, dao_last_error());
      fail();
    }
    for (b = known; b < size; ++b) {
      if (buf[b] != 0xA5) {
        print_error("%s wrote byte %zu of a struct of %zu (it knows %zu)\n", what, b, size, known);
        fail();
      }
    }
    assert_memory_equal(buf, &size, sizeof size); /* the caller's struct_size kept */
    free(buf);
  }
  for (i = 0; i < sizeof absurd / sizeof absurd[0]; ++i) {
    /* Only the bytes it knows exist: a write past them is a heap overflow. */
    buf = malloc(known);
    assert_non_null(buf);
    memset(buf, 0x5A, known);
    memcpy(buf, &absurd[i], sizeof absurd[i]);
    if (call(ctx, buf) != DAO_ERR_INVALID_ARGUMENT) {
      print_error("%s accepted struct_size %zu\n", what, absurd[i]);
      fail();
    }
    assert_message_has("struct_size");
    assert_message_has("65536");
    assert_memory_equal(buf, &absurd[i], sizeof absurd[i]);
    for (b = sizeof(size_t); b < known; ++b) assert_int_equal(buf[b], 0x5A); /* nothing written */
    free(buf);
  }
  /* Smaller than any version: refused, nothing written. */
  buf = malloc(known);
  assert_non_null(buf);
  memset(buf, 0x5A, known);
  size = sizeof(size_t);
  memcpy(buf, &size, sizeof size);
  assert_status(call(ctx, buf), DAO_ERR_INVALID_ARGUMENT);
  assert_message_has("struct_size");
  for (b = sizeof(size_t); b < known; ++b) assert_int_equal(buf[b], 0x5A);
  free(buf);
}

static dao_status call_allocator_stats(void *ctx, void *out) {
  return dao_allocator_get_stats((dao_allocator *)ctx, (dao_allocator_stats *)out);
}
static dao_status call_snapshot_segment(void *ctx, void *out) {
  return dao_snapshot_segment((const dao_snapshot *)ctx, 0, (dao_segment_info *)out);
}
static dao_status call_snapshot_block(void *ctx, void *out) {
  return dao_snapshot_block((const dao_snapshot *)ctx, 0, 0, (dao_block_info *)out);
}
static dao_status call_recycle_stats(void *ctx, void *out) {
  return dao_recycle_get_stats((dao_recycle_pool *)ctx, (dao_recycle_stats *)out);
}
static dao_status call_tiered_stats(void *ctx, void *out) {
  return dao_tiered_get_stats((dao_tiered *)ctx, (dao_tiered_stats *)out);
}
static dao_status call_sim_cost(void *ctx, void *out) {
  (void)ctx;
  return dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, (dao_sim_cost *)out);
}
static dao_status call_comm_info(void *ctx, void *out) {
  return dao_comm_get_info((const dao_comm *)ctx, (dao_comm_info *)out);
}
static dao_status call_whole_info(void *ctx, void *out) {
  return dao_whole_get_info((const dao_whole *)ctx, (dao_whole_info *)out);
}
static dao_status call_whole_partition(void *ctx, void *out) {
  return dao_whole_get_partition((const dao_whole *)ctx, 0, (dao_whole_range *)out);
}
static dao_status call_whole_local(void *ctx, void *out) {
  void *ptr = NULL;
  return dao_whole_get_local((const dao_whole *)ctx, &ptr, (dao_whole_range *)out);
}

static void sized_structs_are_bounded(void **state) {
  dao_allocator *a = NULL;
  dao_snapshot *snap = NULL;
  dao_recycle_pool *pool = NULL;
  dao_tiered *tp = NULL;
  dao_comm *comm = NULL;
  dao_whole *whole = NULL;
  dao_whole_desc desc;
  dao_place place = dao_place_cpu();
  size_t shape[1] = {16};
  void *p = NULL;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching", NULL, &a));
  assert_ok(dao_allocator_alloc(a, BLOCK, NULL, &p));
  assert_ok(dao_allocator_snapshot(a, &snap));
  assert_ok(dao_recycle_create(dao_place_cpu(), 4, 1, shape, 2, 0, "name=sized", &pool));
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &tp));
  assert_ok(dao_comm_create_local(1, &place, &comm));
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.type = DAO_WHOLE_CONTINUOUS;
  desc.location = DAO_WHOLE_HOST;
  desc.total_size = MIB;
  desc.entry_size = 64;
  assert_ok(dao_whole_create(comm, &desc, &whole));

  sized_out_case("dao_allocator_get_stats", call_allocator_stats, a, sizeof(dao_allocator_stats));
  sized_out_case("dao_snapshot_segment", call_snapshot_segment, snap, sizeof(dao_segment_info));
  sized_out_case("dao_snapshot_block", call_snapshot_block, snap, sizeof(dao_block_info));
  sized_out_case("dao_recycle_get_stats", call_recycle_stats, pool, sizeof(dao_recycle_stats));
  sized_out_case("dao_tiered_get_stats", call_tiered_stats, tp, sizeof(dao_tiered_stats));
  sized_out_case("dao_sim_get_cost", call_sim_cost, NULL, sizeof(dao_sim_cost));
  sized_out_case("dao_comm_get_info", call_comm_info, comm, sizeof(dao_comm_info));
  sized_out_case("dao_whole_get_info", call_whole_info, whole, sizeof(dao_whole_info));
  sized_out_case("dao_whole_get_partition", call_whole_partition, whole, sizeof(dao_whole_range));
  sized_out_case("dao_whole_get_local", call_whole_local, whole, sizeof(dao_whole_range));

  /* An input struct of an absurd size is refused too, and nothing made. */
  {
    dao_whole *none = NULL;
    desc.struct_size = SIZE_MAX;
    assert_status(dao_whole_create(comm, &desc, &none), DAO_ERR_INVALID_ARGUMENT);
    assert_message_has("struct_size");
    assert_null(none);
  }

  assert_ok(dao_whole_destroy(whole));
  assert_ok(dao_comm_destroy(comm));
  assert_ok(dao_tiered_destroy(tp));
  assert_ok(dao_recycle_destroy(pool));
  assert_ok(dao_snapshot_destroy(snap));
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_destroy(a));
}

int main(void) {
  const size_t caps[2] = {64 * MIB, 64 * MIB};
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(double_free_place_level_is_refused),
      cmocka_unit_test(double_free_is_refused_by_every_strategy),
      cmocka_unit_test(free_on_the_wrong_place_is_refused),
      cmocka_unit_test(free_through_the_wrong_allocator_is_refused),
      cmocka_unit_test(free_of_an_interior_pointer_is_refused),
      cmocka_unit_test(free_of_an_interior_pointer_at_place_level_is_refused),
      cmocka_unit_test(garbage_handles_are_refused),
      cmocka_unit_test(destroyed_handles_are_refused),
      cmocka_unit_test(garbage_and_destroyed_snapshot_handles_are_refused),
      cmocka_unit_test(handles_of_another_type_are_refused),
      cmocka_unit_test(recycle_buffers_released_too_often_are_refused),
      cmocka_unit_test(queued_buffers_misused_are_refused),
      cmocka_unit_test(tensors_released_twice_or_used_after_release_are_refused),
      cmocka_unit_test(destroying_objects_in_use_is_refused),
      cmocka_unit_test(sized_structs_are_bounded),
  };
  /* Independent of the environment. */
  if (dao_sim_configure(2, caps) != DAO_OK) {
    fprintf(stderr, "dao_sim_configure: %s\n", dao_last_error());
    return 1;
  }
  init_targets();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
