/*
 * bench_tiered: tiered pools (include/dao/tiered.h) on real tensor access
 * traces, replayed as kernels on a simulated device.
 *
 * Each trace (JSON lines, see ../shared/traces/README.md) is a list of
 * events in order:
 *   {"ev":"alloc","seq":S,"sid":ID,"bytes":B,"pre":P}  storage ID appears
 *   {"ev":"op","seq":S,"op":NAME,"in":[[ID,B],...],"out":[[ID,B],...]}
 *   {"ev":"free","seq":S,"sid":ID}                      storage ID is dead
 * Every storage becomes a tensor of a tiered pool on dao_place_sim(0) with
 * the CPU as its host tier; a pre-existing one (P true) is written once with
 * a deterministic pattern at its alloc event; every op becomes a kernel whose
 * function reads the first word of each input and writes a few words of each
 * output derived from them; a free releases the tensor.
 *
 * For device budgets of 25 %, 50 % and 75 % of the trace's peak live bytes
 * (never below the largest op's working set) and each policy, the program
 * reports the bytes moved each way (dao_tiered_get_stats) and kernels per
 * second, beside a reference: the same furthest-next-use rule simulated here
 * with the budget as a plain byte count, and a floor on the bytes that any
 * policy must fetch back. It checks the results (a hash of every tensor
 * still held at the end) against a run with an unlimited budget, measures
 * the fraction of copy time that prefetching hides with a limited SIM link
 * bandwidth, and the executor's overhead per kernel when everything fits.
 *
 * Exit status: 0 when every run completed with the right results (targets
 * never fail a run), 1 on an error or a wrong result, 2 for bad flags, 77
 * when there is nothing to run (no traces, or no tiered pools in this
 * libdao). See bench/README.md.
 */
#define _GNU_SOURCE /* clock_gettime */

#include <dao.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_common.h"

#ifndef DAO_BENCH_BUILD_TYPE
#define DAO_BENCH_BUILD_TYPE ""
#endif
#ifndef DAO_TRACES_DIR
#define DAO_TRACES_DIR "../shared/traces"
#endif

#define EXIT_ERROR 1
#define EXIT_BAD_FLAGS 2
#define EXIT_SKIP 77

#define KIB ((uint64_t)1 << 10)
#define MIB ((uint64_t)1 << 20)
#define NONE UINT64_MAX
/* Working sets are also computed with each tensor rounded up to this, in
   case the pool aligns its blocks; the raised budget uses the larger. */
#define ALIGN_BYTES 256
/* Words written to each output by a kernel (fewer if the tensor is smaller). */
#define OUT_WORDS 4
/* The limited link: 16 GB/s scaled down 8 times, so that copies take
   noticeable time on these small traces; kernels then model compute time
   at SPIN_RATE bytes per second of their working set. */
#define LINK_BANDWIDTH "2GB/s"
#define SPIN_BYTES_PER_S 16e9
#define TARGET_RATIO 1.10
#define TARGET_OVERHEAD_US 2.0

static const char *const policies[] = {"belady", "lru", "size_aware"};
#define NPOLICIES 3
static const unsigned budget_percent[] = {25, 50, 75};
#define NBUDGETS 3

/* ------------------------------------------------------------------------ */
/* Utilities                                                                */

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n != 0 ? n : 1);
  if (q == NULL) {
    fprintf(stderr, "bench_tiered: out of host memory (%zu bytes)\n", n);
    exit(EXIT_ERROR);
  }
  return q;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mix64(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

typedef struct options {
  const char *traces;
  int traces_given;
  const char *only;
  int quick;
} options;

static void usage(FILE *out, const char *prog) {
  fprintf(out,
          "usage: %s [--traces DIR] [--only LIST] [--quick]\n"
          "\n"
          "Replays tensor access traces (JSON lines: alloc / op / free) as kernels of a\n"
          "tiered pool on dao_place_sim(0) with the CPU as host tier, at device budgets of\n"
          "25 %%, 50 %% and 75 %% of each trace's peak live bytes, for the policies belady,\n"
          "lru and size_aware; prints bytes moved each way against a reference simulation\n"
          "of the furthest-next-use rule, the copy time hidden by prefetch with a link of\n"
          "%s, and the executor's overhead per kernel when everything fits.\n"
          "\n"
          "  --traces DIR  every *.jsonl in DIR/ops, or in DIR itself when it has no ops/;\n"
          "                default %s\n"
          "  --only LIST   only these traces, comma-separated: a file name without .jsonl\n"
          "                (mlp_adam_5steps) or its part before the first '_' (mlp)\n"
          "  --quick       only the smallest trace (ctest smoke test)\n"
          "  --help        this text\n"
          "\n"
          "Exit status: 0 every run completed with the right results (targets never fail a\n"
          "run), 1 an error or a wrong result, 2 bad flags, 77 nothing to run (no traces,\n"
          "or this libdao has no tiered pools).\n",
          prog, LINK_BANDWIDTH, DAO_TRACES_DIR);
}

static void parse_options(int argc, char **argv, options *o) {
  const char *prog = argv[0];
  memset(o, 0, sizeof *o);
  o->traces = DAO_TRACES_DIR;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout, prog);
      exit(0);
    }
    if (strcmp(arg, "--quick") == 0) {
      o->quick = 1;
      continue;
    }
    static const char *const valued[] = {"--traces", "--only"};
    const char *value = NULL;
    const char *flag =
        match_valued_flag(prog, argc, argv, &i, valued, sizeof valued / sizeof valued[0], &value);
    if (flag == NULL) bad_flag(prog, "unknown argument '%s'", arg);
    if (*value == '\0') bad_flag(prog, "%s needs a value", flag);
    if (strcmp(flag, "--traces") == 0) {
      o->traces = value;
      o->traces_given = 1;
    } else {
      o->only = value;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Traces                                                                   */

enum { EV_ALLOC = 0, EV_OP = 1, EV_FREE = 2 };

typedef struct event {
  int kind;
  size_t index; /* storage (alloc, free) or op */
} event;

typedef struct storage {
  uint64_t sid;
  uint64_t bytes;
  int pre;
  int freed; /* has a free event: released before the end */
  /* Ops that use it (distinct, ascending). */
  size_t *uses;
  size_t nuses, capuses;
} storage;

typedef struct op {
  size_t in_first, in_count;   /* into trace.refs: distinct storages read */
  size_t out_first, out_count; /* distinct storages written */
  size_t ws_first, ws_count;   /* into trace.ws: distinct storages used */
  uint64_t ws_bytes;           /* their bytes */
  uint64_t ws_aligned;         /* with ALIGN_BYTES rounding */
} op;

typedef struct trace {
  char *path, *name;
  storage *st;
  size_t nst, capst;
  op *ops;
  size_t nops, capops;
  event *ev;
  size_t nev, capev;
  size_t *refs;
  size_t nrefs, caprefs;
  size_t *ws;
  size_t nws;
  uint64_t peak_live, max_ws, max_ws_aligned, total_bytes, held_bytes;
  size_t max_ws_op;
  /* sid -> storage index: open addressing */
  uint64_t *hkeys;
  size_t *hvals;
  size_t hcap;
} trace;

static size_t *hfind(trace *t, uint64_t sid, int insert) {
  if (insert && (t->nst + 1) * 2 > t->hcap) {
    size_t ncap = t->hcap ? t->hcap * 2 : 1024;
    uint64_t *nk = xmalloc(ncap * sizeof *nk);
    size_t *nv = xmalloc(ncap * sizeof *nv);
    for (size_t i = 0; i < ncap; ++i) nk[i] = NONE;
    for (size_t i = 0; i < t->hcap; ++i) {
      if (t->hkeys[i] == NONE) continue;
      size_t h = (size_t)mix64(t->hkeys[i]) & (ncap - 1);
      while (nk[h] != NONE) h = (h + 1) & (ncap - 1);
      nk[h] = t->hkeys[i];
      nv[h] = t->hvals[i];
    }
    free(t->hkeys);
    free(t->hvals);
    t->hkeys = nk;
    t->hvals = nv;
    t->hcap = ncap;
  }
  if (t->hcap == 0) return NULL;
  size_t h = (size_t)mix64(sid) & (t->hcap - 1);
  while (t->hkeys[h] != NONE) {
    if (t->hkeys[h] == sid) return &t->hvals[h];
    h = (h + 1) & (t->hcap - 1);
  }
  if (!insert) return NULL;
  t->hkeys[h] = sid;
  return &t->hvals[h];
}

/* A minimal JSON reader for one line of the trace format. */
typedef struct jcur {
  const char *p, *end;
} jcur;

static void jws(jcur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) ++c->p;
}

