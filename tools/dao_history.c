/*
 * dao_history.c: helpers of `dao replay` and `dao plan` (see dao_history.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "dao_history.h"

#include "dao_tool.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int dao_history_parse_size(const char *text, uint64_t *out) {
  static const struct {
    const char *suffix;
    int shift;
  } units[] = {{"", 0},     {"B", 0},   {"K", 10},   {"KB", 10}, {"KiB", 10},
               {"M", 20},   {"MB", 20}, {"MiB", 20}, {"G", 30},  {"GB", 30},
               {"GiB", 30}, {"T", 40},  {"TB", 40},  {"TiB", 40}};
  char *end = NULL;
  double v;
  size_t i;
  if (text == NULL || !(isdigit((unsigned char)text[0]) || text[0] == '.')) return -1;
  v = strtod(text, &end);
  while (*end == ' ') ++end;
  for (i = 0; i < sizeof units / sizeof units[0]; ++i) {
    if (strcmp(end, units[i].suffix) == 0) {
      double bytes = v * (double)((uint64_t)1 << units[i].shift);
      if (!(bytes >= 0) || bytes > 1.8e19) return -1;
      *out = (uint64_t)(bytes + 0.5);
      return 0;
    }
  }
  return -1;
}

static double progress_last = 0;
static int progress_shown = 0;

static int progress_wanted(void) {
  static int wanted = -1;
  if (wanted < 0) {
    const char *env = getenv("DAO_PROGRESS");
    wanted = env != NULL ? strcmp(env, "1") == 0 : isatty(STDERR_FILENO);
  }
  return wanted;
}

void dao_history_progress(const char *fmt, ...) {
  va_list ap;
  double now;
  if (!progress_wanted()) return;
  now = dao_tool_now();
  if (progress_shown && now - progress_last < 0.5) return;
  progress_last = now;
  progress_shown = 1;
  fputs("\rdao: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\033[K", stderr);
  fflush(stderr);
}

void dao_history_progress_done(void) {
  if (progress_shown) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  progress_shown = 0;
}

static void load_progress(size_t done, size_t total, void *user) {
  (void)user;
  dao_history_progress("reading the trace: %.0f%%",
                       total != 0 ? 100.0 * (double)done / (double)total : 100.0);
}

int dao_history_load_trace(const char *path, dao_trace *t, int quiet) {
  char err[1024];
  if (dao_trace_read(path, t, err, sizeof err, load_progress, NULL) != 0) {
    dao_history_progress_done();
    fprintf(stderr, "dao: %s\n", err);
    return DAO_TOOL_EXIT_USAGE;
  }
  dao_history_progress_done();
  if (quiet) return 0;
  if (t->incomplete_last_line)
    fprintf(stderr, "dao: %s: the last line is incomplete (a killed recorder?): ignored\n", path);
  if (t->unknown_kinds != 0)
    fprintf(stderr, "dao: %s: %zu record(s) of unknown kinds skipped (first on line %zu)\n", path,
            t->unknown_kinds, t->first_unknown_line);
  if (t->unmatched != 0)
    fprintf(stderr,
            "dao: %s: %zu free/use record(s) of pointers not live skipped (first on line %zu)\n",
            path, t->unmatched, t->first_unmatched_line);
  if (t->lost != 0)
    fprintf(stderr, "dao: %s: the recorder lost %llu record(s) (ring full)\n", path,
            (unsigned long long)t->lost);
  return 0;
}

void dao_history_max_load(const dao_trace *t, uint32_t allocator, uint64_t *by_req,
                          uint64_t *by_size) {
  uint64_t live_req = 0, live_size = 0, max_req = 0, max_size = 0;
  size_t i;
  for (i = 0; i < t->count; ++i) {
    const dao_tr_record *r = &t->records[i];
    if (allocator != 0 && r->alloc != allocator) continue;
    if (r->kind == DAO_TR_ALLOC) {
      live_req += r->req;
      live_size += r->size;
      if (live_req > max_req) max_req = live_req;
      if (live_size > max_size) max_size = live_size;
    } else if (r->kind == DAO_TR_FREE) {
      const dao_tr_record *a = &t->records[r->match];
      live_req -= a->req;
      live_size -= a->size;
    }
  }
  if (by_req != NULL) *by_req = max_req;
  if (by_size != NULL) *by_size = max_size;
}

int dao_history_parse_place(const char *text, dao_place *place, int *sim) {
  char *end = NULL;
  long n = 0;
  *sim = 0;
  if (strcmp(text, "cpu") == 0) {
    *place = dao_place_cpu();
    return 0;
  }
  if (strcmp(text, "pinned") == 0) {
    *place = dao_place_cuda_pinned();
    return 0;
  }
  if (strncmp(text, "sim", 3) == 0 || strncmp(text, "cuda", 4) == 0 ||
      strncmp(text, "managed", 7) == 0) {
    const char *colon = strchr(text, ':');
    size_t name = colon != NULL ? (size_t)(colon - text) : strlen(text);
    if (colon != NULL) {
      n = strtol(colon + 1, &end, 10);
      if (end == colon + 1 || *end != '\0' || n < 0 || n > 1023) return -1;
    }
    if (name == 3 && strncmp(text, "sim", 3) == 0) {
      *place = dao_place_sim((int)n);
      *sim = 1;
      return 0;
    }
    if (name == 4 && strncmp(text, "cuda", 4) == 0) {
      *place = dao_place_cuda((int)n);
      return 0;
    }
    if (name == 7 && strncmp(text, "managed", 7) == 0) {
      *place = dao_place_cuda_managed((int)n);
      return 0;
    }
  }
  return -1;
}
