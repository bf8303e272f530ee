/* Checks of partitioned memory on CUDA devices that one rank runs, the same
 * in one process (test_whole_cuda.c, a thread per rank) and over MPI
 * (test_whole_mpi.c, a process per rank). Runs against the fake driver with
 * FAKE_CUDA_HIDDEN=1, where device memory faults when the host touches it,
 * as on a card: each rank reads and writes device memory only with driver
 * copies (dao_memcpy_async on a stream of its place), and libdao's gather,
 * scatter, store and load must do the same. Builds on whole_body.h. */
#ifndef DAO_WHOLE_CUDA_BODY_H
#define DAO_WHOLE_CUDA_BODY_H

#include "whole/whole_body.h"

/* Set by a test whose driver has no virtual memory management or no peer
 * access: continuous memory between processes may then fail at the create
 * (see wc_files). */
static int wc_continuous_may_fail;
/* 0 on a real card, whose driver takes and gives back device memory of its
 * own (streams, contexts), so that its free memory is not exact. */
static int wc_exact_free = 1;

/* Copies with the driver, on a stream of `place`, and waits. */
static int wc_copy(wb_ctx *c, dao_place place, void *dst, const void *src, size_t bytes) {
  dao_stream s = NULL;
  int ok = 1;
  if (bytes == 0) return 1;
  if (!WB_OK(c, dao_stream_create(place, &s))) return 0;
  ok &= WB_OK(c, dao_memcpy_async(dst, src, bytes, s));
  ok &= WB_OK(c, dao_stream_synchronize(s));
  WB_OK(c, dao_stream_destroy(s));
  return ok;
}

/* Checks `count` entries of `gen` at host memory `p`, from entry `first` on
 * (consecutive) or at `idx` (when not NULL). */
static void wc_expect(wb_ctx *c, const unsigned char *p, const int64_t *idx, size_t first,
                      size_t count, size_t entry_size, wb_generation_fn gen, uint64_t seed,
                      const char *what) {
  size_t i;
  for (i = 0; i < count; ++i) {
    uint64_t e = idx != NULL ? (uint64_t)idx[i] : first + i;
    if (!wb_entry_is(p + i * entry_size, e, entry_size, gen(e, seed, c->size))) {
      wb_fail(c, __FILE__, __LINE__, "%s: entry %llu (position %zu) is wrong", what,
              (unsigned long long)e, i);
      return;
    }
  }
}

/* One object on the ranks' CUDA devices, start to end: the part charged to
 * the device, filled by a driver copy; chunked parts read through their
 * pointers and continuous objects through their base (driver copies from
 * device addresses); gathers into host and
 * device buffers, one-sided and collective; a bad scatter that changes
 * nothing; scatters; every entry gathered again; the memory given back at
 * destroy. Returns 0 when the type is refused here (with the same status
 * from the create), 1 otherwise. */