static int jchar(jcur *c, char ch) {
  jws(c);
  if (c->p < c->end && *c->p == ch) {
    ++c->p;
    return 1;
  }
  return 0;
}

/* A string without escapes other than \" and \\ is enough here; its
   contents go to buf (truncated) when buf is not NULL. */
static int jstring(jcur *c, char *buf, size_t len) {
  size_t n = 0;
  if (!jchar(c, '"')) return 0;
  while (c->p < c->end && *c->p != '"') {
    char ch = *c->p++;
    if (ch == '\\') {
      if (c->p >= c->end) return 0;
      ch = *c->p++;
    }
    if (buf != NULL && n + 1 < len) buf[n++] = ch;
  }
  if (c->p >= c->end) return 0;
  ++c->p;
  if (buf != NULL && len > 0) buf[n] = '\0';
  return 1;
}

static int jnumber(jcur *c, uint64_t *out) {
  uint64_t v = 0;
  int digits = 0;
  jws(c);
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    uint64_t d = (uint64_t)(*c->p - '0');
    if (v > (UINT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
    ++digits;
    ++c->p;
  }
  *out = v;
  return digits > 0;
}

static int jbool(jcur *c, int *out) {
  jws(c);
  if ((size_t)(c->end - c->p) >= 4 && memcmp(c->p, "true", 4) == 0) {
    c->p += 4;
    *out = 1;
    return 1;
  }
  if ((size_t)(c->end - c->p) >= 5 && memcmp(c->p, "false", 5) == 0) {
    c->p += 5;
    *out = 0;
    return 1;
  }
  return 0;
}

/* Skips any value (for keys this program does not use). */
static int jskip(jcur *c) {
  jws(c);
  if (c->p >= c->end) return 0;
  if (*c->p == '"') return jstring(c, NULL, 0);
  if (*c->p == '[' || *c->p == '{') {
    int depth = 0;
    while (c->p < c->end) {
      char ch = *c->p;
      if (ch == '"') {
        if (!jstring(c, NULL, 0)) return 0;
        continue;
      }
      ++c->p;
      if (ch == '[' || ch == '{') ++depth;
      if (ch == ']' || ch == '}') {
        if (--depth == 0) return 1;
      }
    }
    return 0;
  }
  const char *start = c->p;
  while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']') ++c->p;
  return c->p > start;
}

/* [[ID,B],...] into pairs, appended to ids and bytes. */
static int jpairs(jcur *c, uint64_t **ids, uint64_t **bytes, size_t *n, size_t *cap) {
  if (!jchar(c, '[')) return 0;
  if (jchar(c, ']')) return 1;
  for (;;) {
    uint64_t id, b;
    if (!jchar(c, '[') || !jnumber(c, &id) || !jchar(c, ',') || !jnumber(c, &b) ||
        !jchar(c, ']'))
      return 0;
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 16;
      *ids = xrealloc(*ids, *cap * sizeof **ids);
      *bytes = xrealloc(*bytes, *cap * sizeof **bytes);
    }
    (*ids)[*n] = id;
    (*bytes)[*n] = b;
    ++*n;
    if (jchar(c, ']')) return 1;
    if (!jchar(c, ',')) return 0;
  }
}

static void push_ref(trace *t, size_t s) {
  if (t->nrefs == t->caprefs) {
    t->caprefs = t->caprefs ? t->caprefs * 2 : 1024;
    t->refs = xrealloc(t->refs, t->caprefs * sizeof *t->refs);
  }
  t->refs[t->nrefs++] = s;
}

static void push_event(trace *t, int kind, size_t index) {
  if (t->nev == t->capev) {
    t->capev = t->capev ? t->capev * 2 : 1024;
    t->ev = xrealloc(t->ev, t->capev * sizeof *t->ev);
  }
  t->ev[t->nev].kind = kind;
  t->ev[t->nev].index = index;
  ++t->nev;
}

/* Adds the distinct storages of ids[0..n) to refs; 0 on an unknown id or a
   size that differs from the alloc event. */
static int add_list(trace *t, const uint64_t *ids, const uint64_t *bytes, size_t n, size_t *first,
                    size_t *count, char *err, size_t errlen, size_t lineno) {
  *first = t->nrefs;
  for (size_t k = 0; k < n; ++k) {
    size_t *v = hfind(t, ids[k], 0);
    if (v == NULL) {
      snprintf(err, errlen, "%s:%zu: storage %llu used before its alloc event", t->path, lineno,
               (unsigned long long)ids[k]);
      return 0;
    }
    if (t->st[*v].bytes != bytes[k]) {
      snprintf(err, errlen, "%s:%zu: storage %llu has %llu bytes here, %llu at its alloc", t->path,
               lineno, (unsigned long long)ids[k], (unsigned long long)bytes[k],
               (unsigned long long)t->st[*v].bytes);
      return 0;
    }
    int dup = 0;
    for (size_t j = *first; j < t->nrefs; ++j) dup |= t->refs[j] == *v;
    if (!dup) push_ref(t, *v);
  }
  *count = t->nrefs - *first;
  return 1;
}

static void free_trace(trace *t) {
  for (size_t i = 0; i < t->nst; ++i) free(t->st[i].uses);
  free(t->st);
  free(t->ops);
  free(t->ev);
  free(t->refs);
  free(t->ws);
  free(t->hkeys);
  free(t->hvals);
  free(t->path);
  free(t->name);
  memset(t, 0, sizeof *t);
}

/* Loads a trace and computes its peak live bytes, working sets and uses.
   Returns 0, or 1 after writing err. */
