// libdao-mpi: a transport for partitioned memory over MPI, handed to libdao
// through the C hook dao_comm_transport (dao/whole.h, DAO_EXPERIMENTAL).
//
// This library sees only libdao's public C API: no C++ type or exception
// crosses between the two libraries. Failures are returned as a dao_status
// with a message kept per thread here, which libdao reads through
// last_error.
//
// Windows: distributed memory is exposed with MPI_Win_create (memory of the
// rank's place) or MPI_Win_allocate (host memory, which Open MPI serves
// through shared memory on one node), mapped memory is allocated with
// MPI_Win_allocate_shared. Every window stays in a passive-target epoch
// opened by MPI_Win_lock_all for its whole life, so gets and puts need no
// action by the target; barrier() syncs every window (MPI_Win_sync) on both
// sides of an MPI_Barrier, so that what one rank wrote is seen by all.
#define DAO_EXPERIMENTAL 1
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include "dao/whole_mpi.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "dao/whole.h"

namespace {

thread_local char last_error_text[1024] = "";

dao_status fail(dao_status status, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

dao_status fail(dao_status status, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(last_error_text, sizeof last_error_text, fmt, args);
  va_end(args);
  return status;
}

// DAO_OK, or DAO_ERR_BACKEND with MPI's own text.
dao_status check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return DAO_OK;
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) std::snprintf(text, sizeof text, "?");
  return fail(DAO_ERR_BACKEND, "%s failed: %s (MPI error %d)", what, text, rc);
}

#define DAO_MPI_TRY(call)                         \
  do {                                            \
    const dao_status dao_s_ = check(call, #call); \
    if (dao_s_ != DAO_OK) return dao_s_;          \
  } while (0)

#define DAO_MPI_ROOM(t, w)                            \
  do {                                                \
    const dao_status dao_s_ = window_room((t), &(w)); \
    if (dao_s_ != DAO_OK) return dao_s_;              \
  } while (0)

// An MPI window, or (win == MPI_WIN_NULL) the memory of a communicator of
// one process, which has nobody to share it with (see op_window_create).
struct mpi_window {
  MPI_Win win = MPI_WIN_NULL;
  char* local = nullptr;
  size_t bytes = 0;
};

// One-process windows: gets and puts can only be this process's own.
dao_status copy_own(const mpi_window& w, int target, size_t offset, size_t bytes, char** at) {
  if (target != 0 || offset > w.bytes || bytes > w.bytes - offset) {
    return fail(DAO_ERR_INTERNAL, "%zu bytes at %zu of rank %d are outside the window", bytes,
                offset, target);
  }
  *at = w.local + offset;
  return DAO_OK;
}

struct mpi_transport {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 0;
  bool one_node = false;
  bool node_leader = false;  // the lowest rank of this communicator on its node
  bool serialize = true;     // below MPI_THREAD_MULTIPLE
  std::mutex mutex;
  std::vector<MPI_Win> windows;  // every open window, synced by barrier()
  // alltoallv's int counts and displacements, 4 x size, made with the
  // transport so that an exchange allocates nothing.
  std::vector<int> exchange_ints;
};

// Holds the transport's mutex when MPI needs calls serialised.
class serial {
 public:
  explicit serial(mpi_transport& t) : t_(t) {
    if (t_.serialize) t_.mutex.lock();
  }
  ~serial() {
    if (t_.serialize) t_.mutex.unlock();
  }
  serial(const serial&) = delete;
  serial& operator=(const serial&) = delete;

 private:
  mpi_transport& t_;
};

mpi_transport& self_of(void* self) { return *static_cast<mpi_transport*>(self); }

const char* op_last_error(void*) { return last_error_text; }

dao_status sync_windows(mpi_transport& t) {
  for (MPI_Win w : t.windows) DAO_MPI_TRY(MPI_Win_sync(w));
  return DAO_OK;
}

dao_status op_barrier(void* self) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  dao_status s = sync_windows(t);
  if (s != DAO_OK) return s;
  DAO_MPI_TRY(MPI_Barrier(t.comm));
  return sync_windows(t);
}

