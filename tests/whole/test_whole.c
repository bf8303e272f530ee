/* Partitioned memory in one process (whole.h): a thread per rank over
 * in-process communicators on several SIM devices, on the CPU, and on a mix;
 * every type on both locations; the partition rule's edge cases; gather and
 * scatter of random indices against a reference; store and load; each SIM
 * device holding its own part (capacity charged) and a device too small for
 * its part failing every rank; ranks that disagree; every bad input.
 *
 * The same checks also run over a transport written here in C and handed in
 * through the experimental hook (dao_comm_create_transport), which behaves
 * as MPI does between processes (shared segments for mapped memory, windows
 * for distributed memory), so that those paths run under the sanitizers
 * too, without MPI.
 *
 * Runs with DAO_SIM_DEVICES=4x64MiB,16MiB. No check depends on timing. */
#define _GNU_SOURCE
#define DAO_EXPERIMENTAL 1

#include <pthread.h>
#include <unistd.h>

#include "dao_test.h"
#include "whole/thread_transport.h"
#include "whole/whole_body.h"

#define MIB ((size_t)1 << 20)
#define MAX_RANKS 70

/* --- running a body on every rank, a thread each ------------------------------ */

typedef void (*body_fn)(wb_ctx *c, void *arg);

typedef struct rank_job {
  wb_ctx ctx;
  body_fn fn;
  void *arg;
  pthread_t thread;
} rank_job;

static char file_prefix[256];

static void *rank_main(void *p) {
  rank_job *job = (rank_job *)p;
  job->fn(&job->ctx, job->arg);
  return NULL;
}

/* Runs fn on every rank of `comms`, each on a thread of its own, and fails
 * the test when any rank recorded a failure. */
static void run_ranks(dao_comm **comms, int n, body_fn fn, void *arg) {
  rank_job jobs[MAX_RANKS];
  int r, failures = 0, checks = 0;
  assert_true(n <= MAX_RANKS);
  memset(jobs, 0, sizeof jobs);
  for (r = 0; r < n; ++r) {
    jobs[r].ctx.comm = comms[r];
    assert_ok(dao_comm_rank(comms[r], &jobs[r].ctx.rank));
    assert_ok(dao_comm_size(comms[r], &jobs[r].ctx.size));
    assert_int_equal(jobs[r].ctx.rank, r);
    assert_int_equal(jobs[r].ctx.size, n);
    jobs[r].ctx.file_prefix = file_prefix;
    jobs[r].fn = fn;
    jobs[r].arg = arg;
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
  assert_int_equal(failures, 0);
  assert_true(checks > 0);
}

static void run_local(const dao_place *places, int n, body_fn fn, void *arg) {
  dao_comm *comms[MAX_RANKS];
  int r;
  assert_ok(dao_comm_create_local(n, places, comms));
  run_ranks(comms, n, fn, arg);
  for (r = 0; r < n; ++r) assert_ok(dao_comm_destroy(comms[r]));
}

static void places_sim(dao_place *p, int n) {
  int r;
  for (r = 0; r < n; ++r) p[r] = dao_place_sim(r);
}

static void places_cpu(dao_place *p, int n) {
  int r;
  for (r = 0; r < n; ++r) p[r] = dao_place_cpu();
}

/* --- bodies ----------------------------------------------------------------- */

typedef struct shapes_arg {
  dao_whole_location location;
  int expect_supported; /* types expected to work */
  pthread_mutex_t mutex;
  int min_supported, max_supported;
} shapes_arg;

static void body_all_shapes(wb_ctx *c, void *p) {
  shapes_arg *a = (shapes_arg *)p;
  int n = wb_all_shapes(c, a->location);
  WB_CHECKF(c, n == a->expect_supported, "%d types supported on %s, expected %d", n,
            dao_whole_location_name(a->location), a->expect_supported);
}

static void all_shapes(const dao_place *places, int n, dao_whole_location location, int expect) {
  shapes_arg a;
  memset(&a, 0, sizeof a);
  a.location = location;
  a.expect_supported = expect;
  run_local(places, n, body_all_shapes, &a);
}

static void test_sim_devices(void **state) {
  dao_place p[4];
  (void)state;
  places_sim(p, 4);
  all_shapes(p, 4, DAO_WHOLE_DEVICE, 3);
  all_shapes(p, 4, DAO_WHOLE_HOST, 3);
  all_shapes(p, 2, DAO_WHOLE_DEVICE, 3);
}

static void test_cpu(void **state) {
  dao_place p[4];
  (void)state;
  places_cpu(p, 4);
  all_shapes(p, 4, DAO_WHOLE_DEVICE, 3);
  all_shapes(p, 4, DAO_WHOLE_HOST, 3);
  all_shapes(p, 3, DAO_WHOLE_HOST, 3);
  all_shapes(p, 1, DAO_WHOLE_DEVICE, 3);
}

/* More ranks than the agreement's record has room for counts (64): the
 * collective gather and scatter trade counts with an alltoall instead. */
static void body_many_ranks(wb_ctx *c, void *p) {
  (void)p;
  WB_CHECK(c, wb_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 300, 16, 1) == 1);
  WB_CHECK(c, wb_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 61, 24, 3) == 1);
}

