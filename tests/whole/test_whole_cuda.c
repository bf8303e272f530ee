/* Partitioned memory on CUDA devices in one process (whole.h): a thread per
 * rank over in-process communicators on cuda:0..3 of the fake driver, whose
 * device memory the host cannot touch (FAKE_CUDA_HIDDEN=1: it faults, as on
 * a card), so every byte libdao moves goes through driver copies. Chunked
 * and distributed objects on one device per rank, on ranks that share a
 * device, and on one rank; continuous and mixed places refused with a
 * message that says what works; peer access enabled for chunked memory;
 * files; a part that does not fit; and the same over a transport handed in
 * through the hook (which, like MPI, does not share an address space: the
 * parts are exported as for CUDA IPC, and used directly in this process,
 * where the driver refuses to open its own handles).
 *
 * `test_whole_cuda no-peer` runs with FAKE_CUDA_NO_PEER=1: chunked and
 * continuous memory over two devices are refused and say why; distributed
 * works. `test_whole_cuda no-vmm` runs with FAKE_CUDA_NO_VMM=1: continuous
 * memory is refused (no virtual memory management), the rest works.
 *
 * `test_whole_cuda faults` runs with DAO_FAULT_INJECT (test_faults).
 *
 * `test_whole_cuda driver` runs on the machine's driver (scripts/gpu-check.sh
 * on a real card): rank r on cuda:(r mod the device count), chunked memory
 * over several devices either works or is refused naming
 * cuDeviceCanAccessPeer, and the checks that need the fake driver's view or
 * its 64 MiB devices are left out. Without a device it passes at once.
 *
 * Runs with DAO_CUDA_LIBRARY=<the fake driver>, FAKE_CUDA_DEVICES=4,
 * FAKE_CUDA_CAPACITY=64MiB, FAKE_CUDA_HIDDEN=1. No check depends on timing. */
#define _GNU_SOURCE
#define DAO_EXPERIMENTAL 1

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "dao_test.h"
#include "whole/thread_transport.h"
#include "whole/whole_cuda_body.h"

#define MIB ((size_t)1 << 20)
#define MAX_RANKS 8

static char file_prefix[256];
static int no_peer;
static int no_vmm;
static int real_driver; /* `driver`: not the fake one */
static int devices;

/* The fake driver's own view (tests/fake_cuda/fake_cuda.c). */
static int (*fake_peer_enabled)(int device, int peer);
static long (*fake_live_imports)(void);
static size_t (*fake_used)(int device);

static void find_fake_driver(void) {
  const char *path = getenv("DAO_CUDA_LIBRARY");
  void *handle;
  assert_true(devices >= 4);
  assert_non_null(path);
  handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(handle);
  *(void **)&fake_peer_enabled = dlsym(handle, "fake_cuda_peer_enabled");
  *(void **)&fake_live_imports = dlsym(handle, "fake_cuda_live_imports");
  *(void **)&fake_used = dlsym(handle, "fake_cuda_used");
  assert_non_null(fake_peer_enabled);
  assert_non_null(fake_live_imports);
  assert_non_null(fake_used);
}

/* --- a thread per rank ----------------------------------------------------- */

typedef void (*body_fn)(wb_ctx *c, void *arg);

typedef struct rank_job {
  wb_ctx ctx;
  body_fn fn;
  void *arg;
  tt_group *g; /* hooked transport, else NULL */
  dao_place place;
  pthread_t thread;
} rank_job;

static void *rank_main(void *p) {
  rank_job *j = (rank_job *)p;
  dao_comm *comm = NULL;
  if (j->g != NULL) {
    dao_comm_transport o = tt_ops(j->g, j->ctx.rank);
    if (!WB_OK(&j->ctx, dao_comm_create_transport(&o, j->place, &comm))) return NULL;
    j->ctx.comm = comm;
  }
  j->fn(&j->ctx, j->arg);
  if (comm != NULL) WB_OK(&j->ctx, dao_comm_destroy(comm));
  return NULL;
}

/* Runs fn on a thread per rank, rank r on places[r]; over the in-process
 * transport, or (hooked) over the thread transport of the hook. */
