// Partitioned memory when one rank runs out of host memory for libdao's own
// bookkeeping (issue 20): a collective call must fail on every rank alike,
// with a message that names the failing rank, release what the others made,
// and never leave them waiting. For each type and every k, rank 1 of an
// in-process communicator has its k-th C++ allocation inside
// dao_whole_create fail (new_fault.hpp, arm_thread); then inside dao_whole_destroy,
// which must not fail at all. A watchdog turns a hang into a failure.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dao.h"
#include "new_fault.hpp"

namespace {

constexpr int kRanks = 3;
constexpr int kFailing = 1;
constexpr long kMaxK = 2000;  // far above the allocations of one create

int failures = 0;

void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FAIL: %s: %s\n", what, detail.c_str());
  ++failures;
}

// Runs `body(rank)` on a thread per rank; a run that takes longer than the
// limit is a hang: report it and end the process (the threads cannot be
// stopped).
template <class Body>
void run_ranks(const char* what, Body body) {
  std::mutex m;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      body(r);
      std::lock_guard<std::mutex> lock(m);
      ++done;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(m);
    if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == kRanks; })) {
      std::fprintf(stderr, "FAIL: %s: the ranks hang (a collective call left ranks waiting)\n",
                   what);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  for (std::thread& t : threads) t.join();
}

struct rank_result {
  dao_status create = DAO_OK;
  dao_status destroy = DAO_OK;
  std::string message;
  bool fired = false;
};

size_t internal_used(dao_place p) {
  size_t bytes = 0;
  if (dao_used_internal(p, &bytes) != DAO_OK) fail("dao_used_internal", dao_last_error());
  return bytes;
}

// One create (rank kFailing armed at k when `in_destroy` is false) and, when
// it succeeded, one destroy (armed at k when `in_destroy`). Returns whether
// the fault fired.
bool run_once(dao_comm** comms, dao_whole_type type, long k, bool in_destroy) {
  rank_result results[kRanks];
  char what[96];
  std::snprintf(what, sizeof what, "type %d, k %ld, %s", static_cast<int>(type), k,
                in_destroy ? "destroy" : "create");
  run_ranks(what, [&](int r) {
    rank_result& res = results[r];
    dao_whole_desc d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.type = type;
    d.location = DAO_WHOLE_DEVICE;
    d.entry_size = 4096;
    d.total_size = 4096 * 48;
    dao_whole* w = nullptr;
    if (r == kFailing && !in_destroy) dao_test::new_fault::arm_thread(k);
    res.create = dao_whole_create(comms[r], &d, &w);
    if (r == kFailing && !in_destroy) res.fired = dao_test::new_fault::disarm_thread();
    if (res.create != DAO_OK) res.message = dao_last_error();
    if (w == nullptr) return;
    if (r == kFailing && in_destroy) dao_test::new_fault::arm_thread(k);
    res.destroy = dao_whole_destroy(w);
    if (r == kFailing && in_destroy) res.fired = dao_test::new_fault::disarm_thread();
    if (res.destroy != DAO_OK) res.message = dao_last_error();
  });
  for (int r = 0; r < kRanks; ++r) {
    if (results[r].create != results[0].create) {
      fail(what, "the ranks disagree on the outcome: rank 0 " +
                     std::string(dao_status_string(results[0].create)) + ", rank " +
                     std::to_string(r) + " " + dao_status_string(results[r].create));
    }
    if (results[r].destroy != DAO_OK) {
      fail(what, "destroy failed on rank " + std::to_string(r) + ": " + results[r].message);
    }
    if (results[r].create != DAO_OK &&
        results[r].message.find("rank " + std::to_string(kFailing)) == std::string::npos) {
      fail(what, "the message does not name the failing rank: " + results[r].message);
    }
  }
  if (results[0].create != DAO_OK && results[0].create != DAO_ERR_OUT_OF_MEMORY &&
      results[kFailing].fired) {
    // The failure is the injected one, whatever step reported it.
    fail(what, "not out of memory: " + results[0].message);
  }
  return results[kFailing].fired;
}

void sweep(dao_whole_type type, bool in_destroy) {
  const dao_place places[kRanks] = {dao_place_sim(0), dao_place_sim(1), dao_place_sim(2)};
  dao_comm* comms[kRanks] = {};
  if (dao_comm_create_local(kRanks, places, comms) != DAO_OK) {
    fail("dao_comm_create_local", dao_last_error());
    return;
  }
  size_t before[kRanks];
  for (int r = 0; r < kRanks; ++r) before[r] = internal_used(places[r]);
  long k = 1;
  for (; k <= kMaxK; ++k) {
    if (!run_once(comms, type, k, in_destroy)) break;  // past the last allocation
    for (int r = 0; r < kRanks; ++r) {
      if (internal_used(places[r]) != before[r]) {
        fail("leak", "type " + std::to_string(type) + " k " + std::to_string(k) + ": rank " +
                         std::to_string(r) + "'s part was not released");
        before[r] = internal_used(places[r]);
      }
    }
  }
  std::printf("type %d, %s: %ld allocation(s) of rank %d swept\n", static_cast<int>(type),
              in_destroy ? "destroy" : "create", k - 1, kFailing);
  if (k > kMaxK) fail("sweep", "the fault still fired at k = kMaxK");
  for (int r = 0; r < kRanks; ++r) {
    if (dao_comm_destroy(comms[r]) != DAO_OK) fail("dao_comm_destroy", dao_last_error());
  }
}

}  // namespace

int main() {
  for (int t = DAO_WHOLE_CONTINUOUS; t <= DAO_WHOLE_DISTRIBUTED; ++t) {
    sweep(static_cast<dao_whole_type>(t), false);
    sweep(static_cast<dao_whole_type>(t), true);
  }
  if (failures != 0) {
    std::fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  std::printf("all ranks agreed on every injected failure\n");
  return 0;
}
