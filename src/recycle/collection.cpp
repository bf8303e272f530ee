// Collections of named recycle pools: adding, finding, closing and
// destroying them together (see collection.hpp).
#include "recycle/collection.hpp"

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

recycle_pool& collection::add(const char* name, dao_place place, std::size_t element_size, int ndim,
                              const std::size_t* shape, std::size_t max_buffers,
                              std::size_t preallocate, const char* config) {
  static const char* const kFunction = "dao_collection_add";
  require_non_null(name, kFunction, "name");
  if (*name == '\0') throw invalid_argument("dao_collection_add: name must not be empty");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const entry& e : entries_) {
    if (e.name == name) {
      throw invalid_argument(
          strprintf("dao_collection_add: the collection already has a pool named '%s'", name));
    }
  }
  std::unique_ptr<recycle_pool> pool = recycle_pool::create(
      place, element_size, ndim, shape, max_buffers, preallocate, config, kFunction, name);
  entries_.push_back(entry{name, std::move(pool)});
  return *entries_.back().pool;
}

recycle_pool& collection::find(const char* name) {
  require_non_null(name, "dao_collection_find", "name");
  std::lock_guard<std::mutex> lock(mutex_);
  std::string names;
  for (const entry& e : entries_) {
    if (e.name == name) return *e.pool;
    names += names.empty() ? "'" : ", '";
    names += e.name + "'";
  }
  throw not_found(strprintf("dao_collection_find: no pool named '%s'; the collection has %s", name,
                            names.empty() ? "no pools" : names.c_str()));
}

void collection::close_all() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const entry& e : entries_) e.pool->close();
}

void collection::check_none_out() const {
  std::string busy_pools;
  for (const entry& e : entries_) {
    recycle_pool::out_counts out = e.pool->out_count();
    if (out.held + out.queued == 0) continue;
    busy_pools += strprintf("%s'%s': %llu (%llu held, %llu queued)", busy_pools.empty() ? "" : "; ",
                            e.name.c_str(), static_cast<unsigned long long>(out.held + out.queued),
                            static_cast<unsigned long long>(out.held),
                            static_cast<unsigned long long>(out.queued));
  }
  if (!busy_pools.empty()) {
    throw busy(
        strprintf("dao_collection_destroy: buffers of these pools are still out: %s; close the "
                  "collection, take what is queued and release every buffer first (nothing was "
                  "destroyed)",
                  busy_pools.c_str()));
  }
}

}  // namespace dao::detail