static void run(const dao_place *places, int n, int hooked, body_fn fn, void *arg) {
  rank_job jobs[MAX_RANKS];
  dao_comm *comms[MAX_RANKS];
  tt_group g;
  int r, failures = 0, checks = 0;
  assert_true(n <= MAX_RANKS);
  memset(jobs, 0, sizeof jobs);
  if (hooked) {
    tt_group_init(&g, n);
    g.batched = 1;
  } else {
    assert_ok(dao_comm_create_local(n, places, comms));
  }
  for (r = 0; r < n; ++r) {
    jobs[r].ctx.comm = hooked ? NULL : comms[r];
    jobs[r].ctx.rank = r;
    jobs[r].ctx.size = n;
    jobs[r].ctx.file_prefix = file_prefix;
    jobs[r].fn = fn;
    jobs[r].arg = arg;
    jobs[r].g = hooked ? &g : NULL;
    jobs[r].place = places[r];
  }
  for (r = 0; r < n; ++r)
    assert_int_equal(pthread_create(&jobs[r].thread, NULL, rank_main, &jobs[r]), 0);
  for (r = 0; r < n; ++r) assert_int_equal(pthread_join(jobs[r].thread, NULL), 0);
  for (r = 0; r < n; ++r) {
    if (jobs[r].ctx.failures > 0)
      print_error("rank %d: %d failure(s), first: %s\n", r, jobs[r].ctx.failures,
                  jobs[r].ctx.first);
    failures += jobs[r].ctx.failures;
    checks += jobs[r].ctx.checks;
  }
  if (hooked) {
    assert_int_equal(g.destroyed, n);
    tt_group_done(&g);
  } else {
    for (r = 0; r < n; ++r) assert_ok(dao_comm_destroy(comms[r]));
  }
  assert_int_equal(failures, 0);
  assert_true(checks > 0);
  if (fake_live_imports != NULL) assert_int_equal(fake_live_imports(), 0);
}

static void places_cuda(dao_place *p, int n) {
  int r;
  for (r = 0; r < n; ++r) p[r] = dao_place_cuda(r % devices);
}

static dao_place device(int d) { return dao_place_cuda(d % devices); }

/* --- bodies ---------------------------------------------------------------- */

/* Every layout: chunked and distributed work (chunked over several devices
 * only with peer access); continuous works in one process where chunked
 * does and the driver has virtual memory management, and is otherwise
 * refused pointing to chunked. *p: whether chunked works, -1 when either
 * answer is right (a real machine's devices). */
static void body_layouts(wb_ctx *c, void *p) {
  int chunked_expected = *(const int *)p;
  dao_comm_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  WB_OK(c, dao_comm_get_info(c->comm, &info));
  if (no_vmm) {
    /* In one process the answer comes before the create; over the hook (as
     * between processes) each rank's driver answers at the create. */
    dao_whole_desc d = wb_desc(DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE, 100, 16);
    dao_whole *w = (dao_whole *)1;
    if (info.shares_address_space)
      WB_FAILS(c, dao_whole_supported(c->comm, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE),
               DAO_ERR_UNSUPPORTED, "virtual memory management");
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_UNSUPPORTED, "use chunked");
    WB_CHECK(c, w == NULL);
  } else if (!info.shares_address_space && no_peer) {
    /* The driver refuses to open another device's granules without peer
     * access, at the create: every rank fails alike, nothing stays. */
    dao_whole_desc d = wb_desc(DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE, 4096, 4096);
    dao_whole *w = (dao_whole *)1;
    dao_place mine;
    size_t free0 = 0, free1 = 0;
    WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
    WB_OK(c, dao_place_memory_info(mine, &free0, NULL));
    WB_OK(c, dao_whole_supported(c->comm, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE));
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_BACKEND, "peer access");
    WB_CHECK(c, w == NULL);
    WB_OK(c, dao_comm_barrier(c->comm));
    WB_OK(c, dao_place_memory_info(mine, &free1, NULL));
    WB_CHECKF(c, free1 == free0, "cuda:%d: %zu bytes left mapped", mine.device, free0 - free1);
  } else if (!info.shares_address_space) {
    /* Each rank's granules exported as file descriptors into every rank's
     * range (peer access is the driver's to check, at the create: on a
     * real machine either answer, the same on every rank). */
    int works = 1;
    if (real_driver) {
      dao_whole_desc d = wb_desc(DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE, 64, 8);
      dao_whole *w = NULL;
      const dao_status made = dao_whole_create(c->comm, &d, &w);
      works = made == DAO_OK;
      WB_CHECKF(c, works || made == DAO_ERR_BACKEND || made == DAO_ERR_UNSUPPORTED,
                "continuous over the hook: %s", dao_last_error());
      if (works) WB_OK(c, dao_whole_destroy(w));
    }
    if (works)
      WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_CONTINUOUS) == 1,
                "continuous on CUDA devices over the hook");
  } else if (chunked_expected < 0) {
    /* Either answer (peer access, virtual memory management), and the
     * create agrees with dao_whole_supported(). */
    const int ok = dao_whole_supported(c->comm, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE) == DAO_OK;
    WB_CHECK(c, wc_all_shapes(c, DAO_WHOLE_CONTINUOUS) == ok);
  } else {
    WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_CONTINUOUS) == chunked_expected,
              "continuous on CUDA devices: supported %d, expected %d", !chunked_expected,
              chunked_expected);
  }
  if (chunked_expected < 0)
    chunked_expected = dao_whole_supported(c->comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE) == DAO_OK;
  WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_CHUNKED) == chunked_expected,
            "chunked on CUDA devices: supported %d, expected %d", !chunked_expected,
            chunked_expected);
  if (!chunked_expected)
    WB_FAILS(c, dao_whole_supported(c->comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE),
             DAO_ERR_UNSUPPORTED, "cuDeviceCanAccessPeer");
  WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_DISTRIBUTED) == 1, "distributed on CUDA devices");
  /* Host memory on the same communicator works as ever. */
  WB_CHECK(c, wb_roundtrip(c, DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 300, 24, 3) == 1);
}

