// dao_allocator_*: allocator objects over the strategy layer.
#include <cstring>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/oom_observer.hpp"
#include "capi/sized_struct.hpp"
#include "core/callback_scope.hpp"
#include "resource/stream.hpp"
#include "resource/system_resource.hpp"
#include "strategy/place_defaults.hpp"
#include "strategy/registry.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

// An allocator handle owned by the caller.
dao_allocator* make_allocator_handle(std::unique_ptr<strategy> impl) {
  auto handle = std::make_unique<dao_allocator>();
  handle->config = impl->full_config();
  handle->impl = impl.get();
  handle->owned = std::move(impl);
  return handle.release();
}

}  // namespace
}  // namespace dao::detail

using namespace dao::detail;

extern "C" dao_status dao_allocator_create(dao_place place, const char* strategy_name,
                                           const char* config, dao_allocator** out) {
  return guarded([&] {
    require_non_null(out, "dao_allocator_create", "out");
    system_resource& resource = resource_for(place);
    const char* name = strategy_name != nullptr
                           ? strategy_name
                           : default_config_for(raw_kind(place.kind)).strategy.c_str();
    std::unique_ptr<strategy> impl = make_strategy(name, resource, config != nullptr ? config : "");
    *out = make_allocator_handle(std::move(impl));
  });
}

extern "C" dao_status dao_allocator_alloc(dao_allocator* a, size_t size, dao_stream stream,
                                          void** ptr) {
  if (ptr != nullptr) *ptr = nullptr;
  strategy* failed = nullptr;
  const dao_status status = guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_alloc");
    require_non_null(ptr, "dao_allocator_alloc", "ptr");
    refuse_inside_oom_callback(*h.impl, "dao_allocator_alloc");
    const stream_object* s = stream_of(stream, "dao_allocator_alloc");
    failed = h.impl;
    if (size != 0) *ptr = h.impl->allocate(size, s);
  });
  if (__builtin_expect(status == DAO_ERR_OUT_OF_MEMORY, 0) && failed != nullptr)
    notify_oom(*failed, size, stream);
  return status;
}

extern "C" dao_status dao_allocator_free(dao_allocator* a, void* ptr) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_free");
    if (ptr != nullptr) h.impl->deallocate(ptr);
  });
}

extern "C" dao_status dao_allocator_usable_size(dao_allocator* a, const void* ptr, size_t* size) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_usable_size");
    require_non_null(size, "dao_allocator_usable_size", "size");
    *size = h.impl->usable_size(ptr);
  });
}

extern "C" dao_status dao_allocator_trim(dao_allocator* a, size_t* released) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_trim");
    // A stack (`upstream=`) is trimmed all the way down: what a strategy
    // gives back goes to the one below it, which would otherwise keep it
    // cached, held from the system and counted in no statistic of this
    // allocator (issue 20, found by the growth soak: caching over buddy kept
    // buddy's 16 MiB chunk after every trim). No lock is held between the
    // trims. `released` stays what this allocator gave back, so that it is
    // what its reserved_bytes fell by.
    std::size_t bytes = h.impl->trim();
    for (const dao::detail::strategy* s = h.impl->below(); s != nullptr; s = s->below())
      const_cast<dao::detail::strategy*>(s)->trim();
    if (released != nullptr) *released = bytes;
  });
}

extern "C" dao_status dao_allocator_get_stats(dao_allocator* a, dao_allocator_stats* stats) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_get_stats");
    check_sized(stats, "dao_allocator_get_stats", "stats");  // before any work
    allocator_counters c = h.impl->counters();
    dao_allocator_stats s{};
    s.allocated_bytes = c.allocated_bytes;
    s.peak_allocated_bytes = c.peak_allocated_bytes;
    s.requested_bytes = c.requested_bytes;
    s.reserved_bytes = c.reserved_bytes;
    s.peak_reserved_bytes = c.peak_reserved_bytes;
    s.live_blocks = c.live_blocks;
    s.alloc_count = c.alloc_count;
    s.free_count = c.free_count;
    s.failed_alloc_count = c.failed_alloc_count;
    s.system_alloc_count = c.system_alloc_count;
    s.system_free_count = c.system_free_count;
    s.largest_free_block = c.largest_free_block;
    s.alloc_retry_count = c.alloc_retry_count;
    write_sized(s, stats, "dao_allocator_get_stats", "stats");
  });
}

