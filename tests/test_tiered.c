/* Tiered pools through the public API (tiered.h): a random program whose
 * tensors are several times the device budget gives the results of a plain
 * host computation under every policy; hand-made sequences whose evictions
 * under belady and lru are known exactly; a released tensor freed after its
 * last use and not before; submits from two threads; writes and reads
 * ordered with kernels; every bad input; failing kernels and a full host
 * tier; the link: staged copies, copies that block, and the link statistics.
 *
 * Runs with DAO_SIM_DEVICES=256MiB,16MiB. No check depends on timing: a
 * kernel that must still be running waits on a gate the test opens. */
#define _GNU_SOURCE

#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "dao_test.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLOW_BUILD 1
#endif
#endif
#ifndef SLOW_BUILD
#define SLOW_BUILD 0
#endif

static dao_tiered_stats get_stats(dao_tiered *pool) {
  dao_tiered_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_tiered_get_stats(pool, &s));
  return s;
}

static dao_tensor_state state_of(dao_tensor *t) {
  dao_tensor_state s = DAO_TENSOR_IN_TRANSIT;
  assert_ok(dao_tensor_get_state(t, &s));
  return s;
}

static uint32_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

/* --- the random program --------------------------------------------------- */

#define NT 50
#define MAX_KERNELS 1500

typedef struct kern {
  int nin, nout;
  int in[3], out[2];
  uint32_t id;
} kern;

typedef struct program {
  size_t words[NT];
  size_t total;
  int nk;
  kern k[MAX_KERNELS];
  /* every 100 kernels: a write of tensor wr[i] with seed, a read of rd[i] */
  int wr[MAX_KERNELS / 100 + 1], rd[MAX_KERNELS / 100 + 1];
} program;

static program prog;
static uint32_t *model[NT];

/* out[i] = id * 2654435761 + i + sum of in_j[i % words_j] (in place safe:
 * word i of an output is written after every input word i was read, and
 * an input read at another index is a different tensor). */
static void compute(const kern *k, uint32_t *const *in, uint32_t *const *out) {
  int o, j;
  for (o = 0; o < k->nout; ++o) {
    const size_t n = prog.words[k->out[o]];
    uint32_t *dst = out[o];
    size_t i;
    for (i = 0; i < n; ++i) {
      uint32_t v = k->id * 2654435761u + (uint32_t)i;
      for (j = 0; j < k->nin; ++j) v += in[j][i % prog.words[k->in[j]]];
      dst[i] = v;
    }
  }
}

static dao_status run_kern(void *user_data, void *const *inputs, size_t input_count,
                           void *const *outputs, size_t output_count, dao_stream stream) {
  const kern *k = (const kern *)user_data;
  (void)stream;
  if ((int)input_count != k->nin || (int)output_count != k->nout) return DAO_ERR_INTERNAL;
  compute(k, (uint32_t *const *)inputs, (uint32_t *const *)outputs);
  return DAO_OK;
}

static void fill_words(uint32_t *p, size_t n, uint32_t seed) {
  size_t i;
  for (i = 0; i < n; ++i) p[i] = seed * 40503u + (uint32_t)i * 7u;
}

static void make_program(int nk) {
  uint64_t s = 12345;
  int t, i;
  prog.total = 0;
  prog.nk = nk;
  for (t = 0; t < NT; ++t) {
    prog.words[t] = (64 * KIB + (rng_next(&s) % (960 * KIB))) / 4;
    prog.total += prog.words[t] * 4;
  }
  for (i = 0; i < nk; ++i) {
    kern *k = &prog.k[i];
    size_t bytes;
    do {
      int j;
      bytes = 0;
      k->nin = 1 + (int)(rng_next(&s) % 3);
      k->nout = 1 + (int)(rng_next(&s) % 2);
      for (j = 0; j < k->nin; ++j) {
        int dup;
        do {
          int m;
          k->in[j] = (int)(rng_next(&s) % NT);
          dup = 0;
          for (m = 0; m < j; ++m) dup |= k->in[m] == k->in[j];
        } while (dup);
        bytes += prog.words[k->in[j]] * 4;
      }
      for (j = 0; j < k->nout; ++j) {
        int dup, m;
        do {
          /* half the time in place on an input */
          k->out[j] = (rng_next(&s) % 2) ? k->in[rng_next(&s) % (unsigned)k->nin]
                                         : (int)(rng_next(&s) % NT);
          dup = 0;
          for (m = 0; m < j; ++m) dup |= k->out[m] == k->out[j];
        } while (dup);
        for (m = 0; m < k->nin; ++m)
          if (k->in[m] == k->out[j]) break;
        if (m == k->nin) bytes += prog.words[k->out[j]] * 4;
      }
    } while (bytes > 4 * MIB);
    k->id = (uint32_t)i + 1;
  }
  for (i = 0; i <= nk / 100; ++i) {
    prog.wr[i] = (int)(rng_next(&s) % NT);
    prog.rd[i] = (int)(rng_next(&s) % NT);
  }
}

static void model_step(int i) {
  const kern *k = &prog.k[i];
  uint32_t *in[3], *out[2];
  int j;
  for (j = 0; j < k->nin; ++j) in[j] = model[k->in[j]];
  for (j = 0; j < k->nout; ++j) out[j] = model[k->out[j]];
  compute(k, in, out);
}

static double callback_score(void *user_data, const dao_tensor_access_info *info) {
  int *calls = (int *)user_data;
  ++*calls;
  assert_true(info->struct_size == sizeof *info);
  assert_true(info->tensor != NULL && info->bytes > 0);
  if (info->next_use == UINT64_MAX) return 1e30;
  return (double)(info->next_use - info->now);
}

static void run_program(size_t budget, const char *config, int expect_evictions) {
  dao_tiered *pool = NULL;
  dao_tensor *ts[NT];
  uint32_t *scratch = malloc(MIB);
  int t, i, calls = 0;
  dao_tiered_stats st;
  assert_non_null(scratch);
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), budget, config, &pool));
  if (strstr(config, "callback") != NULL) {
    assert_ok(dao_tiered_set_score_callback(pool, callback_score, &calls));
  }
  for (t = 0; t < NT; ++t) {
    assert_ok(dao_tensor_create(pool, prog.words[t] * 4, &ts[t]));
    model[t] = malloc(prog.words[t] * 4);
    assert_non_null(model[t]);
    fill_words(model[t], prog.words[t], (uint32_t)t);
    memcpy(scratch, model[t], prog.words[t] * 4);
    assert_ok(dao_tensor_write(ts[t], scratch, prog.words[t] * 4));
    memset(scratch, 0xab, prog.words[t] * 4); /* src may be reused at once */
  }
  for (i = 0; i < prog.nk; ++i) {
    const kern *k = &prog.k[i];
    dao_tensor *in[3], *out[2];
    int j;
    for (j = 0; j < k->nin; ++j) in[j] = ts[k->in[j]];
    for (j = 0; j < k->nout; ++j) out[j] = ts[k->out[j]];
    assert_ok(
        dao_kernel_submit(pool, run_kern, (void *)k, in, (size_t)k->nin, out, (size_t)k->nout));
    model_step(i);
    if (i % 100 == 50) {
      const int w = prog.wr[i / 100], r = prog.rd[i / 100];
      fill_words(model[w], prog.words[w], (uint32_t)(1000 + i));
      memcpy(scratch, model[w], prog.words[w] * 4);
      assert_ok(dao_tensor_write(ts[w], scratch, prog.words[w] * 4));
      memset(scratch, 0, MIB);
      assert_ok(dao_tensor_read(ts[r], scratch, prog.words[r] * 4));
      assert_memory_equal(scratch, model[r], prog.words[r] * 4);
    }
  }
  assert_ok(dao_tiered_synchronize(pool));
  /* the copies the last kernels caused have finished too */
  for (t = 0; t < NT; ++t) assert_int_not_equal(state_of(ts[t]), DAO_TENSOR_IN_TRANSIT);
  for (t = 0; t < NT; ++t) {
    assert_ok(dao_tensor_read(ts[t], scratch, prog.words[t] * 4));
    if (memcmp(scratch, model[t], prog.words[t] * 4) != 0) {
      print_error("config '%s' budget %zu: tensor %d differs from the host model\n", config, budget,
                  t);
      fail();
    }
  }
  st = get_stats(pool);
  assert_int_equal(st.kernels_submitted, (uint64_t)prog.nk);
  assert_int_equal(st.kernels_run, (uint64_t)prog.nk);
  assert_int_equal(st.tensors_live, NT);
  assert_true(st.peak_device_bytes <= budget);
  assert_true(st.device_bytes <= budget);
  if (expect_evictions) {
    assert_true(st.evictions > 0);
    assert_true(st.fetches > 0);
    assert_true(st.bytes_evicted > 0 && st.bytes_fetched > 0);
  } else {
    assert_int_equal(st.evictions, 0);
  }
  assert_true(st.prefetches_in_time <= st.prefetches);
  if (strstr(config, "prefetch=0") != NULL) assert_int_equal(st.prefetches, 0);
  if (strstr(config, "callback") != NULL) assert_true(calls > 0);
  for (t = 0; t < NT; ++t) {
    assert_ok(dao_tensor_release(ts[t]));
    free(model[t]);
  }
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  assert_int_equal(st.tensors_live, 0);
  assert_int_equal(st.device_bytes, 0);
  assert_int_equal(st.host_bytes, 0);
  assert_ok(dao_tiered_destroy(pool));
  free(scratch);
}

