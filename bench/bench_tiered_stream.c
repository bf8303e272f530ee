/* bench_tiered: the synthetic cases of issue 21 (--stream, --graph).
 *
 * --stream: cyclic weight streaming. W weights (16 by default) of S bytes
 * are read in turn by one kernel each, for P passes (3), through a device
 * budget of 4 weights, on a SIM device whose link is the H200's (the h200
 * cost profile's rates: 55.2 GB/s pinned each way, 8.1 GB/s pageable to the
 * device, 11.9 GB/s back), all divided by --scale (8) so that the real
 * memcpy of this machine stays small against the modelled time. A kernel
 * "computes" by sleeping (a GPU kernel leaves the CPU free). Cases:
 *   - pageable tier, staged (the default), transfer-bound (empty kernels):
 *     the rate achieved against the pageable rate (target >= 80 %);
 *   - the same with kernels computing 1.05x a weight's pageable copy time:
 *     wall against compute (target <= 1.1x);
 *   - pageable tier, staging_buffers=0 (what the pool did before issue 21):
 *     copies that block the executor;
 *   - pinned tier (sim_host=pinned), transfer-bound and compute-bound: rate
 *     against the pinned link (target >= 95 %), copy time hidden (>= 95 %);
 *   - policies belady and lru, bytes moved (target: belady fewer).
 * Each row prints the link statistics (dao_tiered_get_link_stats).
 *
 * --graph: the executor's cost per kernel on a synthetic graph of N live
 * tensors (10^4 by default): empty kernels of 3 inputs and 1 output drawn
 * at random; wall time per kernel from the first submit to the end of
 * dao_tiered_synchronize (target < 2 us), when they all fit, and at a 50 %
 * budget (every kernel evicts and fetches), there gated (each round queued
 * whole before the executor starts it) and with the link's share taken
 * out: the executor's overhead is the wall time minus the time it spent in
 * kernels and waiting for copies under way (issue 21, item 6); the wall
 * time minus the time the modelled link needs is printed too. */
#define _GNU_SOURCE /* clock_gettime, nanosleep under -std=c99 */

#include <time.h>

#include "bench_tiered.h"

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The H200's link (the h200 SIM cost profile, issue 21), GB/s. */
#define H200_PINNED 55.2
#define H200_PAGEABLE_TO_DEVICE 8.1
#define H200_PAGEABLE_TO_HOST 11.9

typedef struct kernel_time {
  uint64_t ns; /* how long each kernel computes */
} kernel_time;

/* Sleeps for the kernel's compute time (a GPU kernel leaves the CPU free). */
static dao_status k_compute(void *user_data, void *const *inputs, size_t input_count,
                            void *const *outputs, size_t output_count, dao_stream stream) {
  const kernel_time *kt = user_data;
  (void)inputs;
  (void)input_count;
  (void)outputs;
  (void)output_count;
  (void)stream;
  if (kt->ns > 0) {
    uint64_t until = mono_ns() + kt->ns;
    struct timespec ts;
    ts.tv_sec = (time_t)(until / 1000000000ull);
    ts.tv_nsec = (long)(until % 1000000000ull);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
  }
  return DAO_OK;
}

typedef struct stream_result {
  int ok;
  double wall_s;
  dao_tiered_stats st;
  dao_tiered_link_stats ls;
} stream_result;

