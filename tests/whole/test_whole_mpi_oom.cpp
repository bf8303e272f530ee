// Partitioned memory over MPI when one rank runs out of host memory for
// libdao's own bookkeeping (issue 20, defect 11): a collective call must
// fail on every rank alike and never leave the others waiting. Run under
// mpiexec with at least two ranks (ctest: three). Rank 1 has its k-th C++
// allocation fail (new_fault.hpp, arm_thread), for every k, over one
// sequence of collective calls:
//
//   dao_comm_create_mpi, then for each layout (continuous, chunked and
//   distributed host memory, distributed memory on the rank's place)
//   dao_whole_create, a write of the local part, a barrier, a gather of an
//   entry of every rank where the create succeeded, the same gathered and
//   scattered back collectively (twice), dao_whole_destroy, and
//   dao_comm_destroy.
//
// After each collective call the ranks compare their statuses (an
// MPI_Allgather of the test's own): a create succeeds everywhere or fails
// everywhere; a destroy never fails. Allocations live before and after a
// run are equal on every rank (nothing leaks). A watchdog (alarm) turns a
// hang into a failure: the rank prints where it was and exits, and mpiexec
// ends the others. The test's own code allocates nothing while a rank is
// armed (fixed buffers only): the fault must land in libdao. The test's own code allocates nothing
// while a rank is armed (fixed buffers only): the fault must land in libdao.
#define DAO_EXPERIMENTAL 1
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <signal.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "dao.h"
#include "dao/whole_mpi.h"
#include "new_fault.hpp"

namespace nf = dao_test::new_fault;