dao_status op_alltoall(void* self, const void* send, size_t bytes, void* recv) {
  mpi_transport& t = self_of(self);
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return fail(DAO_ERR_INTERNAL, "alltoall of %zu bytes is larger than MPI counts", bytes);
  }
  serial lock(t);
  const int n = static_cast<int>(bytes);
  DAO_MPI_TRY(MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, t.comm));
  return DAO_OK;
}

// Counts and displacements in units of `unit` bytes; sent as bytes when
// they fit an int so, else with one MPI datatype of `unit` bytes per call,
// so that int counts reach INT_MAX entries rather than bytes. libdao
// keeps every count and total within exchange_limit (INT_MAX), and every
// rank passes the same unit: a failure here is the same on every rank.
dao_status op_alltoallv(void* self, const void* send, const size_t* send_counts,
                        const size_t* send_displs, void* recv, const size_t* recv_counts,
                        const size_t* recv_displs, size_t unit) {
  mpi_transport& t = self_of(self);
  if (unit == 0 || unit > static_cast<size_t>(INT_MAX)) {
    return fail(DAO_ERR_INTERNAL, "alltoallv: a unit of %zu bytes is not an MPI count", unit);
  }
  const size_t n = static_cast<size_t>(t.size);
  int* sc = t.exchange_ints.data();
  int* sd = sc + n;
  int* rc = sd + n;
  int* rd = rc + n;
  // In bytes (MPI_BYTE, as a hand-written exchange would send) when every
  // count and displacement fits an int as bytes; else in units.
  const size_t limit = static_cast<size_t>(INT_MAX);
  bool bytes = true;
  for (size_t r = 0; r < n; ++r) {
    if (send_counts[r] > limit || send_displs[r] > limit || recv_counts[r] > limit ||
        recv_displs[r] > limit) {
      return fail(DAO_ERR_INTERNAL, "alltoallv: a count or displacement is larger than INT_MAX");
    }
    const size_t largest = std::max(std::max(send_counts[r] + send_displs[r], recv_counts[r]),
                                    recv_counts[r] + recv_displs[r]);
    if (largest > limit / unit) bytes = false;
  }
  const size_t scale = bytes ? unit : 1;
  for (size_t r = 0; r < n; ++r) {
    sc[r] = static_cast<int>(send_counts[r] * scale);
    sd[r] = static_cast<int>(send_displs[r] * scale);
    rc[r] = static_cast<int>(recv_counts[r] * scale);
    rd[r] = static_cast<int>(recv_displs[r] * scale);
  }
  serial lock(t);
  if (bytes) {
    DAO_MPI_TRY(MPI_Alltoallv(send, sc, sd, MPI_BYTE, recv, rc, rd, MPI_BYTE, t.comm));
    return DAO_OK;
  }
  MPI_Datatype type = MPI_DATATYPE_NULL;
  DAO_MPI_TRY(MPI_Type_contiguous(static_cast<int>(unit), MPI_BYTE, &type));
  dao_status s = check(MPI_Type_commit(&type), "MPI_Type_commit");
  if (s == DAO_OK) {
    s = check(MPI_Alltoallv(send, sc, sd, type, recv, rc, rd, type, t.comm), "MPI_Alltoallv");
  }
  MPI_Type_free(&type);
  return s;
}

dao_status op_allgather(void* self, const void* send, size_t bytes, void* recv) {
  mpi_transport& t = self_of(self);
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return fail(DAO_ERR_INTERNAL, "allgather of %zu bytes is larger than MPI counts", bytes);
  }
  serial lock(t);
  const int n = static_cast<int>(bytes);
  DAO_MPI_TRY(MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, t.comm));
  return DAO_OK;
}

