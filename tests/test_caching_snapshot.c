/* The "caching" strategy's snapshots: the JSON document (its validator
 * tested first, then the document against the C snapshot, snprintf
 * semantics, bad input) and the snapshot API's bad input. */
#define _POSIX_C_SOURCE 200809L

#include "caching_test_util.h"
#include "caching_test_json.h"

/* ------------------------------------------------------------------------
 * The JSON snapshot parses
 * ---------------------------------------------------------------------- */

static void json_validator_itself(void **state) {
  (void)state;
  assert_true(json_ok("{}"));
  assert_true(json_ok("[]"));
  assert_true(json_ok(
      " {\"a\" : [1, -2.5e+3, 0, true, false, null, \"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"]} "));
  assert_true(json_ok("{\"a\":{\"b\":{}}}"));
  assert_true(json_ok("0"));
  assert_false(json_ok(""));
  assert_false(json_ok("{"));
  assert_false(json_ok("{\"a\":}"));
  assert_false(json_ok("{\"a\" 1}"));
  assert_false(json_ok("{a:1}"));
  assert_false(json_ok("[1,]"));
  assert_false(json_ok("[1 2]"));
  assert_false(json_ok("{\"a\":1,}"));
  assert_false(json_ok("01"));
  assert_false(json_ok("1."));
  assert_false(json_ok("-"));
  assert_false(json_ok("1e"));
  assert_false(json_ok("\"\\x\""));
  assert_false(json_ok("\"\\u12g4\""));
  assert_false(json_ok("\"a\nb\""));
  assert_false(json_ok("\"open"));
  assert_false(json_ok("tru"));
  assert_false(json_ok("{} x"));
  assert_false(json_ok("{}{}"));
}

