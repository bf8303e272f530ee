/* The rows of the bad-input table, included twice by test_bad_input.c: once
 * to define each row's function, once to list the rows.
 *
 * ROW(id, function, label, expected status, text the message must hold, body)
 *
 * The body runs with `f`, the fixture (see test_bad_input.c), and makes its
 * bad call(s) with BAD(call). fake(f) and misaligned(f) give a garbage
 * handle (and make the message name it); named(f, p) makes the message name
 * the pointer p. SNAP() takes the "before" state again after the row
 * prepared something on the fixture. A row whose expected status is DAO_OK
 * is for a function that returns no status: it checks the result itself and
 * reports with note().
 *
 * Adding a function: give it a row for each pointer parameter set to NULL,
 * each handle replaced by fake(f) (and misaligned(f)), each enum, index,
 * place and size out of range, and each state it refuses, with the status its
 * header documents. Objects a row needs beyond the fixture go on
 * dao_place_sim(SIM_SCRATCH), which the "nothing changed" check leaves out,
 * and are destroyed by the row; prepare with OK(...), which reports a failing
 * valid call. The test fails while an exported function has no row.
 *
 * No include guard: this file is meant to be included twice. */

/* ========================================================================= */
/* version.h, status.h                                                        */

ROW(version_number, "dao_version_number", "no bad input possible", DAO_OK, NULL, {
  if (dao_version_number() != DAO_VERSION_NUMBER)
    note("dao_version_number() is %u, the header says %d", dao_version_number(),
         DAO_VERSION_NUMBER);
})

ROW(version_string, "dao_version_string", "no bad input possible", DAO_OK, NULL, {
  const char *v = dao_version_string();
  if (v == NULL || strcmp(v, DAO_VERSION_STRING) != 0)
    note("dao_version_string() is '%s', the header says '%s'", v ? v : "(NULL)",
         DAO_VERSION_STRING);
})

ROW(status_string_unknown, "dao_status_string", "unknown status values (-1, END, 1000, INT_MAX)",
    DAO_OK, NULL, {
  const int values[4] = {-1, DAO_STATUS_END_, 1000, INT_MAX};
  int i;
  for (i = 0; i < 4; ++i) {
    const char *s = dao_status_string((dao_status)values[i]);
    if (s == NULL || strcmp(s, "unknown status") != 0)
      note("dao_status_string(%d) is '%s', expected 'unknown status'", values[i],
           s ? s : "(NULL)");
  }
  for (i = 0; i < DAO_STATUS_END_; ++i) {
    const char *s = dao_status_string((dao_status)i);
    if (s == NULL || s[0] == '\0' || strcmp(s, "unknown status") == 0)
      note("dao_status_string(%d) does not name the status", i);
  }
})

ROW(last_error, "dao_last_error", "no bad input possible", DAO_OK, NULL, {
  int count = 0;
  char m[1100];
  (void)dao_place_device_count((dao_place_kind)1000, &count);
  if (dao_last_error() == NULL || dao_last_error()[0] == '\0')
    note("dao_last_error() is empty after a failed call");
  snprintf(m, sizeof m, "%s", dao_last_error() != NULL ? dao_last_error() : "");
  OK(dao_place_device_count(DAO_PLACE_CPU, &count));
  if (dao_last_error() == NULL || strcmp(dao_last_error(), m) != 0)
    note("a successful call changed dao_last_error() (it must stay as errno does)");
})

/* ========================================================================= */
/* place.h                                                                    */

ROW(place_cpu, "dao_place_cpu", "no bad input possible", DAO_OK, NULL, {
  dao_place p = dao_place_cpu();
  if (p.kind != DAO_PLACE_CPU || p.device != 0) note("dao_place_cpu() is not {CPU, 0}");
})

ROW(place_cuda_pinned, "dao_place_cuda_pinned", "no bad input possible", DAO_OK, NULL, {
  dao_place p = dao_place_cuda_pinned();
  if (p.kind != DAO_PLACE_CUDA_PINNED || p.device != 0)
    note("dao_place_cuda_pinned() is not {CUDA_PINNED, 0}");
})

ROW(place_cuda_negative, "dao_place_cuda", "negative device (not checked here; refused at use)",
    DAO_ERR_INVALID_ARGUMENT, "negative", {
  size_t bytes = 0;
  dao_place p = dao_place_cuda(-1);
  if (p.kind != DAO_PLACE_CUDA || p.device != -1) note("dao_place_cuda(-1) is not {CUDA, -1}");
  BAD(dao_place_memory_info(p, &bytes, NULL));
})

ROW(place_cuda_absent, "dao_place_cuda", "device index past the last device (refused at use)",
    DAO_ERR_NO_DEVICE, NULL, {
  void *p = SENTINEL;
  BAD(dao_alloc(dao_place_cuda(f->cuda_count), 64, &p));
  expect_null(p, "ptr");
})

ROW(place_cuda_managed_negative, "dao_place_cuda_managed",
    "negative device (not checked here; refused at use)", DAO_ERR_INVALID_ARGUMENT, "negative", {
  size_t bytes = 0;
  dao_place p = dao_place_cuda_managed(-1);
  if (p.kind != DAO_PLACE_CUDA_MANAGED || p.device != -1)
    note("dao_place_cuda_managed(-1) is not {CUDA_MANAGED, -1}");
  BAD(dao_place_memory_info(p, &bytes, NULL));
})

ROW(place_cuda_managed_absent, "dao_place_cuda_managed",
    "device index past the last device (refused at use)", DAO_ERR_NO_DEVICE, NULL, {
  void *p = SENTINEL;
  BAD(dao_alloc(dao_place_cuda_managed(f->cuda_count), 64, &p));
  expect_null(p, "ptr");
})

ROW(place_sim_negative, "dao_place_sim", "negative device (not checked here; refused at use)",
    DAO_ERR_INVALID_ARGUMENT, "negative", {
  dao_place p = dao_place_sim(-1);
  void *ptr = SENTINEL;
  if (p.kind != DAO_PLACE_SIM || p.device != -1) note("dao_place_sim(-1) is not {SIM, -1}");
  BAD(dao_alloc(p, 64, &ptr));
  expect_null(ptr, "ptr");
})

ROW(place_sim_absent, "dao_place_sim", "devices 3, 64 and INT_MAX of 3 (refused at use)",
    DAO_ERR_NO_DEVICE, NULL, {
  void *ptr = SENTINEL;
  BAD(dao_alloc(dao_place_sim(SIM_ABSENT), 64, &ptr));
  expect_null(ptr, "ptr");
  ptr = SENTINEL;
  BAD(dao_alloc(dao_place_sim(DAO_SIM_MAX_DEVICES), 64, &ptr));
  expect_null(ptr, "ptr");
  ptr = SENTINEL;
  BAD(dao_alloc(dao_place_sim(INT_MAX), 64, &ptr));
  expect_null(ptr, "ptr");
})

ROW(device_count_null, "dao_place_device_count", "NULL out-param count", DAO_ERR_INVALID_ARGUMENT,
    "count", { BAD(dao_place_device_count(DAO_PLACE_SIM, NULL)); })

ROW(device_count_kind, "dao_place_device_count", "unknown kind (-1, 5, INT_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "kind", {
  int count = 12345;
  BAD(dao_place_device_count((dao_place_kind)-1, &count));
  BAD(dao_place_device_count((dao_place_kind)DAO_PLACE_KIND_COUNT, &count));
  BAD(dao_place_device_count((dao_place_kind)INT_MAX, &count));
  if (count != 12345) note("count was written on failure (the header says it is unchanged)");
})

ROW(memory_info_kind, "dao_place_memory_info", "unknown kind (-1, 5)", DAO_ERR_INVALID_ARGUMENT,
    "kind", {
  size_t fr = 0, total = 0;
  BAD(dao_place_memory_info(place_of(-1, 0), &fr, &total));
  BAD(dao_place_memory_info(place_of(DAO_PLACE_KIND_COUNT, 0), &fr, &total));
})

ROW(memory_info_negative, "dao_place_memory_info", "negative device (CPU, SIM, CUDA_PINNED)",
    DAO_ERR_INVALID_ARGUMENT, "negative", {
  size_t fr = 0, total = 0;
  BAD(dao_place_memory_info(place_of(DAO_PLACE_CPU, -1), &fr, &total));
  BAD(dao_place_memory_info(place_of(DAO_PLACE_SIM, -5), &fr, &total));
  BAD(dao_place_memory_info(place_of(DAO_PLACE_CUDA_PINNED, INT_MIN), &fr, &total));
})

ROW(memory_info_absent, "dao_place_memory_info",
    "device that does not exist (SIM 3, CPU 1, CUDA_PINNED 1, CUDA n, CUDA_MANAGED n)",
    DAO_ERR_NO_DEVICE, NULL, {
  size_t fr = 0, total = 0;
  BAD(dao_place_memory_info(dao_place_sim(SIM_ABSENT), &fr, &total));
  BAD(dao_place_memory_info(place_of(DAO_PLACE_CPU, 1), &fr, &total));
  BAD(dao_place_memory_info(place_of(DAO_PLACE_CUDA_PINNED, 1), &fr, &total));
  BAD(dao_place_memory_info(dao_place_cuda(f->cuda_count), &fr, &total));
  BAD(dao_place_memory_info(dao_place_cuda_managed(f->cuda_count), &fr, &total));
})

ROW(kind_name_unknown, "dao_place_kind_name", "unknown kind (-1, 5, INT_MAX)", DAO_OK, NULL, {
  const int kinds[3] = {-1, DAO_PLACE_KIND_COUNT, INT_MAX};
  int i;
  for (i = 0; i < 3; ++i) {
    const char *s = dao_place_kind_name((dao_place_kind)kinds[i]);
    if (s == NULL || strcmp(s, "unknown") != 0)
      note("dao_place_kind_name(%d) is '%s', the header says 'unknown'", kinds[i],
           s ? s : "(NULL)");
  }
})

ROW(backend_description_unknown, "dao_place_backend_description", "unknown kind (-1, 5, INT_MAX)",
    DAO_OK, NULL, {
  const int kinds[3] = {-1, DAO_PLACE_KIND_COUNT, INT_MAX};
  int i;
  for (i = 0; i < 3; ++i) {
    const char *s = dao_place_backend_description((dao_place_kind)kinds[i]);
    if (s == NULL || strcmp(s, "unknown place kind") != 0)
      note("dao_place_backend_description(%d) is '%s', the header says 'unknown place kind'",
           kinds[i], s ? s : "(NULL)");
  }
})

/* ========================================================================= */
/* memory.h                                                                   */

ROW(alloc_null_ptr, "dao_alloc", "NULL out-param ptr", DAO_ERR_INVALID_ARGUMENT, "ptr",
    { BAD(dao_alloc(dao_place_cpu(), 64, NULL)); })

ROW(alloc_kind, "dao_alloc", "unknown kind (-1, 5)", DAO_ERR_INVALID_ARGUMENT, "kind", {
  void *p = SENTINEL;
  BAD(dao_alloc(place_of(-1, 0), 64, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_alloc(place_of(DAO_PLACE_KIND_COUNT, 0), 64, &p));
  expect_null(p, "ptr");
})

ROW(alloc_negative, "dao_alloc", "negative device (CPU -1, SIM INT_MIN)", DAO_ERR_INVALID_ARGUMENT,
    "negative", {
  void *p = SENTINEL;
  BAD(dao_alloc(place_of(DAO_PLACE_CPU, -1), 64, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_alloc(place_of(DAO_PLACE_SIM, INT_MIN), 64, &p));
  expect_null(p, "ptr");
})

ROW(alloc_absent, "dao_alloc", "device that does not exist (CPU 1, CUDA_PINNED 1)",
    DAO_ERR_NO_DEVICE, NULL, {
  void *p = SENTINEL;
  BAD(dao_alloc(place_of(DAO_PLACE_CPU, 1), 64, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_alloc(place_of(DAO_PLACE_CUDA_PINNED, 1), 64, &p));
  expect_null(p, "ptr");
})

ROW(alloc_overflow_cpu, "dao_alloc", "size overflow (SIZE_MAX, SIZE_MAX-255) on CPU",
    DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_alloc(dao_place_cpu(), SIZE_MAX, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_alloc(dao_place_cpu(), SIZE_MAX - 255, &p));
  expect_null(p, "ptr");
})

ROW(alloc_overflow_sim, "dao_alloc", "size overflow (SIZE_MAX, SIZE_MAX-255) on SIM",
    DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_alloc(dao_place_sim(0), SIZE_MAX, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_alloc(dao_place_sim(0), SIZE_MAX - 255, &p));
  expect_null(p, "ptr");
})

ROW(alloc_too_large_sim, "dao_alloc", "size larger than the SIM device (65 MiB of 64 MiB)",
    DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_alloc(dao_place_sim(1), 65 * MIB, &p));
  expect_null(p, "ptr");
})

ROW(free_kind, "dao_free", "unknown kind", DAO_ERR_INVALID_ARGUMENT, "kind",
    { BAD(dao_free(place_of(-1, 0), f->p_cpu)); BAD(dao_free(place_of(99, 0), f->p_cpu)); })

ROW(free_negative, "dao_free", "negative device", DAO_ERR_INVALID_ARGUMENT, "negative",
    { BAD(dao_free(place_of(DAO_PLACE_SIM, -1), f->p_sim0)); })

ROW(free_absent, "dao_free", "device that does not exist (SIM 3, CPU 1)", DAO_ERR_NO_DEVICE, NULL, {
  BAD(dao_free(dao_place_sim(SIM_ABSENT), f->p_sim0));
  BAD(dao_free(place_of(DAO_PLACE_CPU, 1), f->p_cpu));
})

ROW(free_foreign_cpu, "dao_free", "foreign pointer (static array) on CPU",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_free(dao_place_cpu(), named(f, g_foreign))); })

ROW(free_foreign_sim, "dao_free", "foreign pointer (static array) on SIM",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_free(dao_place_sim(0), named(f, g_foreign))); })

ROW(free_interior_cpu, "dao_free", "interior pointer (+256) on CPU", DAO_ERR_INVALID_POINTER, NULL,
    { BAD(dao_free(dao_place_cpu(), named(f, (char *)f->p_cpu + 256))); })

ROW(free_interior_odd_cpu, "dao_free", "interior pointer (+1) on CPU", DAO_ERR_INVALID_POINTER,
    NULL, { BAD(dao_free(dao_place_cpu(), named(f, (char *)f->p_cpu + 1))); })

ROW(free_interior_sim, "dao_free", "interior pointer (+256) on SIM", DAO_ERR_INVALID_POINTER, NULL,
    { BAD(dao_free(dao_place_sim(0), named(f, (char *)f->p_sim0 + 256))); })

ROW(free_double_cpu, "dao_free", "already freed pointer (double free) on CPU",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p = NULL;
  OK(dao_alloc(dao_place_cpu(), 1000, &p));
  OK(dao_free(dao_place_cpu(), p));
  OK(dao_allocator_trim(f->def_cpu, NULL));
  SNAP();
  BAD(dao_free(dao_place_cpu(), named(f, p)));
})

ROW(free_double_sim, "dao_free", "already freed pointer (double free) on SIM",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p = NULL;
  OK(dao_alloc(dao_place_sim(0), 1000, &p));
  OK(dao_free(dao_place_sim(0), p));
  SNAP();
  BAD(dao_free(dao_place_sim(0), named(f, p)));
})

ROW(free_wrong_place_sim, "dao_free", "wrong place (a SIM 0 pointer freed on SIM 1)",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_free(dao_place_sim(1), named(f, f->p_sim0))); })