static void test_four_devices(void **state) {
  dao_place p[4];
  int chunked = real_driver ? -1 : !no_peer, a, b;
  (void)state;
  places_cuda(p, 4);
  run(p, 4, 0, body_layouts, &chunked);
  if (real_driver) return;
  /* Chunked memory let every device address every other one's part. */
  for (a = 0; a < 4; ++a)
    for (b = 0; b < 4; ++b)
      if (a != b) assert_int_equal(fake_peer_enabled(a, b), !no_peer);
}

/* Two ranks on one device need no peer access between them. */
static void test_shared_device(void **state) {
  dao_place p[3];
  int chunked = real_driver ? -1 : 1;
  (void)state;
  p[0] = device(2);
  p[1] = device(2);
  p[2] = device(2);
  run(p, 3, 0, body_layouts, &chunked);
  p[0] = device(1);
  run(p, 1, 0, body_layouts, &chunked);
}

/* Over the hook's thread transport: the parts are exported as between
 * processes; in this process they are used as they are. */
static void test_hooked_transport(void **state) {
  dao_place p[4];
  int chunked = real_driver ? -1 : 1;
  (void)state;
  places_cuda(p, 4);
  run(p, 4, 1, body_layouts, &chunked);
}

static void body_files(wb_ctx *c, void *p) {
  (void)p;
  wc_files(c, "local");
}

static void test_files(void **state) {
  dao_place p[4];
  (void)state;
  places_cuda(p, 4);
  run(p, 4, 0, body_files, NULL);
  run(p, 3, 1, body_files, NULL);
}

/* Rank 3's device is nearly full: its part does not fit, every rank fails
 * alike naming rank 3 and cuda:3, and nothing stays allocated anywhere. */
static void body_out_of_memory(wb_ctx *c, void *p) {
  dao_place mine;
  void *filler = NULL;
  int t;
  (void)p;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
  if (c->rank == 3) WB_OK(c, dao_alloc(mine, 48 * MIB, &filler));
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    /* 4 x 24 MiB: fits on an empty 64 MiB device, not next to 48 MiB. */
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, 96, MIB);
    dao_whole *w = (dao_whole *)1;
    size_t used0 = 0, used1 = 0, dev0, dev1;
    WB_OK(c, dao_used_internal(mine, &used0));
    WB_OK(c, dao_comm_barrier(c->comm));
    dev0 = fake_used != NULL ? fake_used(mine.device) : 0;
    WB_OK(c, dao_comm_barrier(c->comm));
    if (dao_whole_supported(c->comm, (dao_whole_type)t, DAO_WHOLE_DEVICE) != DAO_OK) continue;
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_OUT_OF_MEMORY, "on rank 3 of 4");
    WB_CHECK(c, strstr(dao_last_error(), "cuda:3") != NULL);
    WB_CHECK(c, w == NULL);
    WB_OK(c, dao_comm_barrier(c->comm));
    WB_OK(c, dao_used_internal(mine, &used1));
    dev1 = fake_used != NULL ? fake_used(mine.device) : 0;
    WB_CHECKF(c, used1 == used0, "cuda:%d: %zu bytes left allocated", mine.device, used1 - used0);
    WB_CHECKF(c, dev1 <= dev0, "cuda:%d: the driver holds %zu more bytes", mine.device,
              dev1 - dev0);
    WB_OK(c, dao_comm_barrier(c->comm));
  }
  if (filler != NULL) WB_OK(c, dao_free(mine, filler));
  /* The ranks still work together afterwards. */
  WB_CHECK(c, wc_roundtrip(c, DAO_WHOLE_DISTRIBUTED, 100, 16, 5) == 1);
}

