/* bench_tiered: loading a trace (JSON lines: alloc / op / free) into the
 * trace model, with its peak live bytes, working sets and uses. */
#define _GNU_SOURCE /* clock_gettime, getline, S_ISDIR under -std=c99 */

#include <errno.h>

#include "bench_tiered.h"

static size_t *hfind(trace *t, uint64_t sid, int insert) {
  if (insert && (t->nst + 1) * 2 > t->hcap) {
    size_t ncap = t->hcap ? t->hcap * 2 : 1024;
    uint64_t *nk = xmalloc(ncap * sizeof *nk);
    size_t *nv = xmalloc(ncap * sizeof *nv);
    for (size_t i = 0; i < ncap; ++i) nk[i] = NONE;
    for (size_t i = 0; i < t->hcap; ++i) {
      if (t->hkeys[i] == NONE) continue;
      size_t h = (size_t)mix64(t->hkeys[i]) & (ncap - 1);
      while (nk[h] != NONE) h = (h + 1) & (ncap - 1);
      nk[h] = t->hkeys[i];
      nv[h] = t->hvals[i];
    }
    free(t->hkeys);
    free(t->hvals);
    t->hkeys = nk;
    t->hvals = nv;
    t->hcap = ncap;
  }
  if (t->hcap == 0) return NULL;
  size_t h = (size_t)mix64(sid) & (t->hcap - 1);
  while (t->hkeys[h] != NONE) {
    if (t->hkeys[h] == sid) return &t->hvals[h];
    h = (h + 1) & (t->hcap - 1);
  }
  if (!insert) return NULL;
  t->hkeys[h] = sid;
  return &t->hvals[h];
}

/* A minimal JSON reader for one line of the trace format. */
typedef struct jcur {
  const char *p, *end;
} jcur;

static void jws(jcur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) ++c->p;
}

static int jchar(jcur *c, char ch) {
  jws(c);
  if (c->p < c->end && *c->p == ch) {
    ++c->p;
    return 1;
  }
  return 0;
}

/* A string without escapes other than \" and \\ is enough here; its
   contents go to buf (truncated) when buf is not NULL. */
static int jstring(jcur *c, char *buf, size_t len) {
  size_t n = 0;
  if (!jchar(c, '"')) return 0;
  while (c->p < c->end && *c->p != '"') {
    char ch = *c->p++;
    if (ch == '\\') {
      if (c->p >= c->end) return 0;
      ch = *c->p++;
    }
    if (buf != NULL && n + 1 < len) buf[n++] = ch;
  }
  if (c->p >= c->end) return 0;
  ++c->p;
  if (buf != NULL && len > 0) buf[n] = '\0';
  return 1;
}

static int jnumber(jcur *c, uint64_t *out) {
  uint64_t v = 0;
  int digits = 0;
  jws(c);
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    uint64_t d = (uint64_t)(*c->p - '0');
    if (v > (UINT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
    ++digits;
    ++c->p;
  }
  *out = v;
  return digits > 0;
}

static int jbool(jcur *c, int *out) {
  jws(c);
  if ((size_t)(c->end - c->p) >= 4 && memcmp(c->p, "true", 4) == 0) {
    c->p += 4;
    *out = 1;
    return 1;
  }
  if ((size_t)(c->end - c->p) >= 5 && memcmp(c->p, "false", 5) == 0) {
    c->p += 5;
    *out = 0;
    return 1;
  }
  return 0;
}

/* Skips any value (for keys this program does not use). */
static int jskip(jcur *c) {
  jws(c);
  if (c->p >= c->end) return 0;
  if (*c->p == '"') return jstring(c, NULL, 0);
  if (*c->p == '[' || *c->p == '{') {
    int depth = 0;
    while (c->p < c->end) {
      char ch = *c->p;
      if (ch == '"') {
        if (!jstring(c, NULL, 0)) return 0;
        continue;
      }
      ++c->p;
      if (ch == '[' || ch == '{') ++depth;
      if (ch == ']' || ch == '}') {
        if (--depth == 0) return 1;
      }
    }
    return 0;
  }
  const char *start = c->p;
  while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']') ++c->p;
  return c->p > start;
}

/* [[ID,B],...] into pairs, appended to ids and bytes. */
static int jpairs(jcur *c, uint64_t **ids, uint64_t **bytes, size_t *n, size_t *cap) {
  if (!jchar(c, '[')) return 0;
  if (jchar(c, ']')) return 1;
  for (;;) {
    uint64_t id, b;
    if (!jchar(c, '[') || !jnumber(c, &id) || !jchar(c, ',') || !jnumber(c, &b) || !jchar(c, ']'))
      return 0;
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 16;
      *ids = xrealloc(*ids, *cap * sizeof **ids);
      *bytes = xrealloc(*bytes, *cap * sizeof **bytes);
    }
    (*ids)[*n] = id;
    (*bytes)[*n] = b;
    ++*n;
    if (jchar(c, ']')) return 1;
    if (!jchar(c, ',')) return 0;
  }
}