ROW(free_wrong_place_cpu, "dao_free", "wrong place (a SIM 0 pointer freed on CPU)",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_free(dao_place_cpu(), named(f, f->p_sim0))); })

ROW(free_wrong_place_host, "dao_free", "wrong place (a CPU pointer freed on SIM 0)",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_free(dao_place_sim(0), named(f, f->p_cpu))); })

ROW(free_other_allocator, "dao_free", "pointer of an allocator object, not of dao_alloc",
    DAO_ERR_INVALID_POINTER, NULL, {
  BAD(dao_free(dao_place_cpu(), named(f, f->blk_buddy)));
  BAD(dao_free(dao_place_sim(0), named(f, f->blk_caching)));
})

ROW(used_null, "dao_used", "NULL out-param bytes", DAO_ERR_INVALID_ARGUMENT, "bytes",
    { BAD(dao_used(dao_place_cpu(), NULL)); })

ROW(used_kind, "dao_used", "unknown kind", DAO_ERR_INVALID_ARGUMENT, "kind", {
  size_t bytes = 0;
  BAD(dao_used(place_of(-1, 0), &bytes));
  BAD(dao_used(place_of(DAO_PLACE_KIND_COUNT, 0), &bytes));
})

ROW(used_negative, "dao_used", "negative device", DAO_ERR_INVALID_ARGUMENT, "negative", {
  size_t bytes = 0;
  BAD(dao_used(place_of(DAO_PLACE_SIM, -1), &bytes));
})

ROW(used_absent, "dao_used", "device that does not exist (SIM 3, CUDA n)", DAO_ERR_NO_DEVICE, NULL, {
  size_t bytes = 0;
  BAD(dao_used(dao_place_sim(SIM_ABSENT), &bytes));
  BAD(dao_used(dao_place_cuda(f->cuda_count), &bytes));
})

ROW(used_internal_null, "dao_used_internal", "NULL out-param bytes", DAO_ERR_INVALID_ARGUMENT,
    "bytes", { BAD(dao_used_internal(dao_place_cpu(), NULL)); })

ROW(used_internal_kind, "dao_used_internal", "unknown kind", DAO_ERR_INVALID_ARGUMENT, "kind", {
  size_t bytes = 0;
  BAD(dao_used_internal(place_of(-1, 0), &bytes));
  BAD(dao_used_internal(place_of(DAO_PLACE_KIND_COUNT, 0), &bytes));
})

ROW(used_internal_negative, "dao_used_internal", "negative device", DAO_ERR_INVALID_ARGUMENT,
    "negative", {
      size_t bytes = 0;
      BAD(dao_used_internal(place_of(DAO_PLACE_SIM, -1), &bytes));
    })

ROW(used_internal_absent, "dao_used_internal", "device that does not exist (SIM 3, CUDA n)",
    DAO_ERR_NO_DEVICE, NULL, {
      size_t bytes = 0;
      BAD(dao_used_internal(dao_place_sim(SIM_ABSENT), &bytes));
      BAD(dao_used_internal(dao_place_cuda(f->cuda_count), &bytes));
    })

ROW(place_allocator_null, "dao_place_allocator", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_place_allocator(dao_place_cpu(), NULL)); })

ROW(place_allocator_kind, "dao_place_allocator", "unknown kind", DAO_ERR_INVALID_ARGUMENT, "kind", {
  dao_allocator *a = NULL;
  BAD(dao_place_allocator(place_of(-1, 0), &a));
  BAD(dao_place_allocator(place_of(7, 0), &a));
})

ROW(place_allocator_negative, "dao_place_allocator", "negative device", DAO_ERR_INVALID_ARGUMENT,
    "negative", {
  dao_allocator *a = NULL;
  BAD(dao_place_allocator(place_of(DAO_PLACE_SIM, -2), &a));
})

ROW(place_allocator_absent, "dao_place_allocator", "device that does not exist (SIM 3)",
    DAO_ERR_NO_DEVICE, NULL, {
  dao_allocator *a = NULL;
  BAD(dao_place_allocator(dao_place_sim(SIM_ABSENT), &a));
})

ROW(default_config_kind, "dao_place_default_config", "unknown kind (-1, 5)",
    DAO_ERR_INVALID_ARGUMENT, "kind", {
  const char *s = NULL, *c = NULL;
  BAD(dao_place_default_config((dao_place_kind)-1, &s, &c));
  BAD(dao_place_default_config((dao_place_kind)DAO_PLACE_KIND_COUNT, &s, &c));
})

/* ========================================================================= */
/* sim.h                                                                      */

ROW(sim_configure_count, "dao_sim_configure", "count out of range (-1, 65)",
    DAO_ERR_INVALID_ARGUMENT, "count", {
  BAD(dao_sim_configure(-1, NULL));
  BAD(dao_sim_configure(DAO_SIM_MAX_DEVICES + 1, NULL));
})

ROW(sim_configure_zero_capacity, "dao_sim_configure", "a capacity of 0",
    DAO_ERR_INVALID_ARGUMENT, "capacity", {
  size_t caps[2] = {64 * MIB, 0};
  BAD(dao_sim_configure(2, caps));
})

ROW(sim_configure_in_use, "dao_sim_configure",
    "a different configuration after first use (1 x 32 MiB; 3 x default)",
    DAO_ERR_INVALID_STATE, "in use", {
  size_t caps[1] = {32 * MIB};
  BAD(dao_sim_configure(1, caps));
  BAD(dao_sim_configure(3, NULL));
})

ROW(sim_set_profile_null, "dao_sim_set_profile", "NULL profile", DAO_ERR_INVALID_ARGUMENT,
    "profile", { BAD(dao_sim_set_profile(NULL)); })

ROW(sim_set_profile_unknown, "dao_sim_set_profile", "an unknown profile ('', 'gtx480')",
    DAO_ERR_INVALID_ARGUMENT, "h200", {
  BAD(dao_sim_set_profile(""));
  BAD(dao_sim_set_profile("gtx480"));
})

ROW(sim_set_profile_in_use, "dao_sim_set_profile", "another profile after first use",
    DAO_ERR_INVALID_STATE, "in use", {
  const char *now = NULL;
  if (dao_sim_get_profile(&now) != DAO_OK) note("dao_sim_get_profile failed");
  BAD(dao_sim_set_profile(now != NULL && strcmp(now, "h200") == 0 ? "none" : "h200"));
})

ROW(sim_get_profile_null, "dao_sim_get_profile", "NULL out-param profile",
    DAO_ERR_INVALID_ARGUMENT, "profile", { BAD(dao_sim_get_profile(NULL)); })

ROW(sim_get_cost_null, "dao_sim_get_cost", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT, "out",
    { BAD(dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, NULL)); })

ROW(sim_get_cost_op, "dao_sim_get_cost", "unknown operation (-1, COUNT, 1000)",
    DAO_ERR_INVALID_ARGUMENT, "operation", {
  dao_sim_cost c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  BAD(dao_sim_get_cost(0, (dao_sim_op)-1, &c));
  BAD(dao_sim_get_cost(0, DAO_SIM_OP_COUNT, &c));
  BAD(dao_sim_get_cost(0, (dao_sim_op)1000, &c));
})

ROW(sim_get_cost_size, "dao_sim_get_cost", "struct_size 0 and one short",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_sim_cost c;
  memset(&c, 0, sizeof c);
  BAD(dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, &c));
  c.struct_size = sizeof c - 1;
  BAD(dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, &c));
})

ROW(sim_get_cost_device, "dao_sim_get_cost", "a SIM device that does not exist (-1, 64)",
    DAO_ERR_NO_DEVICE, "sim", {
  dao_sim_cost c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  BAD(dao_sim_get_cost(-1, DAO_SIM_OP_ALLOC, &c));
  BAD(dao_sim_get_cost(DAO_SIM_MAX_DEVICES, DAO_SIM_OP_ALLOC, &c));
})

ROW(sim_reset_costs_device, "dao_sim_reset_costs", "a SIM device that does not exist (-1, 64)",
    DAO_ERR_NO_DEVICE, "sim", {
  BAD(dao_sim_reset_costs(-1));
  BAD(dao_sim_reset_costs(DAO_SIM_MAX_DEVICES));
})

ROW(sim_op_name_unknown, "dao_sim_op_name", "unknown operations (-1, COUNT, INT_MAX)", DAO_OK,
    NULL, {
  const int values[3] = {-1, DAO_SIM_OP_COUNT, INT_MAX};
  int i;
  for (i = 0; i < 3; ++i) {
    const char *s = dao_sim_op_name((dao_sim_op)values[i]);
    if (s == NULL || strcmp(s, "unknown") != 0)
      note("dao_sim_op_name(%d) is '%s', expected 'unknown'", values[i], s ? s : "(NULL)");
  }
  for (i = 0; i < DAO_SIM_OP_COUNT; ++i) {
    const char *s = dao_sim_op_name((dao_sim_op)i);
    if (s == NULL || s[0] == '\0' || strcmp(s, "unknown") == 0)
      note("dao_sim_op_name(%d) does not name the operation", i);
  }
})

/* ========================================================================= */
/* allocator.h: dao_allocator_create                                          */

ROW(allocator_create_null, "dao_allocator_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_allocator_create(dao_place_cpu(), "buddy", NULL, NULL)); })

ROW(allocator_create_strategy, "dao_allocator_create", "unknown strategy 'nonesuch'",
    DAO_ERR_INVALID_ARGUMENT, "nonesuch", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "nonesuch", NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_empty_strategy, "dao_allocator_create", "empty strategy name",
    DAO_ERR_INVALID_ARGUMENT, "strategy", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "", NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_unknown_key, "dao_allocator_create", "bad config: unknown key 'bogus'",
    DAO_ERR_INVALID_ARGUMENT, "bogus", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "bogus=1", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_sim(0), "caching", "bogus=1", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_system_key, "dao_allocator_create",
    "bad config: a key for 'system', which has none", DAO_ERR_INVALID_ARGUMENT, "chunk_size", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "system", "chunk_size=1MiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_malformed, "dao_allocator_create",
    "bad config: malformed value (chunk_size=abc, chunk_size=, chunk_size=-1MiB)",
    DAO_ERR_INVALID_ARGUMENT, "chunk_size", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=abc", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=-1MiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_syntax, "dao_allocator_create",
    "bad config: malformed syntax ('chunk_size', '=1', 'a=1,,b=2')", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "=1", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "min_block=256,,chunk_size=1MiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_repeated, "dao_allocator_create", "bad config: repeated key",
    DAO_ERR_INVALID_ARGUMENT, "chunk_size", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB,chunk_size=2MiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_buddy_range, "dao_allocator_create",
    "bad config: buddy values out of range (min_block=300, chunk_size=3MiB, min_block=128)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "min_block=300", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=3MiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "min_block=128", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_caching_range, "dao_allocator_create",
    "bad config: caching values out of range (gc threshold 1.5, max_split_size 1MiB, "
    "roundup divisions 3, memory_fraction 2)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  const char *configs[4] = {"garbage_collection_threshold=1.5", "max_split_size=1MiB",
                            "roundup_power2_divisions=3", "memory_fraction=2"};
  int i;
  for (i = 0; i < 4; ++i) {
    dao_allocator *a = SENTINEL;
    BAD(dao_allocator_create(dao_place_sim(0), "caching", configs[i], &a));
    expect_unchanged_ptr(a, SENTINEL, "out");
    destroy_allocator_if_made(a);
  }
})

