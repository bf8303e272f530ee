// dao_recycle_*, dao_buffer_* and dao_collection_*: recycle pools for
// streaming pipelines (include/dao/recycle.h) over src/recycle/.
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "dao/recycle.h"
#include "recycle/collection.hpp"
#include "recycle/recycle_pool.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

dao_recycle_pool& checked_pool(dao_recycle_pool* pool, const char* function) {
  return checked_handle(pool, function);
}

// A dao_buffer is the address of its record (handles.hpp says why).
recycle_buffer& checked_buffer(const dao_buffer* buffer, const char* function) {
  require_non_null(buffer, function, "buffer");
  if (!has_magic(buffer, recycle_buffer::kMagic, alignof(recycle_buffer))) {
    throw invalid_argument(strprintf("%s: %p is not a dao_buffer handle of a live pool", function,
                                     static_cast<const void*>(buffer)));
  }
  return *reinterpret_cast<recycle_buffer*>(const_cast<dao_buffer*>(buffer));
}

dao_buffer* to_handle(recycle_buffer* b) noexcept { return reinterpret_cast<dao_buffer*>(b); }

dao_collection& checked_collection(dao_collection* c, const char* function) {
  return checked_handle(c, function);
}

// The handle of a pool of collection `c`, made the first time it is asked for.
// The handle of a pool of `c`, made on first request. The map's entry is
// made whole or not at all: an entry left without its handle (when making
// the handle ran out of memory) was dereferenced by the destroy (issue 20,
// found by test_host_oom).
dao_recycle_pool* pool_handle(dao_collection& c, recycle_pool& pool) {
  std::lock_guard<std::mutex> lock(c.handles_mutex);
  auto found = c.handles.find(&pool);
  if (found != c.handles.end()) return found->second.get();
  auto handle = std::make_unique<dao_recycle_pool>();
  handle->impl = &pool;
  handle->in_collection = true;
  return c.handles.emplace(&pool, std::move(handle)).first->second.get();
}

// guarded() for bodies that return a status of their own (timeouts and
// closed pools are reported without an exception, so without allocating).
template <class Body>
dao_status guarded_status(Body&& body) noexcept {
  dao_status result = DAO_OK;
  const dao_status thrown = guarded([&] { result = body(); });
  return thrown != DAO_OK ? thrown : result;
}

}  // namespace
}  // namespace dao::detail

using namespace dao::detail;

// --- pools -----------------------------------------------------------------

extern "C" dao_status dao_recycle_create(dao_place place, size_t element_size, int ndim,
                                         const size_t* shape, size_t max_buffers,
                                         size_t preallocate, const char* config,
                                         dao_recycle_pool** out) {
  return guarded([&] {
    require_non_null(out, "dao_recycle_create", "out");
    auto handle = std::make_unique<dao_recycle_pool>();
    handle->owned = recycle_pool::create(place, element_size, ndim, shape, max_buffers, preallocate,
                                         config, "dao_recycle_create", "");
    handle->impl = handle->owned.get();
    *out = handle.release();
  });
}

extern "C" dao_status dao_recycle_acquire(dao_recycle_pool* pool, double timeout,
                                          dao_buffer** out) {
  if (out != nullptr) *out = nullptr;
  return guarded_status([&] {
    dao_recycle_pool& p = checked_pool(pool, "dao_recycle_acquire");
    require_non_null(out, "dao_recycle_acquire", "out");
    recycle_buffer* b = nullptr;
    const dao_status st = p.impl->acquire(timeout, b);
    *out = to_handle(b);
    return st;
  });
}

extern "C" dao_status dao_recycle_submit(dao_recycle_pool* pool, dao_buffer* buffer) {
  return guarded_status([&] {
    dao_recycle_pool& p = checked_pool(pool, "dao_recycle_submit");
    recycle_buffer& b = checked_buffer(buffer, "dao_recycle_submit");
    if (b.pool != p.impl) {
      throw invalid_argument(strprintf(
          "dao_recycle_submit: buffer %p belongs to pool '%s', not to pool '%s'; nothing changed",
          static_cast<void*>(buffer), b.pool->name().c_str(), p.impl->name().c_str()));
    }
    return p.impl->submit(b);
  });
}

extern "C" dao_status dao_recycle_take(dao_recycle_pool* pool, double timeout, dao_buffer** out) {
  if (out != nullptr) *out = nullptr;
  return guarded_status([&] {
    dao_recycle_pool& p = checked_pool(pool, "dao_recycle_take");
    require_non_null(out, "dao_recycle_take", "out");
    recycle_buffer* b = nullptr;
    const dao_status st = p.impl->take(timeout, b);
    *out = to_handle(b);
    return st;
  });
}

extern "C" dao_status dao_recycle_close(dao_recycle_pool* pool) {
  return guarded([&] { checked_pool(pool, "dao_recycle_close").impl->close(); });
}

extern "C" dao_status dao_recycle_get_stats(dao_recycle_pool* pool, dao_recycle_stats* stats) {
  return guarded([&] {
    dao_recycle_pool& p = checked_pool(pool, "dao_recycle_get_stats");
    check_sized(stats, "dao_recycle_get_stats", "stats");  // before any work
    dao_recycle_stats s{};
    p.impl->read_stats(s);
    write_sized(s, stats, "dao_recycle_get_stats", "stats");
  });
}

