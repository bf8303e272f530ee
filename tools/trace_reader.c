/*
 * trace_reader: the reader of docs/trace-format.md (see trace_reader.h).
 * A small JSON parser for the flat objects of the format (unknown keys of
 * any JSON type are skipped), tables for the definitions, and an
 * open-addressing map (allocator, ptr) -> alloc record for matching frees.
 */
#include "trace_reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Growing arrays and strings                                               */
/* ------------------------------------------------------------------------ */

static int grow(void **items, size_t *capacity, size_t need, size_t item_size) {
  size_t cap = *capacity;
  void *p;
  if (need <= cap) return 0;
  if (cap == 0) cap = 64;
  while (cap < need) cap *= 2;
  p = realloc(*items, cap * item_size);
  if (p == NULL) return -1;
  *items = p;
  *capacity = cap;
  return 0;
}

/* A JSON string body [s, s+n) (escapes not yet undone) as a new C string. */
static char *unescape(const char *s, size_t n) {
  char *out = (char *)malloc(n + 1);
  size_t i, o = 0;
  if (out == NULL) return NULL;
  for (i = 0; i < n; ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 >= n) {
      out[o++] = c;
      continue;
    }
    c = s[++i];
    switch (c) {
      case 'n': out[o++] = '\n'; break;
      case 't': out[o++] = '\t'; break;
      case 'r': out[o++] = '\r'; break;
      case 'b': out[o++] = '\b'; break;
      case 'f': out[o++] = '\f'; break;
      case 'u': {
        unsigned v = 0, k;
        for (k = 0; k < 4 && i + 1 < n; ++k) {
          char h = s[++i];
          v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
        }
        if (v < 0x80) {
          out[o++] = (char)v;
        } else if (v < 0x800) { /* 2-byte UTF-8 fits in the 6 bytes of \uXXXX */
          out[o++] = (char)(0xC0 | (v >> 6));
          out[o++] = (char)(0x80 | (v & 0x3F));
        } else {
          out[o++] = (char)(0xE0 | (v >> 12));
          out[o++] = (char)(0x80 | ((v >> 6) & 0x3F));
          out[o++] = (char)(0x80 | (v & 0x3F));
        }
        break;
      }
      default: out[o++] = c; break; /* \" \\ \/ */
    }
  }
  out[o] = '\0';
  return out;
}

/* ------------------------------------------------------------------------ */
/* A JSON value of a flat object                                            */
/* ------------------------------------------------------------------------ */

enum { V_NONE, V_NUM, V_STR, V_ARR, V_OTHER };

typedef struct value {
  int type;
  int negative;
  uint64_t num;
  const char *str; /* V_STR: body; V_ARR: '[' */
  size_t len;      /* V_STR: body length; V_ARR: up to and with ']' */
} value;

typedef struct cursor {
  const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) ++c->p;
}

/* A string body after its opening quote; leaves p after the closing one. */
static int scan_string(cursor *c, const char **body, size_t *len) {
  const char *s = c->p;
  while (c->p < c->end && *c->p != '"') {
    if (*c->p == '\\') ++c->p;
    ++c->p;
  }
  if (c->p >= c->end) return -1;
  *body = s;
  *len = (size_t)(c->p - s);
  ++c->p;
  return 0;
}

static int skip_value(cursor *c);

static int skip_container(cursor *c, char open, char close) {
  int depth = 0;
  (void)open;
  while (c->p < c->end) {
    char ch = *c->p;
    if (ch == '"') {
      const char *b;
      size_t n;
      ++c->p;
      if (scan_string(c, &b, &n) != 0) return -1;
      continue;
    }
    ++c->p;
    if (ch == '[' || ch == '{') ++depth;
    else if (ch == ']' || ch == '}') {
      if (--depth == 0) return ch == close ? 0 : -1;
    }
  }
  return -1;
}