static int load_trace(const char *path, trace *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->path = xstrdup(path);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  t->name = xstrdup(base);
  char *dot = strstr(t->name, ".jsonl");
  if (dot != NULL) *dot = '\0';
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return 1;
  }
  char *line = NULL;
  size_t linecap = 0, lineno = 0;
  uint64_t *ids = NULL, *bytes = NULL;
  size_t cap = 0;
  uint64_t live = 0;
  int rc = 1;
  for (;;) {
    /* getline is POSIX 2008; read by hand to stay C99 + POSIX 2001. */
    size_t len = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF && ch != '\n') {
      if (len + 2 > linecap) {
        linecap = linecap ? linecap * 2 : 4096;
        line = xrealloc(line, linecap);
      }
      line[len++] = (char)ch;
    }
    if (ch == EOF && len == 0) break;
    ++lineno;
    jcur c = {line, line + len};
    jws(&c);
    if (c.p == c.end) continue;
    char evname[16] = "", key[32];
    uint64_t seq = NONE, sid = NONE, nbytes = NONE;
    int pre = 0, has_in = 0, has_out = 0;
    size_t n_in = 0, n_all = 0;
    if (!jchar(&c, '{')) goto malformed;
    if (!jchar(&c, '}')) {
      for (;;) {
        if (!jstring(&c, key, sizeof key) || !jchar(&c, ':')) goto malformed;
        int ok;
        if (strcmp(key, "ev") == 0) {
          ok = jstring(&c, evname, sizeof evname);
        } else if (strcmp(key, "seq") == 0) {
          ok = jnumber(&c, &seq);
        } else if (strcmp(key, "sid") == 0) {
          ok = jnumber(&c, &sid);
        } else if (strcmp(key, "bytes") == 0) {
          ok = jnumber(&c, &nbytes);
        } else if (strcmp(key, "pre") == 0) {
          ok = jbool(&c, &pre);
        } else if (strcmp(key, "in") == 0 || strcmp(key, "out") == 0) {
          /* Inputs first in ids[0..n_in), outputs after, whatever the key
             order: outputs read before inputs are moved behind them. */
          int is_in = key[0] == 'i';
          size_t before = n_all;
          ok = jpairs(&c, &ids, &bytes, &n_all, &cap);
          if (ok && is_in) {
            if (has_out) { /* rotate the new inputs in front of the outputs */
              size_t nin = n_all - before;
              for (size_t r = 0; r < nin; ++r) {
                uint64_t id = ids[n_all - 1], b = bytes[n_all - 1];
                memmove(ids + 1, ids, (n_all - 1) * sizeof *ids);
                memmove(bytes + 1, bytes, (n_all - 1) * sizeof *bytes);
                ids[0] = id;
                bytes[0] = b;
              }
            }
            n_in = n_all - before;
            has_in = 1;
          } else if (ok) {
            has_out = 1;
          }
        } else {
          ok = jskip(&c);
        }
        if (!ok) goto malformed;
        if (jchar(&c, '}')) break;
        if (!jchar(&c, ',')) goto malformed;
      }
    }
    jws(&c);
    if (c.p != c.end) goto malformed;
    if (strcmp(evname, "alloc") == 0) {
      if (sid == NONE || nbytes == NONE || nbytes == 0) goto malformed;
      size_t *v = hfind(t, sid, 0);
      if (v != NULL) {
        snprintf(err, errlen, "%s:%zu: storage %llu allocated twice", path, lineno,
                 (unsigned long long)sid);
        goto done;
      }
      if (t->nst == t->capst) {
        t->capst = t->capst ? t->capst * 2 : 256;
        t->st = xrealloc(t->st, t->capst * sizeof *t->st);
      }
      storage *s = &t->st[t->nst];
      memset(s, 0, sizeof *s);
      s->sid = sid;
      s->bytes = nbytes;
      s->pre = pre;
      *hfind(t, sid, 1) = t->nst;
      push_event(t, EV_ALLOC, t->nst);
      ++t->nst;
      t->total_bytes += nbytes;
      live += nbytes;
      if (live > t->peak_live) t->peak_live = live;
    } else if (strcmp(evname, "free") == 0) {
      size_t *v = sid == NONE ? NULL : hfind(t, sid, 0);
      if (v == NULL || t->st[*v].freed) {
        snprintf(err, errlen, "%s:%zu: free of an unknown or freed storage", path, lineno);
        goto done;
      }
      t->st[*v].freed = 1;
      live -= t->st[*v].bytes;
      push_event(t, EV_FREE, *v);
    } else if (strcmp(evname, "op") == 0) {
      if (!has_in || !has_out) goto malformed;
      if (t->nops == t->capops) {
        t->capops = t->capops ? t->capops * 2 : 256;
        t->ops = xrealloc(t->ops, t->capops * sizeof *t->ops);
      }
      op *o = &t->ops[t->nops];
      memset(o, 0, sizeof *o);
      if (!add_list(t, ids, bytes, n_in, &o->in_first, &o->in_count, err, errlen, lineno) ||
          !add_list(t, ids + n_in, bytes + n_in, n_all - n_in, &o->out_first, &o->out_count, err,
                    errlen, lineno))
        goto done;
      for (size_t k = 0; k < o->in_count + o->out_count; ++k) {
        size_t s = t->refs[o->in_first + k];
        if (t->st[s].freed) {
          snprintf(err, errlen, "%s:%zu: storage %llu used after its free event", path, lineno,
                   (unsigned long long)t->st[s].sid);
          goto done;
        }
      }
      push_event(t, EV_OP, t->nops);
      ++t->nops;
    } else {
      goto malformed;
    }
    (void)seq;
    continue;
  malformed:
    snprintf(err, errlen, "%s:%zu: not a trace event: '%.*s'", path, lineno,
             (int)(len < 100 ? len : 100), line);
    goto done;
  }
  /* Working sets (inputs then outputs, distinct) and uses per storage. */
  t->ws = xmalloc((t->nrefs + 1) * sizeof *t->ws);
  for (size_t i = 0; i < t->nops; ++i) {
    op *o = &t->ops[i];
    o->ws_first = t->nws;
    for (size_t k = 0; k < o->in_count + o->out_count; ++k) {
      size_t s = t->refs[o->in_first + k];
      int dup = 0;
      for (size_t j = o->ws_first; j < t->nws; ++j) dup |= t->ws[j] == s;
      if (dup) continue;
      t->ws[t->nws++] = s;
      o->ws_bytes += t->st[s].bytes;
      o->ws_aligned += round_up(t->st[s].bytes, ALIGN_BYTES);
      storage *st = &t->st[s];
      if (st->nuses == st->capuses) {
        st->capuses = st->capuses ? st->capuses * 2 : 8;
        st->uses = xrealloc(st->uses, st->capuses * sizeof *st->uses);
      }
      st->uses[st->nuses++] = i;
    }
    o->ws_count = t->nws - o->ws_first;
    if (o->ws_bytes > t->max_ws) {
      t->max_ws = o->ws_bytes;
      t->max_ws_op = i;
    }
    if (o->ws_aligned > t->max_ws_aligned) t->max_ws_aligned = o->ws_aligned;
  }
  for (size_t i = 0; i < t->nst; ++i)
    if (!t->st[i].freed) t->held_bytes += t->st[i].bytes;
  if (t->nops == 0) {
    snprintf(err, errlen, "%s: no op events", path);
    goto done;
  }
  rc = 0;
