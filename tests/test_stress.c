/* Concurrency stress: threads allocate, write, hand blocks to each other and
 * free them, on one shared allocator and on the place defaults; invariants
 * are checked throughout and at the end. Label "stress". */
#include <pthread.h>

#include "dao_test.h"

enum { kThreads = 2, kSteps = 60000, kSlots = 128, kMailbox = 64 };

typedef struct {
  void *ptr;
  size_t size;
  unsigned seed;
} block;

/* A lock-protected mailbox through which blocks cross threads, so that a
 * block is often freed by a thread that did not allocate it. */
static struct {
  pthread_mutex_t lock;
  block items[kMailbox];
  int count;
} mailbox = {PTHREAD_MUTEX_INITIALIZER, {{NULL, 0, 0}}, 0};

static pthread_barrier_t start_line;
static dao_allocator *shared;
static dao_allocator *first_use_seen[kThreads];

static int post(block b) {
  int ok = 0;
  pthread_mutex_lock(&mailbox.lock);
  if (mailbox.count < kMailbox) {
    mailbox.items[mailbox.count++] = b;
    ok = 1;
  }
  pthread_mutex_unlock(&mailbox.lock);
  return ok;
}

static int take(block *b) {
  int ok = 0;
  pthread_mutex_lock(&mailbox.lock);
  if (mailbox.count > 0) {
    *b = mailbox.items[--mailbox.count];
    ok = 1;
  }
  pthread_mutex_unlock(&mailbox.lock);
  return ok;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  block mine[kSlots];
  uint64_t rng = 0x1234567ull + (uint64_t)id * 7919u;
  long errors = 0;
  int step, i;
  memset(mine, 0, sizeof mine);
  pthread_barrier_wait(&start_line);
  /* Both threads race to create the same place default. */
  if (dao_place_allocator(dao_place_sim(1), &first_use_seen[id]) != DAO_OK) ++errors;
  for (step = 0; step < kSteps; ++step) {
    uint64_t r = dao_test_rand(&rng);
    block *b = &mine[r % kSlots];
    if (b->ptr != NULL) {
      if (!dao_test_check(b->ptr, b->size, b->seed)) ++errors;
      if ((r >> 20) % 4 == 0 && post(*b)) {
        b->ptr = NULL; /* the other thread frees it */
        continue;
      }
      if (dao_allocator_free(shared, b->ptr) != DAO_OK) ++errors;
      b->ptr = NULL;
    } else {
      block in;
      if ((r >> 24) % 3 == 0 && take(&in)) {
        if (!dao_test_check(in.ptr, in.size, in.seed)) ++errors;
        if (dao_allocator_free(shared, in.ptr) != DAO_OK) ++errors;
      }
      b->size = (size_t)1 << ((r >> 32) % 17); /* 1 B .. 64 KiB */
      b->size += (size_t)((r >> 40) % 300);
      b->seed = (unsigned)(step * kThreads + id);
      if (dao_allocator_alloc(shared, b->size, NULL, &b->ptr) != DAO_OK) {
        ++errors;
        b->ptr = NULL;
        continue;
      }
      dao_test_fill(b->ptr, b->size, b->seed);
    }
    if (step % 16 == 0) { /* the place defaults, concurrently too */
      void *p = NULL;
      size_t bytes = 1 + (size_t)(r % 5000);
      if (dao_alloc(dao_place_sim(1), bytes, &p) != DAO_OK) ++errors;
      else {
        dao_test_fill(p, bytes, 77);
        if (!dao_test_check(p, bytes, 77)) ++errors;
        if (dao_free(dao_place_sim(1), p) != DAO_OK) ++errors;
      }
    }
  }
  for (i = 0; i < kSlots; ++i) {
    if (mine[i].ptr == NULL) continue;
    if (!dao_test_check(mine[i].ptr, mine[i].size, mine[i].seed)) ++errors;
    if (dao_allocator_free(shared, mine[i].ptr) != DAO_OK) ++errors;
  }
  return (void *)(intptr_t)errors;
}

static void threads_share_an_allocator(void **state) {
  pthread_t threads[kThreads];
  block left;
  int i;
  long errors = 0;
  size_t released = 0, used = 1;
  dao_allocator_stats s;
  (void)state;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB", &shared));
  assert_int_equal(pthread_barrier_init(&start_line, NULL, kThreads), 0);
  for (i = 0; i < kThreads; ++i)
    assert_int_equal(pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (i = 0; i < kThreads; ++i) {
    void *result = NULL;
    assert_int_equal(pthread_join(threads[i], &result), 0);
    errors += (long)(intptr_t)result;
  }
  pthread_barrier_destroy(&start_line);
  while (take(&left)) {
    assert_true(dao_test_check(left.ptr, left.size, left.seed));
    assert_ok(dao_allocator_free(shared, left.ptr));
  }
  assert_int_equal(errors, 0);
  for (i = 1; i < kThreads; ++i) assert_ptr_equal(first_use_seen[i], first_use_seen[0]);
  s = dao_test_stats(shared);
  assert_int_equal(s.live_blocks, 0);
  assert_int_equal(s.allocated_bytes, 0);
  assert_int_equal(s.alloc_count, s.free_count);
  assert_ok(dao_allocator_trim(shared, &released));
  assert_int_equal(dao_test_stats(shared).reserved_bytes, 0);
  assert_ok(dao_allocator_destroy(shared));
  assert_ok(dao_used(dao_place_sim(1), &used));
  assert_int_equal(used, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(threads_share_an_allocator)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
