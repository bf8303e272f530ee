/* SIM cost profiles (sim.h): what each driver call a SIM device stands in
 * for is counted and, with a card's profile, charged at that card's
 * measured cost. One program, four modes (one per process: the profile is
 * fixed at the first use of SIM):
 *   none       the default profile: counts, no time, the host's pages
 *   h200       DAO_SIM_COSTS=h200: the H200's granularity and costs
 *   api        dao_sim_set_profile("h200") before first use
 *   malformed  DAO_SIM_COSTS=bogus: refused at first use, then fixable */
#include <unistd.h>

#include "dao_test.h"

#define MIB ((size_t)1 << 20)

static const char *g_mode = "none";

static dao_sim_cost cost_of(dao_sim_op op) {
  dao_sim_cost c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  assert_ok(dao_sim_get_cost(0, op, &c));
  return c;
}

static int costs_on(void) { return strcmp(g_mode, "none") != 0; }

/* A segment allocation and free through the system strategy: one ALLOC and
 * one FREE, charged by size (interpolated between the measured sizes). */
static void segment_alloc_and_free(void **state) {
  dao_allocator *a = NULL;
  void *p = NULL, *q = NULL;
  dao_sim_cost alloc, fr;
  (void)state;
  assert_ok(dao_sim_reset_costs(0));
  assert_ok(dao_allocator_create(dao_place_sim(0), "system", NULL, &a));
  assert_ok(dao_allocator_alloc(a, 2 * MIB, NULL, &p));
  assert_ok(dao_allocator_alloc(a, 11 * MIB, NULL, &q));
  alloc = cost_of(DAO_SIM_OP_ALLOC);
  assert_int_equal(alloc.count, 2);
  assert_int_equal(alloc.bytes, 13 * MIB);
  /* 2 MiB: 31.9 us; 11 MiB: halfway from 2 to 20 MiB, 31.9 + 0.5 * 1.0 us */
  assert_int_equal(alloc.ns, costs_on() ? 31900 + 32400 : 0);
  assert_ok(dao_allocator_free(a, p));
  fr = cost_of(DAO_SIM_OP_FREE);
  assert_int_equal(fr.count, 1);
  assert_int_equal(fr.ns, costs_on() ? 27700 : 0);
  assert_ok(dao_allocator_free(a, q));
  assert_ok(dao_allocator_destroy(a));
}

/* The caching strategy maps an expandable segment: on host pages (profile
 * none) counted per granule; with a card's profile one physical allocation
 * (create + map + access) per mapping, charged by its size; trim unmaps and
 * releases them. */
static void expandable_mapping(void **state) {
  dao_allocator *a = NULL;
  void *p = NULL;
  size_t released = 0;
  dao_sim_cost create, map, access, unmap, release;
  dao_allocator_stats st;
  const size_t granule = costs_on() ? 2 * MIB : (size_t)sysconf(_SC_PAGESIZE);
  (void)state;
  assert_ok(dao_sim_reset_costs(0));
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching", "reserve_headroom=none", &a));
  assert_ok(dao_allocator_alloc(a, 2 * MIB, NULL, &p));
  create = cost_of(DAO_SIM_OP_CREATE);
  map = cost_of(DAO_SIM_OP_MAP);
  access = cost_of(DAO_SIM_OP_SET_ACCESS);
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  assert_ok(dao_allocator_get_stats(a, &st));
  assert_true(create.count >= 1);
  assert_int_equal(create.bytes, st.reserved_bytes); /* all that is mapped */
  assert_int_equal(create.count * granule, create.bytes);
  assert_int_equal(map.count, create.count);
  assert_true(access.count >= 1 && access.count <= create.count);
  assert_int_equal(create.ns, costs_on() ? create.count * 7700 : 0);
  assert_int_equal(map.ns, costs_on() ? map.count * 600 : 0);
  assert_int_equal(access.ns, costs_on() ? create.count * 33900 : 0);
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_trim(a, &released));
  assert_int_equal(released, create.bytes);
  unmap = cost_of(DAO_SIM_OP_UNMAP);
  release = cost_of(DAO_SIM_OP_RELEASE);
  assert_int_equal(unmap.count, create.count);
  assert_int_equal(release.count, create.count);
  assert_int_equal(unmap.ns, costs_on() ? create.count * 21300 : 0);
  assert_int_equal(release.ns, costs_on() ? create.count * 9300 : 0);
  /* With a card's profile one mapping is one physical allocation, whatever
     its size: 16 MiB is one create, map and access call, charged at the
     16 MiB cost (between the 2 and 20 MiB figures), not 8 of 2 MiB. */
  if (costs_on()) {
    assert_ok(dao_sim_reset_costs(0));
    assert_ok(dao_allocator_alloc(a, 16 * MIB, NULL, &p));
    create = cost_of(DAO_SIM_OP_CREATE);
    access = cost_of(DAO_SIM_OP_SET_ACCESS);
    assert_int_equal(create.count, 1);
    assert_int_equal(create.bytes, 16 * MIB);
    assert_true(create.ns > 7700 && create.ns < 8400);
    assert_int_equal(access.count, 1);
    assert_true(access.ns > 33900 && access.ns < 34800);
    assert_ok(dao_allocator_free(a, p));
  }
  assert_ok(dao_allocator_destroy(a));
}

