/*
 * dao convert INPUT -o TRACE [--from lifetime-csv|torch-snapshot|ops-jsonl|dao-trace]
 *
 * Imports the memory histories users already have into libdao's trace format
 * (docs/trace-format.md, version 1): lifetime CSVs (`id,lower,upper,size`),
 * PyTorch memory snapshots with history (the pickle of
 * torch.cuda.memory._dump_snapshot, read without Python) and the op traces
 * of ../shared/traces/ops; and libdao's own traces in the recorder's binary
 * encoding, to JSON Lines. C99, public API only.
 */
#include <dao.h>

#include "dao_tool.h"
#include "pickle_reader.h"
#include "trace_reader.h"
#include "tool_value.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The trace writer                                                         */
/* ------------------------------------------------------------------------ */

typedef struct writer {
  FILE *f;
  unsigned long long t; /* the next record's t: converted traces count events */
  unsigned long long allocs, frees, records;
  double live, peak;
  unsigned long long peak_t;
} writer;

static void w_addr(writer *w, const char *key, double addr) {
  if (addr < 9007199254740992.0) {
    fprintf(w->f, ",\"%s\":%.0f", key, addr);
  } else {
    fprintf(w->f, ",\"%s\":\"0x%llx\"", key, (unsigned long long)addr);
  }
}

static void w_begin(writer *w, const char *kind) {
  fprintf(w->f, "{\"k\":\"%s\",\"t\":%llu", kind, w->t++);
  ++w->records;
}

static void w_header(writer *w, const char *source) {
  fprintf(w->f,
          "{\"format\":\"dao-trace\",\"version\":1,\"libdao\":\"%s\",\"pid\":0,"
          "\"clock\":\"logical\",\"start_ns\":0,\"source\":\"%s\"}\n",
          dao_version_string(), source);
}

static void w_allocator(writer *w, int id, const char *place, const char *strategy) {
  w_begin(w, "allocator");
  fprintf(w->f, ",\"id\":%d,\"place\":\"%s\",\"strategy\":\"%s\",\"config\":\"\",\"capacity\":0}\n",
          id, place, strategy);
}

static void w_alloc(writer *w, int a, double ptr, double size, double req, long s, long st) {
  w_begin(w, "alloc");
  fprintf(w->f, ",\"a\":%d", a);
  w_addr(w, "ptr", ptr);
  fprintf(w->f, ",\"size\":%.0f,\"req\":%.0f,\"s\":%ld", size, req, s);
  if (st >= 0) fprintf(w->f, ",\"st\":%ld", st);
  fputs("}\n", w->f);
  ++w->allocs;
  w->live += size;
  if (w->live > w->peak) {
    w->peak = w->live;
    w->peak_t = w->t - 1;
  }
}

static void w_free(writer *w, int a, double ptr, double size, long s, long st) {
  w_begin(w, "free");
  fprintf(w->f, ",\"a\":%d", a);
  w_addr(w, "ptr", ptr);
  fprintf(w->f, ",\"s\":%ld", s);
  if (st >= 0) fprintf(w->f, ",\"st\":%ld", st);
  fputs("}\n", w->f);
  ++w->frees;
  w->live -= size;
}

/* ------------------------------------------------------------------------ */
/* Shared by the converters                                                 */
/* ------------------------------------------------------------------------ */

typedef struct convert_result {
  const char *from;
  unsigned long long rows;      /* input rows, entries or lines read */
  unsigned long long unmatched; /* frees of nothing live, skipped */
  unsigned long long skipped;   /* entries of unknown kinds, skipped */
  unsigned long long preexisting;
  unsigned long long devices;
  unsigned long long stacks;
  int truncated_last_line;
} convert_result;

static const char *cmd = "convert";

static int line_bounds(const char *data, size_t len, size_t *pos, const char **line,
                       size_t *line_len, int *complete) {
  const char *nl;
  if (*pos >= len) return 0;
  *line = data + *pos;
  nl = (const char *)memchr(*line, '\n', len - *pos);
  if (nl == NULL) {
    *line_len = len - *pos;
    *pos = len;
    *complete = 0;
  } else {
    *line_len = (size_t)(nl - *line);
    *pos = (size_t)(nl - data) + 1;
    *complete = 1;
  }
  if (*line_len > 0 && (*line)[*line_len - 1] == '\r') --*line_len;
  return 1;
}

/* ------------------------------------------------------------------------ */
/* lifetime CSV: id,lower,upper,size                                        */
/* ------------------------------------------------------------------------ */

typedef struct csv_row {
  long long lower, upper, size, id;
} csv_row;

typedef struct csv_event {
  long long time;
  int order; /* 0 frees, 1 allocations, 2 frees of zero-length buffers */
  size_t row;
} csv_event;

static int csv_event_cmp(const void *pa, const void *pb) {
  const csv_event *a = (const csv_event *)pa, *b = (const csv_event *)pb;
  if (a->time != b->time) return a->time < b->time ? -1 : 1;
  if (a->order != b->order) return a->order - b->order;
  return a->row < b->row ? -1 : a->row > b->row;
}