// A window's record and its slot in the list, made on every rank before
// the collective call that creates the window: after that call nothing may
// fail for lack of host memory, and a rank without room must not leave the
// others waiting in it (issue 20, defect 11). The ranks agree first: all
// get their record, or all fail, the message naming the rank short of
// memory.
dao_status window_room(mpi_transport& t, mpi_window** out) {
  *out = nullptr;
  auto* w = new (std::nothrow) mpi_window;
  bool room = w != nullptr;
  if (room) {
    try {
      t.windows.reserve(t.windows.size() + 1);
    } catch (...) {
      room = false;
    }
  }
  const int mine = room ? -1 : t.rank;
  int lacking = -1;
  const dao_status s =
      check(MPI_Allreduce(&mine, &lacking, 1, MPI_INT, MPI_MAX, t.comm), "MPI_Allreduce");
  if (s != DAO_OK || lacking >= 0) {
    delete w;
    if (s != DAO_OK) return s;
    if (!room) return fail(DAO_ERR_OUT_OF_MEMORY, "no host memory for a window record");
    return fail(DAO_ERR_OUT_OF_MEMORY,
                "rank %d of %d had no host memory for a window record; no rank made the window",
                lacking, t.size);
  }
  *out = w;
  return DAO_OK;
}

// Window `win` in its passive-target epoch, returning errors, listed for
// sync, recorded in `w` (from window_room(): nothing here allocates). On
// failure `w` is deleted.
dao_status open_window(mpi_transport& t, MPI_Win win, mpi_window* w, void** window) {
  dao_status s = check(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  if (s == DAO_OK) s = check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all");
  if (s != DAO_OK) {
    delete w;
    return s;
  }
  w->win = win;
  t.windows.push_back(win);  // room reserved
  *window = w;
  return DAO_OK;
}

dao_status close_window(mpi_transport& t, MPI_Win win) {
  t.windows.erase(std::remove(t.windows.begin(), t.windows.end(), win), t.windows.end());
  DAO_MPI_TRY(MPI_Win_unlock_all(win));
  DAO_MPI_TRY(MPI_Win_free(&win));
  return DAO_OK;
}

// Open MPI 4.x (osc/rdma) names the shared-memory file of a window's state
// after the communicator id, which communicators split from one
// communicator share: windows created at the same time on such
// communicators, on one node, take each other's file and fail
// (open-mpi/ompi#7393, #9492). The node leader of each communicator (the
// rank that creates that file) therefore holds a lock, shared by every
// process of this user on the node, while the window is created: creation
// is rare, and the other ranks of a communicator never take the lock, so
// the leaders cannot wait on each other. Without a lock file it goes ahead
// unlocked.
class creation_lock {
 public:
  explicit creation_lock(const mpi_transport& t) {
    if (!t.node_leader) return;
    const char* dir = std::getenv("TMPDIR");
    char path[512];
    std::snprintf(path, sizeof path, "%s/.libdao-mpi-windows-%ld.lock",
                  dir != nullptr && dir[0] != '\0' ? dir : "/tmp", static_cast<long>(getuid()));
    fd_ = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~creation_lock() {
    if (fd_ < 0) return;
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  creation_lock(const creation_lock&) = delete;
  creation_lock& operator=(const creation_lock&) = delete;

 private:
  int fd_ = -1;
};

dao_status op_window_create(void* self, void* local, size_t bytes, void** window) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  if (t.size == 1) {
    // Open MPI 4.1 (osc/rdma) fails MPI_Win_create on a communicator of one
    // process (MPI_ERR_WIN); such a window has no other rank to serve.
    auto* w = new (std::nothrow) mpi_window;
    if (w == nullptr) return fail(DAO_ERR_OUT_OF_MEMORY, "no host memory for a window record");
    w->local = static_cast<char*>(local);
    w->bytes = bytes;
    *window = w;
    return DAO_OK;
  }
  mpi_window* w = nullptr;
  DAO_MPI_ROOM(t, w);
  MPI_Win win = MPI_WIN_NULL;
  dao_status s = DAO_OK;
  {
    creation_lock node_lock(t);
    s = check(MPI_Win_create(local, static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, t.comm, &win),
              "MPI_Win_create");
  }
  if (s != DAO_OK) {
    delete w;
    return s;
  }
  return open_window(t, win, w, window);
}

// Host memory for a distributed object's window. On one node it is a
// shared-memory window (MPI_Win_allocate_shared, each part on its own
// pages); libdao still reaches other ranks' parts only with MPI_Get and
// MPI_Put, which MPI serves there by copying. MPI_Win_allocate would do the
// same, but Open MPI 4.x names the shared-memory files of such windows by
// communicator id, which communicators split from one communicator share,
// so windows made on them at the same time collide (open-mpi/ompi#7393,
// #9492; see creation_lock). Across nodes: MPI_Win_allocate.
dao_status op_window_allocate(void* self, size_t bytes, void** local, void** window) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  mpi_window* w = nullptr;
  DAO_MPI_ROOM(t, w);
  MPI_Win win = MPI_WIN_NULL;
  void* base = nullptr;
  dao_status s = DAO_OK;
  if (t.one_node) {
    MPI_Info info = MPI_INFO_NULL;
    s = check(MPI_Info_create(&info), "MPI_Info_create");
    if (s == DAO_OK) {
      MPI_Info_set(info, "alloc_shared_noncontig", "true");
      const int rc =
          MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, t.comm, &base, &win);
      MPI_Info_free(&info);
      s = check(rc, "MPI_Win_allocate_shared");
    }
  } else {
    creation_lock node_lock(t);
    s = check(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, t.comm, &base, &win),
              "MPI_Win_allocate");
  }
  if (s != DAO_OK) {
    delete w;
    return s;
  }
  *local = base;
  return open_window(t, win, w, window);
}

