/* A reader of Python pickles (the plain-data subset): see pickle_reader.h. */
#include "pickle_reader.h"

#include "dao_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pk {
  tv_arena *a;
  const unsigned char *data, *p, *end;
  tv **stack;
  size_t depth, stack_cap;
  size_t *marks;
  size_t nmarks, marks_cap;
  tv **memo;
  size_t memo_cap, memo_next;
  char *error;
  size_t error_size;
  int failed;
} pk;

static tv *pk_fail(pk *k, const char *what, unsigned op) {
  if (!k->failed) {
    snprintf(k->error, k->error_size, "%s (opcode 0x%02x at byte %lu)", what, op,
             (unsigned long)(k->p - k->data));
    k->failed = 1;
  }
  return NULL;
}

static int need(pk *k, size_t n) { return (size_t)(k->end - k->p) >= n; }

static unsigned long long le(const unsigned char *p, int n) {
  unsigned long long v = 0;
  int i;
  for (i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

static void push(pk *k, tv *v) {
  if (k->depth == k->stack_cap) {
    k->stack_cap = k->stack_cap ? k->stack_cap * 2 : 64;
    k->stack = (tv **)dao_tool_xrealloc(k->stack, k->stack_cap * sizeof(tv *));
  }
  k->stack[k->depth++] = v;
}

static tv *pop(pk *k) {
  size_t floor = k->nmarks ? k->marks[k->nmarks - 1] : 0;
  if (k->depth <= floor) return NULL;
  return k->stack[--k->depth];
}

static tv *top(pk *k) {
  size_t floor = k->nmarks ? k->marks[k->nmarks - 1] : 0;
  return k->depth > floor ? k->stack[k->depth - 1] : NULL;
}

/* Pops the items above the last mark and the mark: *first and *count. */
static int pop_mark(pk *k, size_t *first, size_t *count) {
  if (k->nmarks == 0) return 0;
  *first = k->marks[--k->nmarks];
  *count = k->depth - *first;
  k->depth = *first;
  return 1;
}

static int memo_put(pk *k, unsigned long long index, tv *v) {
  /* A pickler numbers its memo from 0 without gaps: an index beyond the
     input's size is garbage, refused before it can ask for memory. */
  if (index > (unsigned long long)(k->end - k->data) + 16) return 0;
  if (index >= k->memo_cap) {
    size_t cap = k->memo_cap ? k->memo_cap : 64;
    while (cap <= index) cap *= 2;
    k->memo = (tv **)dao_tool_xrealloc(k->memo, cap * sizeof(tv *));
    memset(k->memo + k->memo_cap, 0, (cap - k->memo_cap) * sizeof(tv *));
    k->memo_cap = cap;
  }
  k->memo[index] = v;
  if (index >= k->memo_next) k->memo_next = (size_t)index + 1;
  return 1;
}

static tv *memo_get(pk *k, unsigned long long index) {
  return index < k->memo_cap ? k->memo[index] : NULL;
}

static tv *new_int(pk *k, long long i) {
  tv *v = tv_new(k->a, TV_INT);
  v->i = i;
  v->f = (double)i;
  return v;
}

/* A little-endian two's complement integer of n bytes (LONG1, LONG4). */
static tv *new_long(pk *k, const unsigned char *p, size_t n) {
  tv *v;
  if (n == 0) return new_int(k, 0);
  if (n <= 8) {
    unsigned long long u = le(p, (int)n);
    if (n < 8 && (p[n - 1] & 0x80)) u |= ~0ULL << (8 * n); /* sign-extend */
    return new_int(k, (long long)u);
  }
  {
    double f = 0;
    size_t i;
    int negative = (p[n - 1] & 0x80) != 0;
    for (i = n; i-- > 0;) f = f * 256.0 + (double)(negative ? (unsigned char)~p[i] : p[i]);
    v = tv_new(k->a, TV_FLOAT);
    v->f = negative ? -(f + 1) : f;
    return v;
  }
}

/* A text line (protocol 0 arguments), without its newline. */
static const unsigned char *line(pk *k, size_t *len) {
  const unsigned char *start = k->p;
  const unsigned char *nl = (const unsigned char *)memchr(k->p, '\n', (size_t)(k->end - k->p));
  if (nl == NULL) return NULL;
  *len = (size_t)(nl - start);
  k->p = nl + 1;
  return start;
}

static tv *other(pk *k, const char *name, size_t len) {
  tv *v = tv_new_string(k->a, name, len);
  v->type = TV_OTHER;
  return v;
}

int pickle_looks_like(const unsigned char *data, size_t len) {
  return len >= 3 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5;
}

tv *pickle_read(tv_arena *a, const unsigned char *data, size_t len, char *error,
                size_t error_size) {
  pk k;
  tv *result = NULL;
  memset(&k, 0, sizeof k);
  k.a = a;
  k.data = k.p = data;
  k.end = data + len;
  k.error = error;
  k.error_size = error_size;

  for (;;) {
    unsigned op;
    tv *v, *x, *y;
    size_t n, first, count, i;
    const unsigned char *s;
    if (k.p >= k.end) {
      pk_fail(&k, "the pickle ends before its STOP opcode (truncated?)", 0);
      break;
    }
    op = *k.p++;
    switch (op) {
      case 0x80: /* PROTO */
        if (!need(&k, 1)) goto truncated;
        if (k.p[0] > 5) {
          pk_fail(&k, "unsupported pickle protocol", op);
          goto done;
        }
        ++k.p;
        break;
      case 0x95: /* FRAME: its length only helps a reader prefetch */
        if (!need(&k, 8)) goto truncated;
        k.p += 8;
        break;
      case '}': push(&k, tv_new(a, TV_DICT)); break;
      case ']':
      case ')':
      case 0x8f: /* EMPTY_SET */ push(&k, tv_new(a, TV_LIST)); break;
      case '(': /* MARK */
        if (k.nmarks == k.marks_cap) {
          k.marks_cap = k.marks_cap ? k.marks_cap * 2 : 16;
          k.marks = (size_t *)dao_tool_xrealloc(k.marks, k.marks_cap * sizeof(size_t));
        }
        k.marks[k.nmarks++] = k.depth;
        break;
      case '1': /* POP_MARK */
        if (!pop_mark(&k, &first, &count)) goto bad_stack;
        break;
      case '0': /* POP */
        if (pop(&k) == NULL) goto bad_stack;
        break;
      case '2': /* DUP */
        if ((v = top(&k)) == NULL) goto bad_stack;
        push(&k, v);
        break;
      case 'u':  /* SETITEMS */
      case 'e':  /* APPENDS */
      case 0x90: /* ADDITEMS */
        if (!pop_mark(&k, &first, &count)) goto bad_stack;
        v = top(&k);
        if (op == 'u') {
          if (v == NULL || v->type != TV_DICT || count % 2 != 0) goto bad_stack;
          for (i = 0; i < count; i += 2) tv_set(a, v, k.stack[first + i], k.stack[first + i + 1]);
        } else {
          if (v == NULL || (v->type != TV_LIST && v->type != TV_OTHER)) goto bad_stack;
          if (v->type == TV_LIST)
            for (i = 0; i < count; ++i) tv_append(a, v, k.stack[first + i]);
        }
        break;
      case 's': /* SETITEM */
        y = pop(&k);
        x = pop(&k);
        v = top(&k);
        if (x == NULL || y == NULL || v == NULL || v->type != TV_DICT) goto bad_stack;
        tv_set(a, v, x, y);
        break;
      case 'a': /* APPEND */
        x = pop(&k);
        v = top(&k);
        if (x == NULL || v == NULL || (v->type != TV_LIST && v->type != TV_OTHER)) goto bad_stack;
        if (v->type == TV_LIST) tv_append(a, v, x);
        break;
      case 't':  /* TUPLE */
      case 'l':  /* LIST */
      case 'd':  /* DICT */
      case 0x91: /* FROZENSET */
        if (!pop_mark(&k, &first, &count)) goto bad_stack;
        v = tv_new(a, op == 'd' ? TV_DICT : TV_LIST);
        if (op == 'd') {
          if (count % 2 != 0) goto bad_stack;
          for (i = 0; i < count; i += 2) tv_set(a, v, k.stack[first + i], k.stack[first + i + 1]);
        } else {
          for (i = 0; i < count; ++i) tv_append(a, v, k.stack[first + i]);
        }
        push(&k, v);
        break;
      case 0x85: /* TUPLE1..3 */
      case 0x86:
      case 0x87:
        n = op - 0x84;
        {
          size_t floor = k.nmarks ? k.marks[k.nmarks - 1] : 0;
          if (k.depth - floor < n) goto bad_stack;
          v = tv_new(a, TV_LIST);
          for (i = k.depth - n; i < k.depth; ++i) tv_append(a, v, k.stack[i]);
          k.depth -= n;
          push(&k, v);
        }
        break;
      case 'X':  /* BINUNICODE */
      case 'B':  /* BINBYTES */
      case 'T':  /* BINSTRING */
      case 0x8c: /* SHORT_BINUNICODE */
      case 'C':  /* SHORT_BINBYTES */
      case 'U':  /* SHORT_BINSTRING */
      case 0x8d: /* BINUNICODE8 */
      case 0x8e: /* BINBYTES8 */
      case 0x96: /* BYTEARRAY8 */
      {
        int width = (op == 0x8c || op == 'C' || op == 'U')  ? 1
                    : (op == 'X' || op == 'B' || op == 'T') ? 4
                                                            : 8;
        unsigned long long length;
        if (!need(&k, (size_t)width)) goto truncated;
        length = le(k.p, width);
        k.p += width;
        if (op == 'T' && (length & 0x80000000ULL)) {
          pk_fail(&k, "negative string length", op);
          goto done;
        }
        if (length > (unsigned long long)(k.end - k.p)) goto truncated;
        push(&k, tv_new_string(a, (const char *)k.p, (size_t)length));
        k.p += (size_t)length;
        break;
      }
      case 'J': /* BININT */
        if (!need(&k, 4)) goto truncated;
        push(&k, new_int(&k, (long long)(int)(unsigned)le(k.p, 4)));
        k.p += 4;
        break;
      case 'K': /* BININT1 */
        if (!need(&k, 1)) goto truncated;
        push(&k, new_int(&k, k.p[0]));
        k.p += 1;
        break;
      case 'M': /* BININT2 */
        if (!need(&k, 2)) goto truncated;
        push(&k, new_int(&k, (long long)le(k.p, 2)));
        k.p += 2;
        break;
      case 0x8a: /* LONG1 */
      case 0x8b: /* LONG4 */
      {
        unsigned long long length;
        int width = op == 0x8a ? 1 : 4;
        if (!need(&k, (size_t)width)) goto truncated;
        length = le(k.p, width);
        k.p += width;
        if (op == 0x8b && (length & 0x80000000ULL)) {
          pk_fail(&k, "negative integer length", op);
          goto done;
        }
        if (length > (unsigned long long)(k.end - k.p)) goto truncated;
        push(&k, new_long(&k, k.p, (size_t)length));
        k.p += (size_t)length;
        break;
      }
      case 'G': /* BINFLOAT: big-endian IEEE 754 double */
      {
        unsigned long long bits = 0;
        double f;
        int b;
        if (!need(&k, 8)) goto truncated;
        for (b = 0; b < 8; ++b) bits = (bits << 8) | k.p[b];
        memcpy(&f, &bits, sizeof f);
        k.p += 8;
        v = tv_new(a, TV_FLOAT);
        v->f = f;
        push(&k, v);
        break;
      }
      case 'I': /* INT (protocol 0; "01"/"00" are True/False) */
      case 'L': /* LONG (protocol 0) */
      {
        char tmp[32];
        char *endp;
        s = line(&k, &n);
        if (s == NULL) goto truncated;
        if (n > 0 && s[n - 1] == 'L') --n;
        if (n == 0 || n >= sizeof tmp) {
          pk_fail(&k, "bad integer", op);
          goto done;
        }
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        v = new_int(&k, strtoll(tmp, &endp, 10));
        if (*endp != '\0') {
          pk_fail(&k, "bad integer", op);
          goto done;
        }
        if (op == 'I' && n == 2 && (tmp[1] == '0' || tmp[1] == '1') && tmp[0] == '0') {
          v->type = TV_BOOL;
          v->b = tmp[1] == '1';
        }
        push(&k, v);
        break;
      }
      case 'N': push(&k, tv_new(a, TV_NULL)); break;
      case 0x88: /* NEWTRUE */
      case 0x89: /* NEWFALSE */
        v = tv_new(a, TV_BOOL);
        v->b = op == 0x88;
        v->i = v->b;
        v->f = v->b;
        push(&k, v);
        break;
      case 0x94: /* MEMOIZE */
        if ((v = top(&k)) == NULL) goto bad_stack;
        if (!memo_put(&k, k.memo_next, v)) goto bad_memo;
        break;
      case 'q': /* BINPUT */
      case 'r': /* LONG_BINPUT */
      {
        int width = op == 'q' ? 1 : 4;
        if (!need(&k, (size_t)width)) goto truncated;
        if ((v = top(&k)) == NULL) goto bad_stack;
        if (!memo_put(&k, le(k.p, width), v)) goto bad_memo;
        k.p += width;
        break;
      }
      case 'h': /* BINGET */
      case 'j': /* LONG_BINGET */
      {
        int width = op == 'h' ? 1 : 4;
        if (!need(&k, (size_t)width)) goto truncated;
        v = memo_get(&k, le(k.p, width));
        if (v == NULL) goto bad_memo;
        k.p += width;
        push(&k, v);
        break;
      }
      case 'p': /* PUT (protocol 0) */
      case 'g': /* GET (protocol 0) */
      {
        char tmp[24];
        char *endp;
        unsigned long long index;
        s = line(&k, &n);
        if (s == NULL) goto truncated;
        if (n == 0 || n >= sizeof tmp) goto bad_memo;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        index = strtoull(tmp, &endp, 10);
        if (*endp != '\0') goto bad_memo;
        if (op == 'p') {
          if ((v = top(&k)) == NULL) goto bad_stack;
          if (!memo_put(&k, index, v)) goto bad_memo;
        } else {
          if ((v = memo_get(&k, index)) == NULL) goto bad_memo;
          push(&k, v);
        }
        break;
      }
      case 'c': /* GLOBAL "module\nname\n" */
      {
        size_t n2;
        const unsigned char *s2;
        char name[256];
        s = line(&k, &n);
        if (s == NULL) goto truncated;
        s2 = line(&k, &n2);
        if (s2 == NULL) goto truncated;
        snprintf(name, sizeof name, "%.*s.%.*s", (int)(n < 120 ? n : 120), (const char *)s,
                 (int)(n2 < 120 ? n2 : 120), (const char *)s2);
        push(&k, other(&k, name, strlen(name)));
        break;
      }
      case 0x93: /* STACK_GLOBAL */
      {
        char name[256];
        y = pop(&k);
        x = pop(&k);
        if (x == NULL || y == NULL || x->type != TV_STRING || y->type != TV_STRING) goto bad_stack;
        snprintf(name, sizeof name, "%.120s.%.120s", x->s, y->s);
        push(&k, other(&k, name, strlen(name)));
        break;
      }
      case 'R':  /* REDUCE: callable(*args), never called */
      case 0x81: /* NEWOBJ: cls.__new__(cls, *args) */
        y = pop(&k);
        x = pop(&k);
        if (x == NULL || y == NULL || x->type != TV_OTHER) goto bad_stack;
        push(&k, other(&k, x->s, x->len));
        break;
      case 0x92: /* NEWOBJ_EX */
        pop(&k);
        y = pop(&k);
        x = pop(&k);
        if (x == NULL || y == NULL || x->type != TV_OTHER) goto bad_stack;
        push(&k, other(&k, x->s, x->len));
        break;
      case 'b': /* BUILD: the state is dropped, the object stays */
        if (pop(&k) == NULL || top(&k) == NULL) goto bad_stack;
        break;
      case '.': /* STOP */
        result = pop(&k);
        if (result == NULL) goto bad_stack;
        goto done;
      default: pk_fail(&k, "unsupported or invalid pickle opcode", op); goto done;
    }
    continue;
  truncated:
    pk_fail(&k, "the pickle ends inside an opcode (truncated?)", op);
    goto done;
  bad_stack:
    pk_fail(&k, "malformed pickle: the opcode does not fit the stack", op);
    goto done;
  bad_memo:
    pk_fail(&k, "malformed pickle: bad memo index", op);
    goto done;
  }
done:
  free(k.stack);
  free(k.marks);
  free(k.memo);
  return k.failed ? NULL : result;
}
