/* Rows of the bad-input table (tests/reliability/bad_input_rows.h) for
 * partitioned memory, dao/whole.h: every dao_comm_* and dao_whole_*
 * function that libdao exports. Meant to be included at the end of
 * bad_input_rows.h (twice, like it):
 *
 *     #include "whole/bad_input_rows_whole.h"
 *
 * Each row makes what it needs on a one-rank in-process communicator over
 * dao_place_sim(SIM_SCRATCH) (one rank: collective calls need no other
 * thread) and destroys it. The two experimental functions (behind
 * DAO_EXPERIMENTAL, which the table's file does not define) are declared in
 * their rows.
 *
 * No include guard: this file is meant to be included twice; the macros
 * below are redefined identically, which C allows. */

/* A one-rank communicator `comm` over the scratch device and, unless the
 * type is -1, an object `w` of 10 entries of 16 bytes on it. */
#define WHOLE_MAKE(comm, w, make_type)                                                      \
  dao_comm *comm = NULL;                                                               \
  dao_whole *w = NULL;                                                                 \
  {                                                                                    \
    dao_place whole_p_ = dao_place_sim(SIM_SCRATCH);                                   \
    dao_whole_desc whole_d_;                                                           \
    memset(&whole_d_, 0, sizeof whole_d_);                                             \
    whole_d_.struct_size = sizeof whole_d_;                                            \
    whole_d_.type = (dao_whole_type)((make_type) < 0 ? 0 : (make_type));                         \
    whole_d_.location = DAO_WHOLE_DEVICE;                                              \
    whole_d_.total_size = 160;                                                         \
    whole_d_.entry_size = 16;                                                          \
    OK(dao_comm_create_local(1, &whole_p_, &comm));                                    \
    if (comm != NULL && (make_type) >= 0) OK(dao_whole_create(comm, &whole_d_, &w));        \
  }
#define WHOLE_DONE(comm, w)                \
  do {                                     \
    if ((w) != NULL) OK(dao_whole_destroy(w)); \
    if ((comm) != NULL) OK(dao_comm_destroy(comm)); \
  } while (0)
#define WHOLE_DESC(d, total, entry)                    \
  dao_whole_desc d;                                    \
  memset(&d, 0, sizeof d);                             \
  d.struct_size = sizeof d;                            \
  d.type = DAO_WHOLE_CHUNKED;                          \
  d.location = DAO_WHOLE_DEVICE;                       \
  d.total_size = (total);                              \
  d.entry_size = (entry);

/* ========================================================================= */
/* whole.h: communicators                                                     */

ROW(comm_create_local_null, "dao_comm_create_local", "NULL places, NULL comms",
    DAO_ERR_INVALID_ARGUMENT, "must not be NULL", {
  dao_place p = dao_place_sim(SIM_SCRATCH);
  dao_comm *c[1] = {SENTINEL};
  BAD(dao_comm_create_local(1, NULL, c));
  BAD(dao_comm_create_local(1, &p, NULL));
  expect_unchanged_ptr(c[0], SENTINEL, "comms[0]");
})

ROW(comm_create_local_count, "dao_comm_create_local", "count 0, -1, DAO_COMM_LOCAL_MAX_RANKS + 1",
    DAO_ERR_INVALID_ARGUMENT, "count", {
  dao_place p = dao_place_sim(SIM_SCRATCH);
  dao_comm *c[1] = {SENTINEL};
  BAD(dao_comm_create_local(0, &p, c));
  BAD(dao_comm_create_local(-1, &p, c));
  BAD(dao_comm_create_local(DAO_COMM_LOCAL_MAX_RANKS + 1, &p, c));
  expect_unchanged_ptr(c[0], SENTINEL, "comms[0]");
})

ROW(comm_create_local_absent, "dao_comm_create_local", "a SIM device that does not exist",
    DAO_ERR_NO_DEVICE, "places[1]", {
  dao_place p[2];
  dao_comm *c[2] = {SENTINEL, SENTINEL};
  p[0] = dao_place_sim(SIM_SCRATCH);
  p[1] = dao_place_sim(SIM_ABSENT);
  BAD(dao_comm_create_local(2, p, c));
  expect_unchanged_ptr(c[0], SENTINEL, "comms[0]");
})

