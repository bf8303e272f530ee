/*
 * places_demo: a tour of libdao's places and allocators.
 *
 *  1. Every place kind: its devices and backend. On each device it allocates
 *     a few blocks with dao_alloc(), writes and reads them back where the host
 *     may touch the memory (CPU, SIM, CUDA pinned and managed), and shows
 *     dao_used() before, during and after. For a kind without devices it
 *     shows the reason the library gives.
 *  2. An allocator object: a buddy allocator with a config string, its
 *     effective config, a full pool, its statistics and a trim.
 *  3. Bad input on purpose: every call answers with a status and a message,
 *     and nothing breaks.
 *
 * Run it with simulated devices, for example:
 *     DAO_SIM_DEVICES=2x64MiB ./places_demo
 * It exits with status 1 if anything behaves other than expected.
 */
#include <dao.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unexpected = 0;

static void fail(const char *what, dao_status s) {
  ++unexpected;
  printf("  UNEXPECTED: %s: %s: %s\n", what, dao_status_string(s), dao_last_error());
}

/* Checks that a call gave `expected` and prints its status and message. */
static void expect(const char *what, dao_status s, dao_status expected) {
  printf("  %s -> %s\n", what, dao_status_string(s));
  if (s != DAO_OK) printf("      \"%s\"\n", dao_last_error());
  if (s != expected) {
    ++unexpected;
    printf("  UNEXPECTED: wanted \"%s\"\n", dao_status_string(expected));
  }
}

/* "512 B", "1.5 MiB", "23.5 GiB". */
static const char *human(size_t bytes, char *buf, size_t buf_size) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = (double)bytes / 1024.0;
  int unit = 0;
  if (bytes < 1024) {
    snprintf(buf, buf_size, "%zu B", bytes);
    return buf;
  }
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(buf, buf_size, "%.1f %s", value, units[unit]);
  return buf;
}

static int host_accessible(dao_place_kind kind) {
  return kind == DAO_PLACE_CPU || kind == DAO_PLACE_SIM || kind == DAO_PLACE_CUDA_PINNED ||
         kind == DAO_PLACE_CUDA_MANAGED;
}

static void fill(unsigned char *p, size_t size, unsigned seed) {
  size_t i;
  for (i = 0; i < size; ++i) p[i] = (unsigned char)((i * 31u + seed) & 0xffu);
}

static int check(const unsigned char *p, size_t size, unsigned seed) {
  size_t i;
  for (i = 0; i < size; ++i)
    if (p[i] != (unsigned char)((i * 31u + seed) & 0xffu)) return 0;
  return 1;
}

static size_t used_on(dao_place place) {
  size_t used = 0;
  dao_status s = dao_used(place, &used);
  if (s != DAO_OK) fail("dao_used", s);
  return used;
}

/* dao_alloc / write / read / dao_free on one device, showing dao_used. */
static void tour_device(dao_place place) {
  static const size_t sizes[] = {4096, 1u << 20, (3u << 20) + 1};
  enum { NBLOCKS = sizeof sizes / sizeof sizes[0] };
  void *blocks[NBLOCKS] = {NULL, NULL, NULL};
  const char *kind = dao_place_kind_name(place.kind);
  size_t free_bytes = 0, total_bytes = 0, before, during, after;
  char b1[32], b2[32], b3[32];
  int i;
  dao_status s;

  s = dao_place_memory_info(place, &free_bytes, &total_bytes);
  if (s != DAO_OK) fail("dao_place_memory_info", s);
  printf("  %s:%d: %s total, %s free\n", kind, place.device, human(total_bytes, b1, sizeof b1),
         human(free_bytes, b2, sizeof b2));

  before = used_on(place);
  for (i = 0; i < NBLOCKS; ++i) {
    s = dao_alloc(place, sizes[i], &blocks[i]);
    if (s != DAO_OK) {
      fail("dao_alloc", s);
      continue;
    }
    if ((uintptr_t)blocks[i] % 256 != 0) {
      ++unexpected;
      printf("  UNEXPECTED: %p is not 256-byte aligned\n", blocks[i]);
    }
    if (host_accessible(place.kind)) fill((unsigned char *)blocks[i], sizes[i], (unsigned)i);
  }
  during = used_on(place);

  for (i = 0; i < NBLOCKS; ++i) {
    if (blocks[i] == NULL) continue;
    if (host_accessible(place.kind) && !check((unsigned char *)blocks[i], sizes[i], (unsigned)i)) {
      ++unexpected;
      printf("  UNEXPECTED: the data of block %d changed\n", i);
    }
  }
  if (host_accessible(place.kind)) {
    printf("    wrote and read back 3 blocks (4 KiB, 1 MiB, 3 MiB + 1 B): data intact\n");
  } else {
    printf("    allocated 3 blocks of device memory (not touched from the host)\n");
  }

  for (i = 0; i < NBLOCKS; ++i) {
    s = dao_free(place, blocks[i]);
    if (s != DAO_OK) fail("dao_free", s);
  }
  after = used_on(place);
  printf("    dao_used: %s before, %s with the blocks, %s after freeing\n",
         human(before, b1, sizeof b1), human(during, b2, sizeof b2), human(after, b3, sizeof b3));
  if (during < before + sizes[0] + sizes[1] + sizes[2] || after != before) {
    ++unexpected;
    printf("  UNEXPECTED: dao_used does not add up\n");
  }
}

