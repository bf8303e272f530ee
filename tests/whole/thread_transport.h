/* A transport over threads, handed in through the experimental C hook
 * (dao_comm_create_transport), shared by the tests that need one: test_whole
 * (every check over it, C) and test_whole_oom (out of host memory in one
 * rank, C++).
 *
 * It says, as MPI between processes does, that the ranks do not share an
 * address space: libdao then uses shared segments for mapped memory and
 * windows for distributed memory, exactly as over MPI. Its own memory comes
 * from malloc, never from operator new, so a test-only operator new fails
 * only libdao's allocations.
 *
 * Header-only (static inline); the includer defines DAO_EXPERIMENTAL before
 * including dao.h, and _GNU_SOURCE or _POSIX_C_SOURCE for pthread barriers. */
#ifndef DAO_TEST_THREAD_TRANSPORT_H
#define DAO_TEST_THREAD_TRANSPORT_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dao.h"

#define TT_MAX_RANKS 8

typedef struct tt_group {
  int size;
  pthread_barrier_t barrier;
  const void *slot[TT_MAX_RANKS];
  pthread_mutex_t mutex;
  int destroyed;
  int batched; /* offer window_get_many and window_put_many */
} tt_group;

typedef struct tt_rank {
  tt_group *g;
  int rank;
} tt_rank;

typedef struct tt_window {
  char *base[TT_MAX_RANKS];
  size_t bytes[TT_MAX_RANKS];
  void *owned;
} tt_window;

static __thread char tt_error[256];

static inline const char *tt_last_error(void *self) {
  (void)self;
  return tt_error;
}

static inline dao_status tt_barrier(void *self) {
  tt_rank *t = (tt_rank *)self;
  pthread_barrier_wait(&t->g->barrier);
  return DAO_OK;
}

static inline dao_status tt_allgather(void *self, const void *send, size_t bytes, void *recv) {
  tt_rank *t = (tt_rank *)self;
  int r;
  t->g->slot[t->rank] = send;
  pthread_barrier_wait(&t->g->barrier);
  for (r = 0; r < t->g->size; ++r) memcpy((char *)recv + (size_t)r * bytes, t->g->slot[r], bytes);
  pthread_barrier_wait(&t->g->barrier);
  return DAO_OK;
}

static inline dao_status tt_window_create(void *self, void *local, size_t bytes, void **window) {
  tt_rank *t = (tt_rank *)self;
  struct {
    char *base;
    size_t bytes;
  } mine, all[TT_MAX_RANKS];
  tt_window *w = (tt_window *)calloc(1, sizeof *w);
  int r;
  mine.base = (char *)local;
  mine.bytes = bytes;
  tt_allgather(self, &mine, sizeof mine, all);
  if (w == NULL) {
    snprintf(tt_error, sizeof tt_error, "no memory for a window");
    return DAO_ERR_OUT_OF_MEMORY;
  }
  for (r = 0; r < t->g->size; ++r) {
    w->base[r] = all[r].base;
    w->bytes[r] = all[r].bytes;
  }
  *window = w;
  return DAO_OK;
}

static inline dao_status tt_window_allocate(void *self, size_t bytes, void **local, void **window) {
  void *mem = NULL;
  dao_status s;
  if (bytes != 0 && posix_memalign(&mem, 256, bytes) != 0) mem = NULL;
  s = tt_window_create(self, mem, bytes, window);
  if (s != DAO_OK) {
    free(mem);
    return s;
  }
  ((tt_window *)*window)->owned = mem;
  *local = mem;
  return DAO_OK;
}

static inline char *tt_at(tt_window *w, int target, size_t offset, size_t bytes) {
  if (target < 0 || target >= TT_MAX_RANKS || offset > w->bytes[target] ||
      bytes > w->bytes[target] - offset) {
    snprintf(tt_error, sizeof tt_error, "%zu bytes at %zu of rank %d are outside the window", bytes,
             offset, target);
    return NULL;
  }
  return w->base[target] + offset;
}

static inline dao_status tt_get(void *self, void *window, int target, size_t offset, void *dst,
                                size_t bytes) {
  char *p = tt_at((tt_window *)window, target, offset, bytes);
  (void)self;
  if (p == NULL) return DAO_ERR_INTERNAL;
  memcpy(dst, p, bytes);
  return DAO_OK;
}

static inline dao_status tt_put(void *self, void *window, int target, size_t offset,
                                const void *src, size_t bytes) {
  char *p = tt_at((tt_window *)window, target, offset, bytes);
  (void)self;
  if (p == NULL) return DAO_ERR_INTERNAL;
  memcpy(p, src, bytes);
  return DAO_OK;
}