static void test_out_of_memory(void **state) {
  dao_place p[4];
  (void)state;
  if (real_driver) return; /* a real card has more than 64 MiB */
  places_cuda(p, 4);
  run(p, 4, 0, body_out_of_memory, NULL);
  run(p, 4, 1, body_out_of_memory, NULL);
}

/* Gathers from several threads of each rank at once (in-process handles
 * are safe from any thread): the copies of all threads go through the
 * rank's one stream, and each thread's entries are right. */
static void body_threads(wb_ctx *c, void *p) {
  const size_t entries = 777, entry_size = 24;
  dao_place place;
  int t;
  (void)p;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &place));
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, entries, entry_size);
    dao_whole *w = NULL;
    dao_whole_range r;
    void *local = NULL;
    unsigned char *host;
    size_t i;
    if (dao_whole_supported(c->comm, (dao_whole_type)t, DAO_WHOLE_DEVICE) != DAO_OK) continue;
    if (!WB_OK(c, dao_whole_create(c->comm, &d, &w))) continue;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    WB_OK(c, dao_whole_get_local(w, &local, &r));
    host = (unsigned char *)malloc(r.byte_size + 1);
    if (host != NULL) {
      for (i = 0; i < r.entry_count; ++i)
        wb_fill_entry(host + i * entry_size, r.first_entry + i, entry_size, 0);
      wc_copy(c, place, local, host, r.byte_size);
    }
    free(host);
    WB_OK(c, dao_comm_barrier(c->comm));
    wb_gather_from_threads(c, w, entries, entry_size, 30, dao_whole_type_name((dao_whole_type)t));
    WB_OK(c, dao_comm_barrier(c->comm));
    WB_OK(c, dao_whole_destroy(w));
  }
}

static void test_threads_per_rank(void **state) {
  dao_place p[4];
  (void)state;
  places_cuda(p, 4);
  run(p, 4, 0, body_threads, NULL);
}

/* `test_whole_cuda faults` runs with DAO_FAULT_INJECT (copies, system
 * allocations and maps of the devices fail at random): every call gives a
 * status, never a crash or a hang; a create fails on every rank alike and
 * leaves nothing allocated; a gather whose copy failed says so; the ranks go
 * on working, and at the end every device holds what it held before. */
#define FAULT_ROUNDS 60
static dao_status fault_create[FAULT_ROUNDS][4];
static int fault_gathers_failed[4];

static int fault_ok(dao_status s) {
  return s == DAO_OK || s == DAO_ERR_BACKEND || s == DAO_ERR_OUT_OF_MEMORY;
}

