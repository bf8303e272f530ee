// The default streams and events of a system resource: everything runs at
// once on the calling thread (the CPU place's synchronous stream). An event
// is complete as soon as it exists, since a record on such a stream marks a
// point whose work has already run.
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "resource/fault_injection.hpp"
#include "resource/stream.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

class sync_event final : public event_impl {
 public:
  bool query() override { return true; }
  void synchronize() override {}
  void complete_now() override {}  // always complete
};

class sync_stream final : public stream_impl {
 public:
  void copy(void* dst, const void* src, std::size_t bytes) override {
    faults::maybe_fail(faults::copy, "cpu stream: copy");
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
  void launch_host_func(dao_host_fn fn, void* user_data) override { fn(user_data); }
  // All earlier work has run, so the marked point is already reached.
  void record(event_impl& event) override {
    if (dynamic_cast<sync_event*>(&event) == nullptr) {
      throw invalid_argument("record: the event is not an event of a synchronous stream's place");
    }
  }
  // Any kind of event: waiting on the calling thread orders everything after.
  void wait(event_impl& event) override { event.synchronize(); }
  void synchronize() override {}
  bool query() override { return true; }
};

}  // namespace

std::unique_ptr<stream_impl> system_resource::create_stream() {
  return std::make_unique<sync_stream>();
}

std::unique_ptr<stream_impl> system_resource::wrap_stream(void*) {
  throw unsupported(
      strprintf("dao_stream_wrap: %s has no native streams to wrap (only CUDA places have them)",
                place_to_string(place()).c_str()));
}

std::uint64_t system_resource::native_stream_identity(void*) {
  throw unsupported(strprintf("%s has no native streams (only CUDA places have them)",
                              place_to_string(place()).c_str()));
}

void system_resource::synchronize_device() {}

std::unique_ptr<event_impl> system_resource::create_event() {
  return std::make_unique<sync_event>();
}

}  // namespace dao::detail
