/* Checks of partitioned memory that one rank runs, the same for every
 * transport: a thread per rank over an in-process communicator
 * (test_whole.c), a process per rank over MPI (test_whole_mpi.c).
 *
 * A body never stops between collective calls on a failed check (cmocka's
 * asserts would jump out of it and leave the other ranks waiting): checks
 * record the first failure in the rank's context, and the runner asserts,
 * after every rank has finished, that no rank recorded one. A body skips
 * ahead only where every rank has the same reason to (a create that failed
 * fails on every rank).
 *
 * Contents are a function of (entry, byte, generation), so every rank knows
 * what every entry must hold without any exchange. */
#ifndef DAO_WHOLE_BODY_H
#define DAO_WHOLE_BODY_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dao.h>

typedef struct wb_ctx {
  dao_comm *comm;
  int rank;
  int size;
  int failures;
  int checks;
  char first[1024];
  const char *file_prefix; /* the same on every rank */
} wb_ctx;

static void wb_fail(wb_ctx *c, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void wb_fail(wb_ctx *c, const char *file, int line, const char *fmt, ...) {
  char text[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (c->failures == 0) snprintf(c->first, sizeof c->first, "%s:%d: %s", file, line, text);
  if (c->failures < 5) fprintf(stderr, "rank %d: %s:%d: %s\n", c->rank, file, line, text);
  ++c->failures;
}

#define WB_CHECK(c, cond)                                                     \
  do {                                                                        \
    ++(c)->checks;                                                            \
    if (!(cond)) wb_fail((c), __FILE__, __LINE__, "check failed: %s", #cond); \
  } while (0)

#define WB_CHECKF(c, cond, ...)                                 \
  do {                                                          \
    ++(c)->checks;                                              \
    if (!(cond)) wb_fail((c), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

/* Expects `expr` to return `want`; on failure records both statuses and
 * dao_last_error(). Evaluates to 1 when it matched. */
#define WB_STATUS(c, expr, want) wb_status_((c), __FILE__, __LINE__, #expr, (expr), (want), NULL)
#define WB_OK(c, expr) WB_STATUS((c), (expr), DAO_OK)
/* Also expects the message to contain `needle`. */
#define WB_FAILS(c, expr, want, needle) \
  wb_status_((c), __FILE__, __LINE__, #expr, (expr), (want), (needle))

static int wb_status_(wb_ctx *c, const char *file, int line, const char *text, dao_status got,
                      dao_status want, const char *needle) {
  ++c->checks;
  if (got != want) {
    wb_fail(c, file, line, "%s returned %d (%s), expected %d (%s); last error: %s", text, (int)got,
            dao_status_string(got), (int)want, dao_status_string(want), dao_last_error());
    return 0;
  }
  if (needle != NULL && strstr(dao_last_error(), needle) == NULL) {
    wb_fail(c, file, line, "%s: message '%s' does not mention '%s'", text, dao_last_error(),
            needle);
    return 0;
  }
  return 1;
}

/* --- contents --------------------------------------------------------------- */

static unsigned char wb_value(uint64_t entry, size_t byte, unsigned generation) {
  uint64_t x = (entry + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)generation * 0xC2B2AE3D27D4EB4Full +
               (uint64_t)byte * 0x165667B19E3779F9ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return (unsigned char)(x ^ (x >> 32));
}

static void wb_fill_entry(unsigned char *p, uint64_t entry, size_t entry_size,
                          unsigned generation) {
  size_t b;
  for (b = 0; b < entry_size; ++b) p[b] = wb_value(entry, b, generation);
}

/* 1 when p holds entry `entry` of `generation`. */
static int wb_entry_is(const unsigned char *p, uint64_t entry, size_t entry_size,
                       unsigned generation) {
  size_t b;
  for (b = 0; b < entry_size; ++b)
    if (p[b] != wb_value(entry, b, generation)) return 0;
  return 1;
}

static uint64_t wb_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* Whether the scatter phase writes entry e: the same answer on every rank;
 * chosen in groups of three consecutive entries, so that there are runs. */
static int wb_scattered(uint64_t e, uint64_t seed) {
  uint64_t s = (e / 3 + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 7) * 0xD6E8FEB86659FD93ull;
  return (int)(wb_rand(&s) & 1u);
}

/* --- pieces ----------------------------------------------------------------- */

/* Gathers from three threads of this rank at once (in-process handles are
 * safe from any thread): each gathers 64 random entries of `w` (written
 * with wb_fill_entry, generation 0; entry_size at most 64) `rounds` times
 * and counts the wrong ones. `what` names the object in the failure. */
typedef struct wb_gather_job {
  dao_whole *w;
  size_t entries, entry_size;
  uint64_t seed;
  int rounds, bad;
  pthread_t thread;
} wb_gather_job;

static inline void *wb_gather_main(void *p) {
  wb_gather_job *j = (wb_gather_job *)p;
  int64_t idx[64];
  unsigned char out[64 * 64];
  int round, i;
  uint64_t s = j->seed;
  for (round = 0; round < j->rounds; ++round) {
    for (i = 0; i < 64; ++i) idx[i] = (int64_t)(wb_rand(&s) % j->entries);
    if (dao_whole_gather(j->w, idx, 64, out) != DAO_OK) {
      ++j->bad;
      continue;
    }
    for (i = 0; i < 64; ++i)
      if (!wb_entry_is(out + (size_t)i * j->entry_size, (uint64_t)idx[i], j->entry_size, 0))
        ++j->bad;
  }
  return NULL;
}

static inline void wb_gather_from_threads(wb_ctx *c, dao_whole *w, size_t entries,
                                          size_t entry_size, int rounds, const char *what) {
  wb_gather_job jobs[3];
  int k;
  WB_CHECK(c, entry_size <= 64);
  if (entry_size > 64) return;
  for (k = 0; k < 3; ++k) {
    jobs[k].w = w;
    jobs[k].entries = entries;
    jobs[k].entry_size = entry_size;
    jobs[k].seed = (uint64_t)(c->rank * 10 + k + 1);
    jobs[k].rounds = rounds;
    jobs[k].bad = 0;
    WB_CHECK(c, pthread_create(&jobs[k].thread, NULL, wb_gather_main, &jobs[k]) == 0);
  }
  for (k = 0; k < 3; ++k) {
    WB_CHECK(c, pthread_join(jobs[k].thread, NULL) == 0);
    WB_CHECKF(c, jobs[k].bad == 0, "%s: thread %d of rank %d: %d bad entries", what, k, c->rank,
              jobs[k].bad);
  }
}

static dao_whole_desc wb_desc(dao_whole_type type, dao_whole_location location, size_t entries,
                              size_t entry_size) {
  dao_whole_desc d;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.type = type;
  d.location = location;
  d.total_size = entries * entry_size;
  d.entry_size = entry_size;
  return d;
}

static dao_whole_range wb_partition(wb_ctx *c, dao_whole *w, int rank) {
  dao_whole_range r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  WB_OK(c, dao_whole_get_partition(w, rank, &r));
  return r;
}

/* The partition rule: contiguous ranges in rank order that tile every entry,
 * sizes that differ by at most one, the larger ones first. */
static void wb_check_partition(wb_ctx *c, dao_whole *w, size_t entries, size_t entry_size) {
  size_t next = 0;
  size_t q = entries / (size_t)c->size;
  size_t rem = entries % (size_t)c->size;
  int r;
  for (r = 0; r < c->size; ++r) {
    dao_whole_range p = wb_partition(c, w, r);
    size_t want = q + ((size_t)r < rem ? 1 : 0);
    WB_CHECKF(c, p.rank == r, "partition(%d).rank = %d", r, p.rank);
    WB_CHECKF(c, p.first_entry == next, "rank %d starts at %zu, expected %zu", r, p.first_entry,
              next);
    WB_CHECKF(c, p.entry_count == want, "rank %d owns %zu entries, expected %zu", r, p.entry_count,
              want);
    WB_CHECK(c, p.byte_offset == p.first_entry * entry_size);
    WB_CHECK(c, p.byte_size == p.entry_count * entry_size);
    if (p.entry_count > 0) {
      int owner = -1;
      WB_OK(c, dao_whole_entry_rank(w, (int64_t)p.first_entry, &owner));
      WB_CHECKF(c, owner == r, "entry %zu: owner %d, expected %d", p.first_entry, owner, r);
      owner = -1;
      WB_OK(c, dao_whole_entry_rank(w, (int64_t)(p.first_entry + p.entry_count - 1), &owner));
      WB_CHECKF(c, owner == r, "entry %zu: owner %d, expected %d",
                p.first_entry + p.entry_count - 1, owner, r);
    }
    next += p.entry_count;
  }
  WB_CHECKF(c, next == entries, "the ranges cover %zu entries, expected %zu", next, entries);
}

/* Gathers `count` entries and checks each against `expected_generation(e)`. */
typedef unsigned (*wb_generation_fn)(uint64_t entry, uint64_t seed, int size);

static unsigned wb_gen_initial(uint64_t e, uint64_t seed, int size) {
  (void)e;
  (void)seed;
  (void)size;
  return 0;
}

static unsigned wb_gen_after_scatter(uint64_t e, uint64_t seed, int size) {
  (void)size;
  return wb_scattered(e, seed) ? 1u : 0u;
}

static void wb_gather_check(wb_ctx *c, dao_whole *w, const int64_t *idx, size_t count,
                            size_t entry_size, wb_generation_fn gen, uint64_t seed) {
  unsigned char *out = (unsigned char *)malloc(count * entry_size + 1);
  size_t i;
  int bad = 0;
  if (out == NULL) {
    WB_CHECK(c, out != NULL);
    return;
  }
  memset(out, 0xEE, count * entry_size + 1);
  if (WB_OK(c, dao_whole_gather(w, idx, count, out))) {
    for (i = 0; i < count && bad < 3; ++i) {
      unsigned g = gen((uint64_t)idx[i], seed, c->size);
      if (!wb_entry_is(out + i * entry_size, (uint64_t)idx[i], entry_size, g)) {
        wb_fail(c, __FILE__, __LINE__, "gathered entry %lld (position %zu) is wrong",
                (long long)idx[i], i);
        ++bad;
      }
    }
    WB_CHECKF(c, out[count * entry_size] == 0xEE, "gather wrote past its %zu entries", count);
  }
  free(out);
}

/* The same through dao_whole_gather_collective(), which every rank calls:
 * each rank gathers its own `count` entries. */
static void wb_gather_collective_check(wb_ctx *c, dao_whole *w, const int64_t *idx, size_t count,
                                       size_t entry_size, wb_generation_fn gen, uint64_t seed) {
  unsigned char *out = (unsigned char *)malloc(count * entry_size + 1);
  size_t i;
  int bad = 0;
  dao_status s;
  if (out != NULL) memset(out, 0xEE, count * entry_size + 1);
  /* Every rank makes the call, also one without memory for the check. */
  s = dao_whole_gather_collective(w, idx, out != NULL ? count : 0, out);
  if (out == NULL) {
    WB_CHECK(c, out != NULL);
    return;
  }
  if (WB_STATUS(c, s, DAO_OK)) {
    for (i = 0; i < count && bad < 3; ++i) {
      unsigned g = gen((uint64_t)idx[i], seed, c->size);
      if (!wb_entry_is(out + i * entry_size, (uint64_t)idx[i], entry_size, g)) {
        wb_fail(c, __FILE__, __LINE__, "collectively gathered entry %lld (position %zu) is wrong",
                (long long)idx[i], i);
        ++bad;
      }
    }
    WB_CHECKF(c, out[count * entry_size] == 0xEE, "collective gather wrote past its %zu entries",
              count);
  }
  free(out);
}

/* --- one object, start to end --------------------------------------------------
 *
 * Creates an object, checks the partition and the pointers, fills every
 * rank's part through its local pointer, gathers random and consecutive
 * indices, scatters to a random half of the entries (each entry written by
 * one rank, in random order), gathers everything again, destroys.
 * Returns 0 when the type is not supported here (then every rank also got
 * DAO_ERR_UNSUPPORTED from the create), 1 otherwise. */
static int wb_roundtrip(wb_ctx *c, dao_whole_type type, dao_whole_location location, size_t entries,
                        size_t entry_size, uint64_t seed) {
  dao_whole_desc d = wb_desc(type, location, entries, entry_size);
  dao_whole *w = NULL;
  dao_whole_info info;
  dao_whole_range mine;
  unsigned char *local = NULL;
  void *p = NULL;
  uint64_t rng = seed * 7919u + (uint64_t)c->rank * 104729u + 1u;
  size_t count, i;
  int64_t *idx;
  unsigned char *buf;
  int r;
  const int mapped = type != DAO_WHOLE_DISTRIBUTED;

  if (dao_whole_supported(c->comm, type, location) == DAO_ERR_UNSUPPORTED) {
    WB_STATUS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_UNSUPPORTED);
    WB_CHECK(c, w == NULL);
    return 0;
  }
  if (!WB_OK(c, dao_whole_create(c->comm, &d, &w))) return 1;

  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  WB_OK(c, dao_whole_get_info(w, &info));
  WB_CHECK(c, info.type == type && info.location == location);
  WB_CHECK(c, info.total_size == entries * entry_size && info.entry_size == entry_size);
  WB_CHECK(c, info.entry_count == entries && info.rank == c->rank && info.size == c->size);
  wb_check_partition(c, w, entries, entry_size);

  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  WB_OK(c, dao_whole_get_local(w, &p, &mine));
  local = (unsigned char *)p;
  WB_CHECK(c, mine.rank == c->rank);
  {
    dao_whole_range again = wb_partition(c, w, c->rank);
    WB_CHECK(c, mine.first_entry == again.first_entry && mine.entry_count == again.entry_count);
  }
  WB_CHECK(c, mine.entry_count == 0 || local != NULL);

  /* Fill this rank's part. */
  for (i = 0; i < mine.entry_count; ++i)
    wb_fill_entry(local + i * entry_size, mine.first_entry + i, entry_size, 0);

  if (type == DAO_WHOLE_CONTINUOUS) {
    void *base = NULL;
    WB_OK(c, dao_whole_get_base(w, &base));
    WB_CHECK(c, base != NULL && local == (unsigned char *)base + mine.byte_offset);
  } else {
    void *base = (void *)1;
    WB_FAILS(c, dao_whole_get_base(w, &base), DAO_ERR_UNSUPPORTED, "single range");
  }
  WB_OK(c, dao_comm_barrier(c->comm));

  /* Every part, read through the pointers where they are mapped. */
  for (r = 0; r < c->size; ++r) {
    void *q = NULL;
    dao_whole_range pr = wb_partition(c, w, r);
    if (!mapped && r != c->rank) {
      WB_FAILS(c, dao_whole_get_rank_pointer(w, r, &q), DAO_ERR_UNSUPPORTED, "not mapped");
      continue;
    }
    if (!WB_OK(c, dao_whole_get_rank_pointer(w, r, &q))) continue;
    if (r == c->rank) WB_CHECK(c, q == (void *)local);
    for (i = 0; i < pr.entry_count; ++i) {
      if (!wb_entry_is((unsigned char *)q + i * entry_size, pr.first_entry + i, entry_size, 0)) {
        wb_fail(c, __FILE__, __LINE__, "rank %d's entry %zu read through its pointer is wrong", r,
                pr.first_entry + i);
        break;
      }
    }
  }
  if (type == DAO_WHOLE_CONTINUOUS) {
    void *base = NULL;
    WB_OK(c, dao_whole_get_base(w, &base));
    for (i = 0; i < entries; ++i) {
      if (!wb_entry_is((unsigned char *)base + i * entry_size, i, entry_size, 0)) {
        wb_fail(c, __FILE__, __LINE__, "entry %zu at base + %zu is wrong", i, i * entry_size);
        break;
      }
    }
  }

  /* Gathers: random indices (repeats allowed), then every entry in order
   * (runs), then nothing at all. */
  count = 3 * entries + 17;
  idx = (int64_t *)malloc(count * sizeof *idx);
  buf = (unsigned char *)malloc(count * entry_size);
  if (idx == NULL || buf == NULL) {
    WB_CHECK(c, idx != NULL && buf != NULL);
  } else {
    for (i = 0; i < count; ++i) idx[i] = (int64_t)(wb_rand(&rng) % entries);
    wb_gather_check(c, w, idx, count, entry_size, wb_gen_initial, seed);
    /* Collectively, each rank its own number of entries (the last rank
       none when there are several). */
    wb_gather_collective_check(c, w, idx,
                               c->size > 1 && c->rank == c->size - 1 ? 0 : count - (size_t)c->rank,
                               entry_size, wb_gen_initial, seed);
    for (i = 0; i < entries; ++i) idx[i] = (int64_t)i;
    wb_gather_check(c, w, idx, entries, entry_size, wb_gen_initial, seed);
    wb_gather_collective_check(c, w, idx, entries, entry_size, wb_gen_initial, seed);
    WB_OK(c, dao_whole_gather(w, NULL, 0, NULL));
    WB_OK(c, dao_whole_gather_collective(w, NULL, 0, NULL));
  }
  WB_OK(c, dao_comm_barrier(c->comm));

  /* Scatter: rank r writes generation 1 to the chosen entries of its block
   * of indices (r * entries / size up to the next rank's, blocks that cross
   * the partition's boundaries), the first half in random order, the rest
   * in order, so that consecutive chosen entries go as runs. */
  if (idx != NULL && buf != NULL) {
    size_t n = 0, k;
    const size_t lo = (size_t)c->rank * entries / (size_t)c->size;
    const size_t hi = (size_t)(c->rank + 1) * entries / (size_t)c->size;
    for (i = lo; i < hi; ++i)
      if (wb_scattered(i, seed)) idx[n++] = (int64_t)i;
    for (k = n / 2; k > 1; --k) {
      size_t j = (size_t)(wb_rand(&rng) % k);
      int64_t t = idx[k - 1];
      idx[k - 1] = idx[j];
      idx[j] = t;
    }
    for (i = 0; i < n; ++i) wb_fill_entry(buf + i * entry_size, (uint64_t)idx[i], entry_size, 1);
    /* Odd seeds scatter collectively (every rank calls), even ones
       one-sidedly; the result is the same. */
    if (seed % 2 == 1) {
      WB_OK(c, dao_whole_scatter_collective(w, buf, idx, n));
      WB_OK(c, dao_whole_scatter_collective(w, NULL, NULL, 0));
    } else {
      WB_OK(c, dao_whole_scatter(w, buf, idx, n));
      WB_OK(c, dao_whole_scatter(w, NULL, NULL, 0));
    }
  }
  WB_OK(c, dao_comm_barrier(c->comm));
  if (idx != NULL && buf != NULL) {
    /* Everything, in a random order, against the reference. */
    for (i = 0; i < entries; ++i) idx[i] = (int64_t)i;
    for (i = entries; i > 1; --i) {
      size_t j = (size_t)(wb_rand(&rng) % i);
      int64_t t = idx[i - 1];
      idx[i - 1] = idx[j];
      idx[j] = t;
    }
    wb_gather_check(c, w, idx, entries, entry_size, wb_gen_after_scatter, seed);
    /* And this rank's own part, directly. */
    for (i = 0; i < mine.entry_count; ++i) {
      uint64_t e = mine.first_entry + i;
      if (!wb_entry_is(local + i * entry_size, e, entry_size, wb_scattered(e, seed) ? 1u : 0u)) {
        wb_fail(c, __FILE__, __LINE__, "local entry %llu after the scatter is wrong",
                (unsigned long long)e);
        break;
      }
    }
  }
  free(idx);
  free(buf);
  WB_OK(c, dao_comm_barrier(c->comm));
  WB_OK(c, dao_whole_destroy(w));
  return 1;
}

/* Every type on a location, over shapes that test the partition rule:
 * fewer entries than ranks, one entry, entry sizes that are not powers of
 * two, sizes that do not divide evenly. Returns how many types were
 * supported. */
static int wb_all_shapes(wb_ctx *c, dao_whole_location location) {
  static const size_t shapes[][2] = {{1, 8},    {3, 24},   {5, 3},     {7, 7},    {64, 12},
                                     {1000, 1}, {257, 40}, {4099, 56}, {33, 1000}};
  int supported = 0;
  int t;
  size_t s;
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    int ok = 1;
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
      ok = wb_roundtrip(c, (dao_whole_type)t, location, shapes[s][0], shapes[s][1],
                        (uint64_t)(t * 100 + (int)s));
      if (!ok) break;
    }
    supported += ok;
  }
  return supported;
}

/* Sizes that are not whole entries, and other bad descriptions: every rank
 * gets the same status. */
static void wb_bad_descriptions(wb_ctx *c) {
  dao_whole *w = (dao_whole *)1;
  dao_whole_desc d = wb_desc(DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 10, 8);
  d.total_size = 1000;
  d.entry_size = 24;
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "not a multiple");
  WB_CHECK(c, w == NULL);
  d.entry_size = 0;
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "entry_size");
  d = wb_desc(DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 0, 8);
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "total_size");
  d = wb_desc((dao_whole_type)7, DAO_WHOLE_HOST, 10, 8);
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "dao_whole_type");
  d = wb_desc(DAO_WHOLE_CHUNKED, (dao_whole_location)9, 10, 8);
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "dao_whole_location");
  d = wb_desc(DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 10, 8);
  d.struct_size = 8;
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "struct_size");
  WB_OK(c, dao_comm_barrier(c->comm));
}

