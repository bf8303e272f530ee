// Fault injection sweeps (issue 9): for each strategy and place, and for the
// tiered pool, a representative workload runs once to count the calls into
// the system resource, then once for every call k with the k-th call made to
// fail (and with random failures). Each run checks that
//  - every failure reaches the caller as a status with a message,
//  - no live block or tensor is corrupted or lost (patterns, statistics),
//  - the allocator or a new pool works again once nothing fails,
//  - nothing leaks: the SIM device's free memory returns to its capacity
//    (LeakSanitizer checks host memory in the sanitizer run).
// The faults come from resource/fault_injection.hpp, reached through the
// static library.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "dao.h"
#include "host_test_util.hpp"
#include "resource/fault_injection.hpp"

namespace faults = dao::detail::faults;

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

using dao_test::fill;
using dao_test::intact;
using dao_test::sim_free;

// --------------------------------------------------------------- allocators

struct allocator_case {
  const char* strategy;
  const char* config;
  dao_place place;
  bool with_stream;  // caching: a stream and record_stream in the workload
};

struct block {
  void* p;
  std::size_t size;
  std::uint32_t seed;
};

struct outcome {
  int failures = 0;  // calls that reported a failure
};

// The workload: 90 steps of allocations (1 KiB to 8 MiB) and frees, a
// trim, and on a stream a cross-stream use. Failures are allowed (the
// request is skipped) but must be OUT_OF_MEMORY (or BACKEND for a copy)
// with a message; everything that succeeded must stay intact.
outcome run_allocator_workload(const allocator_case& c, std::vector<block>& live, dao_allocator* a,
                               dao_stream stream) {
  outcome out;
  std::uint64_t rng = 12345;
  for (int step = 0; step < 90; ++step) {
    rng = mix64(rng);
    const bool do_free = !live.empty() && rng % 100 < 40;
    if (do_free) {
      const std::size_t i = (rng >> 8) % live.size();
      assert_true(intact(live[i].p, live[i].size, live[i].seed));
      assert_int_equal(dao_allocator_free(a, live[i].p), DAO_OK);
      live[i] = live.back();
      live.pop_back();
      continue;
    }
    const double u = static_cast<double>((rng >> 11) & 0xFFFFF) / 1048576.0;
    const std::size_t size = static_cast<std::size_t>(KiB * (1u << static_cast<int>(u * 13)));
    void* p = reinterpret_cast<void*>(0x1);
    const dao_status s = dao_allocator_alloc(a, size, stream, &p);
    if (s != DAO_OK) {
      assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
      assert_null(p);
      assert_true(std::strlen(dao_last_error()) > 0);
      ++out.failures;
      continue;
    }
    const auto seed = static_cast<std::uint32_t>(rng >> 40);
    fill(p, size, seed);
    live.push_back(block{p, size, seed});
    if (c.with_stream && step % 9 == 0) {
      // Used on the NULL stream too: its free is deferred until then.
      assert_int_equal(dao_allocator_record_stream(a, p, nullptr), DAO_OK);
    }
    if (step == 45) {
      size_t released = 0;
      assert_int_equal(dao_allocator_trim(a, &released), DAO_OK);
    }
  }
  return out;
}

// Live blocks intact and statistics that agree with them.
void check_consistent(dao_allocator* a, const std::vector<block>& live) {
  std::size_t usable_sum = 0;
  for (const block& b : live) {
    assert_true(intact(b.p, b.size, b.seed));
    size_t usable = 0;
    assert_int_equal(dao_allocator_usable_size(a, b.p, &usable), DAO_OK);
    assert_true(usable >= b.size);
    usable_sum += usable;
  }
  dao_allocator_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  assert_int_equal(dao_allocator_get_stats(a, &st), DAO_OK);
  assert_int_equal(st.live_blocks, live.size());
  assert_int_equal(st.allocated_bytes, usable_sum);
  assert_true(st.reserved_bytes >= st.allocated_bytes);
}

// Of the last case, taken before it disarmed: faults injected, calls made.
std::uint64_t g_injected = 0, g_alloc_calls = 0, g_map_calls = 0;

