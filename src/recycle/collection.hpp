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
  recycle_pool& add(const char* name, dao_place place, std::size_t element_size, int ndim,
                    const std::size_t* shape, std::size_t max_buffers, std::size_t preallocate,
                    const char* config);
  // Throws not_found listing the names there are.
  recycle_pool& find(const char* name);
  void close_all() noexcept;
  // Throws busy (naming every pool with buffers out) unless every pool can
  // be destroyed; then destroys them all.
  // `on_destroy(pool)` runs for each pool just before it goes.
  template <class OnDestroy>
  void destroy_all(OnDestroy&& on_destroy) {
    std::lock_guard<std::mutex> lock(mutex_);
    check_none_out();
    for (entry& e : entries_) {
      on_destroy(*e.pool);
      e.pool.reset();
    }
    entries_.clear();
  }

 private:
  void check_none_out() const;  // throws busy; mutex_ held

  struct entry {
    std::string name;
    std::unique_ptr<recycle_pool> pool;
  };
  std::mutex mutex_;
  std::vector<entry> entries_;
};

}  // namespace dao::detail
