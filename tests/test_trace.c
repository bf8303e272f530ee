/* Recording the memory history (issue 18, include/dao/trace.h), read back
 * with the dao tool's trace reader (tools/trace_reader.h): the same
 * sequence and peak as the allocator saw, stacks when asked, lost records
 * counted with a tiny ring, a killed recorder's file readable up to its
 * last flush, threads recorded in an order that pairs every free, and the
 * out-of-memory observer with the calls it may and may not make.
 * Run with DAO_TRACE set, it checks the recording started at load instead. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dao_test.h"
#include "trace_reader.h"

static char g_path[512];

static const char *trace_path(const char *name) {
  snprintf(g_path, sizeof g_path, "test_trace_%s_%ld.jsonl", name, (long)getpid());
  return g_path;
}

static void read_trace(const char *path, dao_trace *t) {
  char err[512];
  if (dao_trace_read(path, t, err, sizeof err, NULL, NULL) != 0) {
    print_error("reading %s: %s\n", path, err);
    fail();
  }
}

static uint64_t rng_state = 42;
static uint64_t next_random(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* What the test did, to compare with the file. */
typedef struct op {
  int alloc;
  void *ptr;
  size_t req;
} op;

/* Records, reads back and compares, in the encoding `options` selects. */
static void round_trip_with(const char *options, const char *name) {
  enum { N = 400, LIVE = 32 };
  static op ops[2 * N];
  void *live[LIVE] = {0};
  size_t live_req[LIVE] = {0};
  size_t n_ops = 0, i, k = 0;
  dao_allocator *a;
  dao_stream s;
  dao_allocator_stats st;
  dao_trace t;
  const char *path = trace_path(name);
  uint64_t cur = 0, peak = 0;
  size_t released = 0;

  assert_ok(dao_trace_start(path, options));
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching", NULL, &a));
  assert_ok(dao_stream_create(dao_place_sim(0), &s));
  for (i = 0; i < N; ++i) {
    size_t slot = next_random() % LIVE;
    if (live[slot] != NULL) {
      assert_ok(dao_allocator_free(a, live[slot]));
      ops[n_ops].alloc = 0;
      ops[n_ops++].ptr = live[slot];
      live[slot] = NULL;
    }
    live_req[slot] = 1 + (size_t)(next_random() % (256 * 1024));
    assert_ok(dao_allocator_alloc(a, live_req[slot], (i % 3) == 0 ? s : NULL, &live[slot]));
    ops[n_ops].alloc = 1;
    ops[n_ops].req = live_req[slot];
    ops[n_ops++].ptr = live[slot];
    if (i == N / 2) {
      assert_ok(dao_allocator_record_stream(a, live[slot], s));
      assert_ok(dao_trace_mark("half way \"there\""));
    }
  }
  for (i = 0; i < LIVE; ++i) {
    if (live[i] == NULL) continue;
    assert_ok(dao_allocator_free(a, live[i]));
    ops[n_ops].alloc = 0;
    ops[n_ops++].ptr = live[i];
  }
  assert_ok(dao_stream_synchronize(s));
  assert_ok(dao_allocator_trim(a, &released));
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  assert_ok(dao_allocator_get_stats(a, &st));
  assert_ok(dao_trace_stop());
  assert_ok(dao_stream_destroy(s));
  assert_ok(dao_allocator_destroy(a));

  read_trace(path, &t);
  assert_string_equal(t.source, "recorded");
  assert_string_equal(t.clock, "monotonic");
  assert_int_equal(t.ended, 1);
  assert_int_equal(t.lost, 0);
  assert_int_equal(t.unmatched, 0);
  assert_int_equal(t.incomplete_last_line, 0);
  assert_true(t.allocator_count >= 1);
  assert_string_equal(t.allocators[0].place, "sim:0");
  assert_string_equal(t.allocators[0].strategy, "caching");
  assert_true(t.stream_count >= 1);
  {
    size_t maps = 0, unmaps = 0, marks = 0, uses = 0, trims = 0;
    uint64_t last_t = 0;
    for (i = 0; i < t.count; ++i) {
      const dao_tr_record *r = &t.records[i];
      assert_true(r->t >= last_t); /* non-decreasing */
      last_t = r->t;
      switch (r->kind) {
        case DAO_TR_ALLOC:
        case DAO_TR_FREE:
          assert_true(k < n_ops);
          assert_int_equal(r->kind == DAO_TR_ALLOC, ops[k].alloc);
          assert_int_equal(r->ptr, (uint64_t)(uintptr_t)ops[k].ptr);
          if (r->kind == DAO_TR_ALLOC) {
            assert_int_equal(r->req, ops[k].req);
            assert_true(r->size >= r->req);
            cur += r->size;
            if (cur > peak) peak = cur;
          } else {
            cur -= t.records[r->match].size;
          }
          ++k;
          break;
        case DAO_TR_MAP: ++maps; break;
        case DAO_TR_UNMAP: ++unmaps; break;
        case DAO_TR_USE: ++uses; break;
        case DAO_TR_TRIM:
          ++trims;
          assert_int_equal(r->size, released);
          break;
        case DAO_TR_MARK:
          ++marks;
          assert_string_equal(t.texts[r->text], "half way \"there\"");
          break;
        default: break;
      }
    }
    assert_int_equal(k, n_ops); /* the same sequence, nothing more */
    assert_int_equal(peak, st.peak_allocated_bytes);
    assert_int_equal(cur, 0);
    assert_true(maps > 0);
    assert_true(unmaps > 0);
    assert_int_equal(uses, 1);
    assert_int_equal(trims, 1);
    assert_int_equal(marks, 1);
  }
  {
    dao_trace_stats ts;
    memset(&ts, 0, sizeof ts);
    ts.struct_size = sizeof ts;
    assert_ok(dao_trace_get_stats(&ts));
    assert_int_equal(ts.active, 0);
    assert_int_equal(ts.records, t.lines - 1);
    assert_int_equal(ts.lost, 0);
  }
  dao_trace_free(&t);
  remove(path);
}