static int wc_roundtrip(wb_ctx *c, dao_whole_type type, size_t entries, size_t entry_size,
                        uint64_t seed) {
  dao_whole_desc d = wb_desc(type, DAO_WHOLE_DEVICE, entries, entry_size);
  dao_whole *w = NULL;
  dao_whole_info info;
  dao_whole_range mine;
  dao_place place;
  void *local = NULL, *dev = NULL;
  size_t used0 = 0, used1 = 0, used2 = 0, free0 = 0, free1 = 0, free2 = 0, count, i, n = 0;
  uint64_t rng = seed * 7919u + (uint64_t)c->rank * 104729u + 1u;
  unsigned char *host, *buf;
  int64_t *idx;
  int r;

  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &place));
  if (dao_whole_supported(c->comm, type, DAO_WHOLE_DEVICE) == DAO_ERR_UNSUPPORTED) {
    WB_STATUS(c, dao_whole_create(c->comm, &d, &w), DAO_ERR_UNSUPPORTED);
    WB_CHECK(c, w == NULL);
    return 0;
  }
  /* A device buffer for gathers and scatters, allocated before the device's
   * free memory is read (the caching allocator may keep its segment). */
  count = 2 * entries + 5;
  WB_OK(c, dao_alloc(place, count * entry_size, &dev));
  WB_OK(c, dao_comm_barrier(c->comm)); /* ranks may share a device */
  WB_OK(c, dao_used_internal(place, &used0));
  WB_OK(c, dao_place_memory_info(place, &free0, NULL));
  WB_OK(c, dao_comm_barrier(c->comm));
  if (!WB_OK(c, dao_whole_create(c->comm, &d, &w))) {
    if (dev != NULL) WB_OK(c, dao_free(place, dev));
    return 1;
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  WB_OK(c, dao_whole_get_info(w, &info));
  WB_CHECK(c, info.place.kind == DAO_PLACE_CUDA && info.place.device == place.device);
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  WB_OK(c, dao_whole_get_local(w, &local, &mine));
  WB_CHECK(c, mine.entry_count == 0 || local != NULL);
  /* The part is on the device: from its allocator for libdao's own memory,
   * or (continuous) mapped from the device in whole granules, the first of
   * them by rank 0, which owns byte 0. */
  WB_OK(c, dao_used_internal(place, &used1));
  WB_OK(c, dao_place_memory_info(place, &free1, NULL));
  if (type != DAO_WHOLE_CONTINUOUS)
    WB_CHECKF(c, used1 - used0 >= mine.byte_size, "cuda:%d holds %zu more bytes, the part is %zu",
              place.device, used1 - used0, mine.byte_size);
  else if (c->rank == 0)
    WB_CHECKF(c, free0 - free1 >= mine.byte_size, "cuda:%d: %zu bytes mapped, the part is %zu",
              place.device, free0 - free1, mine.byte_size);
  if (type == DAO_WHOLE_CONTINUOUS) {
    void *base = NULL;
    WB_OK(c, dao_whole_get_base(w, &base));
    WB_CHECK(c, base != NULL && (char *)local == (char *)base + mine.byte_offset);
  } else {
    void *base = (void *)1;
    WB_FAILS(c, dao_whole_get_base(w, &base), DAO_ERR_UNSUPPORTED, "single range");
  }

  host = (unsigned char *)malloc(count * entry_size);
  buf = (unsigned char *)malloc(count * entry_size);
  idx = (int64_t *)malloc(count * sizeof *idx);
  if (host == NULL || buf == NULL || idx == NULL) {
    WB_CHECK(c, host != NULL && buf != NULL && idx != NULL);
    free(host);
    free(buf);
    free(idx);
    WB_OK(c, dao_whole_destroy(w));
    if (dev != NULL) WB_OK(c, dao_free(place, dev));
    return 1;
  }
  /* Fill this rank's part with a driver copy. */
  for (i = 0; i < mine.entry_count; ++i)
    wb_fill_entry(host + i * entry_size, mine.first_entry + i, entry_size, 0);
  wc_copy(c, place, local, host, mine.byte_size);
  WB_OK(c, dao_comm_barrier(c->comm));

  /* Every part through its pointer (chunked), or refused (distributed). */
  for (r = 0; r < c->size; ++r) {
    void *q = NULL;
    dao_whole_range pr = wb_partition(c, w, r);
    if (type == DAO_WHOLE_DISTRIBUTED && r != c->rank) {
      WB_FAILS(c, dao_whole_get_rank_pointer(w, r, &q), DAO_ERR_UNSUPPORTED, "not mapped");
      continue;
    }
    if (!WB_OK(c, dao_whole_get_rank_pointer(w, r, &q))) continue;
    if (r == c->rank) WB_CHECK(c, q == local);
    memset(buf, 0, pr.byte_size);
    if (wc_copy(c, place, buf, q, pr.byte_size))
      wc_expect(c, buf, NULL, pr.first_entry, pr.entry_count, entry_size, wb_gen_initial, seed,
                "read through a rank pointer");
  }

  /* Continuous: every entry at base + i * entry_size, in one copy. */
  if (type == DAO_WHOLE_CONTINUOUS) {
    void *base = NULL;
    if (WB_OK(c, dao_whole_get_base(w, &base)) &&
        wc_copy(c, place, buf, base, entries * entry_size))
      wc_expect(c, buf, NULL, 0, entries, entry_size, wb_gen_initial, seed,
                "read through the base");
  }

  /* Gathers into host memory, one-sided and collective, and into device
   * memory of this rank's place. */
  for (i = 0; i < count; ++i) idx[i] = (int64_t)(wb_rand(&rng) % entries);
  wb_gather_check(c, w, idx, count, entry_size, wb_gen_initial, seed);
  wb_gather_collective_check(c, w, idx, count - (size_t)c->rank, entry_size, wb_gen_initial, seed);
  if (dev != NULL) {
    memset(buf, 0, count * entry_size);
    if (WB_OK(c, dao_whole_gather(w, idx, count, dev)) &&
        wc_copy(c, place, buf, dev, count * entry_size))
      wc_expect(c, buf, idx, 0, count, entry_size, wb_gen_initial, seed,
                "gathered into device memory");
  }
  for (i = 0; i < entries; ++i) idx[i] = (int64_t)i;
  wb_gather_check(c, w, idx, entries, entry_size, wb_gen_initial, seed);
  WB_OK(c, dao_comm_barrier(c->comm));

  /* A scatter with an index out of range copies nothing. */
  for (i = 0; i < 3 && i < entries; ++i) wb_fill_entry(buf + i * entry_size, i, entry_size, 9);
  idx[0] = 0;
  idx[1] = (int64_t)entries;
  WB_FAILS(c, dao_whole_scatter(w, buf, idx, 2), DAO_ERR_INVALID_ARGUMENT, "indices[1]");
  WB_OK(c, dao_comm_barrier(c->comm));

  /* Scatter: rank r writes generation 1 to the chosen entries of its block
   * (collectively for odd seeds), from host memory or, for seeds divisible
   * by 4, from device memory. */
  {
    const size_t lo = (size_t)c->rank * entries / (size_t)c->size;
    const size_t hi = (size_t)(c->rank + 1) * entries / (size_t)c->size;
    const void *src = buf;
    for (i = lo; i < hi; ++i)
      if (wb_scattered(i, seed)) idx[n++] = (int64_t)i;
    for (i = 0; i < n; ++i) wb_fill_entry(buf + i * entry_size, (uint64_t)idx[i], entry_size, 1);
    if (seed % 4 == 0 && dev != NULL && wc_copy(c, place, dev, buf, n * entry_size)) src = dev;
    if (seed % 2 == 1) {
      WB_OK(c, dao_whole_scatter_collective(w, src, idx, n));
    } else {
      WB_OK(c, dao_whole_scatter(w, src, idx, n));
    }
  }
  WB_OK(c, dao_comm_barrier(c->comm));
  for (i = 0; i < entries; ++i) idx[i] = (int64_t)(entries - 1 - i);
  wb_gather_check(c, w, idx, entries, entry_size, wb_gen_after_scatter, seed);
  /* And this rank's own part, read with a driver copy. */
  if (wc_copy(c, place, buf, local, mine.byte_size))
    wc_expect(c, buf, NULL, mine.first_entry, mine.entry_count, entry_size, wb_gen_after_scatter,
              seed, "local part after the scatter");
  free(host);
  free(buf);
  free(idx);
  WB_OK(c, dao_comm_barrier(c->comm));
  WB_OK(c, dao_whole_destroy(w));
  /* Given back by the time the destroy returns (on every rank: ranks may
   * share a device). */
  WB_OK(c, dao_comm_barrier(c->comm));
  WB_OK(c, dao_used_internal(place, &used2));
  WB_OK(c, dao_place_memory_info(place, &free2, NULL));
  WB_CHECKF(c, used2 == used0, "cuda:%d: %zu bytes still allocated after destroy", place.device,
            used2 - used0);
  WB_CHECKF(c, !wc_exact_free || free2 == free0, "cuda:%d: %zu bytes still taken after destroy",
            place.device, free0 - free2);
  WB_OK(c, dao_comm_barrier(c->comm));
  if (dev != NULL) WB_OK(c, dao_free(place, dev));
  return 1;
}