done:
  if (ferror(f) && rc == 0) {
    snprintf(err, errlen, "%s: read error", path);
    rc = 1;
  }
  fclose(f);
  free(line);
  free(ids);
  free(bytes);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Reference simulation and floor                                           */

typedef struct ref_result {
  uint64_t evicted; /* bytes device -> host */
  uint64_t fetched; /* bytes host -> device */
  uint64_t floor;   /* bytes any policy must fetch back (lower bound) */
} ref_result;

/* The furthest-next-use rule with the budget as a plain byte count. Events
   in trace order: an alloc creates an empty tensor (a pre-existing one is
   written: it becomes resident like an output, evicting if needed); an op
   makes its working set resident (fetching what is on the host), evicting
   the resident tensors outside it with the furthest next use, those never
   used again first (ties: the largest first); a free drops the tensor.
   Copies follow the executor's rules: evicting costs the tensor's bytes only
   when its data is needed again (a later use, or it is still held at the
   end of the trace and may be read then) and the host tier has no current
   copy of it (a fetched tensor keeps its host copy until a kernel writes
   it); fetching costs its bytes. */
static void reference(const trace *t, uint64_t budget, ref_result *r) {
  const size_t n = t->nst;
  unsigned char *resident = calloc(n ? n : 1, 1), *on_host = calloc(n ? n : 1, 1);
  unsigned char *in_ws = calloc(n ? n : 1, 1);
  size_t *cursor = calloc(n ? n : 1, sizeof *cursor); /* next entry of uses */
  size_t *res = xmalloc((n ? n : 1) * sizeof *res), nres = 0;
  if (!resident || !on_host || !in_ws || !cursor) {
    fprintf(stderr, "bench_tiered: out of host memory\n");
    exit(EXIT_ERROR);
  }
  uint64_t used = 0;
  memset(r, 0, sizeof *r);
  /* Key of a resident tensor: its next use; t->nops when it is held to the
     end and not used again; NONE when its data is never needed again. */
#define NEXT_USE(s)                                                                  \
  (cursor[s] < t->st[s].nuses ? (uint64_t)t->st[s].uses[cursor[s]]                   \
                              : (t->st[s].freed ? NONE : (uint64_t)t->nops))
  for (size_t e = 0; e < t->nev; ++e) {
    const event *ev = &t->ev[e];
    size_t need_first = 0, need_count = 0;
    size_t one;
    if (ev->kind == EV_FREE) {
      size_t s = ev->index;
      if (resident[s]) {
        used -= t->st[s].bytes;
        resident[s] = 0;
        for (size_t k = 0; k < nres; ++k)
          if (res[k] == s) {
            res[k] = res[--nres];
            break;
          }
      }
      on_host[s] = 0;
      continue;
    }
    const size_t *need;
    if (ev->kind == EV_ALLOC) {
      if (!t->st[ev->index].pre) continue;
      one = ev->index;
      need = &one;
      need_count = 1;
    } else {
      const op *o = &t->ops[ev->index];
      need_first = o->ws_first;
      need_count = o->ws_count;
      need = t->ws + need_first;
      for (size_t k = 0; k < need_count; ++k) ++cursor[need[k]];
    }
    uint64_t missing = 0;
    for (size_t k = 0; k < need_count; ++k) {
      in_ws[need[k]] = 1;
      if (!resident[need[k]]) missing += t->st[need[k]].bytes;
    }
    while (used + missing > budget) {
      size_t best = SIZE_MAX;
      uint64_t best_key = 0;
      for (size_t k = 0; k < nres; ++k) {
        size_t s = res[k];
        if (in_ws[s]) continue;
        uint64_t key = NEXT_USE(s);
        if (best == SIZE_MAX || key > best_key ||
            (key == best_key && t->st[s].bytes > t->st[res[best]].bytes)) {
          best = k;
          best_key = key;
        }
      }
      if (best == SIZE_MAX) break; /* cannot happen: budget >= working set */
      size_t s = res[best];
      res[best] = res[--nres];
      resident[s] = 0;
      used -= t->st[s].bytes;
      if (best_key == NONE) {
        on_host[s] = 0; /* dropped: never needed again */
      } else if (!on_host[s]) {
        r->evicted += t->st[s].bytes;
        on_host[s] = 1;
      }
    }
    for (size_t k = 0; k < need_count; ++k) {
      size_t s = need[k];
      in_ws[s] = 0;
      if (resident[s]) continue;
      if (on_host[s]) r->fetched += t->st[s].bytes; /* the host copy stays current */
      resident[s] = 1;
      used += t->st[s].bytes;
      res[nres++] = s;
    }
    /* What is written loses its host copy (a write of a pre-existing
       tensor, or the op's outputs). */
    if (ev->kind == EV_ALLOC) {
      on_host[ev->index] = 0;
    } else {
      const op *o = &t->ops[ev->index];
      for (size_t k = 0; k < o->out_count; ++k) on_host[t->refs[o->out_first + k]] = 0;
    }
  }
#undef NEXT_USE
  free(resident);
  free(on_host);
  free(in_ws);
  free(cursor);
  free(res);
}

typedef struct interval {
  size_t lo, hi; /* consecutive uses: resident over the ops strictly between */
  uint64_t bytes;
} interval;

static int compare_intervals(const void *pa, const void *pb) {
  const interval *a = pa, *b = pb;
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return (a->lo > b->lo) - (a->lo < b->lo);
}

/* A lower bound on the bytes that any policy must fetch back. Between two
   consecutive uses of a tensor (ops a < b), it either stays on the device
   over every op strictly between, or it is fetched again for b. At op k the
   device holds op k's working set, so the tensors kept over k have at most
   budget - ws(k) bytes. Keeping a fraction of a tensor is allowed (a
   relaxation), so the most bytes that can be kept is the optimum of an
   interval packing LP, which the greedy below reaches (intervals by right
   end, each kept as far as the remaining room of its ops allows); the floor
   is the bytes of all intervals minus that. */
static uint64_t fetch_floor(const trace *t, uint64_t budget) {
  size_t nint = 0, cap = 0;
  interval *iv = NULL;
  for (size_t s = 0; s < t->nst; ++s) {
    const storage *st = &t->st[s];
    for (size_t k = 1; k < st->nuses; ++k) {
      if (st->uses[k] == st->uses[k - 1] + 1) continue; /* nothing between */
      if (nint == cap) {
        cap = cap ? cap * 2 : 1024;
        iv = xrealloc(iv, cap * sizeof *iv);
      }
      iv[nint].lo = st->uses[k - 1];
      iv[nint].hi = st->uses[k];
      iv[nint].bytes = st->bytes;
      ++nint;
    }
  }
  qsort(iv, nint, sizeof *iv, compare_intervals);
  uint64_t *room = xmalloc(t->nops * sizeof *room);
  for (size_t k = 0; k < t->nops; ++k)
    room[k] = budget > t->ops[k].ws_bytes ? budget - t->ops[k].ws_bytes : 0;
  uint64_t floor = 0;
  for (size_t i = 0; i < nint; ++i) {
    uint64_t keep = iv[i].bytes;
    for (size_t k = iv[i].lo + 1; k < iv[i].hi; ++k)
      if (room[k] < keep) keep = room[k];
    for (size_t k = iv[i].lo + 1; k < iv[i].hi; ++k) room[k] -= keep;
    floor += iv[i].bytes - keep;
  }
  free(room);
  free(iv);
  return floor;
}