static void test_many_ranks(void **state) {
  dao_place p[MAX_RANKS];
  (void)state;
  places_cpu(p, MAX_RANKS);
  run_local(p, MAX_RANKS, body_many_ranks, NULL);
}

static void test_mixed_places(void **state) {
  dao_place p[3];
  (void)state;
  p[0] = dao_place_cpu();
  p[1] = dao_place_sim(2);
  p[2] = dao_place_sim(0);
  all_shapes(p, 3, DAO_WHOLE_DEVICE, 3);
}

/* Each SIM device holds its rank's part: its capacity is charged by at
 * least the part (continuous memory: whole pages from the part's first
 * page start on), and given back at destroy. */
static void body_parts_on_devices(wb_ctx *c, void *p) {
  const size_t entries = 3000, entry_size = 1000; /* not page multiples */
  const long page = sysconf(_SC_PAGESIZE);
  dao_place mine;
  int t;
  (void)p;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, entries, entry_size);
    dao_whole *w = NULL;
    dao_whole_range r;
    dao_whole_info info;
    size_t free0 = 0, free1 = 0, free2 = 0, used0 = 0, used1 = 0, used2 = 0, charged, part;
    void *local = NULL;
    WB_OK(c, dao_place_memory_info(mine, &free0, NULL));
    WB_OK(c, dao_used_internal(mine, &used0));
    WB_OK(c, dao_comm_barrier(c->comm));
    if (!WB_OK(c, dao_whole_create(c->comm, &d, &w))) continue;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    WB_OK(c, dao_whole_get_info(w, &info));
    WB_CHECK(c, info.place.kind == DAO_PLACE_SIM && info.place.device == mine.device);
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    WB_OK(c, dao_whole_get_local(w, &local, &r));
    WB_OK(c, dao_place_memory_info(mine, &free1, NULL));
    WB_OK(c, dao_used_internal(mine, &used1));
    part = r.byte_size;
    charged = free0 - free1;
    if (t == DAO_WHOLE_CONTINUOUS) {
      /* Whole pages from the first page that starts in the part. */
      size_t first_page = (r.byte_offset + (size_t)page - 1) / (size_t)page * (size_t)page;
      size_t end = (r.byte_offset + part + (size_t)page - 1) / (size_t)page * (size_t)page;
      WB_CHECKF(c, charged == end - first_page,
                "continuous: sim:%d charged %zu bytes, expected %zu", mine.device, charged,
                end - first_page);
    } else {
      /* From the device's allocator for libdao's own memory (which may reuse memory it
       * already holds from the device, so the capacity is not re-read). */
      WB_CHECKF(c, used1 - used0 >= part && used1 - used0 < part + 4096,
                "%s: sim:%d's allocator holds %zu more bytes, the part is %zu",
                dao_whole_type_name((dao_whole_type)t), mine.device, used1 - used0, part);
    }
    WB_OK(c, dao_whole_destroy(w));
    /* Each rank's memory is given back by the time its destroy returns. */
    WB_OK(c, dao_place_memory_info(mine, &free2, NULL));
    WB_OK(c, dao_used_internal(mine, &used2));
    WB_CHECKF(c, used2 == used0, "sim:%d: %zu bytes still allocated after destroy", mine.device,
              used2 - used0);
    if (t == DAO_WHOLE_CONTINUOUS)
      WB_CHECKF(c, free2 == free0, "sim:%d: %zu bytes not given back after destroy", mine.device,
                free0 - free2);
  }
}

