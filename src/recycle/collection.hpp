// Collections of named recycle pools (the seed's memory_collection): pools
// created together, looked up by name, closed and destroyed together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dao/place.h"
#include "recycle/recycle_pool.hpp"

namespace dao::detail {

class collection {
 public:
  // Creates a pool under `name` (see recycle_pool::create) and keeps it.
  // Throws invalid_argument for a NULL, empty or used name.
  dao_recycle_pool* add(const char* name, dao_place place, std::size_t element_size, int ndim,
                        const std::size_t* shape, std::size_t max_buffers,
                        std::size_t preallocate, const char* config);
  // Throws not_found listing the names there are.
  dao_recycle_pool* find(const char* name);
  void close_all() noexcept;
  // Throws busy (naming every pool with buffers out) unless every pool can
  // be destroyed; then destroys them all.
  void destroy_all();

 private:
  struct entry {
    std::string name;
    std::unique_ptr<dao_recycle_pool> pool;
  };
  std::mutex mutex_;
  std::vector<entry> entries_;
};

}  // namespace dao::detail

// The handle a caller holds for a collection.
struct dao_collection {
  static constexpr std::uint64_t kMagic = 0x64616f636f6c6c6eull;  // "daocolln"

  std::uint64_t magic = kMagic;
  dao::detail::collection impl;
};

namespace dao::detail {

// Throws invalid_argument naming `function` when NULL or not a collection.
dao_collection& checked_collection(dao_collection* c, const char* function);

}  // namespace dao::detail