void note_faults() {
  g_injected = faults::injected(faults::alloc) + faults::injected(faults::map);
  g_alloc_calls = faults::calls(faults::alloc);
  g_map_calls = faults::calls(faults::map);
}

// One run of the workload with whatever is armed; returns the failures seen.
int run_allocator_case(const allocator_case& c) {
  const bool sim = c.place.kind == DAO_PLACE_SIM;
  const std::size_t baseline = sim ? sim_free(c.place.device) : 0;
  dao_allocator* a = nullptr;
  dao_status s = dao_allocator_create(c.place, c.strategy, c.config, &a);
  if (s != DAO_OK) {  // a failure in create (initial_pool) is a valid outcome
    note_faults();
    assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
    assert_null(a);
    if (sim) assert_int_equal(sim_free(c.place.device), baseline);
    return 1;
  }
  dao_stream stream = nullptr;
  if (c.with_stream) assert_int_equal(dao_stream_create(c.place, &stream), DAO_OK);
  std::vector<block> live;
  const outcome out = run_allocator_workload(c, live, a, stream);
  check_consistent(a, live);
  // Memory is available again: the allocator works.
  note_faults();
  faults::reset();
  void* p = nullptr;
  assert_int_equal(dao_allocator_alloc(a, 3 * MiB, stream, &p), DAO_OK);
  fill(p, 3 * MiB, 77);
  assert_true(intact(p, 3 * MiB, 77));
  assert_int_equal(dao_allocator_free(a, p), DAO_OK);
  check_consistent(a, live);
  for (const block& b : live) assert_int_equal(dao_allocator_free(a, b.p), DAO_OK);
  if (stream != nullptr) assert_int_equal(dao_stream_destroy(stream), DAO_OK);
  assert_int_equal(dao_allocator_destroy(a), DAO_OK);
  if (sim) assert_int_equal(sim_free(c.place.device), baseline);  // nothing leaked
  return out.failures;
}

const allocator_case kAllocatorCases[] = {
    {"buddy", "chunk_size=4MiB", dao_place{DAO_PLACE_CPU, 0}, false},
    {"buddy", "chunk_size=4MiB,initial_pool=8MiB", dao_place{DAO_PLACE_SIM, 0}, false},
    {"caching", nullptr, dao_place{DAO_PLACE_CPU, 0}, false},
    {"caching", nullptr, dao_place{DAO_PLACE_SIM, 0}, true},
    {"caching", "expandable_segments=false", dao_place{DAO_PLACE_SIM, 0}, true},
    {"caching", "reserve_slack=0", dao_place{DAO_PLACE_SIM, 0}, false},
    {"system", nullptr, dao_place{DAO_PLACE_SIM, 0}, false},
};

void sweep_allocators(void**) {
  std::uint64_t swept = 0;
  for (const allocator_case& c : kAllocatorCases) {
    faults::reset();
    assert_int_equal(run_allocator_case(c), 0);
    const std::uint64_t allocs = g_alloc_calls;
    const std::uint64_t maps = g_map_calls;
    assert_true(allocs + maps > 0);
    for (faults::site site : {faults::alloc, faults::map}) {
      const std::uint64_t n = site == faults::alloc ? allocs : maps;
      for (std::uint64_t k = 1; k <= n; ++k) {
        faults::reset();
        faults::fail_nth(site, k);
        run_allocator_case(c);
        // The k-th call was reached and failed: the calls before it are
        // those of the run without faults. (The failure itself may not reach
        // the caller: caching retries after releasing its cache.)
        assert_int_equal(g_injected, 1);
        ++swept;
      }
    }
    // Random failures: a quarter of the calls, several seeds.
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      faults::reset();
      faults::fail_with_probability(faults::alloc, 0.25, seed);
      faults::fail_with_probability(faults::map, 0.25, seed + 100);
      run_allocator_case(c);
    }
  }
  faults::reset();
  print_message("fault injection: %llu allocator runs with the k-th system call failing\n",
                static_cast<unsigned long long>(swept));
}