ROW(comm_create_local_kind, "dao_comm_create_local", "a place of an unknown kind (-1, 99)",
    DAO_ERR_INVALID_ARGUMENT, "kind", {
  dao_place p[1];
  dao_comm *c[1] = {SENTINEL};
  p[0] = place_of(-1, 0);
  BAD(dao_comm_create_local(1, p, c));
  p[0] = place_of(99, 0);
  BAD(dao_comm_create_local(1, p, c));
  expect_unchanged_ptr(c[0], SENTINEL, "comms[0]");
})

ROW(comm_destroy_fake, "dao_comm_destroy", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, "dao_comm", {
  BAD(dao_comm_destroy((dao_comm *)fake(f)));
  BAD(dao_comm_destroy((dao_comm *)misaligned(f)));
})

ROW(comm_destroy_busy, "dao_comm_destroy", "a whole memory object of the handle still exists",
    DAO_ERR_BUSY, "whole memory object", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  BAD(dao_comm_destroy(comm));
  WHOLE_DONE(comm, w);
})

ROW(comm_rank_handle, "dao_comm_rank", "NULL handle, garbage handle", DAO_ERR_INVALID_ARGUMENT,
    "comm", {
  int r = -7;
  BAD(dao_comm_rank(NULL, &r));
  BAD(dao_comm_rank((dao_comm *)fake(f), &r));
  if (r != -7) note("rank was written by a failing call");
})

ROW(comm_rank_null, "dao_comm_rank", "NULL rank", DAO_ERR_INVALID_ARGUMENT, "rank", {
  WHOLE_MAKE(comm, w, -1)
  BAD(dao_comm_rank(comm, NULL));
  WHOLE_DONE(comm, w);
})

ROW(comm_size_handle, "dao_comm_size", "NULL handle, garbage handle", DAO_ERR_INVALID_ARGUMENT,
    "comm", {
  int s = -7;
  BAD(dao_comm_size(NULL, &s));
  BAD(dao_comm_size((dao_comm *)misaligned(f), &s));
  if (s != -7) note("size was written by a failing call");
})

ROW(comm_size_null, "dao_comm_size", "NULL size", DAO_ERR_INVALID_ARGUMENT, "size", {
  WHOLE_MAKE(comm, w, -1)
  BAD(dao_comm_size(comm, NULL));
  WHOLE_DONE(comm, w);
})

ROW(comm_rank_place_range, "dao_comm_rank_place", "rank -1 and rank 1 of 1",
    DAO_ERR_INVALID_ARGUMENT, "out of range", {
  WHOLE_MAKE(comm, w, -1)
  dao_place p = place_of(77, 77);
  BAD(dao_comm_rank_place(comm, -1, &p));
  BAD(dao_comm_rank_place(comm, 1, &p));
  if ((int)p.kind != 77 || p.device != 77) note("place was written by a failing call");
  WHOLE_DONE(comm, w);
})

ROW(comm_rank_place_handle, "dao_comm_rank_place", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "comm", {
  dao_place p;
  BAD(dao_comm_rank_place(NULL, 0, &p));
  BAD(dao_comm_rank_place((dao_comm *)fake(f), 0, &p));
})

ROW(comm_rank_place_null, "dao_comm_rank_place", "NULL place", DAO_ERR_INVALID_ARGUMENT, "place", {
  WHOLE_MAKE(comm, w, -1)
  BAD(dao_comm_rank_place(comm, 0, NULL));
  WHOLE_DONE(comm, w);
})

ROW(comm_get_info_bad, "dao_comm_get_info", "NULL info, struct_size one too small",
    DAO_ERR_INVALID_ARGUMENT, "info", {
  WHOLE_MAKE(comm, w, -1)
  dao_comm_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info - 1;
  BAD(dao_comm_get_info(comm, NULL));
  BAD(dao_comm_get_info(comm, &info));
  if (info.rank != 0 || info.transport != NULL) note("info was written by a failing call");
  WHOLE_DONE(comm, w);
})