/* W weights of `bytes`, P passes, budget of 4 weights; returns 0 or 1. */
static int stream_run(int cuda, size_t weights, size_t bytes, size_t passes, const char *config,
                      uint64_t kernel_ns, stream_result *r) {
  dao_tiered *pool = NULL;
  dao_tensor **w = xmalloc(weights * sizeof *w);
  unsigned char *src = xmalloc(bytes);
  kernel_time kt = {kernel_ns};
  size_t i, p;
  memset(r, 0, sizeof *r);
  /* On the card, "sim_host=pinned" in a case's config means a pinned tier. */
  const int pinned = strstr(config, "sim_host=pinned") != NULL;
  const dao_place device = cuda ? dao_place_cuda(0) : dao_place_sim(0);
  const dao_place host = cuda && pinned ? dao_place_cuda_pinned() : dao_place_cpu();
  char conf[512] = "";
  if (cuda) { /* without the SIM keys (a card has its own link) */
    const char *p = config;
    while (*p != '\0') {
      size_t n = strcspn(p, ",");
      static const char *const sim_keys[] = {"link_bandwidth=", "pageable_to_", "sim_host="};
      int sim_key = 0;
      for (size_t k = 0; k < 3; ++k)
        if (strncmp(p, sim_keys[k], strlen(sim_keys[k])) == 0) sim_key = 1;
      if (!sim_key && strlen(conf) + n + 2 < sizeof conf) {
        if (conf[0] != '\0') strcat(conf, ",");
        strncat(conf, p, n);
      }
      p += n;
      if (*p == ',') ++p;
    }
  } else {
    snprintf(conf, sizeof conf, "%s", config);
  }
  dao_status s = dao_tiered_create(device, host, 4 * bytes, conf, &pool);
  if (s != DAO_OK) {
    fprintf(stderr, "bench_tiered: dao_tiered_create(%s): %s\n", config, dao_last_error());
    free(w);
    free(src);
    return 1;
  }
  for (i = 0; i < weights; ++i) {
    memset(src, (int)(i + 1), bytes);
    if (dao_tensor_create(pool, bytes, &w[i]) != DAO_OK ||
        dao_tensor_write(w[i], src, bytes) != DAO_OK) {
      fprintf(stderr, "bench_tiered: weight %zu: %s\n", i, dao_last_error());
      return 1;
    }
  }
  /* Measure from the first kernel (the writes are done). */
  if (dao_tiered_synchronize(pool) != DAO_OK) return 1;
  dao_tiered_link_stats before;
  memset(&before, 0, sizeof before);
  before.struct_size = sizeof before;
  dao_tiered_get_link_stats(pool, &before);
  const uint64_t t0 = mono_ns();
  for (p = 0; p < passes; ++p)
    for (i = 0; i < weights; ++i) {
      if (dao_kernel_submit(pool, k_compute, &kt, &w[i], 1, NULL, 0) != DAO_OK) {
        fprintf(stderr, "bench_tiered: submit: %s\n", dao_last_error());
        return 1;
      }
    }
  s = dao_tiered_synchronize(pool);
  r->wall_s = (double)(mono_ns() - t0) / 1e9;
  r->st.struct_size = sizeof r->st;
  r->ls.struct_size = sizeof r->ls;
  dao_tiered_get_stats(pool, &r->st);
  dao_tiered_get_link_stats(pool, &r->ls);
  /* Only what the passes did (a write may have gone to the device, when a
     kernel that uses it was already queued as it ran). */
  r->ls.bytes_to_device -= before.bytes_to_device;
  r->ls.bytes_to_host -= before.bytes_to_host;
  r->ls.copies_to_device -= before.copies_to_device;
  r->ls.copies_to_host -= before.copies_to_host;
  r->ls.copy_ns_to_device -= before.copy_ns_to_device;
  r->ls.copy_ns_to_host -= before.copy_ns_to_host;
  r->ls.copy_ns -= before.copy_ns;
  r->ls.stall_ns -= before.stall_ns;
  r->ls.kernel_ns -= before.kernel_ns;
  r->ls.staged_bytes -= before.staged_bytes;
  r->ls.hidden_ns = r->ls.copy_ns > r->ls.stall_ns ? r->ls.copy_ns - r->ls.stall_ns : 0;
  r->ls.to_device_bytes_per_s =
      r->ls.copy_ns_to_device > 0
          ? (uint64_t)((double)r->ls.bytes_to_device * 1e9 / (double)r->ls.copy_ns_to_device)
          : 0;
  r->ls.to_host_bytes_per_s =
      r->ls.copy_ns_to_host > 0
          ? (uint64_t)((double)r->ls.bytes_to_host * 1e9 / (double)r->ls.copy_ns_to_host)
          : 0;
  /* Every weight still holds what was written. */
  r->ok = s == DAO_OK;
  for (i = 0; i < weights && r->ok; ++i) {
    unsigned char first = 0;
    if (dao_tensor_read(w[i], src, bytes) != DAO_OK) r->ok = 0;
    first = src[0];
    if (first != (unsigned char)(i + 1) || src[bytes - 1] != first) r->ok = 0;
  }
  for (i = 0; i < weights; ++i) dao_tensor_release(w[i]);
  dao_tiered_destroy(pool);
  free(w);
  free(src);
  return r->ok ? 0 : 1;
}