/* ------------------------------------------------------------------------ */
/* Replay through a tiered pool                                             */

typedef struct run_ctx {
  uint64_t kernel_ns;      /* time inside kernel functions */
  double spin_ns_per_byte; /* modelled compute time (0: none) */
  const trace *t;
} run_ctx;

typedef struct kernel_arg {
  run_ctx *ctx;
  size_t op;
} kernel_arg;

static size_t min_size(uint64_t a, size_t b) { return a < b ? (size_t)a : b; }

/* Reads the first word of each input and writes OUT_WORDS words of each
   output (fewer for a small tensor) derived from them and from the op's
   index. SIM memory is host memory. */
static dao_status kernel_fn(void *user_data, void *const *inputs, size_t input_count,
                            void *const *outputs, size_t output_count, dao_stream stream) {
  (void)stream;
  const kernel_arg *a = user_data;
  run_ctx *ctx = a->ctx;
  const trace *t = ctx->t;
  const op *o = &t->ops[a->op];
  uint64_t start = now_ns();
  if (input_count != o->in_count || output_count != o->out_count) return DAO_ERR_INTERNAL;
  uint64_t h = mix64((uint64_t)a->op);
  for (size_t i = 0; i < input_count; ++i) {
    uint64_t w = 0;
    memcpy(&w, inputs[i], min_size(t->st[t->refs[o->in_first + i]].bytes, sizeof w));
    h = mix64(h ^ w);
  }
  for (size_t i = 0; i < output_count; ++i) {
    unsigned char words[OUT_WORDS * sizeof(uint64_t)];
    for (size_t k = 0; k < OUT_WORDS; ++k) {
      uint64_t w = mix64(h + i * OUT_WORDS + k);
      memcpy(words + k * sizeof w, &w, sizeof w);
    }
    memcpy(outputs[i], words, min_size(t->st[t->refs[o->out_first + i]].bytes, sizeof words));
  }
  uint64_t end = now_ns();
  if (ctx->spin_ns_per_byte > 0) {
    uint64_t until = start + (uint64_t)((double)o->ws_bytes * ctx->spin_ns_per_byte);
    while (end < until) end = now_ns();
  }
  ctx->kernel_ns += end - start;
  return DAO_OK;
}

typedef struct run_result {
  int refused;           /* a submit was refused with DAO_ERR_OUT_OF_MEMORY */
  char message[512];     /* ... and why */
  dao_tiered_stats stats;
  double wall_s;         /* submit .. synchronize */
  uint64_t kernel_ns;    /* inside kernel functions */
  uint64_t kernels;      /* submitted */
  uint64_t *hashes;      /* per storage still held at the end (others 0) */
} run_result;

static int tiered_unavailable(dao_status s) {
  return s == DAO_ERR_INVALID_ARGUMENT || s == DAO_ERR_UNSUPPORTED;
}

static uint64_t hash_bytes(const unsigned char *p, uint64_t n) {
  uint64_t h = mix64(n);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = mix64(h ^ w);
  }
  if (i < n) {
    uint64_t w = 0;
    memcpy(&w, p + i, (size_t)(n - i));
    h = mix64(h ^ w);
  }
  return h;
}

static void fill_pattern(unsigned char *p, uint64_t n, uint64_t sid) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = mix64((sid << 32) ^ i);
    memcpy(p + i, &w, 8);
  }
  if (i < n) {
    uint64_t w = mix64((sid << 32) ^ i);
    memcpy(p + i, &w, (size_t)(n - i));
  }
}

#define CHECK(call)                                                                         \
  do {                                                                                      \
    dao_status s_ = (call);                                                                 \
    if (s_ != DAO_OK) {                                                                     \
      fprintf(stderr, "bench_tiered: %s: %s: %s (%s)\n", t->name, #call, dao_status_string(s_), \
              dao_last_error());                                                            \
      goto fail;                                                                            \
    }                                                                                       \
  } while (0)

/* Replays a trace through a new tiered pool. upfront: create every tensor
   and write the pre-existing ones before the timed part (only where
   everything fits). Returns 0 (ran; r->refused says whether a submit was
   refused), 1 on an error (printed), EXIT_SKIP when dao_tiered_create says
   that tiered pools are unavailable and skip_ok is set. */
static int replay(const trace *t, uint64_t budget, const char *config, double spin_ns_per_byte,
                  unsigned char *const *pre_data, int upfront, int skip_ok, run_result *r) {
  memset(r, 0, sizeof *r);
  r->hashes = calloc(t->nst, sizeof *r->hashes);
  dao_tensor **tensors = calloc(t->nst, sizeof *tensors);
  kernel_arg *args = xmalloc(t->nops * sizeof *args);
  dao_tensor **list = xmalloc((t->nrefs + 1) * sizeof *list);
  unsigned char *buf = NULL;
  dao_tiered *pool = NULL;
  int rc = 1;
  run_ctx ctx;
  ctx.kernel_ns = 0;
  ctx.spin_ns_per_byte = spin_ns_per_byte;
  ctx.t = t;
  if (r->hashes == NULL || tensors == NULL) {
    fprintf(stderr, "bench_tiered: out of host memory\n");
    exit(EXIT_ERROR);
  }
  for (size_t i = 0; i < t->nops; ++i) {
    args[i].ctx = &ctx;
    args[i].op = i;
  }
  dao_status cs = dao_tiered_create(dao_place_sim(0), dao_place_cpu(), (size_t)budget, config,
                                    &pool);
  if (cs != DAO_OK) {
    if (skip_ok && tiered_unavailable(cs)) {
      fprintf(stderr, "bench_tiered: tiered pools are not available: dao_tiered_create: %s (%s)\n",
              dao_status_string(cs), dao_last_error());
      rc = EXIT_SKIP;
    } else {
      fprintf(stderr, "bench_tiered: %s: dao_tiered_create(budget %llu, \"%s\"): %s (%s)\n",
              t->name, (unsigned long long)budget, config, dao_status_string(cs),
              dao_last_error());
    }
    goto fail;
  }
  if (upfront) {
    for (size_t s = 0; s < t->nst; ++s) {
      CHECK(dao_tensor_create(pool, (size_t)t->st[s].bytes, &tensors[s]));
      if (t->st[s].pre) CHECK(dao_tensor_write(tensors[s], pre_data[s], (size_t)t->st[s].bytes));
    }
  }
  double t0 = now_s();
  for (size_t e = 0; e < t->nev && !r->refused; ++e) {
    const event *ev = &t->ev[e];
    size_t s = ev->index;
    if (ev->kind == EV_ALLOC) {
      if (upfront) continue;
      CHECK(dao_tensor_create(pool, (size_t)t->st[s].bytes, &tensors[s]));
      if (t->st[s].pre) CHECK(dao_tensor_write(tensors[s], pre_data[s], (size_t)t->st[s].bytes));
    } else if (ev->kind == EV_FREE) {
      CHECK(dao_tensor_release(tensors[s]));
      tensors[s] = NULL;
    } else {
      const op *o = &t->ops[s];
      for (size_t k = 0; k < o->in_count + o->out_count; ++k)
        list[k] = tensors[t->refs[o->in_first + k]];
      dao_status ss = dao_kernel_submit(pool, kernel_fn, &args[s], list, o->in_count,
                                        list + o->in_count, o->out_count);
      if (ss == DAO_ERR_OUT_OF_MEMORY) {
        r->refused = 1;
        snprintf(r->message, sizeof r->message, "op %zu refused: %s", s, dao_last_error());
        break;
      }
      CHECK(ss);
      ++r->kernels;
    }
  }
  CHECK(dao_tiered_synchronize(pool));
  r->wall_s = now_s() - t0;
  r->kernel_ns = ctx.kernel_ns;
  r->stats.struct_size = sizeof r->stats;
  CHECK(dao_tiered_get_stats(pool, &r->stats));
  if (r->stats.kernels_run != r->kernels) {
    fprintf(stderr, "bench_tiered: %s: %llu kernels submitted, %llu run\n", t->name,
            (unsigned long long)r->kernels, (unsigned long long)r->stats.kernels_run);
    goto fail;
  }
  /* The results: every tensor still held. */
  if (!r->refused) {
    uint64_t most = 0;
    for (size_t s = 0; s < t->nst; ++s)
      if (tensors[s] != NULL && t->st[s].bytes > most) most = t->st[s].bytes;
    buf = xmalloc((size_t)most);
    for (size_t s = 0; s < t->nst; ++s) {
      if (tensors[s] == NULL) continue;
      CHECK(dao_tensor_read(tensors[s], buf, (size_t)t->st[s].bytes));
      /* Only the words kernels write are defined: the rest of an output is
         whatever the device memory held, which differs from run to run. */
      r->hashes[s] = hash_bytes(buf, min_size(t->st[s].bytes, OUT_WORDS * sizeof(uint64_t))) | 1;
    }
  }
  rc = 0;
fail:
  if (pool != NULL) {
    for (size_t s = 0; s < t->nst; ++s)
      if (tensors[s] != NULL) (void)dao_tensor_release(tensors[s]);
    dao_status ds = dao_tiered_destroy(pool);
    if (ds != DAO_OK) {
      fprintf(stderr, "bench_tiered: %s: dao_tiered_destroy: %s (%s)\n", t->name,
              dao_status_string(ds), dao_last_error());
      rc = 1;
    }
  }
  free(buf);
  free(list);
  free(args);
  free(tensors);
  return rc;
}
#undef CHECK