ROW(comm_get_info_handle, "dao_comm_get_info", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "comm", {
  dao_comm_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  BAD(dao_comm_get_info(NULL, &info));
  BAD(dao_comm_get_info((dao_comm *)fake(f), &info));
})

ROW(comm_barrier_bad, "dao_comm_barrier", "NULL handle, garbage handle", DAO_ERR_INVALID_ARGUMENT,
    "comm", {
  BAD(dao_comm_barrier(NULL));
  BAD(dao_comm_barrier((dao_comm *)fake(f)));
})

ROW(comm_create_transport_bad, "dao_comm_create_transport",
    "NULL transport; transport with struct_size 0 (experimental API)", DAO_ERR_INVALID_ARGUMENT,
    "transport", {
  /* Declared here: the table is built without DAO_EXPERIMENTAL. */
  extern dao_status dao_comm_create_transport(const void *, dao_place, dao_comm **);
  size_t zeros[64];
  dao_comm *c = SENTINEL;
  memset(zeros, 0, sizeof zeros);
  BAD(dao_comm_create_transport(NULL, dao_place_cpu(), &c));
  expect_null(c, "out");
  BAD(dao_comm_create_transport(zeros, dao_place_cpu(), &c));
  expect_null(c, "out");
})

ROW(comm_transport_error, "dao_comm_transport_error", "no bad input possible", DAO_OK, NULL, {
  extern dao_status dao_comm_transport_error(dao_status, const char *);
  if (dao_comm_transport_error(DAO_ERR_BACKEND, "from a transport") != DAO_ERR_BACKEND)
    note("dao_comm_transport_error did not return its status");
  if (strcmp(dao_last_error(), "from a transport") != 0)
    note("dao_last_error() is '%s' after dao_comm_transport_error", dao_last_error());
  if (dao_comm_transport_error(DAO_ERR_INTERNAL, NULL) != DAO_ERR_INTERNAL ||
      dao_last_error()[0] != '\0')
    note("dao_comm_transport_error(NULL message) did not record an empty message");
})

/* ========================================================================= */
/* whole.h: whole memory objects                                              */

ROW(whole_type_name, "dao_whole_type_name", "values that are not types (-1, 3, INT_MAX)", DAO_OK,
    NULL, {
  const int values[3] = {-1, 3, INT_MAX};
  int i;
  for (i = 0; i < 3; ++i)
    if (strcmp(dao_whole_type_name((dao_whole_type)values[i]), "unknown") != 0)
      note("dao_whole_type_name(%d) is not 'unknown'", values[i]);
  if (strcmp(dao_whole_type_name(DAO_WHOLE_DISTRIBUTED), "distributed") != 0)
    note("dao_whole_type_name(DAO_WHOLE_DISTRIBUTED) is not 'distributed'");
})

ROW(whole_location_name, "dao_whole_location_name", "values that are not locations (-1, 2)",
    DAO_OK, NULL, {
  if (strcmp(dao_whole_location_name((dao_whole_location)-1), "unknown") != 0 ||
      strcmp(dao_whole_location_name((dao_whole_location)2), "unknown") != 0)
    note("dao_whole_location_name of a bad value is not 'unknown'");
  if (strcmp(dao_whole_location_name(DAO_WHOLE_HOST), "host") != 0)
    note("dao_whole_location_name(DAO_WHOLE_HOST) is not 'host'");
})

ROW(whole_supported_enums, "dao_whole_supported", "type 3, type -1, location 2",
    DAO_ERR_INVALID_ARGUMENT, "dao_whole_", {
  WHOLE_MAKE(comm, w, -1)
  BAD(dao_whole_supported(comm, (dao_whole_type)3, DAO_WHOLE_HOST));
  BAD(dao_whole_supported(comm, (dao_whole_type)-1, DAO_WHOLE_HOST));
  BAD(dao_whole_supported(comm, DAO_WHOLE_CHUNKED, (dao_whole_location)2));
  WHOLE_DONE(comm, w);
})