static void stream_row(const char *name, const stream_result *r) {
  const dao_tiered_link_stats *l = &r->ls;
  const double compute = (double)l->kernel_ns / 1e9;
  printf("%-34s %7.3f %7.3f %6.2f %8.2f %7.3f %8.2f %7.3f %6.1f %7.2f\n", name, r->wall_s, compute,
         compute > 0 ? r->wall_s / compute : 0.0, (double)l->bytes_to_device / 1e9,
         (double)l->copy_ns_to_device / 1e9, (double)l->to_device_bytes_per_s / 1e9,
         (double)l->stall_ns / 1e9,
         l->copy_ns > 0 ? 100.0 * (double)l->hidden_ns / (double)l->copy_ns : 0.0,
         (double)(l->bytes_to_device + l->bytes_to_host) / (double)MIB);
}

int bench_stream(const options *o) {
  const double scale = (double)o->scale;
  const size_t bytes = (size_t)o->weight_mib * MIB, weights = 16, passes = 3;
  const int cuda = o->cuda;
  const double pinned = H200_PINNED * 1e9 / (cuda ? 1 : scale);
  const double to_dev = H200_PAGEABLE_TO_DEVICE * 1e9 / (cuda ? 1 : scale);
  const double to_host = H200_PAGEABLE_TO_HOST * 1e9 / (cuda ? 1 : scale);
  char link[256], cfg[512], b1[32];
  snprintf(link, sizeof link,
           "link_bandwidth=%.0fB/s,pageable_to_device=%.0fB/s,pageable_to_host=%.0fB/s", pinned,
           to_dev, to_host);
  printf("bench_tiered --stream: libdao %s, build %s\n", dao_version_string(),
         DAO_BENCH_BUILD_TYPE[0] ? DAO_BENCH_BUILD_TYPE : "(unknown)");
  printf(
      "cyclic weight streaming: %zu weights of %s, %zu passes, budget of 4 weights, prefetch 2\n",
      weights, format_bytes((double)bytes, b1, sizeof b1), passes);
  if (cuda) {
    printf("device: cuda:0 and its own link; targets against the H200's measured rates: pinned "
           "%.2f GB/s, pageable %.2f GB/s to the device, %.2f back\n\n",
           pinned / 1e9, to_dev / 1e9, to_host / 1e9);
  } else {
    printf("SIM link: the h200 profile's rates / %g: pinned %.2f GB/s, pageable %.2f GB/s to "
           "the device, %.2f back\n\n",
           scale, pinned / 1e9, to_dev / 1e9, to_host / 1e9);
  }
  /* A weight's copy at the pageable rate; kernels that compute 1.05x that. */
  const uint64_t copy_pageable_ns = (uint64_t)((double)bytes / to_dev * 1e9);
  const uint64_t copy_pinned_ns = (uint64_t)((double)bytes / pinned * 1e9);
  printf("%-34s %7s %7s %6s %8s %7s %8s %7s %6s %7s\n", "case", "wall_s", "comp_s", "w/c", "H2D_GB",
         "copy_s", "GB/s", "stall_s", "hid%", "movedMiB");
  struct {
    const char *name, *extra;
    uint64_t kernel_ns;
  } cases[] = {
      {"pageable staged, transfer-bound", "", 0},
      {"pageable staged, compute 1.05x", "", copy_pageable_ns + copy_pageable_ns / 20},
      {"pageable unstaged, transfer-bound", ",staging_buffers=0", 0},
      {"pageable unstaged, compute 1.05x", ",staging_buffers=0",
       copy_pageable_ns + copy_pageable_ns / 20},
      {"pinned, transfer-bound", ",sim_host=pinned", 0},
      {"pinned, compute 1.05x", ",sim_host=pinned", copy_pinned_ns + copy_pinned_ns / 20},
  };
  stream_result res[6];
  int rc = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    snprintf(cfg, sizeof cfg, "%s%s%s%s", link, cases[c].extra, o->extra[0] ? "," : "", o->extra);
    if (stream_run(cuda, weights, bytes, passes, cfg, cases[c].kernel_ns, &res[c]) != 0) {
      rc = EXIT_ERROR;
    }
    stream_row(cases[c].name, &res[c]);
    fflush(stdout);
  }
  /* Policies on the same pattern, transfer-bound, pinned (bytes only),
     with the default prefetch (2 of the 4 slots ahead) and without. */
  stream_result pol[4];
  const char *const policies[] = {"belady", "lru", "belady,prefetch=0", "lru,prefetch=0"};
  for (size_t p = 0; p < 4; ++p) {
    char name[64];
    snprintf(cfg, sizeof cfg, "%s,sim_host=pinned,policy=%s%s%s", link, policies[p],
             o->extra[0] ? "," : "", o->extra);
    if (stream_run(cuda, weights, bytes, passes, cfg, 0, &pol[p]) != 0) rc = EXIT_ERROR;
    snprintf(name, sizeof name, "policy=%s (pinned)", policies[p]);
    stream_row(name, &pol[p]);
  }
  const double rate_pageable = (double)res[0].ls.to_device_bytes_per_s / to_dev;
  const double wall_ratio = res[1].wall_s / ((double)res[1].ls.kernel_ns / 1e9);
  const double rate_pinned = (double)res[4].ls.to_device_bytes_per_s / pinned;
  const double hidden_pinned =
      res[5].ls.copy_ns > 0 ? (double)res[5].ls.hidden_ns / (double)res[5].ls.copy_ns : 0;
  const uint64_t moved_b = pol[0].ls.bytes_to_device + pol[0].ls.bytes_to_host;
  const uint64_t moved_l = pol[1].ls.bytes_to_device + pol[1].ls.bytes_to_host;
  printf("\ntargets (issue 21)\n");
  printf("pageable, transfer-bound: >= 80 %% of the pageable rate   %s (%.1f %%)\n",
         rate_pageable >= 0.8 ? "ok" : "MISS", 100 * rate_pageable);
  printf("pageable, compute >= copies: wall <= 1.1x compute      %s (%.3fx)\n",
         wall_ratio <= 1.1 ? "ok" : "MISS", wall_ratio);
  printf("pinned, transfer-bound: >= 95 %% of the link            %s (%.1f %%)\n",
         rate_pinned >= 0.95 ? "ok" : "MISS", 100 * rate_pinned);
  printf("pinned, compute >= copies: >= 95 %% of copy time hidden %s (%.1f %%)\n",
         hidden_pinned >= 0.95 ? "ok" : "MISS", 100 * hidden_pinned);
  const uint64_t moved_b0 = pol[2].ls.bytes_to_device + pol[2].ls.bytes_to_host;
  const uint64_t moved_l0 = pol[3].ls.bytes_to_device + pol[3].ls.bytes_to_host;
  printf("cyclic pattern: belady moves fewer bytes than lru       %s (%.0f vs %.0f MiB; "
         "prefetch=0: %.0f vs %.0f MiB)\n",
         moved_b < moved_l && moved_b0 < moved_l0 ? "ok" : "MISS", (double)moved_b / (double)MIB,
         (double)moved_l / (double)MIB, (double)moved_b0 / (double)MIB,
         (double)moved_l0 / (double)MIB);
  printf("\nwall_s: first submit to the end of dao_tiered_synchronize; comp_s: time in kernels "
         "(kernel_ns);\nw/c: wall / compute; H2D_GB, copy_s, GB/s: bytes, copy time and rate to "
         "the device;\nstall_s: the executor's waits for data; hid%%: hidden_ns / copy_ns; "
         "movedMiB: both ways\n");
  return rc;
}