static void test_random_program(void **state) {
  static const char *const configs[] = {
      "policy=belady", "policy=lru", "policy=size_aware", "policy=callback",
      "policy=belady,prefetch=0", "policy=lru,prefetch=4,link_bandwidth=64GB/s",
      /* copies staged in chunks smaller than most tensors, one buffer each way */
      "policy=belady,staging_buffers=1,staging_chunk=64KiB",
      /* straight from pageable memory; pinned */
      "policy=belady,staging_buffers=0", "policy=belady,sim_host=pinned"};
  size_t c;
  (void)state;
  make_program(SLOW_BUILD ? 300 : MAX_KERNELS);
  assert_true(prog.total > 4 * 4 * MIB);
  /* everything fits: no eviction */
  run_program(prog.total + 64 * KIB * NT, "policy=belady", 0);
  for (c = 0; c < sizeof configs / sizeof configs[0]; ++c) run_program(4 * MIB, configs[c], 1);
}

/* --- the link: staged and blocking copies, honest statistics -------------- */

static dao_tiered_link_stats get_link_stats(dao_tiered *pool) {
  dao_tiered_link_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  assert_ok(dao_tiered_get_link_stats(pool, &s));
  return s;
}

/* Adds 1 to every word of each output (in place). */
static dao_status k_inc_all(void *user_data, void *const *inputs, size_t input_count,
                            void *const *outputs, size_t output_count, dao_stream stream) {
  size_t i, w;
  const size_t words = (size_t)(uintptr_t)user_data;
  (void)inputs;
  (void)input_count;
  (void)stream;
  for (i = 0; i < output_count; ++i)
    for (w = 0; w < words; ++w) ((uint32_t *)outputs[i])[w] += 1;
  return DAO_OK;
}

/* --- a gate: kernels that wait until the test opens it -------------------- */

typedef struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int open, entered;
} gate;

static gate the_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void gate_reset(void) {
  pthread_mutex_lock(&the_gate.mutex);
  the_gate.open = 0;
  the_gate.entered = 0;
  pthread_mutex_unlock(&the_gate.mutex);
}

static void gate_open(void) {
  pthread_mutex_lock(&the_gate.mutex);
  the_gate.open = 1;
  pthread_cond_broadcast(&the_gate.cond);
  pthread_mutex_unlock(&the_gate.mutex);
}

static void gate_wait_entered(void) {
  pthread_mutex_lock(&the_gate.mutex);
  while (!the_gate.entered) pthread_cond_wait(&the_gate.cond, &the_gate.mutex);
  pthread_mutex_unlock(&the_gate.mutex);
}

/* Waits for the gate, then writes 7 to every output. */
static dao_status k_gated(void *user_data, void *const *inputs, size_t input_count,
                          void *const *outputs, size_t output_count, dao_stream stream) {
  size_t i;
  (void)user_data;
  (void)inputs;
  (void)input_count;
  (void)stream;
  pthread_mutex_lock(&the_gate.mutex);
  the_gate.entered = 1;
  pthread_cond_broadcast(&the_gate.cond);
  while (!the_gate.open) pthread_cond_wait(&the_gate.cond, &the_gate.mutex);
  pthread_mutex_unlock(&the_gate.mutex);
  for (i = 0; i < output_count; ++i) *(uint32_t *)outputs[i] = 7;
  return DAO_OK;
}

/* Three tensors of 300 KiB + 4 bytes (not a multiple of any chunk) in a
 * budget of two, each incremented in turn 4 times: every kernel evicts one
 * (dirty) and fetches one. Everything is queued behind a gated kernel, so
 * that each write runs knowing its kernels: the first two writes go
 * straight to the device (a kernel uses them next, and free blocks fit
 * them), the third stays on the host (no room without evicting). Returns
 * the link statistics; checks the data and what every configuration must
 * give. */
static dao_tiered_link_stats run_link(const char *config) {
  enum { N = 3, ROUNDS = 4 };
  const size_t bytes = 300 * KIB + 4, words = bytes / 4;
  dao_tiered *pool = NULL;
  dao_tensor *t[N];
  dao_tiered_stats st;
  dao_tiered_link_stats ls;
  uint32_t *buf = malloc(bytes);
  int i, r;
  size_t w;
  assert_non_null(buf);
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * bytes + 1024, config, &pool));
  gate_reset();
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, NULL, 0));
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_create(pool, bytes, &t[i]));
    for (w = 0; w < words; ++w) buf[w] = (uint32_t)(i * 1000000 + w);
    assert_ok(dao_tensor_write(t[i], buf, bytes));
  }
  for (r = 0; r < ROUNDS; ++r)
    for (i = 0; i < N; ++i)
      assert_ok(dao_kernel_submit(pool, k_inc_all, (void *)(uintptr_t)words, NULL, 0, &t[i], 1));
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_read(t[i], buf, bytes));
    for (w = 0; w < words; ++w) {
      if (buf[w] != (uint32_t)(i * 1000000 + w + ROUNDS)) {
        print_error("%s: tensor %d word %zu is %u\n", config, i, w, buf[w]);
        fail();
      }
    }
  }
  st = get_stats(pool);
  ls = get_link_stats(pool);
  assert_true(st.evictions > 0 && st.fetches > 0);
  /* To the device: the fetches and the two writes that went there. */
  assert_int_equal(ls.bytes_to_device, st.bytes_fetched + 2 * bytes);
  assert_int_equal(ls.bytes_to_host, st.bytes_evicted);
  assert_int_equal(ls.copies_to_device, st.fetches + 2);
  assert_int_equal(ls.copies_to_host, st.evictions);
  assert_int_equal(ls.stall_ns, st.stall_ns);
  assert_true(ls.copy_ns_to_device > 0 && ls.copy_ns_to_host > 0);
  assert_true(ls.copy_ns <= ls.copy_ns_to_device + ls.copy_ns_to_host);
  assert_true(ls.copy_ns >= ls.copy_ns_to_device && ls.copy_ns >= ls.copy_ns_to_host);
  assert_int_equal(ls.hidden_ns, ls.copy_ns > ls.stall_ns ? ls.copy_ns - ls.stall_ns : 0);
  assert_true(ls.to_device_bytes_per_s > 0 && ls.to_host_bytes_per_s > 0);
  assert_true(ls.kernel_ns > 0);
  for (i = 0; i < N; ++i) assert_ok(dao_tensor_release(t[i]));
  assert_ok(dao_tiered_destroy(pool));
  free(buf);
  return ls;
}

static void test_link(void **state) {
  dao_tiered_link_stats ls;
  (void)state;
  /* Staged: every byte each way went through two buffers of 64 KiB each way. */
  ls = run_link("staging_buffers=2,staging_chunk=64KiB,prefetch=1");
  assert_int_equal(ls.host_pageable, 1);
  assert_int_equal(ls.staged, 1);
  assert_int_equal(ls.staging_bytes, 4 * 64 * KIB);
  assert_int_equal(ls.staged_bytes, ls.bytes_to_device + ls.bytes_to_host);
  /* Staged with modelled pageable rates of 1 GB/s (1 byte per ns): each job
     takes at least bytes / rate, so the copy time each way does too. */
  ls = run_link("staging_buffers=2,staging_chunk=64KiB,pageable_to_device=1GB/s,"
                "pageable_to_host=1GB/s");
  assert_true(ls.copy_ns_to_device >= ls.bytes_to_device);
  assert_true(ls.copy_ns_to_host >= ls.bytes_to_host);
  /* Straight from pageable memory at 1 GB/s: each copy blocks the executor
     for at least bytes / rate, and every such moment is a stall. */
  ls = run_link("staging_buffers=0,pageable_to_device=1GB/s,pageable_to_host=1GB/s");
  assert_int_equal(ls.staged, 0);
  assert_int_equal(ls.staging_bytes, 0);
  assert_int_equal(ls.staged_bytes, 0);
  assert_true(ls.stall_ns >= ls.bytes_to_device + ls.bytes_to_host);
  /* A pinned tier: asynchronous copies, no staging. */
  ls = run_link("sim_host=pinned,link_bandwidth=2GB/s");
  assert_int_equal(ls.host_pageable, 0);
  assert_int_equal(ls.staged, 0);
  assert_int_equal(ls.staging_bytes, 0);
}

/* --- dao_tiered_trim: the device budget given back, and taken again -------- */

static dao_status k_init(void *user_data, void *const *inputs, size_t input_count,
                         void *const *outputs, size_t output_count, dao_stream stream);