ROW(whole_supported_handle, "dao_whole_supported", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "comm", {
  BAD(dao_whole_supported(NULL, DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST));
  BAD(dao_whole_supported((dao_comm *)fake(f), DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST));
})

ROW(whole_create_handle, "dao_whole_create", "NULL comm, garbage comm", DAO_ERR_INVALID_ARGUMENT,
    "comm", {
  WHOLE_DESC(d, 160, 16)
  dao_whole *w = SENTINEL;
  BAD(dao_whole_create(NULL, &d, &w));
  expect_null(w, "out");
  BAD(dao_whole_create((dao_comm *)fake(f), &d, &w));
})

ROW(whole_create_null, "dao_whole_create", "NULL desc, NULL out", DAO_ERR_INVALID_ARGUMENT,
    "must not be NULL", {
  WHOLE_MAKE(comm, w, -1)
  WHOLE_DESC(d, 160, 16)
  dao_whole *out = SENTINEL;
  BAD(dao_whole_create(comm, NULL, &out));
  expect_null(out, "out");
  BAD(dao_whole_create(comm, &d, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_create_struct_size, "dao_whole_create", "desc->struct_size 0 and one too small",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  WHOLE_MAKE(comm, w, -1)
  WHOLE_DESC(d, 160, 16)
  dao_whole *out = SENTINEL;
  d.struct_size = 0;
  BAD(dao_whole_create(comm, &d, &out));
  d.struct_size = sizeof d - 1;
  BAD(dao_whole_create(comm, &d, &out));
  expect_null(out, "out");
  WHOLE_DONE(comm, w);
})

ROW(whole_create_sizes, "dao_whole_create",
    "total_size 1000 with entry_size 24, entry_size 0, total_size 0", DAO_ERR_INVALID_ARGUMENT,
    "desc->", {
  WHOLE_MAKE(comm, w, -1)
  WHOLE_DESC(d, 1000, 24)
  dao_whole *out = SENTINEL;
  BAD(dao_whole_create(comm, &d, &out)); /* not a multiple: "16 bytes left over" */
  d.entry_size = 0;
  BAD(dao_whole_create(comm, &d, &out));
  d.entry_size = 8;
  d.total_size = 0;
  BAD(dao_whole_create(comm, &d, &out));
  expect_null(out, "out");
  WHOLE_DONE(comm, w);
})

ROW(whole_create_enums, "dao_whole_create", "type 3, type -1, location 2",
    DAO_ERR_INVALID_ARGUMENT, "desc->", {
  WHOLE_MAKE(comm, w, -1)
  WHOLE_DESC(d, 160, 16)
  dao_whole *out = SENTINEL;
  d.type = (dao_whole_type)3;
  BAD(dao_whole_create(comm, &d, &out));
  d.type = (dao_whole_type)-1;
  BAD(dao_whole_create(comm, &d, &out));
  d.type = DAO_WHOLE_CHUNKED;
  d.location = (dao_whole_location)2;
  BAD(dao_whole_create(comm, &d, &out));
  expect_null(out, "out");
  WHOLE_DONE(comm, w);
})

ROW(whole_create_wraps, "dao_whole_create",
    "continuous, total_size rounding up past the address space (SIZE_MAX - 7, host and device)",
    DAO_ERR_INVALID_ARGUMENT, "address space", {
  WHOLE_MAKE(comm, w, -1)
  WHOLE_DESC(d, SIZE_MAX - 7, 8)
  dao_whole *out = SENTINEL;
  d.type = DAO_WHOLE_CONTINUOUS;
  BAD(dao_whole_create(comm, &d, &out));
  d.location = DAO_WHOLE_HOST;
  BAD(dao_whole_create(comm, &d, &out));
  expect_null(out, "out");
  WHOLE_DONE(comm, w);
})

ROW(whole_create_oom, "dao_whole_create", "a part larger than its SIM device",
    DAO_ERR_OUT_OF_MEMORY, "sim:", {
  WHOLE_MAKE(comm, w, -1)
  WHOLE_DESC(d, (size_t)1 << 40, 1 << 20)
  dao_whole *out = SENTINEL;
  BAD(dao_whole_create(comm, &d, &out));
  expect_null(out, "out");
  WHOLE_DONE(comm, w);
})

ROW(whole_destroy_fake, "dao_whole_destroy", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, "dao_whole", {
  BAD(dao_whole_destroy((dao_whole *)fake(f)));
  BAD(dao_whole_destroy((dao_whole *)misaligned(f)));
})

ROW(whole_get_info_bad, "dao_whole_get_info", "NULL info, struct_size too small",
    DAO_ERR_INVALID_ARGUMENT, "info", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  dao_whole_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = 8;
  BAD(dao_whole_get_info(w, NULL));
  BAD(dao_whole_get_info(w, &info));
  if (info.total_size != 0) note("info was written by a failing call");
  WHOLE_DONE(comm, w);
})

ROW(whole_get_info_handle, "dao_whole_get_info", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  dao_whole_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  BAD(dao_whole_get_info(NULL, &info));
  BAD(dao_whole_get_info((dao_whole *)fake(f), &info));
})