ROW(allocator_create_size_overflow, "dao_allocator_create",
    "bad config: a size that overflows (max_pool=99999999999TiB)", DAO_ERR_INVALID_ARGUMENT,
    "max_pool", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy", "max_pool=99999999999TiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_pool_cap, "dao_allocator_create",
    "bad config: initial_pool larger than max_pool", DAO_ERR_INVALID_ARGUMENT, "initial_pool", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cpu(), "buddy",
                           "chunk_size=1MiB,max_pool=2MiB,initial_pool=4MiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_kind, "dao_allocator_create", "unknown kind", DAO_ERR_INVALID_ARGUMENT, "kind", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(place_of(-1, 0), "buddy", NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(place_of(DAO_PLACE_KIND_COUNT, 0), NULL, NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_negative, "dao_allocator_create", "negative device",
    DAO_ERR_INVALID_ARGUMENT, "negative", {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(place_of(DAO_PLACE_SIM, -1), "caching", NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_absent, "dao_allocator_create", "device that does not exist (SIM 3, CUDA n)",
    DAO_ERR_NO_DEVICE, NULL, {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_sim(SIM_ABSENT), "caching", NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
  a = SENTINEL;
  BAD(dao_allocator_create(dao_place_cuda(f->cuda_count), "buddy", NULL, &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

ROW(allocator_create_initial_pool, "dao_allocator_create",
    "initial_pool larger than the device (1GiB on a 64 MiB SIM device)", DAO_ERR_OUT_OF_MEMORY,
    NULL, {
  dao_allocator *a = SENTINEL;
  BAD(dao_allocator_create(dao_place_sim(SIM_SCRATCH), "buddy", "chunk_size=1MiB,initial_pool=1GiB", &a));
  expect_unchanged_ptr(a, SENTINEL, "out");
  destroy_allocator_if_made(a);
})

/* ========================================================================= */
/* allocator.h: allocation                                                    */

ROW(allocator_alloc_null, "dao_allocator_alloc", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "allocator", {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(NULL, 64, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_fake, "dao_allocator_alloc", "garbage handle (wrong magic)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(fake(f), 64, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_misaligned, "dao_allocator_alloc", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(misaligned(f), 64, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_handle_type, "dao_allocator_alloc",
    "handle of another type (a recycle pool, a stream)", DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc((dao_allocator *)named(f, f->pool), 64, NULL, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc((dao_allocator *)named(f, f->s0), 64, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_null_ptr, "dao_allocator_alloc", "NULL out-param ptr",
    DAO_ERR_INVALID_ARGUMENT, "ptr", {
  BAD(dao_allocator_alloc(f->buddy, 64, NULL, NULL));
  BAD(dao_allocator_alloc(f->caching, 64, NULL, NULL));
  BAD(dao_allocator_alloc(f->system, 64, NULL, NULL));
})

ROW(allocator_alloc_fake_stream, "dao_allocator_alloc", "garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, 64, fake(f), &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->buddy, 64, fake(f), &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->system, 64, fake(f), &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_event_as_stream, "dao_allocator_alloc",
    "an event handle passed as the stream", DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, 64, (dao_stream)(void *)named(f, f->e0), &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_stream_place, "dao_allocator_alloc",
    "caching: a stream of another place (SIM 1, CPU)", DAO_ERR_INVALID_ARGUMENT, "stream", {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, 64, f->s1, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, 64, f->scpu, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_overflow_buddy, "dao_allocator_alloc",
    "buddy: size overflow (SIZE_MAX, SIZE_MAX-255, 2^63+1)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->buddy, SIZE_MAX, NULL, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->buddy, SIZE_MAX - 255, NULL, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->buddy, ((size_t)1 << 63) + 1, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_overflow_caching, "dao_allocator_alloc",
    "caching: size overflow (SIZE_MAX, SIZE_MAX-255, 2^63+1)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, SIZE_MAX, NULL, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, SIZE_MAX - 255, f->s0, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, ((size_t)1 << 63) + 1, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_overflow_system, "dao_allocator_alloc",
    "system: size overflow (SIZE_MAX, SIZE_MAX-255)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->system, SIZE_MAX, NULL, &p));
  expect_null(p, "ptr");
  p = SENTINEL;
  BAD(dao_allocator_alloc(f->system, SIZE_MAX - 255, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_device_full, "dao_allocator_alloc",
    "caching: larger than the device (65 MiB on 64 MiB)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  void *p = SENTINEL;
  BAD(dao_allocator_alloc(f->caching, 65 * MIB, NULL, &p));
  expect_null(p, "ptr");
})

ROW(allocator_alloc_max_pool_buddy, "dao_allocator_alloc", "buddy: past max_pool",
    DAO_ERR_OUT_OF_MEMORY, "max_pool", {
  dao_allocator *b = NULL;
  void *p = SENTINEL;
  OK(dao_allocator_create(dao_place_cpu(), "buddy", "chunk_size=1MiB,max_pool=2MiB", &b));
  if (b != NULL) {
    BAD(dao_allocator_alloc(b, 3 * MIB, NULL, &p));
    expect_null(p, "ptr");
    OK(dao_allocator_destroy(b));
  }
})

ROW(allocator_alloc_max_pool_caching, "dao_allocator_alloc", "caching: past max_pool",
    DAO_ERR_OUT_OF_MEMORY, "limit", {
  dao_allocator *c = NULL;
  void *p = SENTINEL;
  OK(dao_allocator_create(dao_place_sim(SIM_SCRATCH), "caching", "max_pool=4MiB", &c));
  if (c != NULL) {
    BAD(dao_allocator_alloc(c, 5 * MIB, NULL, &p));
    expect_null(p, "ptr");
    OK(dao_allocator_destroy(c));
  }
})

/* ========================================================================= */
/* allocator.h: free and usable size                                          */

ROW(allocator_free_null, "dao_allocator_free", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "allocator",
    { BAD(dao_allocator_free(NULL, f->blk_buddy)); BAD(dao_allocator_free(NULL, NULL)); })

ROW(allocator_free_fake, "dao_allocator_free", "garbage handle (wrong magic)",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_free(fake(f), f->blk_buddy)); })

ROW(allocator_free_misaligned, "dao_allocator_free", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_free(misaligned(f), f->blk_buddy)); })

ROW(allocator_free_foreign_buddy, "dao_allocator_free", "buddy: foreign pointer",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_allocator_free(f->buddy, named(f, g_foreign))); })

ROW(allocator_free_foreign_caching, "dao_allocator_free", "caching: foreign pointer",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_allocator_free(f->caching, named(f, g_foreign))); })

ROW(allocator_free_foreign_system, "dao_allocator_free", "system: foreign pointer",
    DAO_ERR_INVALID_POINTER, NULL, { BAD(dao_allocator_free(f->system, named(f, g_foreign))); })

ROW(allocator_free_wild, "dao_allocator_free",
    "wild pointers (0x1, 0x100, the last page of the address space)", DAO_ERR_INVALID_POINTER,
    NULL, {
  BAD(dao_allocator_free(f->buddy, (void *)(uintptr_t)1));
  BAD(dao_allocator_free(f->caching, (void *)(uintptr_t)0x100));
  BAD(dao_allocator_free(f->system, (void *)(UINTPTR_MAX - 4095)));
})

ROW(allocator_free_interior_buddy, "dao_allocator_free", "buddy: interior pointer (+256, +1)",
    DAO_ERR_INVALID_POINTER, NULL, {
  BAD(dao_allocator_free(f->buddy, named(f, (char *)f->blk_buddy + 256)));
  BAD(dao_allocator_free(f->buddy, named(f, (char *)f->blk_buddy + 1)));
})

ROW(allocator_free_interior_caching, "dao_allocator_free", "caching: interior pointer (+512, +1)",
    DAO_ERR_INVALID_POINTER, NULL, {
  BAD(dao_allocator_free(f->caching, named(f, (char *)f->blk_caching + 512)));
  BAD(dao_allocator_free(f->caching, named(f, (char *)f->blk_caching + 1)));
})

ROW(allocator_free_interior_system, "dao_allocator_free", "system: interior pointer (+256, +1)",
    DAO_ERR_INVALID_POINTER, NULL, {
  BAD(dao_allocator_free(f->system, named(f, (char *)f->blk_system + 256)));
  BAD(dao_allocator_free(f->system, named(f, (char *)f->blk_system + 1)));
})

ROW(allocator_free_double_buddy, "dao_allocator_free", "buddy: already freed pointer",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p = NULL;
  OK(dao_allocator_alloc(f->buddy, 1000, NULL, &p));
  OK(dao_allocator_free(f->buddy, p));
  SNAP();
  BAD(dao_allocator_free(f->buddy, named(f, p)));
})

ROW(allocator_free_double_caching, "dao_allocator_free", "caching: already freed pointer",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p = NULL;
  OK(dao_allocator_alloc(f->caching, 1000, NULL, &p));
  OK(dao_allocator_free(f->caching, p));
  SNAP();
  BAD(dao_allocator_free(f->caching, named(f, p)));
})

ROW(allocator_free_double_system, "dao_allocator_free", "system: already freed pointer",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p = NULL;
  OK(dao_allocator_alloc(f->system, 1000, NULL, &p));
  OK(dao_allocator_free(f->system, p));
  SNAP();
  BAD(dao_allocator_free(f->system, named(f, p)));
})

ROW(allocator_free_wrong_allocator, "dao_allocator_free",
    "pointer of another allocator (buddy <-> system, caching <-> SIM 0 default)",
    DAO_ERR_INVALID_POINTER, NULL, {
  BAD(dao_allocator_free(f->system, named(f, f->blk_buddy)));
  BAD(dao_allocator_free(f->buddy, named(f, f->blk_system)));
  BAD(dao_allocator_free(f->def_sim0, named(f, f->blk_caching)));
  BAD(dao_allocator_free(f->caching, named(f, f->p_sim0)));
  BAD(dao_allocator_free(f->buddy, named(f, f->p_cpu)));
})

ROW(usable_size_null, "dao_allocator_usable_size", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "allocator", {
  size_t n = 0;
  BAD(dao_allocator_usable_size(NULL, f->blk_buddy, &n));
})

ROW(usable_size_fake, "dao_allocator_usable_size", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  size_t n = 0;
  BAD(dao_allocator_usable_size(fake(f), f->blk_buddy, &n));
})

ROW(usable_size_null_out, "dao_allocator_usable_size", "NULL out-param size",
    DAO_ERR_INVALID_ARGUMENT, "size", { BAD(dao_allocator_usable_size(f->buddy, f->blk_buddy, NULL)); })

ROW(usable_size_foreign, "dao_allocator_usable_size", "foreign pointer (each strategy)",
    DAO_ERR_INVALID_POINTER, NULL, {
  size_t n = 0;
  BAD(dao_allocator_usable_size(f->buddy, named(f, g_foreign), &n));
  BAD(dao_allocator_usable_size(f->caching, g_foreign, &n));
  BAD(dao_allocator_usable_size(f->system, g_foreign, &n));
})

ROW(usable_size_interior, "dao_allocator_usable_size", "interior pointer (each strategy)",
    DAO_ERR_INVALID_POINTER, NULL, {
  size_t n = 0;
  BAD(dao_allocator_usable_size(f->buddy, (char *)f->blk_buddy + 256, &n));
  BAD(dao_allocator_usable_size(f->caching, (char *)f->blk_caching + 512, &n));
  BAD(dao_allocator_usable_size(f->system, (char *)f->blk_system + 256, &n));
})

ROW(usable_size_null_ptr, "dao_allocator_usable_size", "NULL pointer (not live)",
    DAO_ERR_INVALID_POINTER, NULL, {
  size_t n = 0;
  BAD(dao_allocator_usable_size(f->buddy, NULL, &n));
  BAD(dao_allocator_usable_size(f->caching, NULL, &n));
  BAD(dao_allocator_usable_size(f->system, NULL, &n));
})

ROW(usable_size_freed, "dao_allocator_usable_size", "already freed pointer (each strategy)",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p1 = NULL, *p2 = NULL, *p3 = NULL;
  size_t n = 0;
  OK(dao_allocator_alloc(f->buddy, 1000, NULL, &p1));
  OK(dao_allocator_free(f->buddy, p1));
  OK(dao_allocator_alloc(f->caching, 1000, NULL, &p2));
  OK(dao_allocator_free(f->caching, p2));
  OK(dao_allocator_alloc(f->system, 1000, NULL, &p3));
  OK(dao_allocator_free(f->system, p3));
  SNAP();
  BAD(dao_allocator_usable_size(f->buddy, p1, &n));
  BAD(dao_allocator_usable_size(f->caching, p2, &n));
  BAD(dao_allocator_usable_size(f->system, p3, &n));
})

ROW(usable_size_wrong_allocator, "dao_allocator_usable_size", "pointer of another allocator",
    DAO_ERR_INVALID_POINTER, NULL, {
  size_t n = 0;
  BAD(dao_allocator_usable_size(f->buddy, f->blk_system, &n));
  BAD(dao_allocator_usable_size(f->caching, f->p_sim0, &n));
})

/* ========================================================================= */
/* allocator.h: trim, statistics, info                                        */

ROW(trim_null, "dao_allocator_trim", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "allocator", {
  size_t released = 77;
  BAD(dao_allocator_trim(NULL, &released));
  if (released != 77) note("released was written on failure");
})

ROW(trim_fake, "dao_allocator_trim", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL,
    { BAD(dao_allocator_trim(fake(f), NULL)); })

ROW(trim_misaligned, "dao_allocator_trim", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_trim(misaligned(f), NULL)); })

ROW(get_stats_null, "dao_allocator_get_stats", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "allocator", {
  dao_allocator_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_allocator_get_stats(NULL, &s));
})

ROW(get_stats_fake, "dao_allocator_get_stats", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_allocator_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_allocator_get_stats(fake(f), &s));
})

ROW(get_stats_null_out, "dao_allocator_get_stats", "NULL out-param stats",
    DAO_ERR_INVALID_ARGUMENT, "stats", { BAD(dao_allocator_get_stats(f->caching, NULL)); })

ROW(get_stats_struct_size, "dao_allocator_get_stats",
    "wrong struct_size (0, 8, sizeof - 8)", DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  const size_t sizes[3] = {0, 8, sizeof(dao_allocator_stats) - 8};
  int i;
  for (i = 0; i < 3; ++i) {
    dao_allocator_stats s;
    size_t j;
    memset(&s, 0x5A, sizeof s);
    s.struct_size = sizes[i];
    BAD(dao_allocator_get_stats(f->buddy, &s));
    for (j = sizeof s.struct_size; j < sizeof s; ++j)
      if (((unsigned char *)&s)[j] != 0x5A) {
        note("struct_size %zu: the caller's struct was written on failure", sizes[i]);
        break;
      }
    if (s.struct_size != sizes[i]) note("struct_size was changed on failure");
  }
})

ROW(reset_peak_null, "dao_allocator_reset_peak_stats", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "allocator", { BAD(dao_allocator_reset_peak_stats(NULL)); })

ROW(reset_peak_fake, "dao_allocator_reset_peak_stats", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, { BAD(dao_allocator_reset_peak_stats(fake(f))); })

ROW(reset_accumulated_null, "dao_allocator_reset_accumulated_stats", "NULL handle",
    DAO_ERR_INVALID_ARGUMENT, "allocator", { BAD(dao_allocator_reset_accumulated_stats(NULL)); })

ROW(reset_accumulated_fake, "dao_allocator_reset_accumulated_stats", "garbage handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_reset_accumulated_stats(fake(f))); })

ROW(info_null, "dao_allocator_info", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "allocator", {
  dao_place p = place_of(99, 99);
  const char *s = SENTINEL, *c = SENTINEL;
  BAD(dao_allocator_info(NULL, &p, &s, &c));
  if (p.kind != (dao_place_kind)99 || p.device != 99 || s != SENTINEL || c != SENTINEL)
    note("out-params were written on failure");
})

ROW(info_fake, "dao_allocator_info", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  const char *s = SENTINEL;
  BAD(dao_allocator_info(fake(f), NULL, &s, NULL));
  if (s != SENTINEL) note("strategy was written on failure");
})

ROW(get_stat_null, "dao_allocator_get_stat", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "allocator", {
  dao_stat st;
  BAD(dao_allocator_get_stat(NULL, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &st));
})

ROW(get_stat_fake, "dao_allocator_get_stat", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_stat st;
  BAD(dao_allocator_get_stat(fake(f), DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &st));
})

ROW(get_stat_null_out, "dao_allocator_get_stat", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_allocator_get_stat(f->caching, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, NULL)); })

ROW(get_stat_metric, "dao_allocator_get_stat", "unknown metric (-1, 9, INT_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "metric", {
  dao_stat st;
  memset(&st, 0x5A, sizeof st);
  BAD(dao_allocator_get_stat(f->caching, (dao_stat_metric)-1, DAO_STAT_POOL_ALL, &st));
  BAD(dao_allocator_get_stat(f->caching, (dao_stat_metric)DAO_STAT_METRIC_COUNT, DAO_STAT_POOL_ALL,
                             &st));
  BAD(dao_allocator_get_stat(f->buddy, (dao_stat_metric)INT_MAX, DAO_STAT_POOL_ALL, &st));
  if (((unsigned char *)&st)[0] != 0x5A) note("out was written on failure");
})

ROW(get_stat_pool, "dao_allocator_get_stat", "unknown pool (-1, 3)", DAO_ERR_INVALID_ARGUMENT,
    "pool", {
  dao_stat st;
  BAD(dao_allocator_get_stat(f->caching, DAO_STAT_ALLOCATED_BYTES, (dao_stat_pool)-1, &st));
  BAD(dao_allocator_get_stat(f->caching, DAO_STAT_ALLOCATED_BYTES,
                             (dao_stat_pool)DAO_STAT_POOL_COUNT, &st));
})

ROW(get_stat_unsupported, "dao_allocator_get_stat",
    "a statistic the strategy does not keep (buddy/system: inactive split, small pool)",
    DAO_ERR_UNSUPPORTED, NULL, {
  dao_stat st;
  BAD(dao_allocator_get_stat(f->buddy, DAO_STAT_INACTIVE_SPLIT_BYTES, DAO_STAT_POOL_ALL, &st));
  BAD(dao_allocator_get_stat(f->buddy, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_SMALL, &st));
  BAD(dao_allocator_get_stat(f->system, DAO_STAT_INACTIVE_SPLIT_BYTES, DAO_STAT_POOL_ALL, &st));
})

/* ========================================================================= */
/* allocator.h: record_stream, snapshots, destroy                             */

ROW(record_stream_null, "dao_allocator_record_stream", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "allocator", { BAD(dao_allocator_record_stream(NULL, f->blk_caching, f->s0)); })

ROW(record_stream_fake, "dao_allocator_record_stream", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, { BAD(dao_allocator_record_stream(fake(f), f->blk_caching, f->s0)); })

