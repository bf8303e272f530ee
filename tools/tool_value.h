/*
 * Values read from JSON or from a Python pickle by the `dao` tool: a small
 * tree of null, booleans, integers, floats, strings, lists and dicts, all
 * allocated from one arena and freed together. The JSON parser is here; the
 * pickle reader is in pickle_reader.h. Both refuse hostile input with a
 * message (never crash): depth, sizes and counts are bounded by the input.
 */
#ifndef DAO_TOOL_VALUE_H
#define DAO_TOOL_VALUE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tv_type {
  TV_NULL,
  TV_BOOL,
  TV_INT,    /* fits in a long long; `f` holds the same value as a double */
  TV_FLOAT,  /* also integers too large for a long long */
  TV_STRING, /* also bytes; NUL-terminated, `len` bytes */
  TV_LIST,   /* also tuples and sets */
  TV_DICT,
  TV_OTHER /* a pickled object the reader does not model (a class instance) */
} tv_type;

typedef struct tv tv;
struct tv {
  tv_type type;
  int b;
  long long i;
  double f;
  const char *s;
  size_t len;
  tv **items; /* list items, dict values */
  tv **keys;  /* dict keys */
  size_t n, cap;
};

typedef struct tv_arena tv_arena;

tv_arena *tv_arena_create(void);
void tv_arena_destroy(tv_arena *a);
/** Frees everything allocated since the arena was created (keeps one block). */
void tv_arena_reset(tv_arena *a);
void *tv_arena_alloc(tv_arena *a, size_t n);

tv *tv_new(tv_arena *a, tv_type type);
tv *tv_new_string(tv_arena *a, const char *s, size_t len);
/** Appends to a list. */
void tv_append(tv_arena *a, tv *list, tv *item);
/** Sets a dict's key (replacing an equal string key). */
void tv_set(tv_arena *a, tv *dict, tv *key, tv *value);

/** The value of string key `key` in `dict`, or NULL (also when not a dict). */
const tv *tv_get(const tv *dict, const char *key);
/** 1 and the value in *out when `v` is an integer (or an integral float). */
int tv_int(const tv *v, long long *out);
/** 1 and the value in *out when `v` is a number, or a string "0x..." */
int tv_number(const tv *v, double *out);
/** The string, or NULL when `v` is not one. */
const char *tv_str(const tv *v);

/**
 * Parses one JSON value from `text[0..len)` (surrounding white space allowed,
 * nothing else after it). Returns NULL and a message in `error` on malformed
 * input or nesting deeper than 64.
 */
tv *tv_parse_json(tv_arena *a, const char *text, size_t len, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
