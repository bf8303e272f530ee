/*
 * dao view TRACE|SNAPSHOT.json [-o memory.html] [--json]
 *
 * Writes one self-contained HTML page (no network: its CSS, JavaScript and
 * data inline) that shows a libdao trace — live memory over time stacked by
 * allocation, the segments and blocks at any moment (the peak by default),
 * the largest allocations there — or a snapshot's segments and blocks (the
 * JSON of dao_allocator_snapshot_json()). The page is tools/view/; this file
 * reads the input (traces through tools/trace_reader.h), pairs allocations
 * with their frees and embeds the result
 * as compact columns (delta-coded starts and addresses) that the page draws
 * on canvases. C99, public API only.
 */
#include <dao.h>

#include "dao_tool.h"
#include "tool_value.h"
#include "trace_reader.h"
#include "view_assets.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cmd = "view";

/* A growing string. */
typedef struct sbuf {
  char *p;
  size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = (char *)dao_tool_xrealloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[512];
  int n;
  va_list ap;
  va_start(ap, fmt);
  n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string into a buffer, safe inside an HTML script element. */
static void sb_json(sbuf *b, const char *s, size_t n) {
  size_t i;
  sb_add(b, "\"", 1);
  for (i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      sb_add(b, e, 2);
    } else if (c == '/' && i > 0 && s[i - 1] == '<') {
      sb_add(b, "\\/", 2);
    } else if (c < 0x20) {
      sb_printf(b, "\\u%04x", c);
    } else {
      sb_add(b, (const char *)&s[i], 1);
    }
  }
  sb_add(b, "\"", 1);
}

/* An interval: an allocation or a segment. */
typedef struct interval {
  double start, end; /* timeline events: live on [start, end) */
  double size, req, addr;
  long stream, stack, alloc;
} interval;

typedef struct intervals {
  interval *v;
  size_t n, cap;
} intervals;

static size_t push_interval(intervals *iv) {
  if (iv->n == iv->cap) {
    iv->cap = iv->cap ? iv->cap * 2 : 1024;
    iv->v = (interval *)dao_tool_xrealloc(iv->v, iv->cap * sizeof(interval));
  }
  memset(&iv->v[iv->n], 0, sizeof(interval));
  return iv->n++;
}

typedef struct trace_view {
  intervals allocs, segs;
  sbuf allocators, streams, stacks, ooms;
  double events; /* timeline events: allocations and frees */
  double live, peak, peak_at;
  unsigned long long unmatched, lines;
  int truncated;
  char source[64];
} trace_view;

static unsigned long long key_of(long a, double ptr) {
  return (unsigned long long)ptr ^ ((unsigned long long)a << 56);
}

static void read_progress(size_t done, size_t total, void *user) {
  dao_tool_progress_update((dao_tool_progress *)user, (double)done, (double)total, "bytes");
}

/* Reads a trace (docs/trace-format.md, version 1; tools/trace_reader.h)
   into intervals: allocations from their alloc to their free, segments from
   their map to their unmap, on an axis of timeline events (allocs and
   frees). */
