/* Recycle pool stress: 4 producers and 4 consumers pass 1,000,000 buffers
 * through one pool of 64 buffers (16 preallocated, the rest made lazily
 * while the threads race). Checks, throughout and at the end:
 *   - no loss and no duplication: every (producer, counter) pair is seen by
 *     exactly one consumer, exactly once;
 *   - no buffer is handed to two holders: each buffer (by its data
 *     pointer) has an "in use" flag that every holder sets with a
 *     compare-and-swap on getting the buffer and clears before giving it
 *     back (the flags sit in a table of their own: a new buffer's memory is
 *     not zeroed, and a flag in it would start as garbage);
 *   - data travels with the buffer: the consumer finds what the producer
 *     wrote, including the buffer's own handle;
 *   - order: each consumer takes buffers in increasing sequence number, so
 *     it sees each producer's counters in increasing order;
 *   - references: some producers keep a reference across submit and read
 *     the buffer after it is queued; some consumers retain and release;
 *   - statistics read while the threads run: created = free + queued + held
 *     in every read, each count within the pool's size, peaks within it,
 *     and no counter, peak or created ever goes down between two reads;
 *   - at the end every buffer is free and the statistics add up.
 * Label "stress". About 0.25 s on two cores, 3.5 s under ThreadSanitizer. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>

#include "dao_test.h"

#ifndef DAO_STRESS_TOTAL
#define DAO_STRESS_TOTAL 1000000
#endif

enum {
  kProducers = 4,
  kConsumers = 4,
  kTotal = DAO_STRESS_TOTAL,
  kPerProducer = kTotal / kProducers,
  kPoolBuffers = 64,
  kPreallocate = 16
};

/* What a producer writes into a buffer (the buffer is 256 bytes). */
typedef struct {
  int producer;
  uint32_t counter;       /* per producer: 0, 1, 2, ... */
  uint32_t check;         /* a function of producer and counter */
  const dao_buffer *self; /* the handle the producer filled it through */
  unsigned char pattern[64];
} message;

static dao_recycle_pool *pool;
static unsigned char seen[kProducers][kPerProducer]; /* __atomic counts */
static long errors;                                  /* __atomic */
static pthread_barrier_t start_line;

static void error_at(const char *what) {
  if (__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED) < 10) fprintf(stderr, "error: %s\n", what);
}

static uint32_t check_of(int producer, uint32_t counter) {
  return (uint32_t)producer * 2654435761u ^ counter * 40503u ^ 0x5a5a5a5au;
}

static message *message_of(dao_buffer *b) {
  void *p = NULL;
  if (dao_buffer_data(b, &p) != DAO_OK || p == NULL) {
    error_at("dao_buffer_data failed");
    return NULL;
  }
  return (message *)p;
}

/* The "in use" flags, one per buffer, found by data pointer in an
   open-addressing table that threads fill as they meet new buffers. */
enum { kFlagSlots = 4 * kPoolBuffers };
static struct {
  void *data; /* __atomic: 0 until a thread claims the slot for a buffer */
  int in_use; /* __atomic */
} flags[kFlagSlots];

