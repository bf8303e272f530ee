/*
 * bench_whole: gather throughput of libdao's partitioned memory over MPI
 * (dao/whole_mpi.h), host memory, for 1, 2 and 4 ranks, all in one run:
 *
 *  - continuous and chunked objects (mapped: MPI shared-memory windows,
 *    every entry read directly),
 *  - a distributed object (each rank's part in an MPI window, other ranks'
 *    entries read with MPI_Get in a passive-target epoch),
 *  - the same distributed object gathered with dao_whole_gather_collective
 *    (every rank calls: MPI_Alltoall of counts, MPI_Alltoallv of indices
 *    and of entries),
 *  - a baseline written here with plain MPI: the same table split by the
 *    same rule into ordinary memory, and a gather that sends each owner its
 *    indices with MPI_Alltoallv and gets the entries back with a second
 *    MPI_Alltoallv (what a code without one-sided access does).
 *
 * Run it as `mpiexec -n 4 bench_whole`: the world is split into groups of
 * 1, 2 and 4 ranks (ranks outside a group wait). The table has the same
 * total size for every group. Every rank of a group gathers --batch random
 * indices (uniform over the whole table) per iteration; an iteration of the
 * whole-memory rows is one dao_whole_gather(), of the baseline one
 * collective exchange. A repetition times --iters iterations from a barrier
 * to a barrier after the last rank is done (the longest such time on any
 * rank counts); the rows are timed in rounds,
 * one repetition of each row per round, so that a slow spell of a shared
 * machine falls on all rows alike, and the median round is reported:
 * entries and bytes per second gathered by the whole group. --sweep runs
 * entry sizes 8 B, 64 B, 512 B and 4 KiB (tables of 64 MiB, 8 MiB gathered
 * per rank per iteration, at most 65,536 indices) and prints the ratio of
 * every row to the plain exchange, with the targets of issue 22: the
 * collective gather at least 1.0x at every entry size and group, and the
 * mapped types ahead of it.
 *
 * Before timing, one gather of every row is checked against the known
 * contents of every entry. Exit status: 0 when every row ran and gathered
 * the right entries (timings never fail a run), 1 otherwise, 2 for bad
 * flags. Measured figures: docs/whole.md.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf, gethostname */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <dao.h>
#include <dao/whole_mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

#ifndef DAO_BENCH_BUILD_TYPE
#define DAO_BENCH_BUILD_TYPE ""
#endif

#define MAX_ROUNDS 64
#define METHODS 5
#define COLLECTIVE 3 /* the row of dao_whole_gather_collective */
#define SWEEP_SIZES 4

static const char *const method_names[METHODS] = {
    "continuous", "chunked", "distributed", "distributed collective", "alltoallv (plain MPI)"};

/* One gather of row m: the whole-memory rows on w[0..2], the collective
   one on the distributed object. */
static void gather_row(int m, dao_whole *const *w, const int64_t *idx, size_t n,
                       unsigned char *out);

static int world_rank, world_size;