static void test_trim(void **state) {
  enum { N = 3 };
  const size_t bytes = 256 * KIB, words = bytes / 4;
  dao_tiered *pool = NULL, *tight = NULL;
  dao_tensor *t[N];
  uint32_t *buf = malloc(bytes);
  void *other = NULL;
  dao_allocator *rest = NULL; /* the rest of the program: no cache */
  size_t w;
  int i, r;
  (void)state;
  assert_non_null(buf);
  assert_ok(dao_allocator_create(dao_place_sim(1), "system", NULL, &rest));
  /* SIM device 1 has 16 MiB: the pool's 12 MiB leave no room for 8 more. */
  assert_ok(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 12 * MIB, NULL, &pool));
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_create(pool, bytes, &t[i]));
    for (w = 0; w < words; ++w) buf[w] = (uint32_t)(i * 1000 + w);
    assert_ok(dao_tensor_write(t[i], buf, bytes));
  }
  for (r = 0; r < 2; ++r)
    for (i = 0; i < N; ++i)
      assert_ok(dao_kernel_submit(pool, k_inc_all, (void *)(uintptr_t)words, NULL, 0, &t[i], 1));
  assert_status(dao_allocator_alloc(rest, 8 * MIB, NULL, &other), DAO_ERR_OUT_OF_MEMORY);
  /* Waits for the kernels, moves the resident (dirty) tensors to the host,
     gives the budget back to the place's allocator: the rest of the
     program can use it. */
  assert_int_equal(get_stats(pool).device_range_bytes, 12 * MIB);
  assert_ok(dao_tiered_trim(pool));
  assert_int_equal(get_stats(pool).device_bytes, 0);
  assert_int_equal(get_stats(pool).device_range_bytes, 0);
  assert_int_equal(get_stats(pool).trims, 1);
  assert_int_equal(get_stats(pool).idle_trims, 0);
  assert_int_equal(get_stats(pool).kernels_run, 2 * N);
  for (i = 0; i < N; ++i) assert_int_equal(state_of(t[i]), DAO_TENSOR_ON_HOST);
  assert_ok(dao_allocator_alloc(rest, 8 * MIB, NULL, &other));
  assert_ok(dao_allocator_free(rest, other));
  assert_ok(dao_tiered_trim(pool)); /* again: nothing to do */
  assert_int_equal(get_stats(pool).trims, 1);
  /* The next kernels take the budget again and fetch what they use. */
  for (i = 0; i < N; ++i)
    assert_ok(dao_kernel_submit(pool, k_inc_all, (void *)(uintptr_t)words, NULL, 0, &t[i], 1));
  assert_ok(dao_tiered_synchronize(pool));
  assert_true(get_stats(pool).device_bytes > 0);
  assert_int_equal(get_stats(pool).device_range_bytes, 12 * MIB);
  assert_status(dao_allocator_alloc(rest, 8 * MIB, NULL, &other), DAO_ERR_OUT_OF_MEMORY);
  assert_ok(dao_allocator_destroy(rest));
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_read(t[i], buf, bytes));
    for (w = 0; w < words; ++w) assert_int_equal(buf[w], (uint32_t)(i * 1000 + w + 3));
  }
  for (i = 0; i < N; ++i) assert_ok(dao_tensor_release(t[i]));
  assert_ok(dao_tiered_destroy(pool));
  /* A host tier too small for what lives on the device alone: refused,
     nothing moved (the pool goes on). */
  assert_ok(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 2 * bytes + 1024,
                              "host_budget=256KiB", &tight));
  {
    dao_tensor *a = NULL, *b = NULL;
    assert_ok(dao_tensor_create(tight, bytes, &a));
    assert_ok(dao_tensor_create(tight, bytes, &b));
    assert_ok(dao_kernel_submit(tight, k_init, (void *)(uintptr_t)7, NULL, 0, &a, 1));
    assert_ok(dao_kernel_submit(tight, k_init, (void *)(uintptr_t)8, NULL, 0, &b, 1));
    assert_failure_mentions(dao_tiered_trim(tight), DAO_ERR_OUT_OF_MEMORY, "nothing was moved");
    assert_int_equal(get_stats(tight).device_bytes, 2 * bytes);
    assert_int_equal(get_stats(tight).trims, 0);
    assert_true(get_stats(tight).device_range_bytes > 0);
    assert_int_equal(state_of(a), DAO_TENSOR_ON_DEVICE);
    assert_ok(dao_tensor_read(a, buf, bytes));
    assert_int_equal(buf[0], 7);
    assert_ok(dao_tiered_synchronize(tight));
    assert_ok(dao_tensor_release(a));
    assert_ok(dao_tensor_release(b));
  }
  assert_ok(dao_tiered_destroy(tight));
  /* bad input */
  assert_failure_mentions(dao_tiered_trim(NULL), DAO_ERR_INVALID_ARGUMENT, "pool");
  free(buf);
}

/* Waits (up to 20 s: the pool's idle_trim is 20 ms; this bound is not a
   timing target, only a guard against a pool that never trims) until the
   pool's statistics say `idle_trims` >= want; returns its stats then. */
static dao_tiered_stats wait_idle_trims(dao_tiered *pool, uint64_t want) {
  dao_tiered_stats s = get_stats(pool);
  int i;
  for (i = 0; i < 20000 && s.idle_trims < want; ++i) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    s = get_stats(pool);
  }
  return s;
}

/* idle_trim: the pool gives its range back by itself once its queue has
   been empty that long, and takes it again for the next kernel. */
static void test_idle_trim(void **state) {
  enum { N = 3 };
  const size_t bytes = 256 * KIB, words = bytes / 4;
  dao_tiered *pool = NULL, *tight = NULL;
  dao_tensor *t[N];
  uint32_t *buf = malloc(bytes);
  void *other = NULL;
  dao_allocator *rest = NULL;
  dao_tiered_stats s;
  size_t w;
  int i;
  (void)state;
  assert_non_null(buf);
  assert_ok(dao_allocator_create(dao_place_sim(1), "system", NULL, &rest));
  assert_ok(
      dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 12 * MIB, "idle_trim=20ms", &pool));
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_create(pool, bytes, &t[i]));
    for (w = 0; w < words; ++w) buf[w] = (uint32_t)(i * 1000 + w);
    assert_ok(dao_tensor_write(t[i], buf, bytes));
    assert_ok(dao_kernel_submit(pool, k_inc_all, (void *)(uintptr_t)words, NULL, 0, &t[i], 1));
  }
  s = wait_idle_trims(pool, 1);
  assert_int_equal(s.idle_trims, 1);
  assert_int_equal(s.trims, 1);
  assert_int_equal(s.device_range_bytes, 0);
  assert_int_equal(s.device_bytes, 0);
  assert_int_equal(s.kernels_run, N);
  for (i = 0; i < N; ++i) assert_int_equal(state_of(t[i]), DAO_TENSOR_ON_HOST);
  /* The rest of the program finds the room... */
  assert_ok(dao_allocator_alloc(rest, 8 * MIB, NULL, &other));
  assert_ok(dao_allocator_free(rest, other));
  /* ... and an idle pool that holds nothing does not trim again. */
  {
    struct timespec idle = {0, 100000000};
    nanosleep(&idle, NULL);
  }
  assert_int_equal(get_stats(pool).trims, 1);
  /* The next kernels take the range again; once idle, it goes back. */
  for (i = 0; i < N; ++i)
    assert_ok(dao_kernel_submit(pool, k_inc_all, (void *)(uintptr_t)words, NULL, 0, &t[i], 1));
  s = wait_idle_trims(pool, 2);
  assert_int_equal(s.idle_trims, 2);
  assert_int_equal(s.kernels_run, 2 * N);
  assert_int_equal(s.device_range_bytes, 0);
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_read(t[i], buf, bytes));
    for (w = 0; w < words; ++w) assert_int_equal(buf[w], (uint32_t)(i * 1000 + w + 2));
    assert_ok(dao_tensor_release(t[i]));
  }
  assert_ok(dao_tiered_destroy(pool));
  /* A host tier with no room for what lives on the device alone: the idle
     trim moves nothing and the pool goes on, range held. */
  assert_ok(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 2 * bytes + 1024,
                              "host_budget=256KiB,idle_trim=1ms", &tight));
  {
    dao_tensor *a = NULL, *b = NULL;
    struct timespec idle = {0, 50000000};
    assert_ok(dao_tensor_create(tight, bytes, &a));
    assert_ok(dao_tensor_create(tight, bytes, &b));
    assert_ok(dao_kernel_submit(tight, k_init, (void *)(uintptr_t)7, NULL, 0, &a, 1));
    assert_ok(dao_kernel_submit(tight, k_init, (void *)(uintptr_t)8, NULL, 0, &b, 1));
    assert_ok(dao_tiered_synchronize(tight));
    nanosleep(&idle, NULL);
    s = get_stats(tight);
    assert_int_equal(s.idle_trims, 0);
    assert_int_equal(s.trims, 0);
    assert_int_equal(s.device_bytes, 2 * bytes);
    assert_true(s.device_range_bytes > 0);
    assert_ok(dao_tensor_read(b, buf, bytes));
    assert_int_equal(buf[0], 8);
    assert_ok(dao_tensor_release(a));
    assert_ok(dao_tensor_release(b));
  }
  assert_ok(dao_tiered_destroy(tight));
  assert_ok(dao_allocator_destroy(rest));
  free(buf);
}

/* --- exact evictions ------------------------------------------------------- */

static dao_status k_init(void *user_data, void *const *inputs, size_t input_count,
                         void *const *outputs, size_t output_count, dao_stream stream) {
  (void)inputs;
  (void)input_count;
  (void)stream;
  if (output_count != 1) return DAO_ERR_INTERNAL;
  *(uint32_t *)outputs[0] = (uint32_t)(uintptr_t)user_data;
  return DAO_OK;
}

/* Every input and output is incremented in place (word 0). */
static dao_status k_inc(void *user_data, void *const *inputs, size_t input_count,
                        void *const *outputs, size_t output_count, dao_stream stream) {
  size_t i;
  (void)user_data;
  (void)inputs;
  (void)input_count;
  (void)stream;
  for (i = 0; i < output_count; ++i) *(uint32_t *)outputs[i] += 1;
  return DAO_OK;
}

