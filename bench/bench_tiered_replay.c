/* bench_tiered: the workload: a trace replayed as kernels through a tiered
 * pool, with the results (a hash of every tensor still held) read back. */
#define _GNU_SOURCE /* clock_gettime, getline, S_ISDIR under -std=c99 */

#include <time.h>

#include "bench_tiered.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct run_ctx {
  uint64_t kernel_ns;      /* time inside kernel functions */
  double spin_ns_per_byte; /* modelled compute time (0: none) */
  const trace *t;
} run_ctx;

typedef struct kernel_arg {
  run_ctx *ctx;
  size_t op;
} kernel_arg;

static size_t min_size(uint64_t a, size_t b) { return a < b ? (size_t)a : b; }

/* Reads the first word of each input and writes OUT_WORDS words of each
   output (fewer for a small tensor) derived from them and from the op's
   index. SIM memory is host memory. */
static dao_status kernel_fn(void *user_data, void *const *inputs, size_t input_count,
                            void *const *outputs, size_t output_count, dao_stream stream) {
  (void)stream;
  const kernel_arg *a = user_data;
  run_ctx *ctx = a->ctx;
  const trace *t = ctx->t;
  const op *o = &t->ops[a->op];
  uint64_t start = now_ns();
  if (input_count != o->in_count || output_count != o->out_count) return DAO_ERR_INTERNAL;
  uint64_t h = mix64((uint64_t)a->op);
  for (size_t i = 0; i < input_count; ++i) {
    uint64_t w = 0;
    memcpy(&w, inputs[i], min_size(t->st[t->refs[o->in_first + i]].bytes, sizeof w));
    h = mix64(h ^ w);
  }
  for (size_t i = 0; i < output_count; ++i) {
    unsigned char words[OUT_WORDS * sizeof(uint64_t)];
    for (size_t k = 0; k < OUT_WORDS; ++k) {
      uint64_t w = mix64(h + i * OUT_WORDS + k);
      memcpy(words + k * sizeof w, &w, sizeof w);
    }
    memcpy(outputs[i], words, min_size(t->st[t->refs[o->out_first + i]].bytes, sizeof words));
  }
  uint64_t end = now_ns();
  if (ctx->spin_ns_per_byte > 0) {
    uint64_t until = start + (uint64_t)((double)o->ws_bytes * ctx->spin_ns_per_byte);
    while (end < until) end = now_ns();
  }
  ctx->kernel_ns += end - start;
  return DAO_OK;
}

static int tiered_unavailable(dao_status s) {
  return s == DAO_ERR_INVALID_ARGUMENT || s == DAO_ERR_UNSUPPORTED;
}

static uint64_t hash_bytes(const unsigned char *p, uint64_t n) {
  uint64_t h = mix64(n);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = mix64(h ^ w);
  }
  if (i < n) {
    uint64_t w = 0;
    memcpy(&w, p + i, (size_t)(n - i));
    h = mix64(h ^ w);
  }
  return h;
}

void fill_pattern(unsigned char *p, uint64_t n, uint64_t sid) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = mix64((sid << 32) ^ i);
    memcpy(p + i, &w, 8);
  }
  if (i < n) {
    uint64_t w = mix64((sid << 32) ^ i);
    memcpy(p + i, &w, (size_t)(n - i));
  }
}

#define CHECK(call)                                                                             \
  do {                                                                                          \
    dao_status s_ = (call);                                                                     \
    if (s_ != DAO_OK) {                                                                         \
      fprintf(stderr, "bench_tiered: %s: %s: %s (%s)\n", t->name, #call, dao_status_string(s_), \
              dao_last_error());                                                                \
      goto fail;                                                                                \
    }                                                                                           \
  } while (0)

/* Replays a trace through a new tiered pool. upfront: create every tensor
   and write the pre-existing ones before the timed part (only where
   everything fits). Returns 0 (ran; r->refused says whether a submit was
   refused), 1 on an error (printed), EXIT_SKIP when dao_tiered_create says
   that tiered pools are unavailable and skip_ok is set. */