/* Exits every rank with status 1 after printing why (from any rank). */
static void die(const char *what, const char *detail) {
  fprintf(stderr, "bench_whole: rank %d: %s: %s\n", world_rank, what, detail);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void check(dao_status s, const char *what) {
  if (s != DAO_OK) die(what, dao_last_error());
}

/* The contents of byte b of entry e: known to every rank without exchange. */
static unsigned char value(uint64_t e, size_t b) {
  uint64_t x = (e + 1) * 0x9E3779B97F4A7C15ull + (uint64_t)b * 0x165667B19E3779F9ull;
  x ^= x >> 31;
  return (unsigned char)(x ^ (x >> 17));
}

static void fill(unsigned char *p, size_t first, size_t count, size_t entry_size) {
  size_t i, b;
  for (i = 0; i < count; ++i)
    for (b = 0; b < entry_size; ++b) p[i * entry_size + b] = value(first + i, b);
}

static void verify(const unsigned char *out, const int64_t *idx, size_t n, size_t entry_size,
                   const char *method, int ranks) {
  size_t i, b;
  for (i = 0; i < n; ++i)
    for (b = 0; b < entry_size; ++b)
      if (out[i * entry_size + b] != value((uint64_t)idx[i], b)) {
        char text[160];
        snprintf(text, sizeof text, "%d rank(s): entry %lld (position %zu) is wrong", ranks,
                 (long long)idx[i], i);
        die(method, text);
      }
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* --- the plain-MPI baseline ------------------------------------------------------ */

typedef struct plain {
  MPI_Comm comm;
  int rank, size;
  size_t entries, entry_size, q, rem;
  size_t first_mine;
  unsigned char *part;
  int *counts, *displs, *rcounts, *rdispls, *bcounts, *bdispls, *brcounts, *brdispls, *cursor;
  int64_t *sorted, *recv_idx;
  size_t *order;
  unsigned char *reply, *staged;
  size_t reply_cap;
} plain;

static size_t plain_first(const plain *p, int r) {
  return (size_t)r * p->q + ((size_t)r < p->rem ? (size_t)r : p->rem);
}

/* The same partition rule as libdao's. */
static int plain_owner(const plain *p, size_t i) {
  size_t split = p->rem * (p->q + 1);
  if (i < split) return (int)(i / (p->q + 1));
  return (int)(p->rem + (i - split) / p->q);
}

static void plain_init(plain *p, MPI_Comm comm, size_t entries, size_t entry_size, size_t batch) {
  size_t count;
  memset(p, 0, sizeof *p);
  p->comm = comm;
  MPI_Comm_rank(comm, &p->rank);
  MPI_Comm_size(comm, &p->size);
  p->entries = entries;
  p->entry_size = entry_size;
  p->q = entries / (size_t)p->size;
  p->rem = entries % (size_t)p->size;
  p->first_mine = plain_first(p, p->rank);
  count = plain_first(p, p->rank + 1) - p->first_mine;
  p->part = (unsigned char *)xmalloc(count * entry_size);
  fill(p->part, p->first_mine, count, entry_size);
  p->counts = (int *)xmalloc(9 * (size_t)p->size * sizeof(int));
  p->displs = p->counts + p->size;
  p->rcounts = p->displs + p->size;
  p->rdispls = p->rcounts + p->size;
  p->bcounts = p->rdispls + p->size;
  p->bdispls = p->bcounts + p->size;
  p->brcounts = p->bdispls + p->size;
  p->brdispls = p->brcounts + p->size;
  p->cursor = p->brdispls + p->size;
  p->sorted = (int64_t *)xmalloc(batch * sizeof(int64_t));
  p->order = (size_t *)xmalloc(batch * sizeof(size_t));
  p->staged = (unsigned char *)xmalloc(batch * entry_size);
  p->reply_cap = batch;
  p->recv_idx = (int64_t *)xmalloc(batch * sizeof(int64_t));
  p->reply = (unsigned char *)xmalloc(batch * entry_size);
}

static void plain_free(plain *p) {
  free(p->part);
  free(p->counts);
  free(p->sorted);
  free(p->order);
  free(p->staged);
  free(p->recv_idx);
  free(p->reply);
}

/* Collective: every rank of p->comm gathers its n indices into out. */
static void plain_gather(plain *p, const int64_t *idx, size_t n, unsigned char *out) {
  const size_t g = p->entry_size;
  size_t i, total = 0;
  int r;
  for (r = 0; r < p->size; ++r) p->counts[r] = 0;
  for (i = 0; i < n; ++i) ++p->counts[plain_owner(p, (size_t)idx[i])];
  for (r = 0; r < p->size; ++r) {
    p->displs[r] = r == 0 ? 0 : p->displs[r - 1] + p->counts[r - 1];
    p->cursor[r] = p->displs[r];
  }
  for (i = 0; i < n; ++i) {
    int o = plain_owner(p, (size_t)idx[i]);
    int pos = p->cursor[o]++;
    p->sorted[pos] = idx[i];
    p->order[pos] = i;
  }
  MPI_Alltoall(p->counts, 1, MPI_INT, p->rcounts, 1, MPI_INT, p->comm);
  for (r = 0; r < p->size; ++r) {
    p->rdispls[r] = r == 0 ? 0 : p->rdispls[r - 1] + p->rcounts[r - 1];
    total += (size_t)p->rcounts[r];
  }
  if (total > p->reply_cap) {
    p->reply_cap = total;
    free(p->recv_idx);
    free(p->reply);
    p->recv_idx = (int64_t *)xmalloc(total * sizeof(int64_t));
    p->reply = (unsigned char *)xmalloc(total * g);
  }
  MPI_Alltoallv(p->sorted, p->counts, p->displs, MPI_INT64_T, p->recv_idx, p->rcounts, p->rdispls,
                MPI_INT64_T, p->comm);
  for (i = 0; i < total; ++i)
    memcpy(p->reply + i * g, p->part + ((size_t)p->recv_idx[i] - p->first_mine) * g, g);
  for (r = 0; r < p->size; ++r) {
    p->bcounts[r] = p->rcounts[r] * (int)g;
    p->bdispls[r] = p->rdispls[r] * (int)g;
    p->brcounts[r] = p->counts[r] * (int)g;
    p->brdispls[r] = p->displs[r] * (int)g;
  }
  MPI_Alltoallv(p->reply, p->bcounts, p->bdispls, MPI_BYTE, p->staged, p->brcounts, p->brdispls,
                MPI_BYTE, p->comm);
  for (i = 0; i < n; ++i) memcpy(out + p->order[i] * g, p->staged + i * g, g);
}

static void gather_row(int m, dao_whole *const *w, const int64_t *idx, size_t n,
                       unsigned char *out) {
  if (m < 3) {
    check(dao_whole_gather(w[m], idx, n, out), "dao_whole_gather");
  } else {
    check(dao_whole_gather_collective(w[2], idx, n, out), "dao_whole_gather_collective");
  }
}

/* --- one group of ranks -------------------------------------------------------- */

typedef struct results {
  double entries_per_s[METHODS]; /* median round, whole group */
} results;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static results run_group(MPI_Comm comm, size_t entries, size_t entry_size, size_t batch, int iters,
                         int rounds) {
  results res;
  dao_comm *dc = NULL;
  dao_whole *w[3] = {NULL, NULL, NULL};
  plain base;
  int rank, size, m, it, round;
  int64_t **idx;
  unsigned char *out;
  double samples[METHODS][MAX_ROUNDS];
  uint64_t seed;

  memset(&res, 0, sizeof res);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  seed = 0x1234567ull + (uint64_t)rank * 7919u;

  check(dao_comm_create_mpi(comm, dao_place_cpu(), &dc), "dao_comm_create_mpi");
  for (m = 0; m < 3; ++m) {
    dao_whole_desc d;
    dao_whole_range r;
    void *local = NULL;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.type = (dao_whole_type)m; /* continuous, chunked, distributed */
    d.location = DAO_WHOLE_HOST;
    d.total_size = entries * entry_size;
    d.entry_size = entry_size;
    check(dao_whole_create(dc, &d, &w[m]), "dao_whole_create");
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    check(dao_whole_get_local(w[m], &local, &r), "dao_whole_get_local");
    fill((unsigned char *)local, r.first_entry, r.entry_count, entry_size);
  }
  check(dao_comm_barrier(dc), "dao_comm_barrier");
  plain_init(&base, comm, entries, entry_size, batch);

  idx = (int64_t **)xmalloc((size_t)iters * sizeof *idx);
  for (it = 0; it < iters; ++it) {
    size_t i;
    idx[it] = (int64_t *)xmalloc(batch * sizeof(int64_t));
    for (i = 0; i < batch; ++i) idx[it][i] = (int64_t)(rng_next(&seed) % entries);
  }
  out = (unsigned char *)xmalloc(batch * entry_size);

  /* One checked gather per row (also the warm-up). */
  for (m = 0; m < METHODS; ++m) {
    memset(out, 0, batch * entry_size);
    if (m < METHODS - 1) {
      gather_row(m, w, idx[0], batch, out);
    } else {
      plain_gather(&base, idx[0], batch, out);
    }
    verify(out, idx[0], batch, entry_size, method_names[m], size);
  }

  for (round = 0; round < rounds; ++round) {
    for (m = 0; m < METHODS; ++m) {
      double t0, t, slowest = 0;
      MPI_Barrier(comm);
      t0 = MPI_Wtime();
      for (it = 0; it < iters; ++it) {
        if (m < METHODS - 1) {
          gather_row(m, w, idx[it], batch, out);
        } else {
          plain_gather(&base, idx[it], batch, out);
        }
      }
      /* Until the last rank is done: with more ranks than cores, a rank
       * that starts late must not hide the time it waited. */
      MPI_Barrier(comm);
      t = MPI_Wtime() - t0;
      MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
      samples[m][round] = (double)size * (double)batch * (double)iters / slowest;
    }
  }
  for (m = 0; m < METHODS; ++m) {
    qsort(samples[m], (size_t)rounds, sizeof(double), cmp_double);
    res.entries_per_s[m] = samples[m][rounds / 2];
  }

  for (it = 0; it < iters; ++it) free(idx[it]);
  free(idx);
  free(out);
  plain_free(&base);
  for (m = 0; m < 3; ++m) check(dao_whole_destroy(w[m]), "dao_whole_destroy");
  check(dao_comm_destroy(dc), "dao_comm_destroy");
  return res;
}

static void usage(const char *prog) {
  printf("Usage: mpiexec -n 4 %s [--quick] [--sweep] [--entries N] [--entry-size B]\n"
         "                          [--batch K] [--iters I] [--rounds R]\n"
         "Gather throughput of libdao partitioned memory (continuous, chunked, distributed)\n"
         "against a plain MPI_Alltoallv gather, host memory, for groups of 1, 2 and 4 ranks.\n"
         "  --entries N     entries in the table (default 1048576; --quick 16384)\n"
         "  --entry-size B  bytes per entry (default 128)\n"
         "  --batch K       random indices per rank per iteration (default 65536; --quick 1024)\n"
         "  --iters I       iterations per timed repetition (default 10; --quick 3)\n"
         "  --rounds R      repetitions of every row, median reported (default 5; --quick 1)\n"
         "  --sweep         entry sizes 8, 64, 512 and 4096 B: tables of 64 MiB and 8 MiB\n"
         "                  gathered per rank per iteration (at most 65536 indices); --entries\n"
         "                  and --batch, when given, cap them\n",
         prog);
}

int main(int argc, char **argv) {
  static const char *const valued[] = {"--entries", "--entry-size", "--batch", "--iters",
                                       "--rounds"};
  const char *prog = "bench_whole";
  size_t entries = 1u << 20, entry_size = 128, batch = 65536;
  int iters = 10, rounds = 5, quick = 0, set_entries = 0, set_batch = 0, set_iters = 0,
      set_rounds = 0;
  int i, g, provided = 0;
  static const int groups[] = {1, 2, 4};
  results all[SWEEP_SIZES][3];
  size_t sizes_run[SWEEP_SIZES] = {0, 0, 0, 0};
  int sweep = 0, sz;
  int ran[3] = {0, 0, 0};
  char host[256] = "?";
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  for (i = 1; i < argc; ++i) {
    const char *v = NULL;
    const char *flag = match_valued_flag(prog, argc, argv, &i, valued, 5, &v);
    if (flag == NULL) {
      if (strcmp(argv[i], "--quick") == 0) {
        quick = 1;
      } else if (strcmp(argv[i], "--sweep") == 0) {
        sweep = 1;
      } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
        usage(prog);
        return 0;
      } else {
        bad_flag(prog, "unknown argument '%s'", argv[i]);
      }
    } else if (strcmp(flag, "--entries") == 0) {
      entries = (size_t)parse_count(prog, flag, v, 1, (uint64_t)1 << 40);
      set_entries = 1;
    } else if (strcmp(flag, "--entry-size") == 0) {
      entry_size = (size_t)parse_count(prog, flag, v, 1, 1 << 20);
    } else if (strcmp(flag, "--batch") == 0) {
      batch = (size_t)parse_count(prog, flag, v, 1, (uint64_t)1 << 26);
      set_batch = 1;
    } else if (strcmp(flag, "--iters") == 0) {
      iters = (int)parse_count(prog, flag, v, 1, 100000);
      set_iters = 1;
    } else if (strcmp(flag, "--rounds") == 0) {
      rounds = (int)parse_count(prog, flag, v, 1, MAX_ROUNDS);
      set_rounds = 1;
    }
  }
  if (quick) {
    if (!set_entries) entries = 1u << 14;
    if (!set_batch) batch = 1024;
    if (!set_iters) iters = 3;
    if (!set_rounds) rounds = 1;
  }
  if (batch * entry_size > (size_t)1 << 30) bad_flag(prog, "--batch x --entry-size is over 1 GiB");

  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  gethostname(host, sizeof host - 1);

  if (world_rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    char load[128] = "unknown";
    int len = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
      if (fgets(load, sizeof load, f) == NULL) snprintf(load, sizeof load, "unknown");
      load[strcspn(load, "\n")] = '\0';
      fclose(f);
    }
    MPI_Get_library_version(lib, &len);
    for (i = 0; lib[i] != '\0'; ++i)
      if (lib[i] == '\n' || lib[i] == ',') {
        lib[i] = '\0';
        break;
      }
    printf("bench_whole: gather throughput of partitioned host memory over MPI\n");
    printf(
        "libdao %s, %s, build type %s%s\n", dao_version_string(), lib, DAO_BENCH_BUILD_TYPE,
        is_optimised_build_type(DAO_BENCH_BUILD_TYPE) ? "" : " (NOT optimised: timings mislead)");
    printf("%d process(es) on %s, %ld core(s)%s; load average %s\n", world_size, host, cores,
           cores > 0 && world_size > cores
               ? " (more ranks than cores: the larger groups time-share cores)"
               : "",
           load);
    if (world_size < 4) printf("(run with 4 processes for the 4-rank rows)\n");
    fflush(stdout);
  }

  for (sz = 0; sz < (sweep ? SWEEP_SIZES : 1); ++sz) {
    size_t e_size = entry_size, e_count = entries, e_batch = batch;
    if (sweep) {
      static const size_t sizes[SWEEP_SIZES] = {8, 64, 512, 4096};
      e_size = sizes[sz];
      e_count = ((size_t)64 << 20) / e_size;
      e_batch = ((size_t)8 << 20) / e_size;
      if (e_batch > 65536) e_batch = 65536;
      if (set_entries && entries < e_count) e_count = entries;
      if (set_batch && batch < e_batch) e_batch = batch;
    }
    sizes_run[sz] = e_size;
    for (g = 0; g < 3; ++g) {
      MPI_Comm comm;
      const int k = groups[g];
      if (k > world_size) break;
      MPI_Comm_split(MPI_COMM_WORLD, world_rank < k ? 0 : MPI_UNDEFINED, world_rank, &comm);
      if (comm != MPI_COMM_NULL) {
        all[sz][g] = run_group(comm, e_count, e_size, e_batch, iters, rounds);
        MPI_Comm_free(&comm);
      }
      ran[g] = 1;
      MPI_Barrier(MPI_COMM_WORLD);
    }

    if (world_rank == 0) {
      char table[32], per[32];
      int m;
      printf("\ntable: %zu entries x %zu B = %s; %zu random indices per rank per gather; "
             "%d gathers per repetition, median of %d round(s)\n",
             e_count, e_size, format_bytes((double)e_count * (double)e_size, table, sizeof table),
             e_batch, iters, rounds);
      printf("%5s  %-22s %14s %12s %14s %9s\n", "ranks", "method", "entries/s", "bytes/s",
             "per rank", "vs a2av");
      for (g = 0; g < 3; ++g) {
        if (!ran[g]) continue;
        for (m = 0; m < METHODS; ++m) {
          double e = all[sz][g].entries_per_s[m];
          printf("%5d  %-22s %14.4g %10s/s %14.4g %8.2fx\n", groups[g], method_names[m], e,
                 format_bytes(e * (double)e_size, per, sizeof per), e / groups[g],
                 e / all[sz][g].entries_per_s[METHODS - 1]);
        }
      }
      fflush(stdout);
    }
  }

  if (world_rank == 0) {
    int collective_met = 1, mapped_met = 1;
    printf("\nratio to the plain MPI_Alltoallv exchange (same run)\n");
    printf("%8s %5s %12s %12s %12s %12s\n", "entry B", "ranks", "collective", "distributed",
           "continuous", "chunked");
    for (sz = 0; sz < (sweep ? SWEEP_SIZES : 1); ++sz) {
      for (g = 0; g < 3; ++g) {
        const double *e = all[sz][g].entries_per_s;
        const double base = e[METHODS - 1];
        if (!ran[g]) continue;
        printf("%8zu %5d %11.2fx %11.2fx %11.2fx %11.2fx\n", sizes_run[sz], groups[g],
               e[COLLECTIVE] / base, e[2] / base, e[0] / base, e[1] / base);
        if (e[COLLECTIVE] < base) collective_met = 0;
        if (e[0] < base || e[1] < base) mapped_met = 0;
      }
    }
    printf("targets: collective gather >= 1.0x the plain exchange everywhere: %s; continuous "
           "and chunked ahead of it: %s\n",
           collective_met ? "met" : "NOT met", mapped_met ? "met" : "NOT met");
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
