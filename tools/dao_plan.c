/*
 * dao plan TRACE: the smallest SIM device capacity on which a trace runs,
 * for the place's default allocator and for each strategy and config
 * listed, next to the trace's max load and a best-fit bound.
 *
 * A SIM device's capacity is fixed once the process uses it, so each probe
 * runs in a child process (fork after the trace is read: the child
 * configures its SIM device, replays, and exits 0 when everything fit, 3
 * when an allocation ran out of memory). The search is the one of
 * bench/bench_traces.c, so the figures agree with it: steps of 64 KiB
 * (max load < 64 MiB) or 1 MiB, from the max load up; the first upper
 * bound 4 x the max load, doubled while it fails, up to 64 x.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dao_history.h"
#include "dao_tool.h"

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define FINE_STEP (64 * KIB)
#define COARSE_STEP MIB
#define COARSE_FROM (64 * MIB)
#define FIRST_UPPER 4
#define MAX_UPPER 64
#define MAX_ROWS 32

enum { PROBE_FITS = 0, PROBE_ERROR = 1, PROBE_BAD_INPUT = 2, PROBE_OOM = 3 };

typedef struct row {
  const char *strategy; /* NULL: the place default */
  const char *config;   /* NULL: defaults */
  uint64_t capacity;    /* smallest that fits; 0: none up to the limit */
  uint64_t peak_reserved;
  unsigned probes;
  int beyond; /* did not fit at MAX_UPPER x the max load */
} row;

/* ------------------------------------------------------------------------ */
/* The best-fit bound: an address-ordered heap with best-fit placement,     */
/* coalescing, 256-byte alignment; its highest address is the bound.        */

typedef struct bf_block {
  uint64_t addr, size;
  int32_t prev, next;   /* address order; -1: none */
  int32_t fprev, fnext; /* free list of its bin */
  int free;
} bf_block;

#define BF_BINS 64

typedef struct bf_heap {
  bf_block *b;
  size_t count, capacity;
  int32_t *unused; /* recycled slots */
  size_t unused_count, unused_capacity;
  int32_t bins[BF_BINS];
  int32_t last; /* highest block */
  uint64_t top, peak;
} bf_heap;

static int bin_of(uint64_t size) {
  int k = 0;
  while (size > 1 && k < BF_BINS - 1) {
    size >>= 1;
    ++k;
  }
  return k;
}

static void bf_unlink_free(bf_heap *h, int32_t i) {
  bf_block *x = &h->b[i];
  if (x->fprev >= 0) h->b[x->fprev].fnext = x->fnext;
  else h->bins[bin_of(x->size)] = x->fnext;
  if (x->fnext >= 0) h->b[x->fnext].fprev = x->fprev;
  x->free = 0;
}

static void bf_link_free(bf_heap *h, int32_t i) {
  bf_block *x = &h->b[i];
  int k = bin_of(x->size);
  x->free = 1;
  x->fprev = -1;
  x->fnext = h->bins[k];
  if (x->fnext >= 0) h->b[x->fnext].fprev = i;
  h->bins[k] = i;
}

static int32_t bf_new(bf_heap *h) {
  if (h->unused_count != 0) return h->unused[--h->unused_count];
  if (h->count == h->capacity) {
    size_t cap = h->capacity != 0 ? h->capacity * 2 : 1024;
    bf_block *b = (bf_block *)realloc(h->b, cap * sizeof *b);
    if (b == NULL) return -1;
    h->b = b;
    h->capacity = cap;
  }
  return (int32_t)h->count++;
}

static void bf_drop(bf_heap *h, int32_t i) {
  if (h->unused_count == h->unused_capacity) {
    size_t cap = h->unused_capacity != 0 ? h->unused_capacity * 2 : 1024;
    int32_t *u = (int32_t *)realloc(h->unused, cap * sizeof *u);
    if (u == NULL) return; /* the slot is leaked, nothing else */
    h->unused = u;
    h->unused_capacity = cap;
  }
  h->unused[h->unused_count++] = i;
}

