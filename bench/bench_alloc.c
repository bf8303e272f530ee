/*
 * bench_alloc: free+alloc throughput of libdao's allocators against glibc
 * malloc, jemalloc and mimalloc, all on one pre-generated operation sequence.
 *
 * Workload: `slots` live blocks (default 1000) are filled, then each of
 * `steps` steps (default 1,000,000) frees a random slot and allocates into it
 * a size drawn log-uniformly from 64 B to 4 MiB. The first byte of every
 * block is written, except on the cuda:0 rows (device memory; those rows
 * run only when --only names them). Every operation is generated from `seed` before any
 * timing; only the steps are timed. See bench/README.md.
 *
 * Every allocator runs the same sequence `reps` times (default 5). The rows
 * are timed in rounds, one repetition of every row per round, so that a slow
 * spell of a shared machine falls on all rows alike; the median and the
 * minimum of the repetitions are reported.
 *
 * jemalloc and mimalloc must not replace glibc malloc for the rest of the
 * program, so they are dlopen()ed RTLD_LOCAL and called through dlsym(). When
 * dlopen() is refused because the library needs static TLS (Debian's
 * libjemalloc.so.2 does), that row runs in a child process: this program
 * re-executed with LD_PRELOAD=<library> and the internal flag --child, which
 * times plain malloc/free (then the preloaded allocator's) on the same
 * sequence and writes its figures on a pipe.
 *
 * Exit status: 0 when every row that ran did so without error (timings never
 * fail a run), 1 when an allocator failed, 2 for bad flags.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT, clock_gettime, setenv */

#include <dao.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#ifndef DAO_BENCH_BUILD_TYPE
#define DAO_BENCH_BUILD_TYPE ""
#endif

#define MIN_SIZE 64u
#define MAX_SIZE (4u << 20)
#define MAX_STEPS 1000000000ull
#define MAX_SLOTS 1000000ull
#define MAX_REPS 1000ull
#define SIM_MIN_CAPACITY ((size_t)16 << 30)

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

typedef struct options {
  uint64_t steps;
  uint64_t slots;
  uint64_t reps;
  uint64_t seed;
  const char *only;             /* comma-separated row keys, or NULL for all */
  int recording;                /* --recording: the recording-cost table only */
  const char *child;            /* internal: run one preloaded row and report on stdout */
  const char *caching_config;   /* config string of the caching rows, or NULL */
  const char *trace_options[4]; /* --trace-options (repeatable), or none: the defaults */
  int trace_option_count;
} options;

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [--steps N] [--slots N] [--reps N] [--seed N] [--quick] [--only LIST]\n"
          "\n"
          "Times free+alloc pairs on one pre-generated sequence: fill SLOTS live blocks,\n"
          "then each step frees a random slot and allocates into it a size drawn\n"
          "log-uniformly from 64 B to 4 MiB (first byte of every block written).\n"
          "\n"
          "  --steps N   timed steps (free+alloc pairs), default 1000000\n"
          "  --slots N   live blocks, default 1000\n"
          "  --reps N    repetitions per allocator; median and min are shown, default 5\n"
          "  --seed N    seed of the operation sequence, default 42\n"
          "  --quick     small run for CI smoke tests: 20000 steps, 3 reps\n"
          "              (flags given explicitly still win)\n"
          "  --caching-config STR  config string of the caching rows (e.g.\n"
          "              reserve_headroom=none), default: the built-in defaults\n"
          "  --only LIST run only these rows, comma-separated keys:\n"
          "              glibc, jemalloc, mimalloc, dao-buddy, dao-default, dao-sim,\n"
          "              dao-caching, dao-caching-sim, dao-caching-exact; and, only when\n"
          "              named here: dao-caching-exact-sim, and on cuda:0 (blocks not\n"
          "              written) dao-caching-cuda, dao-caching-exact-cuda, dao-buddy-cuda\n"
          "  --recording only the cost of recording the memory history (issue 18):\n"
          "              the caching and buddy rows with dao_trace_start() off and on;\n"
          "              also printed at the end of a full run (no --only)\n"
          "  --trace-options STR  dao_trace_start() options of the recording rows\n"
          "              (repeat for several, at most 4; \"\" is the defaults), default:\n"
          "              the defaults (the binary encoding), then format=jsonl\n"
          "  --help      this text\n"
          "\n"
          "Exit status: 0 ok (timings never fail a run), 1 an allocator failed, 2 bad flags.\n",
          prog);
}

static const char *const kRowKeys[] = {
    "glibc", "jemalloc", "mimalloc", "dao-buddy", "dao-default", "dao-sim", "dao-caching",
    "dao-caching-sim", "dao-caching-exact",
    /* Only with --only: */
    "dao-caching-exact-sim", "dao-caching-cuda", "dao-caching-exact-cuda", "dao-buddy-cuda"};
#define ROW_COUNT (sizeof kRowKeys / sizeof kRowKeys[0])
/* Rows from this index on run only when --only names them. */
#define FIRST_ONLY_ROW 9

static int key_known(const char *key, size_t len) {
  for (size_t i = 0; i < ROW_COUNT; ++i)
    if (strlen(kRowKeys[i]) == len && strncmp(kRowKeys[i], key, len) == 0) return 1;
  return 0;
}

static int row_selected(const options *o, const char *key) {
  if (o->only == NULL) {
    for (size_t i = FIRST_ONLY_ROW; i < ROW_COUNT; ++i)
      if (strcmp(kRowKeys[i], key) == 0) return 0;
    return 1;
  }
  size_t klen = strlen(key);
  for (const char *s = o->only; *s != '\0';) {
    const char *comma = strchr(s, ',');
    size_t len = comma != NULL ? (size_t)(comma - s) : strlen(s);
    if (len == klen && strncmp(s, key, len) == 0) return 1;
    s += len + (comma != NULL);
  }
  return 0;
}