static void round_trip(void **state) {
  (void)state;
  round_trip_with("flush_ms=10", "round_trip"); /* the binary encoding */
}

static void round_trip_jsonl(void **state) {
  (void)state;
  round_trip_with("flush_ms=10,format=jsonl", "round_trip_jsonl");
}

static void round_trip_monotonic(void **state) {
  (void)state;
  round_trip_with("flush_ms=10,clock=monotonic", "round_trip_monotonic");
}

/* The reader on hand-made files of the binary encoding: a frame cut short
   (a killed writer) is ignored and flagged, a foreign tag or a record frame
   of a wrong length is an error naming the byte, a record kind the reader
   does not know is counted and skipped, an unknown encoding is refused. */
static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static size_t put_record(unsigned char *b, uint64_t t, uint64_t ptr, uint64_t size, unsigned kind) {
  size_t i;
  memset(b, 0, 48);
  for (i = 0; i < 8; ++i) {
    b[i] = (unsigned char)(t >> (8 * i));
    b[8 + i] = (unsigned char)(ptr >> (8 * i));
    b[16 + i] = (unsigned char)(size >> (8 * i));
    b[24 + i] = (unsigned char)(size >> (8 * i));
  }
  b[32] = 1; /* allocator 1 */
  b[44] = (unsigned char)kind;
  b[45] = 1; /* tid 1 */
  return 48;
}