static inline dao_status tt_get_many(void *self, void *window, int target, size_t count,
                                     const size_t *target_offsets, const size_t *lengths, void *dst,
                                     const size_t *dst_offsets) {
  size_t i;
  for (i = 0; i < count; ++i) {
    dao_status s =
        tt_get(self, window, target, target_offsets[i], (char *)dst + dst_offsets[i], lengths[i]);
    if (s != DAO_OK) return s;
  }
  return DAO_OK;
}

static inline dao_status tt_put_many(void *self, void *window, int target, size_t count,
                                     const size_t *target_offsets, const size_t *lengths,
                                     const void *src, const size_t *src_offsets) {
  size_t i;
  for (i = 0; i < count; ++i) {
    dao_status s = tt_put(self, window, target, target_offsets[i],
                          (const char *)src + src_offsets[i], lengths[i]);
    if (s != DAO_OK) return s;
  }
  return DAO_OK;
}

static inline dao_status tt_complete(void *self, void *window) {
  (void)self;
  (void)window;
  return DAO_OK;
}

static inline dao_status tt_window_free(void *self, void *window) {
  tt_window *w = (tt_window *)window;
  tt_barrier(self);
  free(w->owned);
  free(w);
  return DAO_OK;
}

/* Contiguous segments: rank 0 allocates every part, adjacent in rank
 * order; otherwise each rank its own. Kept in a tt_window (bases only). */
static inline dao_status tt_shared_allocate(void *self, size_t bytes, int contiguous,
                                            void **segment, void **local) {
  tt_rank *t = (tt_rank *)self;
  size_t sizes[TT_MAX_RANKS], total = 0, offset = 0;
  char *bases[TT_MAX_RANKS];
  char *mine = NULL;
  tt_window *w = (tt_window *)calloc(1, sizeof *w);
  int r;
  tt_allgather(self, &bytes, sizeof bytes, sizes);
  for (r = 0; r < t->g->size; ++r) total += sizes[r];
  if (contiguous) {
    if (t->rank == 0 && posix_memalign((void **)&mine, 256, total + 1) != 0) mine = NULL;
  } else if (bytes != 0 && posix_memalign((void **)&mine, 256, bytes) != 0) {
    mine = NULL;
  }
  tt_allgather(self, &mine, sizeof mine, bases);
  if (w == NULL) return DAO_ERR_OUT_OF_MEMORY;
  for (r = 0; r < t->g->size; ++r) {
    w->base[r] = contiguous ? bases[0] + offset : bases[r];
    w->bytes[r] = sizes[r];
    offset += sizes[r];
  }
  w->owned = mine;
  *segment = w;
  *local = w->base[t->rank];
  return DAO_OK;
}

static inline dao_status tt_shared_query(void *self, void *segment, int rank, void **ptr) {
  (void)self;
  *ptr = ((tt_window *)segment)->base[rank];
  return DAO_OK;
}

static inline void tt_destroy(void *self) {
  tt_rank *t = (tt_rank *)self;
  pthread_mutex_lock(&t->g->mutex);
  ++t->g->destroyed;
  pthread_mutex_unlock(&t->g->mutex);
  free(t);
}

static inline dao_comm_transport tt_ops(tt_group *g, int rank) {
  dao_comm_transport o;
  tt_rank *t = (tt_rank *)calloc(1, sizeof *t);
  memset(&o, 0, sizeof o);
  if (t == NULL) abort(); /* a test without memory for its transport */
  t->g = g;
  t->rank = rank;
  o.struct_size = sizeof o;
  o.self = t;
  o.rank = rank;
  o.size = g->size;
  o.name = "test-threads";
  o.shares_host_memory = 1;
  o.last_error = tt_last_error;
  o.barrier = tt_barrier;
  o.allgather = tt_allgather;
  o.window_create = tt_window_create;
  o.window_allocate = tt_window_allocate;
  o.window_get = tt_get;
  o.window_put = tt_put;
  o.window_complete = tt_complete;
  o.window_free = tt_window_free;
  o.shared_allocate = tt_shared_allocate;
  o.shared_query = tt_shared_query;
  o.shared_free = tt_window_free;
  o.destroy = tt_destroy;
  if (g->batched) {
    o.window_get_many = tt_get_many;
    o.window_put_many = tt_put_many;
  }
  return o;
}

static inline void tt_group_init(tt_group *g, int size) {
  memset(g, 0, sizeof *g);
  g->size = size;
  pthread_barrier_init(&g->barrier, NULL, (unsigned)size);
  pthread_mutex_init(&g->mutex, NULL);
}

static inline void tt_group_done(tt_group *g) {
  pthread_barrier_destroy(&g->barrier);
  pthread_mutex_destroy(&g->mutex);
}

#endif /* DAO_TEST_THREAD_TRANSPORT_H */
