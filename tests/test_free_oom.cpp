// A free, a trim and a destroy must not fail for lack of host memory
// (issue 20): what they need is reserved beforehand, at alloc or
// record_stream time. For every k, the k-th C++ allocation inside the call
// throws std::bad_alloc (new_fault.hpp, arm_thread); the call must still return
// DAO_OK, and the memory must come back (nothing lost, nothing leaked).
#include <cstdio>
#include <cstring>
#include <string>

#include "dao.h"
#include "new_fault.hpp"

namespace {

constexpr long kMaxK = 1000;
int failures = 0;

void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  ++failures;
}

bool ok(dao_status st, const std::string& what) {
  if (st == DAO_OK) return true;
  fail(what + ": " + dao_status_string(st) + ": " + dao_last_error());
  return false;
}

// The call under test, armed at k; returns whether the fault fired.
template <class Call>
bool armed(long k, const std::string& what, Call call) {
  dao_test::new_fault::arm_thread(k);
  const dao_status st = call();
  const bool fired = dao_test::new_fault::disarm_thread();
  if (st != DAO_OK) {
    fail(what + " at k " + std::to_string(k) + ": " + dao_status_string(st) + ": " +
         dao_last_error());
  }
  return fired;
}

enum class step { free, trim };

// alloc -> (record_stream on another stream) -> free -> trim, on a caching
// allocator of `config`, with the fault armed in `armed_step`. Returns
// whether it fired.
bool workload(const char* config, bool with_stream, step armed_step, long k) {
  const std::string what = std::string("caching '") + config + "'" +
                           (with_stream ? " with record_stream" : "") +
                           (armed_step == step::free ? ": free" : ": trim");
  dao_allocator* a = nullptr;
  dao_stream s = nullptr;
  if (!ok(dao_allocator_create(dao_place_sim(0), "caching", config, &a), what + ": create"))
    return false;
  if (with_stream && !ok(dao_stream_create(dao_place_sim(0), &s), what + ": stream")) {
    dao_allocator_destroy(a);
    return false;
  }
  bool fired = false;
  void* p[3] = {};
  const size_t sizes[3] = {1000, 3u << 20, 64u << 10};
  for (int i = 0; i < 3; ++i)
    ok(dao_allocator_alloc(a, sizes[i], nullptr, &p[i]), what + ": alloc");
  if (with_stream) {
    for (void* q : p) ok(dao_allocator_record_stream(a, q, s), what + ": record_stream");
  }
  for (int i = 0; i < 3; ++i) {
    if (armed_step == step::free && i == 1) {
      fired = armed(k, what, [&] { return dao_allocator_free(a, p[i]); });
    } else {
      ok(dao_allocator_free(a, p[i]), what + ": free");
    }
  }
  if (s != nullptr) ok(dao_stream_synchronize(s), what + ": synchronize");
  size_t released = 0;
  if (armed_step == step::trim) {
    fired = armed(k, what, [&] { return dao_allocator_trim(a, &released); });
  } else {
    ok(dao_allocator_trim(a, &released), what + ": trim");
  }
  // Nothing lost: every block came back (a free that failed would leave it
  // live and the destroy busy).
  dao_allocator_stats st = {};
  st.struct_size = sizeof st;
  if (ok(dao_allocator_get_stats(a, &st), what + ": stats") && st.allocated_bytes != 0)
    fail(what + " at k " + std::to_string(k) + ": " + std::to_string(st.allocated_bytes) +
         " bytes still allocated");
  ok(dao_allocator_destroy(a), what + ": destroy");
  if (s != nullptr) ok(dao_stream_destroy(s), what + ": stream destroy");
  return fired;
}

void sweep(const char* config, bool with_stream, step armed_step) {
  long k = 1;
  for (; k <= kMaxK; ++k)
    if (!workload(config, with_stream, armed_step, k)) break;
  std::printf("caching '%s'%s, %s: %ld allocation(s) swept\n", config,
              with_stream ? " with record_stream" : "", armed_step == step::free ? "free" : "trim",
              k - 1);
  if (k > kMaxK) fail("the fault still fired at kMaxK");
}

// The place defaults: dao_free of every strategy a place kind has by default.
void sweep_place_free(dao_place place, const char* name) {
  long k = 1;
  for (; k <= kMaxK; ++k) {
    void* p = nullptr;
    if (!ok(dao_alloc(place, 5000, &p), std::string(name) + ": dao_alloc")) return;
    if (!armed(k, std::string(name) + ": dao_free", [&] { return dao_free(place, p); })) break;
  }
  std::printf("%s: dao_free: %ld allocation(s) swept\n", name, k - 1);
}

}  // namespace

int main() {
  for (const char* config : {"", "expandable_segments=true", "fast_reuse=false"}) {
    for (bool with_stream : {false, true}) {
      sweep(config, with_stream, step::free);
      sweep(config, with_stream, step::trim);
    }
  }
  sweep_place_free(dao_place_cpu(), "cpu");
  sweep_place_free(dao_place_sim(1), "sim 1");
  if (failures != 0) {
    std::fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  std::printf("free and trim never failed for lack of memory\n");
  return 0;
}
