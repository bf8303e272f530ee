/* The JSON snapshot checked against the C snapshot API: a recursive-descent
 * JSON validator (RFC 8259) and json_matches_snapshot(), shared by
 * test_caching_snapshot and test_caching_streams (pending blocks in the
 * JSON). Header-only (static inline); include after caching_test_util.h. */
#ifndef CACHING_TEST_JSON_H
#define CACHING_TEST_JSON_H

#include "caching_test_util.h"

/* A recursive-descent JSON validator (RFC 8259) that also gathers what the
   test compares with the C snapshot. */
enum json_context {
  JSON_ANY,
  JSON_ROOT,
  JSON_STATS,
  JSON_STAT,
  JSON_SEGMENTS,
  JSON_SEGMENT,
  JSON_BLOCKS,
  JSON_BLOCK
};

typedef struct json_doc {
  const char *s;
  size_t pos, len;
  int depth;
  /* gathered */
  char strategy[32];
  int has_stats, has_segments;
  size_t stats_members;
  size_t segments;
  uint64_t segment_address[64];
  size_t segment_blocks[64];
  size_t blocks, allocated_blocks, pending_blocks;
  int64_t allocated_bytes_all_current;
  int saw_allocated_bytes_all;
  int in_allocated_all;
} json_doc;

static inline int json_value(json_doc *d, enum json_context ctx, const char *key, char *str_out,
                             size_t str_cap, uint64_t *num_out);

static inline void json_ws(json_doc *d) {
  while (d->pos < d->len && (d->s[d->pos] == ' ' || d->s[d->pos] == '\t' || d->s[d->pos] == '\n' ||
                             d->s[d->pos] == '\r'))
    ++d->pos;
}

static inline int json_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string; its decoded ASCII text (escapes other than \uXXXX kept as the
   character) into `out` when given. */
static inline int json_string(json_doc *d, char *out, size_t cap) {
  size_t n = 0;
  if (d->pos >= d->len || d->s[d->pos] != '"') return 0;
  ++d->pos;
  while (d->pos < d->len) {
    unsigned char c = (unsigned char)d->s[d->pos++];
    char decoded;
    if (c == '"') {
      if (out && cap) out[n < cap ? n : cap - 1] = '\0';
      return 1;
    }
    if (c < 0x20) return 0;
    if (c == '\\') {
      if (d->pos >= d->len) return 0;
      c = (unsigned char)d->s[d->pos++];
      switch (c) {
        case '"': decoded = '"'; break;
        case '\\': decoded = '\\'; break;
        case '/': decoded = '/'; break;
        case 'b': decoded = '\b'; break;
        case 'f': decoded = '\f'; break;
        case 'n': decoded = '\n'; break;
        case 'r': decoded = '\r'; break;
        case 't': decoded = '\t'; break;
        case 'u': {
          int k;
          for (k = 0; k < 4; ++k)
            if (d->pos >= d->len || !json_hex(d->s[d->pos++])) return 0;
          decoded = '?';
          break;
        }
        default: return 0;
      }
    } else {
      decoded = (char)c;
    }
    if (out && n + 1 < cap) out[n++] = decoded;
  }
  return 0;
}

/* A number; a plain non-negative integer also into `out`. */
static inline int json_number(json_doc *d, uint64_t *out) {
  const size_t start = d->pos;
  int integer = 1;
  if (d->pos < d->len && d->s[d->pos] == '-') {
    ++d->pos;
    integer = 0;
  }
  if (d->pos >= d->len) return 0;
  if (d->s[d->pos] == '0') {
    ++d->pos;
  } else if (d->s[d->pos] >= '1' && d->s[d->pos] <= '9') {
    while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9') ++d->pos;
  } else {
    return 0;
  }
  if (d->pos < d->len && d->s[d->pos] == '.') {
    integer = 0;
    ++d->pos;
    if (d->pos >= d->len || d->s[d->pos] < '0' || d->s[d->pos] > '9') return 0;
    while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9') ++d->pos;
  }
  if (d->pos < d->len && (d->s[d->pos] == 'e' || d->s[d->pos] == 'E')) {
    integer = 0;
    ++d->pos;
    if (d->pos < d->len && (d->s[d->pos] == '+' || d->s[d->pos] == '-')) ++d->pos;
    if (d->pos >= d->len || d->s[d->pos] < '0' || d->s[d->pos] > '9') return 0;
    while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9') ++d->pos;
  }
  if (out) {
    *out = 0;
    if (integer) {
      size_t i;
      for (i = start; i < d->pos; ++i) *out = *out * 10 + (uint64_t)(d->s[i] - '0');
    }
  }
  return 1;
}

