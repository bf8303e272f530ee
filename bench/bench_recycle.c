/*
 * bench_recycle: buffers per second through a libdao recycle pool
 * (acquire -> submit -> take -> release) with 1 and 2 producer/consumer
 * pairs, against two baselines written here, all in one run:
 *
 *  - malloc/free per buffer, handed over through a bounded queue guarded by
 *    a mutex and two condition variables (the straightforward pipeline);
 *  - a preallocated free list (a stack: the buffer released last goes out
 *    first) and a queue, both guarded the same way (a straightforward
 *    recycling pool without libdao).
 *
 * Each producer writes one 64-bit word through the data pointer of each
 * buffer (its running number); each consumer reads it and sums. With
 * --touch the producer fills the whole buffer and the consumer reads all of
 * it (a real pipeline's case: the data crosses between the two cores).
 * --sweep runs buffer sizes 4 KiB, 64 KiB, 1 MiB and 16 MiB, each with one
 * word and with every byte touched, and prints buffers/s and GB/s of every
 * row and whether libdao kept up with the mutex free list in each. --place
 * puts the libdao pools (and the baselines' buffers, through dao_alloc) on
 * a SIM or CUDA place instead of the CPU. A
 * repetition moves --buffers buffers in all, split evenly over the pairs;
 * only the movement is timed (threads are started and waiting before the
 * clock starts). The rows are timed in rounds, one repetition of every row
 * per round (every other round in the reverse order), so that a slow spell
 * of a shared machine falls on all rows alike; the median and the best
 * repetition are reported, and the CPU time the threads' loops took per
 * buffer (spinning counts, sleeping does not). Whether libdao keeps up with
 * the mutex free list is judged by the median over the rounds of the two
 * rows' ratio in the same round. --rows runs only some of the rows.
 *
 * For the libdao rows, every buffer of the pool is created up front
 * (preallocate = --pool), and the pool's `created` statistic and
 * dao_used_internal() of its place are read before and after every timed
 * repetition: in steady state neither may change (no buffer created, no
 * memory taken from the place). Measured figures: docs/recycle.md.
 *
 * Exit status: 0 when every row ran without error and the libdao rows
 * allocated nothing in steady state (timings never fail a run), 1 otherwise,
 * 2 for bad flags.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */

#include <dao.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#ifndef DAO_BENCH_BUILD_TYPE
#define DAO_BENCH_BUILD_TYPE ""
#endif

#define MAX_PAIRS 2
#define MAX_THREADS (2 * MAX_PAIRS)
#define MAX_REPS 1000u
#define TARGET_ONE_PAIR 10e6 /* buffers/s at 4 KiB on a quiet machine (issue 22) */
#define SWEEP_SIZES 4

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

enum { ROW_DAO = 1, ROW_MALLOC = 2, ROW_FREELIST = 4, ROW_ALL = 7 };

typedef struct options {
  uint64_t buffers; /* per repetition, over all pairs */
  uint64_t size;    /* bytes per buffer */
  uint64_t pool;    /* buffers per pool / queue capacity */
  uint64_t reps;
  const char *config; /* the libdao pools' config string */
  int touch;          /* fill and read every byte */
  int sweep;          /* sizes 4 KiB .. 16 MiB, one word and touched */
  int have_buffers, have_reps, have_pool;
  int rows;        /* which rows run: ROW_* bits */
  dao_place place; /* of the libdao pools and the baselines' buffers */
  const char *place_name;
} options;

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [--buffers N] [--size BYTES] [--pool N] [--reps N] [--config STR]\n"
          "       [--touch] [--sweep] [--place cpu|sim|cuda] [--rows LIST] [--quick]\n"
          "\n"
          "Buffers per second through acquire -> submit -> take -> release of a libdao\n"
          "recycle pool with 1 and 2 producer/consumer pairs (threads), and through two\n"
          "baselines: malloc/free per buffer with a mutex+condvar queue, and a\n"
          "preallocated mutex+condvar free list (a stack) and queue. Producers write one\n"
          "word per buffer, consumers read it (--touch: every byte).\n"
          "\n"
          "  --buffers N  buffers per repetition, over all pairs, default 1000000\n"
          "  --size BYTES bytes per buffer (>= 8), default 4096\n"
          "  --pool N     buffers in each pool, and the capacity of each queue, default 64\n"
          "  --reps N     repetitions (rounds) per row; the median and the best are shown,\n"
          "               default 5; libdao and the mutex free list are also compared\n"
          "               round by round (the median of the paired ratios)\n"
          "  --config STR config string of the libdao pools, default \"name=bench\"\n"
          "               (for example \"spin=0\": sleep at once when a call must wait)\n"
          "  --touch      producers fill whole buffers, consumers read all of them\n"
          "  --sweep      sizes 4 KiB, 64 KiB, 1 MiB, 16 MiB, one word and --touch each;\n"
          "               100,000 buffers per repetition (20,000 of 16 MiB), 4 GiB of\n"
          "               them touched (--buffers caps both), pools of at most 256 MiB\n"
          "               (--pool caps them), 3 reps unless --reps, and three times\n"
          "               as many of a third of the buffers each where every byte of\n"
          "               1 MiB or more is touched (memory-bound, noisiest cells)\n"
          "  --place P    cpu (default), sim (SIM device 0; 1 GiB unless DAO_SIM_DEVICES\n"
          "               says otherwise) or cuda (device 0): where the libdao pools and\n"
          "               the baselines' buffers live (the baselines then use dao_alloc\n"
          "               and dao_free on that place instead of malloc and free)\n"
          "  --rows LIST  the rows to run, comma-separated: dao, malloc, freelist\n"
          "               (default all three)\n"
          "  --quick      small run for CI smoke tests: 20000 buffers, 3 reps\n"
          "               (flags given explicitly still win)\n"
          "  --help       this text\n"
          "\n"
          "Exit status: 0 ok (timings never fail a run), 1 a row failed or a libdao pool\n"
          "allocated in steady state, 2 bad flags.\n",
          prog);
}

