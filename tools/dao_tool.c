/* Helpers shared by the subcommands of the `dao` tool: see dao_tool.h. */
#define _POSIX_C_SOURCE 200809L
#include "dao_tool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *dao_tool_program = "dao";

int dao_tool_bad_usage(const char *what, const char *arg, const char *help) {
  fprintf(stderr, "%s: %s '%s'\nTry '%s' for more information.\n", dao_tool_program, what, arg,
          help);
  return DAO_TOOL_EXIT_USAGE;
}

int dao_tool_bad_input(const char *command, const char *file, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: %s: %s: ", dao_tool_program, command, file);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return DAO_TOOL_EXIT_USAGE;
}

int dao_tool_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

void dao_tool_json_string_n(FILE *out, const char *s, size_t n) {
  size_t i;
  putc('"', out);
  for (i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      putc('\\', out);
      putc(c, out);
    } else if (c == '\n') {
      fputs("\\n", out);
    } else if (c == '\t') {
      fputs("\\t", out);
    } else if (c == '/' && i > 0 && s[i - 1] == '<') {
      fputs("\\/", out);
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(out, "\\u%04x", c);
    } else {
      putc(c, out);
    }
  }
  putc('"', out);
}

void dao_tool_json_string(FILE *out, const char *s) {
  dao_tool_json_string_n(out, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

void dao_tool_format_bytes(double bytes, char *out, size_t out_size) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value;
  int unit = 0;
  if (bytes < 1024.0) {
    snprintf(out, out_size, "%.0f B", bytes);
    return;
  }
  value = bytes / 1024.0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(out, out_size, "%.1f %s", value, units[unit]);
}

double dao_tool_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dao_tool_progress_start(dao_tool_progress *p, const char *what) {
  p->what = what;
  p->start = dao_tool_now();
  p->last = p->start;
  p->shown = 0;
}

void dao_tool_progress_update(dao_tool_progress *p, double done, double total, const char *unit) {
  double now = dao_tool_now();
  int tty;
  if (now - p->start < 1.0 || now - p->last < 1.0) return;
  p->last = now;
  tty = isatty(fileno(stderr));
  if (total > 0) {
    fprintf(stderr, "%s: %s: %.0f %s (%.0f%%)%s", dao_tool_program, p->what, done, unit,
            100.0 * done / total, tty ? "\r" : "\n");
  } else {
    fprintf(stderr, "%s: %s: %.0f %s%s", dao_tool_program, p->what, done, unit, tty ? "\r" : "\n");
  }
  fflush(stderr);
  p->shown = 1;
}

void dao_tool_progress_end(dao_tool_progress *p) {
  if (p->shown && isatty(fileno(stderr))) fputc('\n', stderr);
  p->shown = 0;
}

void *dao_tool_xmalloc(size_t n) {
  void *p = malloc(n != 0 ? n : 1);
  if (p == NULL) {
    fprintf(stderr, "%s: out of host memory (%lu bytes)\n", dao_tool_program, (unsigned long)n);
    exit(EXIT_FAILURE);
  }
  return p;
}

void *dao_tool_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n != 0 ? n : 1);
  if (q == NULL) {
    fprintf(stderr, "%s: out of host memory (%lu bytes)\n", dao_tool_program, (unsigned long)n);
    exit(EXIT_FAILURE);
  }
  return q;
}

int dao_tool_read_file(const char *path, char **data, size_t *len, char *error, size_t error_size) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t size = 0, cap = 0, n;
  if (f == NULL) {
    snprintf(error, error_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  for (;;) {
    if (cap - size < 65536) {
      cap = cap ? cap * 2 : 1 << 20;
      buf = (char *)dao_tool_xrealloc(buf, cap + 1);
    }
    n = fread(buf + size, 1, cap - size, f);
    size += n;
    if (n == 0) break;
  }
  if (ferror(f)) {
    snprintf(error, error_size, "cannot read: %s", strerror(errno));
    fclose(f);
    free(buf);
    return -1;
  }
  fclose(f);
  buf[size] = '\0';
  *data = buf;
  *len = size;
  return 0;
}

static size_t map_slot(unsigned long long key, size_t cap) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return (size_t)(key & (cap - 1));
}

void dao_tool_map_init(dao_tool_map *m) { memset(m, 0, sizeof *m); }

void dao_tool_map_free(dao_tool_map *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  memset(m, 0, sizeof *m);
}

int dao_tool_map_get(const dao_tool_map *m, unsigned long long key, unsigned long long *val) {
  size_t i;
  if (m->cap == 0) return 0;
  for (i = map_slot(key, m->cap); m->used[i]; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) {
      if (val != NULL) *val = m->vals[i];
      return 1;
    }
  }
  return 0;
}

void dao_tool_map_put(dao_tool_map *m, unsigned long long key, unsigned long long val) {
  size_t i;
  if ((m->n + 1) * 2 > m->cap) {
    dao_tool_map old = *m;
    size_t cap = m->cap ? m->cap * 2 : 64;
    m->keys = (unsigned long long *)dao_tool_xmalloc(cap * sizeof(unsigned long long));
    m->vals = (unsigned long long *)dao_tool_xmalloc(cap * sizeof(unsigned long long));
    m->used = (unsigned char *)dao_tool_xmalloc(cap);
    memset(m->used, 0, cap);
    m->cap = cap;
    m->n = 0;
    for (i = 0; i < old.cap; ++i)
      if (old.used[i]) dao_tool_map_put(m, old.keys[i], old.vals[i]);
    dao_tool_map_free(&old);
  }
  for (i = map_slot(key, m->cap); m->used[i]; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) {
      m->vals[i] = val;
      return;
    }
  }
  m->used[i] = 1;
  m->keys[i] = key;
  m->vals[i] = val;
  ++m->n;
}

int dao_tool_map_remove(dao_tool_map *m, unsigned long long key) {
  size_t i, j, k;
  if (m->cap == 0) return 0;
  for (i = map_slot(key, m->cap); m->used[i]; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) break;
  }
  if (!m->used[i]) return 0;
  /* backward-shift deletion keeps every probe chain unbroken */
  m->used[i] = 0;
  --m->n;
  for (j = (i + 1) & (m->cap - 1); m->used[j]; j = (j + 1) & (m->cap - 1)) {
    k = map_slot(m->keys[j], m->cap);
    if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
      m->keys[i] = m->keys[j];
      m->vals[i] = m->vals[j];
      m->used[i] = 1;
      m->used[j] = 0;
      i = j;
    }
  }
  return 1;
}

unsigned long long dao_tool_hash(const void *data, size_t n) {
  const unsigned char *p = (const unsigned char *)data;
  unsigned long long h = 1469598103934665603ULL;
  size_t i;
  for (i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}