/* Shapes that test the partition rule on devices; returns 1 when the type
 * was supported. */
static int wc_all_shapes(wb_ctx *c, dao_whole_type type) {
  static const size_t shapes[][2] = {{1, 8}, {3, 24}, {5, 3}, {64, 12}, {257, 40}, {4099, 56}};
  size_t s;
  for (s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
    if (!wc_roundtrip(c, type, shapes[s][0], shapes[s][1], (uint64_t)(type * 100 + (int)s)))
      return 0;
  return 1;
}

/* Store, then load into an object of the other type: through host buffers,
 * since the host cannot address the parts. `tag` tells apart the files of
 * groups that run at once. */
static void wc_files(wb_ctx *c, const char *tag) {
  char path[512];
  const size_t entries = 3001, entry_size = 24;
  dao_whole_desc d = wb_desc(DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_DEVICE, entries, entry_size);
  dao_whole *a = NULL, *b = NULL;
  dao_whole_range mine;
  dao_place place;
  void *p = NULL;
  unsigned char *host;
  int64_t *idx;
  size_t i;
  snprintf(path, sizeof path, "%s-cuda-%s.bin", c->file_prefix, tag);
  WB_OK(c, dao_comm_rank_place(c->comm, c->rank, &place));
  host = (unsigned char *)malloc(entries * entry_size);
  idx = (int64_t *)malloc(entries * sizeof *idx);
  if (host == NULL || idx == NULL || !WB_OK(c, dao_whole_create(c->comm, &d, &a))) {
    free(host);
    free(idx);
    return;
  }
  memset(&mine, 0, sizeof mine);
  mine.struct_size = sizeof mine;
  WB_OK(c, dao_whole_get_local(a, &p, &mine));
  for (i = 0; i < mine.entry_count; ++i)
    wb_fill_entry(host + i * entry_size, mine.first_entry + i, entry_size, 0);
  wc_copy(c, place, p, host, mine.byte_size);
  WB_OK(c, dao_whole_store(a, path));
  /* Load into every type that works here. */
  for (d.type = DAO_WHOLE_CONTINUOUS; d.type <= DAO_WHOLE_DISTRIBUTED;
       d.type = (dao_whole_type)(d.type + 1)) {
    dao_status made;
    if (dao_whole_supported(c->comm, d.type, DAO_WHOLE_DEVICE) != DAO_OK) continue;
    /* Between processes, whether every rank's driver maps continuous
     * memory (virtual memory management, peer access) is known at the
     * create only (on every rank alike). */
    made = dao_whole_create(c->comm, &d, &b);
    if (made != DAO_OK && d.type == DAO_WHOLE_CONTINUOUS && wc_continuous_may_fail) continue;
    if (!WB_STATUS(c, made, DAO_OK)) continue;
    WB_OK(c, dao_whole_load(b, path));
    for (i = 0; i < entries; ++i) idx[i] = (int64_t)(entries - 1 - i);
    wb_gather_check(c, b, idx, entries, entry_size, wb_gen_initial, 0);
    WB_OK(c, dao_whole_destroy(b));
  }
  WB_OK(c, dao_whole_destroy(a));
  WB_OK(c, dao_comm_barrier(c->comm));
  if (c->rank == 0) remove(path);
  free(host);
  free(idx);
}

#endif /* DAO_WHOLE_CUDA_BODY_H */