// MPI counts are ints: a transfer larger than INT_MAX goes in pieces.
template <class Op>
dao_status in_pieces(size_t bytes, Op op) {
  size_t done = 0;
  while (done < bytes) {
    const size_t n = std::min(bytes - done, static_cast<size_t>(INT_MAX));
    const dao_status s = op(done, static_cast<int>(n));
    if (s != DAO_OK) return s;
    done += n;
  }
  return DAO_OK;
}

// One MPI_Put (put) or MPI_Get between `origin` and the target's window.
dao_status rma(const mpi_window& w, int target, bool put, char* origin, int origin_count,
               MPI_Datatype origin_type, MPI_Aint displacement, int target_count,
               MPI_Datatype target_type) {
  if (put)
    return check(MPI_Put(origin, origin_count, origin_type, target, displacement, target_count,
                         target_type, w.win),
                 "MPI_Put");
  return check(MPI_Get(origin, origin_count, origin_type, target, displacement, target_count,
                       target_type, w.win),
               "MPI_Get");
}

// Gets (put false) or puts `bytes` between `local` and the target's window
// at `offset`: a copy when the window is this rank's own memory, else RMA
// in pieces of at most INT_MAX bytes. `local` is only read by a put. The
// caller holds the transport's lock.
dao_status transfer_one(const mpi_window& w, int target, size_t offset, size_t bytes, char* local,
                        bool put) {
  if (w.win == MPI_WIN_NULL) {
    char* at = nullptr;
    const dao_status s = copy_own(w, target, offset, bytes, &at);
    if (s == DAO_OK) {
      if (put) std::memcpy(at, local, bytes);
      else std::memcpy(local, at, bytes);
    }
    return s;
  }
  return in_pieces(bytes, [&](size_t done, int n) {
    return rma(w, target, put, local + done, n, MPI_BYTE, static_cast<MPI_Aint>(offset + done), n,
               MPI_BYTE);
  });
}

dao_status op_window_get(void* self, void* window, int target, size_t offset, void* dst,
                         size_t bytes) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  return transfer_one(*static_cast<mpi_window*>(window), target, offset, bytes,
                      static_cast<char*>(dst), false);
}

dao_status op_window_put(void* self, void* window, int target, size_t offset, const void* src,
                         size_t bytes) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  // MPI_Put only reads its origin buffer.
  return transfer_one(*static_cast<mpi_window*>(window), target, offset, bytes,
                      const_cast<char*>(static_cast<const char*>(src)), true);
}