ROW(record_stream_fake_stream, "dao_allocator_record_stream", "garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_record_stream(f->caching, f->blk_caching, fake(f))); })

ROW(record_stream_place, "dao_allocator_record_stream", "a stream of another place (SIM 1, CPU)",
    DAO_ERR_INVALID_ARGUMENT, "stream", {
  BAD(dao_allocator_record_stream(f->caching, f->blk_caching, f->s1));
  BAD(dao_allocator_record_stream(f->caching, f->blk_caching, f->scpu));
})

ROW(record_stream_foreign, "dao_allocator_record_stream",
    "pointer not live (foreign, interior, NULL)", DAO_ERR_INVALID_POINTER, NULL, {
  BAD(dao_allocator_record_stream(f->caching, g_foreign, f->s0));
  BAD(dao_allocator_record_stream(f->caching, (char *)f->blk_caching + 512, f->s0));
  BAD(dao_allocator_record_stream(f->caching, NULL, f->s0));
})

ROW(record_stream_freed, "dao_allocator_record_stream", "already freed pointer",
    DAO_ERR_INVALID_POINTER, NULL, {
  void *p = NULL;
  OK(dao_allocator_alloc(f->caching, 1000, NULL, &p));
  OK(dao_allocator_free(f->caching, p));
  SNAP();
  BAD(dao_allocator_record_stream(f->caching, named(f, p), f->s0));
})

ROW(record_stream_unsupported, "dao_allocator_record_stream",
    "a strategy that is not stream-ordered (buddy, system)", DAO_ERR_UNSUPPORTED, NULL, {
  BAD(dao_allocator_record_stream(f->buddy, f->blk_buddy, f->scpu));
  BAD(dao_allocator_record_stream(f->system, f->blk_system, f->scpu));
})

ROW(snapshot_null, "dao_allocator_snapshot", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "allocator", {
  dao_snapshot *s = NULL;
  BAD(dao_allocator_snapshot(NULL, &s));
})

ROW(snapshot_fake, "dao_allocator_snapshot", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_snapshot *s = NULL;
  BAD(dao_allocator_snapshot(fake(f), &s));
})

ROW(snapshot_null_out, "dao_allocator_snapshot", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_allocator_snapshot(f->caching, NULL)); })

ROW(snapshot_unsupported, "dao_allocator_snapshot", "a strategy without segments (buddy, system)",
    DAO_ERR_UNSUPPORTED, NULL, {
  dao_snapshot *s = NULL;
  BAD(dao_allocator_snapshot(f->buddy, &s));
  if (s != NULL) (void)dao_snapshot_destroy(s);
  s = NULL;
  BAD(dao_allocator_snapshot(f->system, &s));
  if (s != NULL) (void)dao_snapshot_destroy(s);
})

ROW(segment_count_null, "dao_snapshot_segment_count", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "snapshot", {
  size_t n = 0;
  BAD(dao_snapshot_segment_count(NULL, &n));
})

ROW(segment_count_fake, "dao_snapshot_segment_count", "garbage handle (wrong magic)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  size_t n = 12345;
  BAD(dao_snapshot_segment_count(fake(f), &n));
  if (n != 12345) note("count was written (%zu) for a garbage snapshot handle", n);
})

ROW(segment_count_handle_type, "dao_snapshot_segment_count", "handle of another type (an allocator)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  size_t n = 12345;
  BAD(dao_snapshot_segment_count((const dao_snapshot *)named(f, f->caching), &n));
  if (n != 12345) note("count was written (%zu) for an allocator passed as a snapshot", n);
})

ROW(segment_count_null_out, "dao_snapshot_segment_count", "NULL out-param count",
    DAO_ERR_INVALID_ARGUMENT, "count", { BAD(dao_snapshot_segment_count(f->snap, NULL)); })

ROW(segment_null, "dao_snapshot_segment", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "snapshot", {
  dao_segment_info s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_snapshot_segment(NULL, 0, &s));
})

ROW(segment_fake, "dao_snapshot_segment", "garbage handle (wrong magic)", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  dao_segment_info s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_snapshot_segment(fake(f), 0, &s));
})

ROW(segment_handle_type, "dao_snapshot_segment", "handle of another type (an allocator)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_segment_info s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_snapshot_segment((const dao_snapshot *)named(f, f->caching), 0, &s));
})

ROW(segment_index, "dao_snapshot_segment", "index out of range (count, SIZE_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "index", {
  dao_segment_info s;
  size_t n = 0;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  OK(dao_snapshot_segment_count(f->snap, &n));
  BAD(dao_snapshot_segment(f->snap, n, &s));
  BAD(dao_snapshot_segment(f->snap, SIZE_MAX, &s));
})

ROW(segment_null_info, "dao_snapshot_segment", "NULL out-param info", DAO_ERR_INVALID_ARGUMENT,
    "info", { BAD(dao_snapshot_segment(f->snap, 0, NULL)); })

ROW(segment_struct_size, "dao_snapshot_segment", "wrong struct_size (0, sizeof - 8)",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_segment_info s;
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  BAD(dao_snapshot_segment(f->snap, 0, &s));
  s.struct_size = sizeof s - 8;
  BAD(dao_snapshot_segment(f->snap, 0, &s));
  if (s.address != (uintptr_t)0x5A5A5A5A5A5A5A5Aull) note("info was written on failure");
})

ROW(block_null, "dao_snapshot_block", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "snapshot", {
  dao_block_info b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  BAD(dao_snapshot_block(NULL, 0, 0, &b));
})

ROW(block_fake, "dao_snapshot_block", "garbage handle (wrong magic)", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  dao_block_info b;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  BAD(dao_snapshot_block(fake(f), 0, 0, &b));
})

ROW(block_segment_index, "dao_snapshot_block", "segment out of range (count, SIZE_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "segment", {
  dao_block_info b;
  size_t n = 0;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  OK(dao_snapshot_segment_count(f->snap, &n));
  BAD(dao_snapshot_block(f->snap, n, 0, &b));
  BAD(dao_snapshot_block(f->snap, SIZE_MAX, 0, &b));
})

ROW(block_index, "dao_snapshot_block", "block index out of range (count, SIZE_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "block", {
  dao_block_info b;
  dao_segment_info s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  memset(&b, 0, sizeof b);
  b.struct_size = sizeof b;
  OK(dao_snapshot_segment(f->snap, 0, &s));
  BAD(dao_snapshot_block(f->snap, 0, s.block_count, &b));
  BAD(dao_snapshot_block(f->snap, 0, SIZE_MAX, &b));
})

ROW(block_null_info, "dao_snapshot_block", "NULL out-param info", DAO_ERR_INVALID_ARGUMENT, "info",
    { BAD(dao_snapshot_block(f->snap, 0, 0, NULL)); })

ROW(block_struct_size, "dao_snapshot_block", "wrong struct_size (0, sizeof - 8)",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_block_info b;
  memset(&b, 0x5A, sizeof b);
  b.struct_size = 0;
  BAD(dao_snapshot_block(f->snap, 0, 0, &b));
  b.struct_size = sizeof b - 8;
  BAD(dao_snapshot_block(f->snap, 0, 0, &b));
  if (b.address != (uintptr_t)0x5A5A5A5A5A5A5A5Aull) note("info was written on failure");
})

ROW(snapshot_destroy_fake, "dao_snapshot_destroy", "garbage handle (wrong magic)",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_snapshot_destroy(fake(f))); })

ROW(snapshot_destroy_handle_type, "dao_snapshot_destroy",
    "handle of another type (an allocator)", DAO_ERR_INVALID_ARGUMENT, NULL,
    { BAD(dao_snapshot_destroy((dao_snapshot *)(void *)named(f, f->system))); })

ROW(snapshot_json_null, "dao_allocator_snapshot_json", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "allocator", {
  size_t n = 0;
  BAD(dao_allocator_snapshot_json(NULL, NULL, 0, &n));
})

ROW(snapshot_json_fake, "dao_allocator_snapshot_json", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  size_t n = 0;
  BAD(dao_allocator_snapshot_json(fake(f), NULL, 0, &n));
})

ROW(snapshot_json_null_length, "dao_allocator_snapshot_json", "NULL out-param length",
    DAO_ERR_INVALID_ARGUMENT, "length", {
  char buffer[16];
  BAD(dao_allocator_snapshot_json(f->caching, buffer, sizeof buffer, NULL));
})

ROW(snapshot_json_null_buffer, "dao_allocator_snapshot_json", "NULL buffer with capacity > 0",
    DAO_ERR_INVALID_ARGUMENT, "buffer", {
  size_t n = 12345;
  BAD(dao_allocator_snapshot_json(f->caching, NULL, 100, &n));
  if (n != 12345) note("length was written on failure");
})

ROW(snapshot_json_unsupported, "dao_allocator_snapshot_json",
    "a strategy without segments (buddy, system)", DAO_ERR_UNSUPPORTED, NULL, {
  char buffer[16];
  size_t n = 0;
  memset(buffer, 0x5A, sizeof buffer);
  BAD(dao_allocator_snapshot_json(f->buddy, buffer, sizeof buffer, &n));
  BAD(dao_allocator_snapshot_json(f->system, NULL, 0, &n));
  if ((unsigned char)buffer[0] != 0x5A) note("buffer was written on failure");
})

ROW(allocator_destroy_null, "dao_allocator_destroy", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "allocator", { BAD(dao_allocator_destroy(NULL)); })

ROW(allocator_destroy_fake, "dao_allocator_destroy", "garbage handle (wrong magic)",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_destroy(fake(f))); })

ROW(allocator_destroy_misaligned, "dao_allocator_destroy", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_allocator_destroy(misaligned(f))); })

ROW(allocator_destroy_handle_type, "dao_allocator_destroy",
    "handle of another type (tiered pool, collection)", DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_allocator_destroy((dao_allocator *)named(f, f->tp)));
  BAD(dao_allocator_destroy((dao_allocator *)named(f, f->coll)));
})

ROW(allocator_destroy_default, "dao_allocator_destroy", "a place default allocator (CPU, SIM 0)",
    DAO_ERR_INVALID_ARGUMENT, "default", {
  BAD(dao_allocator_destroy(f->def_cpu));
  BAD(dao_allocator_destroy(f->def_sim0));
})

ROW(allocator_destroy_busy, "dao_allocator_destroy", "live blocks (each strategy)", DAO_ERR_BUSY,
    "1 block", {
  BAD(dao_allocator_destroy(f->buddy));
  BAD(dao_allocator_destroy(f->caching));
  BAD(dao_allocator_destroy(f->system));
})

/* ========================================================================= */
/* stream.h: streams                                                          */

ROW(stream_create_null, "dao_stream_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT, "out",
    { BAD(dao_stream_create(dao_place_sim(0), NULL)); })

ROW(stream_create_kind, "dao_stream_create", "unknown kind", DAO_ERR_INVALID_ARGUMENT, "kind", {
  dao_stream s = SENTINEL;
  BAD(dao_stream_create(place_of(-1, 0), &s));
  expect_unchanged_ptr(s, SENTINEL, "out");
  BAD(dao_stream_create(place_of(DAO_PLACE_KIND_COUNT, 0), &s));
  expect_unchanged_ptr(s, SENTINEL, "out");
})

ROW(stream_create_negative, "dao_stream_create", "negative device", DAO_ERR_INVALID_ARGUMENT,
    "negative", {
  dao_stream s = SENTINEL;
  BAD(dao_stream_create(place_of(DAO_PLACE_SIM, -1), &s));
  expect_unchanged_ptr(s, SENTINEL, "out");
})

ROW(stream_create_absent, "dao_stream_create", "device that does not exist (SIM 3, CUDA n)",
    DAO_ERR_NO_DEVICE, NULL, {
  dao_stream s = SENTINEL;
  BAD(dao_stream_create(dao_place_sim(SIM_ABSENT), &s));
  expect_unchanged_ptr(s, SENTINEL, "out");
  BAD(dao_stream_create(dao_place_cuda(f->cuda_count), &s));
  expect_unchanged_ptr(s, SENTINEL, "out");
})

ROW(stream_wrap_null, "dao_stream_wrap", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT, "out",
    { BAD(dao_stream_wrap(dao_place_cuda(0), NULL, NULL)); })

ROW(stream_wrap_unsupported, "dao_stream_wrap", "a place without native streams (CPU, SIM)",
    DAO_ERR_UNSUPPORTED, NULL, {
  dao_stream s = NULL;
  BAD(dao_stream_wrap(dao_place_cpu(), NULL, &s));
  BAD(dao_stream_wrap(dao_place_sim(0), g_foreign, &s));
})

ROW(stream_wrap_kind, "dao_stream_wrap", "unknown kind, negative device", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  dao_stream s = NULL;
  BAD(dao_stream_wrap(place_of(-1, 0), NULL, &s));
  BAD(dao_stream_wrap(place_of(DAO_PLACE_CUDA, -1), NULL, &s));
})

ROW(stream_wrap_absent, "dao_stream_wrap", "device that does not exist (CUDA n)", DAO_ERR_NO_DEVICE,
    NULL, {
  dao_stream s = NULL;
  BAD(dao_stream_wrap(dao_place_cuda(f->cuda_count), NULL, &s));
})

ROW(stream_native_null, "dao_stream_native", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "stream", {
  void *n = NULL;
  BAD(dao_stream_native(NULL, &n));
})

ROW(stream_native_fake, "dao_stream_native", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *n = NULL;
  BAD(dao_stream_native(fake(f), &n));
})

ROW(stream_native_misaligned, "dao_stream_native", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *n = NULL;
  BAD(dao_stream_native(misaligned(f), &n));
})

ROW(stream_native_null_out, "dao_stream_native", "NULL out-param native", DAO_ERR_INVALID_ARGUMENT,
    "native", { BAD(dao_stream_native(f->s0, NULL)); })

ROW(stream_place_null, "dao_stream_place", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "stream", {
  dao_place p;
  BAD(dao_stream_place(NULL, &p));
})

ROW(stream_place_fake, "dao_stream_place", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_place p;
  BAD(dao_stream_place(fake(f), &p));
})

ROW(stream_place_null_out, "dao_stream_place", "NULL out-param place", DAO_ERR_INVALID_ARGUMENT,
    "place", { BAD(dao_stream_place(f->s0, NULL)); })

ROW(stream_synchronize_fake, "dao_stream_synchronize", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, { BAD(dao_stream_synchronize(fake(f))); })

ROW(stream_synchronize_misaligned, "dao_stream_synchronize", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_stream_synchronize(misaligned(f))); })

ROW(stream_synchronize_event, "dao_stream_synchronize", "an event handle passed as a stream",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_stream_synchronize((dao_stream)(void *)named(f, f->e0))); })

ROW(stream_synchronize_self, "dao_stream_synchronize",
    "called from a host function on its own stream (would wait for itself)", DAO_ERR_INVALID_STATE,
    NULL, {
  OK(dao_launch_host_func(f->s0, synchronize_own_stream, f));
  OK(dao_stream_synchronize(f->s0));
})

ROW(stream_query_null_out, "dao_stream_query", "NULL out-param idle", DAO_ERR_INVALID_ARGUMENT,
    "idle", { BAD(dao_stream_query(f->s0, NULL)); BAD(dao_stream_query(NULL, NULL)); })

ROW(stream_query_fake, "dao_stream_query", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  int idle = 7;
  BAD(dao_stream_query(fake(f), &idle));
  if (idle != 7) note("idle was written on failure");
})

ROW(stream_wait_event_null_event, "dao_stream_wait_event", "NULL event", DAO_ERR_INVALID_ARGUMENT,
    "event", { BAD(dao_stream_wait_event(f->s0, NULL)); BAD(dao_stream_wait_event(NULL, NULL)); })

ROW(stream_wait_event_fake_event, "dao_stream_wait_event", "garbage event handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_stream_wait_event(f->s0, fake(f)));
  BAD(dao_stream_wait_event(NULL, fake(f)));
})