// Every injected failure is seen by the caller: with every call failing,
// no allocation succeeds and each says why.
void every_call_failing(void**) {
  for (const allocator_case& c : kAllocatorCases) {
    if (c.config != nullptr && std::strstr(c.config, "initial_pool") != nullptr) continue;
    faults::reset();
    faults::fail_with_probability(faults::alloc, 1.0, 1);
    faults::fail_with_probability(faults::map, 1.0, 1);
    dao_allocator* a = nullptr;
    assert_int_equal(dao_allocator_create(c.place, c.strategy, c.config, &a), DAO_OK);
    void* p = reinterpret_cast<void*>(0x1);
    assert_int_equal(dao_allocator_alloc(a, 64 * KiB, nullptr, &p), DAO_ERR_OUT_OF_MEMORY);
    assert_null(p);
    const std::string message = dao_last_error();
    assert_true(message.find("injected fault") != std::string::npos ||
                message.find("out of memory") != std::string::npos);
    faults::reset();
    assert_int_equal(dao_allocator_alloc(a, 64 * KiB, nullptr, &p), DAO_OK);
    assert_int_equal(dao_allocator_free(a, p), DAO_OK);
    assert_int_equal(dao_allocator_destroy(a), DAO_OK);
  }
}

// The environment spec parser.
void spec_parser(void**) {
  faults::reset();
  assert_true(faults::arm_from_spec("alloc=2"));
  assert_false(faults::inject(faults::alloc));
  assert_true(faults::inject(faults::alloc));
  assert_false(faults::inject(faults::alloc));  // once
  faults::reset();
  assert_true(faults::arm_from_spec("map=p1,seed=3,copy=1"));
  assert_true(faults::inject(faults::map));
  assert_true(faults::inject(faults::copy));
  assert_false(faults::inject(faults::alloc));
  faults::reset();
  for (const char* bad : {"", "alloc", "alloc=", "alloc=0", "alloc=-1", "alloc=x", "map=p0",
                          "map=p2", "disk=1", "seed=x", "alloc=1,,map=2"}) {
    assert_false(faults::arm_from_spec(bad));
    assert_false(faults::inject(faults::alloc));
    assert_false(faults::inject(faults::map));
  }
  faults::reset();
}

// ------------------------------------------------------------------ tiered

constexpr std::size_t kTensorWords = 16 * 1024;  // 64 KiB tensors
constexpr std::size_t kTensorBytes = kTensorWords * 4;
constexpr int kTensors = 8;
constexpr int kKernels = 40;

struct kernel_spec {
  int in[2];
  int out;
};

std::vector<kernel_spec> tiered_program() {
  std::vector<kernel_spec> ks;
  std::uint64_t rng = 99;
  for (int k = 0; k < kKernels; ++k) {
    rng = mix64(rng);
    kernel_spec s;
    s.in[0] = static_cast<int>(rng % kTensors);
    s.in[1] = static_cast<int>((rng >> 8) % kTensors);
    s.out = static_cast<int>((rng >> 16) % kTensors);
    ks.push_back(s);
  }
  return ks;
}

void compute(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out, int k) {
  // Out may alias an input: compute into a copy first.
  std::vector<std::uint32_t> result(kTensorWords);
  for (std::size_t i = 0; i < kTensorWords; ++i)
    result[i] = a[i] * 3u + b[(i + 1) % kTensorWords] + static_cast<std::uint32_t>(k);
  std::memcpy(out, result.data(), kTensorBytes);
}

struct kernel_arg {
  int index;
};

dao_status tiered_kernel(void* user_data, void* const* inputs, size_t input_count,
                         void* const* outputs, size_t output_count, dao_stream) {
  if (input_count != 2 || output_count != 1) return DAO_ERR_INTERNAL;
  const int k = static_cast<const kernel_arg*>(user_data)->index;
  compute(static_cast<const std::uint32_t*>(inputs[0]),
          static_cast<const std::uint32_t*>(inputs[1]), static_cast<std::uint32_t*>(outputs[0]), k);
  return DAO_OK;
}

// The first kernel of a run waits here until everything is queued, so that
// the executor knows the whole program whenever it decides (a write goes
// straight to the device only when a queued kernel uses it next): the same
// copies, so the same calls, in every run.
struct program_gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
};

