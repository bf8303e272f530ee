/*
 * bench_tiered: tiered pools (include/dao/tiered.h) on real tensor access
 * traces, replayed as kernels on a simulated device.
 *
 * Each trace (JSON lines, see ../shared/traces/README.md) is a list of
 * events in order:
 *   {"ev":"alloc","seq":S,"sid":ID,"bytes":B,"pre":P}  storage ID appears
 *   {"ev":"op","seq":S,"op":NAME,"in":[[ID,B],...],"out":[[ID,B],...]}
 *   {"ev":"free","seq":S,"sid":ID}                      storage ID is dead
 * Every storage becomes a tensor of a tiered pool on dao_place_sim(0) with
 * the CPU as its host tier; a pre-existing one (P true) is written once with
 * a deterministic pattern at its alloc event; every op becomes a kernel whose
 * function reads the first word of each input and writes a few words of each
 * output derived from them; a free releases the tensor.
 *
 * For device budgets of 25 %, 50 % and 75 % of the trace's peak live bytes
 * (never below the largest op's working set) and each policy, the program
 * reports the bytes moved each way (dao_tiered_get_stats) and kernels per
 * second, beside a reference: the same furthest-next-use rule simulated here
 * with the budget as a plain byte count, and a floor on the bytes that any
 * policy must fetch back. It checks the results (a hash of every tensor
 * still held at the end) against a run with an unlimited budget, measures
 * the fraction of copy time that prefetching hides with a limited SIM link
 * bandwidth, and the executor's overhead per kernel when everything fits.
 *
 * Exit status: 0 when every run completed with the right results (targets
 * never fail a run), 1 on an error or a wrong result, 2 for bad flags, 77
 * when there is nothing to run (no traces, or no tiered pools in this
 * libdao). See bench/README.md.
 *
 * The program is built from several files, one concern each (their shared
 * declarations in bench_tiered.h): _options (the command line), _trace
 * (loading a trace), _reference (the baselines), _replay (the workload
 * through a tiered pool), _report (one trace measured and printed), and
 * this one: main, which picks the traces, sizes the SIM device and prints
 * the header and the table of targets.
 */

#define _GNU_SOURCE /* clock_gettime, getline, S_ISDIR under -std=c99 */

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "bench_tiered.h"