static uint32_t read_word(dao_tensor *t, size_t bytes) {
  uint32_t *buf = malloc(bytes), v;
  assert_non_null(buf);
  assert_ok(dao_tensor_read(t, buf, bytes));
  v = buf[0];
  free(buf);
  return v;
}

static void exact_sequence(const char *config, uint64_t evictions, uint64_t fetches) {
  const size_t S = 64 * KIB;
  dao_tiered *pool;
  dao_tensor *a, *b, *c;
  dao_tiered_stats st;
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * S, config, &pool));
  assert_ok(dao_tensor_create(pool, S, &a));
  assert_ok(dao_tensor_create(pool, S, &b));
  assert_ok(dao_tensor_create(pool, S, &c));
  assert_int_equal(state_of(a), DAO_TENSOR_UNINITIALIZED);
  /* Everything is queued before the executor starts on it, so that it knows
   * the whole future. */
  gate_reset();
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, NULL, 0));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)10, NULL, 0, &a, 1));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)20, NULL, 0, &b, 1));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)30, NULL, 0, &c, 1));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &a, 1, &a, 1));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &b, 1, &b, 1));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &c, 1, &c, 1));
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  assert_int_equal(st.kernels_run, 7);
  assert_int_equal(st.evictions, evictions);
  assert_int_equal(st.bytes_evicted, evictions * S);
  assert_int_equal(st.fetches, fetches);
  assert_int_equal(st.bytes_fetched, fetches * S);
  assert_int_equal(st.peak_device_bytes, 2 * S);
  assert_int_equal(st.device_bytes, 2 * S);
  assert_int_equal(state_of(a), DAO_TENSOR_ON_HOST);
  assert_int_equal(state_of(b), DAO_TENSOR_ON_DEVICE);
  assert_int_equal(state_of(c), DAO_TENSOR_ON_DEVICE);
  assert_int_equal(read_word(a, S), 11);
  assert_int_equal(read_word(b, S), 21);
  assert_int_equal(read_word(c, S), 31);
  assert_ok(dao_tiered_destroy(pool));
}

static void test_exact_belady(void **state) {
  (void)state;
  /* (after the gate kernel) init C: A is next used sooner than B -> B out;
   * inc B: A never again, C next -> A out (copied: not released), B back. */
  exact_sequence("policy=belady,prefetch=0", 2, 1);
}

static void test_exact_lru(void **state) {
  (void)state;
  /* init C: A out (least recent); inc A: B out, A back; inc B: C out, B back;
   * inc C: A out, C back. */
  exact_sequence("policy=lru,prefetch=0", 4, 3);
}

/* --- compaction ------------------------------------------------------------ */

/* Fills its output with words seed + i. */
static dao_status k_fill(void *user_data, void *const *inputs, size_t input_count,
                         void *const *outputs, size_t output_count, dao_stream stream) {
  const size_t *spec = user_data; /* {seed, bytes} */
  uint32_t *out;
  size_t i;
  (void)inputs;
  (void)input_count;
  (void)stream;
  if (output_count != 1) return DAO_ERR_INTERNAL;
  out = outputs[0];
  for (i = 0; i < spec[1] / 4; ++i) out[i] = (uint32_t)(spec[0] + i);
  return DAO_OK;
}

/* out[i] = a[i % na] + 3 * c[i % nc] (sizes in words in user_data). */
static dao_status k_mix(void *user_data, void *const *inputs, size_t input_count,
                        void *const *outputs, size_t output_count, dao_stream stream) {
  const size_t *n = user_data; /* {na, nc, nout} */
  const uint32_t *a, *c;
  uint32_t *out;
  size_t i;
  (void)stream;
  if (input_count != 2 || output_count != 1) return DAO_ERR_INTERNAL;
  a = inputs[0];
  c = inputs[1];
  out = outputs[0];
  for (i = 0; i < n[2]; ++i) out[i] = a[i % n[0]] + 3u * c[i % n[1]];
  return DAO_OK;
}

/* Fills A, B, C, D (sizes[0..3]) in that order, so that they lie in that
 * order from offset 0; releases those of `release_mask`; then runs a kernel
 * over A and C writing E (e_bytes): A and C, pinned, split the free space.
 * Reads A, C, E and the tensors kept of B, D into `out` (concatenated). */
static dao_tiered_stats frag_run(size_t budget, const size_t sizes[4], unsigned release_mask,
                                 size_t e_bytes, uint32_t *out) {
  dao_tiered *pool;
  dao_tensor *t[5];
  size_t spec[5][2], n[3], i, at = 0;
  dao_tiered_stats st;
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), budget, "policy=belady,prefetch=0",
                              &pool));
  for (i = 0; i < 4; ++i) {
    assert_ok(dao_tensor_create(pool, sizes[i], &t[i]));
    spec[i][0] = 1000u * (i + 1);
    spec[i][1] = sizes[i];
    assert_ok(dao_kernel_submit(pool, k_fill, spec[i], NULL, 0, &t[i], 1));
  }
  for (i = 0; i < 4; ++i) {
    if (release_mask & (1u << i)) assert_ok(dao_tensor_release(t[i]));
  }
  assert_ok(dao_tensor_create(pool, e_bytes, &t[4]));
  n[0] = sizes[0] / 4;
  n[1] = sizes[2] / 4;
  n[2] = e_bytes / 4;
  {
    dao_tensor *in[2];
    in[0] = t[0];
    in[1] = t[2];
    assert_ok(dao_kernel_submit(pool, k_mix, n, in, 2, &t[4], 1));
  }
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  assert_ok(dao_tensor_read(t[0], out + at, sizes[0]));
  at += sizes[0] / 4;
  assert_ok(dao_tensor_read(t[2], out + at, sizes[2]));
  at += sizes[2] / 4;
  assert_ok(dao_tensor_read(t[4], out + at, e_bytes));
  at += e_bytes / 4;
  for (i = 1; i < 4; i += 2) {
    if (release_mask & (1u << i)) continue;
    assert_ok(dao_tensor_read(t[i], out + at, sizes[i]));
    at += sizes[i] / 4;
  }
  assert_ok(dao_tiered_destroy(pool));
  return st;
}

static void check_frag(size_t budget, const size_t sizes[4], unsigned release_mask, size_t e_bytes,
                       uint64_t evictions, uint64_t bytes_moved) {
  const size_t total = (sizes[0] + sizes[1] + sizes[2] + sizes[3] + e_bytes) / 4;
  uint32_t *got = calloc(total, 4), *want = calloc(total, 4);
  dao_tiered_stats st;
  assert_non_null(got);
  assert_non_null(want);
  st = frag_run(16 * budget, sizes, release_mask, e_bytes, want);
  assert_int_equal(st.evictions, 0);
  st = frag_run(budget, sizes, release_mask, e_bytes, got);
  assert_memory_equal(got, want, total * 4);
  assert_int_equal(st.kernels_run, 5);
  assert_int_equal(st.evictions, evictions);
  assert_int_equal(st.bytes_evicted + st.bytes_fetched, bytes_moved);
  assert_true(st.peak_device_bytes <= budget);
  free(got);
  free(want);
}

static void test_compaction_evicts_only_what_is_needed(void **state) {
  /* [A B C D] fill the budget; the kernel over A and C needs 2S for E: B and
   * D go (2S copied out), A and C slide together; evicting everything would
   * also copy A and C out and back (6S). */
  const size_t S = 64 * KIB;
  const size_t sizes[4] = {S, S, S, S};
  (void)state;
  check_frag(4 * S, sizes, 0, 2 * S, 2, 2 * S);
}

static void test_compaction_without_eviction(void **state) {
  /* [A b C d] with b and d released: S free in two pieces around C; the
   * kernel over A and C needs S for E: C slides down by S/4 (overlapping
   * itself, so in chunks), nothing is copied to or from the host. */
  const size_t S = 64 * KIB;
  const size_t sizes[4] = {S, S / 4, 2 * S, 3 * S / 4};
  (void)state;
  check_frag(4 * S, sizes, 0xA, S, 0, 0);
}

/* --- release --------------------------------------------------------------- */

static void test_release_after_last_use(void **state) {
  dao_tiered *pool;
  dao_tensor *t, *u;
  dao_tiered_stats st;
  dao_status s;
  (void)state;
  gate_reset();
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &pool));
  assert_ok(dao_tensor_create(pool, 64 * KIB, &t));
  assert_ok(dao_tensor_create(pool, 128 * KIB, &u));
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, &t, 1));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &t, 1, &u, 1));
  assert_ok(dao_tensor_release(t));
  gate_wait_entered();
  /* the first kernel runs, the second is queued: t lives on */
  st = get_stats(pool);
  assert_int_equal(st.tensors_live, 2);
  assert_int_equal(st.device_bytes, 64 * KIB);
  assert_int_equal(state_of(u), DAO_TENSOR_UNINITIALIZED);
  /* a released handle is refused */
  assert_status(dao_tensor_release(t), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_kernel_submit(pool, k_inc, NULL, &t, 1, NULL, 0), DAO_ERR_INVALID_ARGUMENT);
  {
    dao_tensor_state ts;
    uint32_t w = 0;
    assert_status(dao_tensor_get_state(t, &ts), DAO_ERR_INVALID_ARGUMENT);
    assert_status(dao_tensor_write(t, &w, 4), DAO_ERR_INVALID_ARGUMENT);
  }
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  assert_int_equal(st.kernels_run, 2);
  assert_int_equal(st.tensors_live, 1);
  assert_int_equal(st.device_bytes, 128 * KIB);
  assert_int_equal(st.peak_device_bytes, 192 * KIB);
  s = dao_tensor_release(u);
  assert_ok(s);
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  assert_int_equal(st.tensors_live, 0);
  assert_int_equal(st.device_bytes, 0);
  assert_ok(dao_tiered_destroy(pool));
}

