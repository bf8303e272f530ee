/* Stream ordering in the "caching" strategy: reuse per stream, stream-ordered
 * frees while work still uses the block, record_stream (with data that must
 * not be clobbered) and its bad input, threads on streams of their own, and
 * trim, destroy and destroyed streams waiting for or giving back what
 * queued work still uses. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "caching_test_util.h"
#include "caching_test_json.h"

/* ------------------------------------------------------------------------
 * Stream-ordered reuse and record_stream
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false",
                                        "fast_reuse=false,expandable_segments=false"};
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

/* A stream recorded on a block and destroyed before the block's free (issue
 * 20: the allocator kept the destroyed handle and used it at the free, a use
 * after free under ASan): the allocator keeps what it needs of the stream,
 * and the free, the reuse and the destroy all work. */
static void stream_destroyed_before_the_free(void **state) {
  static const char *const configs[] = {NULL, "fast_reuse=false", "expandable_segments=false"};
  size_t c;
  (void)state;
  for (c = 0; c < 3; ++c) {
    dao_allocator *a = make(big_place(), configs[c]);
    dao_stream sa = make_stream(big_place()), sb = make_stream(big_place());
    void *p = alloc_ok(a, 64 * KIB, sa), *q;
    dao_test_fill(p, 64 * KIB, 77);
    assert_ok(dao_allocator_record_stream(a, p, sb));
    drop_stream(sb); /* its work has run; the handle is gone */
    assert_ok(dao_allocator_free(a, p));
    q = alloc_ok(a, 64 * KIB, sa);
    dao_test_fill(q, 64 * KIB, 78);
    assert_ok(dao_allocator_free(a, q));
    assert_ok(dao_stream_synchronize(sa));
    assert_ok(dao_allocator_trim(a, NULL));
    assert_int_equal(dao_test_stats(a).live_blocks, 0);
    drop_stream(sa); /* the allocator is destroyed by the teardown (tracked) */
  }
}

/* A snapshot after the stream of a pool is destroyed reports the segment
 * without touching the destroyed stream (found by fuzz_allocator: a use
 * after free under ASan). */
static void snapshot_after_its_stream_is_gone(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_stream s = make_stream(big_place());
  void *p = alloc_ok(a, 64 * KIB, s);
  dao_snapshot *snap = NULL;
  size_t count = 0;
  (void)state;
  assert_ok(dao_allocator_free(a, p));
  drop_stream(s);
  assert_ok(dao_allocator_snapshot(a, &snap));
  assert_ok(dao_snapshot_segment_count(snap, &count));
  assert_true(count >= 1);
  assert_ok(dao_snapshot_destroy(snap));
}

/* Issue 20, defect 4: a host function that allocates from a caching
   allocator while another thread is inside a call of that allocator that
   waits for the host function's stream: a trim, or an allocation whose
   out-of-memory retry waits for pending work. The waits are made without
   the allocator's lock, so the host function gets it, and both calls
   return. A hang is turned into a failure by a watchdog. */
typedef struct {
  dao_allocator *a;
  size_t bytes; /* 0: trim; else allocate this much on the default stream */
  void *p;
  dao_status status;
  int finished;
} waiting_call;

static void *waiting_call_thread(void *arg) {
  waiting_call *c = (waiting_call *)arg;
  c->status = c->bytes == 0 ? dao_allocator_trim(c->a, NULL)
                            : dao_allocator_alloc(c->a, c->bytes, NULL, &c->p);
  __atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void host_fn_allocates_while_another_call_waits(void **state) {
  static const char *const configs[] = {NULL, "expandable_segments=false", "fast_reuse=false"};
  size_t c;
  int retry;
  (void)state;
  for (c = 0; c < 3; ++c) {
    for (retry = 0; retry < 2; ++retry) {
      /* The retry case: 6 of the small place's 8 MiB cached on the
         stream, so that 6 MiB on the default stream needs them back. */
      const dao_place place = retry ? small_place() : big_place();
      dao_allocator *a = make(place, configs[c]);
      dao_stream sa = make_stream(place);
      static allocating_fn fn;
      waiting_call call;
      pthread_t thread;
      assert_ok(dao_allocator_free(a, alloc_ok(a, 6 * MIB, sa)));
      gate_init(&fn.g);
      fn.a = a;
      fn.status = DAO_ERR_INTERNAL;
      assert_ok(dao_launch_host_func(sa, gated_alloc_fn, &fn));
      gate_wait_entered(&fn.g);
      memset(&call, 0, sizeof call);
      call.a = a;
      call.bytes = retry ? 6 * MIB : 0;
      call.status = DAO_ERR_INTERNAL;
      assert_int_equal(pthread_create(&thread, NULL, waiting_call_thread, &call), 0);
      {
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL); /* lets the call start waiting; not needed to pass */
      }
      gate_open(&fn.g);
      wait_or_die(&call.finished, retry ? "host_fn_allocates_while_another_call_waits: the "
                                          "allocation"
                                        : "host_fn_allocates_while_another_call_waits: the trim");
      assert_int_equal(pthread_join(thread, NULL), 0);
      assert_ok(dao_stream_synchronize(sa));
      assert_int_equal(fn.status, DAO_OK);
      assert_int_equal(call.status, DAO_OK);
      if (call.p != NULL) assert_ok(dao_allocator_free(a, call.p));
      gate_destroy(&fn.g);
      destroy(a);
      drop_stream(sa);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(reuse_is_per_stream, baseline, cleanup),
      cmocka_unit_test_setup_teardown(record_stream_defers_reuse, baseline, cleanup),
      cmocka_unit_test_setup_teardown(record_stream_waits_for_every_stream, baseline, cleanup),
      cmocka_unit_test_setup_teardown(destroy_with_pending_free, baseline, cleanup),
      cmocka_unit_test_setup_teardown(release_waits_for_queued_work, baseline, cleanup),
      cmocka_unit_test_setup_teardown(destroyed_streams_give_their_cache_back, baseline, cleanup),
      cmocka_unit_test_setup_teardown(concurrent_streams, baseline, cleanup),
      cmocka_unit_test_setup_teardown(record_stream_bad_input, baseline, cleanup),
      cmocka_unit_test_setup_teardown(stream_destroyed_before_the_free, baseline, cleanup),
      cmocka_unit_test_setup_teardown(snapshot_after_its_stream_is_gone, baseline, cleanup),
      cmocka_unit_test_setup_teardown(record_stream_foreign_place_stream, baseline, cleanup),
      cmocka_unit_test_setup_teardown(host_fn_allocates_while_another_call_waits, baseline,
                                      cleanup),
  };
  if (!no_caching_is(0)) return 2;
  return cmocka_run_group_tests_name("caching_streams", tests, setup, NULL);
}