static void parse_options(int argc, char **argv, options *o) {
  const char *prog = argv[0];
  int quick = 0, have_steps = 0, have_reps = 0;
  o->steps = 1000000;
  o->slots = 1000;
  o->reps = 5;
  o->seed = 42;
  o->only = NULL;
  o->child = NULL;
  o->caching_config = NULL;
  o->recording = 0;
  o->trace_option_count = 0;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout, prog);
      exit(0);
    }
    if (strcmp(arg, "--quick") == 0) {
      quick = 1;
      continue;
    }
    if (strcmp(arg, "--recording") == 0) {
      o->recording = 1;
      continue;
    }
    /* Flags with a value: "--flag N" or "--flag=N". */
    static const char *const valued[] = {"--steps",          "--slots",        "--reps",
                                         "--seed",           "--only",         "--child",
                                         "--caching-config", "--trace-options"};
    const char *value = NULL;
    const char *flag =
        match_valued_flag(prog, argc, argv, &i, valued, sizeof valued / sizeof valued[0], &value);
    if (flag == NULL) bad_flag(prog, "unknown argument '%s'", arg);
    if (strcmp(flag, "--steps") == 0) {
      o->steps = parse_count(prog, flag, value, 1, MAX_STEPS);
      have_steps = 1;
    } else if (strcmp(flag, "--slots") == 0) {
      o->slots = parse_count(prog, flag, value, 1, MAX_SLOTS);
    } else if (strcmp(flag, "--reps") == 0) {
      o->reps = parse_count(prog, flag, value, 1, MAX_REPS);
      have_reps = 1;
    } else if (strcmp(flag, "--seed") == 0) {
      o->seed = parse_count(prog, flag, value, 0, UINT64_MAX);
    } else if (strcmp(flag, "--only") == 0) {
      if (*value == '\0') bad_flag(prog, "--only needs at least one row key");
      for (const char *s = value; *s != '\0';) {
        const char *comma = strchr(s, ',');
        size_t len = comma != NULL ? (size_t)(comma - s) : strlen(s);
        if (!key_known(s, len)) {
          bad_flag(prog,
                   "--only: unknown row '%.*s' (known: glibc, jemalloc, mimalloc, dao-buddy, "
                   "dao-default, dao-sim, dao-caching, dao-caching-sim, dao-caching-exact, "
                   "dao-caching-exact-sim, dao-caching-cuda, dao-caching-exact-cuda, "
                   "dao-buddy-cuda)",
                   (int)len, s);
        }
        s += len + (comma != NULL);
      }
      o->only = value;
    } else if (strcmp(flag, "--caching-config") == 0) {
      o->caching_config = value;
    } else if (strcmp(flag, "--trace-options") == 0) {
      if (o->trace_option_count == 4) bad_flag(prog, "--trace-options: at most 4");
      o->trace_options[o->trace_option_count++] = value;
    } else { /* --child, internal */
      if (strcmp(value, "jemalloc") != 0 && strcmp(value, "mimalloc") != 0)
        bad_flag(prog, "--child: unknown allocator '%s'", value);
      o->child = value;
    }
  }
  if (quick) {
    if (!have_steps) o->steps = 20000;
    if (!have_reps) o->reps = 3;
  }
}

/* ------------------------------------------------------------------------ */
/* The workload, generated before any timing                                */

typedef struct workload {
  size_t slots;
  size_t steps;
  uint32_t *sizes;         /* slots fill sizes, then one size per step */
  uint32_t *victims;       /* slot freed (and refilled) by each step */
  uint64_t peak_requested; /* largest sum of live requested sizes */
} workload;

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* log-uniform in [MIN_SIZE, MAX_SIZE): 2^(6 + 16u) for u uniform in [0, 1). */
static uint32_t draw_size(uint64_t *state) {
  double u = (double)(splitmix64(state) >> 11) * 0x1.0p-53;
  double lo = log2((double)MIN_SIZE), hi = log2((double)MAX_SIZE);
  uint32_t s = (uint32_t)exp2(lo + (hi - lo) * u);
  if (s < MIN_SIZE) s = MIN_SIZE;
  if (s > MAX_SIZE) s = MAX_SIZE;
  return s;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (p == NULL) {
    fprintf(stderr, "bench_alloc: cannot allocate %zu x %zu bytes for the workload\n", n, size);
    exit(1);
  }
  return p;
}

static void make_workload(const options *o, workload *w) {
  uint64_t state = o->seed;
  w->slots = (size_t)o->slots;
  w->steps = (size_t)o->steps;
  w->sizes = xcalloc(w->slots + w->steps, sizeof *w->sizes);
  w->victims = xcalloc(w->steps, sizeof *w->victims);
  uint64_t live = 0;
  for (size_t i = 0; i < w->slots; ++i) {
    w->sizes[i] = draw_size(&state);
    live += w->sizes[i];
  }
  w->peak_requested = live;
  uint32_t *current = xcalloc(w->slots, sizeof *current);
  memcpy(current, w->sizes, w->slots * sizeof *current);
  for (size_t k = 0; k < w->steps; ++k) {
    uint32_t victim = (uint32_t)(((splitmix64(&state) >> 32) * (uint64_t)w->slots) >> 32);
    uint32_t size = draw_size(&state);
    w->victims[k] = victim;
    w->sizes[w->slots + k] = size;
    live = live - current[victim] + size;
    current[victim] = size;
    if (live > w->peak_requested) w->peak_requested = live;
  }
  free(current);
}

/* ------------------------------------------------------------------------ */
/* Allocators behind one interface, so every row pays the same indirect call */

typedef struct runner {
  void *ctx;
  void *(*alloc)(void *ctx, size_t size); /* NULL on failure, error() says why */
  int (*release)(void *ctx, void *p);     /* 0 on success */
  const char *(*error)(void *ctx);
} runner;

/* glibc (or, in a --child process, whatever malloc is preloaded). */
static void *libc_alloc(void *ctx, size_t size) {
  (void)ctx;
  return malloc(size);
}
static int libc_release(void *ctx, void *p) {
  (void)ctx;
  free(p);
  return 0;
}
static const char *libc_error(void *ctx) {
  (void)ctx;
  return "malloc returned NULL";
}

