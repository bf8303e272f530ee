/* bench_tiered: one trace measured and reported: the unlimited run, every
 * budget and policy against the reference, prefetch with a limited link,
 * and the executor's overhead, printed as rows of the table. */
#define _GNU_SOURCE /* clock_gettime, getline, S_ISDIR under -std=c99 */

#include "bench_tiered.h"

static const char *const policies[] = {"belady", "lru", "size_aware"};
#define NPOLICIES 3
static const unsigned budget_percent[] = {25, 50, 75};
#define NBUDGETS 3

static double ratio_of(uint64_t a, uint64_t b) {
  if (b == 0) return a == 0 ? 1.0 : -1.0;
  return (double)a / (double)b;
}

static void format_ratio(double r, char *buf, size_t len) {
  if (r < 0) snprintf(buf, len, "inf");
  else snprintf(buf, len, "%.3fx", r);
}

static void print_row(const char *pct, const char *budget, const char *policy, uint64_t ev,
                      uint64_t fe, const char *ratio, const char *kps, const char *note) {
  char b1[32], b2[32];
  printf("%-5s %10s  %-11s %12s %12s %9s %11s  %s\n", pct, budget, policy,
         ev == NONE ? "-" : format_bytes(ev, b1, sizeof b1),
         fe == NONE ? "-" : format_bytes(fe, b2, sizeof b2), ratio, kps, note);
}

/* Runs everything on one trace; returns 0, 1 (error or wrong results) or
   EXIT_SKIP (no tiered pools; only on the first trace). */
