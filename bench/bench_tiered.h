/* bench_tiered: what its files share (see bench_tiered.c for the program):
 * its constants, the trace model (events, storages, ops), the results of a
 * reference simulation, of a replay and of a trace, small utilities, and
 * the functions each file gives the others. */
#ifndef DAO_BENCH_TIERED_H
#define DAO_BENCH_TIERED_H

#include <dao.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ------------------------------------------------------------------------ */
/* Utilities                                                                */

static inline void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n != 0 ? n : 1);
  if (q == NULL) {
    fprintf(stderr, "bench_tiered: out of host memory (%zu bytes)\n", n);
    exit(EXIT_ERROR);
  }
  return q;
}

static inline char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

static inline uint64_t mix64(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ------------------------------------------------------------------------ */
/* Options (bench_tiered_options.c)                                         */

typedef struct options {
  const char *traces;
  int traces_given;
  const char *only;
  int quick;
  int stream;             /* --stream: cyclic weight streaming (issue 21) */
  int graph;              /* --graph: cost per kernel on a big graph */
  int cuda;               /* --device cuda: stream on cuda:0 (its own link) */
  const char *extra;      /* --config: appended to every --stream case's config */
  uint64_t scale;         /* --scale: the h200 link's rates divided by this */
  uint64_t weight_mib;    /* --weight-mib: bytes of each streamed weight */
  uint64_t graph_tensors; /* --graph-tensors */
  uint64_t graph_kernels; /* --graph-kernels */
} options;

/* Fills *o from the command line; exits on --help (0) or bad flags (2). */
void parse_options(int argc, char **argv, options *o);

/* ------------------------------------------------------------------------ */
/* Synthetic cases of issue 21 (bench_tiered_stream.c)                      */

/* Cyclic weight streaming over the SIM model of the H200's link. */
int bench_stream(const options *o);
/* The executor's cost per kernel with many live tensors. */
int bench_graph(const options *o);

/* ------------------------------------------------------------------------ */
/* Traces (bench_tiered_trace.c)                                            */

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

/* Loads a trace and computes its peak live bytes, working sets and uses.
   Returns 0, or 1 after writing err. */
int load_trace(const char *path, trace *t, char *err, size_t errlen);
void free_trace(trace *t);

/* ------------------------------------------------------------------------ */
/* Reference simulation and floor (bench_tiered_reference.c)                */

typedef struct ref_result {
  uint64_t evicted; /* bytes device -> host */
  uint64_t fetched; /* bytes host -> device */
  uint64_t floor;   /* bytes any policy must fetch back (lower bound) */
} ref_result;

/* The furthest-next-use rule with the budget as a plain byte count: sets
   r->evicted and r->fetched (r->floor to 0). */
void reference(const trace *t, uint64_t budget, ref_result *r);
/* A lower bound on the bytes that any policy must fetch back. */
uint64_t fetch_floor(const trace *t, uint64_t budget);

/* ------------------------------------------------------------------------ */
/* Replay through a tiered pool (bench_tiered_replay.c)                     */

typedef struct run_result {
  int refused;       /* a submit was refused with DAO_ERR_OUT_OF_MEMORY */
  char message[512]; /* ... and why */
  dao_tiered_stats stats;
  uint64_t written_to_device; /* bytes of writes that went straight to the device
                                 (link stats bytes_to_device - bytes_fetched) */
  uint64_t copy_ns;           /* link stats: time any copy was under way */
  double wall_s;              /* submit .. synchronize */
  uint64_t kernel_ns;         /* inside kernel functions */
  uint64_t kernels;           /* submitted */
  uint64_t *hashes;           /* per storage still held at the end (others 0) */
} run_result;

/* The deterministic contents of pre-existing storage `sid`. */
void fill_pattern(unsigned char *p, uint64_t n, uint64_t sid);
/* Replays a trace through a new tiered pool; see bench_tiered_replay.c. */
int replay(const trace *t, uint64_t budget, const char *config, double spin_ns_per_byte,
           unsigned char *const *pre_data, int upfront, int skip_ok, run_result *r);
/* Number of held tensors whose result differs from the unlimited run. */
size_t count_mismatches(const trace *t, const run_result *a, const run_result *b);

/* ------------------------------------------------------------------------ */
/* One trace measured and reported (bench_tiered_report.c)                  */

typedef struct trace_summary {
  int ratio_ok, ratio_known; /* belady <= 1.10x the reference everywhere */
  int lru_ok, lru_known;     /* belady < lru at 25 % and 50 % */
  double worst_ratio;
  double overhead_us; /* executor overhead per kernel, everything fitting */
  double hidden;      /* fraction of copy time hidden by prefetch, or -1 */
} trace_summary;

/* Runs everything on one trace and prints its rows; returns 0, 1 (error or
   wrong results) or EXIT_SKIP (no tiered pools; only on the first trace). */
int bench_trace(const trace *t, int quick, int first, trace_summary *sum);

#endif /* DAO_BENCH_TIERED_H */