/* Returns the block's slot, or -1 (out of host memory). */
static int32_t bf_alloc(bf_heap *h, uint64_t size) {
  int32_t best = -1, i;
  int k;
  for (k = bin_of(size); k < BF_BINS && best < 0; ++k)
    for (i = h->bins[k]; i >= 0; i = h->b[i].fnext)
      if (h->b[i].size >= size && (best < 0 || h->b[i].size < h->b[best].size)) best = i;
  if (best < 0) {
    /* grow the heap: extend a free last block, or add one */
    if (h->last >= 0 && h->b[h->last].free) {
      best = h->last;
      bf_unlink_free(h, best);
      h->top += size - h->b[best].size;
      h->b[best].size = size;
    } else {
      best = bf_new(h);
      if (best < 0) return -1;
      h->b[best].addr = h->top;
      h->b[best].size = size;
      h->b[best].prev = h->last;
      h->b[best].next = -1;
      h->b[best].free = 0;
      if (h->last >= 0) h->b[h->last].next = best;
      h->last = best;
      h->top += size;
    }
    if (h->top > h->peak) h->peak = h->top;
    return best;
  }
  bf_unlink_free(h, best);
  if (h->b[best].size > size) { /* split: the rest stays free, after it */
    int32_t rest = bf_new(h);
    if (rest >= 0) {
      bf_block *x = &h->b[best], *y = &h->b[rest];
      y->addr = x->addr + size;
      y->size = x->size - size;
      y->prev = best;
      y->next = x->next;
      if (x->next >= 0) h->b[x->next].prev = rest;
      else h->last = rest;
      x->next = rest;
      x->size = size;
      bf_link_free(h, rest);
    }
  }
  return best;
}

static void bf_free(bf_heap *h, int32_t i) {
  int32_t n = h->b[i].next, p = h->b[i].prev;
  if (n >= 0 && h->b[n].free) { /* merge the next one in */
    bf_unlink_free(h, n);
    h->b[i].size += h->b[n].size;
    h->b[i].next = h->b[n].next;
    if (h->b[n].next >= 0) h->b[h->b[n].next].prev = i;
    else h->last = i;
    bf_drop(h, n);
  }
  if (p >= 0 && h->b[p].free) { /* merge into the previous one */
    bf_unlink_free(h, p);
    h->b[p].size += h->b[i].size;
    h->b[p].next = h->b[i].next;
    if (h->b[i].next >= 0) h->b[h->b[i].next].prev = p;
    else h->last = p;
    bf_drop(h, i);
    i = p;
  }
  bf_link_free(h, i);
}

/* The peak extent of best fit over the trace, or 0 (out of host memory). */
static uint64_t best_fit_bound(const dao_trace *t, uint32_t allocator) {
  bf_heap h;
  int32_t *slot;
  uint64_t peak = 0;
  size_t i;
  int k;
  memset(&h, 0, sizeof h);
  h.last = -1;
  for (k = 0; k < BF_BINS; ++k) h.bins[k] = -1;
  slot = (int32_t *)malloc((t->count != 0 ? t->count : 1) * sizeof *slot);
  if (slot == NULL) return 0;
  for (i = 0; i < t->count; ++i) {
    const dao_tr_record *r = &t->records[i];
    slot[i] = -1;
    if (allocator != 0 && r->alloc != allocator) continue;
    if (r->kind == DAO_TR_ALLOC && r->req != 0) {
      slot[i] = bf_alloc(&h, (r->req + 255) / 256 * 256);
      if (slot[i] < 0) goto out;
    } else if (r->kind == DAO_TR_FREE && slot[r->match] >= 0) {
      bf_free(&h, slot[r->match]);
      slot[r->match] = -1;
    }
  }
  peak = h.peak;
out:
  free(slot);
  free(h.b);
  free(h.unused);
  return peak;
}

/* ------------------------------------------------------------------------ */
/* Probes                                                                   */

/* Runs one replay on a SIM device of `capacity` in a child process.
   Returns PROBE_*; *peak_reserved receives the child's peak (through a
   pipe) when it fits. */