static void push_ref(trace *t, size_t s) {
  if (t->nrefs == t->caprefs) {
    t->caprefs = t->caprefs ? t->caprefs * 2 : 1024;
    t->refs = xrealloc(t->refs, t->caprefs * sizeof *t->refs);
  }
  t->refs[t->nrefs++] = s;
}

static void push_event(trace *t, int kind, size_t index) {
  if (t->nev == t->capev) {
    t->capev = t->capev ? t->capev * 2 : 1024;
    t->ev = xrealloc(t->ev, t->capev * sizeof *t->ev);
  }
  t->ev[t->nev].kind = kind;
  t->ev[t->nev].index = index;
  ++t->nev;
}

/* Adds the distinct storages of ids[0..n) to refs; 0 on an unknown id or a
   size that differs from the alloc event. */
static int add_list(trace *t, const uint64_t *ids, const uint64_t *bytes, size_t n, size_t *first,
                    size_t *count, char *err, size_t errlen, size_t lineno) {
  *first = t->nrefs;
  for (size_t k = 0; k < n; ++k) {
    size_t *v = hfind(t, ids[k], 0);
    if (v == NULL) {
      snprintf(err, errlen, "%s:%zu: storage %llu used before its alloc event", t->path, lineno,
               (unsigned long long)ids[k]);
      return 0;
    }
    if (t->st[*v].bytes != bytes[k]) {
      snprintf(err, errlen, "%s:%zu: storage %llu has %llu bytes here, %llu at its alloc", t->path,
               lineno, (unsigned long long)ids[k], (unsigned long long)bytes[k],
               (unsigned long long)t->st[*v].bytes);
      return 0;
    }
    int dup = 0;
    for (size_t j = *first; j < t->nrefs; ++j) dup |= t->refs[j] == *v;
    if (!dup) push_ref(t, *v);
  }
  *count = t->nrefs - *first;
  return 1;
}

void free_trace(trace *t) {
  for (size_t i = 0; i < t->nst; ++i) free(t->st[i].uses);
  free(t->st);
  free(t->ops);
  free(t->ev);
  free(t->refs);
  free(t->ws);
  free(t->hkeys);
  free(t->hvals);
  free(t->path);
  free(t->name);
  memset(t, 0, sizeof *t);
}

/* Loads a trace and computes its peak live bytes, working sets and uses.
   Returns 0, or 1 after writing err. */
