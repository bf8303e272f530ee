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

  // Collective (file.cpp).
  void store(const char* path, const outcome& pre);
  void load(const char* path, const outcome& pre);

 private:
  whole_memory(communicator& comm, const whole_params& params);

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
};

}  // namespace dao::detail::whole