static void test_parts_on_devices(void **state) {
  dao_place p[4];
  (void)state;
  places_sim(p, 4);
  run_local(p, 4, body_parts_on_devices, NULL);
}

/* A part that does not fit on its device fails every rank, names that rank
 * and place, and leaves nothing allocated anywhere. */
static void body_out_of_memory(wb_ctx *c, void *p) {
  dao_place mine;
  int t;
  (void)p;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    /* 4 x 24 MiB: fits on the 64 MiB devices, not on the 16 MiB one. */
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, 96, MIB);
    dao_whole *w = (dao_whole *)1;
    size_t used0 = 0, used1 = 0, free0 = 0, free1 = 0;
    WB_OK(c, dao_used_internal(mine, &used0));
    WB_OK(c, dao_place_memory_info(mine, &free0, NULL));
    WB_OK(c, dao_comm_barrier(c->comm));
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_OUT_OF_MEMORY, "on rank 3 of 4");
    WB_CHECK(c, strstr(dao_last_error(), "sim:4") != NULL);
    WB_CHECK(c, w == NULL);
    WB_OK(c, dao_comm_barrier(c->comm));
    WB_OK(c, dao_used_internal(mine, &used1));
    WB_OK(c, dao_place_memory_info(mine, &free1, NULL));
    WB_CHECKF(c, used1 == used0, "sim:%d: %zu bytes left allocated", mine.device, used1 - used0);
    if (t == DAO_WHOLE_CONTINUOUS)
      WB_CHECKF(c, free1 == free0, "sim:%d: %zu bytes left mapped", mine.device, free0 - free1);
  }
  /* The ranks still work together afterwards. */
  wb_roundtrip(c, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, 100, 16, 5);
}

static void test_out_of_memory(void **state) {
  dao_place p[4];
  (void)state;
  p[0] = dao_place_sim(0);
  p[1] = dao_place_sim(1);
  p[2] = dao_place_sim(2);
  p[3] = dao_place_sim(4);
  run_local(p, 4, body_out_of_memory, NULL);
}

static void body_disagreement(wb_ctx *c, void *p) {
  (void)p;
  wb_bad_descriptions(c);
  wb_disagreement(c);
}

static void test_disagreement(void **state) {
  dao_place p[4];
  (void)state;
  places_cpu(p, 4);
  run_local(p, 4, body_disagreement, NULL);
  run_local(p, 2, body_disagreement, NULL);
  run_local(p, 1, body_disagreement, NULL);
}

static void body_files(wb_ctx *c, void *p) {
  dao_whole_location location = *(const dao_whole_location *)p;
  wb_file_roundtrip(c, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DISTRIBUTED, location, 1001, 24);
  wb_file_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_CHUNKED, location, 3, 7);
  wb_file_roundtrip(c, DAO_WHOLE_CHUNKED, DAO_WHOLE_CONTINUOUS, location, 5000, 40);
}

static void test_files(void **state) {
  dao_place p[4];
  dao_whole_location device = DAO_WHOLE_DEVICE, host = DAO_WHOLE_HOST;
  (void)state;
  places_sim(p, 4);
  run_local(p, 4, body_files, &device);
  run_local(p, 3, body_files, &host);
}

/* Gathers from several threads of each rank at once (in-process handles
 * are safe from any thread). */