/* --- the executor's cost per kernel on a big graph ------------------------ */

static dao_status k_empty(void *user_data, void *const *inputs, size_t input_count,
                          void *const *outputs, size_t output_count, dao_stream stream) {
  (void)user_data;
  (void)inputs;
  (void)input_count;
  (void)outputs;
  (void)output_count;
  (void)stream;
  return DAO_OK;
}

/* The gate of a gated round: a kernel that holds the executor until the
   whole round is queued (GCC/Clang atomic builtins: C99 has none). */
typedef struct gate {
  int open;
  uint64_t opened_ns; /* when the kernel saw it open */
} gate;

static dao_status k_gate(void *user_data, void *const *inputs, size_t input_count,
                         void *const *outputs, size_t output_count, dao_stream stream) {
  gate *g = user_data;
  (void)inputs;
  (void)input_count;
  (void)outputs;
  (void)output_count;
  (void)stream;
  while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE)) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  g->opened_ns = mono_ns();
  return DAO_OK;
}

/* One pool of n tensors of `bytes` in `budget`, with `config`; 3 rounds of
   `kernels`. Each round prints its wall time per kernel and, when it copies,
   what the copies took: the time the link was busy (link stats copy_ns),
   the time the modelled link needs for those bytes (each way at the
   pageable rates given in `to_dev_gbs` / `to_host_gbs`, one copy after the
   other; 0 for an unlimited link), and the executor's own overhead: wall
   minus the time it spent in kernels and waiting for copies, that wait
   counted at most up to the time a copy was under way (so the executor's
   inline copies, 4 KiB memcpys here, are the link's time; on an unlimited
   link too: the bytes must move). Wall minus the modelled link time is
   printed too. Copies that the link needs are not the executor's cost;
   hand-offs to threads, wake-ups and system calls are.
   Gated (the rounds that copy): each round is queued whole behind a kernel
   that holds the executor (k_gate), and timed from its opening to the end
   of synchronize: the executor alone, with the whole round ahead of it.
   Ungated, the executor sees only what the submitting thread has queued so
   far, so the copies it makes (and the time) depend on which thread the
   machine runs faster: 3.2 to 7.5 KiB to the device per kernel on the same
   graph, from run to run. */