dao_status gated_kernel(void* user_data, void* const*, size_t, void* const*, size_t, dao_stream) {
  auto* g = static_cast<program_gate*>(user_data);
  std::unique_lock<std::mutex> lock(g->mutex);
  g->cv.wait(lock, [&] { return g->open; });
  return DAO_OK;
}

void open_gate(program_gate& g) {
  {
    std::lock_guard<std::mutex> lock(g.mutex);
    g.open = true;
  }
  g.cv.notify_all();
}

void initial(std::vector<std::uint32_t>& t, int index) {
  for (std::size_t i = 0; i < kTensorWords; ++i)
    t[i] = static_cast<std::uint32_t>(mix64(static_cast<std::uint64_t>(index) * 1000003u + i));
}

// Runs the program on a pool with a budget of 3 tensors (so that tensors
// are evicted and fetched); returns whether a failure was seen. After a
// failure every tensor must read back as the reference run of the kernels
// that ran leaves it.
bool run_tiered_case(const char* config) {
  // The host tier is the CPU place's default allocator: empty its cache so
  // that every run makes the same system calls.
  dao_allocator* host_default = nullptr;
  assert_int_equal(dao_place_allocator(dao_place_cpu(), &host_default), DAO_OK);
  assert_int_equal(dao_allocator_trim(host_default, nullptr), DAO_OK);
  const std::size_t baseline = sim_free(0);
  dao_tiered* pool = nullptr;
  dao_status s =
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 3 * kTensorBytes, config, &pool);
  if (s != DAO_OK) {
    assert_int_equal(s, DAO_ERR_OUT_OF_MEMORY);
    assert_true(std::strlen(dao_last_error()) > 0);
    assert_int_equal(sim_free(0), baseline);
    return true;
  }
  const std::vector<kernel_spec> program = tiered_program();
  std::vector<kernel_arg> args(kKernels);
  std::vector<dao_tensor*> tensors(kTensors, nullptr);
  std::vector<std::vector<std::uint32_t>> reference(kTensors,
                                                    std::vector<std::uint32_t>(kTensorWords));
  bool failed = false;
  program_gate gate;
  assert_int_equal(dao_kernel_submit(pool, gated_kernel, &gate, nullptr, 0, nullptr, 0), DAO_OK);
  for (int t = 0; t < kTensors; ++t) {
    assert_int_equal(dao_tensor_create(pool, kTensorBytes, &tensors[t]), DAO_OK);
    initial(reference[t], t);
    s = dao_tensor_write(tensors[t], reference[t].data(), kTensorBytes);
    if (s == DAO_ERR_OUT_OF_MEMORY) {
      // The host tier could not stage it; the pool is fine and the next
      // try (memory available again) goes in.
      assert_true(std::strlen(dao_last_error()) > 0);
      failed = true;
      s = dao_tensor_write(tensors[t], reference[t].data(), kTensorBytes);
    }
    if (s != DAO_OK) {  // the pool failed at an earlier write
      assert_int_equal(s, DAO_ERR_INVALID_STATE);
      assert_true(std::strlen(dao_last_error()) > 0);
      failed = true;
    }
  }
  int submitted = 0;
  for (int k = 0; k < kKernels; ++k) {
    args[k].index = k;
    dao_tensor* in[2] = {tensors[program[k].in[0]], tensors[program[k].in[1]]};
    s = dao_kernel_submit(pool, tiered_kernel, &args[k], in, 2, &tensors[program[k].out], 1);
    if (s != DAO_OK) {
      assert_int_equal(s, DAO_ERR_INVALID_STATE);  // failed earlier
      failed = true;
      break;
    }
    ++submitted;
  }
  open_gate(gate);
  s = dao_tiered_synchronize(pool);
  if (s != DAO_OK) {
    assert_int_equal(s, DAO_ERR_INVALID_STATE);
    assert_true(std::strlen(dao_last_error()) > 0);
    failed = true;
  }
  dao_tiered_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  assert_int_equal(dao_tiered_get_stats(pool, &st), DAO_OK);
  // The gated kernel always runs first (it touches no tensor).
  assert_true(st.kernels_run >= 1);
  const std::uint64_t program_run = st.kernels_run - 1;
  if (!failed) assert_int_equal(program_run, static_cast<std::uint64_t>(kKernels));
  // The reference: the writes that went in, then the kernels that ran.
  // (A write that failed left its tensor as it was: never written.)
  std::vector<std::vector<std::uint32_t>> expect(kTensors);
  std::vector<bool> has_data(kTensors, false);
  for (int t = 0; t < kTensors; ++t) expect[t] = reference[t];
  for (std::uint64_t k = 0; k < program_run; ++k) {
    const kernel_spec& ks = program[k];
    compute(expect[ks.in[0]].data(), expect[ks.in[1]].data(), expect[ks.out].data(),
            static_cast<int>(k));
    has_data[ks.out] = true;
  }
  // Nothing lost: every tensor reads back as the reference has it.
  std::vector<std::uint32_t> got(kTensorWords);
  for (int t = 0; t < kTensors; ++t) {
    s = dao_tensor_read(tensors[t], got.data(), kTensorBytes);
    if (s == DAO_ERR_BACKEND) {
      // The read's own copy failed; the tensor is where it was, and the
      // next read (nothing failing any more) gets it.
      assert_true(std::strlen(dao_last_error()) > 0);
      s = dao_tensor_read(tensors[t], got.data(), kTensorBytes);
    }
    if (s != DAO_OK) {
      // Only a tensor whose write failed and that no kernel produced.
      assert_true(failed);
      assert_int_equal(s, DAO_ERR_INVALID_STATE);
      assert_false(has_data[t]);
      continue;
    }
    if (std::memcmp(got.data(), expect[t].data(), kTensorBytes) != 0) {
      print_error("%s: tensor %d differs after %llu kernels run (%s; injected alloc %llu map "
                  "%llu copy %llu at calls %llu/%llu/%llu)\n",
                  config, t, static_cast<unsigned long long>(st.kernels_run),
                  failed ? "the pool failed" : "no failure seen",
                  static_cast<unsigned long long>(faults::injected(faults::alloc)),
                  static_cast<unsigned long long>(faults::injected(faults::map)),
                  static_cast<unsigned long long>(faults::injected(faults::copy)),
                  static_cast<unsigned long long>(faults::calls(faults::alloc)),
                  static_cast<unsigned long long>(faults::calls(faults::map)),
                  static_cast<unsigned long long>(faults::calls(faults::copy)));
      fail();
    }
  }
  (void)submitted;
  assert_int_equal(dao_tiered_destroy(pool), DAO_OK);
  assert_int_equal(sim_free(0), baseline);
  return failed;
}