// Many pieces to or from one target as one MPI_Get or MPI_Put: an hindexed
// datatype on each side (the pieces' lengths, and their displacements in the
// caller's buffer and in the target's window). One call per target instead
// of one per piece is what makes a gather of random rows cheap. Pieces that
// MPI counts cannot describe (over INT_MAX) go one by one.
template <class One>
dao_status each(size_t count, One one) {
  for (size_t i = 0; i < count; ++i) {
    const dao_status s = one(i);
    if (s != DAO_OK) return s;
  }
  return DAO_OK;
}

template <class One, class All>
dao_status many(size_t count, const size_t* lengths, const size_t* target_offsets,
                const size_t* local_offsets, One one, All all) {
  if (count > static_cast<size_t>(INT_MAX)) return each(count, one);
  try {
    std::vector<int> blocks(count);
    std::vector<MPI_Aint> local(count), remote(count);
    for (size_t i = 0; i < count; ++i) {
      if (lengths[i] > static_cast<size_t>(INT_MAX)) return each(count, one);
      blocks[i] = static_cast<int>(lengths[i]);
      local[i] = static_cast<MPI_Aint>(local_offsets[i]);
      remote[i] = static_cast<MPI_Aint>(target_offsets[i]);
    }
    const int n = static_cast<int>(count);
    MPI_Datatype local_type = MPI_DATATYPE_NULL, remote_type = MPI_DATATYPE_NULL;
    dao_status s =
        check(MPI_Type_create_hindexed(n, blocks.data(), local.data(), MPI_BYTE, &local_type),
              "MPI_Type_create_hindexed");
    if (s == DAO_OK) {
      s = check(MPI_Type_create_hindexed(n, blocks.data(), remote.data(), MPI_BYTE, &remote_type),
                "MPI_Type_create_hindexed");
    }
    if (s == DAO_OK) s = check(MPI_Type_commit(&local_type), "MPI_Type_commit");
    if (s == DAO_OK) s = check(MPI_Type_commit(&remote_type), "MPI_Type_commit");
    if (s == DAO_OK) s = all(local_type, remote_type);
    // Freeing a type is allowed while an operation that uses it is pending.
    if (local_type != MPI_DATATYPE_NULL) MPI_Type_free(&local_type);
    if (remote_type != MPI_DATATYPE_NULL) MPI_Type_free(&remote_type);
    return s;
  } catch (const std::bad_alloc&) {
    return fail(DAO_ERR_OUT_OF_MEMORY, "no host memory to describe %zu pieces", count);
  }
}

// Gets (put false) or puts the `count` pieces between `local` at
// `local_offsets` and the target's window at `target_offsets`: one derived
// datatype operation when the pieces allow it, else piece by piece; a copy
// when the window is this rank's own memory. `local` is only read by a put.
dao_status transfer_many(void* self, void* window, int target, size_t count,
                         const size_t* target_offsets, const size_t* lengths, char* local,
                         const size_t* local_offsets, bool put) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  const mpi_window& w = *static_cast<mpi_window*>(window);
  auto one = [&](size_t i) {
    return transfer_one(w, target, target_offsets[i], lengths[i], local + local_offsets[i], put);
  };
  if (w.win == MPI_WIN_NULL) return each(count, one);
  return many(count, lengths, target_offsets, local_offsets, one,
              [&](MPI_Datatype local_type, MPI_Datatype remote_type) {
                return rma(w, target, put, local, 1, local_type, 0, 1, remote_type);
              });
}

dao_status op_window_get_many(void* self, void* window, int target, size_t count,
                              const size_t* target_offsets, const size_t* lengths, void* dst,
                              const size_t* dst_offsets) {
  return transfer_many(self, window, target, count, target_offsets, lengths,
                       static_cast<char*>(dst), dst_offsets, false);
}

dao_status op_window_put_many(void* self, void* window, int target, size_t count,
                              const size_t* target_offsets, const size_t* lengths, const void* src,
                              const size_t* src_offsets) {
  // MPI_Put only reads its origin buffer.
  return transfer_many(self, window, target, count, target_offsets, lengths,
                       const_cast<char*>(static_cast<const char*>(src)), src_offsets, true);
}

