// CUDA streams and events through the driver API (see cuda_stream.hpp).
#include "resource/fault_injection.hpp"
#include "resource/cuda_stream.hpp"

#include <cstdint>
#include <memory>
#include <utility>

#include "core/callback_scope.hpp"
#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// Pushes a context for a scope; throws when the driver refuses it.
class pushed_context {
 public:
  pushed_context(const cuda_driver& driver, CUcontext ctx, const std::string& name)
      : scope_(driver, ctx) {
    if (scope_.status() != CUDA_SUCCESS) {
      throw backend_error(strprintf("%s: cuCtxPushCurrent failed: %s", name.c_str(),
                                    driver.error_text(scope_.status()).c_str()));
    }
  }

 private:
  cuda_context_scope scope_;
};

void check(const cuda_driver& driver, CUresult r, const std::string& name, const char* call) {
  if (r != CUDA_SUCCESS) {
    throw backend_error(
        strprintf("%s: %s failed: %s", name.c_str(), call, driver.error_text(r).c_str()));
  }
}

// Throws invalid_state when called from a host function on a CUDA stream
// (defined below, with cuda_stream).
void refuse_wait_in_host_function(const std::string& name, const char* call);

CUdeviceptr device_pointer(const void* p) noexcept {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

class cuda_event final : public event_impl {
 public:
  cuda_event(cuda_driver& driver, CUcontext ctx, std::string name)
      : driver_(driver), ctx_(ctx), name_(std::move(name)) {
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().event_create(&event_, CU_EVENT_DISABLE_TIMING), name_,
          "cuEventCreate");
  }

  // Pending work that completes the event is unaffected (the driver frees it
  // once that work is done).
  ~cuda_event() override {
    cuda_context_scope scope(driver_, ctx_);
    if (scope.status() == CUDA_SUCCESS) driver_.api().event_destroy(event_);
  }

  bool query() override {
    pushed_context scope(driver_, ctx_, name_);
    CUresult r = driver_.api().event_query(event_);
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(driver_, r, name_, "cuEventQuery");
    return true;
  }

  void synchronize() override {
    refuse_wait_in_host_function(name_, "dao_event_synchronize");
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().event_synchronize(event_), name_, "cuEventSynchronize");
  }

  // Records on the legacy default stream and waits, so the event is
  // complete when this returns.
  void complete_now() override {
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().event_record(event_, nullptr), name_, "cuEventRecord");
    check(driver_, driver_.api().event_synchronize(event_), name_, "cuEventSynchronize");
  }

  CUevent handle() const noexcept { return event_; }

 private:
  cuda_driver& driver_;
  CUcontext ctx_;
  std::string name_;
  CUevent event_ = nullptr;
};

class cuda_stream final : public stream_impl {
 public:
  // Creates a stream when `owned`, else adopts `native`.
  cuda_stream(cuda_driver& driver, CUcontext ctx, CUstream native, bool owned, std::string name)
      : driver_(driver), ctx_(ctx), name_(std::move(name)), stream_(native), owned_(owned) {
    if (owned_) {
      pushed_context scope(driver_, ctx_, name_);
      check(driver_, driver_.api().stream_create(&stream_, CU_STREAM_NON_BLOCKING), name_,
            "cuStreamCreate");
    }
  }

  // Like a SIM stream, returns once the queued work has run, so memory the
  // work used may be freed afterwards. Errors have no one to go to here.
  ~cuda_stream() override {
    if (!owned_) return;
    cuda_context_scope scope(driver_, ctx_);
    if (scope.status() != CUDA_SUCCESS) return;
    driver_.api().stream_synchronize(stream_);
    driver_.api().stream_destroy(stream_);
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    faults::maybe_fail(faults::copy, "cuda stream: copy");
    pushed_context scope(driver_, ctx_, name_);
    check(driver_,
          driver_.api().memcpy_async(device_pointer(dst), device_pointer(src), bytes, stream_),
          name_, "cuMemcpyAsync");
  }

  // The function runs through a trampoline that marks the driver's thread
  // as running a host function of this stream (core/callback_scope.hpp).
  void launch_host_func(dao_host_fn fn, void* user_data) override {
    auto call = std::make_unique<host_call>(host_call{fn, user_data, this});
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().launch_host_func(stream_, &run_host_call, call.get()), name_,
          "cuLaunchHostFunc");
    call.release();  // the trampoline frees it
  }

  void record(event_impl& event) override {
    CUevent e = as_cuda_event(event, "record");
    faults::maybe_fail(faults::record, "cuda stream: record");
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().event_record(e, stream_), name_, "cuEventRecord");
  }

  void wait(event_impl& event) override {
    CUevent e = as_cuda_event(event, "wait");
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().stream_wait_event(stream_, e, 0), name_, "cuStreamWaitEvent");
  }

  void synchronize() override {
    refuse_wait_in_host_function(name_, "dao_stream_synchronize");
    pushed_context scope(driver_, ctx_, name_);
    check(driver_, driver_.api().stream_synchronize(stream_), name_, "cuStreamSynchronize");
  }

  bool query() override {
    pushed_context scope(driver_, ctx_, name_);
    CUresult r = driver_.api().stream_query(stream_);
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(driver_, r, name_, "cuStreamQuery");
    return true;
  }

  void* native() noexcept override { return stream_; }

 private:
  struct host_call {
    dao_host_fn fn;
    void* user_data;
    const cuda_stream* stream;
  };

  static void run_host_call(void* p) {
    std::unique_ptr<host_call> call(static_cast<host_call*>(p));
    const callback_scope scope(callback_scope::kind::host_function,
                               static_cast<const stream_impl*>(call->stream));
    call->fn(call->user_data);
  }

  CUevent as_cuda_event(event_impl& event, const char* what) const {
    auto* e = dynamic_cast<cuda_event*>(&event);
    if (e == nullptr) {
      throw invalid_argument(
          strprintf("%s: %s: the event is not an event of a CUDA place", name_.c_str(), what));
    }
    return e->handle();
  }

  cuda_driver& driver_;
  CUcontext ctx_;
  std::string name_;
  CUstream stream_;
  bool owned_;
};

// Any wait on a CUDA stream or event from a host function of a CUDA stream:
// the driver allows no driver call there, and a wait for the function's own
// stream (or for work queued behind it) would never end.
void refuse_wait_in_host_function(const std::string& name, const char* call) {
  const callback_scope* s = callback_scope::find(callback_scope::kind::host_function);
  if (s == nullptr ||
      dynamic_cast<const cuda_stream*>(static_cast<const stream_impl*>(s->owner())) == nullptr)
    return;
  throw invalid_state(strprintf(
      "%s: %s: called from a host function (dao_launch_host_func) on a CUDA stream, where the "
      "driver allows no driver call and the wait may never end; wait from another thread",
      call, name.c_str()));
}

}  // namespace

std::unique_ptr<stream_impl> make_cuda_stream(cuda_driver& driver, CUcontext ctx,
                                              std::string name) {
  return std::make_unique<cuda_stream>(driver, ctx, nullptr, true, std::move(name));
}

std::unique_ptr<stream_impl> wrap_cuda_stream(cuda_driver& driver, CUcontext ctx, CUstream native,
                                              std::string name) {
  return std::make_unique<cuda_stream>(driver, ctx, native, false, std::move(name));
}

std::unique_ptr<event_impl> make_cuda_event(cuda_driver& driver, CUcontext ctx, std::string name) {
  return std::make_unique<cuda_event>(driver, ctx, std::move(name));
}

}  // namespace dao::detail
