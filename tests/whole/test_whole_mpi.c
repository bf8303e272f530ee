/* Partitioned memory over MPI (whole_mpi.h), one rank per process: run with
 * `mpiexec -n 4` (ctest does). Every type on the host (MPI shared-memory
 * windows for mapped memory, MPI_Get/MPI_Put windows for distributed
 * memory); the ranks' own places (CPU, and SIM devices, whose memory
 * another process cannot map: distributed only, with a message that says
 * so); the partition rule's edge cases; gather and scatter of random
 * indices against a reference; store and load; ranks that disagree; a
 * communicator split from MPI_COMM_WORLD; bad input.
 *
 * Each check runs on every rank; a test passes when no rank recorded a
 * failure (an allreduce of the counts), so every rank reaches the same
 * verdict and no rank leaves the others waiting. Only rank 0 prints
 * cmocka's report; every rank prints its own failures to stderr.
 *
 * Runs with DAO_SIM_DEVICES=4x64MiB (each process its own SIM devices).
 *
 * `test_whole_mpi cuda` runs the checks of CUDA devices instead, each
 * process on a device of its own fake driver (DAO_CUDA_LIBRARY,
 * FAKE_CUDA_HIDDEN=1: device memory the host cannot touch): chunked and
 * distributed memory between processes through CUDA IPC (the fake driver
 * maps the exporter's memfd through /proc/<pid>/fd), continuous memory
 * through file descriptors of the driver's virtual memory (pidfd_getfd). */
#define _GNU_SOURCE
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <dlfcn.h>
#include <unistd.h>

#include <dao/whole_mpi.h>

#include "dao_test.h"
#include "whole/whole_cuda_body.h"

static int world_rank, world_size;
static char file_prefix[256];

/* Runs body on every process over `comm` with this process on `place`, and
 * asserts on every process that no process failed. */
static void run_mpi(MPI_Comm mpi, dao_place place, void (*body)(wb_ctx *, void *), void *arg) {
  wb_ctx c;
  dao_comm *comm = NULL;
  int total = 0;
  memset(&c, 0, sizeof c);
  c.file_prefix = file_prefix;
  MPI_Comm_rank(mpi, &c.rank);
  MPI_Comm_size(mpi, &c.size);
  if (WB_OK(&c, dao_comm_create_mpi(mpi, place, &c.comm))) {
    int r = -1, s = -1;
    dao_comm_info info;
    WB_OK(&c, dao_comm_rank(c.comm, &r));
    WB_OK(&c, dao_comm_size(c.comm, &s));
    WB_CHECK(&c, r == c.rank && s == c.size);
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    WB_OK(&c, dao_comm_get_info(c.comm, &info));
    WB_CHECK(&c, strcmp(info.transport, "mpi") == 0);
    WB_CHECK(&c, info.shares_address_space == 0 && info.shares_host_memory == 1);
    comm = c.comm;
    body(&c, arg);
    WB_OK(&c, dao_comm_destroy(comm));
  }
  if (c.failures > 0) fprintf(stderr, "rank %d: first failure: %s\n", world_rank, c.first);
  MPI_Allreduce(&c.failures, &total, 1, MPI_INT, MPI_SUM, mpi);
  assert_int_equal(total, 0);
}

static int expect;

static void body_shapes(wb_ctx *c, void *arg) {
  dao_whole_location location = *(const dao_whole_location *)arg;
  int n = wb_all_shapes(c, location);
  WB_CHECKF(c, n == expect, "%d types supported on %s, expected %d", n,
            dao_whole_location_name(location), expect);
}

static void test_host(void **state) {
  dao_whole_location host = DAO_WHOLE_HOST, device = DAO_WHOLE_DEVICE;
  (void)state;
  expect = 3;
  run_mpi(MPI_COMM_WORLD, dao_place_cpu(), body_shapes, &host);
  /* The CPU as each rank's own place: the same memory. */
  run_mpi(MPI_COMM_WORLD, dao_place_cpu(), body_shapes, &device);
}