/* Ranks that disagree, or are in different calls, or of which one passes a
 * bad argument: every rank fails alike, nobody waits for ever, and nothing
 * changes (a barrier afterwards still meets). Needs 2 ranks or more. */
static void wb_disagreement(wb_ctx *c) {
  dao_whole *w = NULL, *w2 = NULL;
  dao_whole_desc d;
  const int last = c->size - 1;
  if (c->size < 2) return;

  d = wb_desc(DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 100 + (size_t)(c->rank == last), 8);
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT,
           "disagree on total_size");
  WB_CHECK(c, w == NULL);

  d = wb_desc(c->rank == last ? DAO_WHOLE_DISTRIBUTED : DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 100, 8);
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, "disagree on type");

  d = wb_desc(DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 100, c->rank == 0 ? 8 : 4);
  d.total_size = 800;
  WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT,
           "disagree on entry_size");

  /* One rank's bad argument reaches every rank, naming that rank. */
  {
    char needle[64];
    d = wb_desc(DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 100, 8);
    snprintf(needle, sizeof needle, "on rank %d of %d: out must not be NULL", last, c->size);
    WB_FAILS(c, dao_whole_create(c->comm, &d, c->rank == last ? NULL : &w),
             DAO_ERR_INVALID_ARGUMENT, needle);
    WB_CHECK(c, w == NULL);
    d.total_size = c->rank == 0 ? 803 : 800;
    snprintf(needle, sizeof needle, "on rank 0 of %d", c->size);
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_INVALID_ARGUMENT, needle);
  }
  WB_OK(c, dao_comm_barrier(c->comm));

  /* Different collective calls, and different objects. */
  d = wb_desc(DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 100, 8);
  if (!WB_OK(c, dao_whole_create(c->comm, &d, &w))) return;
  if (!WB_OK(c, dao_whole_create(c->comm, &d, &w2))) {
    WB_OK(c, dao_whole_destroy(w));
    return;
  }
  if (c->rank == 0) {
    WB_FAILS(c, dao_comm_barrier(c->comm), DAO_ERR_INVALID_ARGUMENT, "different collective calls");
  } else {
    WB_FAILS(c, dao_whole_load(w, "/nonexistent/dao-whole"), DAO_ERR_INVALID_ARGUMENT,
             "different collective calls");
  }
  WB_FAILS(c, dao_whole_destroy(c->rank == last ? w2 : w), DAO_ERR_INVALID_ARGUMENT,
           "different objects");
  WB_FAILS(c, dao_whole_store(w, c->rank == last ? "/tmp/dao-whole-a" : "/tmp/dao-whole-b"),
           DAO_ERR_INVALID_ARGUMENT, "disagree on path");
  WB_FAILS(c, dao_whole_store(w, c->rank == 0 ? NULL : "/tmp/dao-whole-b"),
           DAO_ERR_INVALID_ARGUMENT, "path must not be NULL");
  /* A collective gather or scatter with one rank's bad index fails on
     every rank, naming that rank, and copies nothing anywhere; so does one
     where the ranks pass different objects, or are in different calls. */
  {
    int64_t good[2] = {1, 98}, bad[2] = {1, 100};
    unsigned char out[16], in[16];
    char needle[96];
    size_t k;
    memset(out, 0x11, sizeof out);
    if (c->rank == 0) WB_OK(c, dao_whole_scatter(w, out, good, 2));
    WB_OK(c, dao_comm_barrier(c->comm));
    memset(out, 0xAB, sizeof out);
    memset(in, 0x5A, sizeof in);
    snprintf(needle, sizeof needle,
             "on rank %d of %d: dao_whole_gather_collective: indices[1] = 100", last, c->size);
    WB_FAILS(c, dao_whole_gather_collective(w, c->rank == last ? bad : good, 2, out),
             DAO_ERR_INVALID_ARGUMENT, needle);
    for (k = 0; k < sizeof out; ++k) WB_CHECK(c, out[k] == 0xAB);
    snprintf(needle, sizeof needle, "on rank 0 of %d: dao_whole_scatter_collective: src must not",
             c->size);
    WB_FAILS(c, dao_whole_scatter_collective(w, c->rank == 0 ? NULL : in, good, 2),
             DAO_ERR_INVALID_ARGUMENT, needle);
    WB_FAILS(c, dao_whole_gather_collective(c->rank == last ? w2 : w, good, 2, out),
             DAO_ERR_INVALID_ARGUMENT, "different objects");
    if (c->rank == 0) {
      WB_FAILS(c, dao_comm_barrier(c->comm), DAO_ERR_INVALID_ARGUMENT,
               "different collective calls");
    } else {
      WB_FAILS(c, dao_whole_scatter_collective(w, in, good, 2), DAO_ERR_INVALID_ARGUMENT,
               "different collective calls");
    }
    for (k = 0; k < sizeof out; ++k) WB_CHECK(c, out[k] == 0xAB);
    /* Nothing was scattered: entry 1 and 98 still hold what they held. */
    WB_OK(c, dao_whole_gather(w, good, 2, out));
    for (k = 0; k < sizeof out; ++k) WB_CHECK(c, out[k] == 0x11);
    WB_OK(c, dao_comm_barrier(c->comm));
  }
  /* Nothing was destroyed: both objects still work, then go. */
  {
    int64_t i = 99;
    unsigned char out[8];
    WB_OK(c, dao_whole_gather(w, &i, 1, out));
    WB_OK(c, dao_whole_gather(w2, &i, 1, out));
  }
  WB_OK(c, dao_whole_destroy(w));
  WB_OK(c, dao_whole_destroy(w2));
  WB_OK(c, dao_comm_barrier(c->comm));
}

