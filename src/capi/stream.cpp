// dao_stream_*, dao_event_*, dao_memcpy_async and dao_launch_host_func: the
// handles over each place's stream_impl / event_impl. A NULL stream is the
// default stream: its work runs at once, on the calling thread.
#include <cstdint>
#include <cstring>
#include <memory>

#include "capi/guard.hpp"
#include "core/callback_scope.hpp"
#include "capi/handles.hpp"
#include "resource/stream.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

stream_object& checked_stream(dao_stream s, const char* function) {
  return checked_handle(s, function).obj;
}

event_object& checked_event(dao_event e, const char* function) {
  return checked_handle(e, function).obj;
}

bool same_place(dao_place a, dao_place b) noexcept {
  return raw_kind(a.kind) == raw_kind(b.kind) && a.device == b.device;
}

// Events are tied to their place's streams; a SIM event is plain host
// synchronisation, so SIM streams may also wait on another SIM device's.
void require_compatible(const stream_object& s, const event_object& e, bool waiting,
                        const char* function) {
  if (same_place(s.place, e.place)) return;
  if (waiting && raw_kind(s.place.kind) == DAO_PLACE_SIM &&
      raw_kind(e.place.kind) == DAO_PLACE_SIM) {
    return;
  }
  throw invalid_argument(strprintf(
      "%s: the stream is on %s but the event is on %s; %s", function,
      place_to_string(s.place).c_str(), place_to_string(e.place).c_str(),
      waiting ? "a stream can wait only on events of its own place (or, between SIM devices, "
                "of any SIM device)"
              : "an event can be recorded only on a stream of its own place"));
}

// Refuses ranges that overlap or that run past the end of the address space.
void check_copy(void* dst, const void* src, std::size_t bytes) {
  require_non_null(dst, "dao_memcpy_async", "dst");
  require_non_null(src, "dao_memcpy_async", "src");
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  if (bytes - 1 > UINTPTR_MAX - d || bytes - 1 > UINTPTR_MAX - s) {
    throw invalid_argument(
        strprintf("dao_memcpy_async: %zu bytes from %p to %p run past the end of the address space",
                  bytes, src, dst));
  }
  // Inclusive ends: d + bytes itself may wrap to 0.
  if (d <= s + (bytes - 1) && s <= d + (bytes - 1)) {
    throw invalid_argument(
        strprintf("dao_memcpy_async: the ranges overlap (%zu bytes from %p to %p); copies between "
                  "overlapping ranges are not supported",
                  bytes, src, dst));
  }
}

// A host function of `s` that waited for `s` would wait for itself.
void refuse_own_stream(const stream_object& s, const char* function) {
  if (!callback_scope::inside(callback_scope::kind::host_function, s.impl.get())) return;
  throw invalid_state(strprintf(
      "%s: called from a host function (dao_launch_host_func) running on this stream (%s), "
      "which would wait for itself forever; call it from another thread",
      function, place_to_string(s.place).c_str()));
}

}  // namespace
}  // namespace dao::detail

using namespace dao::detail;

extern "C" dao_status dao_stream_create(dao_place place, dao_stream* out) {
  return guarded([&] {
    require_non_null(out, "dao_stream_create", "out");
    system_resource& resource = resource_for(place);
    auto handle = std::make_unique<dao_stream_st>();
    handle->obj.place = resource.place();
    handle->obj.impl = resource.create_stream();
    handle->obj.handle = handle.get();
    *out = handle.release();
  });
}

extern "C" dao_status dao_stream_wrap(dao_place place, void* native, dao_stream* out) {
  return guarded([&] {
    require_non_null(out, "dao_stream_wrap", "out");
    system_resource& resource = resource_for(place);
    auto handle = std::make_unique<dao_stream_st>();
    handle->obj.place = resource.place();
    handle->obj.impl = resource.wrap_stream(native);
    handle->obj.handle = handle.get();
    *out = handle.release();
  });
}

extern "C" dao_status dao_stream_native(dao_stream stream, void** native) {
  return guarded([&] {
    stream_object& s = checked_stream(stream, "dao_stream_native");
    require_non_null(native, "dao_stream_native", "native");
    *native = s.impl->native();
  });
}

extern "C" dao_status dao_stream_place(dao_stream stream, dao_place* place) {
  return guarded([&] {
    stream_object& s = checked_stream(stream, "dao_stream_place");
    require_non_null(place, "dao_stream_place", "place");
    *place = s.place;
  });
}