dao_status op_window_complete(void* self, void* window) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  const mpi_window& w = *static_cast<mpi_window*>(window);
  if (w.win != MPI_WIN_NULL) DAO_MPI_TRY(MPI_Win_flush_all(w.win));
  return DAO_OK;
}

dao_status op_window_free(void* self, void* window) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  auto* w = static_cast<mpi_window*>(window);
  const dao_status s = w->win != MPI_WIN_NULL ? close_window(t, w->win) : DAO_OK;
  delete w;
  return s;
}

dao_status op_shared_allocate(void* self, size_t bytes, int contiguous, void** segment,
                              void** local) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  mpi_window* w = nullptr;
  DAO_MPI_ROOM(t, w);
  MPI_Info info = MPI_INFO_NULL;
  dao_status s = check(MPI_Info_create(&info), "MPI_Info_create");
  MPI_Win win = MPI_WIN_NULL;
  void* base = nullptr;
  if (s == DAO_OK) {
    MPI_Info_set(info, "alloc_shared_noncontig", contiguous ? "false" : "true");
    const int rc =
        MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, t.comm, &base, &win);
    MPI_Info_free(&info);
    s = check(rc, "MPI_Win_allocate_shared");
  }
  if (s != DAO_OK) {
    delete w;
    return s;
  }
  *local = base;
  return open_window(t, win, w, segment);
}

dao_status op_shared_query(void* self, void* segment, int rank, void** ptr) {
  mpi_transport& t = self_of(self);
  serial lock(t);
  MPI_Aint size = 0;
  int unit = 0;
  void* base = nullptr;
  DAO_MPI_TRY(
      MPI_Win_shared_query(static_cast<mpi_window*>(segment)->win, rank, &size, &unit, &base));
  *ptr = base;
  return DAO_OK;
}

dao_status op_shared_free(void* self, void* segment) { return op_window_free(self, segment); }