static int parse_value(cursor *c, value *v) {
  skip_ws(c);
  v->type = V_NONE;
  if (c->p >= c->end) return -1;
  if (*c->p == '"') {
    ++c->p;
    if (scan_string(c, &v->str, &v->len) != 0) return -1;
    v->type = V_STR;
    if (v->len > 2 && v->str[0] == '0' && (v->str[1] == 'x' || v->str[1] == 'X')) {
      /* an address written as a string */
      size_t i;
      v->num = 0;
      for (i = 2; i < v->len; ++i) {
        char h = v->str[i];
        unsigned d = (unsigned)(h >= 'a' && h <= 'f'   ? h - 'a' + 10
                                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                : h >= '0' && h <= '9' ? h - '0'
                                                       : 99);
        if (d == 99) break;
        v->num = v->num * 16 + d;
      }
    }
    return 0;
  }
  if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
    v->negative = 0;
    v->num = 0;
    if (*c->p == '-') {
      v->negative = 1;
      ++c->p;
    }
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
      v->num = v->num * 10 + (uint64_t)(*c->p++ - '0');
    /* a fraction or exponent: kept as its integer part */
    while (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E' || *c->p == '+' ||
                             *c->p == '-' || (*c->p >= '0' && *c->p <= '9')))
      ++c->p;
    v->type = V_NUM;
    return 0;
  }
  if (*c->p == '[') {
    v->str = c->p;
    if (skip_container(c, '[', ']') != 0) return -1;
    v->len = (size_t)(c->p - v->str);
    v->type = V_ARR;
    return 0;
  }
  if (skip_value(c) != 0) return -1;
  v->type = V_OTHER;
  return 0;
}

static int skip_value(cursor *c) {
  skip_ws(c);
  if (c->p >= c->end) return -1;
  if (*c->p == '{') return skip_container(c, '{', '}');
  if (*c->p == '[') return skip_container(c, '[', ']');
  if (strncmp(c->p, "true", 4) == 0 && c->end - c->p >= 4) {
    c->p += 4;
    return 0;
  }
  if (c->end - c->p >= 5 && strncmp(c->p, "false", 5) == 0) {
    c->p += 5;
    return 0;
  }
  if (c->end - c->p >= 4 && strncmp(c->p, "null", 4) == 0) {
    c->p += 4;
    return 0;
  }
  return -1;
}

/* ------------------------------------------------------------------------ */
/* The keys of the format                                                   */
/* ------------------------------------------------------------------------ */

enum key {
  K_K,
  K_T,
  K_ID,
  K_A,
  K_PTR,
  K_ADDR,
  K_SIZE,
  K_REQ,
  K_S,
  K_ST,
  K_TID,
  K_COUNT,
  K_RELEASED,
  K_FREE,
  K_MSG,
  K_TEXT,
  K_RECORDS,
  K_LOST,
  K_PLACE,
  K_STRATEGY,
  K_CONFIG,
  K_CAPACITY,
  K_HANDLE,
  K_FRAMES,
  K_FORMAT,
  K_VERSION,
  K_LIBDAO,
  K_PID,
  K_CLOCK,
  K_START_NS,
  K_SOURCE,
  K_ENCODING,
  K_COUNT_OF_KEYS
};

static const char *const key_names[K_COUNT_OF_KEYS] = {
    "k",       "t",       "id",     "a",        "ptr",      "addr",     "size",   "req",
    "s",       "st",      "tid",    "count",    "released", "free",     "msg",    "text",
    "records", "lost",    "place",  "strategy", "config",   "capacity", "handle", "frames",
    "format",  "version", "libdao", "pid",      "clock",    "start_ns", "source", "encoding"};

static int key_of(const char *s, size_t n) {
  int i;
  for (i = 0; i < K_COUNT_OF_KEYS; ++i)
    if (strlen(key_names[i]) == n && memcmp(key_names[i], s, n) == 0) return i;
  return -1;
}

typedef struct fields {
  value v[K_COUNT_OF_KEYS];
} fields;

