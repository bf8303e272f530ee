/* Values and the JSON parser of the `dao` tool: see tool_value.h. */
#include "tool_value.h"

#include "dao_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tv_block {
  struct tv_block *next;
  size_t size, used;
  /* data follows, aligned for any object */
} tv_block;

struct tv_arena {
  tv_block *head;
};

#define TV_ALIGN 16
#define TV_HEADER ((sizeof(tv_block) + TV_ALIGN - 1) / TV_ALIGN * TV_ALIGN)

tv_arena *tv_arena_create(void) {
  tv_arena *a = (tv_arena *)dao_tool_xmalloc(sizeof *a);
  a->head = NULL;
  return a;
}

void tv_arena_destroy(tv_arena *a) {
  tv_block *b, *next;
  if (a == NULL) return;
  for (b = a->head; b != NULL; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

void tv_arena_reset(tv_arena *a) {
  tv_block *b, *next;
  if (a->head == NULL) return;
  for (b = a->head->next; b != NULL; b = next) {
    next = b->next;
    free(b);
  }
  a->head->next = NULL;
  a->head->used = 0;
}

void *tv_arena_alloc(tv_arena *a, size_t n) {
  tv_block *b = a->head;
  n = (n + TV_ALIGN - 1) / TV_ALIGN * TV_ALIGN;
  if (b == NULL || b->size - b->used < n) {
    size_t size = n > 65536 ? n : 65536;
    b = (tv_block *)dao_tool_xmalloc(TV_HEADER + size);
    b->size = size;
    b->used = 0;
    if (a->head != NULL && a->head->used == 0) {
      /* keep the reset block first so that a reset keeps the big one */
      b->next = a->head->next;
      a->head->next = b;
    } else {
      b->next = a->head;
      a->head = b;
    }
  }
  b->used += n;
  return (char *)b + TV_HEADER + b->used - n;
}

tv *tv_new(tv_arena *a, tv_type type) {
  tv *v = (tv *)tv_arena_alloc(a, sizeof *v);
  memset(v, 0, sizeof *v);
  v->type = type;
  return v;
}

tv *tv_new_string(tv_arena *a, const char *s, size_t len) {
  tv *v = tv_new(a, TV_STRING);
  char *copy = (char *)tv_arena_alloc(a, len + 1);
  if (len > 0) memcpy(copy, s, len);
  copy[len] = '\0';
  v->s = copy;
  v->len = len;
  return v;
}

static void grow(tv_arena *a, tv *c) {
  size_t cap = c->cap ? c->cap * 2 : 4;
  tv **items = (tv **)tv_arena_alloc(a, cap * sizeof(tv *));
  if (c->n > 0) memcpy(items, c->items, c->n * sizeof(tv *));
  c->items = items;
  if (c->type == TV_DICT) {
    tv **keys = (tv **)tv_arena_alloc(a, cap * sizeof(tv *));
    if (c->n > 0) memcpy(keys, c->keys, c->n * sizeof(tv *));
    c->keys = keys;
  }
  c->cap = cap;
}

void tv_append(tv_arena *a, tv *list, tv *item) {
  if (list->n == list->cap) grow(a, list);
  list->items[list->n++] = item;
}

void tv_set(tv_arena *a, tv *dict, tv *key, tv *value) {
  size_t i;
  if (key->type == TV_STRING) {
    for (i = 0; i < dict->n; ++i) {
      const tv *k = dict->keys[i];
      if (k->type == TV_STRING && k->len == key->len && memcmp(k->s, key->s, k->len) == 0) {
        dict->items[i] = value;
        return;
      }
    }
  }
  if (dict->n == dict->cap) grow(a, dict);
  dict->keys[dict->n] = key;
  dict->items[dict->n++] = value;
}

const tv *tv_get(const tv *dict, const char *key) {
  size_t i, len = strlen(key);
  if (dict == NULL || dict->type != TV_DICT) return NULL;
  for (i = 0; i < dict->n; ++i) {
    const tv *k = dict->keys[i];
    if (k->type == TV_STRING && k->len == len && memcmp(k->s, key, len) == 0) return dict->items[i];
  }
  return NULL;
}

int tv_int(const tv *v, long long *out) {
  if (v == NULL) return 0;
  if (v->type == TV_INT) {
    *out = v->i;
    return 1;
  }
  if (v->type == TV_BOOL) {
    *out = v->b;
    return 1;
  }
  if (v->type == TV_FLOAT && v->f >= -9.2e18 && v->f <= 9.2e18 && v->f == (double)(long long)v->f) {
    *out = (long long)v->f;
    return 1;
  }
  return 0;
}

int tv_number(const tv *v, double *out) {
  if (v == NULL) return 0;
  if (v->type == TV_INT || v->type == TV_FLOAT) {
    *out = v->f;
    return 1;
  }
  if (v->type == TV_STRING && v->len > 2 && v->len <= 18 && v->s[0] == '0' &&
      (v->s[1] == 'x' || v->s[1] == 'X')) {
    char *end;
    unsigned long long x = strtoull(v->s + 2, &end, 16);
    if (*end != '\0') return 0;
    *out = (double)x;
    return 1;
  }
  return 0;
}

const char *tv_str(const tv *v) { return v != NULL && v->type == TV_STRING ? v->s : NULL; }

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct json_parser {
  tv_arena *a;
  const char *p, *end, *begin;
  char *error;
  size_t error_size;
  int failed;
} json_parser;

static tv *json_fail(json_parser *j, const char *what) {
  if (!j->failed) {
    snprintf(j->error, j->error_size, "%s at byte %lu", what, (unsigned long)(j->p - j->begin));
    j->failed = 1;
  }
  return NULL;
}

static void skip_ws(json_parser *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) ++j->p;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  int k;
  for (k = 0; k < 4; ++k) {
    char c = p[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  *out = v;
  return 1;
}

static tv *json_string(json_parser *j) {
  const char *start = ++j->p; /* after the quote */
  const char *q = start;
  char *buf, *w;
  tv *v;
  int escaped = 0;
  while (q < j->end && *q != '"') {
    if ((unsigned char)*q < 0x20) {
      j->p = q;
      return json_fail(j, "control character in a string");
    }
    if (*q == '\\') {
      escaped = 1;
      ++q;
      if (q >= j->end) break;
    }
    ++q;
  }
  if (q >= j->end) {
    j->p = q;
    return json_fail(j, "unterminated string");
  }
  if (!escaped) {
    v = tv_new_string(j->a, start, (size_t)(q - start));
    j->p = q + 1;
    return v;
  }
  buf = (char *)tv_arena_alloc(j->a, (size_t)(q - start) + 1);
  w = buf;
  for (j->p = start; j->p < q; ++j->p) {
    char c = *j->p;
    if (c != '\\') {
      *w++ = c;
      continue;
    }
    c = *++j->p;
    switch (c) {
      case '"': *w++ = '"'; break;
      case '\\': *w++ = '\\'; break;
      case '/': *w++ = '/'; break;
      case 'b': *w++ = '\b'; break;
      case 'f': *w++ = '\f'; break;
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'u': {
        unsigned cp, lo;
        if (q - j->p < 5 || !hex4(j->p + 1, &cp)) return json_fail(j, "bad \\u escape");
        j->p += 4;
        if (cp >= 0xd800 && cp < 0xdc00 && q - j->p >= 7 && j->p[1] == '\\' && j->p[2] == 'u' &&
            hex4(j->p + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          j->p += 6;
        }
        /* at most 4 bytes out for 6 or 12 in */
        if (cp < 0x80) {
          *w++ = (char)cp;
        } else if (cp < 0x800) {
          *w++ = (char)(0xc0 | (cp >> 6));
          *w++ = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
          *w++ = (char)(0xe0 | (cp >> 12));
          *w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
          *w++ = (char)(0x80 | (cp & 0x3f));
        } else {
          *w++ = (char)(0xf0 | (cp >> 18));
          *w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
          *w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
          *w++ = (char)(0x80 | (cp & 0x3f));
        }
        break;
      }
      default: return json_fail(j, "bad escape in a string");
    }
  }
  *w = '\0';
  v = tv_new(j->a, TV_STRING);
  v->s = buf;
  v->len = (size_t)(w - buf);
  j->p = q + 1;
  return v;
}

static tv *json_number(json_parser *j) {
  const char *start = j->p;
  char tmp[64];
  size_t n;
  int integral = 1;
  tv *v;
  char *endp;
  if (j->p < j->end && *j->p == '-') ++j->p;
  if (j->p >= j->end || *j->p < '0' || *j->p > '9') return json_fail(j, "bad number");
  while (j->p < j->end && ((*j->p >= '0' && *j->p <= '9') || *j->p == '.' || *j->p == 'e' ||
                           *j->p == 'E' || *j->p == '+' || *j->p == '-')) {
    if (*j->p == '.' || *j->p == 'e' || *j->p == 'E') integral = 0;
    ++j->p;
  }
  n = (size_t)(j->p - start);
  if (n >= sizeof tmp) return json_fail(j, "number too long");
  memcpy(tmp, start, n);
  tmp[n] = '\0';
  v = tv_new(j->a, TV_FLOAT);
  v->f = strtod(tmp, &endp);
  if (*endp != '\0') return json_fail(j, "bad number");
  if (integral && n < 19) {
    v->type = TV_INT;
    v->i = strtoll(tmp, NULL, 10);
  }
  return v;
}

static tv *json_value(json_parser *j, int depth) {
  tv *v;
  if (depth > 64) return json_fail(j, "nesting deeper than 64");
  skip_ws(j);
  if (j->p >= j->end) return json_fail(j, "unexpected end of input");
  switch (*j->p) {
    case '{':
      v = tv_new(j->a, TV_DICT);
      ++j->p;
      skip_ws(j);
      if (j->p < j->end && *j->p == '}') {
        ++j->p;
        return v;
      }
      for (;;) {
        tv *key, *item;
        skip_ws(j);
        if (j->p >= j->end || *j->p != '"') return json_fail(j, "expected a string key");
        key = json_string(j);
        if (key == NULL) return NULL;
        skip_ws(j);
        if (j->p >= j->end || *j->p != ':') return json_fail(j, "expected ':'");
        ++j->p;
        item = json_value(j, depth + 1);
        if (item == NULL) return NULL;
        tv_set(j->a, v, key, item);
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
          ++j->p;
          continue;
        }
        if (j->p < j->end && *j->p == '}') {
          ++j->p;
          return v;
        }
        return json_fail(j, "expected ',' or '}'");
      }
    case '[':
      v = tv_new(j->a, TV_LIST);
      ++j->p;
      skip_ws(j);
      if (j->p < j->end && *j->p == ']') {
        ++j->p;
        return v;
      }
      for (;;) {
        tv *item = json_value(j, depth + 1);
        if (item == NULL) return NULL;
        tv_append(j->a, v, item);
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
          ++j->p;
          continue;
        }
        if (j->p < j->end && *j->p == ']') {
          ++j->p;
          return v;
        }
        return json_fail(j, "expected ',' or ']'");
      }
    case '"': return json_string(j);
    case 't':
      if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) {
        j->p += 4;
        v = tv_new(j->a, TV_BOOL);
        v->b = 1;
        v->i = 1;
        v->f = 1;
        return v;
      }
      return json_fail(j, "unexpected character");
    case 'f':
      if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) {
        j->p += 5;
        return tv_new(j->a, TV_BOOL);
      }
      return json_fail(j, "unexpected character");
    case 'n':
      if (j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0) {
        j->p += 4;
        return tv_new(j->a, TV_NULL);
      }
      return json_fail(j, "unexpected character");
    default:
      if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) return json_number(j);
      return json_fail(j, "unexpected character");
  }
}

tv *tv_parse_json(tv_arena *a, const char *text, size_t len, char *error, size_t error_size) {
  json_parser j;
  tv *v;
  j.a = a;
  j.p = j.begin = text;
  j.end = text + len;
  j.error = error;
  j.error_size = error_size;
  j.failed = 0;
  v = json_value(&j, 0);
  if (v == NULL) return NULL;
  skip_ws(&j);
  if (j.p != j.end) return json_fail(&j, "unexpected text after the value");
  return v;
}