static void body_threads(wb_ctx *c, void *p) {
  int t;
  (void)p;
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    const size_t entries = 777, entry_size = 32;
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, entries, entry_size);
    dao_whole *w = NULL;
    dao_whole_range r;
    void *local = NULL;
    size_t i;
    if (!WB_OK(c, dao_whole_create(c->comm, &d, &w))) continue;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    WB_OK(c, dao_whole_get_local(w, &local, &r));
    for (i = 0; i < r.entry_count; ++i)
      wb_fill_entry((unsigned char *)local + i * entry_size, r.first_entry + i, entry_size, 0);
    WB_OK(c, dao_comm_barrier(c->comm));
    wb_gather_from_threads(c, w, entries, entry_size, 50, dao_whole_type_name((dao_whole_type)t));
    WB_OK(c, dao_whole_destroy(w));
  }
}

static void test_threads_per_rank(void **state) {
  dao_place p[4];
  (void)state;
  places_sim(p, 4);
  run_local(p, 4, body_threads, NULL);
}

/* --- a transport over threads, through the C hook (whole/thread_transport.h) ---- */

typedef struct hooked_job {
  tt_group *g;
  int rank;
  dao_place place;
  body_fn fn;
  void *arg;
  wb_ctx ctx;
  pthread_t thread;
} hooked_job;

static void *hooked_main(void *p) {
  hooked_job *j = (hooked_job *)p;
  dao_comm_transport o = tt_ops(j->g, j->rank);
  dao_comm *comm = NULL;
  j->ctx.rank = j->rank;
  j->ctx.size = j->g->size;
  j->ctx.file_prefix = file_prefix;
  if (!WB_OK(&j->ctx, dao_comm_create_transport(&o, j->place, &comm))) return NULL;
  j->ctx.comm = comm;
  {
    dao_comm_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    WB_OK(&j->ctx, dao_comm_get_info(comm, &info));
    WB_CHECK(&j->ctx, strcmp(info.transport, "test-threads") == 0);
    WB_CHECK(&j->ctx, info.shares_address_space == 0 && info.shares_host_memory == 1);
    WB_CHECK(&j->ctx, info.rank == j->rank && info.size == j->g->size);
  }
  j->fn(&j->ctx, j->arg);
  WB_OK(&j->ctx, dao_comm_destroy(comm));
  return NULL;
}

static void run_hooked(const dao_place *places, int n, int batched, body_fn fn, void *arg) {
  tt_group g;
  hooked_job jobs[MAX_RANKS];
  int r, failures = 0;
  tt_group_init(&g, n);
  g.batched = batched;
  memset(jobs, 0, sizeof jobs);
  for (r = 0; r < n; ++r) {
    jobs[r].g = &g;
    jobs[r].rank = r;
    jobs[r].place = places[r];
    jobs[r].fn = fn;
    jobs[r].arg = arg;
    assert_int_equal(pthread_create(&jobs[r].thread, NULL, hooked_main, &jobs[r]), 0);
  }
  for (r = 0; r < n; ++r) assert_int_equal(pthread_join(jobs[r].thread, NULL), 0);
  for (r = 0; r < n; ++r) {
    if (jobs[r].ctx.failures > 0)
      print_error("rank %d: %d failure(s), first: %s\n", r, jobs[r].ctx.failures,
                  jobs[r].ctx.first);
    failures += jobs[r].ctx.failures;
  }
  assert_int_equal(failures, 0);
  assert_int_equal(g.destroyed, n);
  tt_group_done(&g);
}