/* Store one object, check the file byte by byte, load it into an object of
 * another type; missing and wrong-sized files; an unwritable path. */
static void wb_file_roundtrip(wb_ctx *c, dao_whole_type from, dao_whole_type to,
                              dao_whole_location location, size_t entries, size_t entry_size) {
  char path[512], small[520], missing[520], baddir[540];
  dao_whole_desc d = wb_desc(from, location, entries, entry_size);
  dao_whole *a = NULL, *b = NULL;
  dao_whole_range mine;
  void *p = NULL;
  size_t i;
  snprintf(path, sizeof path, "%s-%s-%s.bin", c->file_prefix, dao_whole_type_name(from),
           dao_whole_type_name(to));
  snprintf(small, sizeof small, "%s.small", path);
  snprintf(missing, sizeof missing, "%s.missing", path);
  snprintf(baddir, sizeof baddir, "%s.nodir/x/y.bin", path);

  if (dao_whole_supported(c->comm, from, location) != DAO_OK ||
      dao_whole_supported(c->comm, to, location) != DAO_OK)
    return;
  if (!WB_OK(c, dao_whole_create(c->comm, &d, &a))) return;
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  WB_OK(c, dao_whole_get_local(a, &p, &mine));
  for (i = 0; i < mine.entry_count; ++i)
    wb_fill_entry((unsigned char *)p + i * entry_size, mine.first_entry + i, entry_size, 3);
  WB_OK(c, dao_whole_store(a, path));

  /* The file is the entries in index order and nothing else. */
  if (c->rank == 0) {
    FILE *f = fopen(path, "rb");
    unsigned char *e = (unsigned char *)malloc(entry_size);
    WB_CHECKF(c, f != NULL, "cannot open %s", path);
    if (f != NULL && e != NULL) {
      for (i = 0; i < entries; ++i) {
        if (fread(e, 1, entry_size, f) != entry_size || !wb_entry_is(e, i, entry_size, 3)) {
          wb_fail(c, __FILE__, __LINE__, "entry %zu of the stored file is wrong", i);
          break;
        }
      }
      WB_CHECK(c, fgetc(f) == EOF);
    }
    if (f != NULL) fclose(f);
    free(e);
    f = fopen(small, "wb");
    if (f != NULL) {
      fputs("too short", f);
      fclose(f);
    }
  }
  WB_OK(c, dao_comm_barrier(c->comm));

  d.type = to;
  if (WB_OK(c, dao_whole_create(c->comm, &d, &b))) {
    int64_t *idx = (int64_t *)malloc(entries * sizeof *idx);
    void *q = NULL;
    WB_OK(c, dao_whole_get_local(b, &q, NULL));
    for (i = 0; i < mine.entry_count; ++i)
      wb_fill_entry((unsigned char *)q + i * entry_size, mine.first_entry + i, entry_size, 5);
    WB_FAILS(c, dao_whole_load(b, missing), DAO_ERR_NOT_FOUND, "cannot open");
    WB_FAILS(c, dao_whole_load(b, small), DAO_ERR_INVALID_ARGUMENT, "bytes");
    /* Nothing was read: the contents are still generation 5. */
    for (i = 0; i < mine.entry_count; ++i) {
      if (!wb_entry_is((unsigned char *)q + i * entry_size, mine.first_entry + i, entry_size, 5)) {
        wb_fail(c, __FILE__, __LINE__, "a failed load changed entry %zu", mine.first_entry + i);
        break;
      }
    }
    WB_OK(c, dao_whole_load(b, path));
    if (idx != NULL) {
      for (i = 0; i < entries; ++i) idx[i] = (int64_t)(entries - 1 - i);
      {
        unsigned char *out = (unsigned char *)malloc(entries * entry_size);
        if (out != NULL && WB_OK(c, dao_whole_gather(b, idx, entries, out))) {
          for (i = 0; i < entries; ++i) {
            if (!wb_entry_is(out + i * entry_size, entries - 1 - i, entry_size, 3)) {
              wb_fail(c, __FILE__, __LINE__, "loaded entry %zu is wrong", entries - 1 - i);
              break;
            }
          }
        }
        free(out);
      }
    }
    free(idx);
    WB_OK(c, dao_whole_destroy(b));
  }
  WB_FAILS(c, dao_whole_store(a, baddir), DAO_ERR_BACKEND, "cannot create");
  WB_OK(c, dao_whole_destroy(a));
  WB_OK(c, dao_comm_barrier(c->comm));
  if (c->rank == 0) {
    remove(path);
    remove(small);
  }
  WB_OK(c, dao_comm_barrier(c->comm));
}

#endif /* DAO_WHOLE_BODY_H */