ROW(stream_wait_event_fake_stream, "dao_stream_wait_event", "garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_stream_wait_event(fake(f), f->e0)); })

ROW(stream_wait_event_place, "dao_stream_wait_event",
    "event of another place (CPU event on a SIM stream, SIM event on a CPU stream)",
    DAO_ERR_INVALID_ARGUMENT, "place", {
  BAD(dao_stream_wait_event(f->s0, f->ecpu));
  BAD(dao_stream_wait_event(f->scpu, f->e0));
})

ROW(stream_destroy_null, "dao_stream_destroy", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "stream",
    { BAD(dao_stream_destroy(NULL)); })

ROW(stream_destroy_fake, "dao_stream_destroy", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL,
    { BAD(dao_stream_destroy(fake(f))); })

ROW(stream_destroy_misaligned, "dao_stream_destroy", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_stream_destroy(misaligned(f))); })

ROW(stream_destroy_event, "dao_stream_destroy", "an event handle passed as a stream",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_stream_destroy((dao_stream)(void *)named(f, f->e0))); })

ROW(stream_destroy_self, "dao_stream_destroy",
    "called from a host function on its own stream (nothing destroyed)", DAO_ERR_INVALID_STATE,
    NULL, {
  OK(dao_launch_host_func(f->s1, destroy_own_stream, f));
  OK(dao_stream_synchronize(f->s1));
})

/* ========================================================================= */
/* stream.h: events, copies, host functions                                   */

ROW(event_create_null, "dao_event_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT, "out",
    { BAD(dao_event_create(dao_place_sim(0), NULL)); })

ROW(event_create_kind, "dao_event_create", "unknown kind, negative device",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_event e = NULL;
  BAD(dao_event_create(place_of(-1, 0), &e));
  BAD(dao_event_create(place_of(DAO_PLACE_SIM, -1), &e));
})

ROW(event_create_absent, "dao_event_create", "device that does not exist (SIM 3, CUDA n)",
    DAO_ERR_NO_DEVICE, NULL, {
  dao_event e = NULL;
  BAD(dao_event_create(dao_place_sim(SIM_ABSENT), &e));
  BAD(dao_event_create(dao_place_cuda(f->cuda_count), &e));
})

ROW(event_record_null, "dao_event_record", "NULL event", DAO_ERR_INVALID_ARGUMENT, "event",
    { BAD(dao_event_record(NULL, f->s0)); BAD(dao_event_record(NULL, NULL)); })

ROW(event_record_fake, "dao_event_record", "garbage event handle", DAO_ERR_INVALID_ARGUMENT, NULL,
    { BAD(dao_event_record(fake(f), f->s0)); BAD(dao_event_record(fake(f), NULL)); })

ROW(event_record_fake_stream, "dao_event_record", "garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_event_record(f->e0, fake(f))); })

ROW(event_record_stream_type, "dao_event_record", "an event handle passed as the stream",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_event_record(f->e0, (dao_stream)(void *)named(f, f->e1))); })

ROW(event_record_place, "dao_event_record",
    "stream of another place (SIM 1 event on SIM 0 stream, CPU event on SIM stream)",
    DAO_ERR_INVALID_ARGUMENT, "place", {
  BAD(dao_event_record(f->e1, f->s0));
  BAD(dao_event_record(f->ecpu, f->s0));
})

ROW(event_query_null, "dao_event_query", "NULL event", DAO_ERR_INVALID_ARGUMENT, "event", {
  int done = 0;
  BAD(dao_event_query(NULL, &done));
})

ROW(event_query_fake, "dao_event_query", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  int done = 7;
  BAD(dao_event_query(fake(f), &done));
  if (done != 7) note("done was written on failure");
})

ROW(event_query_stream, "dao_event_query", "a stream handle passed as an event",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  int done = 7;
  BAD(dao_event_query((dao_event)(void *)named(f, f->s0), &done));
})

ROW(event_query_null_out, "dao_event_query", "NULL out-param done", DAO_ERR_INVALID_ARGUMENT,
    "done", { BAD(dao_event_query(f->e0, NULL)); })

ROW(event_synchronize_null, "dao_event_synchronize", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "event", { BAD(dao_event_synchronize(NULL)); })

ROW(event_synchronize_fake, "dao_event_synchronize", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, { BAD(dao_event_synchronize(fake(f))); })

ROW(event_synchronize_misaligned, "dao_event_synchronize", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_event_synchronize(misaligned(f))); })

ROW(event_destroy_null, "dao_event_destroy", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "event",
    { BAD(dao_event_destroy(NULL)); })

ROW(event_destroy_fake, "dao_event_destroy", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL,
    { BAD(dao_event_destroy(fake(f))); })

ROW(event_destroy_stream, "dao_event_destroy", "a stream handle passed as an event",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_event_destroy((dao_event)(void *)named(f, f->s1))); })

ROW(memcpy_null_dst, "dao_memcpy_async", "NULL dst with bytes > 0 (default stream, SIM stream)",
    DAO_ERR_INVALID_ARGUMENT, "dst", {
  BAD(dao_memcpy_async(NULL, f->p_cpu, 64, NULL));
  BAD(dao_memcpy_async(NULL, f->p_sim0, 64, f->s0));
})

ROW(memcpy_null_src, "dao_memcpy_async", "NULL src with bytes > 0 (default stream, SIM stream)",
    DAO_ERR_INVALID_ARGUMENT, "src", {
  BAD(dao_memcpy_async(f->p_cpu, NULL, 64, NULL));
  BAD(dao_memcpy_async(f->p_sim0, NULL, 64, f->s0));
})

ROW(memcpy_overlap, "dao_memcpy_async", "overlapping ranges (same, +1, -64)",
    DAO_ERR_INVALID_ARGUMENT, "overlap", {
  char *p = (char *)f->p_cpu;
  BAD(dao_memcpy_async(p, p, 64, NULL));
  BAD(dao_memcpy_async(p + 1, p, 64, NULL));
  BAD(dao_memcpy_async((char *)f->p_sim0, (char *)f->p_sim0 + 64, 128, f->s0));
})

ROW(memcpy_wrap, "dao_memcpy_async", "size overflow: ranges past the end of the address space",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_memcpy_async(f->p_cpu, (void *)(UINTPTR_MAX - 15), 64, NULL));
  BAD(dao_memcpy_async((void *)(UINTPTR_MAX - 15), f->p_cpu, 64, f->s0));
  BAD(dao_memcpy_async(f->p_cpu, f->p_sim0, SIZE_MAX, f->s0));
})

ROW(memcpy_fake_stream, "dao_memcpy_async", "garbage stream handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  char buffer[64];
  memset(buffer, 0x5A, sizeof buffer);
  BAD(dao_memcpy_async(buffer, f->p_cpu, sizeof buffer, fake(f)));
  if ((unsigned char)buffer[0] != 0x5A) note("the copy was made");
})

ROW(launch_null_fn, "dao_launch_host_func", "NULL fn (default, SIM and CPU stream)",
    DAO_ERR_INVALID_ARGUMENT, "fn", {
  BAD(dao_launch_host_func(NULL, NULL, NULL));
  BAD(dao_launch_host_func(f->s0, NULL, NULL));
  BAD(dao_launch_host_func(f->scpu, NULL, NULL));
})

ROW(launch_fake_stream, "dao_launch_host_func", "garbage stream handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  g_host_runs = 0;
  BAD(dao_launch_host_func(fake(f), host_fn, NULL));
  if (g_host_runs != 0) note("the host function ran");
})

/* ========================================================================= */
/* recycle.h: pools                                                           */

ROW(recycle_create_null, "dao_recycle_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, NULL)); })

ROW(recycle_create_element_size, "dao_recycle_create", "element_size 0", DAO_ERR_INVALID_ARGUMENT,
    "element_size", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 0, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_ndim, "dao_recycle_create", "ndim out of range (0, -1, 9)",
    DAO_ERR_INVALID_ARGUMENT, "ndim", {
  size_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 0, shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
  p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, -1, shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
  p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, DAO_RECYCLE_MAX_DIMS + 1, shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_null_shape, "dao_recycle_create", "NULL shape", DAO_ERR_INVALID_ARGUMENT,
    "shape", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 2, NULL, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_zero_extent, "dao_recycle_create", "an extent of 0", DAO_ERR_INVALID_ARGUMENT,
    "shape", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_zero_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_overflow, "dao_recycle_create",
    "size overflow (element_size x shape past SIZE_MAX)", DAO_ERR_INVALID_ARGUMENT, "overflow", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_big_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
  p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), SIZE_MAX, 1, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_max_buffers, "dao_recycle_create", "max_buffers out of range (0, 2^20+1)",
    DAO_ERR_INVALID_ARGUMENT, "max_buffers", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, 0, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
  p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, ((size_t)1 << 20) + 1, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_preallocate, "dao_recycle_create", "preallocate > max_buffers",
    DAO_ERR_INVALID_ARGUMENT, "preallocate", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, 2, 3, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_config, "dao_recycle_create",
    "bad config (unknown key, spin=abc, spin=-1, malformed)", DAO_ERR_INVALID_ARGUMENT, NULL, {
  const char *configs[4] = {"bogus=1", "spin=abc", "spin=-1", "name"};
  int i;
  for (i = 0; i < 4; ++i) {
    dao_recycle_pool *p = SENTINEL;
    BAD(dao_recycle_create(dao_place_cpu(), 4, 2, g_shape, 2, 0, configs[i], &p));
    expect_unchanged_ptr(p, SENTINEL, "out");
    destroy_if_made(p);
  }
})

ROW(recycle_create_kind, "dao_recycle_create", "unknown kind, negative device",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(place_of(-1, 0), 4, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
  p = SENTINEL;
  BAD(dao_recycle_create(place_of(DAO_PLACE_SIM, -1), 4, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_absent, "dao_recycle_create", "device that does not exist (SIM 3)",
    DAO_ERR_NO_DEVICE, NULL, {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_recycle_create(dao_place_sim(SIM_ABSENT), 4, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_create_oom, "dao_recycle_create",
    "preallocated buffers that do not fit (8 x 16 MiB on 64 MiB)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  size_t shape[1] = {16 * MIB}, used_before = 0, used_after = 0;
  dao_recycle_pool *p = SENTINEL;
  OK(dao_used(dao_place_sim(SIM_SCRATCH), &used_before));
  BAD(dao_recycle_create(dao_place_sim(SIM_SCRATCH), 1, 1, shape, 8, 8, NULL, &p));
  OK(dao_used(dao_place_sim(SIM_SCRATCH), &used_after));
  if (used_after != used_before)
    note("memory was kept after the failed create: %zu bytes used, %zu before", used_after,
         used_before);
  expect_unchanged_ptr(p, SENTINEL, "out");
  destroy_if_made(p);
})

ROW(recycle_acquire_null, "dao_recycle_acquire", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "pool", {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_acquire(NULL, 0, &b));
  expect_null(b, "out");
})

ROW(recycle_acquire_fake, "dao_recycle_acquire", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_acquire(fake(f), 0, &b));
  expect_null(b, "out");
})

ROW(recycle_acquire_misaligned, "dao_recycle_acquire", "garbage handle at an odd address",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_acquire(misaligned(f), 0, &b));
  expect_null(b, "out");
})

ROW(recycle_acquire_handle_type, "dao_recycle_acquire",
    "handle of another type (collection, allocator)", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_acquire((dao_recycle_pool *)named(f, f->coll), 0, &b));
  expect_null(b, "out");
  b = SENTINEL;
  BAD(dao_recycle_acquire((dao_recycle_pool *)named(f, f->buddy), 0, &b));
  expect_null(b, "out");
})

ROW(recycle_acquire_null_out, "dao_recycle_acquire", "NULL out-param out",
    DAO_ERR_INVALID_ARGUMENT, "out", { BAD(dao_recycle_acquire(f->pool, 0, NULL)); })

ROW(recycle_acquire_nan, "dao_recycle_acquire", "timeout NaN", DAO_ERR_INVALID_ARGUMENT, "timeout", {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_acquire(f->pool, NAN, &b));
  expect_null(b, "out");
})

ROW(recycle_submit_null_pool, "dao_recycle_submit", "NULL pool", DAO_ERR_INVALID_ARGUMENT, "pool",
    { BAD(dao_recycle_submit(NULL, f->held)); })

ROW(recycle_submit_fake_pool, "dao_recycle_submit", "garbage pool handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, { BAD(dao_recycle_submit(fake(f), f->held)); })

ROW(recycle_submit_null_buffer, "dao_recycle_submit", "NULL buffer", DAO_ERR_INVALID_ARGUMENT,
    "buffer", { BAD(dao_recycle_submit(f->pool, NULL)); })

ROW(recycle_submit_fake_buffer, "dao_recycle_submit", "garbage buffer handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_recycle_submit(f->pool, fake(f)));
  BAD(dao_recycle_submit(f->pool, misaligned(f)));
})

ROW(recycle_submit_other_pool, "dao_recycle_submit", "buffer of another pool",
    DAO_ERR_INVALID_ARGUMENT, "pool", {
  BAD(dao_recycle_submit(f->pool, f->held2));
  BAD(dao_recycle_submit(f->pool2, f->held));
  BAD(dao_recycle_submit(f->coll_a, f->held));
})

ROW(recycle_submit_free, "dao_recycle_submit", "buffer already released (free)",
    DAO_ERR_INVALID_STATE, "free", { BAD(dao_recycle_submit(f->pool, named(f, f->b_free))); })

ROW(recycle_submit_queued, "dao_recycle_submit", "buffer already queued", DAO_ERR_INVALID_STATE,
    "queued", { BAD(dao_recycle_submit(f->pool, named(f, f->b_queued))); })

ROW(recycle_take_null, "dao_recycle_take", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "pool", {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_take(NULL, 0, &b));
  expect_null(b, "out");
})

ROW(recycle_take_fake, "dao_recycle_take", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_take(fake(f), 0, &b));
  expect_null(b, "out");
})

ROW(recycle_take_null_out, "dao_recycle_take", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_recycle_take(f->pool, 0, NULL)); })

ROW(recycle_take_nan, "dao_recycle_take", "timeout NaN", DAO_ERR_INVALID_ARGUMENT, "timeout", {
  dao_buffer *b = SENTINEL;
  BAD(dao_recycle_take(f->pool, NAN, &b));
  expect_null(b, "out");
})

ROW(recycle_close_null, "dao_recycle_close", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "pool",
    { BAD(dao_recycle_close(NULL)); })

ROW(recycle_close_fake, "dao_recycle_close", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_recycle_close(fake(f)));
  BAD(dao_recycle_close(misaligned(f)));
})

ROW(recycle_get_stats_null, "dao_recycle_get_stats", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "pool", {
  dao_recycle_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_recycle_get_stats(NULL, &s));
})

ROW(recycle_get_stats_fake, "dao_recycle_get_stats", "garbage handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  dao_recycle_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_recycle_get_stats(fake(f), &s));
})

ROW(recycle_get_stats_null_out, "dao_recycle_get_stats", "NULL out-param stats",
    DAO_ERR_INVALID_ARGUMENT, "stats", { BAD(dao_recycle_get_stats(f->pool, NULL)); })

ROW(recycle_get_stats_struct_size, "dao_recycle_get_stats", "wrong struct_size (0, sizeof - 8)",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_recycle_stats s;
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  BAD(dao_recycle_get_stats(f->pool, &s));
  s.struct_size = sizeof s - 8;
  BAD(dao_recycle_get_stats(f->pool, &s));
  if (s.created != 0x5A5A5A5A5A5A5A5Aull) note("stats was written on failure");
})

ROW(recycle_destroy_null, "dao_recycle_destroy", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "pool",
    { BAD(dao_recycle_destroy(NULL)); })

ROW(recycle_destroy_fake, "dao_recycle_destroy", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_recycle_destroy(fake(f)));
  BAD(dao_recycle_destroy(misaligned(f)));
})

