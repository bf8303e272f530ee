/*
 * dao_history.h: what `dao replay` and `dao plan` share (dao_history.c):
 * size and place parsing, loading a trace with the reader's notices, the
 * max load, a progress line, and the replay of a trace (dao_replay.c),
 * which `dao plan` runs in child processes. C99 over the public API only;
 * the helpers of every subcommand are in dao_tool.h.
 */
#ifndef DAO_TOOLS_DAO_HISTORY_H
#define DAO_TOOLS_DAO_HISTORY_H

#include <dao.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_reader.h"

#define DAO_TOOL_EXIT_FAILURE 1 /* a library call failed */

/* Parses "16GiB", "1.5 GiB", "4096", "2G" (powers of 1024). 0 on success. */
int dao_history_parse_size(const char *text, uint64_t *out);

/* A progress line on stderr, "\r"-rewritten, at most every 0.5 s, only
   when stderr is a terminal or DAO_PROGRESS=1; done() ends the line. */
void dao_history_progress(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void dao_history_progress_done(void);

/* Reads a trace, with a progress line; prints the reader's notices
   (incomplete last line, unknown kinds, unmatched frees) on stderr unless
   quiet. 0, or 2 after printing the error. */
int dao_history_load_trace(const char *path, dao_trace *t, int quiet);

/* The largest sum of `req` of live allocations over the trace, and of
   `size` (block sizes as recorded). `allocator`: 0 for all. */
void dao_history_max_load(const dao_trace *t, uint32_t allocator, uint64_t *by_req,
                          uint64_t *by_size);

/* ---- replay (dao_replay.c) ---- */

typedef struct dao_replay_options {
  dao_place place;      /* where to replay */
  int sim;              /* place is a SIM device: capacity applies */
  uint64_t capacity;    /* SIM capacity in bytes; 0: chosen from the trace */
  const char *strategy; /* NULL: the place's default */
  const char *config;   /* NULL: defaults */
  uint32_t allocator;   /* trace allocator id to replay; 0: all */
} dao_replay_options;

typedef struct dao_replay_result {
  int fits;             /* every allocation succeeded */
  int setup_failed;     /* the allocator could not be made (status in `status`) */
  dao_status status;    /* of the failing call */
  char message[1024];   /* its dao_last_error() */
  uint32_t failed_line; /* line of the alloc that failed */
  uint64_t failed_size;
  uint64_t capacity; /* the SIM capacity used (0 elsewhere) */
  uint64_t allocs, frees, uses;
  uint64_t max_load;         /* of the trace, by req */
  dao_allocator_stats stats; /* at the end (before freeing what is live) */
  double seconds;            /* wall time of the replay loop */
  uint64_t sim_ns;           /* simulated driver time (SIM) */
  uint64_t sim_calls;        /* simulated driver calls (SIM) */
} dao_replay_result;

/* Replays `t` in this process. Configures the SIM devices first when
   o->sim, so it must run before any other use of a SIM place. Returns 0
   when it ran (fits or not: see r->fits), 1 when a call failed otherwise
   (r->setup_failed / r->message). */
int dao_replay_run(const dao_trace *t, const dao_replay_options *o, dao_replay_result *r);

/* Parses "sim", "sim:N", "cpu", "cuda:N", "pinned", "managed:N". 0 on success. */
int dao_history_parse_place(const char *text, dao_place *place, int *sim);

int dao_main_replay(int argc, char **argv);
int dao_main_plan(int argc, char **argv);
void dao_usage_replay(FILE *out);
void dao_usage_plan(FILE *out);

#endif