void sweep_tiered(void**) {
  std::uint64_t swept = 0;
  for (const char* config : {"policy=belady", "policy=lru,prefetch=0"}) {
    faults::reset();
    assert_false(run_tiered_case(config));
    const std::uint64_t counts[3] = {faults::calls(faults::alloc), faults::calls(faults::map),
                                     faults::calls(faults::copy)};
    assert_true(counts[faults::copy] > 0);
    for (faults::site site : {faults::alloc, faults::map, faults::copy}) {
      for (std::uint64_t k = 1; k <= counts[site]; ++k) {
        faults::reset();
        faults::fail_nth(site, k);
        run_tiered_case(config);
        // The k-th call was reached and failed: the calls before it are
        // those of the run without faults. Whether the caller saw it depends
        // on where: a failed chunk makes buddy fall back to a smaller block,
        // a failed prefetch is only skipped.
        assert_int_equal(faults::injected(site), 1);
        faults::reset();
        assert_false(run_tiered_case(config));  // a new pool works again
        ++swept;
      }
    }
  }
  faults::reset();
  print_message("fault injection: %llu tiered runs with the k-th system call failing\n",
                static_cast<unsigned long long>(swept));
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(spec_parser),
      cmocka_unit_test(every_call_failing),
      cmocka_unit_test(sweep_allocators),
      cmocka_unit_test(sweep_tiered),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