/* Parses one line's object into `f`. */
static int parse_object(const char *line, const char *end, fields *f, const char **why) {
  cursor c;
  int i;
  for (i = 0; i < K_COUNT_OF_KEYS; ++i) f->v[i].type = V_NONE;
  c.p = line;
  c.end = end;
  skip_ws(&c);
  if (c.p >= c.end || *c.p != '{') {
    *why = "not a JSON object";
    return -1;
  }
  ++c.p;
  skip_ws(&c);
  if (c.p < c.end && *c.p == '}') {
    ++c.p;
    goto done;
  }
  for (;;) {
    const char *k;
    size_t kn;
    int key;
    value v;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '"') {
      *why = "expected a key";
      return -1;
    }
    ++c.p;
    if (scan_string(&c, &k, &kn) != 0) {
      *why = "unterminated key";
      return -1;
    }
    skip_ws(&c);
    if (c.p >= c.end || *c.p != ':') {
      *why = "expected ':'";
      return -1;
    }
    ++c.p;
    if (parse_value(&c, &v) != 0) {
      *why = "malformed value";
      return -1;
    }
    key = key_of(k, kn);
    if (key >= 0) f->v[key] = v;
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',') {
      ++c.p;
      continue;
    }
    if (c.p < c.end && *c.p == '}') {
      ++c.p;
      break;
    }
    *why = "expected ',' or '}'";
    return -1;
  }
done:
  skip_ws(&c);
  if (c.p != c.end) {
    *why = "text after the object";
    return -1;
  }
  return 0;
}

static uint64_t num_or(const fields *f, int key, uint64_t fallback) {
  const value *v = &f->v[key];
  if (v->type == V_NUM) return v->negative ? fallback : v->num;
  if (v->type == V_STR && v->len > 2 && v->str[0] == '0') return v->num;
  return fallback;
}

static int str_is(const fields *f, int key, const char *s) {
  const value *v = &f->v[key];
  return v->type == V_STR && strlen(s) == v->len && memcmp(v->str, s, v->len) == 0;
}

static char *str_copy(const fields *f, int key) {
  const value *v = &f->v[key];
  if (v->type != V_STR) return unescape("", 0);
  return unescape(v->str, v->len);
}

/* ------------------------------------------------------------------------ */
/* Live allocations: (allocator, ptr) -> record index                       */
/* ------------------------------------------------------------------------ */

typedef struct live_map {
  uint64_t *keys; /* ptr, 0 = empty slot; tombstones: ptr of UINT64_MAX */
  uint32_t *alloc;
  uint32_t *index;
  size_t mask, used;
} live_map;

static size_t hash_of(uint64_t ptr, uint32_t a) {
  uint64_t h = (ptr ^ ((uint64_t)a << 56)) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20);
}

static int live_init(live_map *m, size_t cap) {
  m->mask = cap - 1;
  m->used = 0;
  m->keys = (uint64_t *)calloc(cap, sizeof(uint64_t));
  m->alloc = (uint32_t *)calloc(cap, sizeof(uint32_t));
  m->index = (uint32_t *)calloc(cap, sizeof(uint32_t));
  return m->keys && m->alloc && m->index ? 0 : -1;
}

static void live_free(live_map *m) {
  free(m->keys);
  free(m->alloc);
  free(m->index);
  memset(m, 0, sizeof *m);
}

static int live_put(live_map *m, uint64_t ptr, uint32_t a, uint32_t index);

static int live_rehash(live_map *m) {
  live_map bigger;
  size_t i, n = 0, cap = 1024;
  for (i = 0; i <= m->mask; ++i) n += m->keys[i] != 0 && m->keys[i] != UINT64_MAX;
  while (cap < n * 4) cap *= 2; /* tombstones are dropped: no growth without live entries */
  if (live_init(&bigger, cap) != 0) {
    live_free(&bigger);
    return -1;
  }
  for (i = 0; i <= m->mask; ++i)
    if (m->keys[i] != 0 && m->keys[i] != UINT64_MAX)
      live_put(&bigger, m->keys[i], m->alloc[i], m->index[i]);
  live_free(m);
  *m = bigger;
  return 0;
}

/* ptr 0 and UINT64_MAX are never block addresses. */
static int live_put(live_map *m, uint64_t ptr, uint32_t a, uint32_t index) {
  size_t i;
  if ((m->used + 1) * 2 > m->mask + 1 && live_rehash(m) != 0) return -1;
  for (i = hash_of(ptr, a) & m->mask;; i = (i + 1) & m->mask) {
    if (m->keys[i] == 0 || m->keys[i] == UINT64_MAX || (m->keys[i] == ptr && m->alloc[i] == a)) {
      if (m->keys[i] == 0) ++m->used;
      m->keys[i] = ptr;
      m->alloc[i] = a;
      m->index[i] = index;
      return 0;
    }
  }
}

