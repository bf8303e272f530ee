// The recorded paths of the strategy base class (issue 18): what
// allocate(), deallocate(), trim() and record_stream() do while a
// recording runs, and the out-of-memory observers' storage.
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "strategy/strategy.hpp"
#include "trace/recorder.hpp"

namespace dao::detail {

namespace {

std::uint64_t stream_id_of(const stream_object* s) noexcept { return s != nullptr ? s->id : 0; }

}  // namespace

std::uint32_t strategy::trace_id() {
  if (!traced_) return 0;
  return trace::allocator_id(trace_slot_, [&] {
    trace::allocator_info info;
    info.place = place_to_string(upstream().place());
    info.strategy = name();
    try {
      info.config = full_config();
      info.capacity = upstream().info().total_bytes;
    } catch (...) {  // described as far as it goes
    }
    return info;
  });
}

void* strategy::traced_allocate(std::size_t bytes, const stream_object* stream) {
  std::uint32_t id = 0;
  try {
    id = trace_id();
  } catch (...) {  // out of host memory registering: not recorded
  }
  if (id == 0) return do_allocate(bytes, stream);
  trace::current_allocator scope(id);
  void* p = nullptr;
  trace::t_block_size = 0;
  try {
    p = do_allocate(bytes, stream);
  } catch (const out_of_memory& e) {
    std::size_t free_bytes = 0;
    try {
      free_bytes = upstream().info().free_bytes;
    } catch (...) {
    }
    trace::record_oom(id, bytes, stream_id_of(stream), free_bytes, e.what());
    throw;
  }
  trace::event ev;
  ev.what = trace::kind::alloc;
  ev.allocator = id;
  ev.ptr = reinterpret_cast<std::uintptr_t>(p);
  ev.size = trace::t_block_size != 0 ? trace::t_block_size : usable_size(p);
  ev.req = bytes;
  ev.stream_id = stream_id_of(stream);
  ev.stream_handle = handle_of(stream);
  trace::record(ev);
  return p;
}

void strategy::traced_deallocate(void* p) {
  std::uint32_t id = 0;
  try {
    id = trace_id();
  } catch (...) {
  }
  if (id == 0 || p == nullptr) return do_deallocate(p);
  trace::current_allocator scope(id);
  // Claimed before the free: once freed, another thread may be handed the
  // block, and its `alloc` must come after this `free` in the file.
  trace::pending slot = trace::claim();
  do_deallocate(p);  // on a throw, the slot is skipped
  trace::event ev;
  ev.what = trace::kind::free;
  ev.allocator = id;
  ev.ptr = reinterpret_cast<std::uintptr_t>(p);
  slot.commit(ev);
}

std::size_t strategy::traced_trim() {
  std::uint32_t id = 0;
  try {
    id = trace_id();
  } catch (...) {
  }
  if (id == 0) return do_trim();
  trace::current_allocator scope(id);
  const std::size_t released = do_trim();
  trace::event ev;
  ev.what = trace::kind::trim;
  ev.allocator = id;
  ev.size = released;
  trace::record(ev);
  return released;
}

void strategy::traced_record_stream(void* p, const stream_object* stream) {
  std::uint32_t id = 0;
  try {
    id = trace_id();
  } catch (...) {
  }
  if (id == 0) return do_record_stream(p, stream);
  trace::current_allocator scope(id);
  do_record_stream(p, stream);
  trace::event ev;
  ev.what = trace::kind::use;
  ev.allocator = id;
  ev.ptr = reinterpret_cast<std::uintptr_t>(p);
  ev.stream_id = stream_id_of(stream);
  ev.stream_handle = handle_of(stream);
  trace::record(ev);
}

void strategy::set_observer(const oom_observer& o) {
  std::lock_guard<std::mutex> lock(observers_mutex_);
  if (o.fn == nullptr) {
    observer_.store(nullptr, std::memory_order_release);
    return;
  }
  observers_.push_back(std::make_unique<oom_observer>(o));
  observer_.store(observers_.back().get(), std::memory_order_release);
}

}  // namespace dao::detail