static inline int json_literal(json_doc *d, const char *word) {
  size_t n = strlen(word);
  if (d->len - d->pos < n || memcmp(d->s + d->pos, word, n) != 0) return 0;
  d->pos += n;
  return 1;
}

static inline int json_object(json_doc *d, enum json_context ctx) {
  ++d->pos; /* '{' */
  json_ws(d);
  if (d->pos < d->len && d->s[d->pos] == '}') {
    ++d->pos;
    return 1;
  }
  for (;;) {
    char key[64];
    char text[64];
    uint64_t number = 0;
    enum json_context inner = JSON_ANY;
    json_ws(d);
    if (!json_string(d, key, sizeof key)) return 0;
    json_ws(d);
    if (d->pos >= d->len || d->s[d->pos] != ':') return 0;
    ++d->pos;
    if (ctx == JSON_ROOT && strcmp(key, "stats") == 0) inner = JSON_STATS;
    if (ctx == JSON_ROOT && strcmp(key, "segments") == 0) inner = JSON_SEGMENTS;
    if (ctx == JSON_SEGMENT && strcmp(key, "blocks") == 0) inner = JSON_BLOCKS;
    if (ctx == JSON_STATS) {
      ++d->stats_members;
      inner = JSON_STAT;
      d->in_allocated_all = strcmp(key, "allocated_bytes.all") == 0;
    }
    text[0] = '\0';
    if (!json_value(d, inner, key, text, sizeof text, &number)) return 0;
    if (ctx == JSON_ROOT && strcmp(key, "strategy") == 0)
      snprintf(d->strategy, sizeof d->strategy, "%.31s", text);
    if (ctx == JSON_ROOT && strcmp(key, "stats") == 0) d->has_stats = 1;
    if (ctx == JSON_ROOT && strcmp(key, "segments") == 0) d->has_segments = 1;
    if (ctx == JSON_SEGMENT && strcmp(key, "address") == 0 && d->segments > 0 && d->segments <= 64)
      d->segment_address[d->segments - 1] = number;
    if (ctx == JSON_STAT && d->in_allocated_all && strcmp(key, "current") == 0) {
      d->allocated_bytes_all_current = (int64_t)number;
      d->saw_allocated_bytes_all = 1;
    }
    if (ctx == JSON_BLOCK && strcmp(key, "state") == 0 && strcmp(text, "allocated") == 0)
      ++d->allocated_blocks;
    if (ctx == JSON_BLOCK && strcmp(key, "state") == 0 && strcmp(text, "pending_free") == 0)
      ++d->pending_blocks;
    json_ws(d);
    if (d->pos >= d->len) return 0;
    if (d->s[d->pos] == ',') {
      ++d->pos;
      continue;
    }
    if (d->s[d->pos] == '}') {
      ++d->pos;
      return 1;
    }
    return 0;
  }
}

static inline int json_array(json_doc *d, enum json_context ctx) {
  enum json_context inner = ctx == JSON_SEGMENTS ? JSON_SEGMENT
                            : ctx == JSON_BLOCKS ? JSON_BLOCK
                                                 : JSON_ANY;
  ++d->pos; /* '[' */
  json_ws(d);
  if (d->pos < d->len && d->s[d->pos] == ']') {
    ++d->pos;
    return 1;
  }
  for (;;) {
    if (inner == JSON_SEGMENT) ++d->segments;
    if (inner == JSON_BLOCK) {
      ++d->blocks;
      if (d->segments > 0 && d->segments <= 64) ++d->segment_blocks[d->segments - 1];
    }
    if (!json_value(d, inner, NULL, NULL, 0, NULL)) return 0;
    json_ws(d);
    if (d->pos >= d->len) return 0;
    if (d->s[d->pos] == ',') {
      ++d->pos;
      continue;
    }
    if (d->s[d->pos] == ']') {
      ++d->pos;
      return 1;
    }
    return 0;
  }
}