/* A tensor released right after its last use is freed when that kernel has
 * run even while later kernels are still queued. */
static void test_release_frees_early(void **state) {
  dao_tiered *pool;
  dao_tensor *t, *u;
  dao_tiered_stats st;
  (void)state;
  gate_reset();
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &pool));
  assert_ok(dao_tensor_create(pool, 64 * KIB, &t));
  assert_ok(dao_tensor_create(pool, 64 * KIB, &u));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, NULL, 0, &t, 1));
  assert_ok(dao_tensor_release(t));
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, &u, 1));
  gate_wait_entered();
  st = get_stats(pool);
  assert_int_equal(st.tensors_live, 1);
  assert_int_equal(st.device_bytes, 64 * KIB);
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  assert_int_equal(read_word(u, 64 * KIB), 7);
  assert_ok(dao_tiered_destroy(pool));
}

/* --- two submitting threads ------------------------------------------------ */

#define THREAD_KERNELS 300

typedef struct submitter {
  dao_tiered *pool;
  dao_tensor *own, *shared;
  int failures;
} submitter;

static void *submit_loop(void *p) {
  submitter *s = (submitter *)p;
  int i;
  for (i = 0; i < THREAD_KERNELS; ++i) {
    dao_tensor *both[2];
    both[0] = s->own;
    both[1] = s->shared;
    if (dao_kernel_submit(s->pool, k_inc, NULL, both, 2, both, 2) != DAO_OK) ++s->failures;
  }
  return NULL;
}

static void test_two_threads(void **state) {
  const size_t S = 64 * KIB;
  dao_tiered *pool;
  dao_tensor *shared;
  submitter subs[2];
  pthread_t threads[2];
  uint32_t zero[1] = {0};
  uint32_t *buf = calloc(1, S);
  int i;
  (void)state;
  (void)zero;
  assert_non_null(buf);
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * S, "policy=lru", &pool));
  assert_ok(dao_tensor_create(pool, S, &shared));
  assert_ok(dao_tensor_write(shared, buf, S));
  for (i = 0; i < 2; ++i) {
    subs[i].pool = pool;
    subs[i].shared = shared;
    subs[i].failures = 0;
    assert_ok(dao_tensor_create(pool, S, &subs[i].own));
    assert_ok(dao_tensor_write(subs[i].own, buf, S));
  }
  for (i = 0; i < 2; ++i)
    assert_int_equal(pthread_create(&threads[i], NULL, submit_loop, &subs[i]), 0);
  for (i = 0; i < 2; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  assert_ok(dao_tiered_synchronize(pool));
  for (i = 0; i < 2; ++i) {
    assert_int_equal(subs[i].failures, 0);
    assert_int_equal(read_word(subs[i].own, S), THREAD_KERNELS);
  }
  assert_int_equal(read_word(shared, S), 2 * THREAD_KERNELS);
  assert_int_equal(get_stats(pool).kernels_run, 2 * THREAD_KERNELS);
  assert_ok(dao_tiered_destroy(pool));
  free(buf);
}

/* --- writes and reads in kernel order --------------------------------------- */

static dao_status k_slow_inc(void *user_data, void *const *inputs, size_t input_count,
                             void *const *outputs, size_t output_count, dao_stream stream) {
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  return k_inc(user_data, inputs, input_count, outputs, output_count, stream);
}

static void test_write_read_order(void **state) {
  const size_t S = 256 * KIB;
  dao_tiered *pool;
  dao_tensor *t, *other;
  uint32_t *buf = calloc(1, S);
  (void)state;
  assert_non_null(buf);
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), S, NULL, &pool));
  assert_ok(dao_tensor_create(pool, S, &t));
  assert_ok(dao_tensor_create(pool, S, &other));
  assert_status(dao_tensor_read(t, buf, S), DAO_ERR_INVALID_STATE); /* never written */
  buf[0] = 5;
  assert_ok(dao_tensor_write(t, buf, S));
  buf[0] = 999; /* reused at once */
  assert_ok(dao_kernel_submit(pool, k_slow_inc, NULL, &t, 1, &t, 1));
  assert_int_equal(read_word(t, S), 6); /* waits for the slow kernel */
  assert_ok(dao_kernel_submit(pool, k_slow_inc, NULL, &t, 1, &t, 1));
  buf[0] = 100;
  assert_ok(dao_tensor_write(t, buf, S)); /* after the slow kernel */
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &t, 1, &t, 1));
  /* other evicts t (budget of one tensor) */
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)3, NULL, 0, &other, 1));
  assert_int_equal(read_word(t, S), 101);
  assert_int_equal(read_word(other, S), 3);
  buf[0] = 50;
  assert_ok(dao_tensor_write(other, buf, S));
  assert_int_equal(read_word(other, S), 50);
  assert_ok(dao_tiered_synchronize(pool));
  assert_ok(dao_tiered_destroy(pool));
  free(buf);
}

/* --- bad input and failures -------------------------------------------------- */

static dao_status k_fail(void *user_data, void *const *inputs, size_t input_count,
                         void *const *outputs, size_t output_count, dao_stream stream) {
  (void)user_data;
  (void)inputs;
  (void)input_count;
  (void)outputs;
  (void)output_count;
  (void)stream;
  return DAO_ERR_BACKEND;
}

static double zero_score(void *user_data, const dao_tensor_access_info *info) {
  (void)user_data;
  (void)info;
  return 0;
}