static void json_snapshot(void **state) {
  dao_allocator *a = make(big_place(), "expandable_segments=false");
  dao_allocator *e = make(big_place(), NULL);
  dao_allocator *buddy = NULL;
  dao_stream stream = NULL;
  void *p[12], *q[3];
  size_t len = 0, got = 0, half, i;
  char *full, *buf;
  (void)state;
  stream = make_stream(big_place());

  /* empty */
  json_matches_snapshot(a);
  /* segments of both pools and two streams, split blocks and holes */
  for (i = 0; i < 12; ++i)
    p[i] = alloc_ok(a, (i % 3 == 0 ? 3 * MIB : 100 * KIB) + i, i % 2 ? stream : NULL);
  for (i = 0; i < 12; i += 4) assert_ok(dao_allocator_free(a, p[i]));
  json_matches_snapshot(a);
  for (i = 0; i < 3; ++i) q[i] = alloc_ok(e, MIB * i + 1000, stream);
  assert_ok(dao_allocator_free(e, q[1]));
  json_matches_snapshot(e);

  /* snprintf semantics */
  full = snapshot_json(a, &len);
  assert_ok(dao_allocator_snapshot_json(a, NULL, 0, &got));
  assert_int_equal(got, len);
  half = len / 2;
  buf = (char *)malloc(len + 16);
  assert_non_null(buf);
  memset(buf, 'Z', len + 16);
  got = 0;
  assert_ok(dao_allocator_snapshot_json(a, buf, half, &got));
  assert_int_equal(got, len);
  assert_int_equal(buf[half - 1], '\0');
  assert_int_equal(strlen(buf), half - 1);
  assert_memory_equal(buf, full, half - 1);
  assert_int_equal(buf[half], 'Z'); /* nothing past the capacity */
  memset(buf, 'Z', len + 16);
  assert_ok(dao_allocator_snapshot_json(a, buf, 1, &got));
  assert_int_equal(buf[0], '\0');
  assert_int_equal(buf[1], 'Z');
  assert_int_equal(got, len);
  memset(buf, 'Z', len + 16);
  assert_ok(dao_allocator_snapshot_json(a, buf, len, &got)); /* one short: the last byte is cut */
  assert_int_equal(strlen(buf), len - 1);
  assert_int_equal(buf[len], 'Z');
  assert_ok(dao_allocator_snapshot_json(a, buf, len + 16, &got));
  assert_string_equal(buf, full);
  free(buf);
  free(full);

  /* bad input */
  assert_status(dao_allocator_snapshot_json(a, NULL, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_snapshot_json(a, NULL, 10, &got), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_snapshot_json(NULL, NULL, 0, &got), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_create(big_place(), "buddy", NULL, &buddy));
  assert_status(dao_allocator_snapshot_json(buddy, NULL, 0, &got), DAO_ERR_UNSUPPORTED);
  assert_ok(dao_allocator_destroy(buddy));

  for (i = 0; i < 12; ++i)
    if (i % 4 != 0) assert_ok(dao_allocator_free(a, p[i]));
  assert_ok(dao_allocator_free(e, q[0]));
  assert_ok(dao_allocator_free(e, q[2]));
  destroy(a);
  destroy(e);
  drop_stream(stream);
}

/* ------------------------------------------------------------------------
 * Snapshot API bad input
 * ---------------------------------------------------------------------- */

static void snapshot_bad_input(void **state) {
  dao_allocator *a = make(big_place(), NULL);
  dao_allocator *buddy = NULL;
  dao_snapshot *s = NULL;
  size_t count = 0;
  void *p;
  struct {
    dao_segment_info info;
    unsigned char extra[32];
  } seg_big;
  struct {
    dao_block_info info;
    unsigned char extra[32];
  } block_big;
  dao_segment_info seg;
  dao_block_info block;
  size_t k;
  (void)state;
  p = alloc_ok(a, 5000, NULL);

  assert_status(dao_allocator_snapshot(NULL, &s), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_allocator_snapshot(a, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_allocator_snapshot(a, &s));
  assert_status(dao_snapshot_segment_count(NULL, &count), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_segment_count(s, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_ok(dao_snapshot_segment_count(s, &count));
  assert_int_equal(count, 1);

  memset(&seg, 0, sizeof seg);
  seg.struct_size = sizeof seg;
  assert_status(dao_snapshot_segment(NULL, 0, &seg), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_segment(s, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_snapshot_segment(s, 1, &seg), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  assert_status(dao_snapshot_segment(s, (size_t)-1, &seg), DAO_ERR_INVALID_ARGUMENT);
  seg.struct_size = 0;
  assert_status(dao_snapshot_segment(s, 0, &seg), DAO_ERR_INVALID_ARGUMENT);
  seg.struct_size = sizeof seg - 1;
  assert_status(dao_snapshot_segment(s, 0, &seg), DAO_ERR_INVALID_ARGUMENT);
  seg.struct_size = sizeof seg;
  assert_ok(dao_snapshot_segment(s, 0, &seg));
  assert_int_equal(seg.block_count, 2); /* the block and the rest */

  /* a caller's newer, larger struct: the bytes past the fields we know are
   * left as they are (never written past our struct) */
  memset(&seg_big, 0xab, sizeof seg_big);
  seg_big.info.struct_size = sizeof seg_big;
  assert_ok(dao_snapshot_segment(s, 0, &seg_big.info));
  assert_int_equal(seg_big.info.struct_size, sizeof seg_big);
  assert_int_equal(seg_big.info.address, seg.address);
  assert_int_equal(seg_big.info.block_count, seg.block_count);
  for (k = 0; k < sizeof seg_big.extra; ++k) assert_int_equal(seg_big.extra[k], 0xab);

  memset(&block, 0, sizeof block);
  block.struct_size = sizeof block;
  assert_status(dao_snapshot_block(NULL, 0, 0, &block), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_block(s, 0, 0, NULL), DAO_ERR_INVALID_ARGUMENT);
  assert_status(dao_snapshot_block(s, 1, 0, &block), DAO_ERR_INVALID_ARGUMENT);
  assert_failure_mentions(dao_snapshot_block(s, 0, 2, &block), DAO_ERR_INVALID_ARGUMENT,
                          "out of range");
  block.struct_size = 0;
  assert_status(dao_snapshot_block(s, 0, 0, &block), DAO_ERR_INVALID_ARGUMENT);
  block.struct_size = sizeof block;
  assert_ok(dao_snapshot_block(s, 0, 0, &block));
  assert_int_equal(block.address, (uintptr_t)p);
  assert_int_equal(block.requested_size, 5000);
  memset(&block_big, 0xcd, sizeof block_big);
  block_big.info.struct_size = sizeof block_big;
  assert_ok(dao_snapshot_block(s, 0, 0, &block_big.info));
  assert_int_equal(block_big.info.struct_size, sizeof block_big);
  assert_int_equal(block_big.info.size, 5120);
  for (k = 0; k < sizeof block_big.extra; ++k) assert_int_equal(block_big.extra[k], 0xcd);

  /* the snapshot is a copy: freeing later does not change it */
  assert_ok(dao_allocator_free(a, p));
  memset(&block, 0, sizeof block);
  block.struct_size = sizeof block;
  assert_ok(dao_snapshot_block(s, 0, 0, &block));
  assert_int_equal(block.state, DAO_BLOCK_ALLOCATED);
  assert_ok(dao_snapshot_destroy(s));
  assert_ok(dao_snapshot_destroy(NULL));

  assert_ok(dao_allocator_create(big_place(), "buddy", NULL, &buddy));
  s = (dao_snapshot *)&count;
  assert_status(dao_allocator_snapshot(buddy, &s), DAO_ERR_UNSUPPORTED);
  assert_ok(dao_allocator_destroy(buddy));
  destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(json_validator_itself, baseline, cleanup),
      cmocka_unit_test_setup_teardown(json_snapshot, baseline, cleanup),
      cmocka_unit_test_setup_teardown(snapshot_bad_input, baseline, cleanup),
  };
  if (!no_caching_is(0)) return 2;
  return cmocka_run_group_tests_name("caching_snapshot", tests, setup, NULL);
}