static void parse_options(int argc, char **argv, options *o) {
  static const char *const valued[] = {"--buffers", "--size",  "--pool", "--reps",
                                       "--config",  "--place", "--rows"};
  const char *prog = argv[0];
  int quick = 0, have_buffers = 0, have_reps = 0, i;
  o->buffers = 1000000;
  o->size = 4096;
  o->pool = 64;
  o->reps = 5;
  o->config = "name=bench";
  o->touch = o->sweep = o->have_pool = 0;
  o->place = dao_place_cpu();
  o->place_name = "cpu";
  o->rows = ROW_ALL;
  for (i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char *value = NULL, *flag = NULL;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout, prog);
      exit(0);
    }
    if (strcmp(arg, "--quick") == 0) {
      quick = 1;
      continue;
    }
    if (strcmp(arg, "--touch") == 0) {
      o->touch = 1;
      continue;
    }
    if (strcmp(arg, "--sweep") == 0) {
      o->sweep = 1;
      continue;
    }
    /* "--flag N" or "--flag=N". */
    flag =
        match_valued_flag(prog, argc, argv, &i, valued, sizeof valued / sizeof valued[0], &value);
    if (flag == NULL) bad_flag(prog, "unknown argument '%s'", arg);
    if (strcmp(flag, "--buffers") == 0) {
      o->buffers = parse_count(prog, flag, value, MAX_PAIRS, 1000000000000ull);
      have_buffers = 1;
    } else if (strcmp(flag, "--size") == 0) {
      o->size = parse_count(prog, flag, value, 8, (uint64_t)1 << 30);
    } else if (strcmp(flag, "--pool") == 0) {
      o->pool = parse_count(prog, flag, value, 1, 1000000);
      o->have_pool = 1;
    } else if (strcmp(flag, "--place") == 0) {
      if (strcmp(value, "cpu") == 0) {
        o->place = dao_place_cpu();
      } else if (strcmp(value, "sim") == 0) {
        o->place = dao_place_sim(0);
      } else if (strcmp(value, "cuda") == 0) {
        o->place = dao_place_cuda(0);
      } else {
        bad_flag(prog, "--place: '%s' is not cpu, sim or cuda", value);
      }
      o->place_name = value;
    } else if (strcmp(flag, "--rows") == 0) {
      const char *at = value;
      o->rows = 0;
      while (*at != '\0') {
        size_t len = strcspn(at, ",");
        if (len == 3 && strncmp(at, "dao", len) == 0) {
          o->rows |= ROW_DAO;
        } else if (len == 6 && strncmp(at, "malloc", len) == 0) {
          o->rows |= ROW_MALLOC;
        } else if (len == 8 && strncmp(at, "freelist", len) == 0) {
          o->rows |= ROW_FREELIST;
        } else {
          bad_flag(prog, "--rows: '%.*s' is not dao, malloc or freelist", (int)len, at);
        }
        at += len;
        if (*at == ',') ++at;
      }
      if (o->rows == 0) bad_flag(prog, "--rows: name at least one of dao, malloc, freelist");
    } else if (strcmp(flag, "--config") == 0) {
      o->config = value; /* checked by dao_recycle_create */
    } else {
      o->reps = parse_count(prog, flag, value, 1, MAX_REPS);
      have_reps = 1;
    }
  }
  if (quick) {
    if (!have_buffers) o->buffers = 20000;
    if (!have_reps) o->reps = 3;
  }
  if (o->sweep && !quick && !have_reps) o->reps = 3;
  o->have_buffers = have_buffers;
  o->have_reps = have_reps;
}

/* ------------------------------------------------------------------------ */
/* Rows                                                                     */

typedef enum row_kind { KIND_DAO, KIND_MALLOC, KIND_FREELIST } row_kind;

/* A bounded FIFO of pointers guarded by a mutex and two condition
   variables: the baselines' queue. `closed` wakes everybody on an error. */
typedef struct mc_queue {
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  void **ring;
  size_t capacity, head, count;
  int closed;
} mc_queue;

typedef struct row {
  const char *label;
  row_kind kind;
  int pairs;
  int failed;
  int skipped;     /* not asked for (--rows) */
  size_t size;     /* bytes per buffer */
  int touch;       /* fill and read every byte */
  int host_data;   /* the host can write the buffers (not a CUDA place) */
  dao_place place; /* of the pool and of the baselines' buffers */
  char note[512];
  double *seconds; /* per repetition */
  double median_rate, best_rate;
  double last_cpu; /* CPU seconds of all its threads' loops in the last run */
  double cpu;      /* the same, over the timed repetitions */
  /* KIND_DAO */
  dao_recycle_pool *pool;
  uint64_t created_before, created_after; /* first and last timed repetition */
  size_t used_before, used_after;
  uint64_t steady_allocations; /* buffers created + reps where dao_used_internal moved */
  uint64_t waits;              /* acquire and take waits in timed repetitions */
  /* KIND_MALLOC (filled) and KIND_FREELIST (filled and free) */
  mc_queue filled, free_list;
  void **buffers; /* KIND_FREELIST: the preallocated buffers */
} row;

static void set_failed(row *r, const char *fmt, ...) {
  va_list ap;
  if (r->failed) return;
  r->failed = 1;
  va_start(ap, fmt);
  vsnprintf(r->note, sizeof r->note, fmt, ap);
  va_end(ap);
}

