// SIM streams and events (see sim_stream.hpp).
//
// A stream owns a worker thread that runs its queue in order. An event is a
// shared state of generations: every record takes the next generation and
// queues a marker that retires it, so the event is complete when the
// generation of its LAST record has retired (re-recording moves the event,
// as in CUDA). A wait queues a task that blocks the worker until the
// generation current at the time of the call has retired. Queued tasks hold
// the event's state, so an event may be destroyed with work still pending.
#include "resource/fault_injection.hpp"
#include "resource/sim_stream.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/callback_scope.hpp"
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

struct event_state {
  std::mutex mutex;
  std::condition_variable retired;
  // Generation of the last record (0: never recorded) and the generations
  // whose markers have not run yet: rarely more than one or two.
  std::uint64_t recorded = 0;
  std::vector<std::uint64_t> pending;
  // The stream of the last record (compared only): a host function of that
  // stream must not wait for the record, queued after itself.
  const void* recorded_on = nullptr;

  // The caller holds `mutex`.
  bool is_pending(std::uint64_t generation) const noexcept {
    return std::find(pending.begin(), pending.end(), generation) != pending.end();
  }

  // Blocks until `generation` has retired.
  void wait_for(std::uint64_t generation) {
    std::unique_lock<std::mutex> lock(mutex);
    retired.wait(lock, [&] { return !is_pending(generation); });
  }
};

class sim_event final : public event_impl {
 public:
  explicit sim_event(sim_cost_meter& meter)
      : state_(std::make_shared<event_state>()), meter_(meter) {}

  bool query() override {
    meter_.on_query();
    std::lock_guard<std::mutex> lock(state_->mutex);
    return !state_->is_pending(state_->recorded);
  }

  void synchronize() override {
    meter_.on_synchronize();
    std::uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      generation = state_->recorded;
      // The record is still queued on the stream whose host function this
      // is, behind that function: the wait would never end.
      if (state_->is_pending(generation) && state_->recorded_on != nullptr &&
          callback_scope::inside(callback_scope::kind::host_function, state_->recorded_on)) {
        throw invalid_state(
            "dao_event_synchronize: called from a host function (dao_launch_host_func) on the "
            "SIM stream the event was last recorded on, after that function; the event cannot "
            "complete before the function returns, so the wait would never end");
      }
    }
    state_->wait_for(generation);
  }

  void complete_now() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    // A generation that no marker carries counts as retired from the start.
    ++state_->recorded;
    state_->recorded_on = nullptr;
  }

  const std::shared_ptr<event_state>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<event_state> state_;
  sim_cost_meter& meter_;  // of its device, which outlives it
};

sim_event& as_sim_event(event_impl& event, const char* what) {
  auto* sim = dynamic_cast<sim_event*>(&event);
  if (sim == nullptr) {
    throw invalid_argument(strprintf("%s: the event is not an event of a SIM place", what));
  }
  return *sim;
}

struct task {
  enum class kind : unsigned char { copy, host_fn, marker, wait };
  kind what = kind::copy;
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t bytes = 0;
  dao_host_fn fn = nullptr;
  void* user_data = nullptr;
  std::shared_ptr<event_state> event;  // marker and wait
  std::uint64_t generation = 0;
};

class sim_stream final : public stream_impl {
 public:
  sim_stream(dao_place place, sim_cost_meter& meter) : place_(place), meter_(meter) {
    try {
      worker_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      throw backend_error(strprintf("%s: could not start a stream's worker thread: %s",
                                    place_to_string(place_).c_str(), e.what()));
    }
  }