static int *in_use_flag(message *m) {
  size_t slot = ((uintptr_t)m >> 8) % kFlagSlots, probes;
  for (probes = 0; probes < kFlagSlots; ++probes, slot = (slot + 1) % kFlagSlots) {
    void *key = __atomic_load_n(&flags[slot].data, __ATOMIC_ACQUIRE);
    if (key == NULL) {
      void *expected = NULL;
      if (__atomic_compare_exchange_n(&flags[slot].data, &expected, (void *)m, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return &flags[slot].in_use;
      key = expected;
    }
    if (key == (void *)m) return &flags[slot].in_use;
  }
  error_at("more buffers than the pool may have");
  return &flags[0].in_use;
}

/* Marks the buffer in use; fails when another holder has it. */
static int claim(message *m) {
  int expected = 0;
  return __atomic_compare_exchange_n(in_use_flag(m), &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED);
}

static void unclaim(message *m) { __atomic_store_n(in_use_flag(m), 0, __ATOMIC_RELEASE); }

static void *producer_main(void *arg) {
  const int id = (int)(intptr_t)arg;
  uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
  uint32_t counter;
  pthread_barrier_wait(&start_line);
  for (counter = 0; counter < (uint32_t)kPerProducer; ++counter) {
    const uint64_t r = dao_test_rand(&rng);
    dao_buffer *b = NULL;
    message *m;
    int keep = (r & 63) == 0; /* keep a reference across submit */
    dao_status st;
    /* Mostly block; sometimes try once first (timeouts are normal then). */
    if ((r >> 8) % 4 == 0) {
      st = dao_recycle_acquire(pool, 0, &b);
      if (st == DAO_ERR_TIMEOUT) st = dao_recycle_acquire(pool, -1, &b);
    } else {
      st = dao_recycle_acquire(pool, -1, &b);
    }
    if (st != DAO_OK) {
      error_at("acquire failed");
      continue;
    }
    m = message_of(b);
    if (m == NULL) continue;
    if (!claim(m)) error_at("acquire handed out a buffer that someone holds");
    {
      uint64_t seq = 0;
      if (dao_buffer_sequence(b, &seq) != DAO_OK || seq != UINT64_MAX)
        error_at("an acquired buffer has a sequence number");
    }
    m->producer = id;
    m->counter = counter;
    m->check = check_of(id, counter);
    m->self = b;
    memset(m->pattern, (int)(counter & 0xff), sizeof m->pattern);
    unclaim(m);
    if (keep && dao_buffer_retain(b) != DAO_OK) error_at("retain before submit failed");
    if (dao_recycle_submit(pool, b) != DAO_OK) error_at("submit failed");
    if (keep) {
      /* Still ours to read: nobody may write it until we release. */
      if (m->producer != id || m->counter != counter || m->check != check_of(id, counter))
        error_at("a buffer still referenced was handed out and rewritten");
      if (dao_buffer_release(b) != DAO_OK) error_at("release of the kept reference failed");
    }
  }
  return NULL;
}

typedef struct {
  int id;
  long taken;
} consumer_state;

static void *consumer_main(void *arg) {
  consumer_state *c = (consumer_state *)arg;
  uint64_t rng = 0xc0ffee123ull * (uint64_t)(c->id + 7);
  uint64_t last_sequence = 0;
  int have_sequence = 0;
  int64_t last_counter[kProducers];
  int i;
  for (i = 0; i < kProducers; ++i) last_counter[i] = -1;
  pthread_barrier_wait(&start_line);
  for (;;) {
    const uint64_t r = dao_test_rand(&rng);
    dao_buffer *b = NULL;
    message *m;
    uint64_t sequence = 0;
    dao_status st;
    if ((r & 7) == 0) {
      st = dao_recycle_take(pool, 0, &b);
      if (st == DAO_ERR_TIMEOUT) st = dao_recycle_take(pool, -1, &b);
    } else {
      st = dao_recycle_take(pool, -1, &b);
    }
    if (st == DAO_ERR_CLOSED) break;
    if (st != DAO_OK) {
      error_at("take failed");
      break;
    }
    ++c->taken;
    m = message_of(b);
    if (m == NULL) continue;
    if (!claim(m)) error_at("take handed out a buffer that someone holds");
    if (m->self != b) error_at("the data is not the buffer's own");
    if (m->producer < 0 || m->producer >= kProducers || m->counter >= (uint32_t)kPerProducer ||
        m->check != check_of(m->producer, m->counter)) {
      error_at("the data is not what a producer wrote");
    } else {
      unsigned char expected = (unsigned char)(m->counter & 0xff);
      size_t k;
      for (k = 0; k < sizeof m->pattern; ++k)
        if (m->pattern[k] != expected) {
          error_at("the pattern changed between submit and take");
          break;
        }
      if (__atomic_fetch_add(&seen[m->producer][m->counter], 1, __ATOMIC_RELAXED) != 0)
        error_at("a (producer, counter) pair was taken twice");
      if ((int64_t)m->counter <= last_counter[m->producer])
        error_at("a consumer saw one producer's buffers out of order");
      last_counter[m->producer] = (int64_t)m->counter;
    }
    if (dao_buffer_sequence(b, &sequence) != DAO_OK) error_at("sequence failed");
    if (have_sequence && sequence <= last_sequence) error_at("take out of submission order");
    last_sequence = sequence;
    have_sequence = 1;
    if ((r >> 16) % 16 == 0) {
      if (dao_buffer_retain(b) != DAO_OK) error_at("retain of a taken buffer failed");
      if (dao_buffer_release(b) != DAO_OK) error_at("release of the extra reference failed");
    }
    unclaim(m);
    if (dao_buffer_release(b) != DAO_OK) error_at("release failed");
  }
  return NULL;
}

static int stats_done; /* __atomic: the stats reader stops */
static long stats_reads;

/* Reads the statistics over and over while producers and consumers run
 * (at least once, however the threads are scheduled). */
static void *stats_main(void *arg) {
  dao_recycle_stats last, s;
  (void)arg;
  memset(&last, 0, sizeof last);
  do {
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (dao_recycle_get_stats(pool, &s) != DAO_OK) {
      error_at("stats: get_stats failed");
      break;
    }
    ++stats_reads;
    if (s.created != s.free + s.queued + s.held) error_at("stats: created != free + queued + held");
    if (s.created > kPoolBuffers || s.created < kPreallocate)
      error_at("stats: created out of range");
    if (s.peak_free > kPoolBuffers || s.peak_queued > kPoolBuffers || s.peak_held > kPoolBuffers)
      error_at("stats: a peak above the pool's size");
    if (s.created < last.created || s.acquired < last.acquired || s.submitted < last.submitted ||
        s.taken < last.taken || s.peak_free < last.peak_free || s.peak_queued < last.peak_queued ||
        s.peak_held < last.peak_held || s.acquire_waits < last.acquire_waits ||
        s.take_waits < last.take_waits)
      error_at("stats: a counter went down");
    last = s;
    sched_yield(); /* leave the cores to the pipeline's threads */
  } while (!__atomic_load_n(&stats_done, __ATOMIC_ACQUIRE));
  return NULL;
}

static void producers_and_consumers(void **state) {
  const size_t shape[1] = {256};
  pthread_t producers[kProducers], consumers[kConsumers], stats_reader;
  consumer_state cs[kConsumers];
  dao_recycle_stats s;
  long taken = 0;
  int i, p;
  (void)state;

  assert_true(sizeof(message) <= 256);
  assert_ok(dao_recycle_create(dao_place_cpu(), 1, 1, shape, kPoolBuffers, kPreallocate,
                               "name=stress", &pool));
  pthread_barrier_init(&start_line, NULL, kProducers + kConsumers);
  for (i = 0; i < kConsumers; ++i) {
    cs[i].id = i;
    cs[i].taken = 0;
    assert_int_equal(pthread_create(&consumers[i], NULL, consumer_main, &cs[i]), 0);
  }
  assert_int_equal(pthread_create(&stats_reader, NULL, stats_main, NULL), 0);
  for (i = 0; i < kProducers; ++i)
    assert_int_equal(pthread_create(&producers[i], NULL, producer_main, (void *)(intptr_t)i), 0);
  for (i = 0; i < kProducers; ++i) assert_int_equal(pthread_join(producers[i], NULL), 0);
  /* Every buffer is submitted: close, and the consumers drain the queue. */
  assert_ok(dao_recycle_close(pool));
  for (i = 0; i < kConsumers; ++i) {
    assert_int_equal(pthread_join(consumers[i], NULL), 0);
    taken += cs[i].taken;
  }
  __atomic_store_n(&stats_done, 1, __ATOMIC_RELEASE);
  assert_int_equal(pthread_join(stats_reader, NULL), 0);
  assert_true(stats_reads >= 1);
  pthread_barrier_destroy(&start_line);

  assert_int_equal(__atomic_load_n(&errors, __ATOMIC_RELAXED), 0);
  assert_int_equal(taken, kTotal);
  for (p = 0; p < kProducers; ++p)
    for (i = 0; i < kPerProducer; ++i)
      if (seen[p][i] != 1) {
        print_error("producer %d counter %d seen %d times\n", p, i, seen[p][i]);
        fail();
      }

  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_recycle_get_stats(pool, &s));
  assert_int_equal(s.acquired, kTotal);
  assert_int_equal(s.submitted, kTotal);
  assert_int_equal(s.taken, kTotal);
  assert_int_equal(s.held, 0);
  assert_int_equal(s.queued, 0);
  assert_int_equal(s.free, s.created);
  assert_true(s.created >= kPreallocate && s.created <= kPoolBuffers);
  {
    uint64_t distinct = 0;
    for (i = 0; i < kFlagSlots; ++i) {
      if (flags[i].data == NULL) continue;
      ++distinct;
      assert_int_equal(flags[i].in_use, 0);
    }
    assert_int_equal(distinct, s.created); /* every buffer made was used */
  }
  assert_true(s.peak_free <= s.created);
  assert_true(s.peak_held <= s.created);
  assert_true(s.peak_queued <= s.created);
  assert_true(s.peak_queued >= 1);
  assert_true(s.peak_held >= 1);
  printf("recycle stress: %d buffers, %llu created, peaks free/queued/held %llu/%llu/%llu, "
         "waits acquire/take %llu/%llu, timeouts %llu, %ld statistics reads meanwhile\n",
         kTotal, (unsigned long long)s.created, (unsigned long long)s.peak_free,
         (unsigned long long)s.peak_queued, (unsigned long long)s.peak_held,
         (unsigned long long)s.acquire_waits, (unsigned long long)s.take_waits,
         (unsigned long long)s.timeouts, stats_reads);
  assert_ok(dao_recycle_destroy(pool));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(producers_and_consumers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