static int probe(const dao_trace *t, const row *rw, uint32_t allocator, uint64_t capacity,
                 uint64_t *peak_reserved) {
  int fds[2], status = 0;
  pid_t pid;
  if (pipe(fds) != 0) return PROBE_ERROR;
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return PROBE_ERROR;
  }
  if (pid == 0) {
    dao_replay_options o;
    dao_replay_result r;
    int rc;
    uint64_t peak;
    close(fds[0]);
    setenv("DAO_PROGRESS", "0", 1);
    memset(&o, 0, sizeof o);
    o.place = dao_place_sim(0);
    o.sim = 1;
    o.capacity = capacity;
    o.strategy = rw->strategy;
    o.config = rw->config;
    o.allocator = allocator;
    rc = dao_replay_run(t, &o, &r);
    if (rc != 0) {
      fprintf(stderr, "dao: plan: %s\n", r.message);
      _exit(r.setup_failed && r.status == DAO_ERR_INVALID_ARGUMENT ? PROBE_BAD_INPUT : PROBE_ERROR);
    }
    peak = r.stats.peak_reserved_bytes;
    if (write(fds[1], &peak, sizeof peak) != (ssize_t)sizeof peak) _exit(PROBE_ERROR);
    _exit(r.fits ? PROBE_FITS : PROBE_OOM);
  }
  close(fds[1]);
  {
    uint64_t peak = 0;
    ssize_t got;
    do {
      got = read(fds[0], &peak, sizeof peak);
    } while (got < 0 && errno == EINTR);
    if (got == (ssize_t)sizeof peak && peak_reserved != NULL) *peak_reserved = peak;
  }
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return PROBE_ERROR;
  if (!WIFEXITED(status)) return PROBE_ERROR;
  return WEXITSTATUS(status);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static const char *row_name(const row *r, char *buf, size_t size) {
  if (r->strategy == NULL && r->config == NULL) snprintf(buf, size, "libdao defaults");
  else
    snprintf(buf, size, "%s%s%s%s", r->strategy != NULL ? r->strategy : "default",
             r->config != NULL ? " (" : "", r->config != NULL ? r->config : "",
             r->config != NULL ? ")" : "");
  return buf;
}

/* The search of one row. Returns 0, or the PROBE_* code that stopped it. */
static int search(const dao_trace *t, row *rw, uint32_t allocator, uint64_t max_load,
                  unsigned row_index, unsigned row_count) {
  const uint64_t step = max_load < COARSE_FROM ? FINE_STEP : COARSE_STEP;
  uint64_t lo = ceil_div(max_load, step) - 1; /* lo * step < max load: cannot run */
  uint64_t hi = ceil_div(FIRST_UPPER * max_load, step);
  const uint64_t limit = ceil_div(MAX_UPPER * max_load, step);
  uint64_t peak = 0;
  char name[256], b1[32];
  int rc;
  row_name(rw, name, sizeof name);
  /* an upper bound that fits */
  for (;;) {
    dao_tool_format_bytes((double)(hi * step), b1, sizeof b1);
    dao_history_progress("plan %u/%u, %s: probing %s (probe %u)", row_index, row_count, name, b1,
                         rw->probes + 1);
    ++rw->probes;
    rc = probe(t, rw, allocator, hi * step, &peak);
    if (rc == PROBE_FITS) break;
    if (rc != PROBE_OOM) return rc;
    lo = hi;
    if (hi >= limit) {
      rw->beyond = 1;
      rw->capacity = 0;
      return 0;
    }
    hi = hi * 2 > limit ? limit : hi * 2;
  }
  rw->peak_reserved = peak;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    uint64_t p = 0;
    dao_tool_format_bytes((double)(mid * step), b1, sizeof b1);
    dao_history_progress("plan %u/%u, %s: probing %s (probe %u)", row_index, row_count, name, b1,
                         rw->probes + 1);
    ++rw->probes;
    rc = probe(t, rw, allocator, mid * step, &p);
    if (rc == PROBE_FITS) {
      hi = mid;
      rw->peak_reserved = p;
    } else if (rc == PROBE_OOM) {
      lo = mid;
    } else {
      return rc;
    }
  }
  rw->capacity = hi * step;
  return 0;
}

