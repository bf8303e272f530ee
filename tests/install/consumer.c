/*
 * An outside program, written only from the core API of DESIGN.md, built
 * against the *installed* libdao (through pkg-config or find_package) by
 * run_install_test.sh. Run it with DAO_SIM_DEVICES=2x64MiB.
 *
 * It prints what it does and exits with status 1 on any unexpected result.
 */
#include <dao.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      ++failures;                                                                \
      printf("FAIL %s:%d: %s (last error: \"%s\")\n", __FILE__, __LINE__, #cond, \
             dao_last_error());                                                  \
    }                                                                            \
  } while (0)

/* A call that must fail with `expected` and a message. */
static void expect_status(const char *what, dao_status got, dao_status expected) {
  const char *message = dao_last_error();
  printf("  %-46s -> %s: %s\n", what, dao_status_string(got), message);
  if (got != expected) {
    ++failures;
    printf("FAIL: %s gave \"%s\", expected \"%s\"\n", what, dao_status_string(got),
           dao_status_string(expected));
  } else if (message == NULL || message[0] == '\0') {
    ++failures;
    printf("FAIL: %s gave no message\n", what);
  }
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; ++i) p[i] = (unsigned char)(seed + i * 7u);
}

static int intact(const unsigned char *p, size_t n, unsigned seed) {
  size_t i;
  for (i = 0; i < n; ++i)
    if (p[i] != (unsigned char)(seed + i * 7u)) return 0;
  return 1;
}

static size_t used(dao_place place) {
  size_t bytes = (size_t)-1;
  CHECK(dao_used(place, &bytes) == DAO_OK);
  return bytes;
}

/* dao_alloc / dao_free / dao_used on one place, with data checks. */
static void alloc_free_on(const char *name, dao_place place) {
  enum { N = 4 };
  static const size_t sizes[N] = {1, 1000, 256u << 10, (5u << 20) + 3};
  void *p[N];
  size_t before = used(place), total = 0;
  int i;

  for (i = 0; i < N; ++i) {
    p[i] = NULL;
    CHECK(dao_alloc(place, sizes[i], &p[i]) == DAO_OK);
    CHECK(p[i] != NULL);
    CHECK((uintptr_t)p[i] % 256 == 0);
    if (p[i] != NULL) fill((unsigned char *)p[i], sizes[i], (unsigned)i + 1);
    total += sizes[i];
  }
  CHECK(used(place) >= before + total);
  for (i = 0; i < N; ++i)
    if (p[i] != NULL) CHECK(intact((const unsigned char *)p[i], sizes[i], (unsigned)i + 1));
  for (i = 0; i < N; ++i) CHECK(dao_free(place, p[i]) == DAO_OK);
  CHECK(used(place) == before);
  printf("  %-8s 4 blocks (1 B .. 5 MiB) allocated, data intact, freed; dao_used back to %lu\n",
         name, (unsigned long)before);
}

