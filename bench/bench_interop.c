/* Nanoseconds per dao_pluggable_malloc + dao_pluggable_free pair, against
 * dao_allocator_alloc + dao_allocator_free on the same place default, on a
 * SIM device (DAO_INTEROP_PLACE=sim is set here before the first call).
 * Timings are printed, never checked.
 *
 *   bench_interop [--pairs N]      (default 2000000 per row)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dao.h>

#include "bench_common.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

typedef enum { INTEROP, INTEROP_STREAM, CUPY_STREAM, ALLOCATOR, ALLOCATOR_STREAM } row_kind;

static double run(row_kind kind, dao_allocator *a, dao_stream s, uint64_t pairs) {
  static const size_t sizes[4] = {512, 4096, 65536, 1 << 20};
  void *slot = s;
  double t0, t1;
  uint64_t i;
  for (int warm = 0; warm < 2; ++warm) {
    t0 = now_ns();
    for (i = 0; i < pairs; ++i) {
      const size_t size = sizes[i & 3];
      void *p = NULL;
      switch (kind) {
        case INTEROP:
          p = dao_pluggable_malloc((ptrdiff_t)size, 0, NULL);
          dao_pluggable_free(p, (ptrdiff_t)size, 0, NULL);
          break;
        case INTEROP_STREAM:
          p = dao_pluggable_malloc((ptrdiff_t)size, 0, s);
          dao_pluggable_free(p, (ptrdiff_t)size, 0, s);
          break;
        case CUPY_STREAM:
          p = dao_cupy_malloc(&slot, size, 0);
          dao_cupy_free(&slot, p, 0);
          break;
        case ALLOCATOR:
          dao_allocator_alloc(a, size, NULL, &p);
          dao_allocator_free(a, p);
          break;
        case ALLOCATOR_STREAM:
          dao_allocator_alloc(a, size, s, &p);
          dao_allocator_free(a, p);
          break;
      }
      if (p == NULL) {
        fprintf(stderr, "bench_interop: allocation failed: %s\n", dao_last_error());
        exit(1);
      }
    }
    t1 = now_ns();
  }
  return (t1 - t0) / (double)pairs;
}

int main(int argc, char **argv) {
  uint64_t pairs = 2000000;
  dao_allocator *a = NULL;
  dao_stream s = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
      pairs = parse_count(argv[0], "--pairs", argv[++i], 1, UINT64_MAX / 2);
    } else {
      bad_flag(argv[0], "unknown argument '%s'", argv[i]);
    }
  }
  setenv("DAO_INTEROP_PLACE", "sim", 1);
  if (getenv("DAO_SIM_DEVICES") == NULL) setenv("DAO_SIM_DEVICES", "1GiB", 1);
  if (dao_place_allocator(dao_place_sim(0), &a) != DAO_OK ||
      dao_stream_create(dao_place_sim(0), &s) != DAO_OK) {
    fprintf(stderr, "bench_interop: %s\n", dao_last_error());
    return 1;
  }
  printf(
      "build type %s%s; %llu pairs per row, sizes 512 B .. 1 MiB, sim:0 default (%s)\n",
      DAO_BENCH_BUILD_TYPE,
      is_optimised_build_type(DAO_BENCH_BUILD_TYPE) ? "" : " (NOT optimised: timings mean little)",
      (unsigned long long)pairs, "caching");
  printf("%-44s %8.1f ns/pair\n", "dao_pluggable_malloc+free, NULL stream",
         run(INTEROP, a, s, pairs));
  printf("%-44s %8.1f ns/pair\n", "dao_pluggable_malloc+free, a stream",
         run(INTEROP_STREAM, a, s, pairs));
  printf("%-44s %8.1f ns/pair\n", "dao_cupy_malloc+free, stream in param",
         run(CUPY_STREAM, a, s, pairs));
  printf("%-44s %8.1f ns/pair\n", "dao_allocator_alloc+free, NULL stream",
         run(ALLOCATOR, a, s, pairs));
  printf("%-44s %8.1f ns/pair\n", "dao_allocator_alloc+free, a stream",
         run(ALLOCATOR_STREAM, a, s, pairs));
  dao_stream_destroy(s);
  return 0;
}