static void body_hooked(wb_ctx *c, void *p) {
  dao_place mine;
  (void)p;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
  /* Host memory: every type, mapped through shared segments. */
  WB_CHECKF(c, wb_all_shapes(c, DAO_WHOLE_HOST) == 3, "not every type on the host");
  if (mine.kind == DAO_PLACE_SIM) {
    /* SIM memory of one "process" cannot be mapped by another, so mapped
     * parts live in the transport's shared segments and are charged to the
     * devices (issue 22): every type, as on the host. */
    WB_OK(c, dao_whole_supported(c->comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE));
    WB_OK(c, dao_whole_supported(c->comm, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE));
    WB_CHECKF(c, wb_all_shapes(c, DAO_WHOLE_DEVICE) == 3, "SIM device: every type");
  } else {
    WB_CHECKF(c, wb_all_shapes(c, DAO_WHOLE_DEVICE) == 3, "CPU device: every type");
  }
  wb_bad_descriptions(c);
  wb_disagreement(c);
  wb_file_roundtrip(c, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, 999, 12);
  wb_file_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 2, 5);
}

static void test_hooked_transport(void **state) {
  dao_place p[4];
  (void)state;
  places_cpu(p, 4);
  run_hooked(p, 4, 1, body_hooked, NULL);
  places_sim(p, 4);
  run_hooked(p, 4, 0, body_hooked, NULL); /* one get or put per piece */
  run_hooked(p, 1, 1, body_hooked, NULL);
}

/* A bad place on one rank fails every rank's create, naming it. */
static void body_bad_place(wb_ctx *c, void *p) {
  (void)c;
  (void)p;
}

static void *hooked_bad_main(void *p) {
  hooked_job *j = (hooked_job *)p;
  dao_comm_transport o = tt_ops(j->g, j->rank);
  dao_comm *comm = (dao_comm *)1;
  char needle[64];
  snprintf(needle, sizeof needle, "on rank %d of %d", j->g->size - 1, j->g->size);
  WB_FAILS(&j->ctx, dao_comm_create_transport(&o, j->place, &comm), DAO_ERR_NO_DEVICE, needle);
  WB_CHECK(&j->ctx, comm == NULL);
  return NULL;
}

static void test_hooked_errors(void **state) {
  tt_group g;
  hooked_job jobs[3];
  dao_comm_transport o;
  dao_comm *comm = (dao_comm *)1;
  int r;
  (void)state;
  (void)body_bad_place;

  /* A rank whose place does not exist: every rank fails, destroy is called
   * on every rank's transport. */
  tt_group_init(&g, 3);
  memset(jobs, 0, sizeof jobs);
  for (r = 0; r < 3; ++r) {
    jobs[r].g = &g;
    jobs[r].rank = r;
    jobs[r].place = r == 2 ? dao_place_sim(40) : dao_place_cpu();
    assert_int_equal(pthread_create(&jobs[r].thread, NULL, hooked_bad_main, &jobs[r]), 0);
  }
  for (r = 0; r < 3; ++r) assert_int_equal(pthread_join(jobs[r].thread, NULL), 0);
  for (r = 0; r < 3; ++r) {
    if (jobs[r].ctx.failures > 0) print_error("rank %d: %s\n", r, jobs[r].ctx.first);
    assert_int_equal(jobs[r].ctx.failures, 0);
  }
  assert_int_equal(g.destroyed, 3);
  tt_group_done(&g);

  /* Bad transports, on one rank: refused, and destroyed unless unusable. */
  tt_group_init(&g, 1);
  assert_failure_mentions(dao_comm_create_transport(NULL, dao_place_cpu(), &comm),
                          DAO_ERR_INVALID_ARGUMENT, "transport must not be NULL");
  assert_null(comm);
  o = tt_ops(&g, 0);
  o.struct_size = 16;
  assert_failure_mentions(dao_comm_create_transport(&o, dao_place_cpu(), &comm),
                          DAO_ERR_INVALID_ARGUMENT, "struct_size");
  assert_int_equal(g.destroyed, 0); /* not trusted: the caller still owns it */
  free(o.self);
  o = tt_ops(&g, 0);
  o.window_put = NULL;
  assert_failure_mentions(dao_comm_create_transport(&o, dao_place_cpu(), &comm),
                          DAO_ERR_INVALID_ARGUMENT, "window_put");
  assert_int_equal(g.destroyed, 1);
  o = tt_ops(&g, 0);
  o.rank = 3;
  assert_failure_mentions(dao_comm_create_transport(&o, dao_place_cpu(), &comm),
                          DAO_ERR_INVALID_ARGUMENT, "rank 3 of size 1");
  assert_int_equal(g.destroyed, 2);
  o = tt_ops(&g, 0);
  o.shared_allocate = NULL; /* fine: mapped memory is then unsupported */
  assert_ok(dao_comm_create_transport(&o, dao_place_cpu(), &comm));
  assert_failure_mentions(dao_whole_supported(comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST),
                          DAO_ERR_UNSUPPORTED, "one node");
  assert_ok(dao_whole_supported(comm, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST));
  assert_ok(dao_comm_destroy(comm));
  assert_int_equal(g.destroyed, 3);
  o = tt_ops(&g, 0);
  assert_failure_mentions(dao_comm_create_transport(&o, dao_place_cpu(), NULL),
                          DAO_ERR_INVALID_ARGUMENT, "out must not be NULL");
  assert_int_equal(g.destroyed, 4);
  tt_group_done(&g);

  assert_int_equal(dao_comm_transport_error(DAO_ERR_BACKEND, "from a transport"), DAO_ERR_BACKEND);
  assert_string_equal(dao_last_error(), "from a transport");
}