static void count_host_fn(void *user_data) { ++*(int *)user_data; }

/* Events, synchronization, host functions and copies on a SIM stream. */
static void stream_calls(void **state) {
  dao_stream s = NULL;
  dao_event e = NULL;
  dao_allocator *a = NULL;
  void *d1 = NULL, *d2 = NULL;
  char *host = malloc(12 * MIB);
  int idle = 0, done = 0, ran = 0;
  dao_sim_cost c;
  (void)state;
  assert_non_null(host);
  memset(host, 7, 12 * MIB);
  assert_ok(dao_allocator_create(dao_place_sim(0), "system", NULL, &a));
  assert_ok(dao_allocator_alloc(a, 12 * MIB, NULL, &d1));
  assert_ok(dao_allocator_alloc(a, 12 * MIB, NULL, &d2));
  assert_ok(dao_stream_create(dao_place_sim(0), &s));
  assert_ok(dao_event_create(dao_place_sim(0), &e));
  assert_ok(dao_sim_reset_costs(0));

  assert_ok(dao_memcpy_async(d1, host, 8100000, s));  /* 8.1 GB/s: 1 ms */
  assert_ok(dao_memcpy_async(host, d1, 11900000, s)); /* 11.9 GB/s: 1 ms */
  assert_ok(dao_memcpy_async(d2, d1, 4096, s));       /* not charged */
  assert_ok(dao_launch_host_func(s, count_host_fn, &ran));
  assert_ok(dao_event_record(e, s));
  assert_ok(dao_stream_synchronize(s));
  assert_ok(dao_event_query(e, &done));
  assert_ok(dao_stream_query(s, &idle));
  assert_int_equal(ran, 1);

  c = cost_of(DAO_SIM_OP_COPY_TO_DEVICE);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.bytes, 8100000);
  assert_int_equal(c.ns, costs_on() ? 1000000 : 0);
  c = cost_of(DAO_SIM_OP_COPY_TO_HOST);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.ns, costs_on() ? 1000000 : 0);
  c = cost_of(DAO_SIM_OP_COPY_ON_DEVICE);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.bytes, 4096);
  assert_int_equal(c.ns, 0);
  c = cost_of(DAO_SIM_OP_HOST_FUNC);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.ns, costs_on() ? 9300 : 0);
  c = cost_of(DAO_SIM_OP_EVENT_RECORD);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.ns, costs_on() ? 190 : 0);
  c = cost_of(DAO_SIM_OP_EVENT_QUERY);
  assert_int_equal(c.count, 2);
  assert_int_equal(c.ns, costs_on() ? 2 * 180 : 0);
  c = cost_of(DAO_SIM_OP_SYNCHRONIZE);
  assert_int_equal(c.count, 1);
  assert_int_equal(c.ns, costs_on() ? 230 : 0);

  assert_ok(dao_sim_reset_costs(0));
  c = cost_of(DAO_SIM_OP_COPY_TO_DEVICE);
  assert_int_equal(c.count, 0);
  assert_int_equal(c.ns, 0);

  assert_ok(dao_event_destroy(e));
  assert_ok(dao_stream_destroy(s));
  assert_ok(dao_allocator_free(a, d1));
  assert_ok(dao_allocator_free(a, d2));
  assert_ok(dao_allocator_destroy(a));
  free(host);
}