extern "C" dao_status dao_recycle_destroy(dao_recycle_pool* pool) {
  return guarded([&] {
    dao_recycle_pool& p = checked_pool(pool, "dao_recycle_destroy");
    if (p.in_collection) {
      throw invalid_argument(strprintf(
          "dao_recycle_destroy: pool '%s' belongs to a collection; destroy the collection "
          "(dao_collection_destroy) instead",
          p.impl->name().c_str()));
    }
    recycle_pool::out_counts out = p.impl->out_count();
    if (out.held + out.queued != 0) {
      throw busy(strprintf(
          "dao_recycle_destroy: %llu buffer(s) of pool '%s' are still out: %llu held, %llu "
          "queued; close the pool, take what is queued and release every buffer first (nothing "
          "was destroyed)",
          static_cast<unsigned long long>(out.held + out.queued), p.impl->name().c_str(),
          static_cast<unsigned long long>(out.held), static_cast<unsigned long long>(out.queued)));
    }
    p.magic = 0;
    delete &p;
  });
}

// --- buffers ---------------------------------------------------------------

extern "C" dao_status dao_buffer_retain(dao_buffer* buffer) {
  return guarded_status([&] {
    recycle_buffer& b = checked_buffer(buffer, "dao_buffer_retain");
    return b.pool->retain(b);
  });
}

extern "C" dao_status dao_buffer_release(dao_buffer* buffer) {
  return guarded_status([&] {
    recycle_buffer& b = checked_buffer(buffer, "dao_buffer_release");
    return b.pool->release(b);
  });
}

extern "C" dao_status dao_buffer_data(const dao_buffer* buffer, void** data) {
  return guarded([&] {
    const recycle_buffer& b = checked_buffer(buffer, "dao_buffer_data");
    require_non_null(data, "dao_buffer_data", "data");
    *data = b.data;
  });
}

extern "C" dao_status dao_buffer_shape(const dao_buffer* buffer, int* ndim, const size_t** shape) {
  return guarded([&] {
    const recycle_buffer& b = checked_buffer(buffer, "dao_buffer_shape");
    if (ndim != nullptr) *ndim = b.pool->ndim();
    if (shape != nullptr) *shape = b.pool->shape();
  });
}

extern "C" dao_status dao_buffer_size(const dao_buffer* buffer, size_t* element_size,
                                      size_t* bytes) {
  return guarded([&] {
    const recycle_buffer& b = checked_buffer(buffer, "dao_buffer_size");
    if (element_size != nullptr) *element_size = b.pool->element_size();
    if (bytes != nullptr) *bytes = b.pool->bytes();
  });
}

extern "C" dao_status dao_buffer_place(const dao_buffer* buffer, dao_place* place) {
  return guarded([&] {
    const recycle_buffer& b = checked_buffer(buffer, "dao_buffer_place");
    require_non_null(place, "dao_buffer_place", "place");
    *place = b.pool->place();
  });
}

extern "C" dao_status dao_buffer_sequence(const dao_buffer* buffer, uint64_t* sequence) {
  return guarded([&] {
    const recycle_buffer& b = checked_buffer(buffer, "dao_buffer_sequence");
    require_non_null(sequence, "dao_buffer_sequence", "sequence");
    *sequence = b.sequence.load(std::memory_order_relaxed);
  });
}

// --- collections -----------------------------------------------------------

extern "C" dao_status dao_collection_create(dao_collection** out) {
  return guarded([&] {
    require_non_null(out, "dao_collection_create", "out");
    auto handle = std::make_unique<dao_collection>();
    handle->impl = std::make_unique<collection>();
    *out = handle.release();
  });
}

extern "C" dao_status dao_collection_add(dao_collection* collection, const char* name,
                                         dao_place place, size_t element_size, int ndim,
                                         const size_t* shape, size_t max_buffers,
                                         size_t preallocate, const char* config,
                                         dao_recycle_pool** out) {
  return guarded([&] {
    dao_collection& c = checked_collection(collection, "dao_collection_add");
    // The handle and its map node are made before the pool is added, so
    // that nothing can fail after: a pool added without a handle stayed in
    // the collection of an add that said out of memory.
    decltype(c.handles) staging;
    staging.emplace(nullptr, std::make_unique<dao_recycle_pool>());
    {
      std::lock_guard<std::mutex> lock(c.handles_mutex);
      c.handles.reserve(c.handles.size() + 1);
    }
    recycle_pool& pool =
        c.impl->add(name, place, element_size, ndim, shape, max_buffers, preallocate, config);
    auto node = staging.extract(staging.begin());
    node.key() = &pool;
    node.mapped()->impl = &pool;
    node.mapped()->in_collection = true;
    dao_recycle_pool* handle = node.mapped().get();
    {
      std::lock_guard<std::mutex> lock(c.handles_mutex);
      c.handles.insert(std::move(node));  // a node and room: allocates nothing
    }
    if (out != nullptr) *out = handle;
  });
}

extern "C" dao_status dao_collection_find(dao_collection* collection, const char* name,
                                          dao_recycle_pool** out) {
  return guarded([&] {
    dao_collection& c = checked_collection(collection, "dao_collection_find");
    require_non_null(out, "dao_collection_find", "out");
    *out = pool_handle(c, c.impl->find(name));
  });
}

extern "C" dao_status dao_collection_close(dao_collection* collection) {
  return guarded([&] { checked_collection(collection, "dao_collection_close").impl->close_all(); });
}

extern "C" dao_status dao_collection_destroy(dao_collection* collection) {
  return guarded([&] {
    dao_collection& c = checked_collection(collection, "dao_collection_destroy");
    c.impl->destroy_all([&](const recycle_pool& pool) {
      std::lock_guard<std::mutex> lock(c.handles_mutex);
      auto it = c.handles.find(&pool);
      if (it != c.handles.end()) it->second->magic = 0;  // stale handles are refused
    });
    c.magic = 0;
    delete &c;
  });
}