int bench_trace(const trace *t, int quick, int first, trace_summary *sum) {
  char b1[32], b2[32], b3[32], note[600], ratio[32], kps[32];
  int rc = 0, r;
  run_result base, run;
  memset(&base, 0, sizeof base);
  memset(&run, 0, sizeof run);
  memset(sum, 0, sizeof *sum);
  sum->ratio_ok = sum->lru_ok = 1;
  sum->hidden = -1;
  sum->overhead_us = -1;
  unsigned char **pre_data = calloc(t->nst, sizeof *pre_data);
  if (pre_data == NULL) exit(EXIT_ERROR);
  size_t npre = 0;
  for (size_t s = 0; s < t->nst; ++s) {
    if (!t->st[s].pre) continue;
    pre_data[s] = xmalloc((size_t)t->st[s].bytes);
    fill_pattern(pre_data[s], t->st[s].bytes, t->st[s].sid);
    ++npre;
  }
  const uint64_t unlimited = round_up(2 * t->peak_live + t->max_ws_aligned, MIB);

  printf("\n== %s: %zu ops, %zu storages (%zu pre-existing), peak live %s, largest op working "
         "set %s (op %zu)\n",
         t->name, t->nops, t->nst, npre, format_bytes(t->peak_live, b1, sizeof b1),
         format_bytes(t->max_ws, b2, sizeof b2), t->max_ws_op);
  fflush(stdout);

  /* The run that every other is checked against. */
  r = replay(t, unlimited, "policy=belady", 0, pre_data, 0, first, &base);
  if (r != 0 || base.refused) {
    if (base.refused)
      fprintf(stderr, "bench_tiered: %s: unlimited run: %s\n", t->name, base.message);
    rc = r == EXIT_SKIP ? EXIT_SKIP : 1;
    goto out;
  }
  printf("%-5s %10s  %-11s %12s %12s %9s %11s  %s\n", "budg.", "bytes", "policy", "D->H", "H->D",
         "moved/ref", "kernels/s", "results / notes");
  snprintf(note, sizeof note,
           "unlimited: the results every run is checked against (%zu tensors held)", (size_t)0);
  {
    size_t held = 0;
    for (size_t s = 0; s < t->nst; ++s) held += base.hashes[s] != 0;
    snprintf(note, sizeof note,
             "unlimited (2 x peak + largest op): %zu tensors held at the "
             "end, read back and hashed",
             held);
  }
  snprintf(kps, sizeof kps, "%.0f", (double)base.kernels / base.wall_s);
  print_row("-", format_bytes(unlimited, b3, sizeof b3), "belady", base.stats.bytes_evicted,
            base.stats.bytes_fetched, "-", kps, note);

  uint64_t moved_at[NBUDGETS][NPOLICIES];
  uint64_t budget_at[NBUDGETS];
  for (unsigned bi = 0; bi < NBUDGETS; ++bi) {
    uint64_t budget = t->peak_live * budget_percent[bi] / 100;
    int raised = budget < t->max_ws_aligned;
    if (raised) budget = t->max_ws_aligned;
    budget_at[bi] = budget;
    ref_result ref;
    reference(t, budget, &ref);
    ref.floor = fetch_floor(t, budget);
    uint64_t ref_moved = ref.evicted + ref.fetched;
    char pct[8];
    snprintf(pct, sizeof pct, "%u%%", budget_percent[bi]);
    format_bytes(budget, b3, sizeof b3);
    if (raised) {
      char b4[32];
      snprintf(note, sizeof note,
               "budget raised from %s to the largest op's working set "
               "(tensors rounded up to %d B)",
               format_bytes(t->peak_live * budget_percent[bi] / 100, b4, sizeof b4), ALIGN_BYTES);
    } else {
      snprintf(note, sizeof note, "furthest next use, plain byte budget");
    }
    print_row(pct, b3, "reference", ref.evicted, ref.fetched, "1.000x", "-", note);
    print_row("", "", "floor", NONE, ref.floor, "-", "-", "H->D that any policy must fetch back");
    for (unsigned pi = 0; pi < NPOLICIES; ++pi) {
      char config[64];
      snprintf(config, sizeof config, "policy=%s", policies[pi]);
      r = replay(t, budget, config, 0, pre_data, 0, 0, &run);
      if (r != 0) {
        rc = 1;
        goto out;
      }
      if (run.refused) {
        moved_at[bi][pi] = NONE;
        print_row("", "", policies[pi], NONE, NONE, "-", "-", run.message);
        if (pi == 0) sum->ratio_ok = 0;
        sum->ratio_known = 1;
      } else {
        uint64_t moved = run.stats.bytes_evicted + run.stats.bytes_fetched;
        moved_at[bi][pi] = moved;
        double q = ratio_of(moved, ref_moved);
        format_ratio(q, ratio, sizeof ratio);
        snprintf(kps, sizeof kps, "%.0f", (double)run.kernels / run.wall_s);
        size_t bad = count_mismatches(t, &run, &base);
        if (bad != 0) {
          snprintf(note, sizeof note, "WRONG: %zu held tensors differ from the unlimited run", bad);
          rc = 1;
        } else {
          char wb[32];
          snprintf(note, sizeof note,
                   "ok; %llu evictions, %llu fetches (%llu prefetched); %s written to the device",
                   (unsigned long long)run.stats.evictions, (unsigned long long)run.stats.fetches,
                   (unsigned long long)run.stats.prefetches,
                   format_bytes((double)run.written_to_device, wb, sizeof wb));
        }
        print_row("", "", policies[pi], run.stats.bytes_evicted, run.stats.bytes_fetched, ratio,
                  kps, note);
        if (pi == 0) {
          sum->ratio_known = 1;
          if (q < 0 || q > TARGET_RATIO) sum->ratio_ok = 0;
          if (q < 0 || q > sum->worst_ratio) sum->worst_ratio = q < 0 ? 1e9 : q;
        }
      }
      free(run.hashes);
      run.hashes = NULL;
      fflush(stdout);
    }
    if (budget_percent[bi] <= 50) {
      sum->lru_known = 1;
      if (moved_at[bi][0] == NONE ||
          (moved_at[bi][1] != NONE && moved_at[bi][0] >= moved_at[bi][1]))
        sum->lru_ok = 0;
    }
  }

  /* Prefetch with a limited link, at the 50 % budget. */
  {
    const uint64_t budget = budget_at[1];
    const double spin = 1e9 / SPIN_BYTES_PER_S;
    uint64_t stall[2] = {0, 0};
    uint64_t copy_bytes[2] = {0, 0};
    double wall[2] = {0, 0};
    uint64_t in_time[2] = {0, 0}, pref[2] = {0, 0};
    static const int depth[2] = {0, 2};
    for (int k = 0; k < 2; ++k) {
      char config[96];
      snprintf(config, sizeof config, "policy=belady,prefetch=%d,link_bandwidth=%s", depth[k],
               LINK_BANDWIDTH);
      r = replay(t, budget, config, spin, pre_data, 0, 0, &run);
      if (r != 0 || run.refused) {
        if (run.refused) fprintf(stderr, "bench_tiered: %s: %s\n", t->name, run.message);
        rc = 1;
        goto out;
      }
      size_t bad = count_mismatches(t, &run, &base);
      if (bad != 0) {
        fprintf(stderr, "bench_tiered: %s: prefetch=%d: WRONG: %zu held tensors differ\n", t->name,
                depth[k], bad);
        rc = 1;
      }
      stall[k] = run.stats.stall_ns;
      copy_bytes[k] = run.stats.bytes_evicted + run.stats.bytes_fetched;
      wall[k] = run.wall_s;
      pref[k] = run.stats.prefetches;
      in_time[k] = run.stats.prefetches_in_time;
      free(run.hashes);
      run.hashes = NULL;
    }
    if (stall[0] > 0) sum->hidden = 1.0 - (double)stall[1] / (double)stall[0];
    printf("prefetch at the 50%% budget (%s), link_bandwidth=%s, kernels spin %.4f ns per byte "
           "of working set (%.0f GB/s):\n",
           format_bytes(budget, b1, sizeof b1), LINK_BANDWIDTH, spin, SPIN_BYTES_PER_S / 1e9);
    for (int k = 0; k < 2; ++k)
      printf("  prefetch=%d: stalled %.1f ms of %.1f ms wall, %s copied, %llu prefetches (%llu "
             "in time)\n",
             depth[k], (double)stall[k] / 1e6, wall[k] * 1e3,
             format_bytes(copy_bytes[k], b2, sizeof b2), (unsigned long long)pref[k],
             (unsigned long long)in_time[k]);
    if (sum->hidden >= 0)
      printf("  copy time hidden by prefetch: %.1f %% (1 - stall with / stall without)\n",
             100.0 * sum->hidden);
    else printf("  copy time hidden by prefetch: - (no stall without prefetch)\n");
  }

  /* Executor overhead with everything fitting: tensors created and written
     before the timed part; best of a few runs. The executor's own time:
     wall minus the time inside kernel functions and minus the time the
     executor waited for copies (stall_ns), the latter counted at most up to
     the time a copy was under way (copy_ns), so that waiting for a thread
     to wake up stays in the overhead. The pre-existing tensors written
     before the timed part still cross the link at their first use, into
     device memory touched for the first time: that is the link's time, not
     the executor's. The wall minus the kernels alone is printed too. */
  {
    int reps = quick ? 1 : 3;
    double best = -1, best_raw = -1, stall_us = 0;
    uint64_t evictions = 0;
    for (int k = 0; k < reps; ++k) {
      r = replay(t, unlimited, "policy=belady", 0, pre_data, 1, 0, &run);
      if (r != 0 || run.refused) {
        rc = 1;
        goto out;
      }
      size_t bad = count_mismatches(t, &run, &base);
      if (bad != 0) {
        fprintf(stderr, "bench_tiered: %s: overhead run: WRONG: %zu held tensors differ\n", t->name,
                bad);
        rc = 1;
      }
      const double kernels = (double)run.kernels;
      const double raw = (run.wall_s * 1e9 - (double)run.kernel_ns) / 1e3 / kernels;
      const uint64_t waited = run.stats.stall_ns < run.copy_ns ? run.stats.stall_ns : run.copy_ns;
      const double us = raw - (double)waited / 1e3 / kernels;
      if (best < 0 || us < best) {
        best = us;
        stall_us = raw - us;
      }
      if (best_raw < 0 || raw < best_raw) best_raw = raw;
      evictions += run.stats.evictions;
      free(run.hashes);
      run.hashes = NULL;
    }
    sum->overhead_us = best;
    printf("executor overhead, everything fitting (%s budget, %llu evictions): %.2f us per kernel "
           "(best of %d; (wall - time in kernels - time waiting for copies under way) / kernels; "
           "that run waited %.2f us per kernel for copies; wall - time in kernels alone, best: "
           "%.2f us)\n",
           format_bytes(unlimited, b1, sizeof b1), (unsigned long long)evictions, best, reps,
           stall_us, best_raw);
  }
out:
  free(base.hashes);
  free(run.hashes);
  for (size_t s = 0; s < t->nst; ++s) free(pre_data[s]);
  free(pre_data);
  fflush(stdout);
  return rc;
}