/* Number of held tensors whose result differs from the unlimited run. */
static size_t count_mismatches(const trace *t, const run_result *a, const run_result *b) {
  size_t bad = 0;
  for (size_t s = 0; s < t->nst; ++s) bad += a->hashes[s] != b->hashes[s];
  return bad;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                     */

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int name_selected(const char *only, const char *name) {
  if (only == NULL) return 1;
  size_t prefix = strcspn(name, "_");
  const char *p = only;
  while (*p != '\0') {
    size_t n = strcspn(p, ",");
    if ((n == strlen(name) && strncmp(p, name, n) == 0) ||
        (n == prefix && strncmp(p, name, n) == 0))
      return 1;
    p += n;
    if (*p == ',') ++p;
  }
  return 0;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

typedef struct trace_summary {
  int ratio_ok, ratio_known;   /* belady <= 1.10x the reference everywhere */
  int lru_ok, lru_known;       /* belady < lru at 25 % and 50 % */
  double worst_ratio;
  double overhead_us;          /* executor overhead per kernel, everything fitting */
  double hidden;               /* fraction of copy time hidden by prefetch, or -1 */
} trace_summary;

static double ratio_of(uint64_t a, uint64_t b) {
  if (b == 0) return a == 0 ? 1.0 : -1.0;
  return (double)a / (double)b;
}

static void format_ratio(double r, char *buf, size_t len) {
  if (r < 0)
    snprintf(buf, len, "inf");
  else
    snprintf(buf, len, "%.3fx", r);
}

static void print_row(const char *pct, const char *budget, const char *policy, uint64_t ev,
                      uint64_t fe, const char *ratio, const char *kps, const char *note) {
  char b1[32], b2[32];
  printf("%-5s %10s  %-11s %12s %12s %9s %11s  %s\n", pct, budget, policy,
         ev == NONE ? "-" : format_bytes(ev, b1, sizeof b1),
         fe == NONE ? "-" : format_bytes(fe, b2, sizeof b2), ratio, kps, note);
}

/* Runs everything on one trace; returns 0, 1 (error or wrong results) or
   EXIT_SKIP (no tiered pools; only on the first trace). */
static int bench_trace(const trace *t, int quick, int first, trace_summary *sum) {
  char b1[32], b2[32], b3[32], note[600], ratio[32], kps[32];
  int rc = 0, r;
  run_result base, run;
  memset(&base, 0, sizeof base);
  memset(&run, 0, sizeof run);
  memset(sum, 0, sizeof *sum);
  sum->ratio_ok = sum->lru_ok = 1;
  sum->hidden = -1;
  sum->overhead_us = -1;
  unsigned char **pre_data = calloc(t->nst, sizeof *pre_data);
  if (pre_data == NULL) exit(EXIT_ERROR);
  size_t npre = 0;
  for (size_t s = 0; s < t->nst; ++s) {
    if (!t->st[s].pre) continue;
    pre_data[s] = xmalloc((size_t)t->st[s].bytes);
    fill_pattern(pre_data[s], t->st[s].bytes, t->st[s].sid);
    ++npre;
  }
  const uint64_t unlimited = round_up(2 * t->peak_live + t->max_ws_aligned, MIB);

  printf("\n== %s: %zu ops, %zu storages (%zu pre-existing), peak live %s, largest op working "
         "set %s (op %zu)\n",
         t->name, t->nops, t->nst, npre, format_bytes(t->peak_live, b1, sizeof b1),
         format_bytes(t->max_ws, b2, sizeof b2), t->max_ws_op);
  fflush(stdout);

  /* The run that every other is checked against. */
  r = replay(t, unlimited, "policy=belady", 0, pre_data, 0, first, &base);
  if (r != 0 || base.refused) {
    if (base.refused) fprintf(stderr, "bench_tiered: %s: unlimited run: %s\n", t->name,
                              base.message);
    rc = r == EXIT_SKIP ? EXIT_SKIP : 1;
    goto out;
  }
  printf("%-5s %10s  %-11s %12s %12s %9s %11s  %s\n", "budg.", "bytes", "policy", "D->H",
         "H->D", "moved/ref", "kernels/s", "results / notes");
  snprintf(note, sizeof note, "unlimited: the results every run is checked against (%zu tensors held)",
           (size_t)0);
  {
    size_t held = 0;
    for (size_t s = 0; s < t->nst; ++s) held += base.hashes[s] != 0;
    snprintf(note, sizeof note, "unlimited (2 x peak + largest op): %zu tensors held at the "
             "end, read back and hashed", held);
  }
  snprintf(kps, sizeof kps, "%.0f", (double)base.kernels / base.wall_s);
  print_row("-", format_bytes(unlimited, b3, sizeof b3), "belady", base.stats.bytes_evicted,
            base.stats.bytes_fetched, "-", kps, note);

  uint64_t moved_at[NBUDGETS][NPOLICIES];
  uint64_t budget_at[NBUDGETS];
  for (unsigned bi = 0; bi < NBUDGETS; ++bi) {
    uint64_t budget = t->peak_live * budget_percent[bi] / 100;
    int raised = budget < t->max_ws_aligned;
    if (raised) budget = t->max_ws_aligned;
    budget_at[bi] = budget;
    ref_result ref;
    reference(t, budget, &ref);
    ref.floor = fetch_floor(t, budget);
    uint64_t ref_moved = ref.evicted + ref.fetched;
    char pct[8];
    snprintf(pct, sizeof pct, "%u%%", budget_percent[bi]);
    format_bytes(budget, b3, sizeof b3);
    if (raised) {
      char b4[32];
      snprintf(note, sizeof note, "budget raised from %s to the largest op's working set "
               "(tensors rounded up to %d B)",
               format_bytes(t->peak_live * budget_percent[bi] / 100, b4, sizeof b4), ALIGN_BYTES);
    } else {
      snprintf(note, sizeof note, "furthest next use, plain byte budget");
    }
    print_row(pct, b3, "reference", ref.evicted, ref.fetched, "1.000x", "-", note);
    print_row("", "", "floor", NONE, ref.floor, "-", "-", "H->D that any policy must fetch back");
    for (unsigned pi = 0; pi < NPOLICIES; ++pi) {
      char config[64];
      snprintf(config, sizeof config, "policy=%s", policies[pi]);
      r = replay(t, budget, config, 0, pre_data, 0, 0, &run);
      if (r != 0) {
        rc = 1;
        goto out;
      }
      if (run.refused) {
        moved_at[bi][pi] = NONE;
        print_row("", "", policies[pi], NONE, NONE, "-", "-", run.message);
        if (pi == 0) sum->ratio_ok = 0;
        sum->ratio_known = 1;
      } else {
        uint64_t moved = run.stats.bytes_evicted + run.stats.bytes_fetched;
        moved_at[bi][pi] = moved;
        double q = ratio_of(moved, ref_moved);
        format_ratio(q, ratio, sizeof ratio);
        snprintf(kps, sizeof kps, "%.0f", (double)run.kernels / run.wall_s);
        size_t bad = count_mismatches(t, &run, &base);
        if (bad != 0) {
          snprintf(note, sizeof note, "WRONG: %zu held tensors differ from the unlimited run", bad);
          rc = 1;
        } else {
          snprintf(note, sizeof note, "ok; %llu evictions, %llu fetches (%llu prefetched)",
                   (unsigned long long)run.stats.evictions, (unsigned long long)run.stats.fetches,
                   (unsigned long long)run.stats.prefetches);
        }
        print_row("", "", policies[pi], run.stats.bytes_evicted, run.stats.bytes_fetched, ratio,
                  kps, note);
        if (pi == 0) {
          sum->ratio_known = 1;
          if (q < 0 || q > TARGET_RATIO) sum->ratio_ok = 0;
          if (q < 0 || q > sum->worst_ratio) sum->worst_ratio = q < 0 ? 1e9 : q;
        }
      }
      free(run.hashes);
      run.hashes = NULL;
      fflush(stdout);
    }
    if (budget_percent[bi] <= 50) {
      sum->lru_known = 1;
      if (moved_at[bi][0] == NONE || (moved_at[bi][1] != NONE && moved_at[bi][0] >= moved_at[bi][1]))
        sum->lru_ok = 0;
    }
  }

  /* Prefetch with a limited link, at the 50 % budget. */
  {
    const uint64_t budget = budget_at[1];
    const double spin = 1e9 / SPIN_BYTES_PER_S;
    uint64_t stall[2] = {0, 0};
    uint64_t copy_bytes[2] = {0, 0};
    double wall[2] = {0, 0};
    uint64_t in_time[2] = {0, 0}, pref[2] = {0, 0};
    static const int depth[2] = {0, 2};
    for (int k = 0; k < 2; ++k) {
      char config[96];
      snprintf(config, sizeof config, "policy=belady,prefetch=%d,link_bandwidth=%s", depth[k],
               LINK_BANDWIDTH);
      r = replay(t, budget, config, spin, pre_data, 0, 0, &run);
      if (r != 0 || run.refused) {
        if (run.refused) fprintf(stderr, "bench_tiered: %s: %s\n", t->name, run.message);
        rc = 1;
        goto out;
      }
      size_t bad = count_mismatches(t, &run, &base);
      if (bad != 0) {
        fprintf(stderr, "bench_tiered: %s: prefetch=%d: WRONG: %zu held tensors differ\n",
                t->name, depth[k], bad);
        rc = 1;
      }
      stall[k] = run.stats.stall_ns;
      copy_bytes[k] = run.stats.bytes_evicted + run.stats.bytes_fetched;
      wall[k] = run.wall_s;
      pref[k] = run.stats.prefetches;
      in_time[k] = run.stats.prefetches_in_time;
      free(run.hashes);
      run.hashes = NULL;
    }
    if (stall[0] > 0) sum->hidden = 1.0 - (double)stall[1] / (double)stall[0];
    printf("prefetch at the 50%% budget (%s), link_bandwidth=%s, kernels spin %.4f ns per byte "
           "of working set (%.0f GB/s):\n",
           format_bytes(budget, b1, sizeof b1), LINK_BANDWIDTH, spin, SPIN_BYTES_PER_S / 1e9);
    for (int k = 0; k < 2; ++k)
      printf("  prefetch=%d: stalled %.1f ms of %.1f ms wall, %s copied, %llu prefetches (%llu "
             "in time)\n",
             depth[k], (double)stall[k] / 1e6, wall[k] * 1e3,
             format_bytes(copy_bytes[k], b2, sizeof b2), (unsigned long long)pref[k],
             (unsigned long long)in_time[k]);
    if (sum->hidden >= 0)
      printf("  copy time hidden by prefetch: %.1f %% (1 - stall with / stall without)\n",
             100.0 * sum->hidden);
    else
      printf("  copy time hidden by prefetch: - (no stall without prefetch)\n");
  }

  /* Executor overhead with everything fitting: tensors created and written
     before the timed part; best of a few runs. */
  {
    int reps = quick ? 1 : 3;
    double best = -1;
    uint64_t evictions = 0;
    for (int k = 0; k < reps; ++k) {
      r = replay(t, unlimited, "policy=belady", 0, pre_data, 1, 0, &run);
      if (r != 0 || run.refused) {
        rc = 1;
        goto out;
      }
      size_t bad = count_mismatches(t, &run, &base);
      if (bad != 0) {
        fprintf(stderr, "bench_tiered: %s: overhead run: WRONG: %zu held tensors differ\n",
                t->name, bad);
        rc = 1;
      }
      double us = (run.wall_s * 1e9 - (double)run.kernel_ns) / 1e3 / (double)run.kernels;
      if (best < 0 || us < best) best = us;
      evictions += run.stats.evictions;
      free(run.hashes);
      run.hashes = NULL;
    }
    sum->overhead_us = best;
    printf("executor overhead, everything fitting (%s budget, %llu evictions): %.2f us per kernel "
           "(best of %d; (wall - time in kernels) / kernels)\n",
           format_bytes(unlimited, b1, sizeof b1), (unsigned long long)evictions, best, reps);
  }
out:
  free(base.hashes);
  free(run.hashes);
  for (size_t s = 0; s < t->nst; ++s) free(pre_data[s]);
  free(pre_data);
  fflush(stdout);
  return rc;
}

int main(int argc, char **argv) {
  options o;
  parse_options(argc, argv, &o);
  const char *prog = argv[0];

  /* The traces: every .jsonl in DIR/ops, or in DIR. */
  size_t dlen = strlen(o.traces) + 8;
  char *dir = xmalloc(dlen);
  snprintf(dir, dlen, "%s/ops", o.traces);
  if (!is_dir(dir)) snprintf(dir, dlen, "%s", o.traces);
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "%s: cannot open the traces directory %s: %s\n", prog, dir, strerror(errno));
    free(dir);
    return o.traces_given ? EXIT_ERROR : EXIT_SKIP;
  }
  char **files = NULL;
  size_t nfiles = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!has_suffix(de->d_name, ".jsonl")) continue;
    char stem[256];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(de->d_name) - 6), de->d_name);
    if (!name_selected(o.only, stem)) continue;
    files = xrealloc(files, (nfiles + 1) * sizeof *files);
    size_t n = strlen(dir) + strlen(de->d_name) + 2;
    files[nfiles] = xmalloc(n);
    snprintf(files[nfiles], n, "%s/%s", dir, de->d_name);
    ++nfiles;
  }
  closedir(d);
  free(dir);
  if (nfiles == 0) {
    fprintf(stderr, "%s: no trace (*.jsonl)%s in %s\n", prog, o.only ? " selected by --only" : "",
            o.traces);
    return o.only != NULL ? EXIT_BAD_FLAGS : EXIT_SKIP;
  }
  qsort(files, nfiles, sizeof *files, compare_strings);

  trace *traces = xmalloc(nfiles * sizeof *traces);
  size_t ntraces = 0;
  char err[1024];
  for (size_t i = 0; i < nfiles; ++i) {
    if (load_trace(files[i], &traces[ntraces], err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", prog, err);
      return EXIT_ERROR;
    }
    ++ntraces;
    free(files[i]);
  }
  free(files);
  if (o.quick) { /* the smallest trace only */
    size_t best = 0;
    for (size_t i = 1; i < ntraces; ++i)
      if (traces[i].nev < traces[best].nev) best = i;
    for (size_t i = 0; i < ntraces; ++i)
      if (i != best) free_trace(&traces[i]);
    traces[0] = traces[best];
    ntraces = 1;
  }

  /* One SIM device big enough for the largest budget (the unlimited one),
     set before its first use. It takes host memory only as it is used. */
  uint64_t capacity = 0;
  for (size_t i = 0; i < ntraces; ++i) {
    uint64_t u = round_up(2 * traces[i].peak_live + traces[i].max_ws_aligned, MIB);
    if (u > capacity) capacity = u;
  }
  capacity = round_up(capacity + capacity / 4 + 64 * MIB, MIB);
  size_t cap = (size_t)capacity;
  dao_status cs = dao_sim_configure(1, &cap);
  if (cs != DAO_OK) {
    fprintf(stderr, "%s: dao_sim_configure: %s (%s)\n", prog, dao_status_string(cs),
            dao_last_error());
    return EXIT_ERROR;
  }

  const char *build = DAO_BENCH_BUILD_TYPE;
  char b1[32];
  printf("bench_tiered: libdao %s, build %s%s\n", dao_version_string(),
         build[0] ? build : "(unknown)",
#ifdef NDEBUG
         " (NDEBUG)"
#else
         ""
#endif
  );
  if (!is_optimised_build_type(build))
    printf("warning: not an optimised build; timings mean little\n");
  printf("device: dao_place_sim(0) of %s, host tier: dao_place_cpu(); %zu trace(s) from %s\n",
         format_bytes(capacity, b1, sizeof b1), ntraces, o.traces);
  printf("policies: belady, lru, size_aware with the default prefetch (2); budgets: 25/50/75 %% "
         "of peak live bytes\n");

  trace_summary *sums = xmalloc(ntraces * sizeof *sums);
  int rc = 0;
  for (size_t i = 0; i < ntraces; ++i) {
    int r = bench_trace(&traces[i], o.quick, i == 0, &sums[i]);
    if (r == EXIT_SKIP) {
      rc = EXIT_SKIP;
      break;
    }
    if (r != 0) rc = EXIT_ERROR;
  }
  if (rc != EXIT_SKIP) {
    printf("\ntargets (issue 5)                                     ");
    for (size_t i = 0; i < ntraces; ++i) printf(" %-22s", traces[i].name);
    printf("\nbelady <= %.2fx the reference at every budget          ", TARGET_RATIO);
    for (size_t i = 0; i < ntraces; ++i) {
      char cell[64];
      snprintf(cell, sizeof cell, "%s (worst %.3fx)",
               !sums[i].ratio_known ? "-" : sums[i].ratio_ok ? "ok" : "MISS", sums[i].worst_ratio);
      printf(" %-22s", cell);
    }
    printf("\nbelady moves fewer bytes than lru at 25 %% and 50 %%      ");
    for (size_t i = 0; i < ntraces; ++i)
      printf(" %-22s", !sums[i].lru_known ? "-" : sums[i].lru_ok ? "ok" : "MISS");
    printf("\nexecutor overhead < %.0f us per kernel, everything fits  ", TARGET_OVERHEAD_US);
    for (size_t i = 0; i < ntraces; ++i) {
      char cell[64];
      if (sums[i].overhead_us < 0)
        snprintf(cell, sizeof cell, "-");
      else
        snprintf(cell, sizeof cell, "%s (%.2f us)",
                 sums[i].overhead_us < TARGET_OVERHEAD_US ? "ok" : "MISS", sums[i].overhead_us);
      printf(" %-22s", cell);
    }
    printf("\ncopy time hidden by prefetch (no target)              ");
    for (size_t i = 0; i < ntraces; ++i) {
      char cell[64];
      if (sums[i].hidden < 0)
        snprintf(cell, sizeof cell, "-");
      else
        snprintf(cell, sizeof cell, "%.1f %%", 100.0 * sums[i].hidden);
      printf(" %-22s", cell);
    }
    printf("\n\nD->H: bytes_evicted, H->D: bytes_fetched (dao_tiered_get_stats); moved/ref: "
           "(D->H + H->D) / the\nreference's; reference: the furthest-next-use rule simulated "
           "with the budget as a plain byte\ncount (no placement, so no fragmentation); floor: a "
           "lower bound on H->D for any policy (an\ninterval-packing relaxation, see the source); "
           "kernels/s: kernels / wall time from the first\nsubmit to the end of "
           "dao_tiered_synchronize (pre-existing tensors written in trace order);\nresults: "
           "every tensor still held at the end read back and compared with the unlimited run\n");
  }
  for (size_t i = 0; i < ntraces; ++i) free_trace(&traces[i]);
  free(traces);
  free(sums);
  return rc;
}