static int read_trace(const char *input, trace_view *t, dao_tool_progress *progress) {
  dao_trace tr;
  dao_tool_map live_seg;
  char err[512];
  size_t i, j;
  uint32_t *interval_of; /* record index -> allocation interval */
  if (dao_trace_read(input, &tr, err, sizeof err, read_progress, progress) != 0) {
    fprintf(stderr, "%s: %s: %s\n", dao_tool_program, cmd, err);
    return DAO_TOOL_EXIT_USAGE;
  }
  dao_tool_map_init(&live_seg);
  snprintf(t->source, sizeof t->source, "%s", tr.source != NULL ? tr.source : "recorded");
  t->unmatched = tr.unmatched;
  t->truncated = tr.incomplete_last_line;
  t->lines = tr.lines;
  interval_of = (uint32_t *)dao_tool_xmalloc((tr.count + 1) * sizeof(uint32_t));
  for (i = 0; i < tr.count; ++i) {
    const dao_tr_record *r = &tr.records[i];
    unsigned long long key = key_of((long)r->alloc, (double)r->ptr), idx;
    interval *iv;
    interval_of[i] = DAO_TR_NONE;
    switch (r->kind) {
      case DAO_TR_ALLOC:
        idx = push_interval(&t->allocs);
        interval_of[i] = (uint32_t)idx;
        iv = &t->allocs.v[idx];
        iv->start = t->events;
        iv->end = -1;
        iv->size = (double)r->size;
        iv->req = (double)r->req;
        iv->addr = (double)r->ptr;
        iv->stream = (long)r->stream;
        iv->stack = r->stack == DAO_TR_NONE ? -1 : (long)r->stack;
        iv->alloc = (long)r->alloc;
        t->live += iv->size;
        if (t->live > t->peak) {
          t->peak = t->live;
          t->peak_at = t->events;
        }
        t->events += 1;
        break;
      case DAO_TR_FREE:
        if (r->match != DAO_TR_NONE && r->match < i && interval_of[r->match] != DAO_TR_NONE) {
          iv = &t->allocs.v[interval_of[r->match]];
          if (iv->end < 0) {
            iv->end = t->events;
            t->live -= iv->size;
          }
        }
        t->events += 1;
        break;
      case DAO_TR_MAP:
        idx = push_interval(&t->segs);
        iv = &t->segs.v[idx];
        iv->start = t->events;
        iv->end = -1;
        iv->addr = (double)r->ptr;
        iv->size = (double)r->size;
        iv->alloc = (long)r->alloc;
        dao_tool_map_put(&live_seg, key, idx);
        break;
      case DAO_TR_UNMAP:
        if (dao_tool_map_get(&live_seg, key, &idx)) {
          dao_tool_map_remove(&live_seg, key);
          t->segs.v[idx].end = t->events;
        }
        break;
      case DAO_TR_OOM: {
        const char *msg =
            r->text != DAO_TR_NONE && r->text < tr.text_count ? tr.texts[r->text] : "";
        sb_printf(&t->ooms, "%s[%.0f,%.0f,%.0f,", t->ooms.n ? "," : "", t->events, (double)r->size,
                  (double)r->req);
        sb_json(&t->ooms, msg, strlen(msg));
        sb_add(&t->ooms, "]", 1);
        break;
      }
      default: break; /* free_done, use, trim, lost, mark, end: nothing to draw */
    }
  }
  for (i = 0; i < tr.allocator_count; ++i) {
    const dao_tr_allocator *a = &tr.allocators[i];
    sb_printf(&t->allocators, "%s{\"id\":%lu,\"capacity\":%.0f,\"place\":", i ? "," : "",
              (unsigned long)a->id, (double)a->capacity);
    sb_json(&t->allocators, a->place ? a->place : "", a->place ? strlen(a->place) : 0);
    sb_add(&t->allocators, ",\"strategy\":", 12);
    sb_json(&t->allocators, a->strategy ? a->strategy : "", a->strategy ? strlen(a->strategy) : 0);
    sb_add(&t->allocators, "}", 1);
  }
  for (i = 0; i < tr.stream_count; ++i)
    sb_printf(&t->streams, "%s\"%lu\":\"0x%llx\"", i ? "," : "", (unsigned long)tr.streams[i].id,
              (unsigned long long)tr.streams[i].handle);
  for (i = 0; i < tr.stack_count; ++i) {
    const dao_tr_stack *st = &tr.stacks[i];
    sb_printf(&t->stacks, "%s\"%lu\":[", i ? "," : "", (unsigned long)st->id);
    for (j = 0; j < st->frame_count; ++j) {
      if (j) sb_add(&t->stacks, ",", 1);
      sb_json(&t->stacks, st->frames[j], strlen(st->frames[j]));
    }
    sb_add(&t->stacks, "]", 1);
  }
  free(interval_of);
  dao_tool_map_free(&live_seg);
  dao_trace_free(&tr);
  return 0;
}

/* Column `field` of the intervals: delta-coded when `delta`; omitted (null)
   when every value is `skip_if_all`. */
static void write_column(FILE *f, const char *name, const intervals *iv, size_t offset, int delta,
                         int check_skip, double skip_if_all) {
  size_t i;
  double prev = 0;
  if (check_skip) {
    for (i = 0; i < iv->n; ++i)
      if (*(const double *)((const char *)&iv->v[i] + offset) != skip_if_all) break;
    if (i == iv->n) return;
  }
  fprintf(f, ",\"%s\":[", name);
  for (i = 0; i < iv->n; ++i) {
    double x = *(const double *)((const char *)&iv->v[i] + offset);
    fprintf(f, "%s%.0f", i ? "," : "", delta ? x - prev : x);
    prev = x;
  }
  fputc(']', f);
}

