/*
 * trace_reader: reads a libdao memory-history trace (docs/trace-format.md,
 * version 1) into one compact array of records plus the tables its records
 * refer to (allocators, streams, stacks, texts). Plain C99, no dependency
 * but the C library: the `dao` tool's replay, plan, view and convert
 * subcommands share it.
 *
 * Both encodings: JSON Lines, and the binary one the recorder writes by
 * default (frames after the header line: `J` frames of JSON lines, `R`
 * frames of 48-byte records), read into the same records.
 *
 * What it checks (the format's reading rules): the first line must be a
 * header of format "dao-trace" and version <= 1; every later line must be a
 * JSON object with "k" and "t", else the read fails naming the line. Kinds
 * it does not know are counted and skipped; so are frees (and free_done,
 * use) of a pointer with no live allocation of that allocator (count and
 * first line kept); an incomplete last line (no '\n') is ignored and
 * flagged. Reading 10^6 lines takes about a second: the file is read once
 * into memory and each line parsed in place.
 *
 * Thread safety: a dao_trace is owned by the caller; functions on distinct
 * traces may run concurrently.
 */
#ifndef DAO_TOOLS_TRACE_READER_H
#define DAO_TOOLS_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Record kinds kept in the array (the `k` of the format). Definitions
   (allocator, stream, stack) go to the tables, not the array. */
typedef enum dao_tr_kind {
  DAO_TR_ALLOC = 0,
  DAO_TR_FREE = 1,
  DAO_TR_FREE_DONE = 2,
  DAO_TR_USE = 3,
  DAO_TR_MAP = 4,
  DAO_TR_UNMAP = 5,
  DAO_TR_OOM = 6,
  DAO_TR_TRIM = 7,
  DAO_TR_LOST = 8,
  DAO_TR_MARK = 9,
  DAO_TR_END = 10
} dao_tr_kind;

#define DAO_TR_KIND_COUNT 11
#define DAO_TR_NONE UINT32_MAX /* no stack / no match / no text */

/* One record. Which fields mean what, by kind:
   - alloc:     ptr, size (block), req (asked), stream, stack
   - free, free_done, use: ptr, stream (use: the new stream), stack (free),
                match = index of the alloc record it ends or uses
   - map/unmap: ptr = addr, size
   - oom:       size = bytes asked, req = bytes free on the place, stream,
                text = msg
   - trim:      size = bytes released
   - lost:      size = records dropped
   - mark:      text
   - end:       size = records, req = lost */
typedef struct dao_tr_record {
  uint64_t t;      /* ns since the header's start_ns (or the event index) */
  uint64_t ptr;    /* address */
  uint64_t size;   /* see above */
  uint64_t req;    /* see above */
  uint32_t line;   /* 1-based line number in the file */
  uint32_t alloc;  /* allocator id as in the file (`a`); 0 when absent */
  uint32_t stream; /* stream id (`s`); 0 = the NULL stream */
  uint32_t stack;  /* stack id (`st`), or DAO_TR_NONE */
  uint32_t match;  /* see above; DAO_TR_NONE otherwise */
  uint32_t text;   /* index in dao_trace::texts, or DAO_TR_NONE */
  uint32_t tid;    /* thread (`tid`), 0 when absent */
  uint8_t kind;    /* dao_tr_kind */
} dao_tr_record;

typedef struct dao_tr_allocator {
  uint32_t id;
  char *place;    /* "sim:0", "cpu", ... */
  char *strategy; /* may be "" */
  char *config;   /* may be "" */
  uint64_t capacity;
  uint32_t line;
} dao_tr_allocator;

typedef struct dao_tr_stream {
  uint32_t id;
  char *place;
  uint64_t handle;
} dao_tr_stream;

typedef struct dao_tr_stack {
  uint32_t id;
  size_t frame_count;
  char **frames; /* innermost first */
} dao_tr_stack;

typedef struct dao_trace {
  /* header */
  int version;
  char *libdao;
  int64_t pid;
  char *clock; /* "monotonic" or "logical" */
  uint64_t start_ns;
  char *source; /* "recorded", "lifetime-csv", ... */

  dao_tr_record *records;
  size_t count;
  dao_tr_allocator *allocators;
  size_t allocator_count;
  dao_tr_stream *streams;
  size_t stream_count;
  dao_tr_stack *stacks;
  size_t stack_count;
  char **texts;
  size_t text_count;

  /* what the reader noticed */
  size_t lines;             /* complete lines (and binary records) read, header included */
  int incomplete_last_line; /* 1: the file ended without '\n', or inside a frame (ignored) */
  size_t unknown_kinds;     /* records of kinds this reader does not know */
  size_t first_unknown_line;
  size_t unmatched; /* free/free_done/use with no live alloc: skipped */
  size_t first_unmatched_line;
  int ended;     /* an `end` record was read */
  uint64_t lost; /* sum of `lost` records */
} dao_trace;

/* Reads `path` into `*out` (zeroed first). Returns 0, or -1 with a message
   ("PATH:LINE: what") in err[0..err_size) and *out empty. `progress`, when
   not NULL, is called now and then with the bytes parsed and the total. */
int dao_trace_read(const char *path, dao_trace *out, char *err, size_t err_size,
                   void (*progress)(size_t done, size_t total, void *user), void *user);

/* Frees what dao_trace_read() allocated; `t` is left zeroed. NULL is a no-op. */
void dao_trace_free(dao_trace *t);

/* "alloc", "free", ... for a dao_tr_kind; "?" otherwise. */
const char *dao_tr_kind_name(int kind);

/* The allocator / stream / stack of an id, or NULL. */
const dao_tr_allocator *dao_trace_allocator(const dao_trace *t, uint32_t id);
const dao_tr_stream *dao_trace_stream(const dao_trace *t, uint32_t id);
const dao_tr_stack *dao_trace_stack(const dao_trace *t, uint32_t id);

#ifdef __cplusplus
}
#endif

#endif