static void tour_places(void) {
  int k, d;
  printf("== Places ==\n");
  for (k = 0; k < DAO_PLACE_KIND_COUNT; ++k) {
    dao_place_kind kind = (dao_place_kind)k;
    int count = 0;
    dao_status s = dao_place_device_count(kind, &count);
    printf("%s: ", dao_place_kind_name(kind));
    if (s != DAO_OK) {
      printf("cannot count devices\n");
      fail("dao_place_device_count", s);
      continue;
    }
    printf("%d device%s (%s)\n", count, count == 1 ? "" : "s", dao_place_backend_description(kind));
    if (count == 0) {
      /* Ask anyway: the answer says why there is nothing here. */
      dao_place place;
      void *p = NULL;
      place.kind = kind;
      place.device = 0;
      s = dao_alloc(place, 4096, &p);
      printf("  dao_alloc -> %s: %s\n", dao_status_string(s), dao_last_error());
      if (s != DAO_ERR_NO_DEVICE) fail("dao_alloc on a kind without devices", s);
      continue;
    }
    for (d = 0; d < count; ++d) {
      dao_place place;
      place.kind = kind;
      place.device = d;
      tour_device(place);
    }
  }
}

static void print_stats(dao_allocator *a) {
  dao_allocator_stats st;
  dao_status s;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  s = dao_allocator_get_stats(a, &st);
  if (s != DAO_OK) {
    fail("dao_allocator_get_stats", s);
    return;
  }
  printf("    allocated %llu B (peak %llu B) in %llu live blocks, requested %llu B\n",
         (unsigned long long)st.allocated_bytes, (unsigned long long)st.peak_allocated_bytes,
         (unsigned long long)st.live_blocks, (unsigned long long)st.requested_bytes);
  printf("    reserved %llu B (peak %llu B); %llu allocs, %llu frees, %llu failed;\n",
         (unsigned long long)st.reserved_bytes, (unsigned long long)st.peak_reserved_bytes,
         (unsigned long long)st.alloc_count, (unsigned long long)st.free_count,
         (unsigned long long)st.failed_alloc_count);
  printf("    %llu system allocs, %llu system frees; largest free block %llu B\n",
         (unsigned long long)st.system_alloc_count, (unsigned long long)st.system_free_count,
         (unsigned long long)st.largest_free_block);
}