static void write_long_column(FILE *f, const char *name, const intervals *iv, size_t offset,
                              long skip_if_all) {
  size_t i;
  for (i = 0; i < iv->n; ++i)
    if (*(const long *)((const char *)&iv->v[i] + offset) != skip_if_all) break;
  if (i == iv->n) return;
  fprintf(f, ",\"%s\":[", name);
  for (i = 0; i < iv->n; ++i)
    fprintf(f, "%s%ld", i ? "," : "", *(const long *)((const char *)&iv->v[i] + offset));
  fputc(']', f);
}

static void write_trace_data(FILE *f, const char *name, trace_view *t) {
  size_t i;
  intervals *lists[2];
  lists[0] = &t->allocs;
  lists[1] = &t->segs;
  for (i = 0; i < 2; ++i) {
    size_t j;
    for (j = 0; j < lists[i]->n; ++j) {
      interval *iv = &lists[i]->v[j];
      if (iv->end < 0) iv->end = t->events;
      iv->end -= iv->start; /* the duration, written as "d" */
    }
  }
  fputs("{\"kind\":\"trace\",\"name\":", f);
  dao_tool_json_string(f, name);
  fputs(",\"source\":", f);
  dao_tool_json_string(f, t->source);
  fprintf(f, ",\"n\":%.0f,\"unmatched\":%llu,\"truncated\":%s", t->events, t->unmatched,
          t->truncated ? "true" : "false");
  fprintf(f, ",\"allocators\":[%s],\"streams\":{%s},\"stacks\":{%s},\"oom\":[%s]",
          t->allocators.p ? t->allocators.p : "", t->streams.p ? t->streams.p : "",
          t->stacks.p ? t->stacks.p : "", t->ooms.p ? t->ooms.p : "");
  fputs(",\n\"A\":{\"x\":0", f);
  write_column(f, "t0", &t->allocs, offsetof(interval, start), 1, 0, 0);
  if (t->allocs.n == 0) fputs(",\"t0\":[]", f);
  write_column(f, "d", &t->allocs, offsetof(interval, end), 0, 0, 0);
  if (t->allocs.n == 0) fputs(",\"d\":[]", f);
  write_column(f, "sz", &t->allocs, offsetof(interval, size), 0, 0, 0);
  if (t->allocs.n == 0) fputs(",\"sz\":[]", f);
  write_column(f, "ad", &t->allocs, offsetof(interval, addr), 1, 0, 0);
  if (t->allocs.n == 0) fputs(",\"ad\":[]", f);
  {
    /* requested sizes only where some differ from the sizes */
    size_t j;
    for (j = 0; j < t->allocs.n; ++j)
      if (t->allocs.v[j].req != t->allocs.v[j].size) break;
    if (j < t->allocs.n) write_column(f, "rq", &t->allocs, offsetof(interval, req), 0, 0, 0);
  }
  write_long_column(f, "s", &t->allocs, offsetof(interval, stream), 0);
  write_long_column(f, "st", &t->allocs, offsetof(interval, stack), -1);
  write_long_column(f, "a", &t->allocs, offsetof(interval, alloc), 0);
  fputs("},\n\"S\":{\"x\":0", f);
  write_column(f, "t0", &t->segs, offsetof(interval, start), 1, 0, 0);
  if (t->segs.n == 0) fputs(",\"t0\":[],\"d\":[],\"sz\":[],\"ad\":[]", f);
  write_column(f, "d", &t->segs, offsetof(interval, end), 0, 0, 0);
  write_column(f, "sz", &t->segs, offsetof(interval, size), 0, 0, 0);
  write_column(f, "ad", &t->segs, offsetof(interval, addr), 1, 0, 0);
  write_long_column(f, "a", &t->segs, offsetof(interval, alloc), 0);
  fputs("}}", f);
}

/* The snapshot's own JSON, with "</" made safe for a script element. */
static void write_snapshot_data(FILE *f, const char *name, const char *data, size_t len) {
  size_t i;
  fputs("{\"kind\":\"snapshot\",\"name\":", f);
  dao_tool_json_string(f, name);
  fputs(",\"snapshot\":", f);
  for (i = 0; i < len; ++i) {
    if (data[i] == '/' && i > 0 && data[i - 1] == '<') fputc('\\', f);
    fputc(data[i], f);
  }
  fputc('}', f);
}