void dao_usage_plan(FILE *out) {
  fputs("usage: dao plan TRACE [--strategy S [--config C ...]] ... [--config C] ...\n"
        "                [--allocator ID] [--json]\n"
        "\n"
        "Finds the smallest SIM device capacity on which TRACE (docs/trace-format.md)\n"
        "runs without running out of memory: for the place's default allocator\n"
        "(libdao defaults) and for each strategy and config listed, by a binary search\n"
        "of replays (`dao replay`), each in a child process. Prints them next to the\n"
        "trace's max load (the most bytes live at once: no allocator needs less) and a\n"
        "best-fit bound (what an ideal best-fit heap with 256-byte alignment reaches).\n"
        "\n"
        "  --strategy S     add a row for strategy S (buddy, caching, system, limit)\n"
        "  --config C       give the last --strategy (or the default one) config C;\n"
        "                   repeat for more rows, e.g.\n"
        "                   --strategy caching --config expandable_segments=false\n"
        "  --allocator ID   plan for this allocator of the trace only (default: all)\n"
        "  --json           one JSON object on stdout\n"
        "\n"
        "Search steps of 64 KiB (max load < 64 MiB) or 1 MiB, up to 64 x the max load.\n"
        "A progress line goes to stderr on a terminal (DAO_PROGRESS=1 forces it).\n"
        "Exit status: 0 done, 1 a library failure, 2 a bad command line, trace,\n"
        "strategy or config.\n",
        out);
}