  // Runs everything still queued, then stops the worker.
  ~sim_stream() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_.notify_one();
    worker_.join();
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    faults::maybe_fail(faults::copy, "sim stream: copy");
    task t;
    t.what = task::kind::copy;
    t.dst = dst;
    t.src = src;
    t.bytes = bytes;
    push(std::move(t));
    meter_.on_copy(dst, src, bytes);
  }

  // Idle: the copy runs here, under the stream's lock so that nothing queued
  // meanwhile runs before it ends. Otherwise it waits its turn.
  void copy_now(void* dst, const void* src, std::size_t bytes) override {
    refuse_on_worker("copy_now");
    faults::maybe_fail(faults::copy, "sim stream: copy");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (completed_ == submitted_) {
        if (bytes != 0) std::memcpy(dst, src, bytes);
        meter_.on_copy(dst, src, bytes);
        return;
      }
    }
    copy(dst, src, bytes);
    synchronize();
  }

  void launch_host_func(dao_host_fn fn, void* user_data) override {
    task t;
    t.what = task::kind::host_fn;
    t.fn = fn;
    t.user_data = user_data;
    push(std::move(t));
    meter_.on_host_func();
  }

  void record(event_impl& event) override {
    std::shared_ptr<event_state> state = as_sim_event(event, "record").state();
    faults::maybe_fail(faults::record, "sim stream: record");
    task t;
    t.what = task::kind::marker;
    t.event = state;
    {
      // Taking the next generation and queueing its marker under the
      // stream's lock makes them one step: a wait that sees the generation
      // also finds its marker queued (ahead of the wait, on this stream).
      std::lock_guard<std::mutex> lock(mutex_);
      std::lock_guard<std::mutex> event_lock(state->mutex);
      t.generation = state->recorded + 1;
      state->pending.push_back(t.generation);
      try {
        queue_.push_back(std::move(t));
      } catch (...) {
        state->pending.pop_back();
        throw;
      }
      state->recorded = state->pending.back();
      state->recorded_on = static_cast<const stream_impl*>(this);
      ++submitted_;
    }
    work_.notify_one();
    meter_.on_event_record();
  }

  void wait(event_impl& event) override {
    std::shared_ptr<event_state> state = as_sim_event(event, "wait").state();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task t;
      t.what = task::kind::wait;
      {
        std::lock_guard<std::mutex> event_lock(state->mutex);
        // Already complete: later work has nothing to wait for.
        if (!state->is_pending(state->recorded)) return;
        t.generation = state->recorded;
      }
      t.event = std::move(state);
      queue_.push_back(std::move(t));
      ++submitted_;
    }
    work_.notify_one();
  }

  // Waits for the work queued before the call (not for work that other
  // threads keep adding), as cuStreamSynchronize does.
  void synchronize() override {
    refuse_on_worker("synchronize");
    meter_.on_synchronize();
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t target = submitted_;
    ++sync_waiters_;
    idle_.wait(lock, [&] { return completed_ >= target; });
    --sync_waiters_;
  }

  bool query() override {
    meter_.on_query();
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ == submitted_;
  }

 private:
  void push(task&& t) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(t));
      ++submitted_;
    }
    work_.notify_one();
  }

  // A host function of this stream that waited for its own stream would wait
  // for itself forever: refuse instead of hanging (or, in the destructor,
  // aborting on a self-join).
  void refuse_on_worker(const char* what) const {
    if (std::this_thread::get_id() == worker_.get_id()) {
      throw invalid_state(strprintf(
          "%s: called from a host function running on this %s stream, which would wait for "
          "itself forever",
          what, place_to_string(place_).c_str()));
    }
  }

  void run() noexcept {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      work_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, and everything has run
      task t = std::move(queue_.front());
      queue_.pop_front();
      if (t.what == task::kind::marker) {
        // Counted before it retires: whoever sees the event complete also
        // sees the work before it done (and the stream idle if it was last).
        ++completed_;
        retire(t);
      } else {
        lock.unlock();
        execute(t, this);
        lock.lock();
        ++completed_;
      }
      t.event.reset();
      if (sync_waiters_ != 0) idle_.notify_all();
    }
  }

  // Lock order: the stream's, then the event's.
  static void retire(task& t) noexcept {
    {
      std::lock_guard<std::mutex> lock(t.event->mutex);
      auto& pending = t.event->pending;
      auto it = std::find(pending.begin(), pending.end(), t.generation);
      if (it != pending.end()) pending.erase(it);
    }
    t.event->retired.notify_all();
  }

  static void execute(task& t, const sim_stream* self) noexcept {
    // Only a user's host function can throw (a C++ callback behind a C
    // pointer); nobody on this thread could handle it, so it is dropped and
    // the stream goes on.
    try {
      switch (t.what) {
        case task::kind::copy: std::memcpy(t.dst, t.src, t.bytes); break;
        case task::kind::host_fn: {
          const callback_scope scope(callback_scope::kind::host_function,
                                     static_cast<const stream_impl*>(self));
          t.fn(t.user_data);
          break;
        }
        case task::kind::marker: retire(t); break;
        case task::kind::wait: t.event->wait_for(t.generation); break;
      }
    } catch (...) {
    }
  }

  dao_place place_;
  sim_cost_meter& meter_;  // of its device, which outlives it
  std::mutex mutex_;
  std::condition_variable work_;  // the worker waits for tasks or stopping_
  std::condition_variable idle_;  // synchronize() waits for completed_
  std::deque<task> queue_;
  std::uint64_t submitted_ = 0;  // tasks ever queued
  std::uint64_t completed_ = 0;  // tasks ever run
  int sync_waiters_ = 0;
  bool stopping_ = false;
  std::thread worker_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<stream_impl> make_sim_stream(dao_place place, sim_cost_meter& meter) {
  return std::make_unique<sim_stream>(place, meter);
}

std::unique_ptr<event_impl> make_sim_event(sim_cost_meter& meter) {
  return std::make_unique<sim_event>(meter);
}

}  // namespace dao::detail