static void write_html_escaped(FILE *f, const char *s) {
  for (; *s != '\0'; ++s) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

/* The template with its markers replaced. */
static void write_page(FILE *f, const char *title, void (*data)(FILE *, void *), void *ctx) {
  const char *p = dao_view_html, *end = dao_view_html + dao_view_html_size;
  while (p < end) {
    const char *at = p;
    while (at < end && *at != '@' && *at != '/') ++at;
    fwrite(p, 1, (size_t)(at - p), f);
    if (at >= end) break;
    if ((size_t)(end - at) >= 7 && memcmp(at, "@TITLE@", 7) == 0) {
      write_html_escaped(f, title);
      p = at + 7;
    } else if ((size_t)(end - at) >= 6 && memcmp(at, "@DATA@", 6) == 0) {
      data(f, ctx);
      p = at + 6;
    } else if ((size_t)(end - at) >= 9 && memcmp(at, "/*@CSS@*/", 9) == 0) {
      fwrite(dao_view_css, 1, dao_view_css_size, f);
      p = at + 9;
    } else if ((size_t)(end - at) >= 8 && memcmp(at, "/*@JS@*/", 8) == 0) {
      fwrite(dao_view_js, 1, dao_view_js_size, f);
      p = at + 8;
    } else {
      fputc(*at, f);
      p = at + 1;
    }
  }
}

typedef struct page_ctx {
  const char *name;
  trace_view *t;
  const char *data;
  size_t len;
} page_ctx;

static void trace_data_cb(FILE *f, void *ctx) {
  page_ctx *c = (page_ctx *)ctx;
  write_trace_data(f, c->name, c->t);
}

static void snapshot_data_cb(FILE *f, void *ctx) {
  page_ctx *c = (page_ctx *)ctx;
  write_snapshot_data(f, c->name, c->data, c->len);
}

void dao_usage_view(FILE *out) {
  fprintf(out,
          "Usage: %s view TRACE|SNAPSHOT.json [-o memory.html] [--json]\n"
          "\n"
          "Write one self-contained HTML page (no network: its script, style and\n"
          "data inline) that any browser opens:\n"
          "  - for a trace (DAO_TRACE, dao_trace_start(), dao convert): live memory\n"
          "    over time, stacked by allocation (the largest by bytes x time and\n"
          "    the largest at the peak as bands, the rest grey; hover for size,\n"
          "    stream and stack; red lines at out-of-memory events); the segments\n"
          "    and blocks at the peak, or at the moment you click; the largest\n"
          "    allocations live then;\n"
          "  - for a snapshot (the JSON of dao_allocator_snapshot_json()): its\n"
          "    segments and blocks and the largest allocations.\n"
          "Stays responsive for traces of a million events.\n"
          "\n"
          "Options:\n"
          "  -o, --output FILE  The page to write (default memory.html).\n"
          "  --json             Print the figures (events, allocations, peak, page\n"
          "                     size) as one JSON object.\n"
          "  -h, --help         Show this help and exit.\n"
          "\n"
          "Exit status: 0 on success, 2 for a bad command line or an unreadable,\n"
          "truncated or foreign input.\n",
          dao_tool_program);
}

int dao_command_view(int argc, char **argv) {
  const char *input = NULL, *output = "memory.html", *name;
  int json = 0, i, status = 0, is_trace;
  char *data;
  size_t len;
  char error[200];
  trace_view t;
  page_ctx ctx;
  FILE *f;
  long page_bytes;
  double start = dao_tool_now();
  dao_tool_progress progress;
  tv_arena *arena = NULL;

  for (i = 0; i < argc; ++i) {
    const char *arg = argv[i];
    if (dao_tool_is_help(arg)) {
      dao_usage_view(stdout);
      return EXIT_SUCCESS;
    } else if (strcmp(arg, "--json") == 0) {
      json = 1;
    } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
      if (i + 1 >= argc)
        return dao_tool_bad_usage("view: missing value after", arg, "dao view --help");
      output = argv[++i];
    } else if (strncmp(arg, "--output=", 9) == 0) {
      output = arg + 9;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return dao_tool_bad_usage("view: unknown option", arg, "dao view --help");
    } else if (input == NULL) {
      input = arg;
    } else {
      return dao_tool_bad_usage("view: unexpected argument", arg, "dao view --help");
    }
  }
  if (input == NULL)
    return dao_tool_bad_usage("view: missing", "TRACE|SNAPSHOT.json", "dao view --help");
  {
    /* a trace when its first line names the format: read only that much */
    char head[4096];
    size_t n;
    FILE *in = fopen(input, "rb");
    if (in == NULL) return dao_tool_bad_input(cmd, input, "cannot open: %s", strerror(errno));
    n = fread(head, 1, sizeof head - 1, in);
    fclose(in);
    head[n] = '\0';
    if (strchr(head, '\n') != NULL) *strchr(head, '\n') = '\0';
    is_trace = strstr(head, "\"dao-trace\"") != NULL;
  }
  data = NULL;
  len = 0;
  if (!is_trace && dao_tool_read_file(input, &data, &len, error, sizeof error) != 0)
    return dao_tool_bad_input(cmd, input, "%s", error);
  name = strrchr(input, '/') != NULL ? strrchr(input, '/') + 1 : input;
  memset(&t, 0, sizeof t);
  dao_tool_progress_start(&progress, "view: reading");
  if (is_trace) {
    status = read_trace(input, &t, &progress);
  } else {
    size_t k = 0;
    tv *v;
    while (k < len && (data[k] == ' ' || data[k] == '\n' || data[k] == '\t' || data[k] == '\r'))
      ++k;
    if (k >= len || data[k] != '{') {
      status = dao_tool_bad_input(
          cmd, input, len == 0 ? "empty file" : "neither a dao trace nor a dao snapshot (JSON)");
    } else {
      arena = tv_arena_create();
      v = tv_parse_json(arena, data, len, error, sizeof error);
      if (v == NULL) {
        status = dao_tool_bad_input(cmd, input, "not a readable snapshot: %s", error);
      } else if (tv_get(v, "segments") == NULL || tv_get(v, "segments")->type != TV_LIST) {
        status = dao_tool_bad_input(cmd, input,
                                    "JSON, but neither a dao trace nor a dao snapshot (no "
                                    "\"segments\" list)");
      } else {
        size_t j;
        const tv *segs = tv_get(v, "segments");
        for (j = 0; j < segs->n && status == 0; ++j) {
          double x;
          if (!tv_number(tv_get(segs->items[j], "address"), &x) ||
              !tv_number(tv_get(segs->items[j], "size"), &x))
            status = dao_tool_bad_input(cmd, input, "segments[%lu] has no address and size",
                                        (unsigned long)j);
        }
      }
    }
  }
  dao_tool_progress_end(&progress);
  tv_arena_destroy(arena);
  if (status != 0) goto out;

  f = fopen(output, "w");
  if (f == NULL) {
    status = dao_tool_bad_input(cmd, output, "cannot write the page");
    goto out;
  }
  ctx.name = name;
  ctx.t = &t;
  ctx.data = data;
  ctx.len = len;
  write_page(f, name, is_trace ? trace_data_cb : snapshot_data_cb, &ctx);
  page_bytes = ftell(f);
  if (fclose(f) != 0) {
    remove(output);
    status = dao_tool_bad_input(cmd, output, "cannot write the page");
    goto out;
  }
  if (t.truncated)
    fprintf(stderr, "%s: view: %s: the last line is incomplete (truncated?); ignored\n",
            dao_tool_program, input);
  if (t.unmatched)
    fprintf(stderr, "%s: view: %s: %llu frees of nothing live; skipped\n", dao_tool_program, input,
            t.unmatched);
  if (json) {
    printf("{\"input\": ");
    dao_tool_json_string(stdout, input);
    printf(", \"output\": ");
    dao_tool_json_string(stdout, output);
    printf(", \"kind\": \"%s\", \"events\": %.0f, \"allocations\": %lu, \"segments\": %lu, "
           "\"peak_bytes\": %.0f, \"peak_event\": %.0f, \"unmatched_frees\": %llu, "
           "\"truncated\": %s, \"page_bytes\": %ld, \"seconds\": %.3f}\n",
           is_trace ? "trace" : "snapshot", t.events, (unsigned long)t.allocs.n,
           (unsigned long)t.segs.n, t.peak, t.peak_at, t.unmatched, t.truncated ? "true" : "false",
           page_bytes, dao_tool_now() - start);
  } else {
    char peak[32], size[32];
    dao_tool_format_bytes(t.peak, peak, sizeof peak);
    dao_tool_format_bytes((double)page_bytes, size, sizeof size);
    if (is_trace)
      printf("%s: %.0f events, %lu allocations, %lu segments, peak %s at event %.0f\n", input,
             t.events, (unsigned long)t.allocs.n, (unsigned long)t.segs.n, peak, t.peak_at);
    else printf("%s: a snapshot\n", input);
    printf("wrote %s (%s): open it in a browser\n", output, size);
  }
out:
  free(t.allocs.v);
  free(t.segs.v);
  free(t.allocators.p);
  free(t.streams.p);
  free(t.stacks.p);
  free(t.ooms.p);
  free(data);
  return status;
}