ROW(whole_get_partition_rank, "dao_whole_get_partition", "rank -1 and rank 1 of 1",
    DAO_ERR_INVALID_ARGUMENT, "rank", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  dao_whole_range r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  BAD(dao_whole_get_partition(w, -1, &r));
  BAD(dao_whole_get_partition(w, 1, &r));
  if (r.entry_count != 0) note("range was written by a failing call");
  WHOLE_DONE(comm, w);
})

ROW(whole_get_partition_range, "dao_whole_get_partition", "NULL range, struct_size one too small",
    DAO_ERR_INVALID_ARGUMENT, "range", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  dao_whole_range r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r - 1;
  BAD(dao_whole_get_partition(w, 0, NULL));
  BAD(dao_whole_get_partition(w, 0, &r));
  if (r.entry_count != 0) note("range was written by a failing call");
  WHOLE_DONE(comm, w);
})

ROW(whole_get_partition_handle, "dao_whole_get_partition", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  dao_whole_range r;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  BAD(dao_whole_get_partition(NULL, 0, &r));
  BAD(dao_whole_get_partition((dao_whole *)fake(f), 0, &r));
})

ROW(whole_entry_rank_index, "dao_whole_entry_rank", "index -1 and index 10 of 10",
    DAO_ERR_INVALID_ARGUMENT, "index", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  int r = -7;
  BAD(dao_whole_entry_rank(w, -1, &r));
  BAD(dao_whole_entry_rank(w, 10, &r));
  if (r != -7) note("rank was written by a failing call");
  WHOLE_DONE(comm, w);
})

ROW(whole_entry_rank_null, "dao_whole_entry_rank", "NULL rank", DAO_ERR_INVALID_ARGUMENT, "rank", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  BAD(dao_whole_entry_rank(w, 0, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_entry_rank_handle, "dao_whole_entry_rank", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  int r;
  BAD(dao_whole_entry_rank(NULL, 0, &r));
  BAD(dao_whole_entry_rank((dao_whole *)fake(f), 0, &r));
})

ROW(whole_get_local_ptr, "dao_whole_get_local", "NULL ptr", DAO_ERR_INVALID_ARGUMENT, "ptr", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  BAD(dao_whole_get_local(w, NULL, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_get_local_range, "dao_whole_get_local", "range->struct_size too small",
    DAO_ERR_INVALID_ARGUMENT, "range", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  void *p = SENTINEL;
  dao_whole_range r;
  memset(&r, 0, sizeof r);
  r.struct_size = 4;
  BAD(dao_whole_get_local(w, &p, &r));
  expect_unchanged_ptr(p, SENTINEL, "ptr");
  WHOLE_DONE(comm, w);
})

ROW(whole_get_local_handle, "dao_whole_get_local", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  void *p;
  BAD(dao_whole_get_local(NULL, &p, NULL));
  BAD(dao_whole_get_local((dao_whole *)fake(f), &p, NULL));
})

ROW(whole_get_rank_pointer_rank, "dao_whole_get_rank_pointer", "rank -1 and rank 1 of 1",
    DAO_ERR_INVALID_ARGUMENT, "rank", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  void *p = SENTINEL;
  BAD(dao_whole_get_rank_pointer(w, -1, &p));
  BAD(dao_whole_get_rank_pointer(w, 1, &p));
  expect_unchanged_ptr(p, SENTINEL, "ptr");
  WHOLE_DONE(comm, w);
})