int replay(const trace *t, uint64_t budget, const char *config, double spin_ns_per_byte,
           unsigned char *const *pre_data, int upfront, int skip_ok, run_result *r) {
  memset(r, 0, sizeof *r);
  r->hashes = calloc(t->nst, sizeof *r->hashes);
  dao_tensor **tensors = calloc(t->nst, sizeof *tensors);
  kernel_arg *args = xmalloc(t->nops * sizeof *args);
  dao_tensor **list = xmalloc((t->nrefs + 1) * sizeof *list);
  unsigned char *buf = NULL;
  dao_tiered *pool = NULL;
  int rc = 1;
  run_ctx ctx;
  ctx.kernel_ns = 0;
  ctx.spin_ns_per_byte = spin_ns_per_byte;
  ctx.t = t;
  if (r->hashes == NULL || tensors == NULL) {
    fprintf(stderr, "bench_tiered: out of host memory\n");
    exit(EXIT_ERROR);
  }
  for (size_t i = 0; i < t->nops; ++i) {
    args[i].ctx = &ctx;
    args[i].op = i;
  }
  dao_status cs =
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), (size_t)budget, config, &pool);
  if (cs != DAO_OK) {
    if (skip_ok && tiered_unavailable(cs)) {
      fprintf(stderr, "bench_tiered: tiered pools are not available: dao_tiered_create: %s (%s)\n",
              dao_status_string(cs), dao_last_error());
      rc = EXIT_SKIP;
    } else {
      fprintf(stderr, "bench_tiered: %s: dao_tiered_create(budget %llu, \"%s\"): %s (%s)\n",
              t->name, (unsigned long long)budget, config, dao_status_string(cs), dao_last_error());
    }
    goto fail;
  }
  if (upfront) {
    for (size_t s = 0; s < t->nst; ++s) {
      CHECK(dao_tensor_create(pool, (size_t)t->st[s].bytes, &tensors[s]));
      if (t->st[s].pre) CHECK(dao_tensor_write(tensors[s], pre_data[s], (size_t)t->st[s].bytes));
    }
  }
  double t0 = now_s();
  for (size_t e = 0; e < t->nev && !r->refused; ++e) {
    const event *ev = &t->ev[e];
    size_t s = ev->index;
    if (ev->kind == EV_ALLOC) {
      if (upfront) continue;
      CHECK(dao_tensor_create(pool, (size_t)t->st[s].bytes, &tensors[s]));
      if (t->st[s].pre) CHECK(dao_tensor_write(tensors[s], pre_data[s], (size_t)t->st[s].bytes));
    } else if (ev->kind == EV_FREE) {
      CHECK(dao_tensor_release(tensors[s]));
      tensors[s] = NULL;
    } else {
      const op *o = &t->ops[s];
      for (size_t k = 0; k < o->in_count + o->out_count; ++k)
        list[k] = tensors[t->refs[o->in_first + k]];
      dao_status ss = dao_kernel_submit(pool, kernel_fn, &args[s], list, o->in_count,
                                        list + o->in_count, o->out_count);
      if (ss == DAO_ERR_OUT_OF_MEMORY) {
        r->refused = 1;
        snprintf(r->message, sizeof r->message, "op %zu refused: %s", s, dao_last_error());
        break;
      }
      CHECK(ss);
      ++r->kernels;
    }
  }
  CHECK(dao_tiered_synchronize(pool));
  r->wall_s = now_s() - t0;
  r->kernel_ns = ctx.kernel_ns;
  r->stats.struct_size = sizeof r->stats;
  CHECK(dao_tiered_get_stats(pool, &r->stats));
  {
    dao_tiered_link_stats ls;
    memset(&ls, 0, sizeof ls);
    ls.struct_size = sizeof ls;
    CHECK(dao_tiered_get_link_stats(pool, &ls));
    r->written_to_device = ls.bytes_to_device - r->stats.bytes_fetched;
    r->copy_ns = ls.copy_ns;
  }
  if (r->stats.kernels_run != r->kernels) {
    fprintf(stderr, "bench_tiered: %s: %llu kernels submitted, %llu run\n", t->name,
            (unsigned long long)r->kernels, (unsigned long long)r->stats.kernels_run);
    goto fail;
  }
  /* The results: every tensor still held. */
  if (!r->refused) {
    uint64_t most = 0;
    for (size_t s = 0; s < t->nst; ++s)
      if (tensors[s] != NULL && t->st[s].bytes > most) most = t->st[s].bytes;
    buf = xmalloc((size_t)most);
    for (size_t s = 0; s < t->nst; ++s) {
      if (tensors[s] == NULL) continue;
      CHECK(dao_tensor_read(tensors[s], buf, (size_t)t->st[s].bytes));
      /* Only the words kernels write are defined: the rest of an output is
         whatever the device memory held, which differs from run to run. */
      r->hashes[s] = hash_bytes(buf, min_size(t->st[s].bytes, OUT_WORDS * sizeof(uint64_t))) | 1;
    }
  }
  rc = 0;
fail:
  if (pool != NULL) {
    for (size_t s = 0; s < t->nst; ++s)
      if (tensors[s] != NULL) (void)dao_tensor_release(tensors[s]);
    dao_status ds = dao_tiered_destroy(pool);
    if (ds != DAO_OK) {
      fprintf(stderr, "bench_tiered: %s: dao_tiered_destroy: %s (%s)\n", t->name,
              dao_status_string(ds), dao_last_error());
      rc = 1;
    }
  }
  free(buf);
  free(list);
  free(args);
  free(tensors);
  return rc;
}
#undef CHECK

/* Number of held tensors whose result differs from the unlimited run. */
size_t count_mismatches(const trace *t, const run_result *a, const run_result *b) {
  size_t bad = 0;
  for (size_t s = 0; s < t->nst; ++s) bad += a->hashes[s] != b->hashes[s];
  return bad;
}
