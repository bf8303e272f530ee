/* Pooled memory is poisoned for AddressSanitizer (src/util/asan_poison.hpp):
 * a use after free inside a pool must be reported although the pool still
 * owns the memory. (Blocks are unpoisoned whole when handed out: usable_size
 * says the caller may use all of it.) Each mode does one
 * such access and must die with ASan's "use-after-poison" report (ctest
 * checks the output); mode "clean" does everything right and must pass.
 * Registered only in builds with DAO_SANITIZE=address. */
#include <stdio.h>
#include <string.h>

#include <dao.h>

static dao_allocator *make(dao_place place, const char *strategy) {
  dao_allocator *a = NULL;
  if (dao_allocator_create(place, strategy, NULL, &a) != DAO_OK) {
    fprintf(stderr, "create %s: %s\n", strategy, dao_last_error());
    return NULL;
  }
  return a;
}

static char *alloc_or_die(dao_allocator *a, size_t bytes) {
  void *p = NULL;
  if (dao_allocator_alloc(a, bytes, NULL, &p) != DAO_OK) {
    fprintf(stderr, "alloc: %s\n", dao_last_error());
    return NULL;
  }
  return p;
}

/* The compiler must not see that the access is dead. */
static void touch(volatile char *p) { p[0] = 1; }

static int use_after_free(dao_place place, const char *strategy) {
  dao_allocator *a = make(place, strategy);
  char *p, *keep;
  if (a == NULL) return 2;
  keep = alloc_or_die(a, 4096); /* a neighbour, so the block is not merged away */
  p = alloc_or_die(a, 1000);
  if (p == NULL || keep == NULL) return 2;
  memset(p, 7, 1000);
  dao_allocator_free(a, p);
  touch(p + 10); /* ASan reports here */
  fprintf(stderr, "use after free of %s on %s was not caught\n", strategy,
          place.kind == DAO_PLACE_CPU ? "cpu" : "sim");
  return 1;
}

/* A recycle-pool buffer used after its last release. */
static int recycle_after_release(dao_place place) {
  const size_t shape[1] = {1024};
  dao_recycle_pool *pool = NULL;
  dao_buffer *b = NULL;
  void *data = NULL;
  if (dao_recycle_create(place, 4, 1, shape, 2, 0, NULL, &pool) != DAO_OK ||
      dao_recycle_acquire(pool, 0, &b) != DAO_OK || dao_buffer_data(b, &data) != DAO_OK) {
    fprintf(stderr, "recycle: %s\n", dao_last_error());
    return 2;
  }
  memset(data, 3, 4096);
  dao_buffer_release(b);
  touch((char *)data + 100);
  fprintf(stderr, "use of a released recycle buffer was not caught\n");
  return 1;
}

/* Everything right: reused blocks, whole requested ranges written. */
static int clean(void) {
  static const char *const strategies[] = {"buddy", "caching"};
  size_t s, i;
  for (s = 0; s < 2; ++s) {
    dao_place places[2];
    size_t k;
    places[0] = dao_place_cpu();
    places[1] = dao_place_sim(0);
    for (k = 0; k < 2; ++k) {
      dao_allocator *a = make(places[k], strategies[s]);
      if (a == NULL) return 2;
      for (i = 0; i < 200; ++i) {
        size_t bytes = 100 + (i * 7919) % (3u << 20);
        char *p = alloc_or_die(a, bytes);
        if (p == NULL) return 2;
        memset(p, (int)i, bytes);
        dao_allocator_free(a, p);
      }
      dao_allocator_trim(a, NULL);
      if (dao_allocator_destroy(a) != DAO_OK) return 2;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "buddy_cpu") == 0) return use_after_free(dao_place_cpu(), "buddy");
  if (strcmp(mode, "buddy_sim") == 0) return use_after_free(dao_place_sim(0), "buddy");
  if (strcmp(mode, "caching_cpu") == 0) return use_after_free(dao_place_cpu(), "caching");
  if (strcmp(mode, "caching_sim") == 0) return use_after_free(dao_place_sim(0), "caching");
  if (strcmp(mode, "caching_classic") == 0) {
    dao_allocator *a = NULL;
    char *p, *keep;
    if (dao_allocator_create(dao_place_sim(0), "caching", "expandable_segments=false", &a) !=
        DAO_OK)
      return 2;
    keep = alloc_or_die(a, 4096);
    p = alloc_or_die(a, 1000);
    if (p == NULL || keep == NULL) return 2;
    dao_allocator_free(a, p);
    touch(p);
    return 1;
  }
  if (strcmp(mode, "recycle_cpu") == 0) return recycle_after_release(dao_place_cpu());
  if (strcmp(mode, "recycle_sim") == 0) return recycle_after_release(dao_place_sim(0));
  if (strcmp(mode, "clean") == 0) return clean();
  fprintf(stderr, "unknown mode '%s'\n", mode);
  return 2;
}