ROW(whole_get_rank_pointer_null, "dao_whole_get_rank_pointer", "NULL ptr",
    DAO_ERR_INVALID_ARGUMENT, "ptr", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  BAD(dao_whole_get_rank_pointer(w, 0, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_get_rank_pointer_handle, "dao_whole_get_rank_pointer", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  void *p;
  BAD(dao_whole_get_rank_pointer(NULL, 0, &p));
  BAD(dao_whole_get_rank_pointer((dao_whole *)fake(f), 0, &p));
})

ROW(whole_get_base_type, "dao_whole_get_base", "a chunked and a distributed object",
    DAO_ERR_UNSUPPORTED, "single range", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  dao_whole *w2 = NULL;
  void *p = SENTINEL;
  WHOLE_DESC(d, 160, 16)
  d.type = DAO_WHOLE_DISTRIBUTED;
  if (comm != NULL) OK(dao_whole_create(comm, &d, &w2));
  BAD(dao_whole_get_base(w, &p));
  BAD(dao_whole_get_base(w2, &p));
  expect_unchanged_ptr(p, SENTINEL, "base");
  if (w2 != NULL) OK(dao_whole_destroy(w2));
  WHOLE_DONE(comm, w);
})

ROW(whole_get_base_null, "dao_whole_get_base", "NULL base", DAO_ERR_INVALID_ARGUMENT, "base", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  BAD(dao_whole_get_base(w, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_get_base_handle, "dao_whole_get_base", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  void *p;
  BAD(dao_whole_get_base(NULL, &p));
  BAD(dao_whole_get_base((dao_whole *)fake(f), &p));
})

ROW(whole_gather_indices, "dao_whole_gather", "index 10 of 10, index -1, NULL indices",
    DAO_ERR_INVALID_ARGUMENT, "indices", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 10, 2};
  unsigned char out[48];
  size_t i;
  memset(out, 0x5A, sizeof out);
  BAD(dao_whole_gather(w, idx, 3, out)); /* "indices[1] = 10 is out of range" */
  idx[1] = -1;
  BAD(dao_whole_gather(w, idx, 3, out));
  BAD(dao_whole_gather(w, NULL, 3, out));
  for (i = 0; i < sizeof out; ++i)
    if (out[i] != 0x5A) {
      note("a failing gather wrote dst[%zu]", i);
      break;
    }
  WHOLE_DONE(comm, w);
})

ROW(whole_gather_buffer, "dao_whole_gather", "NULL dst", DAO_ERR_INVALID_ARGUMENT, "dst", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 1, 2};
  BAD(dao_whole_gather(w, idx, 3, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_gather_overflow, "dao_whole_gather", "count * entry_size overflows",
    DAO_ERR_INVALID_ARGUMENT, "overflow", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 1, 2};
  unsigned char out[48];
  memset(out, 0, sizeof out);
  BAD(dao_whole_gather(w, idx, SIZE_MAX / 2, out));
  WHOLE_DONE(comm, w);
})

ROW(whole_gather_handle, "dao_whole_gather", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  int64_t idx[3] = {0, 1, 2};
  unsigned char out[48];
  memset(out, 0, sizeof out);
  BAD(dao_whole_gather(NULL, idx, 3, out));
  BAD(dao_whole_gather((dao_whole *)fake(f), idx, 3, out));
})