/* The profile in effect, and the rules of changing it. */
static void profile_rules(void **state) {
  const char *name = NULL;
  const char *other = costs_on() ? "none" : "h200";
  (void)state;
  assert_ok(dao_sim_get_profile(&name));
  assert_string_equal(name, costs_on() ? "h200" : "none");
  assert_ok(dao_sim_set_profile(name)); /* the same: nothing changes */
  assert_failure_mentions(dao_sim_set_profile(other), DAO_ERR_INVALID_STATE, "already in use");
  assert_ok(dao_sim_get_profile(&name));
  assert_string_equal(name, costs_on() ? "h200" : "none");
}

static void bad_input(void **state) {
  dao_sim_cost c;
  const char *name = NULL;
  (void)state;
  memset(&c, 0, sizeof c);
  assert_failure_mentions(dao_sim_set_profile(NULL), DAO_ERR_INVALID_ARGUMENT, "profile");
  assert_failure_mentions(dao_sim_set_profile("gtx480"), DAO_ERR_INVALID_ARGUMENT, "h200");
  assert_failure_mentions(dao_sim_get_profile(NULL), DAO_ERR_INVALID_ARGUMENT, "profile");
  assert_failure_mentions(dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, NULL), DAO_ERR_INVALID_ARGUMENT,
                          "out");
  c.struct_size = sizeof c - 1;
  assert_failure_mentions(dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, &c), DAO_ERR_INVALID_ARGUMENT,
                          "struct_size");
  c.struct_size = sizeof c;
  assert_failure_mentions(dao_sim_get_cost(0, (dao_sim_op)-1, &c), DAO_ERR_INVALID_ARGUMENT,
                          "operation");
  assert_failure_mentions(dao_sim_get_cost(0, DAO_SIM_OP_COUNT, &c), DAO_ERR_INVALID_ARGUMENT,
                          "operation");
  assert_status(dao_sim_get_cost(7, DAO_SIM_OP_ALLOC, &c), DAO_ERR_NO_DEVICE);
  assert_status(dao_sim_get_cost(-1, DAO_SIM_OP_ALLOC, &c), DAO_ERR_NO_DEVICE);
  assert_status(dao_sim_reset_costs(7), DAO_ERR_NO_DEVICE);
  assert_string_equal(dao_sim_op_name(DAO_SIM_OP_ALLOC), "alloc");
  assert_string_equal(dao_sim_op_name(DAO_SIM_OP_COPY_ON_DEVICE), "copy_on_device");
  assert_string_equal(dao_sim_op_name(DAO_SIM_OP_COUNT), "unknown");
  assert_string_equal(dao_sim_op_name((dao_sim_op)-3), "unknown");
  assert_ok(dao_sim_get_profile(&name)); /* nothing above changed it */
  assert_string_equal(name, costs_on() ? "h200" : "none");
}

/* DAO_SIM_COSTS=bogus: the first use says why, configures nothing, and
 * dao_sim_set_profile() can still fix it. */
static int run_malformed(void) {
  void *p = NULL;
  const char *name = NULL;
  if (dao_alloc(dao_place_sim(0), 64, &p) != DAO_ERR_INVALID_ARGUMENT ||
      strstr(dao_last_error(), "DAO_SIM_COSTS") == NULL ||
      strstr(dao_last_error(), "h200") == NULL) {
    fprintf(stderr, "malformed DAO_SIM_COSTS was not refused: %s\n", dao_last_error());
    return 1;
  }
  if (dao_sim_set_profile("h200") != DAO_OK || dao_sim_get_profile(&name) != DAO_OK ||
      strcmp(name, "h200") != 0 || dao_alloc(dao_place_sim(0), 64, &p) != DAO_OK ||
      dao_free(dao_place_sim(0), p) != DAO_OK) {
    fprintf(stderr, "dao_sim_set_profile could not fix it: %s\n", dao_last_error());
    return 1;
  }
  printf("malformed DAO_SIM_COSTS refused, then fixed by dao_sim_set_profile\n");
  return 0;
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(segment_alloc_and_free),
      cmocka_unit_test(expandable_mapping),
      cmocka_unit_test(stream_calls),
      cmocka_unit_test(profile_rules),
      cmocka_unit_test(bad_input),
  };
  if (argc > 1) g_mode = argv[1];
  if (strcmp(g_mode, "malformed") == 0) return run_malformed();
  if (strcmp(g_mode, "api") == 0) {
    if (dao_sim_set_profile("h200") != DAO_OK) {
      fprintf(stderr, "dao_sim_set_profile: %s\n", dao_last_error());
      return 1;
    }
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
