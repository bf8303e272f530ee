/* bench_tiered: the baselines every policy is compared with: the
 * furthest-next-use rule simulated with the budget as a plain byte count,
 * and a floor on the bytes that any policy must fetch back. */
#define _GNU_SOURCE /* clock_gettime, getline, S_ISDIR under -std=c99 */

#include "bench_tiered.h"

/* The furthest-next-use rule with the budget as a plain byte count. Events
   in trace order: an alloc creates an empty tensor (a pre-existing one is
   written: it becomes resident like an output, evicting if needed); an op
   makes its working set resident (fetching what is on the host), evicting
   the resident tensors outside it with the furthest next use, those never
   used again first (ties: the largest first); a free drops the tensor.
   Copies follow the executor's rules: evicting costs the tensor's bytes only
   when its data is needed again (a later use, or it is still held at the
   end of the trace and may be read then) and the host tier has no current
   copy of it (a fetched tensor keeps its host copy until a kernel writes
   it); fetching costs its bytes. */
void reference(const trace *t, uint64_t budget, ref_result *r) {
  const size_t n = t->nst;
  unsigned char *resident = calloc(n ? n : 1, 1), *on_host = calloc(n ? n : 1, 1);
  unsigned char *in_ws = calloc(n ? n : 1, 1);
  size_t *cursor = calloc(n ? n : 1, sizeof *cursor); /* next entry of uses */
  size_t *res = xmalloc((n ? n : 1) * sizeof *res), nres = 0;
  if (!resident || !on_host || !in_ws || !cursor) {
    fprintf(stderr, "bench_tiered: out of host memory\n");
    exit(EXIT_ERROR);
  }
  uint64_t used = 0;
  memset(r, 0, sizeof *r);
  /* Key of a resident tensor: its next use; t->nops when it is held to the
     end and not used again; NONE when its data is never needed again. */
#define NEXT_USE(s)                                                \
  (cursor[s] < t->st[s].nuses ? (uint64_t)t->st[s].uses[cursor[s]] \
                              : (t->st[s].freed ? NONE : (uint64_t)t->nops))
  for (size_t e = 0; e < t->nev; ++e) {
    const event *ev = &t->ev[e];
    size_t need_first = 0, need_count = 0;
    size_t one;
    if (ev->kind == EV_FREE) {
      size_t s = ev->index;
      if (resident[s]) {
        used -= t->st[s].bytes;
        resident[s] = 0;
        for (size_t k = 0; k < nres; ++k)
          if (res[k] == s) {
            res[k] = res[--nres];
            break;
          }
      }
      on_host[s] = 0;
      continue;
    }
    const size_t *need;
    if (ev->kind == EV_ALLOC) {
      if (!t->st[ev->index].pre) continue;
      one = ev->index;
      need = &one;
      need_count = 1;
    } else {
      const op *o = &t->ops[ev->index];
      need_first = o->ws_first;
      need_count = o->ws_count;
      need = t->ws + need_first;
      for (size_t k = 0; k < need_count; ++k) ++cursor[need[k]];
    }
    uint64_t missing = 0;
    for (size_t k = 0; k < need_count; ++k) {
      in_ws[need[k]] = 1;
      if (!resident[need[k]]) missing += t->st[need[k]].bytes;
    }
    while (used + missing > budget) {
      size_t best = SIZE_MAX;
      uint64_t best_key = 0;
      for (size_t k = 0; k < nres; ++k) {
        size_t s = res[k];
        if (in_ws[s]) continue;
        uint64_t key = NEXT_USE(s);
        if (best == SIZE_MAX || key > best_key ||
            (key == best_key && t->st[s].bytes > t->st[res[best]].bytes)) {
          best = k;
          best_key = key;
        }
      }
      if (best == SIZE_MAX) break; /* cannot happen: budget >= working set */
      size_t s = res[best];
      res[best] = res[--nres];
      resident[s] = 0;
      used -= t->st[s].bytes;
      if (best_key == NONE) {
        on_host[s] = 0; /* dropped: never needed again */
      } else if (!on_host[s]) {
        r->evicted += t->st[s].bytes;
        on_host[s] = 1;
      }
    }
    for (size_t k = 0; k < need_count; ++k) {
      size_t s = need[k];
      in_ws[s] = 0;
      if (resident[s]) continue;
      if (on_host[s]) r->fetched += t->st[s].bytes; /* the host copy stays current */
      resident[s] = 1;
      used += t->st[s].bytes;
      res[nres++] = s;
    }
    /* What is written loses its host copy (a write of a pre-existing
       tensor, or the op's outputs). */
    if (ev->kind == EV_ALLOC) {
      on_host[ev->index] = 0;
    } else {
      const op *o = &t->ops[ev->index];
      for (size_t k = 0; k < o->out_count; ++k) on_host[t->refs[o->out_first + k]] = 0;
    }
  }
#undef NEXT_USE
  free(resident);
  free(on_host);
  free(in_ws);
  free(cursor);
  free(res);
}

typedef struct interval {
  size_t lo, hi; /* consecutive uses: resident over the ops strictly between */
  uint64_t bytes;
} interval;

static int compare_intervals(const void *pa, const void *pb) {
  const interval *a = pa, *b = pb;
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return (a->lo > b->lo) - (a->lo < b->lo);
}

/* A lower bound on the bytes that any policy must fetch back. Between two
   consecutive uses of a tensor (ops a < b), it either stays on the device
   over every op strictly between, or it is fetched again for b. At op k the
   device holds op k's working set, so the tensors kept over k have at most
   budget - ws(k) bytes. Keeping a fraction of a tensor is allowed (a
   relaxation), so the most bytes that can be kept is the optimum of an
   interval packing LP, which the greedy below reaches (intervals by right
   end, each kept as far as the remaining room of its ops allows); the floor
   is the bytes of all intervals minus that. */
uint64_t fetch_floor(const trace *t, uint64_t budget) {
  size_t nint = 0, cap = 0;
  interval *iv = NULL;
  for (size_t s = 0; s < t->nst; ++s) {
    const storage *st = &t->st[s];
    for (size_t k = 1; k < st->nuses; ++k) {
      if (st->uses[k] == st->uses[k - 1] + 1) continue; /* nothing between */
      if (nint == cap) {
        cap = cap ? cap * 2 : 1024;
        iv = xrealloc(iv, cap * sizeof *iv);
      }
      iv[nint].lo = st->uses[k - 1];
      iv[nint].hi = st->uses[k];
      iv[nint].bytes = st->bytes;
      ++nint;
    }
  }
  qsort(iv, nint, sizeof *iv, compare_intervals);
  uint64_t *room = xmalloc(t->nops * sizeof *room);
  for (size_t k = 0; k < t->nops; ++k)
    room[k] = budget > t->ops[k].ws_bytes ? budget - t->ops[k].ws_bytes : 0;
  uint64_t floor = 0;
  for (size_t i = 0; i < nint; ++i) {
    uint64_t keep = iv[i].bytes;
    for (size_t k = iv[i].lo + 1; k < iv[i].hi; ++k)
      if (room[k] < keep) keep = room[k];
    for (size_t k = iv[i].lo + 1; k < iv[i].hi; ++k) room[k] -= keep;
    floor += iv[i].bytes - keep;
  }
  free(room);
  free(iv);
  return floor;
}