int dao_main_plan(int argc, char **argv) {
  const char *path = NULL, *last_strategy = NULL;
  row rows[MAX_ROWS];
  unsigned count = 1, i;
  int json = 0, last_has_config = 0, rc = 0, a;
  uint32_t allocator = 0;
  uint64_t max_load = 0, bound;
  dao_trace t;
  double start = dao_tool_now();
  char b1[32], b2[32], b3[32], name[256];

  memset(rows, 0, sizeof rows);
  for (a = 0; a < argc; ++a) {
    const char *arg = argv[a];
    if (dao_tool_is_help(arg)) {
      dao_usage_plan(stdout);
      return 0;
    } else if (strcmp(arg, "--json") == 0) {
      json = 1;
    } else if (strcmp(arg, "--strategy") == 0 || strcmp(arg, "--config") == 0 ||
               strcmp(arg, "--allocator") == 0) {
      const char *value;
      if (a + 1 >= argc)
        return dao_tool_bad_usage("plan: missing value after", arg, "dao plan --help");
      value = argv[++a];
      if (strcmp(arg, "--allocator") == 0) {
        char *end = NULL;
        unsigned long id = strtoul(value, &end, 10);
        if (end == value || *end != '\0' || id == 0 || id > UINT32_MAX)
          return dao_tool_bad_usage("plan: --allocator: not an allocator id", value,
                                    "dao plan --help");
        allocator = (uint32_t)id;
        continue;
      }
      /* --strategy S adds a row; --config C gives it C, or adds a row of
         the last strategy (the default before any) with C */
      if (strcmp(arg, "--config") == 0 && count > 1 && !last_has_config &&
          rows[count - 1].config == NULL) {
        rows[count - 1].config = value;
        last_has_config = 1;
        continue;
      }
      if (count == MAX_ROWS)
        return dao_tool_bad_usage("plan: too many rows (at most 32) at", arg, "dao plan --help");
      if (strcmp(arg, "--strategy") == 0) {
        rows[count].strategy = value;
        last_strategy = value;
        last_has_config = 0;
      } else {
        rows[count].strategy = last_strategy;
        rows[count].config = value;
        last_has_config = 1;
      }
      ++count;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return dao_tool_bad_usage("plan: unknown option", arg, "dao plan --help");
    } else if (path == NULL) {
      path = arg;
    } else {
      return dao_tool_bad_usage("plan: unexpected argument", arg, "dao plan --help");
    }
  }
  if (path == NULL)
    return dao_tool_bad_usage("plan: no trace file given; usage", "dao plan TRACE",
                              "dao plan --help");
  rc = dao_history_load_trace(path, &t, json);
  if (rc != 0) return rc;
  dao_history_max_load(&t, allocator, &max_load, NULL);
  if (max_load == 0) {
    fprintf(stderr, "dao: plan: %s: no allocation to plan for%s\n", path,
            allocator != 0 ? " (of that allocator)" : "");
    dao_trace_free(&t);
    return DAO_TOOL_EXIT_USAGE;
  }
  bound = best_fit_bound(&t, allocator);
  for (i = 0; i < count; ++i) {
    int s = search(&t, &rows[i], allocator, max_load, i + 1, count);
    if (s != 0) {
      dao_history_progress_done();
      fprintf(stderr, "dao: plan: %s: the replay failed (see above)\n",
              row_name(&rows[i], name, sizeof name));
      dao_trace_free(&t);
      return s == PROBE_BAD_INPUT ? DAO_TOOL_EXIT_USAGE : DAO_TOOL_EXIT_FAILURE;
    }
  }
  dao_history_progress_done();
  if (json) {
    printf("{\"trace\":");
    dao_tool_json_string(stdout, path);
    printf(",\"records\":%zu,\"max_load\":%llu,\"best_fit\":%llu,\"step\":%llu,\"rows\":[", t.count,
           (unsigned long long)max_load, (unsigned long long)bound,
           (unsigned long long)(max_load < COARSE_FROM ? FINE_STEP : COARSE_STEP));
    for (i = 0; i < count; ++i) {
      printf("%s{\"strategy\":", i != 0 ? "," : "");
      if (rows[i].strategy != NULL) dao_tool_json_string(stdout, rows[i].strategy);
      else printf("null");
      printf(",\"config\":");
      if (rows[i].config != NULL) dao_tool_json_string(stdout, rows[i].config);
      else printf("null");
      printf(",\"capacity\":");
      if (rows[i].beyond)
        printf("null,\"exceeds\":%llu", (unsigned long long)(MAX_UPPER * max_load));
      else printf("%llu", (unsigned long long)rows[i].capacity);
      printf(",\"peak_reserved\":%llu,\"probes\":%u}", (unsigned long long)rows[i].peak_reserved,
             rows[i].probes);
    }
    printf("],\"seconds\":%.3f}\n", dao_tool_now() - start);
  } else {
    dao_tool_format_bytes((double)(max_load), b1, sizeof b1);
    dao_tool_format_bytes((double)(bound), b2, sizeof b2);
    printf("trace:     %s (%zu records)\n", path, t.count);
    printf("max load:  %s (the most bytes live at once)\n", b1);
    printf("best fit:  %s (%.3fx; an ideal best-fit heap)\n", b2, (double)bound / (double)max_load);
    printf("\n%-48s %12s %8s %14s %7s\n", "allocator", "capacity", "ratio", "peak reserved",
           "probes");
    for (i = 0; i < count; ++i) {
      row_name(&rows[i], name, sizeof name);
      if (rows[i].beyond) {
        dao_tool_format_bytes((double)(MAX_UPPER * max_load), b3, sizeof b3);
        printf("%-48s %10s %s %8s %14s %7u\n", name, ">", b3, "", "", rows[i].probes);
        continue;
      }
      dao_tool_format_bytes((double)(rows[i].capacity), b1, sizeof b1);
      dao_tool_format_bytes((double)(rows[i].peak_reserved), b2, sizeof b2);
      printf("%-48s %12s %7.3fx %14s %7u\n", name, b1, (double)rows[i].capacity / (double)max_load,
             b2, rows[i].probes);
    }
    /* the sentence */
    printf("\nThis job needs ");
    for (i = 0; i < count; ++i) {
      row_name(&rows[i], name, sizeof name);
      if (rows[i].beyond) {
        dao_tool_format_bytes((double)(MAX_UPPER * max_load), b1, sizeof b1);
        printf("%smore than %s with %s", i == 0 ? "" : i + 1 == count ? " and " : ", ", b1, name);
      } else {
        dao_tool_format_bytes((double)(rows[i].capacity), b1, sizeof b1);
        printf("%sa %s card with %s", i == 0 ? "" : i + 1 == count ? " and " : ", ", b1, name);
      }
    }
    printf(" (searched in %.1f s).\n", dao_tool_now() - start);
  }
  dao_trace_free(&t);
  return 0;
}