ROW(recycle_destroy_in_collection, "dao_recycle_destroy", "a pool that belongs to a collection",
    DAO_ERR_INVALID_ARGUMENT, "collection", { BAD(dao_recycle_destroy(f->coll_a)); })

ROW(recycle_destroy_busy, "dao_recycle_destroy", "buffers out (held, queued)", DAO_ERR_BUSY,
    "still out", { BAD(dao_recycle_destroy(f->pool)); BAD(dao_recycle_destroy(f->pool2)); })

/* ========================================================================= */
/* recycle.h: buffers                                                         */

ROW(buffer_retain_null, "dao_buffer_retain", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer",
    { BAD(dao_buffer_retain(NULL)); })

ROW(buffer_retain_fake, "dao_buffer_retain", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_buffer_retain(fake(f)));
  BAD(dao_buffer_retain(misaligned(f)));
})

ROW(buffer_retain_free, "dao_buffer_retain", "a free buffer (all references released)",
    DAO_ERR_INVALID_STATE, "free", { BAD(dao_buffer_retain(named(f, f->b_free))); })

ROW(buffer_retain_queued, "dao_buffer_retain", "a queued buffer with only the queue's reference",
    DAO_ERR_INVALID_STATE, "queued", { BAD(dao_buffer_retain(named(f, f->b_queued))); })

ROW(buffer_release_null, "dao_buffer_release", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer",
    { BAD(dao_buffer_release(NULL)); })

ROW(buffer_release_fake, "dao_buffer_release", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_buffer_release(fake(f)));
  BAD(dao_buffer_release(misaligned(f)));
})

ROW(buffer_release_handle_type, "dao_buffer_release", "handle of another type (pool, tensor)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_buffer_release((dao_buffer *)named(f, f->pool)));
  BAD(dao_buffer_release((dao_buffer *)named(f, f->t)));
})

ROW(buffer_release_double, "dao_buffer_release", "released too often (a free buffer)",
    DAO_ERR_INVALID_STATE, "free", { BAD(dao_buffer_release(named(f, f->b_free))); })

ROW(buffer_release_queued, "dao_buffer_release", "a queued buffer with only the queue's reference",
    DAO_ERR_INVALID_STATE, "queued", { BAD(dao_buffer_release(named(f, f->b_queued))); })

ROW(buffer_data_null, "dao_buffer_data", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer", {
  void *d = SENTINEL;
  BAD(dao_buffer_data(NULL, &d));
})

ROW(buffer_data_fake, "dao_buffer_data", "garbage handle (aligned, odd)", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  void *d = SENTINEL;
  BAD(dao_buffer_data(fake(f), &d));
  BAD(dao_buffer_data(misaligned(f), &d));
  if (d != SENTINEL) note("data was written on failure");
})

ROW(buffer_data_null_out, "dao_buffer_data", "NULL out-param data", DAO_ERR_INVALID_ARGUMENT,
    "data", { BAD(dao_buffer_data(f->held, NULL)); })

ROW(buffer_shape_null, "dao_buffer_shape", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer", {
  int ndim = 77;
  const size_t *shape = SENTINEL;
  BAD(dao_buffer_shape(NULL, &ndim, &shape));
  if (ndim != 77 || shape != SENTINEL) note("out-params were written on failure");
})

ROW(buffer_shape_fake, "dao_buffer_shape", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  int ndim = 77;
  BAD(dao_buffer_shape(fake(f), &ndim, NULL));
  if (ndim != 77) note("ndim was written on failure");
})

ROW(buffer_size_null, "dao_buffer_size", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer", {
  size_t e = 77, b = 77;
  BAD(dao_buffer_size(NULL, &e, &b));
  if (e != 77 || b != 77) note("out-params were written on failure");
})

ROW(buffer_size_fake, "dao_buffer_size", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  size_t e = 77;
  BAD(dao_buffer_size(fake(f), &e, NULL));
})

ROW(buffer_place_null, "dao_buffer_place", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer", {
  dao_place p;
  BAD(dao_buffer_place(NULL, &p));
})

ROW(buffer_place_fake, "dao_buffer_place", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_place p;
  BAD(dao_buffer_place(fake(f), &p));
})

ROW(buffer_place_null_out, "dao_buffer_place", "NULL out-param place", DAO_ERR_INVALID_ARGUMENT,
    "place", { BAD(dao_buffer_place(f->held, NULL)); })

ROW(buffer_sequence_null, "dao_buffer_sequence", "NULL handle", DAO_ERR_INVALID_ARGUMENT, "buffer", {
  uint64_t s = 0;
  BAD(dao_buffer_sequence(NULL, &s));
})

ROW(buffer_sequence_fake, "dao_buffer_sequence", "garbage handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  uint64_t s = 0;
  BAD(dao_buffer_sequence(fake(f), &s));
})

ROW(buffer_sequence_null_out, "dao_buffer_sequence", "NULL out-param sequence",
    DAO_ERR_INVALID_ARGUMENT, "sequence", { BAD(dao_buffer_sequence(f->held, NULL)); })

/* ========================================================================= */
/* recycle.h: collections                                                     */

ROW(collection_create_null, "dao_collection_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_collection_create(NULL)); })

ROW(collection_add_null, "dao_collection_add", "NULL collection", DAO_ERR_INVALID_ARGUMENT,
    "collection", {
  BAD(dao_collection_add(NULL, "b", dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, NULL));
})

ROW(collection_add_fake, "dao_collection_add", "garbage collection handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_collection_add(fake(f), "b", dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, NULL));
  BAD(dao_collection_add(misaligned(f), "b", dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, NULL));
})

ROW(collection_add_null_name, "dao_collection_add", "NULL name", DAO_ERR_INVALID_ARGUMENT, "name", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_collection_add(f->coll, NULL, dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
})

ROW(collection_add_empty_name, "dao_collection_add", "empty name", DAO_ERR_INVALID_ARGUMENT,
    "name", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_collection_add(f->coll, "", dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
})

ROW(collection_add_duplicate, "dao_collection_add", "a name already used", DAO_ERR_INVALID_ARGUMENT,
    "'a'", {
  dao_recycle_pool *p = SENTINEL, *found = NULL;
  BAD(dao_collection_add(f->coll, "a", dao_place_cpu(), 4, 2, g_shape, 2, 0, NULL, &p));
  expect_unchanged_ptr(p, SENTINEL, "out");
  OK(dao_collection_find(f->coll, "a", &found));
  if (found != f->coll_a) note("pool 'a' was replaced");
})

ROW(collection_add_pool_args, "dao_collection_add",
    "bad pool arguments (element_size 0, ndim 0, NULL shape, extent 0, overflow, max_buffers 0, "
    "preallocate > max)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_recycle_pool *found = NULL;
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 0, 2, g_shape, 2, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 0, g_shape, 2, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, NULL, 2, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, g_zero_shape, 2, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, g_big_shape, 2, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, g_shape, 0, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, g_shape, 2, 3, NULL, NULL));
  if (dao_collection_find(f->coll, "b", &found) != DAO_ERR_NOT_FOUND)
    note("a pool 'b' was added by a failing call");
})

ROW(collection_add_config, "dao_collection_add", "bad config (unknown key, spin=abc)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_recycle_pool *found = NULL;
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, g_shape, 2, 0, "bogus=1", NULL));
  BAD(dao_collection_add(f->coll, "b", dao_place_cpu(), 4, 2, g_shape, 2, 0, "spin=abc", NULL));
  if (dao_collection_find(f->coll, "b", &found) != DAO_ERR_NOT_FOUND)
    note("a pool 'b' was added by a failing call");
})

ROW(collection_add_kind, "dao_collection_add", "unknown kind, negative device",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_collection_add(f->coll, "b", place_of(-1, 0), 4, 2, g_shape, 2, 0, NULL, NULL));
  BAD(dao_collection_add(f->coll, "b", place_of(DAO_PLACE_SIM, -1), 4, 2, g_shape, 2, 0, NULL, NULL));
})

ROW(collection_add_absent, "dao_collection_add", "device that does not exist (SIM 3)",
    DAO_ERR_NO_DEVICE, NULL, {
  dao_recycle_pool *found = NULL;
  BAD(dao_collection_add(f->coll, "b", dao_place_sim(SIM_ABSENT), 4, 2, g_shape, 2, 0, NULL, NULL));
  if (dao_collection_find(f->coll, "b", &found) != DAO_ERR_NOT_FOUND)
    note("a pool 'b' was added by a failing call");
})

ROW(collection_add_oom, "dao_collection_add",
    "preallocated buffers that do not fit (8 x 16 MiB on 64 MiB)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  size_t shape[1] = {16 * MIB}, used_before = 0, used_after = 0;
  dao_recycle_pool *found = NULL;
  OK(dao_used(dao_place_sim(SIM_SCRATCH), &used_before));
  BAD(dao_collection_add(f->coll, "b", dao_place_sim(SIM_SCRATCH), 1, 1, shape, 8, 8, NULL, NULL));
  OK(dao_used(dao_place_sim(SIM_SCRATCH), &used_after));
  if (used_after != used_before)
    note("memory was kept after the failed create: %zu bytes used, %zu before", used_after,
         used_before);
  if (dao_collection_find(f->coll, "b", &found) != DAO_ERR_NOT_FOUND)
    note("a pool 'b' was added by a failing call");
})

ROW(collection_find_null, "dao_collection_find", "NULL collection", DAO_ERR_INVALID_ARGUMENT,
    "collection", {
  dao_recycle_pool *p = NULL;
  BAD(dao_collection_find(NULL, "a", &p));
})

ROW(collection_find_fake, "dao_collection_find", "garbage collection handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_recycle_pool *p = NULL;
  BAD(dao_collection_find(fake(f), "a", &p));
})

ROW(collection_find_handle_type, "dao_collection_find", "handle of another type (a recycle pool)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_recycle_pool *p = NULL;
  BAD(dao_collection_find((dao_collection *)(void *)named(f, f->pool), "a", &p));
})

ROW(collection_find_null_name, "dao_collection_find", "NULL name", DAO_ERR_INVALID_ARGUMENT, "name", {
  dao_recycle_pool *p = NULL;
  BAD(dao_collection_find(f->coll, NULL, &p));
})

ROW(collection_find_null_out, "dao_collection_find", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_collection_find(f->coll, "a", NULL)); })

ROW(collection_find_missing, "dao_collection_find", "a name that is not there (lists the names)",
    DAO_ERR_NOT_FOUND, "'a'", {
  dao_recycle_pool *p = SENTINEL;
  BAD(dao_collection_find(f->coll, "zzz", &p));
  BAD(dao_collection_find(f->coll, "", &p));
})

ROW(collection_close_null, "dao_collection_close", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "collection", { BAD(dao_collection_close(NULL)); })

ROW(collection_close_fake, "dao_collection_close", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_collection_close(fake(f)));
  BAD(dao_collection_close(misaligned(f)));
})

ROW(collection_destroy_null, "dao_collection_destroy", "NULL handle", DAO_ERR_INVALID_ARGUMENT,
    "collection", { BAD(dao_collection_destroy(NULL)); })

ROW(collection_destroy_fake, "dao_collection_destroy", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_collection_destroy(fake(f)));
  BAD(dao_collection_destroy(misaligned(f)));
})

ROW(collection_destroy_busy, "dao_collection_destroy", "buffers out", DAO_ERR_BUSY, "'a'",
    { BAD(dao_collection_destroy(f->coll)); })

/* ========================================================================= */
/* tiered.h: pools                                                            */

ROW(tiered_create_null, "dao_tiered_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT, "out",
    { BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), MIB, NULL, NULL)); })

ROW(tiered_create_budget, "dao_tiered_create", "device budget 0 or below one granule (255)",
    DAO_ERR_INVALID_ARGUMENT, "device_budget", {
  dao_tiered *t = NULL;
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), 0, NULL, &t));
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), 255, NULL, &t));
})

ROW(tiered_create_device_kind, "dao_tiered_create",
    "device place of the wrong kind (CPU, CUDA_PINNED, unknown)", DAO_ERR_INVALID_ARGUMENT,
    "device", {
  dao_tiered *t = NULL;
  BAD(dao_tiered_create(dao_place_cpu(), dao_place_cpu(), MIB, NULL, &t));
  BAD(dao_tiered_create(dao_place_cuda_pinned(), dao_place_cpu(), MIB, NULL, &t));
  BAD(dao_tiered_create(place_of(-1, 0), dao_place_cpu(), MIB, NULL, &t));
})

ROW(tiered_create_host_kind, "dao_tiered_create",
    "host place of the wrong kind (SIM, CUDA, unknown)", DAO_ERR_INVALID_ARGUMENT, "host", {
  dao_tiered *t = NULL;
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_sim(0), MIB, NULL, &t));
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cuda(0), MIB, NULL, &t));
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), place_of(99, 0), MIB, NULL, &t));
})

ROW(tiered_create_config, "dao_tiered_create",
    "bad config (unknown key, policy, prefetch, host_budget, link_bandwidth)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  const char *configs[7] = {"bogus=1",         "policy=nonesuch",      "prefetch=-1",
                            "prefetch=abc",    "host_budget=lots",     "link_bandwidth=abc",
                            "policy=lru,policy=lru"};
  int i;
  for (i = 0; i < 7; ++i) {
    dao_tiered *t = NULL;
    BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), MIB, configs[i], &t));
    if (t != NULL) (void)dao_tiered_destroy(t);
  }
})

ROW(tiered_create_negative, "dao_tiered_create", "negative device index",
    DAO_ERR_INVALID_ARGUMENT, "negative", {
  dao_tiered *t = NULL;
  BAD(dao_tiered_create(place_of(DAO_PLACE_SIM, -1), dao_place_cpu(), MIB, NULL, &t));
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), place_of(DAO_PLACE_CPU, -1), MIB, NULL, &t));
})

ROW(tiered_create_absent, "dao_tiered_create",
    "device that does not exist (SIM 3, CUDA n, host CPU 1)", DAO_ERR_NO_DEVICE, NULL, {
  dao_tiered *t = NULL;
  BAD(dao_tiered_create(dao_place_sim(SIM_ABSENT), dao_place_cpu(), MIB, NULL, &t));
  BAD(dao_tiered_create(dao_place_cuda(f->cuda_count), dao_place_cpu(), MIB, NULL, &t));
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), place_of(DAO_PLACE_CPU, 1), MIB, NULL, &t));
})

ROW(tiered_create_oom, "dao_tiered_create",
    "budget larger than the device (1 GiB, SIZE_MAX on 64 MiB)", DAO_ERR_OUT_OF_MEMORY, NULL, {
  dao_tiered *t = NULL;
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), (size_t)1 << 30, NULL, &t));
  BAD(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), SIZE_MAX, NULL, &t));
})

ROW(score_callback_null_pool, "dao_tiered_set_score_callback", "NULL pool",
    DAO_ERR_INVALID_ARGUMENT, "pool", { BAD(dao_tiered_set_score_callback(NULL, score_zero, NULL)); })

ROW(score_callback_fake, "dao_tiered_set_score_callback", "garbage pool handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tiered_set_score_callback(fake(f), score_zero, NULL));
  BAD(dao_tiered_set_score_callback(misaligned(f), score_zero, NULL));
})

ROW(score_callback_null_fn, "dao_tiered_set_score_callback", "NULL score function",
    DAO_ERR_INVALID_ARGUMENT, "score", {
  dao_tiered *t = NULL;
  OK(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), MIB, "policy=callback", &t));
  if (t != NULL) {
    BAD(dao_tiered_set_score_callback(t, NULL, NULL));
    OK(dao_tiered_destroy(t));
  }
})