static void test_bad_input(void **state) {
  dao_tiered *pool, *other_pool, *p2;
  dao_tensor *t, *big, *big2, *foreign;
  dao_tiered_stats st;
  uint32_t word = 0;
  dao_tensor_state ts;
  (void)state;
  /* create */
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, NULL),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 0, NULL, &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_create(dao_place_cpu(), dao_place_cpu(), MIB, NULL, &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_sim(1), MIB, NULL, &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "bogus=1", &p2),
                          DAO_ERR_INVALID_ARGUMENT, "bogus");
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "policy=mru", &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "prefetch=-1", &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "prefetch=x", &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "host_budget=lots", &p2),
                DAO_ERR_INVALID_ARGUMENT);
  assert_status(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "link_bandwidth=fast", &p2),
      DAO_ERR_INVALID_ARGUMENT);
  assert_status(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "link_bandwidth=0GB/s", &p2),
      DAO_ERR_INVALID_ARGUMENT);
  /* So slow that a copy's time overflows a clock (issue 20): refused. */
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "link_bandwidth=1e-300", &p2),
      DAO_ERR_INVALID_ARGUMENT, "at least 1 B/s");
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "link_bandwidth=1e308TB/s", &p2),
      DAO_ERR_INVALID_ARGUMENT, "link_bandwidth");
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "staging_buffers=65", &p2),
      DAO_ERR_INVALID_ARGUMENT, "staging_buffers");
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "staging_chunk=1KiB", &p2),
      DAO_ERR_INVALID_ARGUMENT, "staging_chunk");
  assert_failure_mentions(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB,
                                            "staging_buffers=8,staging_chunk=256MiB", &p2),
                          DAO_ERR_INVALID_ARGUMENT, "per direction");
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "sim_host=gpu", &p2),
      DAO_ERR_INVALID_ARGUMENT, "sim_host");
  {
    static const char *const bad_idle[] = {"idle_trim=soon", "idle_trim=5",   "idle_trim=1h",
                                           "idle_trim=10us", "idle_trim=-1s", "idle_trim=25*60min",
                                           "idle_trim=2ns",  "idle_trim=nans"};
    size_t k;
    for (k = 0; k < sizeof bad_idle / sizeof bad_idle[0]; ++k) {
      p2 = NULL;
      assert_failure_mentions(
          dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, bad_idle[k], &p2),
          DAO_ERR_INVALID_ARGUMENT, "idle_trim");
      assert_null(p2);
    }
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "idle_trim=off", &p2));
    assert_ok(dao_tiered_destroy(p2));
    assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "idle_trim=1.5s", &p2));
    assert_ok(dao_tiered_destroy(p2));
  }
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "pageable_to_device=0", &p2),
      DAO_ERR_INVALID_ARGUMENT, "pageable_to_device");
  assert_status(dao_tiered_create(dao_place_sim(7), dao_place_cpu(), MIB, NULL, &p2),
                DAO_ERR_NO_DEVICE);
  assert_status(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 32 * MIB, NULL, &p2),
                DAO_ERR_OUT_OF_MEMORY);
  assert_ok(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), MIB,
                              "policy=size_aware,prefetch=0,host_budget=8MiB,"
                              "link_bandwidth=25GiB/s",
                              &p2));
  assert_ok(dao_tiered_destroy(p2));

  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "", &pool));
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &other_pool));
  /* set_score_callback */
  assert_status(dao_tiered_set_score_callback(pool, zero_score, NULL), DAO_ERR_INVALID_STATE);
  assert_status(dao_tiered_set_score_callback(NULL, zero_score, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_set_score_callback(pool, NULL, NULL), DAO_ERR_INVALID_ARGUMENT);
  /* tensors */
  assert_status(dao_tensor_create(NULL, 4, &t), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_create(pool, 4, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_create(pool, 0, &t), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_create(pool, 2 * MIB, &t), DAO_ERR_OUT_OF_MEMORY);
  assert_ok(dao_tensor_create(pool, 4, &t));
  assert_ok(dao_tensor_create(pool, 600 * KIB, &big));
  assert_ok(dao_tensor_create(pool, 600 * KIB, &big2));
  assert_ok(dao_tensor_create(other_pool, 4, &foreign));
  assert_status(dao_tensor_write(NULL, &word, 4), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_write(t, NULL, 4), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_write(t, &word, 8), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_read(NULL, &word, 4), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_read(t, NULL, 4), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_read(t, &word, 4), DAO_ERR_INVALID_STATE);
  assert_ok(dao_tensor_write(t, &word, 4));
  assert_status(dao_tensor_read(t, &word, 2), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_get_state(NULL, &ts), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_get_state(t, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_release(NULL), DAO_ERR_INVALID_ARGUMENT);
  /* a pool handle is not a tensor and the other way round */
  assert_status(dao_tensor_release((dao_tensor *)(void *)pool), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_synchronize((dao_tiered *)(void *)t), DAO_ERR_INVALID_ARGUMENT);
  /* submit */
  assert_status(dao_kernel_submit(NULL, k_inc, NULL, &t, 1, &t, 1), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_kernel_submit(pool, NULL, NULL, &t, 1, &t, 1), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_kernel_submit(pool, k_inc, NULL, NULL, 1, &t, 1), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_kernel_submit(pool, k_inc, NULL, &t, 1, NULL, 1), DAO_ERR_INVALID_ARGUMENT);
  {
    dao_tensor *with_null[2];
    with_null[0] = t;
    with_null[1] = NULL;
    assert_status(dao_kernel_submit(pool, k_inc, NULL, with_null, 2, NULL, 0),
                  DAO_ERR_INVALID_ARGUMENT);
  }
  assert_failure_mentions(dao_kernel_submit(pool, k_inc, NULL, &foreign, 1, NULL, 0),
                          DAO_ERR_INVALID_ARGUMENT, "another");
  {
    dao_tensor *two[2];
    two[0] = big;
    two[1] = big2;
    assert_failure_mentions(dao_kernel_submit(pool, k_inc, NULL, two, 1, two + 1, 1),
                            DAO_ERR_OUT_OF_MEMORY, "bytes");
    /* the same tensor twice counts once */
    assert_ok(dao_kernel_submit(pool, k_inc, NULL, two, 1, two, 1));
  }
  st = get_stats(pool);
  assert_int_equal(st.kernels_submitted, 1);
  /* stats */
  assert_status(dao_tiered_get_stats(pool, NULL), DAO_ERR_INVALID_ARGUMENT);
  st.struct_size = 8;
  assert_status(dao_tiered_get_stats(pool, &st), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_get_stats(NULL, &st), DAO_ERR_INVALID_ARGUMENT);
  {
    /* A program built against an older header (the struct ended at
       tensors_live) keeps working: the fields that fit are written, the
       bytes past them never; one byte short of that is refused. */
    const size_t old_size = offsetof(dao_tiered_stats, device_range_bytes);
    dao_tiered_stats older;
    memset(&older, 0x5A, sizeof older);
    older.struct_size = old_size - 1;
    assert_failure_mentions(dao_tiered_get_stats(pool, &older), DAO_ERR_INVALID_ARGUMENT,
                            "at least");
    assert_true(older.kernels_submitted == 0x5A5A5A5A5A5A5A5Aull);
    older.struct_size = old_size;
    assert_ok(dao_tiered_get_stats(pool, &older));
    assert_int_equal(older.struct_size, old_size);
    assert_int_equal(older.kernels_submitted, 1);
    assert_true(older.device_range_bytes == 0x5A5A5A5A5A5A5A5Aull);
    assert_true(older.idle_trims == 0x5A5A5A5A5A5A5A5Aull);
    st.struct_size = sizeof st;
  }
  {
    dao_tiered_link_stats ls;
    memset(&ls, 0x5A, sizeof ls);
    assert_status(dao_tiered_get_link_stats(pool, NULL), DAO_ERR_INVALID_ARGUMENT);
    ls.struct_size = 8;
    assert_failure_mentions(dao_tiered_get_link_stats(pool, &ls), DAO_ERR_INVALID_ARGUMENT,
                            "struct_size");
    assert_true(ls.bytes_to_device == 0x5A5A5A5A5A5A5A5Aull); /* nothing written */
    ls.struct_size = sizeof ls;
    assert_status(dao_tiered_get_link_stats(NULL, &ls), DAO_ERR_INVALID_ARGUMENT);
    assert_ok(dao_tiered_get_link_stats(pool, &ls));
    assert_int_equal(ls.struct_size, sizeof ls);
  }
  /* release */
  assert_ok(dao_tensor_release(big2));
  assert_status(dao_tensor_release(big2), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_kernel_submit(pool, k_inc, NULL, &big2, 1, NULL, 0), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tensor_read(big2, &word, 4), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_tiered_synchronize(pool));
  assert_status(dao_tiered_synchronize(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_tiered_destroy(NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_tiered_destroy(other_pool));
  assert_ok(dao_tiered_destroy(pool));

  /* callback policy: must be set before the first submit */
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, "policy=callback", &pool));
  assert_ok(dao_tensor_create(pool, 4, &t));
  assert_status(dao_kernel_submit(pool, k_inc, NULL, NULL, 0, &t, 1), DAO_ERR_INVALID_STATE);
  assert_ok(dao_tiered_set_score_callback(pool, zero_score, NULL));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, NULL, 0, &t, 1));
  assert_status(dao_tiered_set_score_callback(pool, zero_score, NULL), DAO_ERR_INVALID_STATE);
  assert_ok(dao_tiered_destroy(pool));
}

static void test_failing_kernel(void **state) {
  dao_tiered *pool;
  dao_tensor *t;
  uint32_t word = 1;
  dao_tiered_stats st;
  (void)state;
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &pool));
  assert_ok(dao_tensor_create(pool, 4, &t));
  assert_ok(dao_tensor_write(t, &word, 4));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &t, 1, &t, 1));
  assert_ok(dao_kernel_submit(pool, k_fail, NULL, &t, 1, &t, 1));
  (void)dao_kernel_submit(pool, k_inc, NULL, &t, 1, &t, 1); /* may be refused already */
  assert_failure_mentions(dao_tiered_synchronize(pool), DAO_ERR_INVALID_STATE, "kernel 2");
  assert_failure_mentions(dao_tiered_synchronize(pool), DAO_ERR_INVALID_STATE, "returned");
  st = get_stats(pool);
  assert_int_equal(st.kernels_run, 2);
  assert_status(dao_kernel_submit(pool, k_inc, NULL, &t, 1, &t, 1), DAO_ERR_INVALID_STATE);
  assert_status(dao_tensor_write(t, &word, 4), DAO_ERR_INVALID_STATE);
  /* a failed pool still reads: the data as kernel 1 left it (k_fail wrote
     nothing, kernel 3 never ran) */
  word = 0;
  assert_ok(dao_tensor_read(t, &word, 4));
  assert_int_equal(word, 2);
  assert_status(dao_tensor_create(pool, 4, &t), DAO_ERR_INVALID_STATE);
  assert_ok(dao_tensor_release(t));
  assert_ok(dao_tiered_destroy(pool));
}

static void test_host_tier_full(void **state) {
  const size_t S = 128 * KIB;
  dao_tiered *pool;
  dao_tensor *a, *b, *c;
  uint32_t word = 0;
  static uint32_t src[128 * KIB / 4];
  (void)state;
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * S,
                              "host_budget=64KiB,prefetch=0", &pool));
  assert_ok(dao_tensor_create(pool, S, &a));
  assert_ok(dao_tensor_create(pool, S, &b));
  assert_ok(dao_tensor_create(pool, S, &c));
  assert_status(dao_tensor_write(a, src, S), DAO_ERR_OUT_OF_MEMORY);
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)1, NULL, 0, &a, 1));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)2, NULL, 0, &b, 1));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)3, NULL, 0, &c, 1));
  assert_failure_mentions(dao_tiered_synchronize(pool), DAO_ERR_INVALID_STATE, "host tier");
  assert_failure_mentions(dao_tiered_synchronize(pool), DAO_ERR_INVALID_STATE, "kernel 3");
  /* nothing was lost: both tensors stay on the device */
  assert_int_equal(state_of(a), DAO_TENSOR_ON_DEVICE);
  assert_int_equal(state_of(b), DAO_TENSOR_ON_DEVICE);
  assert_int_equal(state_of(c), DAO_TENSOR_UNINITIALIZED);
  assert_int_equal(get_stats(pool).kernels_run, 2);
  assert_int_equal(get_stats(pool).evictions, 0);
  assert_status(dao_tensor_read(a, &word, 4), DAO_ERR_INVALID_ARGUMENT);
  /* ... and readable from the failed pool; c was never written */
  assert_ok(dao_tensor_read(a, src, S));
  assert_int_equal(src[0], 1);
  assert_ok(dao_tensor_read(b, src, S));
  assert_int_equal(src[0], 2);
  assert_status(dao_tensor_read(c, src, S), DAO_ERR_INVALID_STATE);
  assert_ok(dao_tiered_destroy(pool));
}