/* jemalloc / mimalloc through dlsym(). */
typedef struct dl_ctx {
  void *(*alloc_fn)(size_t);
  void (*free_fn)(void *);
  const char *alloc_name;
} dl_ctx;
static void *dl_alloc(void *ctx, size_t size) { return ((dl_ctx *)ctx)->alloc_fn(size); }
static int dl_release(void *ctx, void *p) {
  ((dl_ctx *)ctx)->free_fn(p);
  return 0;
}
static const char *dl_error(void *ctx) {
  static char msg[96];
  snprintf(msg, sizeof msg, "%s returned NULL", ((dl_ctx *)ctx)->alloc_name);
  return msg;
}

/* libdao. The last failure's message is kept: dao_last_error() is per call. */
static char dao_message[512];
static void keep_dao_error(const char *what, dao_status s) {
  snprintf(dao_message, sizeof dao_message, "%s: %s: %s", what, dao_status_string(s),
           dao_last_error());
}
static const char *dao_error(void *ctx) {
  (void)ctx;
  return dao_message;
}

static void *dao_obj_alloc(void *ctx, size_t size) {
  void *p = NULL;
  dao_status s = dao_allocator_alloc((dao_allocator *)ctx, size, DAO_STREAM_DEFAULT, &p);
  if (s != DAO_OK) keep_dao_error("dao_allocator_alloc", s);
  return p;
}
static int dao_obj_release(void *ctx, void *p) {
  dao_status s = dao_allocator_free((dao_allocator *)ctx, p);
  if (s != DAO_OK) keep_dao_error("dao_allocator_free", s);
  return s != DAO_OK;
}

static void *dao_place_alloc(void *ctx, size_t size) {
  void *p = NULL;
  dao_status s = dao_alloc(*(const dao_place *)ctx, size, &p);
  if (s != DAO_OK) keep_dao_error("dao_alloc", s);
  return p;
}
static int dao_place_release(void *ctx, void *p) {
  dao_status s = dao_free(*(const dao_place *)ctx, p);
  if (s != DAO_OK) keep_dao_error("dao_free", s);
  return s != DAO_OK;
}

/* ------------------------------------------------------------------------ */
/* Timing                                                                   */

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Frees every live block; returns 0, or 1 after writing the error. */
static int drain(const runner *r, void **live, size_t slots, char *err, size_t errlen) {
  int failed = 0;
  for (size_t i = 0; i < slots; ++i) {
    if (live[i] != NULL && r->release(r->ctx, live[i]) != 0 && !failed) {
      snprintf(err, errlen, "free: %s", r->error(r->ctx));
      failed = 1;
    }
    live[i] = NULL;
  }
  return failed;
}

/* What a SIM device accounted since its last reset, added into sum[]
   (DAO_SIM_OP_COUNT entries). Returns 0, or 1 after writing err. */
static int add_sim_costs(int device, dao_sim_cost *sum, char *err, size_t errlen) {
  for (int op = 0; op < DAO_SIM_OP_COUNT; ++op) {
    dao_sim_cost c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    dao_status s = dao_sim_get_cost(device, (dao_sim_op)op, &c);
    if (s != DAO_OK) {
      snprintf(err, errlen, "dao_sim_get_cost(%d, %s): %s: %s", device,
               dao_sim_op_name((dao_sim_op)op), dao_status_string(s), dao_last_error());
      return 1;
    }
    sum[op].count += c.count;
    sum[op].bytes += c.bytes;
    sum[op].ns += c.ns;
  }
  return 0;
}

/* Fills the slots, then times the steps. The blocks stay live for the caller
   (to read statistics) until drain(). With sim_device >= 0, the simulated
   driver costs of that SIM device during the steps (reset before the clock
   starts, read after it stops) are added into sim_costs. Returns 0, or 1
   after writing err. */
static inline int fill_and_time_impl(const runner *r, const workload *w, void **live,
                                     double *ns_per_pair, int sim_device, dao_sim_cost *sim_costs,
                                     char *err, size_t errlen, const int touch) {
  const size_t slots = w->slots, steps = w->steps;
  const uint32_t *sizes = w->sizes;
  const uint32_t *victims = w->victims;
  for (size_t i = 0; i < slots; ++i) {
    void *p = r->alloc(r->ctx, sizes[i]);
    if (p == NULL) {
      snprintf(err, errlen, "fill, %u bytes: %s", (unsigned)sizes[i], r->error(r->ctx));
      return 1;
    }
    if (touch) *(volatile unsigned char *)p = (unsigned char)i;
    live[i] = p;
  }
  if (sim_device >= 0) {
    dao_status s = dao_sim_reset_costs(sim_device);
    if (s != DAO_OK) {
      snprintf(err, errlen, "dao_sim_reset_costs(%d): %s: %s", sim_device, dao_status_string(s),
               dao_last_error());
      return 1;
    }
  }
  const double t0 = now_ns();
  for (size_t k = 0; k < steps; ++k) {
    const uint32_t s = victims[k];
    if (r->release(r->ctx, live[s]) != 0) {
      live[s] = NULL;
      snprintf(err, errlen, "step %zu, free: %s", k, r->error(r->ctx));
      return 1;
    }
    void *p = r->alloc(r->ctx, sizes[slots + k]);
    live[s] = p;
    if (p == NULL) {
      snprintf(err, errlen, "step %zu, %u bytes: %s", k, (unsigned)sizes[slots + k],
               r->error(r->ctx));
      return 1;
    }
    if (touch) *(volatile unsigned char *)p = (unsigned char)k;
  }
  const double t1 = now_ns();
  *ns_per_pair = (t1 - t0) / (double)steps;
  if (sim_device >= 0) return add_sim_costs(sim_device, sim_costs, err, errlen);
  return 0;
}

/* With touch (every row but the device rows) the first byte of every block
   is written; device memory cannot be written from the host. The constant
   argument gives each case its own loop, so the CPU rows time what they
   always did. */
