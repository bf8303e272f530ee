// dao_trace_* and dao_allocator_set_oom_callback: the memory history
// (issue 18) over the recorder (src/trace/).
#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/oom_observer.hpp"
#include "capi/sized_struct.hpp"
#include "dao/trace.h"
#include "trace/recorder.hpp"

using namespace dao::detail;

extern "C" dao_status dao_trace_start(const char* path, const char* options) {
  return guarded([&] { trace::start(path, options); });
}

extern "C" dao_status dao_trace_stop(void) {
  return guarded([&] { trace::stop(); });
}

extern "C" dao_status dao_trace_flush(void) {
  return guarded([&] { trace::flush(); });
}

extern "C" dao_status dao_trace_mark(const char* text) {
  return guarded([&] { trace::mark(text); });
}

extern "C" dao_status dao_trace_get_stats(dao_trace_stats* stats) {
  return guarded([&] {
    check_sized(stats, "dao_trace_get_stats", "stats");
    const trace::status_values v = trace::status();
    dao_trace_stats s{};
    s.active = v.active ? 1 : 0;
    s.records = v.records;
    s.lost = v.lost;
    s.pending = v.pending;
    s.bytes_written = v.bytes;
    write_sized(s, stats, "dao_trace_get_stats", "stats");
  });
}

extern "C" dao_status dao_allocator_set_oom_callback(dao_allocator* a, dao_oom_callback fn,
                                                     void* user_data) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_set_oom_callback");
    refuse_inside_oom_callback(*h.impl, "dao_allocator_set_oom_callback");
    strategy::oom_observer o;
    o.fn = reinterpret_cast<void (*)(void*, std::size_t, void*, void*)>(fn);
    o.user_data = user_data;
    o.handle = &h;
    h.impl->set_observer(o);
  });
}
