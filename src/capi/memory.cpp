// dao_alloc / dao_free / dao_used: the place-level defaults (and
// dao_used_internal: the library's own strategies beside them).
#include <memory>
#include <mutex>
#include <unordered_map>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/oom_observer.hpp"
#include "dao/memory.h"
#include "resource/system_resource.hpp"
#include "strategy/place_defaults.hpp"

using namespace dao::detail;

namespace {

// The handle of each place's default strategy, made on first request and
// never destroyed (dao_place_allocator gives the same one every time). All
// or nothing: the handle is owned here until the table holds it, so a
// failure part-way (out of memory) leaves nothing behind (issue 20).
dao_allocator& place_handle(dao_place place) {
  static std::mutex mutex;
  static auto* handles = new std::unordered_map<const strategy*, dao_allocator*>();
  strategy& s = place_strategy(place);
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = handles->find(&s);
  if (found != handles->end()) return *found->second;
  auto h = std::make_unique<dao_allocator>();
  h->impl = &s;
  h->config = s.full_config();
  h->place_default = true;
  handles->emplace(&s, h.get());  // strong guarantee: on a throw, not inserted
  return *h.release();
}

}  // namespace

extern "C" dao_status dao_alloc(dao_place place, size_t size, void** ptr) {
  if (ptr != nullptr) *ptr = nullptr;
  strategy* failed = nullptr;
  const dao_status status = guarded([&] {
    require_non_null(ptr, "dao_alloc", "ptr");
    strategy& s = place_strategy(place);
    refuse_inside_oom_callback(s, "dao_alloc");
    failed = &s;
    if (size != 0) *ptr = s.allocate(size, nullptr);
  });
  if (__builtin_expect(status == DAO_ERR_OUT_OF_MEMORY, 0) && failed != nullptr)
    notify_oom(*failed, size, nullptr);
  return status;
}

extern "C" dao_status dao_free(dao_place place, void* ptr) {
  return guarded([&] {
    strategy& s = place_strategy(place);
    if (ptr != nullptr) s.deallocate(ptr);
  });
}

extern "C" dao_status dao_used(dao_place place, size_t* bytes) {
  return guarded([&] {
    require_non_null(bytes, "dao_used", "bytes");
    *bytes = static_cast<size_t>(place_strategy(place).counters().allocated_bytes);
  });
}

extern "C" dao_status dao_used_internal(dao_place place, size_t* bytes) {
  return guarded([&] {
    require_non_null(bytes, "dao_used_internal", "bytes");
    resource_for(place);  // a bad place fails even where nothing was made
    const strategy* s = internal_place_strategy_if_made(place);
    *bytes = s != nullptr ? static_cast<size_t>(s->counters().allocated_bytes) : 0;
  });
}

extern "C" dao_status dao_place_allocator(dao_place place, dao_allocator** out) {
  return guarded([&] {
    require_non_null(out, "dao_place_allocator", "out");
    *out = &place_handle(place);
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