extern "C" dao_status dao_allocator_reset_peak_stats(dao_allocator* a) {
  return guarded([&] { checked_handle(a, "dao_allocator_reset_peak_stats").impl->reset_peaks(); });
}

extern "C" dao_status dao_allocator_info(dao_allocator* a, dao_place* place, const char** strategy,
                                         const char** config) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_info");
    if (place != nullptr) *place = h.impl->upstream().place();
    if (strategy != nullptr) *strategy = h.impl->name();
    if (config != nullptr) *config = h.config.c_str();
  });
}

extern "C" dao_status dao_allocator_destroy(dao_allocator* a) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_destroy");
    refuse_inside_oom_callback(*h.impl, "dao_allocator_destroy");
    if (h.place_default) {
      throw invalid_argument(strprintf(
          "dao_allocator_destroy: the default allocator of %s belongs to libdao and cannot be "
          "destroyed",
          place_to_string(h.impl->upstream().place()).c_str()));
    }
    // From a host function of stream S, a destroy that waits for S (a
    // "caching" allocator with memory ordered on S) would wait for the
    // function itself (issue 20, reentrancy).
    if (const callback_scope* fn = callback_scope::find(callback_scope::kind::host_function);
        fn != nullptr && h.impl->destroy_waits_for(fn->owner())) {
      throw invalid_state(strprintf(
          "dao_allocator_destroy: called from a host function (dao_launch_host_func) running on a "
          "stream this %s allocator on %s orders memory on (stream-ordered frees or blocks "
          "cached for that stream); destroying it waits for that stream, which cannot run past "
          "the function: call it from another thread (nothing was destroyed)",
          h.impl->name(), place_to_string(h.impl->upstream().place()).c_str()));
    }
    allocator_counters c = h.impl->counters();
    if (c.live_blocks != 0) {
      throw busy(strprintf(
          "dao_allocator_destroy: %llu block(s) of %s are still live in this %s allocator on "
          "%s; free them first (nothing was destroyed)",
          static_cast<unsigned long long>(c.live_blocks), format_bytes(c.allocated_bytes).c_str(),
          h.impl->name(), place_to_string(h.impl->upstream().place()).c_str()));
    }
    h.magic = 0;
    delete &h;
  });
}

extern "C" dao_status dao_allocator_get_stat(dao_allocator* a, dao_stat_metric metric,
                                             dao_stat_pool pool, dao_stat* out) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_get_stat");
    require_non_null(out, "dao_allocator_get_stat", "out");
    const int m = raw_enum(metric), p = raw_enum(pool);  // as the C caller stored them
    if (m < 0 || m >= DAO_STAT_METRIC_COUNT) {
      throw invalid_argument(strprintf("dao_allocator_get_stat: unknown metric %d (valid 0..%d)", m,
                                       DAO_STAT_METRIC_COUNT - 1));
    }
    if (p < 0 || p >= DAO_STAT_POOL_COUNT) {
      throw invalid_argument(strprintf("dao_allocator_get_stat: unknown pool %d (valid 0..%d)", p,
                                       DAO_STAT_POOL_COUNT - 1));
    }
    dao_stat value{};
    if (!h.impl->stat(m, p, value)) {
      throw unsupported(strprintf("dao_allocator_get_stat: the %s strategy does not keep metric %d "
                                  "for pool %d",
                                  h.impl->name(), m, p));
    }
    *out = value;
  });
}

extern "C" dao_status dao_allocator_reset_accumulated_stats(dao_allocator* a) {
  return guarded([&] {
    checked_handle(a, "dao_allocator_reset_accumulated_stats").impl->reset_accumulated();
  });
}

extern "C" dao_status dao_allocator_record_stream(dao_allocator* a, void* ptr, dao_stream stream) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_record_stream");
    h.impl->record_stream(ptr, stream_of(stream, "dao_allocator_record_stream"));
  });
}