namespace {

constexpr int kFailing = 1;
constexpr long kMaxK = 2000;  // far above the allocations of one sequence
constexpr unsigned kWatchdogSeconds = 60;
constexpr int kMaxRanks = 64;

int rank = 0, ranks = 0, failures = 0;
char where[256] = "start";

void on_alarm(int) {
  // Only async-signal-safe calls here.
  static const char text[] = "test_whole_mpi_oom: hang (watchdog) at ";
  (void)!write(2, text, sizeof text - 1);
  (void)!write(2, where, std::strlen(where));
  (void)!write(2, "\n", 1);
  _exit(1);
}

__attribute__((format(printf, 1, 2))) void fail(const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  std::fprintf(stderr, "rank %d: FAIL: %s: %s\n", rank, where, text);
  ++failures;
}

// The statuses of every rank for the call just made.
void statuses_of(dao_status s, int (&all)[kMaxRanks]) {
  const int mine = static_cast<int>(s);
  MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
}

// A collective create: the same status on every rank, OK or out of memory.
bool agreed(const char* call, dao_status s) {
  int all[kMaxRanks];
  statuses_of(s, all);
  for (int r = 0; r < ranks; ++r) {
    if (all[r] != all[0]) {
      fail("%s: rank %d returned %s, rank 0 %s", call, r,
           dao_status_string(static_cast<dao_status>(all[r])),
           dao_status_string(static_cast<dao_status>(all[0])));
      return false;
    }
  }
  if (s != DAO_OK && s != DAO_ERR_OUT_OF_MEMORY)
    fail("%s: %s: %s", call, dao_status_string(s), dao_last_error());
  if (s == DAO_ERR_OUT_OF_MEMORY && std::strstr(dao_last_error(), "memory") == nullptr)
    fail("%s: the message does not say what ran out: %s", call, dao_last_error());
  return s == DAO_OK;
}

// A collective destroy (or barrier): must succeed on every rank.
void released(const char* call, dao_status s) {
  int all[kMaxRanks];
  statuses_of(s, all);
  for (int r = 0; r < ranks; ++r)
    if (all[r] != DAO_OK)
      fail("%s failed on rank %d: %s", call, r, dao_status_string(static_cast<dao_status>(all[r])));
}

struct layout {
  dao_whole_type type;
  dao_whole_location location;
  const char* name;
};

constexpr layout kLayouts[] = {
    {DAO_WHOLE_CONTINUOUS, DAO_WHOLE_HOST, "continuous host"},
    {DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, "chunked host"},
    {DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, "distributed host"},
    {DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_DEVICE, "distributed device"},
};
constexpr std::size_t kEntry = 64, kEntriesPerRank = 16;

// One whole object of layout `l`: create, write, gather one entry of every
// rank, destroy.
void one_layout(dao_comm* comm, const layout& l, long k) {
  std::snprintf(where, sizeof where, "k %ld, %s, create", k, l.name);
  dao_whole_desc d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.type = l.type;
  d.location = l.location;
  d.entry_size = kEntry;
  d.total_size = kEntry * kEntriesPerRank * static_cast<std::size_t>(ranks);
  dao_whole* w = nullptr;
  if (!agreed("dao_whole_create", dao_whole_create(comm, &d, &w))) {
    if (w != nullptr) fail("a failed create returned a handle");
    return;
  }
  std::snprintf(where, sizeof where, "k %ld, %s, use", k, l.name);
  void* local = nullptr;
  dao_whole_range range;
  std::memset(&range, 0, sizeof range);
  range.struct_size = sizeof range;
  if (dao_whole_get_local(w, &local, &range) != DAO_OK)
    fail("dao_whole_get_local: %s", dao_last_error());
  // Each entry holds its index (the local part is host memory: the places
  // are the CPU).
  for (std::size_t i = 0; i < range.entry_count; ++i) {
    const auto index = static_cast<std::int64_t>(range.first_entry + i);
    std::memcpy(static_cast<unsigned char*>(local) + i * kEntry, &index, sizeof index);
  }
  released("dao_comm_barrier", dao_comm_barrier(comm));
  std::int64_t indices[kMaxRanks];
  static unsigned char out[kMaxRanks * kEntry];
  for (int r = 0; r < ranks; ++r)
    indices[r] = static_cast<std::int64_t>(static_cast<std::size_t>(r) * kEntriesPerRank +
                                           kEntriesPerRank / 2);
  // Not collective: rank 1 alone may run out here; then nothing is read.
  const auto count = static_cast<std::size_t>(ranks);
  const dao_status g = dao_whole_gather(w, indices, count, out);
  if (g == DAO_OK) {
    for (std::size_t i = 0; i < count; ++i) {
      std::int64_t got = -1;
      std::memcpy(&got, out + i * kEntry, sizeof got);
      if (got != indices[i])
        fail("gather read %lld for entry %lld", static_cast<long long>(got),
             static_cast<long long>(indices[i]));
    }
  } else if (g != DAO_ERR_OUT_OF_MEMORY) {
    fail("dao_whole_gather: %s: %s", dao_status_string(g), dao_last_error());
  }
  // Collective: the exchange's buffers and its room for what arrives are
  // agreed on, so rank 1 out of memory fails every rank alike. Twice: the
  // second call finds the buffers made.
  for (int round = 0; round < 2; ++round) {
    std::snprintf(where, sizeof where, "k %ld, %s, gather_collective %d", k, l.name, round);
    std::memset(out, 0, sizeof out);
    if (agreed("dao_whole_gather_collective",
               dao_whole_gather_collective(w, indices, count, out))) {
      for (std::size_t i = 0; i < count; ++i) {
        std::int64_t got = -1;
        std::memcpy(&got, out + i * kEntry, sizeof got);
        if (got != indices[i])
          fail("collective gather read %lld for entry %lld", static_cast<long long>(got),
               static_cast<long long>(indices[i]));
      }
    }
    std::snprintf(where, sizeof where, "k %ld, %s, scatter_collective %d", k, l.name, round);
    // Writes back what each entry holds: the contents stay as they are.
    for (std::size_t i = 0; i < count; ++i)
      std::memcpy(out + i * kEntry, &indices[i], sizeof indices[i]);
    agreed("dao_whole_scatter_collective", dao_whole_scatter_collective(w, out, indices, count));
  }
  released("dao_comm_barrier", dao_comm_barrier(comm));
  std::snprintf(where, sizeof where, "k %ld, %s, destroy", k, l.name);
  released("dao_whole_destroy", dao_whole_destroy(w));
}

// The whole sequence, rank kFailing armed at its k-th allocation (k == 0:
// not armed). Returns whether the fault fired on this rank.
bool run(long k) {
  if (rank == kFailing && k > 0) nf::arm_thread(k);
  std::snprintf(where, sizeof where, "k %ld, dao_comm_create_mpi", k);
  dao_comm* comm = nullptr;
  if (agreed("dao_comm_create_mpi", dao_comm_create_mpi(MPI_COMM_WORLD, dao_place_cpu(), &comm))) {
    for (const layout& l : kLayouts) one_layout(comm, l, k);
    std::snprintf(where, sizeof where, "k %ld, dao_comm_destroy", k);
    released("dao_comm_destroy", dao_comm_destroy(comm));
  } else if (comm != nullptr) {
    fail("a failed dao_comm_create_mpi returned a handle");
  }
  return rank == kFailing && k > 0 && nf::disarm_thread();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks < 2 || ranks > kMaxRanks) {
    if (rank == 0) std::fprintf(stderr, "test_whole_mpi_oom needs 2 to %d ranks\n", kMaxRanks);
    MPI_Finalize();
    return 1;
  }
  signal(SIGALRM, on_alarm);
  // A first run unarmed: what libdao makes once per process (places, the
  // default allocators) is then made, and the live count is comparable.
  alarm(kWatchdogSeconds);
  run(0);
  long k = 1, fired = 0;
  for (; k <= kMaxK; ++k) {
    alarm(kWatchdogSeconds);
    const std::int64_t live_before = nf::live();
    const int fired_here = run(k) ? 1 : 0;
    if (nf::live() != live_before)
      fail("k %ld: %lld allocations still live after the run", k,
           static_cast<long long>(nf::live() - live_before));
    int any = 0;
    MPI_Allreduce(&fired_here, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any) break;  // the sequence needs fewer than k allocations on rank 1
    ++fired;
  }
  alarm(0);
  if (k > kMaxK) fail("the fault still fired at k %ld", kMaxK);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("test_whole_mpi_oom: %d ranks, rank %d failed at each k of 1..%ld: %s\n", ranks,
                kFailing, fired, total == 0 ? "every rank agreed, nothing leaked" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