static int queue_init(mc_queue *q, size_t capacity) {
  memset(q, 0, sizeof *q);
  q->ring = (void **)calloc(capacity, sizeof *q->ring);
  if (q->ring == NULL) return 0;
  q->capacity = capacity;
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->not_empty, NULL);
  pthread_cond_init(&q->not_full, NULL);
  return 1;
}

static void queue_destroy(mc_queue *q) {
  if (q->ring == NULL) return;
  pthread_cond_destroy(&q->not_full);
  pthread_cond_destroy(&q->not_empty);
  pthread_mutex_destroy(&q->mu);
  free(q->ring);
  q->ring = NULL;
}

/* The free list of the mutex baseline: a stack (the buffer pushed last
   goes out first, as libdao's free list does). NULL when closed. */
static void *queue_pop_top(mc_queue *q) {
  void *p;
  pthread_mutex_lock(&q->mu);
  while (q->count == 0 && !q->closed) pthread_cond_wait(&q->not_empty, &q->mu);
  if (q->closed) {
    pthread_mutex_unlock(&q->mu);
    return NULL;
  }
  --q->count;
  p = q->ring[(q->head + q->count) % q->capacity];
  pthread_cond_signal(&q->not_full);
  pthread_mutex_unlock(&q->mu);
  return p;
}

/* 0 when the queue was closed. */
static int queue_push(mc_queue *q, void *p) {
  pthread_mutex_lock(&q->mu);
  while (q->count == q->capacity && !q->closed) pthread_cond_wait(&q->not_full, &q->mu);
  if (q->closed) {
    pthread_mutex_unlock(&q->mu);
    return 0;
  }
  q->ring[(q->head + q->count) % q->capacity] = p;
  ++q->count;
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->mu);
  return 1;
}

/* NULL when the queue was closed. */
static void *queue_pop(mc_queue *q) {
  void *p;
  pthread_mutex_lock(&q->mu);
  while (q->count == 0 && !q->closed) pthread_cond_wait(&q->not_empty, &q->mu);
  if (q->closed) {
    pthread_mutex_unlock(&q->mu);
    return NULL;
  }
  p = q->ring[q->head];
  q->head = (q->head + 1) % q->capacity;
  --q->count;
  pthread_cond_signal(&q->not_full);
  pthread_mutex_unlock(&q->mu);
  return p;
}

static void queue_close(mc_queue *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  pthread_cond_broadcast(&q->not_empty);
  pthread_cond_broadcast(&q->not_full);
  pthread_mutex_unlock(&q->mu);
}

/* ------------------------------------------------------------------------ */
/* Workers                                                                  */

typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ready, go;
} gate;

typedef struct worker {
  row *r;
  gate *start;
  uint64_t first, count; /* producer: values first+1 .. first+count */
  uint64_t sum;          /* consumer: sum of the values read */
  uint64_t sink;         /* consumer, --touch: sum of the other words read */
  void *(*body)(void *); /* the producer's or consumer's loop */
  double cpu;            /* CPU seconds the loop took (the thread's, user and system) */
  char error[256];
} worker;

/* What a producer writes: the value in the first word and, with --touch,
   its low byte in every other byte. Nothing on a place the host cannot
   write (CUDA). */
static void fill_buffer(const row *r, void *p, uint64_t v) {
  if (!r->host_data) return;
  if (r->touch) memset(p, (int)(v & 0xff), r->size);
  *(uint64_t *)p = v;
}

/* What a consumer reads back: the value (1 on a place the host cannot
   read, where the rows count buffers instead), 0 when the last byte does
   not belong to it (a mix-up). With --touch every word is read. */
static uint64_t read_buffer(const row *r, const void *p, uint64_t *sink) {
  uint64_t v, acc = 0;
  size_t i, words;
  if (!r->host_data) return 1;
  v = *(const uint64_t *)p;
  if (r->touch) {
    const uint64_t *w = (const uint64_t *)p;
    words = r->size / sizeof(uint64_t);
    for (i = 1; i < words; ++i) acc += w[i];
    *sink += acc;
    if (r->size >= 16 && ((const unsigned char *)p)[r->size - 1] != (unsigned char)(v & 0xff))
      return 0;
  }
  return v;
}

/* The baselines' buffers: malloc on the CPU, dao_alloc on other places. */
static void *plain_alloc(const row *r) {
  void *p = NULL;
  if (r->place.kind == DAO_PLACE_CPU) return malloc(r->size);
  if (dao_alloc(r->place, r->size, &p) != DAO_OK) return NULL;
  return p;
}

static void plain_free(const row *r, void *p) {
  if (r->place.kind == DAO_PLACE_CPU) {
    free(p);
  } else if (p != NULL) {
    dao_free(r->place, p);
  }
}

