// The transport of a communicator: the few collective and one-sided
// operations that partitioned memory needs. libdao has one implementation
// in-process (local_transport.cpp); other libraries (libdao-mpi) hand one in
// through the C hook dao_comm_transport (hooked_transport.cpp), so that
// libdao itself never links a communication library.
//
// Every operation throws a dao::detail::error on failure. Collective
// operations are called by every rank in the same order; one that fails on
// one rank must fail on every rank (or be followed by an agreement on the
// outcome, collective.hpp), never leave the others waiting.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace dao::detail::whole {

// One-sided access to the memory that every rank exposed.
class window {
 public:
  virtual ~window() = default;
  // Start a read of `bytes` at `offset` of rank `target`'s memory into `dst`.
  virtual void get(int target, std::size_t offset, void* dst, std::size_t bytes) = 0;
  // Start a write of `bytes` from `src` at `offset` of rank `target`'s memory.
  virtual void put(int target, std::size_t offset, const void* src, std::size_t bytes) = 0;
  // Start `count` reads from rank `target`: piece i is lengths[i] bytes at
  // target_offsets[i], into dst + dst_offsets[i]. The default starts one
  // get() per piece; transports that can do better in one call override it.
  virtual void get_many(int target, std::size_t count, const std::size_t* target_offsets,
                        const std::size_t* lengths, char* dst, const std::size_t* dst_offsets) {
    for (std::size_t i = 0; i < count; ++i)
      get(target, target_offsets[i], dst + dst_offsets[i], lengths[i]);
  }
  // The same for writes from src + src_offsets[i].
  virtual void put_many(int target, std::size_t count, const std::size_t* target_offsets,
                        const std::size_t* lengths, const char* src,
                        const std::size_t* src_offsets) {
    for (std::size_t i = 0; i < count; ++i)
      put(target, target_offsets[i], src + src_offsets[i], lengths[i]);
  }
  // Complete every get (data in dst) and put (data at the target) started.
  virtual void complete() = 0;
  // Collective: stop exposing. Called once, by every rank, before
  // destruction; a window destroyed without it releases what it can
  // locally (used when a create failed on this rank only before exposing).
  virtual void free() = 0;
  // This rank's memory when the transport allocated it, else nullptr.
  virtual void* local() const noexcept { return nullptr; }
};

// Host memory that every rank maps: each rank's part, in this process.
class shared_segment {
 public:
  virtual ~shared_segment() = default;
  virtual void* part(int rank) const = 0;
  // Collective, once, before destruction.
  virtual void free() = 0;
};

class transport {
 public:
  virtual ~transport() = default;

  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  virtual const char* name() const noexcept = 0;
  // All ranks are threads of this process: any rank's memory is reachable.
  virtual bool shares_address_space() const noexcept = 0;
  // allocate_shared() works (one process, or every rank on one node).
  virtual bool shares_host_memory() const noexcept = 0;

  // Collective. Returns once every rank has called it; makes every rank's
  // earlier writes into windows and segments visible to all after it.
  virtual void barrier() = 0;
  // Collective. recv gets size() * bytes: rank r's `send` at r * bytes.
  virtual void allgather(const void* send, std::size_t bytes, void* recv) = 0;

  // Whether alltoall() and alltoallv() work (the collective gather and
  // scatter exchange through them; without, they use the window).
  virtual bool has_exchange() const noexcept { return false; }
  // Collective. Rank r gets send + r * bytes; recv + r * bytes gets rank r's.
  virtual void alltoall(const void* send, std::size_t bytes, void* recv);
  // Collective. Rank r gets send_counts[r] units of `unit` bytes from
  // send + send_displs[r] * unit; recv + recv_displs[r] * unit gets
  // recv_counts[r] units from rank r.
  virtual void alltoallv(const void* send, const std::size_t* send_counts,
                         const std::size_t* send_displs, void* recv, const std::size_t* recv_counts,
                         const std::size_t* recv_displs, std::size_t unit);
  // The largest count, displacement or total in units that alltoallv()
  // takes (MPI: INT_MAX).
  virtual std::size_t exchange_limit() const noexcept { return static_cast<std::size_t>(-1); }

  // Collective. Exposes [local, local + bytes) of this rank.
  virtual std::unique_ptr<window> expose(void* local, std::size_t bytes) = 0;
  // Collective. Allocates `bytes` of host memory owned by the transport
  // and exposes it (window::local()); nullptr when the transport cannot,
  // on every rank alike.
  virtual std::unique_ptr<window> allocate_exposed(std::size_t bytes) = 0;
  // Collective. Host memory every rank maps; `contiguous` puts the ranks'
  // parts next to each other in rank order. Only when shares_host_memory().
  virtual std::unique_ptr<shared_segment> allocate_shared(std::size_t bytes, bool contiguous) = 0;

  // Room for the records of an agreement (collective.cpp), reserved when
  // the transport is made (reserve_agreement()), so that agreeing on a
  // failure needs no memory.
  std::vector<unsigned char>& agreement_buffer() noexcept { return agreement_; }

 private:
  std::vector<unsigned char> agreement_;
};

}  // namespace dao::detail::whole
