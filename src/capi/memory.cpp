// dao_alloc / dao_free / dao_used: the place-level defaults.
#include "capi/allocator_handle.hpp"
#include "capi/guard.hpp"
#include "core/place_defaults.hpp"
#include "dao/memory.h"

using namespace dao::detail;

extern "C" dao_status dao_alloc(dao_place place, size_t size, void** ptr) {
  if (ptr != nullptr) *ptr = nullptr;
  return guarded([&] {
    require_non_null(ptr, "dao_alloc", "ptr");
    dao_allocator& a = place_allocator(place);
    if (size != 0) *ptr = a.impl->allocate(size, DAO_STREAM_DEFAULT);
  });
}

extern "C" dao_status dao_free(dao_place place, void* ptr) {
  return guarded([&] {
    dao_allocator& a = place_allocator(place);
    if (ptr != nullptr) a.impl->deallocate(ptr);
  });
}

extern "C" dao_status dao_used(dao_place place, size_t* bytes) {
  return guarded([&] {
    require_non_null(bytes, "dao_used", "bytes");
    *bytes = static_cast<size_t>(place_allocator(place).impl->counters().allocated_bytes);
  });
}

extern "C" dao_status dao_place_allocator(dao_place place, dao_allocator** out) {
  return guarded([&] {
    require_non_null(out, "dao_place_allocator", "out");
    *out = &place_allocator(place);
  });
}

extern "C" dao_status dao_place_default_config(dao_place_kind kind, const char** strategy,
                                               const char** config) {
  return guarded([&] {
    const default_config& d = default_config_for(raw_kind(kind));
    if (strategy != nullptr) *strategy = d.strategy.c_str();
    if (config != nullptr) *config = d.config.c_str();
  });
}
