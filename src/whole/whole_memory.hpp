// One rank's view of a whole memory object: its partition, its storage,
// and the operations of dao/whole.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dao/whole.h"
#include "whole/collective.hpp"
#include "whole/communicator.hpp"
#include "whole/partition.hpp"
#include "whole/storage.hpp"

namespace dao::detail::whole {

struct whole_params {
  int type = -1;
  int location = -1;
  std::size_t total_size = 0;
  std::size_t entry_size = 0;
};

class whole_memory {
 public:
  // Collective. `pre` carries this rank's failure of the C API's own checks
  // (a NULL pointer, a bad struct_size), so that every rank fails alike.
  // Throws alike on every rank.
  static std::unique_ptr<whole_memory> create(communicator& comm, const whole_params& params,
                                              const outcome& pre);

  // Collective: agrees on the object, waits for every rank, frees the
  // memory. On failure (ranks on different objects) nothing is freed.
  void destroy(const outcome& pre);

  const whole_params& params() const noexcept { return params_; }
  const partition& layout() const noexcept { return layout_; }
  communicator& comm() const noexcept { return comm_; }
  dao_place place() const noexcept { return storage_->place(); }
  std::uint64_t id() const noexcept { return id_; }

  char* local() const noexcept { return storage_->part(comm_.rank()); }
  // Throws invalid_argument for a bad rank, unsupported when the part is
  // not mapped here.
  char* rank_pointer(int rank, const char* function) const;
  // Throws unsupported unless continuous.
  char* base(const char* function) const;

  void gather(const std::int64_t* indices, std::size_t count, void* dst);
  void scatter(const void* src, const std::int64_t* indices, std::size_t count);

  // Collective (exchange.cpp): every rank gathers or scatters its own
  // entries; on distributed memory through the transport's all-to-alls.
  // Throws alike on every rank for any rank's bad argument.
  void gather_collective(const std::int64_t* indices, std::size_t count, void* dst);
  void scatter_collective(const void* src, const std::int64_t* indices, std::size_t count);

  // Collective (file.cpp).
  void store(const char* path, const outcome& pre);
  void load(const char* path, const outcome& pre);

 private:
  whole_memory(communicator& comm, const whole_params& params);

  // The buffers of the collective exchange, kept between calls
  // (exchange.cpp).
  struct exchange_buffers {
    // By rank: what this rank sends and receives (in entries), and where in
    // the send and receive buffers each rank's piece starts.
    std::vector<std::uint64_t> send_count64, recv_count64;
    std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
    // By index of the caller: its owner.
    std::vector<std::uint32_t> owner;
    // By entry sent, grouped by owner: its offset in the owner's part (in
    // entries) and its position in the caller's buffer.
    std::vector<std::int64_t> send_index;
    std::vector<std::size_t> slot;
    std::vector<std::int64_t> recv_index;
    std::vector<char> send_data, recv_data;
    std::size_t sent = 0, received = 0;
    // Up to 64 ranks: this rank's counts per destination and its room, sent
    // with the agreement, and every rank's (rank r's at r * (ranks + 1)).
    std::vector<std::uint64_t> extras, all_extras;
  };
  // Plans this rank's side of an exchange: which rank owns each index, the
  // indices to send (as offsets into their owners' parts) grouped by owner,
  // and with `pack`, the entries of `src` in the same order. Allocates;
  // throws unsupported when a count is more than the transport takes.
  void plan_exchange(const char* function, const std::int64_t* indices, std::size_t count,
                     const char* pack);
  // The exchange after the plan: counts, then the indices. Agrees with the
  // other ranks on the room for what arrives.
  void exchange_indices(const char* function);
  // The checks, plan and agreement both collective calls start with; true
  // when the entries are to be exchanged, false when the caller copies
  // directly (exchange.cpp).
  bool start_collective(const char* function, call_kind kind, const std::int64_t* indices,
                        std::size_t count, const void* buffer, const char* buffer_name,
                        const char* scattered);
  // The agreement on a collective gather or scatter; carries the counts.
  void agree_on_exchange(const call& c, const outcome& mine);
  void gather_unchecked(const std::int64_t* indices, std::size_t count, void* dst);
  void scatter_unchecked(const void* src, const std::int64_t* indices, std::size_t count);

  // Throws invalid_argument naming the first index out of range, or a size
  // that overflows.
  void check_indices(const char* function, const std::int64_t* indices, std::size_t count,
                     const void* buffer, const char* buffer_name) const;

  communicator& comm_;
  whole_params params_;
  partition layout_;
  std::vector<std::size_t> first_;  // first entry of each rank
  std::unique_ptr<storage> storage_;
  std::uint64_t id_ = 0;
  std::unique_ptr<exchange_buffers> exchange_;
};

}  // namespace dao::detail::whole