static int fill_and_time(const runner *r, const workload *w, void **live, double *ns_per_pair,
                         int sim_device, dao_sim_cost *sim_costs, char *err, size_t errlen,
                         int touch) {
  if (touch)
    return fill_and_time_impl(r, w, live, ns_per_pair, sim_device, sim_costs, err, errlen, 1);
  return fill_and_time_impl(r, w, live, ns_per_pair, sim_device, sim_costs, err, errlen, 0);
}

/* ------------------------------------------------------------------------ */
/* Rows                                                                     */

enum row_state { ROW_SKIPPED, ROW_OK, ROW_UNAVAILABLE, ROW_FAILED };

typedef struct row {
  const char *key;
  const char *label;
  enum row_state state;
  char note[640]; /* why unavailable / failed, or how it ran */
  /* Rows timed in this process, one repetition per round. */
  int in_process;
  runner r;
  dl_ctx dl;                                /* context of a dlopen()ed allocator */
  dao_place place;                          /* context of dao_alloc() */
  dao_allocator *stats_of;                  /* libdao: statistics are read here */
  dao_allocator *owned;                     /* libdao: destroyed at the end */
  double *times;                            /* ns/pair of each repetition */
  int sim_device;                           /* a SIM row: its device, else -1 */
  int no_touch;                             /* device memory: blocks are not written */
  dao_sim_cost sim_costs[DAO_SIM_OP_COUNT]; /* SIM row: of the timed steps, all reps */
  uint64_t sim_last_calls;                  /* SIM row: driver calls of the last rep's steps */
  /* Results. */
  double median_ns, min_ns;
  int have_stats;
  dao_allocator_stats end_of_steps; /* libdao: at the end of the last rep's steps */
  dao_allocator_stats final_stats;  /* libdao: after everything was freed */
} row;

static void set_note(row *out, enum row_state state, const char *fmt, ...) {
  va_list ap;
  out->state = state;
  va_start(ap, fmt);
  vsnprintf(out->note, sizeof out->note, fmt, ap);
  va_end(ap);
}

static void use_runner(row *out, void *ctx, void *(*alloc)(void *, size_t),
                       int (*release)(void *, void *), const char *(*error)(void *),
                       uint64_t reps) {
  out->r.ctx = ctx;
  out->r.alloc = alloc;
  out->r.release = release;
  out->r.error = error;
  out->times = xcalloc((size_t)reps, sizeof *out->times);
  out->in_process = 1;
  out->state = ROW_OK;
}

/* One repetition: fill, timed steps, statistics (last rep), drain. */
static void run_rep(row *out, const workload *w, void **live, uint64_t rep, uint64_t reps) {
  char err[512] = "";
  uint64_t calls_before = 0;
  for (int op = 0; op < DAO_SIM_OP_COUNT; ++op) calls_before += out->sim_costs[op].count;
  int failed = fill_and_time(&out->r, w, live, &out->times[rep], out->sim_device, out->sim_costs,
                             err, sizeof err, !out->no_touch);
  out->sim_last_calls = 0;
  for (int op = 0; op < DAO_SIM_OP_COUNT; ++op) out->sim_last_calls += out->sim_costs[op].count;
  out->sim_last_calls -= calls_before;
  if (!failed && out->stats_of != NULL && rep + 1 == reps) {
    out->end_of_steps.struct_size = sizeof out->end_of_steps;
    dao_status s = dao_allocator_get_stats(out->stats_of, &out->end_of_steps);
    if (s != DAO_OK) {
      keep_dao_error("dao_allocator_get_stats", s);
      snprintf(err, sizeof err, "%s", dao_message);
      failed = 1;
    }
  }
  char drain_err[512] = "";
  if (drain(&out->r, live, w->slots, drain_err, sizeof drain_err) && !failed) {
    snprintf(err, sizeof err, "%s", drain_err);
    failed = 1;
  }
  if (failed) {
    set_note(out, ROW_FAILED, "error (rep %llu): %s", (unsigned long long)rep + 1, err);
    out->in_process = 0;
  }
}

static void summarise(row *out, uint64_t reps) {
  qsort(out->times, (size_t)reps, sizeof *out->times, compare_double);
  out->min_ns = out->times[0];
  out->median_ns = reps % 2 == 1 ? out->times[reps / 2]
                                 : 0.5 * (out->times[reps / 2 - 1] + out->times[reps / 2]);
}

/* After the rounds: figures, final statistics, and giving memory back. */
static void finish_row(row *out, uint64_t reps) {
  if (out->in_process && out->state == ROW_OK) {
    summarise(out, reps);
    if (out->stats_of != NULL) {
      out->final_stats.struct_size = sizeof out->final_stats;
      dao_status s = dao_allocator_get_stats(out->stats_of, &out->final_stats);
      if (s != DAO_OK) {
        set_note(out, ROW_FAILED, "error: dao_allocator_get_stats: %s: %s", dao_status_string(s),
                 dao_last_error());
      } else if (out->final_stats.live_blocks != 0) {
        set_note(out, ROW_FAILED, "error: %llu block(s) still live after every block was freed",
                 (unsigned long long)out->final_stats.live_blocks);
      } else {
        out->have_stats = 1;
      }
    }
  }
  if (out->stats_of != NULL) dao_allocator_trim(out->stats_of, NULL);
  if (out->owned != NULL) {
    dao_status s = dao_allocator_destroy(out->owned);
    if (s != DAO_OK && out->state == ROW_OK) {
      set_note(out, ROW_FAILED, "error: dao_allocator_destroy: %s: %s", dao_status_string(s),
               dao_last_error());
    }
    out->owned = NULL;
  }
  free(out->times);
  out->times = NULL;
}

static void prepare_libc(row *out, uint64_t reps) {
  use_runner(out, NULL, libc_alloc, libc_release, libc_error, reps);
  snprintf(out->note, sizeof out->note, "malloc/free");
}

/* Converts a dlsym() result to a function pointer without a cast between
   object and function pointers. */
static void *lookup(void *handle, const char *name) { return dlsym(handle, name); }

static void run_child_row(row *out, const char *key, const char *library, const options *o);