/* A kernel that waits for its own pool (issue 20): refused, never a hang. */
typedef struct self_wait {
  dao_tiered *pool;
  dao_tensor *tensor;
  dao_status sync, read, destroy, write, trim;
  char message[256];
} self_wait;

static dao_status k_waits_for_own_pool(void *user_data, void *const *inputs, size_t input_count,
                                       void *const *outputs, size_t output_count,
                                       dao_stream stream) {
  self_wait *w = user_data;
  uint32_t word[4] = {0};
  (void)inputs;
  (void)input_count;
  (void)outputs;
  (void)output_count;
  (void)stream;
  w->sync = dao_tiered_synchronize(w->pool);
  snprintf(w->message, sizeof w->message, "%s", dao_last_error());
  w->read = dao_tensor_read(w->tensor, word, sizeof word);
  w->destroy = dao_tiered_destroy(w->pool);
  w->trim = dao_tiered_trim(w->pool);
  w->write = dao_tensor_write(w->tensor, word, sizeof word); /* queues: allowed */
  return DAO_OK;
}

static void test_kernel_waiting_for_its_pool(void **state) {
  self_wait w;
  dao_tensor *out = NULL;
  uint32_t src[4] = {1, 2, 3, 4}, got[4] = {0};
  (void)state;
  memset(&w, 0, sizeof w);
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB, NULL, &w.pool));
  assert_ok(dao_tensor_create(w.pool, sizeof src, &w.tensor));
  assert_ok(dao_tensor_create(w.pool, sizeof src, &out));
  assert_ok(dao_tensor_write(w.tensor, src, sizeof src));
  assert_ok(dao_kernel_submit(w.pool, k_waits_for_own_pool, &w, &w.tensor, 1, &out, 1));
  assert_ok(dao_tiered_synchronize(w.pool));
  assert_int_equal(w.sync, DAO_ERR_INVALID_STATE);
  assert_non_null(strstr(w.message, "executor thread"));
  assert_int_equal(w.read, DAO_ERR_INVALID_STATE);
  assert_int_equal(w.destroy, DAO_ERR_INVALID_STATE);
  assert_int_equal(w.trim, DAO_ERR_INVALID_STATE);
  assert_int_equal(w.write, DAO_OK);
  assert_ok(dao_tensor_read(w.tensor, got, sizeof got)); /* the kernel's write: zeros */
  assert_int_equal(got[0], 0);
  assert_ok(dao_tiered_destroy(w.pool));
}

/* Issue 21: a budget equal to the device's free memory, not a multiple of
 * the allocator's 512-byte unit, fits (it was rounded up past the device);
 * one that does not fit says what was asked for. dao_place_sim(2) is the
 * odd-sized device of DAO_SIM_DEVICES (tests/CMakeLists.txt), used by no
 * other test. */
static void test_budget_equal_to_free_memory(void **state) {
  dao_tiered *pool = NULL;
  dao_tensor *t = NULL;
  size_t free_bytes = 0, total = 0, usable;
  dao_tiered_stats st;
  (void)state;
  assert_ok(dao_place_memory_info(dao_place_sim(2), &free_bytes, &total));
  assert_int_equal(free_bytes, total);
  assert_true(free_bytes % 512 != 0);
  usable = free_bytes / 512 * 512;
  assert_failure_mentions(
      dao_tiered_create(dao_place_sim(2), dao_place_cpu(), free_bytes + 512, NULL, &pool),
      DAO_ERR_OUT_OF_MEMORY, "rounded down to whole 512-byte blocks");
  assert_null(pool);
  assert_ok(dao_tiered_create(dao_place_sim(2), dao_place_cpu(), free_bytes, NULL, &pool));
  /* The whole reserved range is usable: a tensor of all of it runs. */
  assert_ok(dao_tensor_create(pool, usable, &t));
  assert_ok(dao_kernel_submit(pool, k_init, NULL, NULL, 0, &t, 1));
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  assert_int_equal(st.device_bytes, usable);
  assert_ok(dao_tensor_release(t));
  assert_ok(dao_tiered_destroy(pool));
}

/* Issue 21: dao_tensor_retire: a held tensor whose data no use needs any
 * more is evicted without a copy back; it is refused by dao_tensor_read
 * until written again, and a write makes it live again. */
static void retire_run(int retire, dao_tiered_stats *st) {
  enum { W = 1024 };
  const size_t bytes = W * 4;
  dao_tiered *pool = NULL;
  dao_tensor *a = NULL, *b = NULL, *c = NULL;
  uint32_t src[W], got[W];
  size_t i;
  for (i = 0; i < W; ++i) src[i] = (uint32_t)(3 * i + 5);
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * bytes, "prefetch=0", &pool));
  assert_ok(dao_tensor_create(pool, bytes, &a));
  assert_ok(dao_tensor_create(pool, bytes, &b));
  assert_ok(dao_tensor_create(pool, bytes, &c));
  /* a and b produced on the device: dirty, no host copy. */
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)11, NULL, 0, &a, 1));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)22, NULL, 0, &b, 1));
  if (retire) {
    assert_ok(dao_tensor_retire(a));
    assert_ok(dao_tensor_retire(a)); /* again: changes nothing */
  }
  /* c needs room: one of a, b goes. */
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)33, NULL, 0, &c, 1));
  assert_ok(dao_tiered_synchronize(pool));
  *st = get_stats(pool);
  assert_int_equal(read_word(b, bytes), 22);
  assert_int_equal(read_word(c, bytes), 33);
  if (retire) {
    assert_failure_mentions(dao_tensor_read(a, got, bytes), DAO_ERR_INVALID_STATE, "holds no data");
    assert_ok(dao_tensor_write(a, src, bytes)); /* live again */
    assert_ok(dao_tensor_read(a, got, bytes));
    assert_memory_equal(got, src, bytes);
  } else {
    assert_int_equal(read_word(a, bytes), 11);
  }
  assert_ok(dao_tensor_release(a));
  assert_status(dao_tensor_retire(a), DAO_ERR_INVALID_ARGUMENT); /* released */
  assert_ok(dao_tensor_release(b));
  assert_ok(dao_tensor_release(c));
  assert_ok(dao_tiered_destroy(pool));
}

static void test_retire(void **state) {
  dao_tiered_stats held, retired;
  (void)state;
  assert_status(dao_tensor_retire(NULL), DAO_ERR_INVALID_ARGUMENT);
  retire_run(0, &held);
  retire_run(1, &retired);
  /* Held: the evicted tensor is copied back; retired: a goes, uncopied. */
  assert_int_equal(held.evictions, 1);
  assert_int_equal(held.bytes_evicted, 4096);
  assert_int_equal(retired.evictions, 0);
  assert_int_equal(retired.bytes_evicted, 0);
}

/* --- small copies made inline by the executor (issue 21, item 6) ------------ */

/* out = a + 3 * b + k, word by word over out (a and b repeated to its size). */
static dao_status k_mix_k(void *user_data, void *const *inputs, size_t input_count,
                          void *const *outputs, size_t output_count, dao_stream stream) {
  const size_t *w = user_data; /* {words of a, of b, of out, k} */
  const uint32_t *a, *b;
  uint32_t *out, *tmp;
  size_t i;
  (void)stream;
  if (input_count != 2 || output_count != 1) return DAO_ERR_INTERNAL;
  a = inputs[0];
  b = inputs[1];
  out = outputs[0];
  tmp = malloc(w[2] * 4); /* out may be an input */
  if (tmp == NULL) return DAO_ERR_OUT_OF_MEMORY;
  for (i = 0; i < w[2]; ++i) tmp[i] = a[i % w[0]] + 3u * b[i % w[1]] + (uint32_t)w[3];
  memcpy(out, tmp, w[2] * 4);
  free(tmp);
  return DAO_OK;
}

/* N tensors (every third of `big` bytes, the others of 4 KiB) in a budget
 * of a third of them, written, then 60 kernels out = a + 3b + k drawn at
 * random: every kernel evicts and fetches. Checks every tensor against a
 * host model; returns the link statistics. */
static dao_tiered_link_stats run_small_copies(const char *config, size_t big) {
  enum { N = 24, K = 60 };
  size_t bytes[N], words[N], total = 0, i, j, k;
  uint32_t *model[N], *tmp;
  size_t args[K][4];
  uint64_t rng = 7;
  dao_tiered *pool = NULL;
  dao_tensor *t[N];
  dao_tiered_link_stats ls;
  for (i = 0; i < N; ++i) {
    bytes[i] = i % 3 == 0 ? big : 4 * KIB;
    words[i] = bytes[i] / 4;
    total += bytes[i];
    model[i] = malloc(bytes[i]);
    assert_non_null(model[i]);
    for (j = 0; j < words[i]; ++j) model[i][j] = (uint32_t)(i * 7919 + j);
  }
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), total / 3, config, &pool));
  for (i = 0; i < N; ++i) {
    assert_ok(dao_tensor_create(pool, bytes[i], &t[i]));
    assert_ok(dao_tensor_write(t[i], model[i], bytes[i]));
  }
  for (k = 0; k < K; ++k) {
    size_t a, b, o;
    dao_tensor *in[2];
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    a = (size_t)(rng >> 33) % N;
    b = (size_t)(rng >> 43) % N;
    o = (size_t)(rng >> 53) % N;
    args[k][0] = words[a];
    args[k][1] = words[b];
    args[k][2] = words[o];
    args[k][3] = k;
    in[0] = t[a];
    in[1] = t[b];
    assert_ok(dao_kernel_submit(pool, k_mix_k, args[k], in, 2, &t[o], 1));
    tmp = malloc(bytes[o]);
    assert_non_null(tmp);
    for (j = 0; j < words[o]; ++j)
      tmp[j] = model[a][j % words[a]] + 3u * model[b][j % words[b]] + (uint32_t)k;
    memcpy(model[o], tmp, bytes[o]);
    free(tmp);
  }
  assert_ok(dao_tiered_synchronize(pool));
  for (i = 0; i < N; ++i) {
    tmp = malloc(bytes[i]);
    assert_non_null(tmp);
    assert_ok(dao_tensor_read(t[i], tmp, bytes[i]));
    assert_memory_equal(tmp, model[i], bytes[i]);
    free(tmp);
    assert_ok(dao_tensor_release(t[i]));
    free(model[i]);
  }
  ls = get_link_stats(pool);
  assert_true(get_stats(pool).evictions > 0 && get_stats(pool).fetches > 0);
  assert_ok(dao_tiered_destroy(pool));
  return ls;
}