static int parse_ll(const char **p, const char *end, long long *out) {
  long long v = 0;
  const char *q = *p;
  while (q < end && (*q == ' ' || *q == '\t')) ++q;
  if (q >= end || *q < '0' || *q > '9') return 0;
  while (q < end && *q >= '0' && *q <= '9') {
    if (v > (9000000000000000000LL - (*q - '0')) / 10) return 0;
    v = v * 10 + (*q - '0');
    ++q;
  }
  while (q < end && (*q == ' ' || *q == '\t')) ++q;
  *p = q;
  *out = v;
  return 1;
}

static int convert_csv(const char *input, const char *data, size_t len, writer *w,
                       convert_result *r, dao_tool_progress *progress) {
  csv_row *rows = NULL;
  size_t nrows = 0, cap = 0, pos = 0, lineno = 0, i;
  const char *line;
  size_t line_len;
  int complete;
  csv_event *ev;
  while (line_bounds(data, len, &pos, &line, &line_len, &complete)) {
    const char *p = line, *end = line + line_len;
    csv_row row;
    ++lineno;
    if (line_len == 0) continue;
    if (lineno == 1 && !isdigit((unsigned char)line[0])) {
      if (line_len >= 2 && memcmp(line, "id", 2) == 0) continue; /* the header */
      return dao_tool_bad_input(cmd, input,
                                "line 1: not a lifetime CSV (expected 'id,lower,upper,size')");
    }
    if (!parse_ll(&p, end, &row.id) || p >= end || *p++ != ',' || !parse_ll(&p, end, &row.lower) ||
        p >= end || *p++ != ',' || !parse_ll(&p, end, &row.upper) || p >= end || *p++ != ',' ||
        !parse_ll(&p, end, &row.size) || p != end) {
      if (!complete) {
        r->truncated_last_line = 1;
        break;
      }
      free(rows);
      return dao_tool_bad_input(cmd, input,
                                "line %lu: expected four non-negative integers "
                                "'id,lower,upper,size'",
                                (unsigned long)lineno);
    }
    if (row.upper < row.lower) {
      free(rows);
      return dao_tool_bad_input(cmd, input, "line %lu: upper %lld is before lower %lld",
                                (unsigned long)lineno, row.upper, row.lower);
    }
    if (nrows == cap) {
      cap = cap ? cap * 2 : 1024;
      rows = (csv_row *)dao_tool_xrealloc(rows, cap * sizeof *rows);
    }
    rows[nrows++] = row;
    if ((nrows & 0xffff) == 0)
      dao_tool_progress_update(progress, (double)pos, (double)len, "bytes");
  }
  if (nrows == 0) {
    free(rows);
    return dao_tool_bad_input(cmd, input, "no rows (expected 'id,lower,upper,size' lines)");
  }
  r->rows = nrows;
  ev = (csv_event *)dao_tool_xmalloc(2 * nrows * sizeof *ev);
  for (i = 0; i < nrows; ++i) {
    ev[2 * i].time = rows[i].lower;
    ev[2 * i].order = 1;
    ev[2 * i].row = i;
    ev[2 * i + 1].time = rows[i].upper;
    ev[2 * i + 1].order = rows[i].upper == rows[i].lower ? 2 : 0;
    ev[2 * i + 1].row = i;
  }
  qsort(ev, 2 * nrows, sizeof *ev, csv_event_cmp);
  w_header(w, "lifetime-csv");
  w_allocator(w, 0, "sim:0", "unknown");
  for (i = 0; i < 2 * nrows; ++i) {
    const csv_row *row = &rows[ev[i].row];
    /* a synthetic address per buffer: unique, 256-byte aligned */
    double ptr = (double)(ev[i].row + 1) * 256.0;
    if (ev[i].order == 1) {
      w_alloc(w, 0, ptr, (double)row->size, (double)row->size, 0, -1);
    } else {
      w_free(w, 0, ptr, (double)row->size, 0, -1);
    }
    if ((i & 0xffff) == 0) dao_tool_progress_update(progress, (double)i, 2.0 * nrows, "events");
  }
  free(ev);
  free(rows);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* ops JSONL: {"ev":"alloc"|"op"|"free", ...}                               */
/* ------------------------------------------------------------------------ */

static int convert_ops(const char *input, const char *data, size_t len, writer *w,
                       convert_result *r, dao_tool_progress *progress) {
  tv_arena *arena = tv_arena_create();
  dao_tool_map live; /* sid -> bytes */
  size_t pos = 0, lineno = 0;
  const char *line;
  size_t line_len;
  int complete, status = 0;
  char error[160];
  dao_tool_map_init(&live);
  w_header(w, "ops-jsonl");
  w_allocator(w, 0, "sim:0", "unknown");
  while (line_bounds(data, len, &pos, &line, &line_len, &complete)) {
    tv *v;
    const char *ev;
    long long sid, bytes;
    unsigned long long size;
    ++lineno;
    if (line_len == 0) continue;
    tv_arena_reset(arena);
    v = tv_parse_json(arena, line, line_len, error, sizeof error);
    if (v == NULL || v->type != TV_DICT || (ev = tv_str(tv_get(v, "ev"))) == NULL) {
      if (!complete && lineno > 1) {
        r->truncated_last_line = 1;
        break;
      }
      status = dao_tool_bad_input(cmd, input, "line %lu: %s%s", (unsigned long)lineno,
                                  v == NULL ? error : "not an op-trace record (no \"ev\")",
                                  lineno == 1 ? " (not an ops JSONL trace?)" : "");
      break;
    }
    ++r->rows;
    if (strcmp(ev, "alloc") == 0) {
      if (!tv_int(tv_get(v, "sid"), &sid) || !tv_int(tv_get(v, "bytes"), &bytes) || bytes < 0) {
        status = dao_tool_bad_input(cmd, input, "line %lu: an alloc needs integers sid and bytes",
                                    (unsigned long)lineno);
        break;
      }
      if (dao_tool_map_get(&live, (unsigned long long)sid, NULL)) {
        ++r->skipped; /* allocated twice: the first stays */
        continue;
      }
      dao_tool_map_put(&live, (unsigned long long)sid, (unsigned long long)bytes);
      w_alloc(w, 0, ((double)sid + 1) * 256.0, (double)bytes, (double)bytes, 0, -1);
    } else if (strcmp(ev, "free") == 0) {
      if (!tv_int(tv_get(v, "sid"), &sid)) {
        status = dao_tool_bad_input(cmd, input, "line %lu: a free needs an integer sid",
                                    (unsigned long)lineno);
        break;
      }
      if (!dao_tool_map_get(&live, (unsigned long long)sid, &size)) {
        ++r->unmatched;
        continue;
      }
      dao_tool_map_remove(&live, (unsigned long long)sid);
      w_free(w, 0, ((double)sid + 1) * 256.0, (double)size, 0, -1);
    } else if (strcmp(ev, "op") != 0) {
      ++r->skipped;
    }
    if ((lineno & 0xffff) == 0)
      dao_tool_progress_update(progress, (double)pos, (double)len, "bytes");
  }
  if (status == 0 && r->rows == 0) status = dao_tool_bad_input(cmd, input, "no records");
  dao_tool_map_free(&live);
  tv_arena_destroy(arena);
  return status;
}

/* ------------------------------------------------------------------------ */
/* PyTorch memory snapshot (pickle)                                          */
/* ------------------------------------------------------------------------ */

/* An address, size or stream of an entry: a number in [0, 2^64), or 0 when
   the key is absent or holds anything else (hostile input must not reach a
   conversion out of range). */
static int get_u64(const tv *entry, const char *key, double *out) {
  double x;
  if (!tv_number(tv_get(entry, key), &x) || !(x >= 0.0 && x < 18446744073709551616.0)) return 0;
  *out = x;
  return 1;
}

typedef struct torch_ctx {
  writer *w;
  convert_result *r;
  dao_tool_map streams; /* hash(device, handle) -> id */
  long next_stream;
  dao_tool_map stacks; /* hash of the frames' text -> id */
  long next_stack;
  char *buf; /* the frames' text */
  size_t buf_cap;
} torch_ctx;

typedef struct torch_entry {
  const tv *e;
  int device;
  double time;
  size_t index;
} torch_entry;

static int torch_entry_cmp(const void *pa, const void *pb) {
  const torch_entry *a = (const torch_entry *)pa, *b = (const torch_entry *)pb;
  if (a->time != b->time) return a->time < b->time ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static long torch_stream(torch_ctx *c, int device, const tv *entry) {
  double handle = 0;
  unsigned long long key, id;
  char place[32];
  if (!get_u64(entry, "stream", &handle) || handle == 0) return 0;
  key = dao_tool_hash(&handle, sizeof handle) ^ (unsigned long long)device * 0x9e3779b97f4a7c15ULL;
  if (dao_tool_map_get(&c->streams, key, &id)) return (long)id;
  id = (unsigned long long)c->next_stream++;
  dao_tool_map_put(&c->streams, key, id);
  snprintf(place, sizeof place, "cuda:%d", device);
  w_begin(c->w, "stream");
  fprintf(c->w->f, ",\"id\":%lu,\"place\":\"%s\"", (unsigned long)id, place);
  w_addr(c->w, "handle", handle);
  fputs("}\n", c->w->f);
  return (long)id;
}

static void buf_add(torch_ctx *c, size_t *n, const char *s, size_t len) {
  if (*n + len + 1 > c->buf_cap) {
    c->buf_cap = (*n + len + 1) * 2;
    c->buf = (char *)dao_tool_xrealloc(c->buf, c->buf_cap);
  }
  memcpy(c->buf + *n, s, len);
  *n += len;
  c->buf[*n] = '\0';
}

/* The stack id of an entry's (or a block's) frames, written when new; -1
   when it has none. Frames: "name (filename:line)", innermost first. */
static long torch_stack(torch_ctx *c, const tv *entry) {
  const tv *frames = tv_get(entry, "frames");
  size_t i, n = 0;
  unsigned long long key, id;
  char num[32];
  if (frames == NULL || frames->type != TV_LIST || frames->n == 0) return -1;
  for (i = 0; i < frames->n; ++i) {
    const tv *f = frames->items[i];
    const char *name = tv_str(tv_get(f, "name")), *file = tv_str(tv_get(f, "filename"));
    long long lineno = 0;
    tv_int(tv_get(f, "line"), &lineno);
    if (name == NULL) name = "?";
    if (file == NULL) file = "?";
    buf_add(c, &n, name, strlen(name));
    buf_add(c, &n, " (", 2);
    buf_add(c, &n, file, strlen(file));
    snprintf(num, sizeof num, ":%lld)", lineno);
    buf_add(c, &n, num, strlen(num));
    buf_add(c, &n, "\n", 1);
  }
  key = dao_tool_hash(c->buf, n);
  if (dao_tool_map_get(&c->stacks, key, &id)) return (long)id;
  id = (unsigned long long)c->next_stack++;
  dao_tool_map_put(&c->stacks, key, id);
  ++c->r->stacks;
  w_begin(c->w, "stack");
  fprintf(c->w->f, ",\"id\":%lu,\"frames\":[", (unsigned long)id);
  {
    const char *p = c->buf;
    int first = 1;
    while (*p != '\0') {
      const char *nl = strchr(p, '\n');
      if (!first) fputc(',', c->w->f);
      dao_tool_json_string_n(c->w->f, p, (size_t)(nl - p));
      first = 0;
      p = nl + 1;
    }
  }
  fputs("]}\n", c->w->f);
  return (long)id;
}

static int action_is(const char *action, const char *name) { return strcmp(action, name) == 0; }

static int convert_torch(const char *input, const char *data, size_t len, writer *w,
                         convert_result *r, dao_tool_progress *progress) {
  tv_arena *arena = tv_arena_create();
  char error[200];
  tv *root;
  const tv *traces, *segments;
  torch_entry *entries = NULL;
  size_t nentries = 0, cap = 0, i, j;
  int status = 0, all_timed = 1, ndevices = 0, d;
  torch_ctx c;
  dao_tool_map seen, seen_seg; /* addresses allocated (mapped) in the trace */

  memset(&c, 0, sizeof c);
  c.w = w;
  c.r = r;
  c.next_stream = 1;
  dao_tool_map_init(&seen);
  dao_tool_map_init(&seen_seg);

  root = pickle_read(arena, (const unsigned char *)data, len, error, sizeof error);
  if (root == NULL) {
    status = dao_tool_bad_input(cmd, input, "not a readable pickle: %s", error);
    goto out;
  }
  traces = tv_get(root, "device_traces");
  segments = tv_get(root, "segments");
  if (root->type != TV_DICT || (traces == NULL && segments == NULL)) {
    status = dao_tool_bad_input(cmd, input,
                                "a pickle, but not a PyTorch memory snapshot "
                                "(no 'segments' or 'device_traces')");
    goto out;
  }
  if ((traces != NULL && traces->type != TV_LIST) ||
      (segments != NULL && segments->type != TV_LIST)) {
    status = dao_tool_bad_input(cmd, input, "'device_traces' and 'segments' must be lists");
    goto out;
  }
  /* Every entry of every device, in time order when every entry has a time
     (merging the devices), else device after device in recorded order. */
  for (d = 0; traces != NULL && (size_t)d < traces->n; ++d) {
    const tv *list = traces->items[d];
    if (list->type != TV_LIST) {
      status = dao_tool_bad_input(cmd, input, "device_traces[%d] is not a list", d);
      goto out;
    }
    for (j = 0; j < list->n; ++j) {
      torch_entry te;
      const tv *e = list->items[j];
      if (e->type != TV_DICT || tv_str(tv_get(e, "action")) == NULL) {
        status = dao_tool_bad_input(cmd, input, "device_traces[%d][%lu] has no 'action'", d,
                                    (unsigned long)j);
        goto out;
      }
      te.e = e;
      te.device = d;
      te.index = nentries;
      te.time = 0;
      if (!get_u64(e, "time_us", &te.time)) all_timed = 0;
      if (nentries == cap) {
        cap = cap ? cap * 2 : 1024;
        entries = (torch_entry *)dao_tool_xrealloc(entries, cap * sizeof *entries);
      }
      entries[nentries++] = te;
    }
    if (list->n > 0 && d + 1 > ndevices) ndevices = d + 1;
  }
  for (i = 0; segments != NULL && i < segments->n; ++i) {
    long long dev = 0;
    if (segments->items[i]->type != TV_DICT) {
      status = dao_tool_bad_input(cmd, input, "segments[%lu] is not a dict", (unsigned long)i);
      goto out;
    }
    if (tv_int(tv_get(segments->items[i], "device"), &dev) && dev >= 0 && dev < 4096 &&
        dev + 1 > ndevices)
      ndevices = (int)dev + 1;
  }
  if (ndevices == 0) ndevices = 1;
  if (all_timed && nentries > 1) qsort(entries, nentries, sizeof *entries, torch_entry_cmp);
  r->rows = nentries;
  r->devices = (unsigned long long)ndevices;

  w_header(w, "torch-snapshot");
  for (d = 0; d < ndevices; ++d) {
    char place[32];
    snprintf(place, sizeof place, "cuda:%d", d);
    w_allocator(w, d, place, "caching");
  }

  /* What was there before the history began: blocks freed (segments
     unmapped) in the trace that it never allocated (mapped), and the
     snapshot's segments and allocated blocks that the trace never names. */
  for (i = 0; i < nentries; ++i) {
    const tv *e = entries[i].e;
    const char *action = tv_str(tv_get(e, "action"));
    double addr, size = 0;
    unsigned long long key;
    if (!get_u64(e, "addr", &addr)) continue;
    get_u64(e, "size", &size);
    key = (unsigned long long)addr ^ ((unsigned long long)entries[i].device << 56);
    if (action_is(action, "alloc")) {
      dao_tool_map_put(&seen, key, 1);
    } else if (action_is(action, "free_requested") || action_is(action, "free_completed")) {
      if (!dao_tool_map_get(&seen, key, NULL)) {
        dao_tool_map_put(&seen, key, 1);
        w_alloc(w, entries[i].device, addr, size, size, torch_stream(&c, entries[i].device, e),
                torch_stack(&c, e));
        ++r->preexisting;
      }
    } else if (action_is(action, "segment_alloc") || action_is(action, "segment_map")) {
      dao_tool_map_put(&seen_seg, key, 1);
    } else if (action_is(action, "segment_free") || action_is(action, "segment_unmap")) {
      if (!dao_tool_map_get(&seen_seg, key, NULL)) {
        dao_tool_map_put(&seen_seg, key, 1);
        w_begin(w, "map");
        fprintf(w->f, ",\"a\":%d", entries[i].device);
        w_addr(w, "addr", addr);
        fprintf(w->f, ",\"size\":%.0f}\n", size);
        ++r->preexisting;
      }
    }
  }
  for (i = 0; segments != NULL && i < segments->n; ++i) {
    const tv *seg = segments->items[i], *blocks = tv_get(seg, "blocks");
    long long dev = 0;
    double addr, size = 0;
    unsigned long long key;
    if (!tv_int(tv_get(seg, "device"), &dev) || dev < 0 || dev >= ndevices) dev = 0;
    if (!get_u64(seg, "address", &addr)) continue;
    get_u64(seg, "total_size", &size);
    key = (unsigned long long)addr ^ ((unsigned long long)dev << 56);
    if (!dao_tool_map_get(&seen_seg, key, NULL)) {
      dao_tool_map_put(&seen_seg, key, 1);
      w_begin(w, "map");
      fprintf(w->f, ",\"a\":%d", (int)dev);
      w_addr(w, "addr", addr);
      fprintf(w->f, ",\"size\":%.0f}\n", size);
      ++r->preexisting;
    }
    for (j = 0; blocks != NULL && blocks->type == TV_LIST && j < blocks->n; ++j) {
      const tv *b = blocks->items[j];
      const char *state = tv_str(tv_get(b, "state"));
      double baddr, bsize = 0, breq;
      if (state == NULL || strcmp(state, "active_allocated") != 0) continue;
      if (!get_u64(b, "address", &baddr)) continue;
      get_u64(b, "size", &bsize);
      if (!get_u64(b, "requested_size", &breq)) breq = bsize;
      key = (unsigned long long)baddr ^ ((unsigned long long)dev << 56);
      if (dao_tool_map_get(&seen, key, NULL)) continue;
      dao_tool_map_put(&seen, key, 1);
      w_alloc(w, (int)dev, baddr, bsize, breq, torch_stream(&c, (int)dev, seg), torch_stack(&c, b));
      ++r->preexisting;
    }
  }

  /* The history. */
  for (i = 0; i < nentries; ++i) {
    const tv *e = entries[i].e;
    const char *action = tv_str(tv_get(e, "action"));
    int dev = entries[i].device;
    double addr = 0, size = 0;
    int has_addr = get_u64(e, "addr", &addr);
    get_u64(e, "size", &size);
    if ((i & 0xffff) == 0)
      dao_tool_progress_update(progress, (double)i, (double)nentries, "entries");
    if (action_is(action, "alloc") && has_addr) {
      long s = torch_stream(&c, dev, e), st = torch_stack(&c, e);
      w_alloc(w, dev, addr, size, size, s, st);
    } else if (action_is(action, "free_requested") && has_addr) {
      long s = torch_stream(&c, dev, e), st = torch_stack(&c, e);
      w_free(w, dev, addr, size, s, st);
    } else if (action_is(action, "free_completed") && has_addr) {
      w_begin(w, "free_done");
      fprintf(w->f, ",\"a\":%d", dev);
      w_addr(w, "ptr", addr);
      fputs("}\n", w->f);
    } else if ((action_is(action, "segment_alloc") || action_is(action, "segment_map")) &&
               has_addr) {
      w_begin(w, "map");
      fprintf(w->f, ",\"a\":%d", dev);
      w_addr(w, "addr", addr);
      fprintf(w->f, ",\"size\":%.0f}\n", size);
    } else if ((action_is(action, "segment_free") || action_is(action, "segment_unmap")) &&
               has_addr) {
      w_begin(w, "unmap");
      fprintf(w->f, ",\"a\":%d", dev);
      w_addr(w, "addr", addr);
      fprintf(w->f, ",\"size\":%.0f}\n", size);
    } else if (action_is(action, "oom")) {
      double device_free = 0;
      long s = torch_stream(&c, dev, e);
      get_u64(e, "device_free", &device_free);
      w_begin(w, "oom");
      fprintf(w->f, ",\"a\":%d,\"size\":%.0f,\"s\":%ld,\"free\":%.0f,\"msg\":", dev, size, s,
              device_free);
      dao_tool_json_string(w->f, "CUDA out of memory (from a PyTorch snapshot)");
      fputs("}\n", w->f);
    } else if (action_is(action, "snapshot")) {
      w_begin(w, "mark");
      fputs(",\"text\":\"snapshot\"}\n", w->f);
    } else {
      ++r->skipped; /* an action of a later PyTorch, or one without an address */
    }
  }

out:
  free(entries);
  free(c.buf);
  dao_tool_map_free(&c.streams);
  dao_tool_map_free(&c.stacks);
  dao_tool_map_free(&seen);
  dao_tool_map_free(&seen_seg);
  tv_arena_destroy(arena);
  return status;
}

/* ------------------------------------------------------------------------ */
/* A libdao trace (the recorder's binary encoding) to JSON Lines            */
/* ------------------------------------------------------------------------ */

static void dao_progress(size_t done, size_t total, void *user) {
  dao_tool_progress_update((dao_tool_progress *)user, (double)done, (double)total, "bytes");
}

static void w_str_field(writer *w, const char *key, const char *value) {
  fprintf(w->f, ",\"%s\":", key);
  dao_tool_json_string(w->f, value != NULL ? value : "");
}

/* The same records, times and tables, one JSON object a line: what `jq`
   and other languages read without the binary decoder. Definitions come
   first; the input's own `end` is replaced by the one every conversion
   ends with. */
static int convert_dao(const char *input, writer *w, convert_result *r,
                       dao_tool_progress *progress) {
  dao_trace t;
  char err[512];
  size_t i, k;
  uint64_t first_t;
  if (dao_trace_read(input, &t, err, sizeof err, dao_progress, progress) != 0)
    return dao_tool_bad_input(cmd, input, "%s", err);
  r->rows = t.count;
  r->unmatched = t.unmatched;
  r->skipped = t.unknown_kinds;
  r->truncated_last_line = t.incomplete_last_line;
  r->stacks = t.stack_count;
  r->devices = t.allocator_count;
  fprintf(w->f, "{\"format\":\"dao-trace\",\"version\":1,\"libdao\":");
  dao_tool_json_string(w->f, t.libdao);
  fprintf(w->f, ",\"pid\":%lld", (long long)t.pid);
  w_str_field(w, "clock", t.clock);
  fprintf(w->f, ",\"start_ns\":%llu", (unsigned long long)t.start_ns);
  w_str_field(w, "source", t.source);
  fputs("}\n", w->f);
  first_t = t.count != 0 ? t.records[0].t : 0;
  w->t = first_t;
  for (i = 0; i < t.allocator_count; ++i) {
    const dao_tr_allocator *a = &t.allocators[i];
    w_begin(w, "allocator");
    fprintf(w->f, ",\"id\":%u", a->id);
    w_str_field(w, "place", a->place);
    w_str_field(w, "strategy", a->strategy);
    w_str_field(w, "config", a->config);
    fprintf(w->f, ",\"capacity\":%llu}\n", (unsigned long long)a->capacity);
    w->t = first_t;
  }
  for (i = 0; i < t.stream_count; ++i) {
    w_begin(w, "stream");
    fprintf(w->f, ",\"id\":%u", t.streams[i].id);
    w_str_field(w, "place", t.streams[i].place);
    fprintf(w->f, ",\"handle\":%llu}\n", (unsigned long long)t.streams[i].handle);
    w->t = first_t;
  }
  for (i = 0; i < t.stack_count; ++i) {
    w_begin(w, "stack");
    fprintf(w->f, ",\"id\":%u,\"frames\":[", t.stacks[i].id);
    for (k = 0; k < t.stacks[i].frame_count; ++k) {
      if (k != 0) fputc(',', w->f);
      dao_tool_json_string(w->f, t.stacks[i].frames[k]);
    }
    fputs("]}\n", w->f);
    w->t = first_t;
  }
  for (i = 0; i < t.count; ++i) {
    const dao_tr_record *x = &t.records[i];
    const char *text = x->text != DAO_TR_NONE ? t.texts[x->text] : "";
    if (x->kind == DAO_TR_END) continue;
    w->t = x->t;
    w_begin(w, dao_tr_kind_name(x->kind));
    switch (x->kind) {
      case DAO_TR_ALLOC:
      case DAO_TR_FREE:
      case DAO_TR_FREE_DONE:
      case DAO_TR_USE:
        fprintf(w->f, ",\"a\":%u", x->alloc);
        w_addr(w, "ptr", (double)x->ptr);
        if (x->kind == DAO_TR_ALLOC) {
          fprintf(w->f, ",\"size\":%llu,\"req\":%llu", (unsigned long long)x->size,
                  (unsigned long long)x->req);
          ++w->allocs;
          w->live += (double)x->size;
          if (w->live > w->peak) {
            w->peak = w->live;
            w->peak_t = x->t;
          }
        } else if (x->kind == DAO_TR_FREE && x->match != DAO_TR_NONE) {
          ++w->frees;
          w->live -= (double)t.records[x->match].size;
        }
        if (x->kind != DAO_TR_FREE_DONE) fprintf(w->f, ",\"s\":%u", x->stream);
        if (x->stack != DAO_TR_NONE) fprintf(w->f, ",\"st\":%u", x->stack);
        if (x->tid != 0) fprintf(w->f, ",\"tid\":%u", x->tid);
        break;
      case DAO_TR_MAP:
      case DAO_TR_UNMAP:
        fprintf(w->f, ",\"a\":%u", x->alloc);
        w_addr(w, "addr", (double)x->ptr);
        fprintf(w->f, ",\"size\":%llu", (unsigned long long)x->size);
        break;
      case DAO_TR_OOM:
        fprintf(w->f, ",\"a\":%u,\"size\":%llu,\"s\":%u,\"free\":%llu", x->alloc,
                (unsigned long long)x->size, x->stream, (unsigned long long)x->req);
        w_str_field(w, "msg", text);
        break;
      case DAO_TR_TRIM:
        fprintf(w->f, ",\"a\":%u,\"released\":%llu", x->alloc, (unsigned long long)x->size);
        break;
      case DAO_TR_LOST: fprintf(w->f, ",\"count\":%llu", (unsigned long long)x->size); break;
      case DAO_TR_MARK: w_str_field(w, "text", text); break;
      default: break;
    }
    fputs("}\n", w->f);
  }
  w->t = t.count != 0 ? t.records[t.count - 1].t : first_t;
  dao_trace_free(&t);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Command line                                                             */
/* ------------------------------------------------------------------------ */

void dao_usage_convert(FILE *out) {
  fprintf(out,
          "Usage: %s convert INPUT -o TRACE [--from FORMAT] [--json]\n"
          "\n"
          "Convert a memory history from another tool into a libdao trace\n"
          "(docs/trace-format.md, version 1), for dao replay, plan and view.\n"
          "\n"
          "Formats (guessed from the content when --from is absent):\n"
          "  lifetime-csv    'id,lower,upper,size' rows: buffer id is live on the\n"
          "                  logical interval [lower, upper) (../shared/traces/somas,\n"
          "                  minimalloc). At equal times frees come first.\n"
          "  torch-snapshot  the pickle of torch.cuda.memory._dump_snapshot() taken\n"
          "                  with _record_memory_history() on: its device_traces\n"
          "                  become alloc, free, free_done, map, unmap, oom and mark\n"
          "                  records, its frames stack records; blocks and segments\n"
          "                  that predate the history start the trace. Read without\n"
          "                  Python or PyTorch.\n"
          "  ops-jsonl       the op traces of ../shared/traces/ops ({\"ev\":\"alloc\"|\n"
          "                  \"free\"|\"op\", ...}): storages become allocations.\n"
          "  dao-trace       a libdao trace, either encoding (the recorder writes the\n"
          "                  binary one): the same records and times as JSON Lines,\n"
          "                  for jq and other languages.\n"
          "\n"
          "Options:\n"
          "  -o, --output TRACE  The trace to write (required; '-' for stdout).\n"
          "  --from FORMAT       The input's format (see above).\n"
          "  --json              Print the summary as one JSON object.\n"
          "  -h, --help          Show this help and exit.\n"
          "\n"
          "Prints a summary: records written, allocations and frees, the most bytes\n"
          "live at once (the max load) and where. Exit status: 0 on success, 2 for a\n"
          "bad command line or an unreadable, truncated or foreign input.\n",
          dao_tool_program);
}

/* The input's format from its first bytes, or NULL. */
static const char *detect(const char *data, size_t len) {
  size_t i = 0;
  static const char dao_header[] = "{\"format\":\"dao-trace\"";
  if (pickle_looks_like((const unsigned char *)data, len)) return "torch-snapshot";
  if (len >= sizeof dao_header - 1 && memcmp(data, dao_header, sizeof dao_header - 1) == 0)
    return "dao-trace";
  while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
  if (i < len && data[i] == '{') {
    const char *nl = (const char *)memchr(data + i, '\n', len - i);
    size_t n = nl != NULL ? (size_t)(nl - data - i) : len - i;
    const char *key = "\"ev\"";
    size_t k;
    for (k = 0; k + 4 <= n; ++k)
      if (memcmp(data + i + k, key, 4) == 0) return "ops-jsonl";
    return NULL;
  }
  if (i < len &&
      (isdigit((unsigned char)data[i]) || (len - i >= 3 && memcmp(data + i, "id,", 3) == 0)))
    return "lifetime-csv";
  return NULL;
}

int dao_command_convert(int argc, char **argv) {
  const char *input = NULL, *output = NULL, *from = NULL;
  int json = 0, i, status;
  char *data;
  size_t len;
  char error[200];
  writer w;
  convert_result r;
  dao_tool_progress progress;
  double start = dao_tool_now();
  char live[32];

  for (i = 0; i < argc; ++i) {
    const char *arg = argv[i];
    if (dao_tool_is_help(arg)) {
      dao_usage_convert(stdout);
      return EXIT_SUCCESS;
    } else if (strcmp(arg, "--json") == 0) {
      json = 1;
    } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0 ||
               strcmp(arg, "--from") == 0) {
      if (i + 1 >= argc)
        return dao_tool_bad_usage("convert: missing value after", arg, "dao convert --help");
      if (arg[1] == 'o' || arg[2] == 'o') output = argv[++i];
      else from = argv[++i];
    } else if (strncmp(arg, "--from=", 7) == 0) {
      from = arg + 7;
    } else if (strncmp(arg, "--output=", 9) == 0) {
      output = arg + 9;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return dao_tool_bad_usage("convert: unknown option", arg, "dao convert --help");
    } else if (input == NULL) {
      input = arg;
    } else {
      return dao_tool_bad_usage("convert: unexpected argument", arg, "dao convert --help");
    }
  }
  if (input == NULL) return dao_tool_bad_usage("convert: missing", "INPUT", "dao convert --help");
  if (output == NULL)
    return dao_tool_bad_usage("convert: missing", "-o TRACE", "dao convert --help");
  if (from != NULL && strcmp(from, "lifetime-csv") != 0 && strcmp(from, "torch-snapshot") != 0 &&
      strcmp(from, "ops-jsonl") != 0 && strcmp(from, "dao-trace") != 0)
    return dao_tool_bad_usage("convert: unknown format", from, "dao convert --help");
  if (dao_tool_read_file(input, &data, &len, error, sizeof error) != 0)
    return dao_tool_bad_input(cmd, input, "%s", error);
  if (len == 0) {
    free(data);
    return dao_tool_bad_input(cmd, input, "empty file");
  }
  if (from == NULL) {
    from = detect(data, len);
    if (from == NULL) {
      free(data);
      return dao_tool_bad_input(cmd, input,
                                "unknown format (not a lifetime CSV, a PyTorch snapshot pickle, "
                                "an ops JSONL trace or a libdao trace); name it with --from");
    }
  }
  memset(&w, 0, sizeof w);
  memset(&r, 0, sizeof r);
  r.from = from;
  w.f = strcmp(output, "-") == 0 ? stdout : fopen(output, "w");
  if (w.f == NULL) {
    free(data);
    return dao_tool_bad_input(cmd, output, "cannot write the trace");
  }
  dao_tool_progress_start(&progress, "convert");
  if (strcmp(from, "lifetime-csv") == 0) status = convert_csv(input, data, len, &w, &r, &progress);
  else if (strcmp(from, "ops-jsonl") == 0)
    status = convert_ops(input, data, len, &w, &r, &progress);
  else if (strcmp(from, "dao-trace") == 0) status = convert_dao(input, &w, &r, &progress);
  else status = convert_torch(input, data, len, &w, &r, &progress);
  dao_tool_progress_end(&progress);
  free(data);
  if (status == 0) {
    w_begin(&w, "end");
    fprintf(w.f, ",\"records\":%llu,\"lost\":0}\n", w.records);
  }
  if (w.f != stdout) {
    if (fclose(w.f) != 0 && status == 0)
      status = dao_tool_bad_input(cmd, output, "cannot write the trace");
    if (status != 0) remove(output);
  } else if (fflush(stdout) != 0 && status == 0) {
    status = dao_tool_bad_input(cmd, output, "cannot write the trace");
  }
  if (status != 0) return status;
  if (r.truncated_last_line)
    fprintf(stderr, "%s: convert: %s: the last line is incomplete (truncated?); ignored\n",
            dao_tool_program, input);
  if (strcmp(output, "-") == 0) return EXIT_SUCCESS; /* the trace is the output */
  if (json) {
    printf("{\"input\": ");
    dao_tool_json_string(stdout, input);
    printf(", \"output\": ");
    dao_tool_json_string(stdout, output);
    printf(", \"from\": \"%s\", \"input_records\": %llu, \"records\": %llu, \"allocations\": %llu, "
           "\"frees\": %llu, \"max_live_bytes\": %.0f, \"max_live_at\": %llu, \"unmatched_frees\": "
           "%llu, \"skipped\": %llu, \"preexisting\": %llu, \"stacks\": %llu, \"devices\": %llu, "
           "\"truncated_last_line\": %s, \"seconds\": %.3f}\n",
           from, r.rows, w.records, w.allocs, w.frees, w.peak, w.peak_t, r.unmatched, r.skipped,
           r.preexisting, r.stacks, r.devices, r.truncated_last_line ? "true" : "false",
           dao_tool_now() - start);
  } else {
    dao_tool_format_bytes(w.peak, live, sizeof live);
    printf("%s (%s) -> %s\n", input, from, output);
    printf("  records:   %llu (%llu allocations, %llu frees) from %llu input records\n", w.records,
           w.allocs, w.frees, r.rows);
    printf("  max load:  %s (%.0f bytes live at once, at t=%llu)\n", live, w.peak, w.peak_t);
    if (r.preexisting)
      printf("  before the history: %llu blocks and segments (from the snapshot)\n", r.preexisting);
    if (r.unmatched) printf("  skipped:   %llu frees of nothing live\n", r.unmatched);
    if (r.skipped) printf("  skipped:   %llu records of unknown kinds\n", r.skipped);
    printf("  time:      %.2f s\n", dao_tool_now() - start);
  }
  return EXIT_SUCCESS;
}