static void body_faults(wb_ctx *c, void *p) {
  const size_t entries = 300, entry_size = 40;
  unsigned char host[300 * 40], out[64 * 40];
  int64_t idx[64];
  uint64_t rng = (uint64_t)c->rank + 11;
  dao_place place;
  size_t used0 = 0, used1 = 0;
  int round, i;
  (void)p;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &place));
  WB_OK(c, dao_comm_barrier(c->comm));
  WB_OK(c, dao_used_internal(place, &used0));
  for (round = 0; round < FAULT_ROUNDS; ++round) {
    const dao_whole_type type = (dao_whole_type)(round % 3);
    dao_whole_desc d = wb_desc(type, DAO_WHOLE_DEVICE, entries, entry_size);
    dao_whole *w = NULL;
    dao_whole_range r;
    void *local = NULL;
    dao_status made, got;
    int filled = 0;
    made = dao_whole_create(c->comm, &d, &w);
    fault_create[round][c->rank] = made;
    WB_CHECKF(c, fault_ok(made), "round %d: create gave %s: %s", round, dao_status_string(made),
              dao_last_error());
    if (made != DAO_OK) {
      WB_CHECK(c, w == NULL);
      continue;
    }
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    WB_OK(c, dao_whole_get_local(w, &local, &r));
    for (i = 0; i < (int)r.entry_count; ++i)
      wb_fill_entry(host + (size_t)i * entry_size, r.first_entry + (size_t)i, entry_size, 0);
    {
      dao_stream st = NULL;
      if (dao_stream_create(place, &st) == DAO_OK) {
        filled = r.byte_size == 0 || (dao_memcpy_async(local, host, r.byte_size, st) == DAO_OK &&
                                      dao_stream_synchronize(st) == DAO_OK);
        WB_OK(c, dao_stream_destroy(st));
      }
    }
    /* Whether every rank filled its part (a failed copy leaves it as it
     * was): the object's entries are checked only then. */
    got = dao_whole_scatter_collective(w, NULL, NULL, 0);
    WB_CHECKF(c, fault_ok(got), "round %d: collective call gave %s", round, dao_status_string(got));
    WB_OK(c, dao_comm_barrier(c->comm));
    for (i = 0; i < 64; ++i) idx[i] = (int64_t)(wb_rand(&rng) % entries);
    got = dao_whole_gather(w, idx, 64, out);
    WB_CHECKF(c, got == DAO_OK || got == DAO_ERR_BACKEND, "round %d: gather gave %s: %s", round,
              dao_status_string(got), dao_last_error());
    if (got == DAO_ERR_BACKEND) {
      WB_CHECK(c, strstr(dao_last_error(), "copy") != NULL);
      ++fault_gathers_failed[c->rank];
    }
    (void)filled;
    WB_OK(c, dao_comm_barrier(c->comm));
    WB_OK(c, dao_whole_destroy(w));
  }
  WB_OK(c, dao_comm_barrier(c->comm));
  WB_OK(c, dao_used_internal(place, &used1));
  WB_CHECKF(c, used1 == used0, "cuda:%d: %zu bytes left allocated", place.device, used1 - used0);
}

static void test_faults(void **state) {
  dao_place p[4];
  int round, r, failed = 0;
  (void)state;
  places_cuda(p, 4);
  run(p, 4, 0, body_faults, NULL);
  for (round = 0; round < FAULT_ROUNDS; ++round) {
    for (r = 1; r < 4; ++r) assert_int_equal(fault_create[round][r], fault_create[round][0]);
    failed += fault_create[round][0] != DAO_OK;
  }
  /* The faults did hit some creates, and not all, and some gathers. */
  assert_true(failed > 0 && failed < FAULT_ROUNDS);
  assert_true(fault_gathers_failed[0] + fault_gathers_failed[1] + fault_gathers_failed[2] +
                  fault_gathers_failed[3] >
              0);
  run(p, 3, 1, body_faults, NULL);
}

/* A CUDA device next to a place the device cannot reach: refused, saying
 * what works. */
static void body_mixed(wb_ctx *c, void *p) {
  int t;
  (void)p;
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, 10, 8);
    dao_whole *w = (dao_whole *)1;
    WB_FAILS(c, dao_whole_supported(c->comm, (dao_whole_type)t, DAO_WHOLE_DEVICE),
             DAO_ERR_UNSUPPORTED, "every rank on a CUDA device");
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_UNSUPPORTED, "location host");
    WB_CHECK(c, w == NULL);
  }
  WB_CHECK(c, wb_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 50, 8, 2) == 1);
}

static void test_mixed_places(void **state) {
  dao_place p[2];
  (void)state;
  p[0] = device(0);
  p[1] = dao_place_cpu();
  run(p, 2, 0, body_mixed, NULL);
}

/* The checks every communicator passes (whole_body.h), on host memory and
 * with bad descriptions and disagreeing ranks, over ranks on CUDA devices. */
static void body_generic(wb_ctx *c, void *p) {
  (void)p;
  WB_CHECK(c, wb_all_shapes(c, DAO_WHOLE_HOST) == 3);
  wb_bad_descriptions(c);
  wb_disagreement(c);
  wb_file_roundtrip(c, DAO_WHOLE_CHUNKED, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 99, 12);
}