static void binary_encoding_bad_input(void **state) {
  (void)state;
  static const char header[] =
      "{\"format\":\"dao-trace\",\"version\":1,\"libdao\":\"0\",\"pid\":1,\"clock\":"
      "\"monotonic\",\"start_ns\":0,\"encoding\":\"binary\",\"source\":\"recorded\"}\n";
  static const char decl[] =
      "{\"k\":\"allocator\",\"t\":0,\"id\":1,\"place\":\"cpu\",\"strategy\":\"buddy\","
      "\"config\":\"\",\"capacity\":0}\n";
  unsigned char buf[1024];
  size_t n = 0, frame;
  const char *path = trace_path("binary_bad");
  char err[512];
  dao_trace t;

  memcpy(buf, header, sizeof header - 1);
  n = sizeof header - 1;
  /* a J frame with the declaration */
  buf[n] = 'J';
  buf[n + 1] = buf[n + 2] = buf[n + 3] = 0;
  buf[n + 4] = (unsigned char)(sizeof decl - 1);
  buf[n + 5] = buf[n + 6] = buf[n + 7] = 0;
  memcpy(buf + n + 8, decl, sizeof decl - 1);
  n += 8 + sizeof decl - 1;
  /* an R frame: alloc, an unknown kind (200), free */
  frame = n;
  memcpy(buf + n, "R\0\0\0", 4);
  buf[n + 4] = 3 * 48;
  buf[n + 5] = buf[n + 6] = buf[n + 7] = 0;
  n += 8;
  n += put_record(buf + n, 5, 4096, 256, 0);
  n += put_record(buf + n, 6, 0, 0, 200);
  n += put_record(buf + n, 7, 4096, 0, 1);

  write_bytes(path, buf, n);
  read_trace(path, &t);
  assert_int_equal(t.count, 2);
  assert_int_equal(t.records[0].kind, DAO_TR_ALLOC);
  assert_int_equal(t.records[0].size, 256);
  assert_int_equal(t.records[0].tid, 1);
  assert_int_equal(t.records[0].stack, DAO_TR_NONE);
  assert_int_equal(t.records[1].kind, DAO_TR_FREE);
  assert_int_equal(t.records[1].match, 0);
  assert_int_equal(t.unknown_kinds, 1);
  assert_int_equal(t.allocator_count, 1);
  assert_int_equal(t.incomplete_last_line, 0);
  dao_trace_free(&t);

  /* cut inside the last record: the frame is ignored and flagged */
  write_bytes(path, buf, n - 10);
  read_trace(path, &t);
  assert_int_equal(t.count, 0);
  assert_int_equal(t.incomplete_last_line, 1);
  dao_trace_free(&t);

  /* a record frame whose length is not a multiple of 48 */
  buf[frame + 4] = 3 * 48 - 1;
  write_bytes(path, buf, n - 1);
  assert_int_equal(dao_trace_read(path, &t, err, sizeof err, NULL, NULL), -1);
  assert_non_null(strstr(err, "not a multiple of 48"));
  assert_null(t.records);
  buf[frame + 4] = 3 * 48;

  /* a foreign tag */
  buf[frame] = 'X';
  write_bytes(path, buf, n);
  assert_int_equal(dao_trace_read(path, &t, err, sizeof err, NULL, NULL), -1);
  assert_non_null(strstr(err, "not a frame"));
  buf[frame] = 'R';

  /* an encoding this reader does not know */
  memcpy(buf + (strstr(header, "binary") - header), "binarz", 6);
  write_bytes(path, buf, n);
  assert_int_equal(dao_trace_read(path, &t, err, sizeof err, NULL, NULL), -1);
  assert_non_null(strstr(err, "unknown \"encoding\""));
  remove(path);
}

static void place_defaults_and_buddy(void **state) {
  (void)state;
  const char *path = trace_path("defaults");
  void *p = NULL, *q = NULL;
  dao_allocator *b;
  dao_trace t;
  size_t i, allocs = 0, frees = 0;
  assert_ok(dao_trace_start(path, NULL));
  assert_ok(dao_alloc(dao_place_cpu(), 1000, &p));
  assert_ok(dao_free(dao_place_cpu(), p));
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", "upstream=system", &b));
  assert_ok(dao_allocator_alloc(b, 5000, NULL, &q));
  assert_ok(dao_allocator_free(b, q));
  assert_ok(dao_trace_stop());
  assert_ok(dao_allocator_destroy(b));
  read_trace(path, &t);
  /* the stacked one is one allocator: its upstream is not recorded apart */
  assert_int_equal(t.allocator_count, 2);
  for (i = 0; i < t.count; ++i) {
    allocs += t.records[i].kind == DAO_TR_ALLOC;
    frees += t.records[i].kind == DAO_TR_FREE;
  }
  assert_int_equal(allocs, 2);
  assert_int_equal(frees, 2);
  dao_trace_free(&t);
  remove(path);
}

static void stacks_when_asked(void **state) {
  (void)state;
  const char *path = trace_path("stacks");
  dao_allocator *a;
  void *p[4];
  dao_trace t;
  size_t i, with_stack = 0;
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching", NULL, &a));
  assert_ok(dao_trace_start(path, "stacks=true,depth=8"));
  for (i = 0; i < 4; ++i) assert_ok(dao_allocator_alloc(a, 4096, NULL, &p[i]));
  for (i = 0; i < 4; ++i) assert_ok(dao_allocator_free(a, p[i]));
  assert_ok(dao_trace_stop());
  assert_ok(dao_allocator_destroy(a));
  read_trace(path, &t);
  assert_true(t.stack_count >= 1);
  assert_true(t.stack_count <= 4); /* deduplicated: two call sites here */
  for (i = 0; i < t.count; ++i) {
    const dao_tr_record *r = &t.records[i];
    if (r->kind != DAO_TR_ALLOC && r->kind != DAO_TR_FREE) continue;
    assert_int_not_equal(r->stack, DAO_TR_NONE);
    const dao_tr_stack *s = dao_trace_stack(&t, r->stack);
    assert_non_null(s);
    assert_true(s->frame_count >= 1 && s->frame_count <= 8);
    /* libdao's own frames are left out: the first is this test's */
    assert_null(strstr(s->frames[0], "libdao"));
    ++with_stack;
  }
  assert_int_equal(with_stack, 8);
  dao_trace_free(&t);
  remove(path);
}