/* --- bad input, on a one-rank communicator (no threads needed) --------------- */

static void test_bad_input(void **state) {
  dao_place places[2];
  dao_comm *comm = NULL, *comms[2];
  dao_whole *w = NULL;
  dao_whole_desc d;
  dao_whole_range range;
  dao_whole_info info;
  dao_comm_info cinfo;
  dao_place place;
  void *ptr = NULL;
  int rank = -1, size = -1;
  int64_t idx[3] = {0, 5, 9};
  unsigned char buf[3 * 16], before[10 * 16];
  uint64_t garbage[8] = {0};
  (void)state;

  places[0] = dao_place_cpu();
  places[1] = dao_place_sim(99);
  assert_failure_mentions(dao_comm_create_local(1, NULL, comms), DAO_ERR_INVALID_ARGUMENT,
                          "places must not be NULL");
  assert_failure_mentions(dao_comm_create_local(1, places, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "comms must not be NULL");
  assert_failure_mentions(dao_comm_create_local(0, places, comms), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_failure_mentions(dao_comm_create_local(DAO_COMM_LOCAL_MAX_RANKS + 1, places, comms),
                          DAO_ERR_INVALID_ARGUMENT, "out of range");
  assert_failure_mentions(dao_comm_create_local(2, places, comms), DAO_ERR_NO_DEVICE, "places[1]");
  places[1].kind = (dao_place_kind)77;
  assert_failure_mentions(dao_comm_create_local(2, places, comms), DAO_ERR_INVALID_ARGUMENT,
                          "kind");
  {
    int cuda = 0;
    assert_ok(dao_place_device_count(DAO_PLACE_CUDA, &cuda));
    if (cuda == 0) {
      places[1] = dao_place_cuda(0);
      assert_status(dao_comm_create_local(2, places, comms), DAO_ERR_NO_DEVICE);
    }
  }

  assert_ok(dao_comm_create_local(1, places, &comm));
  assert_failure_mentions(dao_comm_rank(NULL, &rank), DAO_ERR_INVALID_ARGUMENT, "comm");
  assert_failure_mentions(dao_comm_rank((dao_comm *)garbage, &rank), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_comm");
  assert_failure_mentions(dao_comm_rank(comm, NULL), DAO_ERR_INVALID_ARGUMENT, "rank");
  assert_failure_mentions(dao_comm_size(comm, NULL), DAO_ERR_INVALID_ARGUMENT, "size");
  assert_ok(dao_comm_rank(comm, &rank));
  assert_ok(dao_comm_size(comm, &size));
  assert_int_equal(rank, 0);
  assert_int_equal(size, 1);
  assert_failure_mentions(dao_comm_rank_place(comm, 1, &place), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_failure_mentions(dao_comm_rank_place(comm, -1, &place), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_ok(dao_comm_rank_place(comm, 0, &place));
  assert_int_equal(place.kind, DAO_PLACE_CPU);
  memset(&cinfo, 0, sizeof cinfo);
  cinfo.struct_size = 8;
  assert_failure_mentions(dao_comm_get_info(comm, &cinfo), DAO_ERR_INVALID_ARGUMENT, "struct_size");
  cinfo.struct_size = sizeof cinfo;
  assert_ok(dao_comm_get_info(comm, &cinfo));
  assert_string_equal(cinfo.transport, "in-process");
  assert_int_equal(cinfo.shares_address_space, 1);
  assert_failure_mentions(dao_comm_barrier((dao_comm *)garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live");
  assert_ok(dao_comm_barrier(comm));

  assert_string_equal(dao_whole_type_name(DAO_WHOLE_CHUNKED), "chunked");
  assert_string_equal(dao_whole_type_name((dao_whole_type)5), "unknown");
  assert_string_equal(dao_whole_location_name(DAO_WHOLE_HOST), "host");
  assert_string_equal(dao_whole_location_name((dao_whole_location)-1), "unknown");
  assert_failure_mentions(dao_whole_supported(comm, (dao_whole_type)3, DAO_WHOLE_HOST),
                          DAO_ERR_INVALID_ARGUMENT, "dao_whole_type");
  assert_failure_mentions(dao_whole_supported(comm, DAO_WHOLE_CHUNKED, (dao_whole_location)2),
                          DAO_ERR_INVALID_ARGUMENT, "dao_whole_location");
  assert_failure_mentions(dao_whole_supported(NULL, DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST),
                          DAO_ERR_INVALID_ARGUMENT, "comm");

  /* create */
  d = wb_desc(DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 10, 16);
  assert_failure_mentions(dao_whole_create(NULL, &d, &w), DAO_ERR_INVALID_ARGUMENT, "comm");
  assert_failure_mentions(dao_whole_create(comm, NULL, &w), DAO_ERR_INVALID_ARGUMENT,
                          "desc must not be NULL");
  assert_failure_mentions(dao_whole_create(comm, &d, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "out must not be NULL");
  assert_ok(dao_whole_create(comm, &d, &w));
  assert_non_null(w);

  /* a comm with a live object cannot go */
  assert_failure_mentions(dao_comm_destroy(comm), DAO_ERR_BUSY, "1 whole memory object");
  assert_failure_mentions(dao_comm_destroy((dao_comm *)garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live");

  /* queries */
  assert_failure_mentions(dao_whole_get_info((dao_whole *)garbage, &info), DAO_ERR_INVALID_ARGUMENT,
                          "not a live dao_whole");
  assert_failure_mentions(dao_whole_get_info(w, NULL), DAO_ERR_INVALID_ARGUMENT, "info");
  memset(&range, 0, sizeof range);
  range.struct_size = sizeof range - 1;
  assert_failure_mentions(dao_whole_get_partition(w, 0, &range), DAO_ERR_INVALID_ARGUMENT,
                          "struct_size");
  range.struct_size = sizeof range;
  assert_failure_mentions(dao_whole_get_partition(w, 1, &range), DAO_ERR_INVALID_ARGUMENT,
                          "rank 1 is out of range");
  assert_failure_mentions(dao_whole_get_partition(w, 0, NULL), DAO_ERR_INVALID_ARGUMENT, "range");
  assert_failure_mentions(dao_whole_entry_rank(w, 10, &rank), DAO_ERR_INVALID_ARGUMENT,
                          "index 10 is out of range");
  assert_failure_mentions(dao_whole_entry_rank(w, -1, &rank), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_failure_mentions(dao_whole_entry_rank(w, 0, NULL), DAO_ERR_INVALID_ARGUMENT, "rank");
  assert_failure_mentions(dao_whole_get_local(w, NULL, NULL), DAO_ERR_INVALID_ARGUMENT, "ptr");
  assert_failure_mentions(dao_whole_get_rank_pointer(w, 1, &ptr), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_failure_mentions(dao_whole_get_rank_pointer(w, 0, NULL), DAO_ERR_INVALID_ARGUMENT, "ptr");
  assert_failure_mentions(dao_whole_get_base(w, &ptr), DAO_ERR_UNSUPPORTED, "chunked");
  assert_failure_mentions(dao_whole_get_base(w, NULL), DAO_ERR_INVALID_ARGUMENT, "base");

  /* gather and scatter: bad indices change nothing */
  assert_ok(dao_whole_get_local(w, &ptr, NULL));
  dao_test_fill(ptr, 160, 3);
  memcpy(before, ptr, sizeof before);
  idx[1] = 10;
  assert_failure_mentions(dao_whole_gather(w, idx, 3, buf), DAO_ERR_INVALID_ARGUMENT,
                          "indices[1] = 10 is out of range");
  memset(buf, 0x11, sizeof buf);
  assert_failure_mentions(dao_whole_scatter(w, buf, idx, 3), DAO_ERR_INVALID_ARGUMENT,
                          "indices[1] = 10");
  assert_memory_equal(ptr, before, sizeof before);
  idx[1] = -4;
  assert_failure_mentions(dao_whole_scatter(w, buf, idx, 3), DAO_ERR_INVALID_ARGUMENT,
                          "indices[1] = -4");
  assert_memory_equal(ptr, before, sizeof before);
  idx[1] = 5;
  assert_failure_mentions(dao_whole_gather(w, NULL, 3, buf), DAO_ERR_INVALID_ARGUMENT,
                          "indices must not be NULL");
  assert_failure_mentions(dao_whole_gather(w, idx, 3, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "dst must not be NULL");
  assert_failure_mentions(dao_whole_scatter(w, NULL, idx, 3), DAO_ERR_INVALID_ARGUMENT,
                          "src must not be NULL");
  assert_failure_mentions(dao_whole_gather(w, idx, SIZE_MAX / 2, buf), DAO_ERR_INVALID_ARGUMENT,
                          "overflow");
  assert_failure_mentions(dao_whole_gather(NULL, idx, 3, buf), DAO_ERR_INVALID_ARGUMENT, "whole");
  assert_failure_mentions(dao_whole_scatter((dao_whole *)garbage, buf, idx, 3),
                          DAO_ERR_INVALID_ARGUMENT, "not a live");
  assert_ok(dao_whole_gather(w, NULL, 0, NULL));
  assert_ok(dao_whole_gather(w, idx, 3, buf));
  assert_memory_equal(buf, before, 16);
  assert_memory_equal(buf + 16, before + 5 * 16, 16);
  assert_memory_equal(buf + 32, before + 9 * 16, 16);

  /* files */
  assert_failure_mentions(dao_whole_store(w, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "path must not be NULL");
  assert_failure_mentions(dao_whole_load(w, ""), DAO_ERR_INVALID_ARGUMENT, "empty");
  assert_failure_mentions(dao_whole_load(NULL, "x"), DAO_ERR_INVALID_ARGUMENT, "whole");

  assert_failure_mentions(dao_whole_destroy((dao_whole *)garbage), DAO_ERR_INVALID_ARGUMENT,
                          "not a live");
  assert_ok(dao_whole_destroy(NULL));
  assert_ok(dao_whole_destroy(w));
  assert_ok(dao_comm_destroy(comm));
  assert_ok(dao_comm_destroy(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_sim_devices),
      cmocka_unit_test(test_cpu),
      cmocka_unit_test(test_mixed_places),
      cmocka_unit_test(test_many_ranks),
      cmocka_unit_test(test_parts_on_devices),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_disagreement),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_threads_per_rank),
      cmocka_unit_test(test_hooked_transport),
      cmocka_unit_test(test_hooked_errors),
  };
  const char *tmp = getenv("TMPDIR");
  snprintf(file_prefix, sizeof file_prefix, "%s/dao-test-whole-%ld",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", (long)getpid());
  return cmocka_run_group_tests(tests, NULL, NULL);
}