static void body_sim(wb_ctx *c, void *arg) {
  dao_whole_location device = DAO_WHOLE_DEVICE;
  dao_place mine;
  int t;
  (void)arg;
  /* Every type on the SIM devices (issue 22): mapped parts live in shared
     host memory and are charged to each rank's device. */
  WB_OK(c, dao_whole_supported(c->comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE));
  WB_OK(c, dao_whole_supported(c->comm, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE));
  expect = 3;
  body_shapes(c, &device);
  /* Each part really is charged to its device, and given back. */
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    dao_whole_desc d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, 4000, 256);
    dao_whole *w = NULL;
    size_t used0 = 0, used1 = 0, used2 = 0;
    const size_t part = 4000 / (size_t)c->size * 256;
    WB_OK(c, dao_used_internal(mine, &used0));
    if (WB_OK(c, dao_whole_create(c->comm, &d, &w))) {
      dao_whole_info info;
      memset(&info, 0, sizeof info);
      info.struct_size = sizeof info;
      WB_OK(c, dao_whole_get_info(w, &info));
      WB_CHECK(c, info.place.kind == DAO_PLACE_SIM && info.place.device == mine.device);
      WB_OK(c, dao_used_internal(mine, &used1));
      WB_CHECKF(c, used1 - used0 >= part, "%s: sim:%d holds %zu more bytes, expected >= %zu",
                dao_whole_type_name((dao_whole_type)t), mine.device, used1 - used0, part);
      WB_OK(c, dao_whole_destroy(w));
      WB_OK(c, dao_used_internal(mine, &used2));
      WB_CHECKF(c, used2 == used0, "%s: sim:%d holds %zu bytes after the destroy, %zu before",
                dao_whole_type_name((dao_whole_type)t), mine.device, used2, used0);
    }
  }
  /* A part larger than a device (64 MiB each) fails every rank alike, names
     the device, and leaves nothing charged. */
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_CHUNKED; ++t) {
    dao_whole_desc d =
        wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, (size_t)c->size * 65, (size_t)1 << 20);
    dao_whole *w = (dao_whole *)1;
    size_t used0 = 0, used1 = 0;
    WB_OK(c, dao_used_internal(mine, &used0));
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_OUT_OF_MEMORY, "sim:");
    WB_CHECK(c, w == NULL);
    WB_OK(c, dao_used_internal(mine, &used1));
    WB_CHECK(c, used1 == used0);
  }
  /* The host still has every type. */
  expect = 3;
  {
    dao_whole_location host = DAO_WHOLE_HOST;
    body_shapes(c, &host);
  }
}

static void test_sim_places(void **state) {
  (void)state;
  run_mpi(MPI_COMM_WORLD, dao_place_sim(world_rank % 4), body_sim, NULL);
}

static void body_errors(wb_ctx *c, void *arg) {
  (void)arg;
  wb_bad_descriptions(c);
  wb_disagreement(c);
}

static void test_disagreement(void **state) {
  (void)state;
  run_mpi(MPI_COMM_WORLD, dao_place_cpu(), body_errors, NULL);
}

static void body_files(wb_ctx *c, void *arg) {
  dao_whole_location location = *(const dao_whole_location *)arg;
  wb_file_roundtrip(c, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DISTRIBUTED, location, 1001, 24);
  wb_file_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_CHUNKED, location, 3, 7);
  wb_file_roundtrip(c, DAO_WHOLE_CHUNKED, DAO_WHOLE_CONTINUOUS, location, 5000, 40);
  wb_file_roundtrip(c, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_DISTRIBUTED, location, 77, 9);
}

static void test_files(void **state) {
  dao_whole_location host = DAO_WHOLE_HOST;
  (void)state;
  run_mpi(MPI_COMM_WORLD, dao_place_cpu(), body_files, &host);
}

/* Two communicators split from the world, each with its own objects; the
 * halves run at once (Open MPI gives both the same communicator id, which
 * its shared-memory files of MPI_Win_allocate windows collide on: see
 * op_window_allocate in src/whole/mpi/mpi_transport.cpp). */
static void test_split(void **state) {
  MPI_Comm half;
  dao_whole_location host = DAO_WHOLE_HOST;
  (void)state;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  expect = 3;
  run_mpi(half, dao_place_cpu(), body_shapes, &host);
  /* Windows over each process's own SIM memory (MPI_Win_create). */
  run_mpi(half, dao_place_sim(world_rank % 4), body_sim, NULL);
  MPI_Comm_free(&half);
}

static void test_bad_create(void **state) {
  dao_comm *comm = (dao_comm *)1;
  int failures = 0, total = 0;
  (void)state;
  if (dao_comm_create_mpi(MPI_COMM_NULL, dao_place_cpu(), &comm) != DAO_ERR_INVALID_ARGUMENT ||
      strstr(dao_last_error(), "MPI_COMM_NULL") == NULL || comm != NULL) {
    fprintf(stderr, "rank %d: MPI_COMM_NULL: %s\n", world_rank, dao_last_error());
    ++failures;
  }
  /* A NULL out on one rank fails every rank, naming it. */
  comm = (dao_comm *)1;
  {
    dao_status s = dao_comm_create_mpi(MPI_COMM_WORLD, dao_place_cpu(),
                                       world_rank == world_size - 1 ? NULL : &comm);
    char needle[64];
    snprintf(needle, sizeof needle, "on rank %d of %d: out must not be NULL", world_size - 1,
             world_size);
    if (s != DAO_ERR_INVALID_ARGUMENT || strstr(dao_last_error(), needle) == NULL ||
        strstr(dao_last_error(), "dao_comm_create_mpi") == NULL) {
      fprintf(stderr, "rank %d: NULL out: %d %s\n", world_rank, (int)s, dao_last_error());
      ++failures;
    }
    if (world_rank != world_size - 1 && comm != NULL) ++failures;
  }
  /* A place that does not exist on one rank. */
  {
    dao_status s = dao_comm_create_mpi(
        MPI_COMM_WORLD, world_rank == 0 ? dao_place_sim(33) : dao_place_cpu(), &comm);
    if (s != DAO_ERR_NO_DEVICE || strstr(dao_last_error(), "on rank 0") == NULL) {
      fprintf(stderr, "rank %d: bad place: %d %s\n", world_rank, (int)s, dao_last_error());
      ++failures;
    }
  }
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  assert_int_equal(total, 0);
}