static void tiny_ring_counts_lost(void **state) {
  (void)state;
  const char *path = trace_path("lost");
  dao_allocator *a;
  dao_trace_stats ts;
  dao_trace t;
  int i;
  void *p;
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", NULL, &a));
  assert_ok(dao_trace_start(path, "ring=4KiB,flush_ms=60000"));
  for (i = 0; i < 200000; ++i) {
    assert_ok(dao_allocator_alloc(a, 512, NULL, &p));
    assert_ok(dao_allocator_free(a, p));
  }
  memset(&ts, 0, sizeof ts);
  ts.struct_size = sizeof ts;
  assert_ok(dao_trace_get_stats(&ts));
  assert_int_equal(ts.active, 1);
  assert_true(ts.lost > 0); /* 64 cells: the writer cannot keep up */
  assert_ok(dao_trace_stop());
  assert_ok(dao_trace_get_stats(&ts));
  assert_ok(dao_allocator_destroy(a));
  read_trace(path, &t);
  assert_int_equal(t.ended, 1);
  assert_int_equal(t.lost, ts.lost); /* every drop is in a `lost` record */
  assert_int_equal(t.records[t.count - 1].kind, DAO_TR_END);
  assert_int_equal(t.records[t.count - 1].req, ts.lost);
  assert_int_equal(t.lines - 1, ts.records);
  dao_trace_free(&t);
  remove(path);
}

static void killed_recorder_leaves_a_readable_file(void **state) {
  (void)state;
  const char *path = trace_path("killed");
  int status = 0;
  dao_trace t;
  size_t i, allocs = 0;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    void *p[100];
    int j;
    struct timespec pause = {0, 200 * 1000 * 1000};
    if (dao_trace_start(path, "flush_ms=5") != DAO_OK) _exit(1);
    for (j = 0; j < 100; ++j)
      if (dao_alloc(dao_place_cpu(), 4096, &p[j]) != DAO_OK) _exit(1);
    nanosleep(&pause, NULL); /* several flushes */
    for (j = 0; j < 100; ++j) dao_free(dao_place_cpu(), p[j]);
    raise(SIGKILL); /* no stop, no atexit */
    _exit(2);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  read_trace(path, &t);
  assert_int_equal(t.ended, 0); /* no `end` record after a kill */
  for (i = 0; i < t.count; ++i) allocs += t.records[i].kind == DAO_TR_ALLOC;
  assert_int_equal(allocs, 100); /* flushed before the pause */
  dao_trace_free(&t);
  remove(path);
}

static void fork_while_recording(void **state) {
  (void)state;
  const char *path = trace_path("forked");
  int status = 0;
  dao_trace t;
  void *p = NULL;
  pid_t pid;
  assert_ok(dao_trace_start(path, "flush_ms=5"));
  assert_ok(dao_alloc(dao_place_cpu(), 4096, &p));
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* the child records nothing of the parent's recording, and its exit
       (atexit stop) does not wait for the parent's writer thread */
    dao_trace_stats ts;
    void *q = NULL;
    memset(&ts, 0, sizeof ts);
    ts.struct_size = sizeof ts;
    if (dao_trace_get_stats(&ts) != DAO_OK || ts.active) _exit(3);
    if (dao_alloc(dao_place_cpu(), 100, &q) != DAO_OK) _exit(4);
    dao_free(dao_place_cpu(), q);
    if (dao_trace_stop() != DAO_ERR_INVALID_STATE) _exit(5);
    exit(0);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_ok(dao_free(dao_place_cpu(), p));
  assert_ok(dao_trace_stop());
  read_trace(path, &t);
  assert_int_equal(t.ended, 1);
  dao_trace_free(&t);
  remove(path);
}

/* ---- threads ---- */

static dao_allocator *g_shared;

static void *worker(void *arg) {
  int i;
  (void)arg;
  for (i = 0; i < 2000; ++i) {
    void *p = NULL;
    if (dao_allocator_alloc(g_shared, 256 + (size_t)(i % 7) * 512, NULL, &p) != DAO_OK) return arg;
    if (dao_allocator_free(g_shared, p) != DAO_OK) return arg;
  }
  return NULL;
}