static void wait_at_gate(gate *g) {
  pthread_mutex_lock(&g->mu);
  ++g->ready;
  pthread_cond_broadcast(&g->cv);
  while (!g->go) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

static double thread_cpu_seconds(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every worker thread: the start gate, then its loop, timed in CPU time
   (spinning and yielding count; sleeping does not). */
static void *worker_main(void *arg) {
  worker *w = (worker *)arg;
  double cpu0;
  wait_at_gate(w->start);
  cpu0 = thread_cpu_seconds();
  w->body(arg);
  w->cpu = thread_cpu_seconds() - cpu0;
  return NULL;
}

/* A worker's failure: keep the message and wake everybody else. */
static void worker_fail(worker *w, const char *what, dao_status s) {
  if (s != DAO_OK) {
    snprintf(w->error, sizeof w->error, "%s: %s: %s", what, dao_status_string(s), dao_last_error());
  } else {
    snprintf(w->error, sizeof w->error, "%s", what);
  }
  if (w->r->kind == KIND_DAO) {
    dao_recycle_close(w->r->pool);
  } else {
    queue_close(&w->r->filled);
    if (w->r->kind == KIND_FREELIST) queue_close(&w->r->free_list);
  }
}

static void *dao_producer(void *arg) {
  worker *w = (worker *)arg;
  dao_recycle_pool *pool = w->r->pool;
  uint64_t v, end = w->first + w->count;
  for (v = w->first + 1; v <= end; ++v) {
    dao_buffer *b = NULL;
    void *data = NULL;
    dao_status s = dao_recycle_acquire(pool, -1.0, &b);
    if (s == DAO_ERR_CLOSED) break; /* another thread failed */
    if (s != DAO_OK) {
      worker_fail(w, "dao_recycle_acquire", s);
      break;
    }
    s = dao_buffer_data(b, &data);
    if (s != DAO_OK) {
      worker_fail(w, "dao_buffer_data", s);
      dao_buffer_release(b);
      break;
    }
    fill_buffer(w->r, data, v);
    s = dao_recycle_submit(pool, b);
    if (s != DAO_OK) {
      worker_fail(w, "dao_recycle_submit", s);
      dao_buffer_release(b);
      break;
    }
  }
  return NULL;
}

static void *dao_consumer(void *arg) {
  worker *w = (worker *)arg;
  dao_recycle_pool *pool = w->r->pool;
  uint64_t i, sum = 0;
  for (i = 0; i < w->count; ++i) {
    dao_buffer *b = NULL;
    void *data = NULL;
    dao_status s = dao_recycle_take(pool, -1.0, &b);
    if (s == DAO_ERR_CLOSED) break;
    if (s != DAO_OK) {
      worker_fail(w, "dao_recycle_take", s);
      break;
    }
    s = dao_buffer_data(b, &data);
    if (s == DAO_OK) sum += read_buffer(w->r, data, &w->sink);
    if (s != DAO_OK) worker_fail(w, "dao_buffer_data", s);
    s = dao_buffer_release(b);
    if (s != DAO_OK) {
      worker_fail(w, "dao_buffer_release", s);
      break;
    }
  }
  w->sum = sum;
  return NULL;
}

static void *malloc_producer(void *arg) {
  worker *w = (worker *)arg;
  uint64_t v, end = w->first + w->count;
  for (v = w->first + 1; v <= end; ++v) {
    void *p = plain_alloc(w->r);
    if (p == NULL) {
      worker_fail(w, "malloc (or dao_alloc) returned NULL", DAO_OK);
      break;
    }
    fill_buffer(w->r, p, v);
    if (!queue_push(&w->r->filled, p)) {
      plain_free(w->r, p);
      break;
    }
  }
  return NULL;
}

static void *malloc_consumer(void *arg) {
  worker *w = (worker *)arg;
  uint64_t i, sum = 0;
  for (i = 0; i < w->count; ++i) {
    void *p = queue_pop(&w->r->filled);
    if (p == NULL) break;
    sum += read_buffer(w->r, p, &w->sink);
    plain_free(w->r, p);
  }
  w->sum = sum;
  return NULL;
}

static void *freelist_producer(void *arg) {
  worker *w = (worker *)arg;
  uint64_t v, end = w->first + w->count;
  for (v = w->first + 1; v <= end; ++v) {
    void *p = queue_pop_top(&w->r->free_list);
    if (p == NULL) break;
    fill_buffer(w->r, p, v);
    if (!queue_push(&w->r->filled, p)) break;
  }
  return NULL;
}

static void *freelist_consumer(void *arg) {
  worker *w = (worker *)arg;
  uint64_t i, sum = 0;
  for (i = 0; i < w->count; ++i) {
    void *p = queue_pop(&w->r->filled);
    if (p == NULL) break;
    sum += read_buffer(w->r, p, &w->sink);
    if (!queue_push(&w->r->free_list, p)) break;
  }
  w->sum = sum;
  return NULL;
}

/* Keeps the consumers' reads of whole buffers from being optimised away. */
static volatile uint64_t touched_sink;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One repetition of a row: `buffers` buffers through its pairs. Returns the
   seconds taken, or a negative value when the row failed. */
static double run_once(row *r, uint64_t buffers) {
  void *(*produce)(void *) = r->kind == KIND_DAO      ? dao_producer
                             : r->kind == KIND_MALLOC ? malloc_producer
                                                      : freelist_producer;
  void *(*consume)(void *) = r->kind == KIND_DAO      ? dao_consumer
                             : r->kind == KIND_MALLOC ? malloc_consumer
                                                      : freelist_consumer;
  worker workers[MAX_THREADS];
  pthread_t threads[MAX_THREADS];
  gate start;
  int nthreads = 2 * r->pairs, started = 0, k;
  uint64_t per_pair = buffers / (uint64_t)r->pairs, first = 0, sum = 0, expected;
  double t0, t1;

  memset(workers, 0, sizeof workers);
  pthread_mutex_init(&start.mu, NULL);
  pthread_cond_init(&start.cv, NULL);
  start.ready = start.go = 0;
  r->last_cpu = 0;
  for (k = 0; k < r->pairs; ++k) {
    uint64_t count = per_pair + (k == 0 ? buffers % (uint64_t)r->pairs : 0);
    worker *p = &workers[2 * k], *c = &workers[2 * k + 1];
    p->r = c->r = r;
    p->start = c->start = &start;
    p->first = c->first = first;
    p->count = c->count = count;
    first += count;
  }
  for (k = 0; k < nthreads; ++k) {
    workers[k].body = k % 2 == 0 ? produce : consume;
    if (pthread_create(&threads[k], NULL, worker_main, &workers[k]) != 0) {
      set_failed(r, "error: pthread_create failed");
      break;
    }
    ++started;
  }
  /* Everybody waits at the gate; the clock starts when it opens. */
  pthread_mutex_lock(&start.mu);
  while (start.ready < started) pthread_cond_wait(&start.cv, &start.mu);
  if (started < nthreads) worker_fail(&workers[0], "pthread_create failed", DAO_OK);
  t0 = now_seconds();
  start.go = 1;
  pthread_cond_broadcast(&start.cv);
  pthread_mutex_unlock(&start.mu);
  for (k = 0; k < started; ++k) pthread_join(threads[k], NULL);
  t1 = now_seconds();
  pthread_cond_destroy(&start.cv);
  pthread_mutex_destroy(&start.mu);

  for (k = 0; k < nthreads; ++k) {
    if (workers[k].error[0] != '\0') set_failed(r, "error: %s", workers[k].error);
    sum += workers[k].sum;
    touched_sink += workers[k].sink;
    r->last_cpu += workers[k].cpu;
  }
  expected = !r->host_data      ? buffers
             : buffers % 2 == 0 ? buffers / 2 * (buffers + 1)
                                : (buffers + 1) / 2 * buffers;
  if (!r->failed && sum != expected) {
    set_failed(r, "error: the consumers read a sum of %llu, not %llu: buffers lost or mixed up",
               (unsigned long long)sum, (unsigned long long)expected);
  }
  return r->failed ? -1.0 : t1 - t0;
}

static int read_steady_state(row *r, uint64_t *created, size_t *used, uint64_t *waits) {
  dao_recycle_stats st;
  dao_status s;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  s = dao_recycle_get_stats(r->pool, &st);
  if (s == DAO_OK) s = dao_used_internal(r->place, used);
  if (s != DAO_OK) {
    set_failed(r, "error: dao_recycle_get_stats/dao_used_internal: %s: %s", dao_status_string(s),
               dao_last_error());
    return 0;
  }
  *created = st.created;
  *waits = st.acquire_waits + st.take_waits;
  return 1;
}

/* One timed repetition, with the steady-state checks for libdao rows. */
static void run_rep(row *r, const options *o, uint64_t rep) {
  uint64_t created0 = 0, created1 = 0, waits0 = 0, waits1 = 0;
  size_t used0 = 0, used1 = 0;
  double t;
  if (r->failed) return;
  if (r->kind == KIND_DAO && !read_steady_state(r, &created0, &used0, &waits0)) return;
  t = run_once(r, o->buffers);
  if (t < 0) return;
  r->seconds[rep] = t;
  r->cpu += r->last_cpu;
  if (r->kind == KIND_DAO) {
    if (!read_steady_state(r, &created1, &used1, &waits1)) return;
    if (rep == 0) {
      r->created_before = created0;
      r->used_before = used0;
    }
    r->created_after = created1;
    r->used_after = used1;
    r->steady_allocations += (created1 - created0) + (used1 != used0);
    r->waits += waits1 - waits0;
  }
}

static int prepare_row(row *r, const options *o) {
  size_t i;
  r->size = (size_t)o->size;
  r->touch = o->touch;
  r->place = o->place;
  r->host_data = o->place.kind != DAO_PLACE_CUDA;
  r->seconds = (double *)calloc((size_t)o->reps, sizeof *r->seconds);
  if (r->seconds == NULL) {
    set_failed(r, "error: out of host memory");
    return 0;
  }
  if (r->kind == KIND_DAO) {
    const size_t shape[1] = {(size_t)o->size};
    dao_status s;
    s = dao_recycle_create(r->place, 1, 1, shape, (size_t)o->pool, (size_t)o->pool, o->config,
                           &r->pool);
    if (s != DAO_OK) {
      set_failed(r, "error: dao_recycle_create: %s: %s", dao_status_string(s), dao_last_error());
      r->pool = NULL;
      return 0;
    }
    snprintf(r->note, sizeof r->note, "%s place, %llu buffers preallocated, config \"%s\"",
             o->place_name, (unsigned long long)o->pool, o->config);
    return 1;
  }
  if (!queue_init(&r->filled, (size_t)o->pool)) {
    set_failed(r, "error: out of host memory");
    return 0;
  }
  if (r->kind == KIND_MALLOC) {
    snprintf(r->note, sizeof r->note, "%s + %s per buffer, queue of %llu",
             r->place.kind == DAO_PLACE_CPU ? "malloc" : "dao_alloc",
             r->place.kind == DAO_PLACE_CPU ? "free" : "dao_free", (unsigned long long)o->pool);
    return 1;
  }
  if (!queue_init(&r->free_list, (size_t)o->pool)) {
    set_failed(r, "error: out of host memory");
    return 0;
  }
  r->buffers = (void **)calloc((size_t)o->pool, sizeof *r->buffers);
  if (r->buffers == NULL) {
    set_failed(r, "error: out of host memory");
    return 0;
  }
  for (i = 0; i < (size_t)o->pool; ++i) {
    r->buffers[i] = plain_alloc(r);
    if (r->buffers[i] == NULL || !queue_push(&r->free_list, r->buffers[i])) {
      set_failed(r, "error: out of host memory");
      return 0;
    }
  }
  snprintf(r->note, sizeof r->note, "%llu buffers %s up front, LIFO free list",
           (unsigned long long)o->pool,
           r->place.kind == DAO_PLACE_CPU ? "malloc'ed" : "dao_alloc'ed");
  return 1;
}

static void finish_row(row *r, const options *o) {
  size_t i;
  if (r->kind == KIND_DAO && r->pool != NULL) {
    dao_status s = dao_recycle_close(r->pool);
    if (s == DAO_OK) s = dao_recycle_destroy(r->pool);
    if (s != DAO_OK) {
      set_failed(r, "error: dao_recycle_close/destroy: %s: %s", dao_status_string(s),
                 dao_last_error());
    }
    r->pool = NULL;
  }
  if (r->kind == KIND_FREELIST && r->buffers != NULL) {
    for (i = 0; i < (size_t)o->pool; ++i) plain_free(r, r->buffers[i]);
  }
  free(r->buffers);
  r->buffers = NULL;
  queue_destroy(&r->filled);
  queue_destroy(&r->free_list);
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void summarise(row *r, const options *o) {
  double median;
  size_t n = (size_t)o->reps;
  if (r->failed) return;
  qsort(r->seconds, n, sizeof *r->seconds, compare_doubles);
  median = n % 2 == 1 ? r->seconds[n / 2] : 0.5 * (r->seconds[n / 2 - 1] + r->seconds[n / 2]);
  r->median_rate = (double)o->buffers / median;
  r->best_rate = (double)o->buffers / r->seconds[0];
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */

enum { NROWS = 6 };
static const char *const row_labels[3] = {"libdao recycle pool", "malloc/free + mutex/cv queue",
                                          "mutex/cv free list + queue"};
static const char *const row_keys[NROWS] = {"dao-1",    "dao-2",      "malloc-1",
                                            "malloc-2", "freelist-1", "freelist-2"};

/* What one configuration (size, pool, buffers, touch) measured. */
typedef struct result {
  double median[NROWS], best[NROWS]; /* buffers/s; 0 for a failed or skipped row */
  /* libdao's buffers/s over the mutex free list's in the same round, per
     pair count: median over the rounds and the middle half of the rounds'
     ratios (their lower and upper quartiles; the lowest and highest with
     fewer than 5 rounds) (0: n/a). */
  double ratio[2], ratio_low[2], ratio_high[2];
  int failures, steady_failures;
} result;

/* libdao over the mutex free list, round by round: the two rows ran next
   to each other in each round, so a slow spell of a shared machine falls
   on both of a pair more often than on a median of each. */
static void paired_ratios(const row *dao, const row *list, const options *o, double *median,
                          double *low, double *high) {
  double *q;
  size_t n = (size_t)o->reps, k;
  *median = *low = *high = 0;
  if (dao->failed || list->failed || dao->seconds == NULL || list->seconds == NULL) return;
  q = (double *)xmalloc(n * sizeof *q);
  for (k = 0; k < n; ++k) q[k] = list->seconds[k] / dao->seconds[k];
  qsort(q, n, sizeof *q, compare_doubles);
  *median = n % 2 == 1 ? q[n / 2] : 0.5 * (q[n / 2 - 1] + q[n / 2]);
  *low = q[(n - 1) / 4];
  *high = q[(n - 1) - (n - 1) / 4];
  free(q);
}

/* Runs every row of one configuration in rounds and prints its tables. */
static void run_config(const options *o, result *out) {
  row rows[NROWS];
  char b1[32], b2[32];
  uint64_t rep;
  int i;

  memset(out, 0, sizeof *out);
  printf("\n== size %s, pool %llu buffers, %llu rounds of %llu buffers, %s, %s place ==\n",
         format_bytes((double)o->size, b1, sizeof b1), (unsigned long long)o->pool,
         (unsigned long long)o->reps, (unsigned long long)o->buffers,
         o->touch ? "every byte written and read" : "one word written and read", o->place_name);
  fflush(stdout);
  memset(rows, 0, sizeof rows);
  for (i = 0; i < NROWS; ++i) {
    rows[i].label = i / 2 == 1 && o->place.kind != DAO_PLACE_CPU ? "dao_alloc/free + mutex/cv queue"
                                                                 : row_labels[i / 2];
    rows[i].kind = i / 2 == 0 ? KIND_DAO : i / 2 == 1 ? KIND_MALLOC : KIND_FREELIST;
    rows[i].pairs = 1 + i % 2;
    if ((o->rows & (1 << (i / 2))) == 0) {
      rows[i].skipped = 1;
      continue;
    }
    prepare_row(&rows[i], o);
  }

  /* A short untimed warm-up of every row (threads, page faults, caches),
     then the timed rounds. */
  for (i = 0; i < NROWS; ++i) {
    if (!rows[i].failed && !rows[i].skipped)
      run_once(&rows[i], o->buffers / 10 < 1000 ? o->buffers : o->buffers / 10);
  }
  fprintf(stderr, "timing, M buffers/s of each repetition:\n");
  for (rep = 0; rep < o->reps; ++rep) {
    fprintf(stderr, "  round %llu/%llu:", (unsigned long long)rep + 1, (unsigned long long)o->reps);
    /* Every other round in the reverse order, so that no row always runs
       first or last (or next to the same neighbour) of a round. */
    int j;
    for (j = 0; j < NROWS; ++j) {
      row *r;
      i = rep % 2 == 0 ? j : NROWS - 1 - j;
      r = &rows[i];
      if (r->failed || r->skipped) continue;
      run_rep(r, o, rep);
      if (r->failed) {
        fprintf(stderr, " %s FAILED", row_keys[i]);
      } else {
        fprintf(stderr, " %s %.3f", row_keys[i], (double)o->buffers / r->seconds[rep] * 1e-6);
      }
      fflush(stderr);
    }
    fprintf(stderr, "\n");
  }
  for (i = 0; i < 2; ++i) {
    paired_ratios(&rows[i], &rows[4 + i], o, &out->ratio[i], &out->ratio_low[i],
                  &out->ratio_high[i]);
  }
  for (i = 0; i < NROWS; ++i) {
    if (!rows[i].skipped) summarise(&rows[i], o);
    finish_row(&rows[i], o);
  }

  printf("%-30s %5s %13s %8s %10s %9s %10s  %s\n", "path", "pairs", "M buffers/s", "best",
         "ns/buffer", "GB/s", "CPU ns/buf", "notes");
  printf("%-30s %5s %13s %8s %10s %9s %10s\n", "", "", "(median)", "", "(median)", "(median)",
         "(mean)");
  for (i = 0; i < NROWS; ++i) {
    const row *r = &rows[i];
    if (r->skipped) continue;
    if (r->failed) {
      printf("%-30s %5d  %s\n", r->label, r->pairs, r->note);
      ++out->failures;
      continue;
    }
    out->median[i] = r->median_rate;
    out->best[i] = r->best_rate;
    printf("%-30s %5d %13.3f %8.3f %10.1f %9.2f %10.1f  %s\n", r->label, r->pairs,
           r->median_rate * 1e-6, r->best_rate * 1e-6, 1e9 / r->median_rate,
           r->median_rate * (double)o->size * 1e-9,
           r->cpu * 1e9 / ((double)o->buffers * (double)o->reps), r->note);
  }

  printf("libdao steady state, over the timed repetitions (pool stats `created`, "
         "dao_used_internal(%s))\n",
         o->place_name);
  printf("%-30s %5s %17s %27s %12s %14s\n", "path", "pairs", "created", "dao_used", "allocations",
         "waits/buffer");
  for (i = 0; i < NROWS; ++i) {
    const row *r = &rows[i];
    char created[48], used[80];
    if (r->kind != KIND_DAO || r->failed || r->skipped) continue;
    snprintf(created, sizeof created, "%llu -> %llu", (unsigned long long)r->created_before,
             (unsigned long long)r->created_after);
    snprintf(used, sizeof used, "%s -> %s", format_bytes((double)r->used_before, b1, sizeof b1),
             format_bytes((double)r->used_after, b2, sizeof b2));
    printf("%-30s %5d %17s %27s %12llu %14.4f\n", r->label, r->pairs, created, used,
           (unsigned long long)r->steady_allocations,
           (double)r->waits / ((double)o->buffers * (double)o->reps));
    if (r->steady_allocations != 0) ++out->steady_failures;
  }
  for (i = 0; i < 2; ++i) {
    if (out->ratio[i] <= 0) continue;
    printf("libdao / mutex free list, %d pair%s, paired by round: median %.2fx (middle half "
           "of the rounds %.2f-%.2fx)\n",
           i + 1, i == 0 ? "" : "s", out->ratio[i], out->ratio_low[i], out->ratio_high[i]);
  }
  for (i = 0; i < NROWS; ++i) free(rows[i].seconds);
  fflush(stdout);
}

/* The target of issue 22 for one configuration: libdao's buffers/s at
   least the mutex free list's, with one pair and with two, judged by the
   median over the rounds of the two rows' ratio in the same round. */
static const char *keeps_up(const result *res, int pairs) {
  const double ratio = res->ratio[pairs - 1];
  if (ratio <= 0) return "n/a";
  return ratio >= 1.0 ? "met" : "NOT met";
}

static void load_average(char *text, size_t size) {
  FILE *f = fopen("/proc/loadavg", "r");
  text[0] = '\0';
  if (f == NULL) {
    snprintf(text, size, "unknown");
    return;
  }
  if (fgets(text, (int)size, f) == NULL) snprintf(text, size, "unknown");
  fclose(f);
  text[strcspn(text, "\n")] = '\0';
}

int main(int argc, char **argv) {
  static const uint64_t sweep_sizes[SWEEP_SIZES] = {4096, 65536, 1048576, 16777216};
  const char *build_type = DAO_BENCH_BUILD_TYPE[0] != '\0' ? DAO_BENCH_BUILD_TYPE : "unknown";
#ifdef NDEBUG
  const char *ndebug = "NDEBUG";
#else
  const char *ndebug = "no NDEBUG";
#endif
  options o;
  result results[2 * SWEEP_SIZES];
  options configs[2 * SWEEP_SIZES];
  char b1[32], load[128];
  int i, n = 0, failures = 0, steady_failures = 0, all_met = 1;

  parse_options(argc, argv, &o);
  if (o.place.kind == DAO_PLACE_SIM && getenv("DAO_SIM_DEVICES") == NULL) {
    dao_sim_configure(1, NULL); /* one SIM device of 1 GiB */
  }
  if (o.place.kind == DAO_PLACE_CUDA && o.touch) {
    bad_flag(argv[0], "--touch needs a place the host can write (cpu or sim)");
  }
  {
    /* A bad --config or --place is a bad flag: try it on a pool of one
       small buffer. */
    const size_t one[1] = {8};
    dao_recycle_pool *probe = NULL;
    dao_status s = dao_recycle_create(o.place, 1, 1, one, 1, 0, o.config, &probe);
    if (s == DAO_ERR_INVALID_ARGUMENT) bad_flag(argv[0], "--config: %s", dao_last_error());
    if (s == DAO_ERR_NO_DEVICE) bad_flag(argv[0], "--place %s: %s", o.place_name, dao_last_error());
    if (s == DAO_OK) dao_recycle_destroy(probe);
  }
  load_average(load, sizeof load);
  printf("bench_recycle: libdao %s, build %s (%s)%s\n", dao_version_string(), build_type, ndebug,
         BENCH_SANITIZED ? ", sanitizers on" : "");
  printf("config: %ld cpus online, load average %s, place %s, reps %llu%s\n",
         sysconf(_SC_NPROCESSORS_ONLN), load, o.place_name, (unsigned long long)o.reps,
         o.sweep ? ", sweep" : "");
  if (!is_optimised_build_type(build_type) || BENCH_SANITIZED) {
    printf("WARNING: built as '%s'%s; optimisation may be off and the timings are not "
           "representative (configure with -DCMAKE_BUILD_TYPE=Release)\n",
           build_type, BENCH_SANITIZED ? " with sanitizers" : "");
  }
  fflush(stdout);

  if (!o.sweep) {
    configs[n++] = o;
  } else {
    int touch, k;
    for (touch = 0; touch < 2; ++touch) {
      if (touch && o.place.kind == DAO_PLACE_CUDA) continue;
      for (k = 0; k < SWEEP_SIZES; ++k) {
        options c = o;
        const uint64_t size = sweep_sizes[k];
        /* Pools of at most 256 MiB (and at least 4 buffers). Repetitions
           of 100,000 buffers with one word touched (20,000 of 16 MiB: the
           malloc rows map and unmap them), and of 4 GiB touched (at most
           200,000 buffers). */
        uint64_t pool = ((uint64_t)256 << 20) / size, buffers;
        if (pool > 64) pool = 64;
        if (pool < 4) pool = 4;
        if (o.have_pool && o.pool < pool) pool = o.pool;
        buffers = touch ? ((uint64_t)4 << 30) / size : size > ((uint64_t)1 << 20) ? 20000 : 100000;
        if (buffers > 200000) buffers = 200000;
        if (o.have_buffers && o.buffers < buffers) buffers = o.buffers < 2 ? 2 : o.buffers;
        /* Memory-bound cells (every byte of 1 MiB or more): a repetition
           is a few hundred buffers and the same rate swings by 10-15 %
           from spell to spell on a shared machine; three times as many
           rounds of a third of the buffers each pair libdao with the
           mutex free list more often at the same cost. */
        if (touch && size >= ((uint64_t)1 << 20) && !o.have_reps) {
          c.reps = 3 * o.reps > MAX_REPS ? MAX_REPS : 3 * o.reps;
          if (buffers / 3 >= 2) buffers /= 3;
        }
        c.size = size;
        c.pool = pool;
        c.buffers = buffers;
        c.touch = touch;
        configs[n++] = c;
      }
    }
  }
  for (i = 0; i < n; ++i) {
    run_config(&configs[i], &results[i]);
    failures += results[i].failures;
    steady_failures += results[i].steady_failures;
  }

  load_average(load, sizeof load);
  printf("\nsummary (load average now %s): M buffers/s (median) and GB/s; target: libdao >= "
         "mutex free list\n(vs list: the median over the rounds of libdao's rate over the free "
         "list's in the same round; (rounds): the middle half of those ratios, from the lower "
         "to the upper quartile)\n",
         load);
  printf("%-9s %-8s %5s %10s %10s %10s %8s %8s %12s  %s\n", "size", "touched", "pairs", "libdao",
         "malloc", "freelist", "dao GB/s", "vs list", "(rounds)", "libdao >= free list");
  for (i = 0; i < n; ++i) {
    int pairs;
    for (pairs = 1; pairs <= 2; ++pairs) {
      const result *res = &results[i];
      const double d = res->median[pairs - 1], m = res->median[2 + pairs - 1],
                   f = res->median[4 + pairs - 1];
      const char *met = keeps_up(res, pairs);
      if (strcmp(met, "NOT met") == 0) all_met = 0;
      char range[32];
      snprintf(range, sizeof range, "%.2f-%.2f", res->ratio_low[pairs - 1],
               res->ratio_high[pairs - 1]);
      /* A miss whose middle half of rounds reaches 1.00 is still a miss;
         the note says the rounds cannot tell it from noise. */
      printf("%-9s %-8s %5d %10.3f %10.3f %10.3f %8.2f %7.2fx %12s  %s%s\n",
             format_bytes((double)configs[i].size, b1, sizeof b1),
             configs[i].touch ? "all" : "one word", pairs, d * 1e-6, m * 1e-6, f * 1e-6,
             d * (double)configs[i].size * 1e-9, res->ratio[pairs - 1], range, met,
             strcmp(met, "NOT met") == 0 && res->ratio_high[pairs - 1] >= 1.0
                 ? " (1.00 within the middle half of the rounds)"
                 : "");
    }
  }
  printf("\ntargets: libdao >= mutex free list at every size and pair count: %s; ",
         all_met ? "met" : "NOT met");
  for (i = 0; i < n; ++i) {
    if (configs[i].size == 4096 && !configs[i].touch && results[i].median[0] > 0) {
      printf(">= %.0f M buffers/s with one pair at 4 KiB (quiet machine): %.2f M/s (%s); ",
             TARGET_ONE_PAIR * 1e-6, results[i].median[0] * 1e-6,
             results[i].median[0] >= TARGET_ONE_PAIR ? "met" : "NOT met");
      break;
    }
  }
  printf("zero allocations in steady state: %s\n", steady_failures == 0 ? "met" : "NOT met");
  if (failures != 0) printf("\n%d row(s) failed; see the rows above\n", failures);
  if (steady_failures != 0)
    printf("\n%d libdao row(s) allocated in steady state\n", steady_failures);
  return failures != 0 || steady_failures != 0 ? 1 : 0;
}