ROW(whole_scatter_indices, "dao_whole_scatter", "index 10 of 10, index -1, NULL indices",
    DAO_ERR_INVALID_ARGUMENT, "indices", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  int64_t idx[3] = {0, 10, 2};
  unsigned char in[48], before[160];
  void *base = NULL;
  memset(in, 0x5A, sizeof in);
  if (w != NULL) OK(dao_whole_get_base(w, &base));
  if (base != NULL) {
    memset(base, 0x33, sizeof before);
    memcpy(before, base, sizeof before);
  }
  BAD(dao_whole_scatter(w, in, idx, 3)); /* "indices[1] = 10 is out of range" */
  idx[1] = -1;
  BAD(dao_whole_scatter(w, in, idx, 3));
  BAD(dao_whole_scatter(w, in, NULL, 3));
  if (base != NULL && memcmp(base, before, sizeof before) != 0)
    note("a failing scatter changed the object");
  WHOLE_DONE(comm, w);
})

ROW(whole_scatter_buffer, "dao_whole_scatter", "NULL src", DAO_ERR_INVALID_ARGUMENT, "src", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  int64_t idx[3] = {0, 1, 2};
  BAD(dao_whole_scatter(w, NULL, idx, 3));
  WHOLE_DONE(comm, w);
})

ROW(whole_scatter_overflow, "dao_whole_scatter", "count * entry_size overflows",
    DAO_ERR_INVALID_ARGUMENT, "overflow", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  int64_t idx[3] = {0, 1, 2};
  unsigned char in[48];
  memset(in, 0, sizeof in);
  BAD(dao_whole_scatter(w, in, idx, SIZE_MAX / 2));
  WHOLE_DONE(comm, w);
})

ROW(whole_scatter_handle, "dao_whole_scatter", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  int64_t idx[3] = {0, 1, 2};
  unsigned char in[48];
  memset(in, 0, sizeof in);
  BAD(dao_whole_scatter(NULL, in, idx, 3));
  BAD(dao_whole_scatter((dao_whole *)fake(f), in, idx, 3));
})

ROW(whole_gather_collective_indices, "dao_whole_gather_collective",
    "index 10 of 10, index -1, NULL indices", DAO_ERR_INVALID_ARGUMENT, "indices", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 10, 2};
  unsigned char out[48];
  size_t i;
  memset(out, 0x5A, sizeof out);
  BAD(dao_whole_gather_collective(w, idx, 3, out)); /* "indices[1] = 10 is out of range" */
  idx[1] = -1;
  BAD(dao_whole_gather_collective(w, idx, 3, out));
  BAD(dao_whole_gather_collective(w, NULL, 3, out));
  for (i = 0; i < sizeof out; ++i)
    if (out[i] != 0x5A) {
      note("a failing collective gather wrote dst[%zu]", i);
      break;
    }
  WHOLE_DONE(comm, w);
})

ROW(whole_gather_collective_buffer, "dao_whole_gather_collective", "NULL dst",
    DAO_ERR_INVALID_ARGUMENT, "dst", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  int64_t idx[3] = {0, 1, 2};
  BAD(dao_whole_gather_collective(w, idx, 3, NULL));
  WHOLE_DONE(comm, w);
})

ROW(whole_gather_collective_overflow, "dao_whole_gather_collective",
    "count * entry_size overflows", DAO_ERR_INVALID_ARGUMENT, "overflow", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 1, 2};
  unsigned char out[48];
  memset(out, 0, sizeof out);
  BAD(dao_whole_gather_collective(w, idx, SIZE_MAX / 2, out));
  WHOLE_DONE(comm, w);
})

ROW(whole_gather_collective_handle, "dao_whole_gather_collective", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  int64_t idx[3] = {0, 1, 2};
  unsigned char out[48];
  memset(out, 0, sizeof out);
  BAD(dao_whole_gather_collective(NULL, idx, 3, out));
  BAD(dao_whole_gather_collective((dao_whole *)fake(f), idx, 3, out));
})