static void threads_pair_every_free(void **state) {
  (void)state;
  const char *path = trace_path("threads");
  pthread_t th[4];
  dao_trace t;
  size_t i, allocs = 0, frees = 0;
  assert_ok(dao_allocator_create(dao_place_sim(1), "caching", NULL, &g_shared));
  assert_ok(dao_trace_start(path, "ring=16MiB"));
  for (i = 0; i < 4; ++i) assert_int_equal(pthread_create(&th[i], NULL, worker, NULL), 0);
  for (i = 0; i < 4; ++i) {
    void *r = NULL;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  assert_ok(dao_trace_stop());
  assert_ok(dao_allocator_destroy(g_shared));
  read_trace(path, &t);
  assert_int_equal(t.lost, 0);
  /* a block freed by one thread and handed to another comes after its free */
  assert_int_equal(t.unmatched, 0);
  for (i = 0; i < t.count; ++i) {
    allocs += t.records[i].kind == DAO_TR_ALLOC;
    frees += t.records[i].kind == DAO_TR_FREE;
  }
  assert_int_equal(allocs, 4 * 2000);
  assert_int_equal(frees, 4 * 2000);
  dao_trace_free(&t);
  remove(path);
}

/* ---- the out-of-memory observer ---- */

typedef struct observed {
  int calls;
  size_t size;
  dao_allocator *allocator;
  dao_allocator *other;
  int snapshot_blocks;
  dao_status alloc_same, destroy_same, set_same, alloc_other, mark, flush, stop;
  int message_ok;
  int stop_trace;
} observed;

static void on_oom(dao_allocator *a, size_t size, dao_stream stream, void *user) {
  observed *o = (observed *)user;
  dao_snapshot *snap = NULL;
  void *p = NULL;
  (void)stream;
  ++o->calls;
  o->size = size;
  o->allocator = a;
  o->message_ok = strstr(dao_last_error(), "out of memory") != NULL;
  if (dao_allocator_snapshot(a, &snap) == DAO_OK) {
    size_t n = 0;
    dao_snapshot_segment_count(snap, &n);
    o->snapshot_blocks = (int)n;
    dao_snapshot_destroy(snap);
  } else {
    o->snapshot_blocks = -1;
  }
  o->alloc_same = dao_allocator_alloc(a, 256, NULL, &p);
  o->destroy_same = dao_allocator_destroy(a);
  o->set_same = dao_allocator_set_oom_callback(a, NULL, NULL);
  o->alloc_other = dao_allocator_alloc(o->other, 256, NULL, &p);
  if (o->alloc_other == DAO_OK) dao_allocator_free(o->other, p);
  o->mark = dao_trace_mark("out of memory here");
  o->flush = dao_trace_flush();
  o->stop = o->stop_trace ? dao_trace_stop() : DAO_OK;
}

static void oom_callback_may_snapshot_and_stop(void **state) {
  (void)state;
  const char *path = trace_path("oom");
  dao_allocator *a, *other;
  observed o;
  void *big = NULL, *p = NULL;
  dao_trace t;
  size_t i, ooms = 0;
  memset(&o, 0, sizeof o);
  assert_ok(dao_allocator_create(dao_place_sim(0), "caching", NULL, &a));
  assert_ok(dao_allocator_create(dao_place_cpu(), "buddy", NULL, &other));
  o.other = other;
  o.stop_trace = 1;
  assert_ok(dao_allocator_set_oom_callback(a, on_oom, &o));
  assert_ok(dao_trace_start(path, NULL));
  assert_ok(dao_allocator_alloc(a, 16 << 20, NULL, &big));
  assert_failure_mentions(dao_allocator_alloc(a, (size_t)1 << 30, NULL, &p), DAO_ERR_OUT_OF_MEMORY,
                          "out of memory");
  assert_null(p);
  assert_int_equal(o.calls, 1);
  assert_int_equal(o.size, (size_t)1 << 30);
  assert_ptr_equal(o.allocator, a);
  assert_true(o.snapshot_blocks >= 1);
  assert_true(o.message_ok);
  assert_int_equal(o.alloc_same, DAO_ERR_INVALID_STATE);
  assert_int_equal(o.destroy_same, DAO_ERR_INVALID_STATE);
  assert_int_equal(o.set_same, DAO_ERR_INVALID_STATE);
  assert_int_equal(o.alloc_other, DAO_OK);
  assert_int_equal(o.mark, DAO_OK);
  assert_int_equal(o.flush, DAO_OK);
  assert_int_equal(o.stop, DAO_OK);
  /* afterwards the allocator works as before */
  assert_ok(dao_allocator_alloc(a, 4096, NULL, &p));
  assert_ok(dao_allocator_free(a, p));
  assert_ok(dao_allocator_free(a, big));
  assert_ok(dao_allocator_set_oom_callback(a, NULL, NULL));
  assert_status(dao_allocator_alloc(a, (size_t)1 << 30, NULL, &p), DAO_ERR_OUT_OF_MEMORY);
  assert_int_equal(o.calls, 1); /* removed */
  assert_ok(dao_allocator_destroy(a));
  assert_ok(dao_allocator_destroy(other));

  read_trace(path, &t);
  assert_int_equal(t.ended, 1);
  for (i = 0; i < t.count; ++i) {
    if (t.records[i].kind != DAO_TR_OOM) continue;
    ++ooms;
    assert_int_equal(t.records[i].size, (uint64_t)1 << 30);
    assert_non_null(strstr(t.texts[t.records[i].text], "out of memory"));
  }
  assert_int_equal(ooms, 1);
  dao_trace_free(&t);
  remove(path);
}

static int g_default_calls;
static void on_default_oom(dao_allocator *a, size_t size, dao_stream stream, void *user) {
  void *p = NULL;
  (void)size;
  (void)stream;
  (void)user;
  ++g_default_calls;
  /* dao_alloc on the same place is the same allocator: refused */
  if (dao_alloc(dao_place_sim(1), 256, &p) == DAO_ERR_INVALID_STATE &&
      dao_allocator_alloc(a, 256, NULL, &p) == DAO_ERR_INVALID_STATE)
    ++g_default_calls;
}

static void oom_callback_of_a_place_default(void **state) {
  (void)state;
  dao_allocator *def;
  void *p = NULL;
  assert_ok(dao_place_allocator(dao_place_sim(1), &def));
  assert_ok(dao_allocator_set_oom_callback(def, on_default_oom, NULL));
  assert_status(dao_alloc(dao_place_sim(1), (size_t)1 << 30, &p), DAO_ERR_OUT_OF_MEMORY);
  assert_int_equal(g_default_calls, 2);
  assert_ok(dao_allocator_set_oom_callback(def, NULL, NULL));
}

static int env_main(void) {
  /* DAO_TRACE was set: recording runs from the library's load */
  dao_trace_stats ts;
  void *p = NULL;
  dao_trace t;
  char err[512];
  memset(&ts, 0, sizeof ts);
  ts.struct_size = sizeof ts;
  if (dao_trace_get_stats(&ts) != DAO_OK || !ts.active) {
    fprintf(stderr, "DAO_TRACE is set but no recording runs\n");
    return 1;
  }
  if (dao_alloc(dao_place_cpu(), 100, &p) != DAO_OK || dao_free(dao_place_cpu(), p) != DAO_OK)
    return 1;
  if (dao_trace_stop() != DAO_OK) return 1;
  if (dao_trace_read(getenv("DAO_TRACE"), &t, err, sizeof err, NULL, NULL) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  {
    size_t i, allocs = 0, frees = 0;
    for (i = 0; i < t.count; ++i) {
      allocs += t.records[i].kind == DAO_TR_ALLOC;
      frees += t.records[i].kind == DAO_TR_FREE;
    }
    if (allocs != 1 || frees != 1 || !t.ended) {
      fprintf(stderr, "unexpected trace: %zu records, %zu allocs, %zu frees\n", t.count, allocs,
              frees);
      return 1;
    }
  }
  dao_trace_free(&t);
  remove(getenv("DAO_TRACE"));
  printf("recording from DAO_TRACE: ok\n");
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip),
      cmocka_unit_test(round_trip_jsonl),
      cmocka_unit_test(round_trip_monotonic),
      cmocka_unit_test(binary_encoding_bad_input),
      cmocka_unit_test(place_defaults_and_buddy),
      cmocka_unit_test(stacks_when_asked),
      cmocka_unit_test(tiny_ring_counts_lost),
      cmocka_unit_test(killed_recorder_leaves_a_readable_file),
      cmocka_unit_test(fork_while_recording),
      cmocka_unit_test(threads_pair_every_free),
      cmocka_unit_test(oom_callback_may_snapshot_and_stop),
      cmocka_unit_test(oom_callback_of_a_place_default),
  };
  if (getenv("DAO_TRACE") != NULL && getenv("DAO_TRACE")[0] != '\0') return env_main();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