static inline int json_value(json_doc *d, enum json_context ctx, const char *key, char *str_out,
                             size_t str_cap, uint64_t *num_out) {
  int ok;
  (void)key;
  json_ws(d);
  if (d->pos >= d->len) return 0;
  if (++d->depth > 64) return 0;
  switch (d->s[d->pos]) {
    case '{':
      ok = json_object(d, ctx == JSON_SEGMENTS || ctx == JSON_BLOCKS ? JSON_ANY : ctx);
      break;
    case '[': ok = json_array(d, ctx); break;
    case '"': ok = json_string(d, str_out, str_cap); break;
    case 't': ok = json_literal(d, "true"); break;
    case 'f': ok = json_literal(d, "false"); break;
    case 'n': ok = json_literal(d, "null"); break;
    default: ok = json_number(d, num_out); break;
  }
  --d->depth;
  return ok;
}

/* Parses a whole document: one value and nothing but white space after. */
static inline int json_parse(json_doc *d, const char *text, size_t len) {
  memset(d, 0, sizeof *d);
  d->s = text;
  d->len = len;
  json_ws(d);
  if (d->pos >= d->len || d->s[d->pos] != '{') {
    return json_value(d, JSON_ANY, NULL, NULL, 0, NULL) && (json_ws(d), d->pos == d->len);
  }
  if (!json_object(d, JSON_ROOT)) return 0;
  json_ws(d);
  return d->pos == d->len;
}

static inline int json_ok(const char *text) {
  json_doc d;
  return json_parse(&d, text, strlen(text));
}

/* The document of `a`, in a buffer of the exact size. */
static inline char *snapshot_json(dao_allocator *a, size_t *length) {
  char *buf;
  size_t len = 0, len2 = 0;
  assert_ok(dao_allocator_snapshot_json(a, NULL, 0, &len));
  assert_true(len > 0);
  buf = (char *)malloc(len + 1);
  assert_non_null(buf);
  assert_ok(dao_allocator_snapshot_json(a, buf, len + 1, &len2));
  assert_int_equal(len2, len);
  assert_int_equal(strlen(buf), len);
  *length = len;
  return buf;
}

static inline void json_matches_snapshot(dao_allocator *a) {
  size_t len = 0, i, blocks = 0, allocated = 0;
  char *text = snapshot_json(a, &len);
  json_doc d;
  snap s = take_snap(a);
  if (!json_parse(&d, text, len)) {
    print_error("the JSON does not parse at byte %zu: %.*s\n", d.pos,
                (int)(len < 2000 ? len : 2000), text);
    fail();
  }
  assert_string_equal(d.strategy, "caching");
  assert_true(d.has_stats);
  assert_true(d.has_segments);
  assert_int_equal(d.stats_members, DAO_STAT_METRIC_COUNT * DAO_STAT_POOL_COUNT);
  assert_true(d.saw_allocated_bytes_all);
  assert_int_equal(d.allocated_bytes_all_current,
                   get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current);
  assert_int_equal(d.segments, s.count);
  assert_true(s.count <= 64);
  for (i = 0; i < s.count; ++i) {
    assert_int_equal(d.segment_address[i], s.segments[i].info.address);
    assert_int_equal(d.segment_blocks[i], s.segments[i].info.block_count);
    blocks += s.segments[i].info.block_count;
  }
  allocated = count_state(&s, DAO_BLOCK_ALLOCATED);
  assert_int_equal(d.blocks, blocks);
  assert_int_equal(d.allocated_blocks, allocated);
  assert_int_equal(d.pending_blocks, count_state(&s, DAO_BLOCK_PENDING_FREE));
  free_snap(&s);
  free(text);
}

#endif /* CACHING_TEST_JSON_H */