/* The slot of (ptr, a), or (size_t)-1. */
static size_t live_find(const live_map *m, uint64_t ptr, uint32_t a) {
  size_t i;
  for (i = hash_of(ptr, a) & m->mask; m->keys[i] != 0; i = (i + 1) & m->mask)
    if (m->keys[i] == ptr && m->alloc[i] == a) return i;
  return (size_t)-1;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                  */
/* ------------------------------------------------------------------------ */

static const char *const kind_names[DAO_TR_KIND_COUNT] = {
    "alloc", "free", "free_done", "use", "map", "unmap", "oom", "trim", "lost", "mark", "end"};

const char *dao_tr_kind_name(int kind) {
  return kind >= 0 && kind < DAO_TR_KIND_COUNT ? kind_names[kind] : "?";
}

static void set_error(char *err, size_t size, const char *fmt, ...) {
  va_list ap;
  if (err == NULL || size == 0) return;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
}

/* The whole file in memory, NUL-terminated. */
static char *slurp(const char *path, size_t *size, char *err, size_t err_size) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0, n = 0;
  if (f == NULL) {
    set_error(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  for (;;) {
    size_t got;
    if (grow((void **)&buf, &cap, n + (1u << 20) + 1, 1) != 0) {
      set_error(err, err_size, "%s: out of memory reading it", path);
      free(buf);
      fclose(f);
      return NULL;
    }
    got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    set_error(err, err_size, "%s: read error: %s", path, strerror(errno));
    free(buf);
    fclose(f);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *size = n;
  return buf;
}

typedef struct caps {
  size_t records, allocators, streams, stacks, texts;
} caps;

static int kind_of(const value *v) {
  int i;
  if (v->type != V_STR) return -1;
  for (i = 0; i < DAO_TR_KIND_COUNT; ++i)
    if (strlen(kind_names[i]) == v->len && memcmp(kind_names[i], v->str, v->len) == 0) return i;
  return -1;
}

static int add_text(dao_trace *t, caps *cp, const fields *f, int key, uint32_t *out) {
  char *s;
  if (f->v[key].type != V_STR) {
    *out = DAO_TR_NONE;
    return 0;
  }
  if (grow((void **)&t->texts, &cp->texts, t->text_count + 1, sizeof(char *)) != 0) return -1;
  s = str_copy(f, key);
  if (s == NULL) return -1;
  *out = (uint32_t)t->text_count;
  t->texts[t->text_count++] = s;
  return 0;
}

static int add_stack(dao_trace *t, caps *cp, const fields *f) {
  dao_tr_stack *st;
  const value *v = &f->v[K_FRAMES];
  cursor c;
  size_t cap = 0;
  if (grow((void **)&t->stacks, &cp->stacks, t->stack_count + 1, sizeof(dao_tr_stack)) != 0)
    return -1;
  st = &t->stacks[t->stack_count++];
  st->id = (uint32_t)num_or(f, K_ID, 0);
  st->frame_count = 0;
  st->frames = NULL;
  if (v->type != V_ARR) return 0;
  c.p = v->str + 1;
  c.end = v->str + v->len - 1;
  for (;;) {
    value item;
    skip_ws(&c);
    if (c.p >= c.end) break;
    if (parse_value(&c, &item) != 0) return -2;
    if (item.type == V_STR) {
      if (grow((void **)&st->frames, &cap, st->frame_count + 1, sizeof(char *)) != 0) return -1;
      st->frames[st->frame_count] = unescape(item.str, item.len);
      if (st->frames[st->frame_count] == NULL) return -1;
      ++st->frame_count;
    }
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',') ++c.p;
  }
  return 0;
}

/* One read in progress. */
typedef struct reader {
  dao_trace *t;
  caps cp;
  live_map live;
  fields f;
  const char *path;
  char *err;
  size_t err_size;
} reader;

enum { READ_OK = 0, READ_OOM = -1, READ_FAIL = -2 };

/* Appends `r` (its kind's fields set) to the records: an alloc enters the
   live set, a free / free_done / use is matched to its alloc (or counted
   and skipped). */
static int append(reader *rd, dao_tr_record *r) {
  dao_trace *t = rd->t;
  switch (r->kind) {
    case DAO_TR_ALLOC:
      if (r->ptr == 0 || r->ptr == UINT64_MAX) {
        set_error(rd->err, rd->err_size, "%s:%u: alloc without a valid \"ptr\"", rd->path,
                  (unsigned)r->line);
        return READ_FAIL;
      }
      if (live_put(&rd->live, r->ptr, r->alloc, (uint32_t)t->count) != 0) return READ_OOM;
      break;
    case DAO_TR_FREE:
    case DAO_TR_FREE_DONE:
    case DAO_TR_USE: {
      size_t slot = live_find(&rd->live, r->ptr, r->alloc);
      if (slot == (size_t)-1 && r->kind == DAO_TR_FREE_DONE) {
        /* The free it completes came first and took the block out of the
           live set: informational, kept without a match. */
        break;
      }
      if (slot == (size_t)-1) {
        if (t->unmatched++ == 0) t->first_unmatched_line = r->line;
        return READ_OK; /* skipped */
      }
      r->match = rd->live.index[slot];
      if (r->kind == DAO_TR_FREE) rd->live.keys[slot] = UINT64_MAX; /* tombstone */
      break;
    }
    case DAO_TR_LOST: t->lost += r->size; break;
    case DAO_TR_END: t->ended = 1; break;
    default: break;
  }
  if (grow((void **)&t->records, &rd->cp.records, t->count + 1, sizeof(dao_tr_record)) != 0)
    return READ_OOM;
  t->records[t->count++] = *r;
  return READ_OK;
}

/* The header line: sets *binary when the records follow in frames. */
static int read_header(reader *rd, const char *line, const char *line_end, int *binary) {
  dao_trace *t = rd->t;
  fields *f = &rd->f;
  const char *why = NULL;
  if (parse_object(line, line_end, f, &why) != 0 || !str_is(f, K_FORMAT, "dao-trace")) {
    size_t shown = (size_t)(line_end - line) < 60 ? (size_t)(line_end - line) : 60;
    set_error(rd->err, rd->err_size,
              "%s:1: not a dao trace (the first line must be a header with "
              "\"format\":\"dao-trace\"; found '%.*s%s')",
              rd->path, (int)shown, line, shown < (size_t)(line_end - line) ? "..." : "");
    return READ_FAIL;
  }
  t->version = (int)num_or(f, K_VERSION, 0);
  if (t->version < 1 || t->version > 1) {
    set_error(rd->err, rd->err_size,
              "%s:1: trace format version %d; this reader knows version 1 (a newer libdao "
              "wrote it?)",
              rd->path, t->version);
    return READ_FAIL;
  }
  *binary = 0;
  if (f->v[K_ENCODING].type != V_NONE) {
    if (str_is(f, K_ENCODING, "binary")) {
      *binary = 1;
    } else if (!str_is(f, K_ENCODING, "jsonl")) {
      set_error(rd->err, rd->err_size,
                "%s:1: unknown \"encoding\" (this reader knows \"jsonl\" and \"binary\")",
                rd->path);
      return READ_FAIL;
    }
  }
  t->libdao = str_copy(f, K_LIBDAO);
  t->pid = (int64_t)num_or(f, K_PID, 0);
  t->clock = str_copy(f, K_CLOCK);
  t->start_ns = num_or(f, K_START_NS, 0);
  t->source = str_copy(f, K_SOURCE);
  if (t->libdao == NULL || t->clock == NULL || t->source == NULL) return READ_OOM;
  return READ_OK;
}

/* One line after the header (a definition or a record). */
static int read_line(reader *rd, const char *line, const char *line_end, size_t line_no) {
  dao_trace *t = rd->t;
  fields *f = &rd->f;
  const char *why = NULL;
  dao_tr_record r;
  int kind;
  if (line == line_end) return READ_OK; /* a blank line */
  if (parse_object(line, line_end, f, &why) != 0) {
    set_error(rd->err, rd->err_size, "%s:%zu: %s", rd->path, line_no, why);
    return READ_FAIL;
  }
  if (f->v[K_K].type != V_STR || f->v[K_T].type != V_NUM) {
    set_error(rd->err, rd->err_size, "%s:%zu: a record needs \"k\" (a string) and \"t\" (a number)",
              rd->path, line_no);
    return READ_FAIL;
  }
  if (str_is(f, K_K, "allocator")) {
    dao_tr_allocator *a;
    if (grow((void **)&t->allocators, &rd->cp.allocators, t->allocator_count + 1,
             sizeof(dao_tr_allocator)) != 0)
      return READ_OOM;
    a = &t->allocators[t->allocator_count++];
    a->id = (uint32_t)num_or(f, K_ID, 0);
    a->place = str_copy(f, K_PLACE);
    a->strategy = str_copy(f, K_STRATEGY);
    a->config = str_copy(f, K_CONFIG);
    a->capacity = num_or(f, K_CAPACITY, 0);
    a->line = (uint32_t)line_no;
    return a->place == NULL || a->strategy == NULL || a->config == NULL ? READ_OOM : READ_OK;
  }
  if (str_is(f, K_K, "stream")) {
    dao_tr_stream *st;
    if (grow((void **)&t->streams, &rd->cp.streams, t->stream_count + 1, sizeof(dao_tr_stream)) !=
        0)
      return READ_OOM;
    st = &t->streams[t->stream_count++];
    st->id = (uint32_t)num_or(f, K_ID, 0);
    st->place = str_copy(f, K_PLACE);
    st->handle = num_or(f, K_HANDLE, 0);
    return st->place == NULL ? READ_OOM : READ_OK;
  }
  if (str_is(f, K_K, "stack")) {
    int st = add_stack(t, &rd->cp, f);
    if (st == -1) return READ_OOM;
    if (st == -2) {
      set_error(rd->err, rd->err_size, "%s:%zu: malformed frames", rd->path, line_no);
      return READ_FAIL;
    }
    return READ_OK;
  }
  kind = kind_of(&f->v[K_K]);
  if (kind < 0) {
    if (t->unknown_kinds++ == 0) t->first_unknown_line = line_no;
    return READ_OK;
  }
  memset(&r, 0, sizeof r);
  r.t = f->v[K_T].num;
  r.line = (uint32_t)line_no;
  r.kind = (uint8_t)kind;
  r.alloc = (uint32_t)num_or(f, K_A, 0);
  r.stream = (uint32_t)num_or(f, K_S, 0);
  r.stack = f->v[K_ST].type == V_NUM ? (uint32_t)f->v[K_ST].num : DAO_TR_NONE;
  r.tid = (uint32_t)num_or(f, K_TID, 0);
  r.match = DAO_TR_NONE;
  r.text = DAO_TR_NONE;
  switch (kind) {
    case DAO_TR_ALLOC:
      r.ptr = num_or(f, K_PTR, 0);
      r.size = num_or(f, K_SIZE, 0);
      r.req = num_or(f, K_REQ, r.size);
      break;
    case DAO_TR_FREE:
    case DAO_TR_FREE_DONE:
    case DAO_TR_USE: r.ptr = num_or(f, K_PTR, 0); break;
    case DAO_TR_MAP:
    case DAO_TR_UNMAP:
      r.ptr = num_or(f, K_ADDR, 0);
      r.size = num_or(f, K_SIZE, 0);
      break;
    case DAO_TR_OOM:
      r.size = num_or(f, K_SIZE, 0);
      r.req = num_or(f, K_FREE, 0);
      if (add_text(t, &rd->cp, f, K_MSG, &r.text) != 0) return READ_OOM;
      break;
    case DAO_TR_TRIM: r.size = num_or(f, K_RELEASED, 0); break;
    case DAO_TR_LOST: r.size = num_or(f, K_COUNT, 0); break;
    case DAO_TR_MARK:
      if (add_text(t, &rd->cp, f, K_TEXT, &r.text) != 0) return READ_OOM;
      break;
    case DAO_TR_END:
      r.size = num_or(f, K_RECORDS, 0);
      r.req = num_or(f, K_LOST, 0);
      break;
    default: break;
  }
  return append(rd, &r);
}

static uint64_t get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  int i;
  for (i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/* Kinds a binary record may have (docs/trace-format.md). */
static int binary_kind_known(unsigned k) {
  return k == DAO_TR_ALLOC || k == DAO_TR_FREE || k == DAO_TR_FREE_DONE || k == DAO_TR_USE ||
         k == DAO_TR_MAP || k == DAO_TR_UNMAP || k == DAO_TR_TRIM;
}

/* One 48-byte binary record (see the writer, src/trace/writer.cpp). */
static int read_binary_record(reader *rd, const unsigned char *b, size_t index) {
  dao_tr_record r;
  const uint64_t word = get_le(b + 44, 4);
  const unsigned kind = (unsigned)(word & 0xFF);
  const uint32_t stack = (uint32_t)get_le(b + 40, 4);
  if (!binary_kind_known(kind)) {
    if (rd->t->unknown_kinds++ == 0) rd->t->first_unknown_line = index;
    return READ_OK;
  }
  memset(&r, 0, sizeof r);
  r.t = get_le(b, 8);
  r.ptr = get_le(b + 8, 8);
  r.size = get_le(b + 16, 8);
  r.req = get_le(b + 24, 8);
  r.alloc = (uint32_t)get_le(b + 32, 4);
  r.stream = (uint32_t)get_le(b + 36, 4);
  r.stack = stack != 0 ? stack - 1 : DAO_TR_NONE;
  r.tid = (uint32_t)(word >> 8);
  r.line = (uint32_t)index;
  r.kind = (uint8_t)kind;
  r.match = DAO_TR_NONE;
  r.text = DAO_TR_NONE;
  return append(rd, &r);
}

#define FRAME_HEADER 8
#define BINARY_RECORD 48

/* The frames after a binary header. `*index` counts lines and records (the
   `line` of each record). */
static int read_frames(reader *rd, const char *buf, size_t size, const char *p, size_t *index,
                       void (*progress)(size_t done, size_t total, void *user), void *user) {
  const char *end = buf + size;
  while (p < end) {
    const unsigned char *h = (const unsigned char *)p;
    uint64_t len;
    const char *payload;
    if ((size_t)(end - p) < FRAME_HEADER) {
      rd->t->incomplete_last_line = 1; /* a cut-short last frame: ignored */
      return READ_OK;
    }
    len = get_le(h + 4, 4);
    payload = p + FRAME_HEADER;
    if ((h[0] != 'J' && h[0] != 'R') || h[1] != 0 || h[2] != 0 || h[3] != 0) {
      set_error(rd->err, rd->err_size,
                "%s: byte %zu: not a frame of the binary encoding (tag 0x%02x)", rd->path,
                (size_t)(p - buf), (unsigned)h[0]);
      return READ_FAIL;
    }
    if ((uint64_t)(end - payload) < len) {
      rd->t->incomplete_last_line = 1;
      return READ_OK;
    }
    if (h[0] == 'R') {
      size_t i;
      if (len % BINARY_RECORD != 0) {
        set_error(rd->err, rd->err_size,
                  "%s: byte %zu: a record frame of %llu bytes (not a multiple of %d)", rd->path,
                  (size_t)(p - buf), (unsigned long long)len, BINARY_RECORD);
        return READ_FAIL;
      }
      for (i = 0; i < len / BINARY_RECORD; ++i) {
        int rc;
        if (++*index > UINT32_MAX - 1) {
          set_error(rd->err, rd->err_size, "%s: more than 2^32 records", rd->path);
          return READ_FAIL;
        }
        rc = read_binary_record(rd, (const unsigned char *)payload + i * BINARY_RECORD, *index);
        if (rc != READ_OK) return rc;
      }
    } else {
      const char *q = payload, *fend = payload + len;
      while (q < fend) {
        const char *nl = (const char *)memchr(q, '\n', (size_t)(fend - q));
        int rc;
        if (nl == NULL) {
          set_error(rd->err, rd->err_size, "%s: byte %zu: a line frame ends inside a line",
                    rd->path, (size_t)(q - buf));
          return READ_FAIL;
        }
        if (++*index > UINT32_MAX - 1) {
          set_error(rd->err, rd->err_size, "%s: more than 2^32 lines", rd->path);
          return READ_FAIL;
        }
        rc = read_line(rd, q, nl, *index);
        if (rc != READ_OK) return rc;
        q = nl + 1;
      }
    }
    p = payload + len;
    if (progress != NULL) progress((size_t)(p - buf), size, user);
  }
  return READ_OK;
}

int dao_trace_read(const char *path, dao_trace *t, char *err, size_t err_size,
                   void (*progress)(size_t done, size_t total, void *user), void *user) {
  size_t size = 0, line_no = 0;
  char *buf;
  const char *p, *end;
  reader rd;
  int rc = READ_OK, binary = 0;

  memset(t, 0, sizeof *t);
  memset(&rd, 0, sizeof rd);
  rd.t = t;
  rd.path = path;
  rd.err = err;
  rd.err_size = err_size;
  if (path == NULL) {
    set_error(err, err_size, "no trace file given");
    return -1;
  }
  buf = slurp(path, &size, err, err_size);
  if (buf == NULL) return -1;
  if (live_init(&rd.live, 1024) != 0) rc = READ_OOM;
  p = buf;
  end = buf + size;
  while (rc == READ_OK && p < end) {
    const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
    const char *line = p;
    if (nl == NULL) {
      /* a cut-short last line: ignored and reported */
      t->incomplete_last_line = 1;
      break;
    }
    p = nl + 1;
    ++line_no;
    if (progress != NULL && (line_no & 0x3FFFF) == 0) progress((size_t)(p - buf), size, user);
    if (line_no > UINT32_MAX - 1) {
      set_error(err, err_size, "%s: more than 2^32 lines", path);
      rc = READ_FAIL;
    } else if (line_no == 1) {
      rc = read_header(&rd, line, nl, &binary);
      if (rc == READ_OK && binary) {
        rc = read_frames(&rd, buf, size, p, &line_no, progress, user);
        break;
      }
    } else {
      rc = read_line(&rd, line, nl, line_no);
    }
  }
  if (rc == READ_OK && line_no == 0) {
    set_error(err, err_size, "%s: empty file (no header line): not a dao trace", path);
    rc = READ_FAIL;
  }
  if (rc == READ_OOM) set_error(err, err_size, "%s: out of memory reading it", path);
  if (rc == READ_OK) {
    t->lines = line_no;
    if (progress != NULL) progress(size, size, user);
  } else {
    dao_trace_free(t);
  }
  live_free(&rd.live);
  free(buf);
  return rc == READ_OK ? 0 : -1;
}

void dao_trace_free(dao_trace *t) {
  size_t i, j;
  if (t == NULL) return;
  free(t->libdao);
  free(t->clock);
  free(t->source);
  free(t->records);
  for (i = 0; i < t->allocator_count; ++i) {
    free(t->allocators[i].place);
    free(t->allocators[i].strategy);
    free(t->allocators[i].config);
  }
  free(t->allocators);
  for (i = 0; i < t->stream_count; ++i) free(t->streams[i].place);
  free(t->streams);
  for (i = 0; i < t->stack_count; ++i) {
    for (j = 0; j < t->stacks[i].frame_count; ++j) free(t->stacks[i].frames[j]);
    free(t->stacks[i].frames);
  }
  free(t->stacks);
  for (i = 0; i < t->text_count; ++i) free(t->texts[i]);
  free(t->texts);
  memset(t, 0, sizeof *t);
}

const dao_tr_allocator *dao_trace_allocator(const dao_trace *t, uint32_t id) {
  size_t i;
  for (i = 0; i < t->allocator_count; ++i)
    if (t->allocators[i].id == id) return &t->allocators[i];
  return NULL;
}

const dao_tr_stream *dao_trace_stream(const dao_trace *t, uint32_t id) {
  size_t i;
  for (i = 0; i < t->stream_count; ++i)
    if (t->streams[i].id == id) return &t->streams[i];
  return NULL;
}

const dao_tr_stack *dao_trace_stack(const dao_trace *t, uint32_t id) {
  size_t i;
  for (i = 0; i < t->stack_count; ++i)
    if (t->stacks[i].id == id) return &t->stacks[i];
  return NULL;
}
