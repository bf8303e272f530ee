// A stream-ordered free whose event cannot be recorded (issue 20, lock
// order): a block used on stream S2 (dao_allocator_record_stream) is freed
// while S2 is busy, and recording the free's event on S2 fails (the fault
// injection's `record` site: a SIM stream's queue out of memory). The free
// used to synchronize S2 instead, holding the caching allocator's lock, so a
// host function on S2 that allocates from the same allocator deadlocked
// with it. Now the deferred free waits for S2 to run dry, without waiting
// in the free. Checked for each kind of caching allocator:
//   - the free returns while S2's host function is still held by a gate
//     (a wait for S2 there would never end: the watchdog wait_or_die turns
//     that into a failure);
//   - the block is not reused before S2 has run (an allocation meanwhile
//     gets another block);
//   - the host function, once let go, allocates and frees from the same
//     allocator;
//   - after S2 has run, the freed memory is given back by a trim, and
//     nothing stays allocated.
// C++ only to reach the internal fault switch (the static library).
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include <csetjmp>
#include <cstdarg>
#include <cstddef>

extern "C" {
#include <cmocka.h>  // before dao_test.h includes it again: C linkage
}

#include "caching_test_util.h"
#include "resource/fault_injection.hpp"

namespace faults = dao::detail::faults;

namespace {

struct free_call {
  dao_allocator* a = nullptr;
  void* p = nullptr;
  dao_status status = DAO_ERR_INTERNAL;
  int finished = 0;
};

void* free_thread(void* arg) {
  free_call* c = static_cast<free_call*>(arg);
  c->status = dao_allocator_free(c->a, c->p);
  __atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
  return nullptr;
}

void free_whose_record_fails_does_not_wait(void** state) {
  static const char* const configs[] = {nullptr, "expandable_segments=false", "fast_reuse=true"};
  (void)state;
  for (const char* config : configs) {
    dao_allocator* a = make(big_place(), config);
    dao_stream s1 = make_stream(big_place());
    dao_stream s2 = make_stream(big_place());
    void* p = alloc_ok(a, 64 * KIB, s1);
    assert_ok(dao_allocator_record_stream(a, p, s2));
    static allocating_fn fn;
    gate_init(&fn.g);
    fn.a = a;
    fn.status = DAO_ERR_INTERNAL;
    assert_ok(dao_launch_host_func(s2, gated_alloc_fn, &fn));
    gate_wait_entered(&fn.g);

    faults::reset();
    faults::fail_nth(faults::record, 1);  // the free's record on S2
    free_call call;
    call.a = a;
    call.p = p;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, nullptr, free_thread, &call), 0);
    wait_or_die(&call.finished,
                "free_whose_record_fails_does_not_wait: the free waited for the busy stream");
    assert_int_equal(pthread_join(thread, nullptr), 0);
    assert_int_equal(call.status, DAO_OK);
    assert_int_equal(faults::injected(faults::record), 1);
    faults::reset();

    // S2 has not run: the block is still pending.
    void* q = alloc_ok(a, 64 * KIB, s1);
    assert_ptr_not_equal(q, p);
    assert_ok(dao_allocator_free(a, q));

    // The host function allocates from the allocator, which no one holds.
    gate_open(&fn.g);
    assert_ok(dao_stream_synchronize(s2));
    assert_int_equal(fn.status, DAO_OK);
    gate_destroy(&fn.g);

    assert_ok(dao_stream_synchronize(s1));
    assert_ok(dao_allocator_trim(a, nullptr));
    assert_int_equal(get_stat(a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL).current, 0);
    assert_int_equal(reserved_now(a), 0);
    destroy(a);
    drop_stream(s1);
    drop_stream(s2);
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(free_whose_record_fails_does_not_wait, baseline, cleanup),
  };
  return cmocka_run_group_tests(tests, setup, nullptr);
}