int load_trace(const char *path, trace *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  t->path = xstrdup(path);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  t->name = xstrdup(base);
  char *dot = strstr(t->name, ".jsonl");
  if (dot != NULL) *dot = '\0';
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return 1;
  }
  char *line = NULL;
  size_t linecap = 0, lineno = 0;
  uint64_t *ids = NULL, *bytes = NULL;
  size_t cap = 0;
  uint64_t live = 0;
  int rc = 1;
  for (;;) {
    /* getline is POSIX 2008; read by hand to stay C99 + POSIX 2001. */
    size_t len = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF && ch != '\n') {
      if (len + 2 > linecap) {
        linecap = linecap ? linecap * 2 : 4096;
        line = xrealloc(line, linecap);
      }
      line[len++] = (char)ch;
    }
    if (ch == EOF && len == 0) break;
    ++lineno;
    jcur c = {line, line + len};
    jws(&c);
    if (c.p == c.end) continue;
    char evname[16] = "", key[32];
    uint64_t seq = NONE, sid = NONE, nbytes = NONE;
    int pre = 0, has_in = 0, has_out = 0;
    size_t n_in = 0, n_all = 0;
    if (!jchar(&c, '{')) goto malformed;
    if (!jchar(&c, '}')) {
      for (;;) {
        if (!jstring(&c, key, sizeof key) || !jchar(&c, ':')) goto malformed;
        int ok;
        if (strcmp(key, "ev") == 0) {
          ok = jstring(&c, evname, sizeof evname);
        } else if (strcmp(key, "seq") == 0) {
          ok = jnumber(&c, &seq);
        } else if (strcmp(key, "sid") == 0) {
          ok = jnumber(&c, &sid);
        } else if (strcmp(key, "bytes") == 0) {
          ok = jnumber(&c, &nbytes);
        } else if (strcmp(key, "pre") == 0) {
          ok = jbool(&c, &pre);
        } else if (strcmp(key, "in") == 0 || strcmp(key, "out") == 0) {
          /* Inputs first in ids[0..n_in), outputs after, whatever the key
             order: outputs read before inputs are moved behind them. */
          int is_in = key[0] == 'i';
          size_t before = n_all;
          ok = jpairs(&c, &ids, &bytes, &n_all, &cap);
          if (ok && is_in) {
            if (has_out) { /* rotate the new inputs in front of the outputs */
              size_t nin = n_all - before;
              for (size_t r = 0; r < nin; ++r) {
                uint64_t id = ids[n_all - 1], b = bytes[n_all - 1];
                memmove(ids + 1, ids, (n_all - 1) * sizeof *ids);
                memmove(bytes + 1, bytes, (n_all - 1) * sizeof *bytes);
                ids[0] = id;
                bytes[0] = b;
              }
            }
            n_in = n_all - before;
            has_in = 1;
          } else if (ok) {
            has_out = 1;
          }
        } else {
          ok = jskip(&c);
        }
        if (!ok) goto malformed;
        if (jchar(&c, '}')) break;
        if (!jchar(&c, ',')) goto malformed;
      }
    }
    jws(&c);
    if (c.p != c.end) goto malformed;
    if (strcmp(evname, "alloc") == 0) {
      if (sid == NONE || nbytes == NONE || nbytes == 0) goto malformed;
      size_t *v = hfind(t, sid, 0);
      if (v != NULL) {
        snprintf(err, errlen, "%s:%zu: storage %llu allocated twice", path, lineno,
                 (unsigned long long)sid);
        goto done;
      }
      if (t->nst == t->capst) {
        t->capst = t->capst ? t->capst * 2 : 256;
        t->st = xrealloc(t->st, t->capst * sizeof *t->st);
      }
      storage *s = &t->st[t->nst];
      memset(s, 0, sizeof *s);
      s->sid = sid;
      s->bytes = nbytes;
      s->pre = pre;
      *hfind(t, sid, 1) = t->nst;
      push_event(t, EV_ALLOC, t->nst);
      ++t->nst;
      t->total_bytes += nbytes;
      live += nbytes;
      if (live > t->peak_live) t->peak_live = live;
    } else if (strcmp(evname, "free") == 0) {
      size_t *v = sid == NONE ? NULL : hfind(t, sid, 0);
      if (v == NULL || t->st[*v].freed) {
        snprintf(err, errlen, "%s:%zu: free of an unknown or freed storage", path, lineno);
        goto done;
      }
      t->st[*v].freed = 1;
      live -= t->st[*v].bytes;
      push_event(t, EV_FREE, *v);
    } else if (strcmp(evname, "op") == 0) {
      if (!has_in || !has_out) goto malformed;
      if (t->nops == t->capops) {
        t->capops = t->capops ? t->capops * 2 : 256;
        t->ops = xrealloc(t->ops, t->capops * sizeof *t->ops);
      }
      op *o = &t->ops[t->nops];
      memset(o, 0, sizeof *o);
      if (!add_list(t, ids, bytes, n_in, &o->in_first, &o->in_count, err, errlen, lineno) ||
          !add_list(t, ids + n_in, bytes + n_in, n_all - n_in, &o->out_first, &o->out_count, err,
                    errlen, lineno))
        goto done;
      for (size_t k = 0; k < o->in_count + o->out_count; ++k) {
        size_t s = t->refs[o->in_first + k];
        if (t->st[s].freed) {
          snprintf(err, errlen, "%s:%zu: storage %llu used after its free event", path, lineno,
                   (unsigned long long)t->st[s].sid);
          goto done;
        }
      }
      push_event(t, EV_OP, t->nops);
      ++t->nops;
    } else {
      goto malformed;
    }
    (void)seq;
    continue;
  malformed:
    snprintf(err, errlen, "%s:%zu: not a trace event: '%.*s'", path, lineno,
             (int)(len < 100 ? len : 100), line);
    goto done;
  }
  /* Working sets (inputs then outputs, distinct) and uses per storage. */
  t->ws = xmalloc((t->nrefs + 1) * sizeof *t->ws);
  for (size_t i = 0; i < t->nops; ++i) {
    op *o = &t->ops[i];
    o->ws_first = t->nws;
    for (size_t k = 0; k < o->in_count + o->out_count; ++k) {
      size_t s = t->refs[o->in_first + k];
      int dup = 0;
      for (size_t j = o->ws_first; j < t->nws; ++j) dup |= t->ws[j] == s;
      if (dup) continue;
      t->ws[t->nws++] = s;
      o->ws_bytes += t->st[s].bytes;
      o->ws_aligned += round_up(t->st[s].bytes, ALIGN_BYTES);
      storage *st = &t->st[s];
      if (st->nuses == st->capuses) {
        st->capuses = st->capuses ? st->capuses * 2 : 8;
        st->uses = xrealloc(st->uses, st->capuses * sizeof *st->uses);
      }
      st->uses[st->nuses++] = i;
    }
    o->ws_count = t->nws - o->ws_first;
    if (o->ws_bytes > t->max_ws) {
      t->max_ws = o->ws_bytes;
      t->max_ws_op = i;
    }
    if (o->ws_aligned > t->max_ws_aligned) t->max_ws_aligned = o->ws_aligned;
  }
  for (size_t i = 0; i < t->nst; ++i)
    if (!t->st[i].freed) t->held_bytes += t->st[i].bytes;
  if (t->nops == 0) {
    snprintf(err, errlen, "%s: no op events", path);
    goto done;
  }
  rc = 0;
done:
  if (ferror(f) && rc == 0) {
    snprintf(err, errlen, "%s: read error", path);
    rc = 1;
  }
  fclose(f);
  free(line);
  free(ids);
  free(bytes);
  return rc;
}