static int graph_rounds(size_t n, size_t bytes, size_t budget, size_t kernels, const char *what,
                        const char *config, double to_dev_gbs, double to_host_gbs, int gated) {
  dao_tiered *pool = NULL;
  uint64_t seed = 12345;
  int rc = 0;
  if (dao_tiered_create(dao_place_sim(0), dao_place_cpu(), budget, config, &pool) != DAO_OK) {
    fprintf(stderr, "bench_tiered: dao_tiered_create: %s\n", dao_last_error());
    return EXIT_ERROR;
  }
  dao_tensor **t = xmalloc(n * sizeof *t);
  for (size_t i = 0; i < n; ++i) {
    if (dao_tensor_create(pool, bytes, &t[i]) != DAO_OK) return EXIT_ERROR;
  }
  /* Every tensor produced once. */
  for (size_t i = 0; i < n; ++i)
    if (dao_kernel_submit(pool, k_empty, NULL, NULL, 0, &t[i], 1) != DAO_OK) return EXIT_ERROR;
  dao_tiered_synchronize(pool);
  for (int round = 0; round < 3; ++round) {
    dao_tiered_link_stats l0, l1;
    l0.struct_size = l1.struct_size = sizeof l0;
    gate g = {0, 0};
    if (gated && dao_kernel_submit(pool, k_gate, &g, NULL, 0, NULL, 0) != DAO_OK) {
      fprintf(stderr, "bench_tiered: submit: %s\n", dao_last_error());
      rc = EXIT_ERROR;
      break;
    }
    if (dao_tiered_get_link_stats(pool, &l0) != DAO_OK) rc = EXIT_ERROR;
    uint64_t t0 = mono_ns();
    for (size_t k = 0; k < kernels; ++k) {
      dao_tensor *in[3], *out[1];
      for (int j = 0; j < 3; ++j) in[j] = t[(seed = mix64(seed)) % n];
      out[0] = t[(seed = mix64(seed)) % n];
      if (dao_kernel_submit(pool, k_empty, NULL, in, 3, out, 1) != DAO_OK) {
        fprintf(stderr, "bench_tiered: submit: %s\n", dao_last_error());
        rc = EXIT_ERROR;
        break;
      }
    }
    uint64_t submit_ns = 0, gate_ns = 0;
    if (gated) {
      submit_ns = mono_ns() - t0;
      __atomic_store_n(&g.open, 1, __ATOMIC_RELEASE);
    }
    if (dao_tiered_synchronize(pool) != DAO_OK) rc = EXIT_ERROR;
    const uint64_t end = mono_ns();
    if (gated) {
      /* The gate's own time in kernel_ns: from the snapshot to its opening. */
      gate_ns = g.opened_ns - t0;
      t0 = g.opened_ns;
    }
    const uint64_t wall_ns = end - t0;
    if (dao_tiered_get_link_stats(pool, &l1) != DAO_OK) rc = EXIT_ERROR;
    l1.kernel_ns = l1.kernel_ns >= gate_ns ? l1.kernel_ns - gate_ns : 0;
    const double per = (double)wall_ns / (double)kernels / 1e3;
    printf("%zu live tensors, %s, round %d: %.2f us per kernel", n, what, round + 1, per);
    if (gated) {
      printf(" (gated: executor alone; the submits took %.2f us per kernel before)",
             (double)submit_ns / (double)kernels / 1e3);
    }
    if (budget >= n * bytes) {
      printf(" (target < %.0f us: %s)", TARGET_OVERHEAD_US,
             per < TARGET_OVERHEAD_US ? "ok" : "MISS");
    } else {
      const double busy = (double)(l1.copy_ns - l0.copy_ns) / (double)kernels / 1e3;
      /* The executor's own work: what it did not spend in kernels or
         waiting for copies (inline copies included), the wait counted at
         most up to the time a copy was under way (a wait for a thread to
         wake up stays in the overhead). */
      const uint64_t stall = l1.stall_ns - l0.stall_ns, copy = l1.copy_ns - l0.copy_ns;
      const double waited =
          (double)((stall < copy ? stall : copy) + (l1.kernel_ns - l0.kernel_ns)) /
          (double)kernels / 1e3;
      const double to_dev = (double)(l1.bytes_to_device - l0.bytes_to_device);
      const double to_host = (double)(l1.bytes_to_host - l0.bytes_to_host);
      double modelled = 0; /* us per kernel */
      if (to_dev_gbs > 0) modelled += to_dev / (to_dev_gbs * 1e3) / (double)kernels;
      if (to_host_gbs > 0) modelled += to_host / (to_host_gbs * 1e3) / (double)kernels;
      const double overhead = per - waited;
      printf("; copies %.2f+%.2f KiB, link busy %.2f us, modelled link %.2f us, waited for "
             "copies and kernels %.2f us; executor overhead (wall - waited) %.2f us per kernel "
             "(target < %.0f us: %s), wall - modelled link %.2f us; staged %.0f %%",
             to_dev / 1024.0 / (double)kernels, to_host / 1024.0 / (double)kernels, busy, modelled,
             waited, overhead, TARGET_OVERHEAD_US, overhead < TARGET_OVERHEAD_US ? "ok" : "MISS",
             per - modelled,
             to_dev + to_host > 0
                 ? 100.0 * (double)(l1.staged_bytes - l0.staged_bytes) / (to_dev + to_host)
                 : 0.0);
    }
    printf("\n");
  }
  for (size_t i = 0; i < n; ++i) dao_tensor_release(t[i]);
  dao_tiered_destroy(pool);
  free(t);
  return rc;
}