/* ------------------------------------------------------------------------ */
/* Main                                                                     */

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int name_selected(const char *only, const char *name) {
  if (only == NULL) return 1;
  size_t prefix = strcspn(name, "_");
  const char *p = only;
  while (*p != '\0') {
    size_t n = strcspn(p, ",");
    if ((n == strlen(name) && strncmp(p, name, n) == 0) ||
        (n == prefix && strncmp(p, name, n) == 0))
      return 1;
    p += n;
    if (*p == ',') ++p;
  }
  return 0;
}

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int main(int argc, char **argv) {
  options o;
  parse_options(argc, argv, &o);
  const char *prog = argv[0];
  if (o.stream || o.graph) {
    /* One SIM device for both: 4 weights, or every graph tensor (4 KiB). */
    size_t cap = (size_t)(4 * o.weight_mib * MIB);
    if (o.graph && (size_t)(o.graph_tensors * 4 * KIB) > cap) cap = o.graph_tensors * 4 * KIB;
    cap += 64 * MIB;
    if (dao_sim_configure(1, &cap) != DAO_OK) {
      fprintf(stderr, "%s: dao_sim_configure: %s\n", prog, dao_last_error());
      return EXIT_ERROR;
    }
    int rc = 0;
    if (o.stream) rc = bench_stream(&o);
    if (o.graph && rc == 0) rc = bench_graph(&o);
    return rc;
  }

  /* The traces: every .jsonl in DIR/ops, or in DIR. */
  size_t dlen = strlen(o.traces) + 8;
  char *dir = xmalloc(dlen);
  snprintf(dir, dlen, "%s/ops", o.traces);
  if (!is_dir(dir)) snprintf(dir, dlen, "%s", o.traces);
  DIR *d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "%s: cannot open the traces directory %s: %s\n", prog, dir, strerror(errno));
    free(dir);
    return o.traces_given ? EXIT_ERROR : EXIT_SKIP;
  }
  char **files = NULL;
  size_t nfiles = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!has_suffix(de->d_name, ".jsonl")) continue;
    char stem[256];
    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(de->d_name) - 6), de->d_name);
    if (!name_selected(o.only, stem)) continue;
    files = xrealloc(files, (nfiles + 1) * sizeof *files);
    size_t n = strlen(dir) + strlen(de->d_name) + 2;
    files[nfiles] = xmalloc(n);
    snprintf(files[nfiles], n, "%s/%s", dir, de->d_name);
    ++nfiles;
  }
  closedir(d);
  free(dir);
  if (nfiles == 0) {
    fprintf(stderr, "%s: no trace (*.jsonl)%s in %s\n", prog, o.only ? " selected by --only" : "",
            o.traces);
    return o.only != NULL ? EXIT_BAD_FLAGS : EXIT_SKIP;
  }
  qsort(files, nfiles, sizeof *files, compare_strings);

  trace *traces = xmalloc(nfiles * sizeof *traces);
  size_t ntraces = 0;
  char err[1024];
  for (size_t i = 0; i < nfiles; ++i) {
    if (load_trace(files[i], &traces[ntraces], err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", prog, err);
      return EXIT_ERROR;
    }
    ++ntraces;
    free(files[i]);
  }
  free(files);
  if (o.quick) { /* the smallest trace only */
    size_t best = 0;
    for (size_t i = 1; i < ntraces; ++i)
      if (traces[i].nev < traces[best].nev) best = i;
    for (size_t i = 0; i < ntraces; ++i)
      if (i != best) free_trace(&traces[i]);
    traces[0] = traces[best];
    ntraces = 1;
  }

  /* One SIM device big enough for the largest budget (the unlimited one),
     set before its first use. It takes host memory only as it is used. */
  uint64_t capacity = 0;
  for (size_t i = 0; i < ntraces; ++i) {
    uint64_t u = round_up(2 * traces[i].peak_live + traces[i].max_ws_aligned, MIB);
    if (u > capacity) capacity = u;
  }
  capacity = round_up(capacity + capacity / 4 + 64 * MIB, MIB);
  size_t cap = (size_t)capacity;
  dao_status cs = dao_sim_configure(1, &cap);
  if (cs != DAO_OK) {
    fprintf(stderr, "%s: dao_sim_configure: %s (%s)\n", prog, dao_status_string(cs),
            dao_last_error());
    return EXIT_ERROR;
  }

  const char *build = DAO_BENCH_BUILD_TYPE;
  char b1[32];
  printf("bench_tiered: libdao %s, build %s%s\n", dao_version_string(),
         build[0] ? build : "(unknown)",
#ifdef NDEBUG
         " (NDEBUG)"
#else
         ""
#endif
  );
  if (!is_optimised_build_type(build))
    printf("warning: not an optimised build; timings mean little\n");
  printf("device: dao_place_sim(0) of %s, host tier: dao_place_cpu(); %zu trace(s) from %s\n",
         format_bytes(capacity, b1, sizeof b1), ntraces, o.traces);
  printf("policies: belady, lru, size_aware with the default prefetch (2); budgets: 25/50/75 %% "
         "of peak live bytes\n");

  trace_summary *sums = xmalloc(ntraces * sizeof *sums);
  int rc = 0;
  for (size_t i = 0; i < ntraces; ++i) {
    int r = bench_trace(&traces[i], o.quick, i == 0, &sums[i]);
    if (r == EXIT_SKIP) {
      rc = EXIT_SKIP;
      break;
    }
    if (r != 0) rc = EXIT_ERROR;
  }
  if (rc != EXIT_SKIP) {
    printf("\ntargets (issue 5)                                     ");
    for (size_t i = 0; i < ntraces; ++i) printf(" %-22s", traces[i].name);
    printf("\nbelady <= %.2fx the reference at every budget          ", TARGET_RATIO);
    for (size_t i = 0; i < ntraces; ++i) {
      char cell[64];
      snprintf(cell, sizeof cell, "%s (worst %.3fx)",
               !sums[i].ratio_known ? "-"
               : sums[i].ratio_ok   ? "ok"
                                    : "MISS",
               sums[i].worst_ratio);
      printf(" %-22s", cell);
    }
    printf("\nbelady moves fewer bytes than lru at 25 %% and 50 %%      ");
    for (size_t i = 0; i < ntraces; ++i)
      printf(" %-22s", !sums[i].lru_known ? "-" : sums[i].lru_ok ? "ok" : "MISS");
    printf("\nexecutor overhead < %.0f us per kernel, everything fits  ", TARGET_OVERHEAD_US);
    for (size_t i = 0; i < ntraces; ++i) {
      char cell[64];
      if (sums[i].overhead_us < 0) snprintf(cell, sizeof cell, "-");
      else
        snprintf(cell, sizeof cell, "%s (%.2f us)",
                 sums[i].overhead_us < TARGET_OVERHEAD_US ? "ok" : "MISS", sums[i].overhead_us);
      printf(" %-22s", cell);
    }
    printf("\ncopy time hidden by prefetch (no target)              ");
    for (size_t i = 0; i < ntraces; ++i) {
      char cell[64];
      if (sums[i].hidden < 0) snprintf(cell, sizeof cell, "-");
      else snprintf(cell, sizeof cell, "%.1f %%", 100.0 * sums[i].hidden);
      printf(" %-22s", cell);
    }
    printf("\n\nD->H: bytes_evicted, H->D: bytes_fetched (dao_tiered_get_stats); moved/ref: "
           "(D->H + H->D) / the\nreference's; reference: the furthest-next-use rule simulated "
           "with the budget as a plain byte\ncount (no placement, so no fragmentation); floor: a "
           "lower bound on H->D for any policy (an\ninterval-packing relaxation, see the source); "
           "kernels/s: kernels / wall time from the first\nsubmit to the end of "
           "dao_tiered_synchronize (pre-existing tensors written in trace order);\nresults: "
           "every tensor still held at the end read back and compared with the unlimited run;\n"
           "written to the device: pre-existing data that dao_tensor_write() put straight on the "
           "device\n(a kernel that used it next was queued and it had room): it crosses the link "
           "once, as in\nthe reference, which counts no copy for it; not a fetch\n");
  }
  for (size_t i = 0; i < ntraces; ++i) free_trace(&traces[i]);
  free(traces);
  free(sums);
  return rc;
}