ROW(score_callback_policy, "dao_tiered_set_score_callback", "a pool whose policy is not callback",
    DAO_ERR_INVALID_STATE, "policy", { BAD(dao_tiered_set_score_callback(f->tp, score_zero, NULL)); })

ROW(score_callback_after_submit, "dao_tiered_set_score_callback", "after kernels were submitted",
    DAO_ERR_INVALID_STATE, "submitted", {
  dao_tiered *t = NULL;
  dao_tensor *x = NULL;
  OK(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), MIB, "policy=callback", &t));
  if (t != NULL) {
    OK(dao_tiered_set_score_callback(t, score_zero, NULL));
    OK(dao_tensor_create(t, 1024, &x));
    OK(dao_kernel_submit(t, kernel_ok, NULL, NULL, 0, &x, 1));
    OK(dao_tiered_synchronize(t));
    BAD(dao_tiered_set_score_callback(t, score_zero, NULL));
    OK(dao_tiered_destroy(t));
  }
})

/* ========================================================================= */
/* tiered.h: tensors                                                          */

ROW(tensor_create_null_pool, "dao_tensor_create", "NULL pool", DAO_ERR_INVALID_ARGUMENT, "pool", {
  dao_tensor *t = NULL;
  BAD(dao_tensor_create(NULL, 1024, &t));
})

ROW(tensor_create_fake, "dao_tensor_create", "garbage pool handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_tensor *t = NULL;
  BAD(dao_tensor_create(fake(f), 1024, &t));
  BAD(dao_tensor_create(misaligned(f), 1024, &t));
})

ROW(tensor_create_handle_type, "dao_tensor_create", "handle of another type (a recycle pool)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_tensor *t = NULL;
  BAD(dao_tensor_create((dao_tiered *)(void *)named(f, f->pool), 1024, &t));
})

ROW(tensor_create_null_out, "dao_tensor_create", "NULL out-param out", DAO_ERR_INVALID_ARGUMENT,
    "out", { BAD(dao_tensor_create(f->tp, 1024, NULL)); })

ROW(tensor_create_zero, "dao_tensor_create", "size 0", DAO_ERR_INVALID_ARGUMENT, "bytes", {
  dao_tensor *t = NULL;
  BAD(dao_tensor_create(f->tp, 0, &t));
})

ROW(tensor_create_too_large, "dao_tensor_create", "larger than the device budget (budget + 1)",
    DAO_ERR_OUT_OF_MEMORY, "budget", {
  dao_tensor *t = NULL;
  BAD(dao_tensor_create(f->tp, MIB + 1, &t));
  if (t != NULL) (void)dao_tensor_release(t);
})

ROW(tensor_create_overflow, "dao_tensor_create", "size overflow (SIZE_MAX, SIZE_MAX - 100)",
    DAO_ERR_OUT_OF_MEMORY, "budget", {
  dao_tensor *t = NULL;
  BAD(dao_tensor_create(f->tp, SIZE_MAX, &t));
  if (t != NULL) (void)dao_tensor_release(t);
  t = NULL;
  BAD(dao_tensor_create(f->tp, SIZE_MAX - 100, &t));
  if (t != NULL) (void)dao_tensor_release(t);
})

ROW(tensor_create_failed_pool, "dao_tensor_create", "a pool that has failed",
    DAO_ERR_INVALID_STATE, "failed", {
  dao_tensor *x = NULL, *t = NULL;
  dao_tiered *pool = make_failed_pool(&x);
  if (pool != NULL) {
    BAD(dao_tensor_create(pool, 1024, &t));
    OK(dao_tiered_destroy(pool));
  }
})

ROW(tensor_write_null, "dao_tensor_write", "NULL tensor", DAO_ERR_INVALID_ARGUMENT, "tensor", {
  unsigned char src[TENSOR_BYTES] = {0};
  BAD(dao_tensor_write(NULL, src, sizeof src));
})

ROW(tensor_write_fake, "dao_tensor_write", "garbage tensor handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  unsigned char src[TENSOR_BYTES] = {0};
  BAD(dao_tensor_write(fake(f), src, sizeof src));
  BAD(dao_tensor_write(misaligned(f), src, sizeof src));
})

ROW(tensor_write_handle_type, "dao_tensor_write", "handle of another type (a tiered pool)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  unsigned char src[TENSOR_BYTES] = {0};
  BAD(dao_tensor_write((dao_tensor *)(void *)named(f, f->tp), src, sizeof src));
})

ROW(tensor_write_null_src, "dao_tensor_write", "NULL src", DAO_ERR_INVALID_ARGUMENT, "src",
    { BAD(dao_tensor_write(f->t, NULL, TENSOR_BYTES)); })

ROW(tensor_write_size, "dao_tensor_write", "size mismatch (bytes - 1, bytes + 1, 0, SIZE_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "bytes", {
  unsigned char src[TENSOR_BYTES + 1] = {0};
  BAD(dao_tensor_write(f->t, src, TENSOR_BYTES - 1));
  BAD(dao_tensor_write(f->t, src, TENSOR_BYTES + 1));
  BAD(dao_tensor_write(f->t, src, 0));
  BAD(dao_tensor_write(f->t, src, SIZE_MAX));
})

ROW(tensor_write_released, "dao_tensor_write", "a released tensor", DAO_ERR_INVALID_ARGUMENT,
    "released", {
  unsigned char src[TENSOR_BYTES] = {0};
  BAD(dao_tensor_write(f->t_released, src, sizeof src));
})

ROW(tensor_write_host_full, "dao_tensor_write", "the host tier is full (host_budget)",
    DAO_ERR_OUT_OF_MEMORY, "host_budget", {
  static unsigned char src[8192];
  dao_tiered *t = NULL;
  dao_tensor *x = NULL;
  OK(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), MIB, "host_budget=4KiB", &t));
  if (t != NULL) {
    OK(dao_tensor_create(t, sizeof src, &x));
    if (x != NULL) BAD(dao_tensor_write(x, src, sizeof src));
    OK(dao_tiered_destroy(t));
  }
})

ROW(tensor_write_failed_pool, "dao_tensor_write", "a tensor of a pool that has failed",
    DAO_ERR_INVALID_STATE, "failed", {
  unsigned char src[1024] = {0};
  dao_tensor *x = NULL;
  dao_tiered *pool = make_failed_pool(&x);
  if (pool != NULL && x != NULL) BAD(dao_tensor_write(x, src, sizeof src));
  if (pool != NULL) OK(dao_tiered_destroy(pool));
})

ROW(tensor_read_null, "dao_tensor_read", "NULL tensor", DAO_ERR_INVALID_ARGUMENT, "tensor", {
  unsigned char dst[TENSOR_BYTES];
  BAD(dao_tensor_read(NULL, dst, sizeof dst));
})

ROW(tensor_read_fake, "dao_tensor_read", "garbage tensor handle", DAO_ERR_INVALID_ARGUMENT, NULL, {
  unsigned char dst[TENSOR_BYTES];
  memset(dst, 0x5A, sizeof dst);
  BAD(dao_tensor_read(fake(f), dst, sizeof dst));
  if (dst[0] != 0x5A) note("dst was written on failure");
})

ROW(tensor_read_null_dst, "dao_tensor_read", "NULL dst", DAO_ERR_INVALID_ARGUMENT, "dst",
    { BAD(dao_tensor_read(f->t, NULL, TENSOR_BYTES)); })

ROW(tensor_read_size, "dao_tensor_read", "size mismatch (bytes - 1, bytes + 1, SIZE_MAX)",
    DAO_ERR_INVALID_ARGUMENT, "bytes", {
  unsigned char dst[TENSOR_BYTES + 1];
  memset(dst, 0x5A, sizeof dst);
  BAD(dao_tensor_read(f->t, dst, TENSOR_BYTES - 1));
  BAD(dao_tensor_read(f->t, dst, TENSOR_BYTES + 1));
  BAD(dao_tensor_read(f->t, dst, SIZE_MAX));
  if (dst[0] != 0x5A || dst[TENSOR_BYTES] != 0x5A) note("dst was written on failure");
})

ROW(tensor_read_released, "dao_tensor_read", "a released tensor", DAO_ERR_INVALID_ARGUMENT,
    "released", {
  unsigned char dst[TENSOR_BYTES];
  BAD(dao_tensor_read(f->t_released, dst, sizeof dst));
})

ROW(tensor_read_unwritten, "dao_tensor_read", "a tensor never written", DAO_ERR_INVALID_STATE,
    "never written", {
  unsigned char dst[TENSOR_BYTES];
  memset(dst, 0x5A, sizeof dst);
  BAD(dao_tensor_read(f->t_unwritten, dst, sizeof dst));
  if (dst[0] != 0x5A) note("dst was written on failure");
})

ROW(tensor_state_null, "dao_tensor_get_state", "NULL tensor", DAO_ERR_INVALID_ARGUMENT, "tensor", {
  dao_tensor_state s;
  BAD(dao_tensor_get_state(NULL, &s));
})

ROW(tensor_state_fake, "dao_tensor_get_state", "garbage tensor handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_tensor_state s;
  BAD(dao_tensor_get_state(fake(f), &s));
  BAD(dao_tensor_get_state(misaligned(f), &s));
})

ROW(tensor_state_null_out, "dao_tensor_get_state", "NULL out-param state", DAO_ERR_INVALID_ARGUMENT,
    "state", { BAD(dao_tensor_get_state(f->t, NULL)); })

ROW(tensor_state_released, "dao_tensor_get_state", "a released tensor", DAO_ERR_INVALID_ARGUMENT,
    "released", {
  dao_tensor_state s;
  BAD(dao_tensor_get_state(f->t_released, &s));
})

ROW(tensor_release_null, "dao_tensor_release", "NULL tensor", DAO_ERR_INVALID_ARGUMENT, "tensor",
    { BAD(dao_tensor_release(NULL)); })

ROW(tensor_release_fake, "dao_tensor_release", "garbage tensor handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tensor_release(fake(f)));
  BAD(dao_tensor_release(misaligned(f)));
})

ROW(tensor_release_handle_type, "dao_tensor_release", "handle of another type (a buffer)",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_tensor_release((dao_tensor *)(void *)named(f, f->held))); })

ROW(tensor_release_twice, "dao_tensor_release", "released twice", DAO_ERR_INVALID_ARGUMENT,
    "released", { BAD(dao_tensor_release(f->t_released)); })

ROW(tensor_retire_null, "dao_tensor_retire", "NULL tensor", DAO_ERR_INVALID_ARGUMENT, "tensor",
    { BAD(dao_tensor_retire(NULL)); })

ROW(tensor_retire_fake, "dao_tensor_retire", "garbage tensor handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tensor_retire(fake(f)));
  BAD(dao_tensor_retire(misaligned(f)));
})

ROW(tensor_retire_handle_type, "dao_tensor_retire", "handle of another type (a buffer)",
    DAO_ERR_INVALID_ARGUMENT, NULL, { BAD(dao_tensor_retire((dao_tensor *)(void *)named(f, f->held))); })

ROW(tensor_retire_released, "dao_tensor_retire", "a released tensor", DAO_ERR_INVALID_ARGUMENT,
    "released", { BAD(dao_tensor_retire(f->t_released)); })

/* ========================================================================= */
/* tiered.h: kernels, synchronize, statistics, destroy                        */

ROW(kernel_submit_null_pool, "dao_kernel_submit", "NULL pool", DAO_ERR_INVALID_ARGUMENT, "pool",
    { BAD(dao_kernel_submit(NULL, kernel_ok, NULL, &f->t, 1, NULL, 0)); })

ROW(kernel_submit_fake_pool, "dao_kernel_submit", "garbage pool handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_kernel_submit(fake(f), kernel_ok, NULL, &f->t, 1, NULL, 0));
  BAD(dao_kernel_submit(misaligned(f), kernel_ok, NULL, &f->t, 1, NULL, 0));
})

ROW(kernel_submit_null_fn, "dao_kernel_submit", "NULL kernel function", DAO_ERR_INVALID_ARGUMENT,
    "fn", { BAD(dao_kernel_submit(f->tp, NULL, NULL, &f->t, 1, NULL, 0)); })

ROW(kernel_submit_null_lists, "dao_kernel_submit", "NULL inputs / outputs with a count > 0",
    DAO_ERR_INVALID_ARGUMENT, "NULL", {
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, NULL, 1, NULL, 0));
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, &f->t, 1, NULL, 2));
})

ROW(kernel_submit_null_entry, "dao_kernel_submit", "a NULL tensor in the lists",
    DAO_ERR_INVALID_ARGUMENT, "NULL", {
  dao_tensor *list[2];
  list[0] = f->t;
  list[1] = NULL;
  g_kernel_runs = 0;
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, list, 2, NULL, 0));
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, NULL, 0, list, 2));
  OK(dao_tiered_synchronize(f->tp));
  if (g_kernel_runs != 0) note("a refused kernel ran");
})

ROW(kernel_submit_fake_entry, "dao_kernel_submit", "a garbage tensor handle in the lists",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_tensor *list[2];
  list[0] = f->t;
  list[1] = fake(f);
  g_kernel_runs = 0;
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, list, 2, NULL, 0));
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, &f->t, 1, list + 1, 1));
  OK(dao_tiered_synchronize(f->tp));
  if (g_kernel_runs != 0) note("a refused kernel ran");
})

ROW(kernel_submit_released, "dao_kernel_submit", "a released tensor in the lists",
    DAO_ERR_INVALID_ARGUMENT, "released", {
  dao_tensor *list[2];
  list[0] = f->t;
  list[1] = f->t_released;
  g_kernel_runs = 0;
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, list, 2, NULL, 0));
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, NULL, 0, list + 1, 1));
  OK(dao_tiered_synchronize(f->tp));
  if (g_kernel_runs != 0) note("a refused kernel ran");
})

ROW(kernel_submit_other_pool, "dao_kernel_submit", "a tensor of another pool",
    DAO_ERR_INVALID_ARGUMENT, "another", {
  dao_tensor *list[2];
  list[0] = f->t;
  list[1] = f->t2;
  g_kernel_runs = 0;
  BAD(dao_kernel_submit(f->tp, kernel_ok, NULL, list, 2, NULL, 0));
  BAD(dao_kernel_submit(f->tp2, kernel_ok, NULL, NULL, 0, &f->t, 1));
  OK(dao_tiered_synchronize(f->tp));
  if (g_kernel_runs != 0) note("a refused kernel ran");
})

ROW(kernel_submit_too_large, "dao_kernel_submit",
    "tensors that do not fit in the budget at once", DAO_ERR_OUT_OF_MEMORY, "budget", {
  dao_tiered *t = NULL;
  dao_tensor *list[2] = {NULL, NULL};
  OK(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), 64 * 1024, NULL, &t));
  if (t != NULL) {
    OK(dao_tensor_create(t, 40 * 1024, &list[0]));
    OK(dao_tensor_create(t, 40 * 1024, &list[1]));
    g_kernel_runs = 0;
    if (list[0] != NULL && list[1] != NULL)
      BAD(dao_kernel_submit(t, kernel_ok, NULL, list, 1, list + 1, 1));
    OK(dao_tiered_synchronize(t));
    if (g_kernel_runs != 0) note("a refused kernel ran");
    OK(dao_tiered_destroy(t));
  }
})