/* --- CUDA devices (`test_whole_mpi cuda`) ---------------------------------- */

/* arg: the tag of this group's files (groups split from the world run at
   once). */
static void body_cuda(wb_ctx *c, void *arg) {
  dao_whole_desc d = wb_desc(DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE, 100, 16);
  dao_whole *w = (dao_whole *)1;
  dao_place mine;
  void *filler = NULL;
  int t;
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &mine));
  WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_CONTINUOUS) == 1,
            "continuous over file descriptors of the driver's virtual memory");
  WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_CHUNKED) == 1, "chunked over CUDA IPC");
  WB_CHECKF(c, wc_all_shapes(c, DAO_WHOLE_DISTRIBUTED) == 1, "distributed over CUDA IPC");
  wc_files(c, (const char *)arg);
  /* The last rank's device is nearly full: every rank fails alike, nothing
     stays allocated or mapped. */
  if (c->rank == c->size - 1) WB_OK(c, dao_alloc(mine, (size_t)48 << 20, &filler));
  for (t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    char needle[64];
    size_t used0 = 0, used1 = 0;
    d = wb_desc((dao_whole_type)t, DAO_WHOLE_DEVICE, (size_t)c->size * 24, (size_t)1 << 20);
    snprintf(needle, sizeof needle, "on rank %d of %d", c->size - 1, c->size);
    WB_OK(c, dao_used_internal(mine, &used0));
    WB_FAILS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_OUT_OF_MEMORY, needle);
    WB_CHECK(c, strstr(dao_last_error(), "cuda:") != NULL);
    WB_CHECK(c, w == NULL);
    WB_OK(c, dao_used_internal(mine, &used1));
    WB_CHECK(c, used1 == used0);
  }
  if (filler != NULL) WB_OK(c, dao_free(mine, filler));
  /* The ranks still work together, and host memory works as ever. */
  WB_CHECK(c, wc_roundtrip(c, DAO_WHOLE_CHUNKED, 1000, 8, 6) == 1);
  WB_CHECK(c, wb_roundtrip(c, DAO_WHOLE_CONTINUOUS, DAO_WHOLE_HOST, 500, 12, 4) == 1);
}

static dao_place cuda_place(void) {
  int n = 0;
  assert_int_equal(dao_place_device_count(DAO_PLACE_CUDA, &n), DAO_OK);
  assert_true(n > 0);
  return dao_place_cuda(world_rank % n);
}

static void test_cuda(void **state) {
  (void)state;
  run_mpi(MPI_COMM_WORLD, cuda_place(), body_cuda, (void *)"world");
}

static void test_cuda_split(void **state) {
  MPI_Comm half;
  (void)state;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  run_mpi(half, cuda_place(), body_cuda, (void *)(world_rank % 2 == 0 ? "even" : "odd"));
  MPI_Comm_free(&half);
}

/* Another process's memory is mapped only while an object lives. */
static void test_cuda_nothing_left(void **state) {
  const char *path = getenv("DAO_CUDA_LIBRARY");
  void *handle = path != NULL ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  long (*imports)(void) = NULL;
  (void)state;
  assert_non_null(handle);
  *(void **)&imports = dlsym(handle, "fake_cuda_live_imports");
  assert_non_null(imports);
  assert_int_equal(imports(), 0);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_create), cmocka_unit_test(test_host),
      cmocka_unit_test(test_sim_places), cmocka_unit_test(test_disagreement),
      cmocka_unit_test(test_files),      cmocka_unit_test(test_split),
  };
  const struct CMUnitTest cuda_tests[] = {
      cmocka_unit_test(test_cuda),
      cmocka_unit_test(test_cuda_split),
      cmocka_unit_test(test_cuda_nothing_left),
  };
  int cuda = 0;
  int provided = 0, result;
  long pid;
  const char *tmp = getenv("TMPDIR");
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  pid = (long)getpid();
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  snprintf(file_prefix, sizeof file_prefix, "%s/dao-test-whole-mpi-%ld",
           tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", pid);
  if (world_rank != 0 && freopen("/dev/null", "w", stdout) == NULL) return 1;
  result = cuda ? cmocka_run_group_tests(cuda_tests, NULL, NULL)
                : cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return result;
}