static void test_small_copies_inline(void **state) {
  dao_tiered_link_stats ls;
  (void)state;
  /* Every tensor of 4 KiB, at most inline_copy (64 KiB by default): no
     copy goes through the staging buffers, and the data is right. */
  ls = run_small_copies("", 4 * KIB);
  assert_int_equal(ls.staged, 1);
  assert_true(ls.bytes_to_device > 0 && ls.bytes_to_host > 0);
  assert_int_equal(ls.staged_bytes, 0);
  /* inline_copy=0: every copy is staged, as before. */
  ls = run_small_copies("inline_copy=0", 4 * KIB);
  assert_int_equal(ls.staged_bytes, ls.bytes_to_device + ls.bytes_to_host);
  /* Mixed: tensors of 96 KiB go through the lanes, those of 4 KiB not, and
     a small copy that could overtake a staged one waits for it. */
  ls = run_small_copies("staging_buffers=2,staging_chunk=64KiB", 96 * KIB);
  assert_true(ls.staged_bytes > 0);
  assert_true(ls.staged_bytes < ls.bytes_to_device + ls.bytes_to_host);
  assert_int_equal(ls.staged_bytes % (96 * KIB), 0);
  /* The same with modelled pageable rates of 1 GB/s: inline copies take
     bytes / rate and block the executor for it (a stall). */
  ls = run_small_copies("pageable_to_device=1GB/s,pageable_to_host=1GB/s", 4 * KIB);
  assert_int_equal(ls.staged_bytes, 0);
  assert_true(ls.copy_ns_to_device >= ls.bytes_to_device);
  assert_true(ls.stall_ns >= ls.bytes_to_device + ls.bytes_to_host);
  /* A modelled rate that makes a 4 KiB copy long (16 MB/s: 256 us)
     sends it to the lanes: the executor never holds the pool for long. */
  ls = run_small_copies("pageable_to_device=16MB/s,pageable_to_host=16MB/s", 4 * KIB);
  assert_int_equal(ls.staged_bytes, ls.bytes_to_device + ls.bytes_to_host);
}

/* --- dao_tensor_write straight to the device (issue 21, item 7) ------------ */

static void write_to_device_case(const char *config) {
  const size_t S = 64 * KIB;
  dao_tiered *pool;
  dao_tensor *a, *b, *p, *q, *r;
  dao_tiered_stats st;
  dao_tiered_link_stats ls;
  uint32_t *buf = calloc(1, S);
  assert_non_null(buf);
  /* Room: a write whose next use is a queued kernel goes to the device,
     and the kernel fetches nothing; one whose next use is not a kernel
     stays on the host. Everything is queued behind a gated kernel so that
     each write runs knowing what follows it. */
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 4 * S, config, &pool));
  assert_ok(dao_tensor_create(pool, S, &a));
  assert_ok(dao_tensor_create(pool, S, &b));
  gate_reset();
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, NULL, 0));
  buf[0] = 100;
  assert_ok(dao_tensor_write(a, buf, S));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &a, 1, &a, 1));
  buf[0] = 200;
  assert_ok(dao_tensor_write(b, buf, S));
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  ls = get_link_stats(pool);
  assert_int_equal(st.fetches, 0);
  assert_int_equal(st.bytes_fetched, 0);
  assert_int_equal(ls.copies_to_device, 1); /* a's write, not a fetch */
  assert_int_equal(ls.bytes_to_device, S);
  assert_int_equal(st.evictions, 0);
  assert_int_equal(state_of(a), DAO_TENSOR_ON_DEVICE);
  assert_int_equal(state_of(b), DAO_TENSOR_ON_HOST); /* nothing used it next */
  assert_int_equal(read_word(a, S), 101);
  assert_int_equal(read_word(b, S), 200);
  /* A device home: a resident tensor written again keeps its block and
     gets the data there; still no fetch. */
  gate_reset();
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, NULL, 0));
  buf[0] = 300;
  assert_ok(dao_tensor_write(a, buf, S));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &a, 1, &a, 1));
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  ls = get_link_stats(pool);
  assert_int_equal(st.fetches, 0);
  assert_int_equal(ls.copies_to_device, 2);
  assert_int_equal(ls.bytes_to_device, 2 * S);
  assert_int_equal(read_word(a, S), 301);
  assert_ok(dao_tensor_release(a));
  assert_ok(dao_tensor_release(b));
  assert_ok(dao_tiered_destroy(pool));

  /* No room: the budget holds p and q, which a kernel before the write
     made; r's write stays on the host (nothing is evicted for a write) and
     its kernel fetches it. */
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 2 * S, config, &pool));
  assert_ok(dao_tensor_create(pool, S, &p));
  assert_ok(dao_tensor_create(pool, S, &q));
  assert_ok(dao_tensor_create(pool, S, &r));
  gate_reset();
  assert_ok(dao_kernel_submit(pool, k_gated, NULL, NULL, 0, NULL, 0));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)1, NULL, 0, &p, 1));
  assert_ok(dao_kernel_submit(pool, k_init, (void *)(uintptr_t)2, NULL, 0, &q, 1));
  buf[0] = 400;
  assert_ok(dao_tensor_write(r, buf, S));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &r, 1, &r, 1));
  assert_ok(dao_kernel_submit(pool, k_inc, NULL, &p, 1, &p, 1));
  gate_open();
  assert_ok(dao_tiered_synchronize(pool));
  st = get_stats(pool);
  ls = get_link_stats(pool);
  assert_true(st.fetches >= 1);
  assert_int_equal(ls.copies_to_device, st.fetches); /* no write went there */
  assert_int_equal(ls.bytes_to_device, st.bytes_fetched);
  assert_int_equal(read_word(r, S), 401);
  assert_int_equal(read_word(p, S), 2);
  assert_int_equal(read_word(q, S), 2);
  assert_ok(dao_tensor_release(p));
  assert_ok(dao_tensor_release(q));
  assert_ok(dao_tensor_release(r));
  assert_ok(dao_tiered_destroy(pool));
  free(buf);
}

static void test_write_to_device(void **state) {
  dao_tiered *pool;
  dao_tensor *a;
  uint32_t buf[1024] = {0};
  (void)state;
  write_to_device_case("");                  /* staged, copies inline */
  write_to_device_case("inline_copy=0");     /* staged, through the lanes */
  write_to_device_case("staging_buffers=0"); /* straight from pageable memory */
  write_to_device_case("sim_host=pinned");   /* a pinned tier */
  /* A hostile link of 1 B/s: a write read back (no kernel) never crosses
     it, so nothing waits for it (the pool's synchronize and destroy
     return at once). */
  assert_ok(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), MIB,
                              "pageable_to_device=1B/s,pageable_to_host=1B/s,link_bandwidth=1B/s",
                              &pool));
  assert_ok(dao_tensor_create(pool, sizeof buf, &a));
  buf[0] = 5;
  assert_ok(dao_tensor_write(a, buf, sizeof buf));
  buf[0] = 0;
  assert_ok(dao_tensor_read(a, buf, sizeof buf));
  assert_int_equal(buf[0], 5);
  assert_ok(dao_tensor_release(a));
  assert_ok(dao_tiered_synchronize(pool));
  assert_int_equal(get_link_stats(pool).copies_to_device, 0);
  assert_ok(dao_tiered_destroy(pool));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_retire),
      cmocka_unit_test(test_budget_equal_to_free_memory),
      cmocka_unit_test(test_kernel_waiting_for_its_pool),
      cmocka_unit_test(test_exact_belady),
      cmocka_unit_test(test_exact_lru),
      cmocka_unit_test(test_compaction_evicts_only_what_is_needed),
      cmocka_unit_test(test_compaction_without_eviction),
      cmocka_unit_test(test_release_after_last_use),
      cmocka_unit_test(test_release_frees_early),
      cmocka_unit_test(test_two_threads),
      cmocka_unit_test(test_write_read_order),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_failing_kernel),
      cmocka_unit_test(test_host_tier_full),
      cmocka_unit_test(test_random_program),
      cmocka_unit_test(test_link),
      cmocka_unit_test(test_small_copies_inline),
      cmocka_unit_test(test_write_to_device),
      cmocka_unit_test(test_trim),
      cmocka_unit_test(test_idle_trim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