int main(void) {
  const dao_place cpu = dao_place_cpu();
  const dao_place sim0 = dao_place_sim(0), sim1 = dao_place_sim(1);
  const struct {
    const char *name;
    dao_place_kind kind;
  } kinds[] = {
      {"cpu", dao_place_cpu().kind},
      {"cuda", dao_place_cuda(0).kind},
      {"cuda_pinned", dao_place_cuda_pinned().kind},
      {"cuda_managed", dao_place_cuda_managed(0).kind},
      {"sim", dao_place_sim(0).kind},
  };
  int counts[5];
  int cuda_count = -1;
  size_t i;
  void *p = NULL;
  void *foreign;
  dao_allocator *a = NULL;
  size_t cpu_used;

  /* Version: the run-time library and the headers we were built with. */
  printf("libdao %s (%u), headers %s\n", dao_version_string(), dao_version_number(),
         DAO_VERSION_STRING);
  CHECK(dao_version_number() == DAO_VERSION_NUMBER);
  CHECK(strcmp(dao_version_string(), DAO_VERSION_STRING) == 0);
  CHECK(strcmp(dao_status_string(DAO_OK), dao_status_string(DAO_ERR_OUT_OF_MEMORY)) != 0);

  /* Device counts of every kind. */
  printf("devices:\n");
  for (i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    counts[i] = -1;
    CHECK(dao_place_device_count(kinds[i].kind, &counts[i]) == DAO_OK);
    printf("  %-12s %d\n", kinds[i].name, counts[i]);
  }
  CHECK(counts[0] == 1);
  CHECK(counts[4] == 2); /* DAO_SIM_DEVICES=2x64MiB */
  cuda_count = counts[1];

  /* Allocation with data checks on the CPU and both SIM devices. */
  printf("allocations:\n");
  alloc_free_on("cpu", cpu);
  alloc_free_on("sim:0", sim0);
  alloc_free_on("sim:1", sim1);
  CHECK(dao_alloc(cpu, 0, &p) == DAO_OK && p == NULL);
  CHECK(dao_free(cpu, NULL) == DAO_OK);

  /* An allocator object with a config string. */
  CHECK(dao_allocator_create(sim1, "buddy", "chunk_size=1MiB,max_pool=8MiB", &a) == DAO_OK);
  if (a != NULL) {
    void *q = NULL;
    CHECK(dao_allocator_alloc(a, 3000, DAO_STREAM_DEFAULT, &q) == DAO_OK);
    if (q != NULL) {
      fill((unsigned char *)q, 3000, 99);
      CHECK(intact((const unsigned char *)q, 3000, 99));
    }
    expect_status("dao_allocator_alloc(16 MiB past max_pool)",
                  dao_allocator_alloc(a, 16u << 20, DAO_STREAM_DEFAULT, &p), DAO_ERR_OUT_OF_MEMORY);
    CHECK(dao_allocator_free(a, q) == DAO_OK);
    CHECK(dao_allocator_destroy(a) == DAO_OK);
    printf("  buddy allocator on sim:1 with \"chunk_size=1MiB,max_pool=8MiB\": ok\n");
  }

  /* Bad input: a status and a message each, and nothing changes. */
  printf("bad input:\n");
  cpu_used = used(cpu);
  expect_status("dao_alloc(cpu, 64, NULL)", dao_alloc(cpu, 64, NULL), DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_used(cpu, NULL)", dao_used(cpu, NULL), DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_place_device_count(cpu, NULL)", dao_place_device_count(cpu.kind, NULL),
                DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_allocator_create(cpu, ..., NULL)",
                dao_allocator_create(cpu, "buddy", NULL, NULL), DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_alloc(kind 42)", dao_alloc((dao_place){(dao_place_kind)42, 0}, 64, &p),
                DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_place_device_count(kind 42)",
                dao_place_device_count((dao_place_kind)42, &counts[0]), DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_alloc(sim:7)", dao_alloc(dao_place_sim(7), 64, &p), DAO_ERR_NO_DEVICE);
  if (cuda_count == 0) {
    expect_status("dao_alloc(cuda:0) without a GPU", dao_alloc(dao_place_cuda(0), 64, &p),
                  DAO_ERR_NO_DEVICE);
  } else {
    printf("  (this machine has %d CUDA device(s): cuda:0 is not a bad place here)\n", cuda_count);
  }
  expect_status("dao_alloc(cpu, SIZE_MAX)", dao_alloc(cpu, SIZE_MAX, &p), DAO_ERR_OUT_OF_MEMORY);
  expect_status("dao_alloc(sim:0, 100 MiB) past its 64 MiB", dao_alloc(sim0, (size_t)100 << 20, &p),
                DAO_ERR_OUT_OF_MEMORY);

  p = NULL;
  CHECK(dao_alloc(cpu, 4096, &p) == DAO_OK);
  CHECK(dao_free(cpu, p) == DAO_OK);
  expect_status("dao_free(cpu, p) twice", dao_free(cpu, p), DAO_ERR_INVALID_POINTER);
  foreign = malloc(4096);
  CHECK(foreign != NULL);
  expect_status("dao_free(cpu, malloc'd pointer)", dao_free(cpu, foreign), DAO_ERR_INVALID_POINTER);
  expect_status("dao_free(sim:0, malloc'd pointer)", dao_free(sim0, foreign),
                DAO_ERR_INVALID_POINTER);
  free(foreign);

  a = NULL;
  expect_status("dao_allocator_create(\"chunk_size=abc\")",
                dao_allocator_create(cpu, "buddy", "chunk_size=abc", &a), DAO_ERR_INVALID_ARGUMENT);
  CHECK(a == NULL);
  expect_status("dao_allocator_create(\"nope=1\")",
                dao_allocator_create(cpu, "buddy", "nope=1", &a), DAO_ERR_INVALID_ARGUMENT);
  CHECK(a == NULL);
  expect_status("dao_allocator_free(NULL, p)", dao_allocator_free(NULL, p),
                DAO_ERR_INVALID_ARGUMENT);
  expect_status("dao_allocator_destroy(NULL)", dao_allocator_destroy(NULL),
                DAO_ERR_INVALID_ARGUMENT);
  CHECK(used(cpu) == cpu_used);
  CHECK(used(sim0) == 0);
  CHECK(used(sim1) == 0);

  if (failures != 0) {
    printf("consumer: %d unexpected result(s)\n", failures);
    return EXIT_FAILURE;
  }
  printf("consumer: all as expected\n");
  return EXIT_SUCCESS;
}
