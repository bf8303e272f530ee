// Partitioned memory when one rank runs out of host memory for libdao's own
// bookkeeping (issue 20, defect 11): a collective call must fail on every
// rank alike, with a message that names the failing rank, release what the
// others made, and never leave them waiting. Rank 1 of three has its k-th
// C++ allocation fail (new_fault.hpp, arm_thread), for every k:
//
// - inside dao_whole_create of each layout, then inside dao_whole_destroy
//   (which must not fail at all), over the in-process transport and over a
//   transport handed in through the C hook (whole/thread_transport.h: it
//   says the ranks are processes, so libdao takes the paths it takes over
//   MPI: shared segments, windows, memory the transport allocates);
// - inside dao_comm_create_transport (the adoption of the handed-in
//   transport): every rank succeeds or fails alike, and every rank's
//   transport is destroyed exactly once;
// - inside dao_whole_gather and dao_whole_scatter of each layout, over both
//   transports (not collective: rank 1 alone): each returns DAO_OK or
//   DAO_ERR_OUT_OF_MEMORY, a gather that succeeds reads what was written, a
//   scatter that fails changes nothing, and no allocation stays live.
//
// After every run the SIM devices' internal memory is where it was (a part
// not released shows there). A watchdog turns a hang into a failure.
//
// `test_whole_oom cuda` runs the same on cuda:0..2 of the fake driver
// (DAO_CUDA_LIBRARY, FAKE_CUDA_HIDDEN=1): every type on the devices over
// both transports (between "processes" the parts go through CUDA IPC and
// shareable file descriptors), and each device's free memory must be where
// it was too (continuous parts are mapped, not allocated).
#define DAO_EXPERIMENTAL 1

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
#include "whole/thread_transport.h"

namespace nf = dao_test::new_fault;

namespace {

constexpr int kRanks = 3;
constexpr int kFailing = 1;
constexpr long kMaxK = 2000;  // far above the allocations of one call

int failures = 0;

void fail(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "FAIL: %s: %s\n", what.c_str(), detail.c_str());
  ++failures;
}

// Runs `body(rank)` on a thread per rank; a run that takes longer than the
// limit is a hang: report it and end the process (the threads cannot be
// stopped).
template <class Body>
void run_ranks(const std::string& what, Body body) {
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
                   what.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  for (std::thread& t : threads) t.join();
}