static void prepare_dlopen(row *out, const char *library, const char *alloc_name,
                           const char *free_name, const options *o) {
  if (BENCH_SANITIZED) {
    set_note(out, ROW_UNAVAILABLE,
             "not available (skipped in a sanitizer build: a second malloc confuses it)");
    return;
  }
  void *handle = dlopen(library, RTLD_LOCAL | RTLD_NOW);
  if (handle == NULL) {
    const char *why = dlerror();
    if (why != NULL && strstr(why, "static TLS") != NULL) {
      run_child_row(out, out->key, library, o);
      return;
    }
    set_note(out, ROW_UNAVAILABLE, "not available (%s)", why != NULL ? why : "dlopen failed");
    return;
  }
  /* The handle stays open until exit: unloading an allocator is never safe. */
  void *a = lookup(handle, alloc_name);
  void *f = lookup(handle, free_name);
  if (a == NULL || f == NULL) {
    set_note(out, ROW_UNAVAILABLE, "not available (%s has no %s)", library,
             a == NULL ? alloc_name : free_name);
    return;
  }
  memcpy(&out->dl.alloc_fn, &a, sizeof a);
  memcpy(&out->dl.free_fn, &f, sizeof f);
  out->dl.alloc_name = alloc_name;
  use_runner(out, &out->dl, dl_alloc, dl_release, dl_error, o->reps);
  snprintf(out->note, sizeof out->note, "dlopen(%s), %s/%s", library, alloc_name, free_name);
}

/* The static-TLS fallback: this program again, with LD_PRELOAD=library, run
   to completion before the rounds of the other rows. */
