#include "recycle/collection.hpp"

#include <cstdint>
#include <cstring>

#include "capi/guard.hpp"
#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

dao_collection& checked_collection(dao_collection* c, const char* function) {
  require_non_null(c, function, "collection");
  std::uint64_t magic = 0;  // read as bytes: `c` may point at anything
  if (reinterpret_cast<std::uintptr_t>(c) % alignof(dao_collection) == 0) {
    std::memcpy(&magic, static_cast<const void*>(c), sizeof magic);
  }
  if (magic != dao_collection::kMagic) {
    throw invalid_argument(strprintf("%s: %p is not a live dao_collection handle", function,
                                     static_cast<void*>(c)));
  }
  return *c;
}

dao_recycle_pool* collection::add(const char* name, dao_place place, std::size_t element_size,
                                  int ndim, const std::size_t* shape, std::size_t max_buffers,
                                  std::size_t preallocate, const char* config) {
  static const char* const kFunction = "dao_collection_add";
  require_non_null(name, kFunction, "name");
  if (*name == '\0') throw invalid_argument("dao_collection_add: name must not be empty");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const entry& e : entries_) {
    if (e.name == name) {
      throw invalid_argument(strprintf(
          "dao_collection_add: the collection already has a pool named '%s'", name));
    }
  }
  auto handle = std::make_unique<dao_recycle_pool>();
  handle->impl = recycle_pool::create(place, element_size, ndim, shape, max_buffers, preallocate,
                                      config, kFunction, name);
  handle->in_collection = true;
  entries_.push_back(entry{name, std::move(handle)});
  return entries_.back().pool.get();
}

dao_recycle_pool* collection::find(const char* name) {
  require_non_null(name, "dao_collection_find", "name");
  std::lock_guard<std::mutex> lock(mutex_);
  std::string names;
  for (const entry& e : entries_) {
    if (e.name == name) return e.pool.get();
    names += names.empty() ? "'" : ", '";
    names += e.name + "'";
  }
  throw not_found(strprintf("dao_collection_find: no pool named '%s'; the collection has %s",
                            name, names.empty() ? "no pools" : names.c_str()));
}

void collection::close_all() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const entry& e : entries_) e.pool->impl->close();
}

void collection::destroy_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string busy_pools;
  for (const entry& e : entries_) {
    recycle_pool::out_counts out = e.pool->impl->out_count();
    if (out.held + out.queued == 0) continue;
    busy_pools += strprintf("%s'%s': %llu (%llu held, %llu queued)",
                            busy_pools.empty() ? "" : "; ", e.name.c_str(),
                            static_cast<unsigned long long>(out.held + out.queued),
                            static_cast<unsigned long long>(out.held),
                            static_cast<unsigned long long>(out.queued));
  }
  if (!busy_pools.empty()) {
    throw busy(strprintf(
        "dao_collection_destroy: buffers of these pools are still out: %s; close the "
        "collection, take what is queued and release every buffer first (nothing was "
        "destroyed)",
        busy_pools.c_str()));
  }
  for (entry& e : entries_) {
    e.pool->magic = 0;
    e.pool.reset();
  }
  entries_.clear();
}

}  // namespace dao::detail