// A latch of the test's own (std::mutex allocates nothing), so that ranks
// wait without calling libdao while rank 1 sweeps alone.
class latch {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(m_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

dao_place kPlaces[kRanks] = {dao_place_sim(0), dao_place_sim(1), dao_place_sim(2)};
bool on_cuda = false;  // `cuda`: the ranks on cuda:0..2

// What the place holds for libdao: its internal allocator's bytes and, on a
// CUDA device, the device memory in use (mapped continuous parts).
size_t internal_used(dao_place p) {
  size_t bytes = 0, free_bytes = 0, total = 0;
  if (dao_used_internal(p, &bytes) != DAO_OK) fail("dao_used_internal", dao_last_error());
  if (on_cuda) {
    if (dao_place_memory_info(p, &free_bytes, &total) != DAO_OK)
      fail("dao_place_memory_info", dao_last_error());
    bytes += total - free_bytes;
  }
  return bytes;
}

// ------------------------------------------------------------ communicators

enum class net { local, hooked };

const char* net_name(net n) { return n == net::local ? "in-process" : "handed-in"; }

// The ranks' communicators over one transport; the hooked transport's group
// lives as long as they do.
struct comms {
  net kind = net::local;
  tt_group group;
  dao_comm* c[kRanks] = {};
  bool ok = false;
};

void open_comms(comms& cs, net kind) {
  cs.kind = kind;
  if (kind == net::local) {
    cs.ok = dao_comm_create_local(kRanks, kPlaces, cs.c) == DAO_OK;
    if (!cs.ok) fail("dao_comm_create_local", dao_last_error());
    return;
  }
  tt_group_init(&cs.group, kRanks);
  dao_status status[kRanks];
  run_ranks("dao_comm_create_transport", [&](int r) {
    dao_comm_transport ops = tt_ops(&cs.group, r);
    status[r] = dao_comm_create_transport(&ops, kPlaces[r], &cs.c[r]);
  });
  cs.ok = true;
  for (int r = 0; r < kRanks; ++r) {
    if (status[r] != DAO_OK) {
      fail("dao_comm_create_transport", dao_status_string(status[r]));
      cs.ok = false;
    }
  }
}

void close_comms(comms& cs) {
  for (int r = 0; r < kRanks; ++r) {
    if (cs.c[r] != nullptr && dao_comm_destroy(cs.c[r]) != DAO_OK)
      fail("dao_comm_destroy", dao_last_error());
    cs.c[r] = nullptr;
  }
  if (cs.kind == net::hooked) {
    if (cs.group.destroyed != kRanks)
      fail("handed-in transport", "destroyed " + std::to_string(cs.group.destroyed) +
                                      " times for " + std::to_string(kRanks) + " ranks");
    tt_group_done(&cs.group);
  }
}

// Every rank's outcome of one collective call: all alike, and a failure
// names the failing rank and is out of memory when the fault fired.
struct rank_result {
  dao_status status = DAO_OK;
  std::string message;
  bool fired = false;
};

void check_agreement(const std::string& what, const rank_result (&res)[kRanks]) {
  for (int r = 0; r < kRanks; ++r) {
    if (res[r].status != res[0].status) {
      fail(what, "the ranks disagree on the outcome: rank 0 " +
                     std::string(dao_status_string(res[0].status)) + ", rank " + std::to_string(r) +
                     " " + dao_status_string(res[r].status) + " (" + res[r].message + ")");
    }
    if (res[r].status != DAO_OK &&
        res[r].message.find("rank " + std::to_string(kFailing)) == std::string::npos) {
      fail(what, "the message does not name the failing rank: " + res[r].message);
    }
  }
  if (res[0].status != DAO_OK && res[0].status != DAO_ERR_OUT_OF_MEMORY && res[kFailing].fired) {
    // The failure is the injected one, whatever step reported it.
    fail(what, "not out of memory: " + res[0].message);
  }
}

// dao_comm_create_transport with rank 1's k-th allocation failing: every
// rank succeeds or fails alike, and each transport is destroyed once.
void sweep_comm_create() {
  long k = 1;
  for (; k <= kMaxK; ++k) {
    tt_group group;
    tt_group_init(&group, kRanks);
    rank_result res[kRanks];
    dao_comm* c[kRanks] = {};
    const std::string what = "dao_comm_create_transport, k " + std::to_string(k);
    run_ranks(what, [&](int r) {
      dao_comm_transport ops = tt_ops(&group, r);
      if (r == kFailing) nf::arm_thread(k);
      res[r].status = dao_comm_create_transport(&ops, kPlaces[r], &c[r]);
      if (r == kFailing) res[r].fired = nf::disarm_thread();
      if (res[r].status != DAO_OK) res[r].message = dao_last_error();
    });
    check_agreement(what, res);
    for (int r = 0; r < kRanks; ++r) {
      if ((res[r].status == DAO_OK) != (c[r] != nullptr))
        fail(what, "rank " + std::to_string(r) + ": the handle does not match the status");
      if (c[r] != nullptr && dao_comm_destroy(c[r]) != DAO_OK)
        fail(what, std::string("dao_comm_destroy: ") + dao_last_error());
    }
    if (group.destroyed != kRanks)
      fail(what, "the transports were destroyed " + std::to_string(group.destroyed) +
                     " times for " + std::to_string(kRanks) + " ranks");
    tt_group_done(&group);
    if (!res[kFailing].fired) break;  // past the last allocation
  }
  std::printf("%s, dao_comm_create_transport: %ld allocation(s) of rank %d swept\n",
              net_name(net::hooked), k - 1, kFailing);
  if (k > kMaxK) fail("sweep", "the fault still fired at k = kMaxK");
}

// ------------------------------------------------------------ create, destroy

struct layout {
  dao_whole_type type;
  dao_whole_location location;
};

const char* type_name(dao_whole_type t) {
  return t == DAO_WHOLE_CONTINUOUS ? "continuous"
         : t == DAO_WHOLE_CHUNKED  ? "chunked"
                                   : "distributed";
}

std::string describe(net n, layout l) {
  return std::string(net_name(n)) + " " + type_name(l.type) +
         (l.location == DAO_WHOLE_HOST ? " host" : " device");
}

// The layouts each transport serves: in-process every type on the device;
// handed in (ranks as processes), mapped memory on the host (shared
// segments) and distributed memory on the device (a window over the parts)
// and on the host (memory the transport allocates).
std::vector<layout> layouts_of(net n) {
  if (on_cuda)  // every type on the devices, in-process and as processes
    return {{DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE},
            {DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE},
            {DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_DEVICE}};
  if (n == net::local)
    return {{DAO_WHOLE_CONTINUOUS, DAO_WHOLE_DEVICE},
            {DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE},
            {DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_DEVICE}};
  return {{DAO_WHOLE_CONTINUOUS, DAO_WHOLE_HOST},
          {DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST},
          {DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_DEVICE},
          {DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST}};
}

dao_whole_desc desc_of(layout l, size_t entry_size, size_t entries) {
  dao_whole_desc d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.type = l.type;
  d.location = l.location;
  d.entry_size = entry_size;
  d.total_size = entry_size * entries;
  return d;
}

// One create (rank kFailing armed at k when `in_destroy` is false) and, when
// it succeeded, one destroy (armed at k when `in_destroy`). Returns whether
// the fault fired.
bool run_once(comms& cs, layout l, long k, bool in_destroy) {
  rank_result created[kRanks], destroyed[kRanks];
  const std::string what =
      describe(cs.kind, l) + ", k " + std::to_string(k) + (in_destroy ? ", destroy" : ", create");
  run_ranks(what, [&](int r) {
    const dao_whole_desc d = desc_of(l, 4096, 48);
    dao_whole* w = nullptr;
    if (r == kFailing && !in_destroy) nf::arm_thread(k);
    created[r].status = dao_whole_create(cs.c[r], &d, &w);
    if (r == kFailing && !in_destroy) created[r].fired = nf::disarm_thread();
    if (created[r].status != DAO_OK) created[r].message = dao_last_error();
    if (w == nullptr) return;
    if (r == kFailing && in_destroy) nf::arm_thread(k);
    destroyed[r].status = dao_whole_destroy(w);
    if (r == kFailing && in_destroy) destroyed[r].fired = nf::disarm_thread();
    if (destroyed[r].status != DAO_OK) destroyed[r].message = dao_last_error();
  });
  check_agreement(what, created);
  for (int r = 0; r < kRanks; ++r) {
    if (destroyed[r].status != DAO_OK)
      fail(what, "destroy failed on rank " + std::to_string(r) + ": " + destroyed[r].message);
  }
  return in_destroy ? destroyed[kFailing].fired : created[kFailing].fired;
}

void sweep_create(net n, layout l, bool in_destroy) {
  comms cs;
  open_comms(cs, n);
  if (cs.ok) {
    size_t before[kRanks];
    for (int r = 0; r < kRanks; ++r) before[r] = internal_used(kPlaces[r]);
    long k = 1;
    for (; k <= kMaxK; ++k) {
      if (!run_once(cs, l, k, in_destroy)) break;  // past the last allocation
      for (int r = 0; r < kRanks; ++r) {
        if (internal_used(kPlaces[r]) != before[r]) {
          fail("leak", describe(n, l) + " k " + std::to_string(k) + ": rank " + std::to_string(r) +
                           "'s part was not released");
          before[r] = internal_used(kPlaces[r]);
        }
      }
    }
    std::printf("%s, %s: %ld allocation(s) of rank %d swept\n", describe(n, l).c_str(),
                in_destroy ? "destroy" : "create", k - 1, kFailing);
    if (k > kMaxK) fail("sweep", "the fault still fired at k = kMaxK");
  }
  close_comms(cs);
}

// ------------------------------------------------------------ gather, scatter

constexpr size_t kEntry = 256;
constexpr size_t kEntries = 40;
// Across the three parts, with runs, a repeat and out of order.
const std::int64_t kIndices[] = {0,  1, 2, 39, 17, 18, 5, 30, 31, 32, 33, 12, 25,
                                 38, 7, 8, 21, 22, 35, 3, 14, 27, 9,  36, 17};
constexpr size_t kCount = sizeof kIndices / sizeof kIndices[0];

void fill_entry(unsigned char* e, std::int64_t index, long seed) {
  for (size_t b = 0; b < kEntry; ++b)
    e[b] = static_cast<unsigned char>((static_cast<unsigned long>(index) * 131u + b * 7u +
                                       static_cast<unsigned long>(seed) * 29u) &
                                      0xFF);
}

// Rank 1 alone gathers and scatters with its k-th allocation failing, for
// every k, between a create and a destroy of all ranks.
void sweep_gather_scatter(net n, layout l) {
  comms cs;
  open_comms(cs, n);
  if (!cs.ok) {
    close_comms(cs);
    return;
  }
  size_t before[kRanks];
  for (int r = 0; r < kRanks; ++r) before[r] = internal_used(kPlaces[r]);
  const std::string what = describe(n, l) + ", gather and scatter";
  latch swept;
  long last_k = 0;
  long gather_allocs = 0, scatter_allocs = 0;
  rank_result created[kRanks];
  run_ranks(what, [&](int r) {
    const dao_whole_desc d = desc_of(l, kEntry, kEntries);
    dao_whole* w = nullptr;
    created[r].status = dao_whole_create(cs.c[r], &d, &w);
    if (created[r].status != DAO_OK) {
      created[r].message = dao_last_error();
      return;
    }
    // The model: what every entry holds. Rank 0 writes it all first.
    std::vector<unsigned char> model(kEntries * kEntry);
    std::vector<std::int64_t> all(kEntries);
    for (size_t i = 0; i < kEntries; ++i) {
      all[i] = static_cast<std::int64_t>(i);
      fill_entry(&model[i * kEntry], all[i], 0);
    }
    if (r == 0 && dao_whole_scatter(w, model.data(), all.data(), kEntries) != DAO_OK)
      fail(what, std::string("the first scatter: ") + dao_last_error());
    if (dao_comm_barrier(cs.c[r]) != DAO_OK) fail(what, dao_last_error());
    if (r != kFailing) {
      swept.wait();  // without calling libdao: rank 1's counts are its own
    } else {
      std::vector<unsigned char> buf(kCount * kEntry), src(kCount * kEntry), back(model.size());
      long k = 1;
      for (; k <= kMaxK; ++k) {
        const std::string at = what + ", k " + std::to_string(k);
        // A gather: everything it read is what was written.
        std::int64_t live = nf::live();
        nf::arm_thread(k);
        dao_status s = dao_whole_gather(w, kIndices, kCount, buf.data());
        const bool gather_fired = nf::disarm_thread();
        if (nf::live() != live) fail(at, "gather: allocations left live");
        if (s == DAO_OK) {
          for (size_t i = 0; i < kCount; ++i) {
            if (std::memcmp(&buf[i * kEntry], &model[static_cast<size_t>(kIndices[i]) * kEntry],
                            kEntry) != 0)
              fail(at, "gather: entry " + std::to_string(kIndices[i]) + " reads wrong");
          }
        } else if (s != DAO_ERR_OUT_OF_MEMORY || !gather_fired) {
          fail(at, std::string("gather: ") + dao_status_string(s) + ": " + dao_last_error());
        }
        if (gather_fired) gather_allocs = k;
        // A scatter of new values: all of them land, or (out of memory)
        // none does.
        for (size_t i = 0; i < kCount; ++i) fill_entry(&src[i * kEntry], kIndices[i], k);
        live = nf::live();
        nf::arm_thread(k);
        s = dao_whole_scatter(w, src.data(), kIndices, kCount);
        const bool scatter_fired = nf::disarm_thread();
        if (nf::live() != live) fail(at, "scatter: allocations left live");
        if (s == DAO_OK) {
          for (size_t i = 0; i < kCount; ++i)
            std::memcpy(&model[static_cast<size_t>(kIndices[i]) * kEntry], &src[i * kEntry],
                        kEntry);
        } else if (s != DAO_ERR_OUT_OF_MEMORY || !scatter_fired) {
          fail(at, std::string("scatter: ") + dao_status_string(s) + ": " + dao_last_error());
        }
        if (scatter_fired) scatter_allocs = k;
        // Every entry, read back without faults.
        if (dao_whole_gather(w, all.data(), kEntries, back.data()) != DAO_OK)
          fail(at, std::string("read back: ") + dao_last_error());
        else if (back != model)
          fail(at,
               s == DAO_OK ? "the scatter did not land whole" : "a failed scatter changed entries");
        if (!gather_fired && !scatter_fired) break;
      }
      last_k = k;
      swept.open();
    }
    if (dao_whole_destroy(w) != DAO_OK) fail(what, std::string("destroy: ") + dao_last_error());
  });
  check_agreement(what, created);
  for (int r = 0; r < kRanks; ++r) {
    if (internal_used(kPlaces[r]) != before[r])
      fail("leak", what + ": rank " + std::to_string(r) + "'s part was not released");
  }
  std::printf("%s: %ld and %ld allocation(s) of rank %d swept (gather, scatter)\n", what.c_str(),
              gather_allocs, scatter_allocs, kFailing);
  if (last_k > kMaxK) fail("sweep", "the fault still fired at k = kMaxK");
  close_comms(cs);
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  if (argc > 1 && std::strcmp(argv[1], "cuda") == 0) {
    on_cuda = true;
    for (int r = 0; r < kRanks; ++r) kPlaces[r] = dao_place_cuda(r);
  }
  for (net n : {net::local, net::hooked}) {
    for (layout l : layouts_of(n)) {
      sweep_create(n, l, false);
      sweep_create(n, l, true);
      sweep_gather_scatter(n, l);
    }
  }
  sweep_comm_create();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failures != 0) {
    std::fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  std::printf("all ranks agreed on every injected failure (%.2f s)\n", seconds);
  return 0;
}