static void run_child_row(row *out, const char *key, const char *library, const options *o) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    set_note(out, ROW_UNAVAILABLE,
             "not available (dlopen needs static TLS and /proc/self/exe is unreadable)");
    return;
  }
  self[n] = '\0';
  char steps[24], slots[24], reps[24], seed[24];
  snprintf(steps, sizeof steps, "%llu", (unsigned long long)o->steps);
  snprintf(slots, sizeof slots, "%llu", (unsigned long long)o->slots);
  snprintf(reps, sizeof reps, "%llu", (unsigned long long)o->reps);
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
  char *args[] = {self,  "--child", (char *)key, "--steps", steps, "--slots",
                  slots, "--reps",  reps,        "--seed",  seed,  NULL};
  int fds[2];
  if (pipe(fds) != 0) {
    set_note(out, ROW_FAILED, "error: pipe: %s", strerror(errno));
    return;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    set_note(out, ROW_FAILED, "error: fork: %s", strerror(errno));
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(127);
    close(fds[1]);
    setenv("LD_PRELOAD", library, 1);
    execv(self, args);
    printf("CHILD-ERROR exec %s: %s\n", self, strerror(errno));
    fflush(stdout);
    _exit(127);
  }
  close(fds[1]);
  char buf[2048];
  size_t len = 0;
  for (;;) {
    ssize_t got = read(fds[0], buf + len, sizeof buf - 1 - len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    len += (size_t)got;
    if (len == sizeof buf - 1) break;
  }
  buf[len] = '\0';
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double median = 0, min = 0;
  const char *result = strstr(buf, "CHILD-RESULT ");
  const char *error = strstr(buf, "CHILD-ERROR ");
  if (result != NULL && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
      sscanf(result, "CHILD-RESULT %lf %lf", &median, &min) == 2) {
    out->median_ns = median;
    out->min_ns = min;
    set_note(out, ROW_OK, "child process with LD_PRELOAD=%s (dlopen refused: static TLS)", library);
    return;
  }
  if (error != NULL) {
    int elen = (int)strcspn(error + 12, "\n");
    if (strncmp(error + 12, "not available", 13) == 0)
      set_note(out, ROW_UNAVAILABLE, "%.*s", elen, error + 12);
    else set_note(out, ROW_FAILED, "error (child process): %.*s", elen, error + 12);
    return;
  }
  if (WIFSIGNALED(status)) {
    set_note(out, ROW_FAILED, "error: child process with LD_PRELOAD=%s killed by signal %d",
             library, WTERMSIG(status));
  } else {
    set_note(out, ROW_FAILED,
             "error: child process with LD_PRELOAD=%s exited with status %d "
             "and no result",
             library, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
}

/* Inside the child: malloc/free are the preloaded allocator's. */
static int child_main(const options *o) {
  const char *marker = strcmp(o->child, "jemalloc") == 0 ? "mallocx" : "mi_malloc";
  if (dlsym(RTLD_DEFAULT, marker) == NULL) {
    printf("CHILD-ERROR not available (LD_PRELOAD did not load %s: no symbol %s)\n", o->child,
           marker);
    return 1;
  }
  workload w;
  make_workload(o, &w);
  row r;
  memset(&r, 0, sizeof r);
  r.key = o->child;
  r.label = o->child;
  r.sim_device = -1;
  prepare_libc(&r, o->reps);
  void **live = xcalloc(w.slots, sizeof *live);
  fprintf(stderr, "  %s (child process, LD_PRELOAD):", o->child);
  for (uint64_t rep = 0; rep < o->reps && r.state == ROW_OK; ++rep) {
    run_rep(&r, &w, live, rep, o->reps);
    if (r.state == ROW_OK) fprintf(stderr, " %.1f", r.times[rep]);
  }
  fprintf(stderr, "\n");
  if (r.state != ROW_OK) {
    printf("CHILD-ERROR %s\n", r.note);
    return 1;
  }
  summarise(&r, o->reps);
  printf("CHILD-RESULT %.6f %.6f\n", r.median_ns, r.min_ns);
  return 0;
}

static void prepare_dao_object(row *out, dao_place place, const char *strategy,
                               const char *config_in, const char *what, uint64_t reps) {
  dao_allocator *a = NULL;
  dao_status s = dao_allocator_create(place, strategy, config_in, &a);
  if (s == DAO_ERR_INVALID_ARGUMENT && strstr(dao_last_error(), "unknown strategy") != NULL) {
    /* A strategy this libdao does not have yet: the row is left out. */
    set_note(out, ROW_UNAVAILABLE, "not available (%s)", dao_last_error());
    return;
  }
  if (s != DAO_OK) {
    set_note(out, s == DAO_ERR_NO_DEVICE ? ROW_UNAVAILABLE : ROW_FAILED,
             "%s(dao_allocator_create on %s: %s: %s)",
             s == DAO_ERR_NO_DEVICE ? "not available " : "error ", what, dao_status_string(s),
             dao_last_error());
    return;
  }
  out->owned = a;
  out->stats_of = a;
  use_runner(out, a, dao_obj_alloc, dao_obj_release, dao_error, reps);
  const char *config = NULL;
  if (dao_allocator_info(a, NULL, NULL, &config) != DAO_OK || config == NULL) config = "?";
  snprintf(out->note, sizeof out->note, "%s on %s: %s", strategy, what, config);
}

static void prepare_dao_default(row *out, uint64_t reps) {
  out->place = dao_place_cpu();
  dao_allocator *a = NULL;
  dao_status s = dao_place_allocator(out->place, &a);
  if (s != DAO_OK) {
    set_note(out, ROW_FAILED, "error (dao_place_allocator: %s: %s)", dao_status_string(s),
             dao_last_error());
    return;
  }
  dao_allocator_reset_peak_stats(a);
  out->stats_of = a;
  use_runner(out, &out->place, dao_place_alloc, dao_place_release, dao_error, reps);
  const char *strategy = NULL, *config = NULL;
  if (dao_allocator_info(a, NULL, &strategy, &config) != DAO_OK) strategy = config = NULL;
  snprintf(out->note, sizeof out->note, "dao_alloc(cpu), default %s: %s",
           strategy != NULL ? strategy : "?", config != NULL ? config : "?");
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */

/* The simulated driver time of the SIM rows' timed steps: what the driver
   calls the SIM device stood in for would have taken on the card of the
   cost profile (accounted, never slept: not part of the timings above). */
static void print_sim_costs(const row *rows, size_t nrows, const char *profile, const options *o) {
  int any = 0;
  for (size_t i = 0; i < nrows; ++i) any |= rows[i].sim_device >= 0 && rows[i].state == ROW_OK;
  if (!any) return;
  const char *env = getenv("DAO_SIM_COSTS");
  const double pairs = (double)o->steps * (double)o->reps;
  printf("\nsimulated driver time of the timed steps (SIM rows), cost profile %s (%s)\n",
         profile != NULL ? profile : "?",
         env != NULL && env[0] != '\0'
             ? "DAO_SIM_COSTS"
             : "the default: counts only; DAO_SIM_COSTS=h200 for an H200's driver times");
  printf("%-26s %15s %11s %14s  %s\n", "allocator", "driver ns/pair", "calls/pair",
         "last rep calls", "driver calls of the timed steps, all reps");
  for (size_t i = 0; i < nrows; ++i) {
    const row *r = &rows[i];
    if (r->sim_device < 0 || r->state != ROW_OK) continue;
    uint64_t ns = 0, calls = 0;
    char list[512] = "";
    size_t used = 0;
    for (int op = 0; op < DAO_SIM_OP_COUNT; ++op) {
      ns += r->sim_costs[op].ns;
      calls += r->sim_costs[op].count;
      if (r->sim_costs[op].count != 0 && used < sizeof list) {
        int n =
            snprintf(list + used, sizeof list - used, "%s%s %llu", used != 0 ? ", " : "",
                     dao_sim_op_name((dao_sim_op)op), (unsigned long long)r->sim_costs[op].count);
        if (n > 0) used += (size_t)n;
      }
    }
    printf("%-26s %15.1f %11.4f %14llu  %s\n", r->label, (double)ns / pairs, (double)calls / pairs,
           (unsigned long long)r->sim_last_calls, calls != 0 ? list : "none");
  }
  printf("(%llu reps x %llu steps; driver ns/pair: simulated driver time, summed over every\n"
         " operation, per free+alloc pair; calls/pair: driver calls per pair; last rep calls:\n"
         " driver calls of the last rep's steps, the allocator warm)\n",
         (unsigned long long)o->reps, (unsigned long long)o->steps);
}

/* ------------------------------------------------------------------------ */
/* The cost of recording (issue 18)                                          */

/* The dao-caching and dao-buddy rows' workload, each repetition once with
   recording off and once on (to /dev/null: the writer thread encodes every
   record; a file's disk would only add the writer's waits), alternating so
   that drift hits both alike. Recording adds per pair what the allocating
   thread does: two ring records (a time stamp, a cell claimed, 64 bytes
   written) and the block's size. */
static void print_recording_cost(const options *o, const workload *w) {
  static const char *const strategies[2] = {"caching", "buddy"};
  /* the defaults (binary records, which the writer keeps up with), then
     JSON Lines (which it cannot at this rate: records dropped, counted) */
  static const char *const default_options[2] = {"", "format=jsonl"};
  const char *const *trace_options =
      o->trace_option_count != 0 ? o->trace_options : default_options;
  const int variants = o->trace_option_count != 0 ? o->trace_option_count : 2;
  void **live = xcalloc(w->slots, sizeof *live);
  printf("\nrecording the memory history (dao_trace_start to /dev/null), ns/pair:\n");
  printf("%-44s %9s %9s %9s %9s %12s\n", "allocator, trace options", "off", "on", "added",
         "added min", "lost records");
  for (int k = 0; k < 2 * variants; ++k) {
    const char *strategy = strategies[k % 2];
    const char *topts = trace_options[k / 2];
    row off, on;
    memset(&off, 0, sizeof off);
    memset(&on, 0, sizeof on);
    off.sim_device = on.sim_device = -1;
    prepare_dao_object(&off, dao_place_cpu(), strategy, k % 2 == 0 ? o->caching_config : NULL,
                       "cpu", o->reps);
    prepare_dao_object(&on, dao_place_cpu(), strategy, k % 2 == 0 ? o->caching_config : NULL, "cpu",
                       o->reps);
    uint64_t lost = 0;
    for (uint64_t rep = 0; rep < o->reps && off.state == ROW_OK && on.state == ROW_OK; ++rep) {
      run_rep(&off, w, live, rep, o->reps);
      dao_status s = dao_trace_start("/dev/null", topts);
      if (s != DAO_OK) {
        set_note(&on, ROW_FAILED, "dao_trace_start: %s", dao_last_error());
        break;
      }
      run_rep(&on, w, live, rep, o->reps);
      dao_trace_stats ts;
      memset(&ts, 0, sizeof ts);
      ts.struct_size = sizeof ts;
      dao_trace_stop();
      if (dao_trace_get_stats(&ts) == DAO_OK) lost += ts.lost;
    }
    char label[96];
    snprintf(label, sizeof label, "libdao %s (cpu), %s", strategy,
             topts[0] != '\0' ? topts : "defaults");
    if (off.state == ROW_OK && on.state == ROW_OK) {
      finish_row(&off, o->reps);
      finish_row(&on, o->reps);
      printf("%-44s %9.1f %9.1f %9.1f %9.1f %12llu\n", label, off.median_ns, on.median_ns,
             on.median_ns - off.median_ns, on.min_ns - off.min_ns, (unsigned long long)lost);
    } else {
      printf("%-44s %s %s\n", label, off.state != ROW_OK ? off.note : "", on.note);
      finish_row(&off, o->reps);
      finish_row(&on, o->reps);
    }
  }
  printf("(median of %llu repetitions each; 'added min': the fastest 'on' less the fastest\n"
         " 'off', what a loaded machine's preemptions disturb least; 'off' is the build as it\n"
         " ships: one branch on a global flag per call; compare it with the dao-caching /\n"
         " dao-buddy rows above)\n",
         (unsigned long long)o->reps);
  free(live);
}

int main(int argc, char **argv) {
  options o;
  parse_options(argc, argv, &o);
  if (o.child != NULL) return child_main(&o);

  const char *build_type = DAO_BENCH_BUILD_TYPE[0] != '\0' ? DAO_BENCH_BUILD_TYPE : "unknown";
#ifdef NDEBUG
  const char *ndebug = "NDEBUG";
#else
  const char *ndebug = "no NDEBUG";
#endif
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  char b1[32], b2[32];
  printf("bench_alloc: libdao %s, build %s (%s)%s\n", dao_version_string(), build_type, ndebug,
         BENCH_SANITIZED ? ", sanitizers on" : "");
  printf("config: %ld cpus online, steps %llu, slots %llu, reps %llu, seed %llu, sizes %s..%s "
         "log-uniform\n",
         cpus, (unsigned long long)o.steps, (unsigned long long)o.slots, (unsigned long long)o.reps,
         (unsigned long long)o.seed, format_bytes(MIN_SIZE, b1, sizeof b1),
         format_bytes(MAX_SIZE, b2, sizeof b2));
  if (!is_optimised_build_type(build_type) || BENCH_SANITIZED) {
    printf("WARNING: built as '%s'%s; optimisation may be off and the timings are not "
           "representative (configure with -DCMAKE_BUILD_TYPE=Release)\n",
           build_type, BENCH_SANITIZED ? " with sanitizers" : "");
  }
  fflush(stdout);

  workload w;
  make_workload(&o, &w);
  if (o.recording) {
    print_recording_cost(&o, &w);
    free(w.sizes);
    free(w.victims);
    return 0;
  }

  /* The SIM device must hold the workload with room for buddy rounding. */
  size_t sim_capacity = SIM_MIN_CAPACITY;
  const size_t sim_share = row_selected(&o, "dao-caching-exact-sim") ? 6 : 4; /* a third SIM row */
  while (sim_capacity / sim_share < w.peak_requested && sim_capacity < ((size_t)1 << 50))
    sim_capacity *= 2;

  row rows[ROW_COUNT];
  memset(rows, 0, sizeof rows);
  static const char *const labels[ROW_COUNT] = {"glibc malloc",
                                                "jemalloc",
                                                "mimalloc",
                                                "libdao buddy (cpu)",
                                                "libdao dao_alloc",
                                                "libdao buddy (sim)",
                                                "libdao caching (cpu)",
                                                "libdao caching (sim)",
                                                "libdao caching exact (cpu)",
                                                "libdao caching exact (sim)",
                                                "libdao caching (cuda)",
                                                "libdao caching exact (cuda)",
                                                "libdao buddy (cuda)"};
  for (size_t i = 0; i < ROW_COUNT; ++i) {
    rows[i].key = kRowKeys[i];
    rows[i].label = labels[i];
    rows[i].state = ROW_SKIPPED;
    rows[i].sim_device = -1;
  }

  /* Set every row up (the child-process rows run to completion here), then
     time in rounds: each round runs one repetition of every in-process row,
     so that a slow spell of the machine falls on all rows alike. */
  fprintf(stderr, "timing, ns/pair of each repetition:\n");
  if (row_selected(&o, "glibc")) prepare_libc(&rows[0], o.reps);
  if (row_selected(&o, "jemalloc"))
    prepare_dlopen(&rows[1], "libjemalloc.so.2", "malloc", "free", &o);
  if (row_selected(&o, "mimalloc"))
    prepare_dlopen(&rows[2], "libmimalloc.so.2", "mi_malloc", "mi_free", &o);
  if (row_selected(&o, "dao-buddy"))
    prepare_dao_object(&rows[3], dao_place_cpu(), "buddy", NULL, "cpu", o.reps);
  if (row_selected(&o, "dao-default")) prepare_dao_default(&rows[4], o.reps);
  if (row_selected(&o, "dao-caching"))
    prepare_dao_object(&rows[6], dao_place_cpu(), "caching", o.caching_config, "cpu", o.reps);
  /* The caching strategy without fast reuse: the exact best-fit path. */
  if (row_selected(&o, "dao-caching-exact"))
    prepare_dao_object(&rows[8], dao_place_cpu(), "caching", "fast_reuse=false", "cpu", o.reps);
  /* The SIM rows share one device, big enough for all at once. */
  static const char *const sim_keys[] = {"dao-sim", "dao-caching-sim", "dao-caching-exact-sim"};
  static const char *const sim_strategies[] = {"buddy", "caching", "caching"};
  static const size_t sim_rows[] = {5, 7, 9};
  int sim_configured = 0;
  for (size_t k = 0; k < 3; ++k) {
    row *r = &rows[sim_rows[k]];
    if (!row_selected(&o, sim_keys[k])) continue;
    dao_status s = DAO_OK;
    if (!sim_configured) s = dao_sim_configure(1, &sim_capacity);
    if (s != DAO_OK) {
      set_note(r, ROW_UNAVAILABLE, "not available (dao_sim_configure: %s: %s)",
               dao_status_string(s), dao_last_error());
      continue;
    }
    sim_configured = 1;
    char where[64];
    snprintf(where, sizeof where, "sim:0 of %s", format_bytes((double)sim_capacity, b1, sizeof b1));
    prepare_dao_object(r, dao_place_sim(0), sim_strategies[k],
                       k == 1   ? o.caching_config
                       : k == 2 ? "fast_reuse=false"
                                : NULL,
                       where, o.reps);
    r->sim_device = 0;
  }
  /* The device rows, on cuda:0: the same strategies as the cpu rows, the
     blocks not written (device memory). */
  static const char *const cuda_keys[] = {"dao-caching-cuda", "dao-caching-exact-cuda",
                                          "dao-buddy-cuda"};
  static const char *const cuda_strategies[] = {"caching", "caching", "buddy"};
  for (size_t k = 0; k < 3; ++k) {
    row *r = &rows[10 + k];
    if (!row_selected(&o, cuda_keys[k])) continue;
    r->no_touch = 1;
    int count = 0;
    dao_status s = dao_place_device_count(DAO_PLACE_CUDA, &count);
    if (s != DAO_OK) {
      set_note(r, ROW_UNAVAILABLE, "not available (dao_place_device_count(cuda): %s: %s)",
               dao_status_string(s), dao_last_error());
      continue;
    }
    if (count < 1) {
      set_note(r, ROW_UNAVAILABLE, "not available (dao_place_device_count(cuda) = 0: %s)",
               dao_place_backend_description(DAO_PLACE_CUDA));
      continue;
    }
    prepare_dao_object(r, dao_place_cuda(0), cuda_strategies[k],
                       k == 0   ? o.caching_config
                       : k == 1 ? "fast_reuse=false"
                                : NULL,
                       "cuda:0", o.reps);
  }
  /* The SIM cost profile (DAO_SIM_COSTS), for the simulated driver time. */
  const char *sim_profile = NULL;
  if (sim_configured && dao_sim_get_profile(&sim_profile) != DAO_OK) sim_profile = NULL;
  void **live = xcalloc(w.slots, sizeof *live);
  for (uint64_t rep = 0; rep < o.reps; ++rep) {
    fprintf(stderr, "  round %llu/%llu:", (unsigned long long)rep + 1, (unsigned long long)o.reps);
    for (size_t i = 0; i < ROW_COUNT; ++i) {
      row *r = &rows[i];
      if (!r->in_process || r->state != ROW_OK) continue;
      run_rep(r, &w, live, rep, o.reps);
      if (r->state == ROW_OK) fprintf(stderr, " %s %.1f", r->key, r->times[rep]);
      else fprintf(stderr, " %s FAILED", r->key);
      fflush(stderr);
    }
    fprintf(stderr, "\n");
  }
  free(live);
  for (size_t i = 0; i < ROW_COUNT; ++i) finish_row(&rows[i], o.reps);

  const double glibc = rows[0].state == ROW_OK ? rows[0].median_ns : 0.0;
  printf("\n%-26s %17s %9s %15s  %s\n", "allocator", "ns/pair (median)", "min", "ratio to glibc",
         "notes");
  int failures = 0;
  for (size_t i = 0; i < ROW_COUNT; ++i) {
    const row *r = &rows[i];
    if (r->state == ROW_SKIPPED) continue;
    if (r->state == ROW_OK) {
      char ratio[32] = "-";
      if (glibc > 0) snprintf(ratio, sizeof ratio, "%.2f", r->median_ns / glibc);
      printf("%-26s %17.1f %9.1f %15s  %s\n", r->label, r->median_ns, r->min_ns, ratio, r->note);
    } else {
      printf("%-26s %s\n", r->label, r->note);
      if (r->state == ROW_FAILED) ++failures;
    }
  }

  print_sim_costs(rows, ROW_COUNT, sim_profile, &o);

  int any_stats = 0;
  for (size_t i = 0; i < ROW_COUNT; ++i) any_stats |= rows[i].have_stats;
  if (any_stats) {
    char b3[32];
    printf("\nlibdao memory (dao_allocator_get_stats); the workload's peak requested is %s\n",
           format_bytes((double)w.peak_requested, b1, sizeof b1));
    printf("%-26s %15s %17s %15s %10s\n", "allocator", "peak reserved", "allocated at end",
           "final allocated", "overhead");
    for (size_t i = 0; i < ROW_COUNT; ++i) {
      const row *r = &rows[i];
      if (!r->have_stats) continue;
      double overhead = (double)r->final_stats.peak_reserved_bytes / (double)w.peak_requested;
      printf("%-26s %15s %17s %15s %9.2fx\n", r->label,
             format_bytes((double)r->final_stats.peak_reserved_bytes, b1, sizeof b1),
             format_bytes((double)r->end_of_steps.allocated_bytes, b2, sizeof b2),
             format_bytes((double)r->final_stats.allocated_bytes, b3, sizeof b3), overhead);
    }
    printf("(allocated at end: block bytes live after the last rep's steps; final allocated:\n"
           " after every block was freed; overhead: peak reserved / peak requested)\n");
  }
  if (o.only == NULL) print_recording_cost(&o, &w);
  if (failures != 0) printf("\n%d allocator(s) failed; see the rows above\n", failures);
  free(w.sizes);
  free(w.victims);
  return failures != 0 ? 1 : 0;
}