void op_destroy(void* self) {
  auto* t = static_cast<mpi_transport*>(self);
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After MPI_Finalize nothing can be freed; the process is ending anyway.
  if (!finalized && t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
  delete t;
}

// Duplicates `comm` and learns whether every rank is on one node.
dao_status make_transport(MPI_Comm comm, mpi_transport** out) {
  auto* t = new (std::nothrow) mpi_transport;
  // Before the first collective call (MPI_Comm_dup), every rank learns
  // whether every rank has its record: a rank out of host memory must not
  // return alone and leave the others waiting in it (issue 20, defect 11).
  int me = -1, world = 0, lacking = -1;
  dao_status s = check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  if (s == DAO_OK) s = check(MPI_Comm_size(comm, &world), "MPI_Comm_size");
  if (t != nullptr && s == DAO_OK) {
    try {
      t->exchange_ints.resize(4 * static_cast<size_t>(world));
    } catch (...) {
      delete t;
      t = nullptr;
    }
  }
  const int mine = t == nullptr ? me : -1;
  if (s == DAO_OK)
    s = check(MPI_Allreduce(&mine, &lacking, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (s == DAO_OK && lacking >= 0) {
    delete t;
    if (t == nullptr) return fail(DAO_ERR_OUT_OF_MEMORY, "no host memory for the transport");
    MPI_Comm_size(comm, &world);
    return fail(DAO_ERR_OUT_OF_MEMORY,
                "rank %d of %d had no host memory for its transport; no rank made one", lacking,
                world);
  }
  if (s != DAO_OK) {
    delete t;
    return s;
  }
  s = check(MPI_Comm_dup(comm, &t->comm), "MPI_Comm_dup");
  if (s == DAO_OK)
    s = check(MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (s == DAO_OK) s = check(MPI_Comm_rank(t->comm, &t->rank), "MPI_Comm_rank");
  if (s == DAO_OK) s = check(MPI_Comm_size(t->comm, &t->size), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  if (s == DAO_OK) {
    s = check(MPI_Comm_split_type(t->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
  }
  if (s == DAO_OK) {
    int node_size = 0;
    s = check(MPI_Comm_size(node, &node_size), "MPI_Comm_size");
    // The same answer on every rank: either all are on one node, or every
    // node holds fewer than all.
    t->one_node = node_size == t->size;
    int node_rank = 0;
    if (s == DAO_OK) s = check(MPI_Comm_rank(node, &node_rank), "MPI_Comm_rank");
    t->node_leader = node_rank == 0;
    MPI_Comm_free(&node);
  }
  int level = MPI_THREAD_SINGLE;
  if (s == DAO_OK) s = check(MPI_Query_thread(&level), "MPI_Query_thread");
  t->serialize = level < MPI_THREAD_MULTIPLE;
  if (s != DAO_OK) {
    if (t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
    delete t;
    return s;
  }
  *out = t;
  return DAO_OK;
}

}  // namespace

extern "C" dao_status dao_comm_create_mpi(MPI_Comm comm, dao_place place, dao_comm** out) {
  if (out != nullptr) *out = nullptr;
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return dao_comm_transport_error(
        DAO_ERR_INVALID_STATE,
        finalized ? "dao_comm_create_mpi: MPI is already finalised"
                  : "dao_comm_create_mpi: MPI is not initialised; call MPI_Init (or "
                    "MPI_Init_thread) first");
  }
  if (comm == MPI_COMM_NULL) {
    return dao_comm_transport_error(DAO_ERR_INVALID_ARGUMENT,
                                    "dao_comm_create_mpi: comm is MPI_COMM_NULL");
  }
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    return dao_comm_transport_error(
        DAO_ERR_INVALID_ARGUMENT,
        "dao_comm_create_mpi: comm is not an intra-communicator (inter-communicators are not "
        "supported)");
  }
  mpi_transport* t = nullptr;
  const dao_status made = make_transport(comm, &t);
  if (made != DAO_OK) {
    char message[1200];
    std::snprintf(message, sizeof message, "dao_comm_create_mpi: %s", last_error_text);
    return dao_comm_transport_error(made, message);
  }
  dao_comm_transport ops;
  std::memset(&ops, 0, sizeof ops);
  ops.struct_size = sizeof ops;
  ops.self = t;
  ops.rank = t->rank;
  ops.size = t->size;
  ops.name = "mpi";
  ops.shares_host_memory = t->one_node ? 1 : 0;
  ops.last_error = op_last_error;
  ops.barrier = op_barrier;
  ops.allgather = op_allgather;
  ops.window_create = op_window_create;
  ops.window_allocate = op_window_allocate;
  ops.window_get = op_window_get;
  ops.window_put = op_window_put;
  ops.window_complete = op_window_complete;
  ops.window_free = op_window_free;
  ops.shared_allocate = op_shared_allocate;
  ops.shared_query = op_shared_query;
  ops.shared_free = op_shared_free;
  ops.destroy = op_destroy;
  ops.window_get_many = op_window_get_many;
  ops.window_put_many = op_window_put_many;
  ops.alltoall = op_alltoall;
  ops.alltoallv = op_alltoallv;
  ops.exchange_limit = static_cast<size_t>(INT_MAX);
  // From here libdao owns `t` and frees it through op_destroy, also when
  // this call fails; it reports the failure itself.
  const dao_status s = dao_comm_create_transport(&ops, place, out);
  if (s != DAO_OK) {
    // Say which entry point failed, keeping libdao's message.
    char message[1200];
    std::snprintf(message, sizeof message, "%s", dao_last_error());
    const char* prefix = "dao_comm_create_transport";
    const size_t n = sizeof "dao_comm_create_transport" - 1;
    if (std::equal(prefix, prefix + n, message)) {
      char renamed[1300];
      std::snprintf(renamed, sizeof renamed, "dao_comm_create_mpi%s", message + n);
      return dao_comm_transport_error(s, renamed);
    }
  }
  return s;
}