ROW(whole_scatter_collective_indices, "dao_whole_scatter_collective",
    "index 10 of 10, index -1, NULL indices", DAO_ERR_INVALID_ARGUMENT, "indices", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  int64_t idx[3] = {0, 10, 2};
  unsigned char in[48], before[160];
  void *base = NULL;
  memset(in, 0x5A, sizeof in);
  if (w != NULL) OK(dao_whole_get_base(w, &base));
  if (base != NULL) {
    memset(base, 0x33, sizeof before);
    memcpy(before, base, sizeof before);
  }
  BAD(dao_whole_scatter_collective(w, in, idx, 3)); /* "indices[1] = 10 is out of range" */
  idx[1] = -1;
  BAD(dao_whole_scatter_collective(w, in, idx, 3));
  BAD(dao_whole_scatter_collective(w, in, NULL, 3));
  if (base != NULL && memcmp(base, before, sizeof before) != 0)
    note("a failing collective scatter changed the object");
  WHOLE_DONE(comm, w);
})

ROW(whole_scatter_collective_buffer, "dao_whole_scatter_collective", "NULL src",
    DAO_ERR_INVALID_ARGUMENT, "src", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 1, 2};
  BAD(dao_whole_scatter_collective(w, NULL, idx, 3));
  WHOLE_DONE(comm, w);
})

ROW(whole_scatter_collective_overflow, "dao_whole_scatter_collective",
    "count * entry_size overflows", DAO_ERR_INVALID_ARGUMENT, "overflow", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  int64_t idx[3] = {0, 1, 2};
  unsigned char in[48];
  memset(in, 0, sizeof in);
  BAD(dao_whole_scatter_collective(w, in, idx, SIZE_MAX / 2));
  WHOLE_DONE(comm, w);
})

ROW(whole_scatter_collective_handle, "dao_whole_scatter_collective",
    "NULL handle, garbage handle", DAO_ERR_INVALID_ARGUMENT, "whole", {
  int64_t idx[3] = {0, 1, 2};
  unsigned char in[48];
  memset(in, 0, sizeof in);
  BAD(dao_whole_scatter_collective(NULL, in, idx, 3));
  BAD(dao_whole_scatter_collective((dao_whole *)fake(f), in, idx, 3));
})

ROW(whole_store_path, "dao_whole_store", "NULL path, empty path", DAO_ERR_INVALID_ARGUMENT,
    "path", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  BAD(dao_whole_store(w, NULL));
  BAD(dao_whole_store(w, ""));
  WHOLE_DONE(comm, w);
})

ROW(whole_store_handle, "dao_whole_store", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  BAD(dao_whole_store(NULL, "/tmp/x"));
  BAD(dao_whole_store((dao_whole *)fake(f), "/tmp/x"));
})

ROW(whole_store_unwritable, "dao_whole_store", "a path in a directory that does not exist",
    DAO_ERR_BACKEND, "cannot create", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  BAD(dao_whole_store(w, "/nonexistent-dao-dir/whole.bin"));
  WHOLE_DONE(comm, w);
})

ROW(whole_load_path, "dao_whole_load", "NULL path, empty path", DAO_ERR_INVALID_ARGUMENT,
    "path", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CHUNKED)
  BAD(dao_whole_load(w, NULL));
  BAD(dao_whole_load(w, ""));
  WHOLE_DONE(comm, w);
})

ROW(whole_load_handle, "dao_whole_load", "NULL handle, garbage handle",
    DAO_ERR_INVALID_ARGUMENT, "whole", {
  BAD(dao_whole_load(NULL, "/tmp/x"));
  BAD(dao_whole_load((dao_whole *)fake(f), "/tmp/x"));
})

ROW(whole_load_missing, "dao_whole_load", "a file that does not exist", DAO_ERR_NOT_FOUND,
    "cannot open", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_CONTINUOUS)
  BAD(dao_whole_load(w, "/nonexistent-dao-dir/whole.bin"));
  WHOLE_DONE(comm, w);
})

ROW(whole_load_size, "dao_whole_load", "a file of another size (/dev/null: 0 bytes)",
    DAO_ERR_INVALID_ARGUMENT, "bytes", {
  WHOLE_MAKE(comm, w, DAO_WHOLE_DISTRIBUTED)
  BAD(dao_whole_load(w, "/dev/null"));
  WHOLE_DONE(comm, w);
})