int bench_graph(const options *o) {
  const size_t n = (size_t)o->graph_tensors, kernels = (size_t)o->graph_kernels;
  const size_t bytes = 4 * KIB;
  printf("bench_tiered --graph: libdao %s, build %s; kernels of 3 inputs + 1 output drawn at "
         "random, empty; wall time from the first submit to the end of synchronize\n",
         dao_version_string(), DAO_BENCH_BUILD_TYPE[0] ? DAO_BENCH_BUILD_TYPE : "(unknown)");
  int rc = graph_rounds(n, bytes, n * bytes + MIB, kernels, "everything fits", "", 0, 0, 0);
  /* With evictions: a quarter of the kernels' (fewer, they copy). First
     with the link unlimited (unless DAO_SIM_COSTS gives one), then with the
     H200's pageable rates: what the link needs is then 0.5 us per 4 KiB to
     the device, 0.34 us back, which is not the executor's overhead. */
  if (rc == 0) rc = graph_rounds(n, bytes, n * bytes / 2, kernels / 4, "budget 50 %", "", 0, 0, 1);
  if (rc == 0) {
    char config[160];
    snprintf(config, sizeof config,
             "link_bandwidth=%gGB/s,pageable_to_device=%gGB/s,pageable_to_host=%gGB/s", H200_PINNED,
             H200_PAGEABLE_TO_DEVICE, H200_PAGEABLE_TO_HOST);
    rc = graph_rounds(n, bytes, n * bytes / 2, kernels / 4, "budget 50 %, h200 link", config,
                      H200_PAGEABLE_TO_DEVICE, H200_PAGEABLE_TO_HOST, 1);
  }
  return rc;
}