static void test_generic(void **state) {
  dao_place p[4];
  (void)state;
  places_cuda(p, 4);
  run(p, 4, 0, body_generic, NULL);
  run(p, 2, 1, body_generic, NULL);
}

/* Bad input on an object on a device: refused, nothing copied. */
static void test_bad_input(void **state) {
  dao_place place = device(0);
  dao_comm *comm = NULL;
  dao_whole *w = NULL;
  dao_whole_desc d = wb_desc(DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, 10, 16);
  unsigned char buf[3 * 16], back[10 * 16], before[10 * 16];
  int64_t idx[3] = {0, 5, 9};
  void *local = NULL;
  dao_stream s = NULL;
  (void)state;
  assert_ok(dao_comm_create_local(1, &place, &comm));
  assert_ok(dao_whole_create(comm, &d, &w));
  assert_ok(dao_whole_get_local(w, &local, NULL));
  dao_test_fill(before, sizeof before, 3);
  assert_ok(dao_stream_create(place, &s));
  assert_ok(dao_memcpy_async(local, before, sizeof before, s));
  assert_ok(dao_stream_synchronize(s));
  idx[1] = 10;
  assert_failure_mentions(dao_whole_gather(w, idx, 3, buf), DAO_ERR_INVALID_ARGUMENT,
                          "indices[1] = 10 is out of range");
  memset(buf, 0x11, sizeof buf);
  assert_failure_mentions(dao_whole_scatter(w, buf, idx, 3), DAO_ERR_INVALID_ARGUMENT,
                          "indices[1] = 10");
  idx[1] = -1;
  assert_failure_mentions(dao_whole_scatter_collective(w, buf, idx, 3), DAO_ERR_INVALID_ARGUMENT,
                          "indices[1] = -1");
  assert_failure_mentions(dao_whole_gather(w, idx, 3, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "dst must not be NULL");
  assert_ok(dao_memcpy_async(back, local, sizeof back, s));
  assert_ok(dao_stream_synchronize(s));
  assert_memory_equal(back, before, sizeof before);
  idx[1] = 5;
  assert_ok(dao_whole_gather(w, idx, 3, buf));
  assert_memory_equal(buf, before, 16);
  assert_memory_equal(buf + 16, before + 5 * 16, 16);
  assert_memory_equal(buf + 32, before + 9 * 16, 16);
  assert_ok(dao_stream_destroy(s));
  assert_ok(dao_whole_destroy(w));
  assert_ok(dao_comm_destroy(comm));
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_four_devices),
      cmocka_unit_test(test_shared_device),
      cmocka_unit_test(test_hooked_transport),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_mixed_places),
      cmocka_unit_test(test_generic),
      cmocka_unit_test(test_threads_per_rank),
  };
  const struct CMUnitTest no_peer_tests[] = {
      cmocka_unit_test(test_four_devices),
      cmocka_unit_test(test_shared_device),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_hooked_transport),
  };
  const char *tmp = getenv("TMPDIR");
  snprintf(file_prefix, sizeof file_prefix, "%s/dao-test-whole-cuda-%ld",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", (long)getpid());
  real_driver = argc > 1 && strcmp(argv[1], "driver") == 0;
  wc_exact_free = !real_driver;
  wc_continuous_may_fail = real_driver;
  if (dao_place_device_count(DAO_PLACE_CUDA, &devices) != DAO_OK || devices == 0) {
    printf(
        "no CUDA device (%s): nothing to check\n",
        dao_place_device_count(DAO_PLACE_CUDA, &devices) == DAO_OK ? "count 0" : dao_last_error());
    return real_driver ? 0 : 1;
  }
  if (!real_driver) find_fake_driver();
  if (argc > 1 && strcmp(argv[1], "no-peer") == 0) {
    no_peer = 1;
    wc_continuous_may_fail = 1;
    return cmocka_run_group_tests(no_peer_tests, NULL, NULL);
  }
  if (argc > 1 && strcmp(argv[1], "faults") == 0) {
    const struct CMUnitTest fault_tests[] = {cmocka_unit_test(test_faults)};
    return cmocka_run_group_tests(fault_tests, NULL, NULL);
  }
  if (argc > 1 && strcmp(argv[1], "no-vmm") == 0) {
    no_vmm = 1;
    wc_continuous_may_fail = 1;
    return cmocka_run_group_tests(no_peer_tests, NULL, NULL);
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