ROW(kernel_submit_failed_pool, "dao_kernel_submit", "a pool that has failed",
    DAO_ERR_INVALID_STATE, "failed", {
  dao_tensor *x = NULL;
  dao_tiered *pool = make_failed_pool(&x);
  if (pool != NULL && x != NULL) BAD(dao_kernel_submit(pool, kernel_ok, NULL, &x, 1, NULL, 0));
  if (pool != NULL) OK(dao_tiered_destroy(pool));
})

ROW(kernel_submit_no_score, "dao_kernel_submit", "policy callback without a scoring function",
    DAO_ERR_INVALID_STATE, "callback", {
  dao_tiered *t = NULL;
  dao_tensor *x = NULL;
  OK(dao_tiered_create(dao_place_sim(SIM_SCRATCH), dao_place_cpu(), MIB, "policy=callback", &t));
  if (t != NULL) {
    OK(dao_tensor_create(t, 1024, &x));
    if (x != NULL) BAD(dao_kernel_submit(t, kernel_ok, NULL, NULL, 0, &x, 1));
    OK(dao_tiered_destroy(t));
  }
})

ROW(tiered_synchronize_null, "dao_tiered_synchronize", "NULL pool", DAO_ERR_INVALID_ARGUMENT,
    "pool", { BAD(dao_tiered_synchronize(NULL)); })

ROW(tiered_synchronize_fake, "dao_tiered_synchronize", "garbage pool handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tiered_synchronize(fake(f)));
  BAD(dao_tiered_synchronize(misaligned(f)));
})

ROW(tiered_synchronize_handle_type, "dao_tiered_synchronize",
    "handle of another type (a tensor, an allocator)", DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tiered_synchronize((dao_tiered *)named(f, f->t)));
  BAD(dao_tiered_synchronize((dao_tiered *)named(f, f->buddy)));
})

ROW(tiered_synchronize_failed, "dao_tiered_synchronize",
    "a pool whose kernel failed (reported, names the kernel)", DAO_ERR_INVALID_STATE, "kernel", {
  dao_tensor *x = NULL;
  dao_tiered *pool = make_failed_pool(&x);
  if (pool != NULL) {
    BAD(dao_tiered_synchronize(pool));
    OK(dao_tiered_destroy(pool));
  }
})

ROW(tiered_get_stats_null, "dao_tiered_get_stats", "NULL pool", DAO_ERR_INVALID_ARGUMENT, "pool", {
  dao_tiered_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_tiered_get_stats(NULL, &s));
})

ROW(tiered_get_stats_fake, "dao_tiered_get_stats", "garbage pool handle", DAO_ERR_INVALID_ARGUMENT,
    NULL, {
  dao_tiered_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_tiered_get_stats(fake(f), &s));
})

ROW(tiered_get_stats_null_out, "dao_tiered_get_stats", "NULL out-param stats",
    DAO_ERR_INVALID_ARGUMENT, "stats", { BAD(dao_tiered_get_stats(f->tp, NULL)); })

ROW(tiered_get_stats_struct_size, "dao_tiered_get_stats",
    "wrong struct_size (0, 8, below the oldest struct by 8 and by 1)", DAO_ERR_INVALID_ARGUMENT,
    "struct_size", {
  /* The oldest header's struct ended at tensors_live: smaller is no version's. */
  const size_t oldest = offsetof(dao_tiered_stats, device_range_bytes);
  dao_tiered_stats s;
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  BAD(dao_tiered_get_stats(f->tp, &s));
  s.struct_size = 8;
  BAD(dao_tiered_get_stats(f->tp, &s));
  s.struct_size = oldest - 8;
  BAD(dao_tiered_get_stats(f->tp, &s));
  s.struct_size = oldest - 1;
  BAD(dao_tiered_get_stats(f->tp, &s));
  if (s.kernels_submitted != 0x5A5A5A5A5A5A5A5Aull) note("stats was written on failure");
})

ROW(tiered_trim_null, "dao_tiered_trim", "NULL pool", DAO_ERR_INVALID_ARGUMENT, "pool",
    { BAD(dao_tiered_trim(NULL)); })

ROW(tiered_trim_fake, "dao_tiered_trim", "garbage pool handle", DAO_ERR_INVALID_ARGUMENT, NULL,
    { BAD(dao_tiered_trim(fake(f))); })

ROW(tiered_get_link_stats_null, "dao_tiered_get_link_stats", "NULL pool",
    DAO_ERR_INVALID_ARGUMENT, "pool", {
  dao_tiered_link_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_tiered_get_link_stats(NULL, &s));
})

ROW(tiered_get_link_stats_fake, "dao_tiered_get_link_stats", "garbage pool handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  dao_tiered_link_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  BAD(dao_tiered_get_link_stats(fake(f), &s));
})

ROW(tiered_get_link_stats_null_out, "dao_tiered_get_link_stats", "NULL out-param stats",
    DAO_ERR_INVALID_ARGUMENT, "stats", { BAD(dao_tiered_get_link_stats(f->tp, NULL)); })

ROW(tiered_get_link_stats_struct_size, "dao_tiered_get_link_stats",
    "wrong struct_size (0, sizeof - 8, 1 MiB)", DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_tiered_link_stats s;
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  BAD(dao_tiered_get_link_stats(f->tp, &s));
  s.struct_size = sizeof s - 8;
  BAD(dao_tiered_get_link_stats(f->tp, &s));
  s.struct_size = (size_t)1 << 20;
  BAD(dao_tiered_get_link_stats(f->tp, &s));
  if (s.bytes_to_device != 0x5A5A5A5A5A5A5A5Aull) note("stats was written on failure");
})

ROW(tiered_destroy_null, "dao_tiered_destroy", "NULL pool", DAO_ERR_INVALID_ARGUMENT, "pool",
    { BAD(dao_tiered_destroy(NULL)); })

ROW(tiered_destroy_fake, "dao_tiered_destroy", "garbage pool handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tiered_destroy(fake(f)));
  BAD(dao_tiered_destroy(misaligned(f)));
})

ROW(tiered_destroy_handle_type, "dao_tiered_destroy", "handle of another type (a tensor, a pool)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_tiered_destroy((dao_tiered *)named(f, f->t)));
  BAD(dao_tiered_destroy((dao_tiered *)named(f, f->pool)));
})

/* ========================================================================= */
/* trace.h: the memory history (issue 18)                                     */

ROW(trace_start_null, "dao_trace_start", "NULL path", DAO_ERR_INVALID_ARGUMENT, "path",
    { BAD(dao_trace_start(NULL, NULL)); })

ROW(trace_start_empty, "dao_trace_start", "empty path", DAO_ERR_INVALID_ARGUMENT, "path",
    { BAD(dao_trace_start("", NULL)); })

ROW(trace_start_unwritable, "dao_trace_start", "a path in a folder that does not exist",
    DAO_ERR_INVALID_ARGUMENT, "cannot open",
    { BAD(dao_trace_start("/nonexistent-dao-folder/trace.jsonl", NULL)); })

ROW(trace_start_options, "dao_trace_start",
    "malformed options (unknown key, ring too small, flush_ms 0, depth 65, stacks=maybe, "
    "format=xml, clock=sundial)",
    DAO_ERR_INVALID_ARGUMENT, "trace options", {
  BAD(dao_trace_start("bad_input_trace.jsonl", "colour=blue"));
  BAD(dao_trace_start("bad_input_trace.jsonl", "format=xml"));
  BAD(dao_trace_start("bad_input_trace.jsonl", "clock=sundial"));
  BAD(dao_trace_start("bad_input_trace.jsonl", "ring=1KiB"));
  BAD(dao_trace_start("bad_input_trace.jsonl", "flush_ms=0"));
  BAD(dao_trace_start("bad_input_trace.jsonl", "depth=65"));
  BAD(dao_trace_start("bad_input_trace.jsonl", "stacks=maybe"));
})

ROW(trace_start_running, "dao_trace_start", "a recording runs already", DAO_ERR_INVALID_STATE,
    "running", {
  OK(dao_trace_start("bad_input_trace.jsonl", NULL));
  BAD(dao_trace_start("bad_input_trace2.jsonl", NULL));
  OK(dao_trace_stop());
})

ROW(trace_stop_none, "dao_trace_stop", "no recording runs", DAO_ERR_INVALID_STATE,
    "no recording", { BAD(dao_trace_stop()); })

ROW(trace_flush_none, "dao_trace_flush", "no recording runs", DAO_ERR_INVALID_STATE,
    "no recording", { BAD(dao_trace_flush()); })

ROW(trace_mark_null, "dao_trace_mark", "NULL text", DAO_ERR_INVALID_ARGUMENT, "text",
    { BAD(dao_trace_mark(NULL)); })

ROW(trace_get_stats_null, "dao_trace_get_stats", "NULL out-param stats",
    DAO_ERR_INVALID_ARGUMENT, "stats", { BAD(dao_trace_get_stats(NULL)); })

ROW(trace_get_stats_struct_size, "dao_trace_get_stats", "wrong struct_size (0, sizeof - 8)",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_trace_stats s;
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  BAD(dao_trace_get_stats(&s));
  s.struct_size = sizeof s - 8;
  BAD(dao_trace_get_stats(&s));
  if (s.records != 0x5A5A5A5A5A5A5A5Aull) note("stats was written on failure");
})

ROW(set_oom_callback_null, "dao_allocator_set_oom_callback", "NULL handle",
    DAO_ERR_INVALID_ARGUMENT, "allocator", { BAD(dao_allocator_set_oom_callback(NULL, NULL, NULL)); })

ROW(set_oom_callback_fake, "dao_allocator_set_oom_callback", "garbage handle (aligned, odd)",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  BAD(dao_allocator_set_oom_callback(fake(f), NULL, NULL));
  BAD(dao_allocator_set_oom_callback(misaligned(f), NULL, NULL));
})

/* ========================================================================= */
/* interop.h (DAO_INTEROP_PLACE=sim: device n is sim:n)                       */

ROW(pluggable_malloc_size, "dao_pluggable_malloc", "negative size (-1, PTRDIFF_MIN)",
    DAO_ERR_INVALID_ARGUMENT, "negative", {
  uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_pluggable_malloc(-1, 0, NULL), interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  expect_null(p, "the result");
  n = interop_failures();
  BAD((p = dao_pluggable_malloc(PTRDIFF_MIN, 0, NULL),
       interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  expect_null(p, "the result");
})

ROW(pluggable_malloc_device, "dao_pluggable_malloc", "negative device (-1, INT_MIN)",
    DAO_ERR_INVALID_ARGUMENT, "device", {
  uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_pluggable_malloc(64, -1, NULL), interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  expect_null(p, "the result");
  n = interop_failures();
  BAD((p = dao_pluggable_malloc(64, INT_MIN, NULL), interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  expect_null(p, "the result");
})

ROW(pluggable_malloc_absent, "dao_pluggable_malloc", "device that does not exist",
    DAO_ERR_NO_DEVICE, "device 3", {
  const uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_pluggable_malloc(64, SIM_ABSENT, NULL), interop_status(n, DAO_ERR_NO_DEVICE)));
  expect_null(p, "the result");
})

ROW(pluggable_malloc_stream, "dao_pluggable_malloc", "garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  const uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_pluggable_malloc(64, 0, fake(f)), interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  expect_null(p, "the result");
})

ROW(pluggable_malloc_too_large, "dao_pluggable_malloc", "PTRDIFF_MAX bytes",
    DAO_ERR_OUT_OF_MEMORY, "out of memory", {
  const uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_pluggable_malloc(PTRDIFF_MAX, 0, NULL), interop_status(n, DAO_ERR_OUT_OF_MEMORY)));
  expect_null(p, "the result");
})

ROW(pluggable_free_foreign, "dao_pluggable_free", "foreign pointer", DAO_ERR_INVALID_POINTER,
    NULL, {
  const uint64_t n = interop_failures();
  BAD((dao_pluggable_free(named(f, f->fake), 64, 0, NULL),
       interop_status(n, DAO_ERR_INVALID_POINTER)));
})

ROW(pluggable_free_device, "dao_pluggable_free", "foreign pointer on an absent device",
    DAO_ERR_NO_DEVICE, "device 3", {
  const uint64_t n = interop_failures();
  BAD((dao_pluggable_free(f->fake, 64, SIM_ABSENT, NULL), interop_status(n, DAO_ERR_NO_DEVICE)));
})

ROW(pluggable_record_stream_foreign, "dao_pluggable_record_stream", "foreign pointer",
    DAO_ERR_INVALID_POINTER, NULL, {
  const uint64_t n = interop_failures();
  BAD((dao_pluggable_record_stream(named(f, f->fake), NULL),
       interop_status(n, DAO_ERR_INVALID_POINTER)));
})

ROW(pluggable_record_stream_stream, "dao_pluggable_record_stream", "garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  void *p = dao_pluggable_malloc(256, SIM_SCRATCH, NULL);
  uint64_t n;
  if (p == NULL) note("setup: dao_pluggable_malloc failed: %s", dao_last_error());
  SNAP();
  n = interop_failures();
  BAD((dao_pluggable_record_stream(p, fake(f)), interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  dao_pluggable_free(p, 256, SIM_SCRATCH, NULL);
})

ROW(cupy_malloc_absent, "dao_cupy_malloc", "device that does not exist", DAO_ERR_NO_DEVICE,
    "device 3", {
  const uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_cupy_malloc(NULL, 64, SIM_ABSENT), interop_status(n, DAO_ERR_NO_DEVICE)));
  expect_null(p, "the result");
})

ROW(cupy_malloc_stream, "dao_cupy_malloc", "param slot holding a garbage stream handle",
    DAO_ERR_INVALID_ARGUMENT, NULL, {
  const uint64_t n = interop_failures();
  void *slot = fake(f);
  void *p = SENTINEL;
  BAD((p = dao_cupy_malloc(&slot, 64, 0), interop_status(n, DAO_ERR_INVALID_ARGUMENT)));
  expect_null(p, "the result");
})

ROW(cupy_malloc_too_large, "dao_cupy_malloc", "SIZE_MAX bytes", DAO_ERR_OUT_OF_MEMORY,
    "out of memory", {
  const uint64_t n = interop_failures();
  void *p = SENTINEL;
  BAD((p = dao_cupy_malloc(NULL, SIZE_MAX, 0), interop_status(n, DAO_ERR_OUT_OF_MEMORY)));
  expect_null(p, "the result");
})

ROW(cupy_free_foreign, "dao_cupy_free", "foreign pointer", DAO_ERR_INVALID_POINTER, NULL, {
  const uint64_t n = interop_failures();
  BAD((dao_cupy_free(NULL, named(f, f->fake), 0), interop_status(n, DAO_ERR_INVALID_POINTER)));
})

ROW(interop_get_stats_null, "dao_interop_get_stats", "NULL out-param stats",
    DAO_ERR_INVALID_ARGUMENT, "stats", { BAD(dao_interop_get_stats(NULL)); })

ROW(interop_get_stats_struct_size, "dao_interop_get_stats", "wrong struct_size (0, sizeof - 8)",
    DAO_ERR_INVALID_ARGUMENT, "struct_size", {
  dao_interop_stats s;
  memset(&s, 0x5A, sizeof s);
  s.struct_size = 0;
  BAD(dao_interop_get_stats(&s));
  s.struct_size = sizeof s - 8;
  BAD(dao_interop_get_stats(&s));
  if (s.failed_frees != 0x5A5A5A5A5A5A5A5Aull) note("stats was written on failure");
})

/* Partitioned memory (dao_comm_*, dao_whole_*). */
#include "whole/bad_input_rows_whole.h"