extern "C" dao_status dao_stream_synchronize(dao_stream stream) {
  return guarded([&] {
    if (stream == nullptr) return;
    stream_object& s = checked_stream(stream, "dao_stream_synchronize");
    refuse_own_stream(s, "dao_stream_synchronize");
    s.impl->synchronize();
  });
}

extern "C" dao_status dao_stream_query(dao_stream stream, int* idle) {
  return guarded([&] {
    require_non_null(idle, "dao_stream_query", "idle");
    if (stream == nullptr) {
      *idle = 1;
      return;
    }
    bool done = checked_stream(stream, "dao_stream_query").impl->query();
    *idle = done ? 1 : 0;
  });
}

extern "C" dao_status dao_stream_wait_event(dao_stream stream, dao_event event) {
  return guarded([&] {
    event_object& e = checked_event(event, "dao_stream_wait_event");
    if (stream == nullptr) {
      e.impl->synchronize();
      return;
    }
    stream_object& s = checked_stream(stream, "dao_stream_wait_event");
    require_compatible(s, e, true, "dao_stream_wait_event");
    s.impl->wait(*e.impl);
  });
}

extern "C" dao_status dao_stream_destroy(dao_stream stream) {
  return guarded([&] {
    dao_stream_st& h = checked_handle(stream, "dao_stream_destroy");
    stream_object& s = h.obj;
    if (h.owned_by_pool) {
      throw invalid_state(
          "dao_stream_destroy: the stream is a tiered pool's compute stream, lent to its "
          "kernels; it belongs to the pool, which destroys it (dao_tiered_destroy)");
    }
    refuse_own_stream(s, "dao_stream_destroy");
    // Run the queued work here first: a host function destroying its own
    // stream gets DAO_ERR_INVALID_STATE instead of a hang or an abort. Any
    // other failure of the work does not keep the handle alive.
    try {
      s.impl->synchronize();
    } catch (const invalid_state& e) {
      throw invalid_state(std::string("dao_stream_destroy: ") + e.what());
    } catch (const error&) {
    }
    h.magic = 0;
    delete &h;
    destroyed_stream_count().fetch_add(1, std::memory_order_release);
  });
}

extern "C" dao_status dao_event_create(dao_place place, dao_event* out) {
  return guarded([&] {
    require_non_null(out, "dao_event_create", "out");
    system_resource& resource = resource_for(place);
    auto handle = std::make_unique<dao_event_st>();
    handle->obj.place = resource.place();
    handle->obj.impl = resource.create_event();
    *out = handle.release();
  });
}

extern "C" dao_status dao_event_record(dao_event event, dao_stream stream) {
  return guarded([&] {
    event_object& e = checked_event(event, "dao_event_record");
    if (stream == nullptr) {
      e.impl->complete_now();
      return;
    }
    stream_object& s = checked_stream(stream, "dao_event_record");
    require_compatible(s, e, false, "dao_event_record");
    s.impl->record(*e.impl);
  });
}

extern "C" dao_status dao_event_query(dao_event event, int* done) {
  return guarded([&] {
    event_object& e = checked_event(event, "dao_event_query");
    require_non_null(done, "dao_event_query", "done");
    *done = e.impl->query() ? 1 : 0;
  });
}

extern "C" dao_status dao_event_synchronize(dao_event event) {
  return guarded([&] { checked_event(event, "dao_event_synchronize").impl->synchronize(); });
}

extern "C" dao_status dao_event_destroy(dao_event event) {
  return guarded([&] {
    dao_event_st& h = checked_handle(event, "dao_event_destroy");
    h.magic = 0;
    delete &h;
  });
}

extern "C" dao_status dao_memcpy_async(void* dst, const void* src, size_t bytes,
                                       dao_stream stream) {
  return guarded([&] {
    stream_object* s = stream != nullptr ? &checked_stream(stream, "dao_memcpy_async") : nullptr;
    if (bytes == 0) return;
    check_copy(dst, src, bytes);
    if (s == nullptr) {
      std::memcpy(dst, src, bytes);
    } else {
      s->impl->copy(dst, src, bytes);
    }
  });
}

extern "C" dao_status dao_launch_host_func(dao_stream stream, dao_host_fn fn, void* user_data) {
  return guarded([&] {
    stream_object* s =
        stream != nullptr ? &checked_stream(stream, "dao_launch_host_func") : nullptr;
    if (fn == nullptr) {
      throw invalid_argument("dao_launch_host_func: fn must not be NULL");
    }
    if (s == nullptr) {
      fn(user_data);
    } else {
      s->impl->launch_host_func(fn, user_data);
    }
  });
}