static void tour_allocator(void) {
  enum { NBLOCKS = 16 };
  const char *config = "chunk_size=1MiB,max_pool=4MiB";
  dao_place place = dao_place_sim(0);
  dao_allocator *a = NULL;
  const char *strategy = NULL, *effective = NULL;
  void *blocks[NBLOCKS];
  void *extra = NULL;
  size_t released = 0;
  int count = 0, i;
  dao_status s;

  printf("\n== An allocator object ==\n");
  if (dao_place_device_count(DAO_PLACE_SIM, &count) != DAO_OK || count == 0) {
    place = dao_place_cpu();
  }
  s = dao_allocator_create(place, "buddy", config, &a);
  if (s != DAO_OK) {
    fail("dao_allocator_create", s);
    return;
  }
  s = dao_allocator_info(a, NULL, &strategy, &effective);
  if (s != DAO_OK) fail("dao_allocator_info", s);
  printf("  %s on %s:%d, config \"%s\"\n", strategy, dao_place_kind_name(place.kind), place.device,
         config);
  printf("  effective config: %s\n", effective);

  /* Sixteen blocks of 256 KiB fill the 4 MiB pool exactly. */
  for (i = 0; i < NBLOCKS; ++i) {
    s = dao_allocator_alloc(a, 256u << 10, DAO_STREAM_DEFAULT, &blocks[i]);
    if (s != DAO_OK) {
      fail("dao_allocator_alloc", s);
      blocks[i] = NULL;
    }
  }
  printf("  after 16 allocations of 256 KiB:\n");
  print_stats(a);
  s = dao_allocator_alloc(a, 256u << 10, DAO_STREAM_DEFAULT, &extra);
  printf("  one more (the pool is capped at 4 MiB):\n");
  expect("dao_allocator_alloc(256 KiB)", s, DAO_ERR_OUT_OF_MEMORY);
  if (extra != NULL) dao_allocator_free(a, extra);

  for (i = 0; i < NBLOCKS; ++i) {
    s = dao_allocator_free(a, blocks[i]);
    if (s != DAO_OK) fail("dao_allocator_free", s);
  }
  s = dao_allocator_trim(a, &released);
  if (s != DAO_OK) fail("dao_allocator_trim", s);
  printf("  after freeing everything and a trim that gave back %zu B:\n", released);
  print_stats(a);
  s = dao_allocator_destroy(a);
  if (s != DAO_OK) fail("dao_allocator_destroy", s);
}

static void tour_bad_input(void) {
  dao_allocator *a = NULL;
  dao_place nowhere;
  void *p = NULL;
  int on_stack = 0;
  size_t used = 0;
  dao_status s;

  printf("\n== Bad input, on purpose ==\n");
  nowhere.kind = (dao_place_kind)42;
  nowhere.device = 0;

  expect("dao_alloc(cpu, 64, NULL)", dao_alloc(dao_place_cpu(), 64, NULL),
         DAO_ERR_INVALID_ARGUMENT);
  expect("dao_alloc(kind 42, 64)", dao_alloc(nowhere, 64, &p), DAO_ERR_INVALID_ARGUMENT);
  expect("dao_alloc(sim:7, 64)", dao_alloc(dao_place_sim(7), 64, &p), DAO_ERR_NO_DEVICE);
  expect("dao_alloc(cpu, SIZE_MAX)", dao_alloc(dao_place_cpu(), SIZE_MAX, &p),
         DAO_ERR_OUT_OF_MEMORY);
  expect("dao_free(cpu, pointer to a stack variable)", dao_free(dao_place_cpu(), &on_stack),
         DAO_ERR_INVALID_POINTER);

  s = dao_alloc(dao_place_cpu(), 64, &p);
  if (s != DAO_OK) fail("dao_alloc", s);
  expect("dao_free(cpu, p)", dao_free(dao_place_cpu(), p), DAO_OK);
  expect("dao_free(cpu, p) again", dao_free(dao_place_cpu(), p), DAO_ERR_INVALID_POINTER);

  expect("dao_allocator_create(\"chunk_size=abc\")",
         dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=abc", &a),
         DAO_ERR_INVALID_ARGUMENT);
  expect("dao_allocator_create(\"nope=1\")",
         dao_allocator_create(dao_place_cpu(), "buddy", "nope=1", &a), DAO_ERR_INVALID_ARGUMENT);
  expect("dao_allocator_create(strategy \"magic\")",
         dao_allocator_create(dao_place_cpu(), "magic", NULL, &a), DAO_ERR_INVALID_ARGUMENT);
  expect("dao_allocator_alloc(NULL allocator)",
         dao_allocator_alloc(NULL, 64, DAO_STREAM_DEFAULT, &p), DAO_ERR_INVALID_ARGUMENT);

  /* None of that changed anything. */
  s = dao_used(dao_place_cpu(), &used);
  if (s != DAO_OK) fail("dao_used", s);
  printf("  dao_used(cpu) is still %zu B\n", used);
  if (used != 0) {
    ++unexpected;
    printf("  UNEXPECTED: memory is still in use on the cpu place\n");
  }
}

int main(void) {
  printf("libdao %s (built with headers %s)\n\n", dao_version_string(), DAO_VERSION_STRING);
  tour_places();
  tour_allocator();
  tour_bad_input();
  if (unexpected != 0) {
    printf("\n%d unexpected result%s\n", unexpected, unexpected == 1 ? "" : "s");
    return EXIT_FAILURE;
  }
  printf("\nAll as expected.\n");
  return EXIT_SUCCESS;
}
