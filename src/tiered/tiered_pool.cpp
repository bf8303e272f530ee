// Tiered pools: access table, kernel queue, executor (see tiered_pool.hpp).
#include "tiered/tiered_pool.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>
#include <unordered_set>

#include "core/config.hpp"
#include "core/error.hpp"
#include "strategy/place_defaults.hpp"
#include "resource/system_resource.hpp"
#include "strategy/strategy.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

using steady = std::chrono::steady_clock;

// Releases a held lock for a scope and takes it back at its end.
class unlocked {
 public:
  explicit unlocked(std::unique_lock<std::mutex>& lock) : lock_(lock) { lock_.unlock(); }
  ~unlocked() { lock_.lock(); }
  unlocked(const unlocked&) = delete;
  unlocked& operator=(const unlocked&) = delete;

 private:
  std::unique_lock<std::mutex>& lock_;
};

// "16GB/s", "25GiB/s", "500MB/s", "1e9B/s", "1000000" (bytes per second).
double parse_bandwidth(const std::string& text, const std::string& context) {
  std::string s(trim_spaces(text));
  auto bad = [&] {
    return invalid_argument(strprintf(
        "%s: link_bandwidth='%s' is not a bandwidth (expected a positive number with a unit "
        "per second, for example 16GB/s, 25GiB/s or 500MB/s)",
        context.c_str(), text.c_str()));
  };
  if (s.size() >= 2 && s.compare(s.size() - 2, 2, "/s") == 0) s.resize(s.size() - 2);
  const char* begin = s.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number <= 0) throw bad();
  std::string unit(trim_spaces(std::string_view(end)));
  struct row {
    const char* name;
    double factor;
  };
  static const row rows[] = {{"", 1},        {"B", 1},          {"KB", 1e3},
                             {"kB", 1e3},    {"MB", 1e6},       {"GB", 1e9},
                             {"TB", 1e12},   {"KiB", 1024.0},   {"MiB", 1048576.0},
                             {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const row& r : rows) {
    if (unit == r.name) return number * r.factor;
  }
  throw bad();
}

std::size_t parse_count(const std::string& text, const std::string& context, const char* key) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(begin, &end, 10);
  if (end == begin || *end != '\0' || errno == ERANGE || text[0] == '-' || value > 1000000) {
    throw invalid_argument(strprintf("%s: %s='%s' is not a count (expected 0 to 1000000)",
                                     context.c_str(), key, text.c_str()));
  }
  return static_cast<std::size_t>(value);
}

struct throttle_task {
  steady::time_point start;
  double seconds = 0;
};

void throttle_start(void* p) { static_cast<throttle_task*>(p)->start = steady::now(); }

void throttle_finish(void* p) {
  auto* task = static_cast<throttle_task*>(p);
  const auto until = task->start + std::chrono::duration_cast<steady::duration>(
                                       std::chrono::duration<double>(task->seconds));
  std::this_thread::sleep_until(until);
  delete task;
}

stream_object* make_stream(system_resource& resource, dao_place place) {
  auto s = std::make_unique<stream_object>();
  s->place = place;
  s->impl = resource.create_stream();
  return s.release();
}

void destroy_stream(stream_object*& s) noexcept {
  if (s == nullptr) return;
  try {
    s->impl->synchronize();
  } catch (...) {
  }
  delete s;
  s = nullptr;
}

}  // namespace

// --- creation and destruction ----------------------------------------------

tiered_pool::tiered_pool(dao_place device, dao_place host, std::size_t device_budget,
                         const char* config_text)
    : arena_(device_budget) {
  const int dk = raw_kind(device.kind);
  const int hk = raw_kind(host.kind);
  if (dk != DAO_PLACE_SIM && dk != DAO_PLACE_CUDA) {
    throw invalid_argument(strprintf(
        "dao_tiered_create: the device place must be CUDA or SIM, not %s", kind_name(dk)));
  }
  if (hk != DAO_PLACE_CPU && hk != DAO_PLACE_CUDA_PINNED) {
    throw invalid_argument(strprintf(
        "dao_tiered_create: the host place must be CPU or CUDA pinned, not %s", kind_name(hk)));
  }
  if (device_budget < kArenaGranule) {
    throw invalid_argument(strprintf(
        "dao_tiered_create: device_budget is %zu bytes; it must be at least %zu", device_budget,
        kArenaGranule));
  }
  const std::string context = "tiered config";
  config cfg = config::parse(config_text != nullptr ? config_text : "", context);
  if (auto p = cfg.take_string("policy")) scorer_.policy = parse_policy(*p, context);
  if (auto p = cfg.take_string("prefetch")) prefetch_ = parse_count(*p, context, "prefetch");
  if (auto h = cfg.take_size("host_budget")) host_budget_ = *h;
  if (auto b = cfg.take_string("link_bandwidth")) bandwidth_ = parse_bandwidth(*b, context);
  cfg.reject_unknown({"policy", "prefetch", "host_budget", "link_bandwidth"});
  if (bandwidth_ > 0 && dk != DAO_PLACE_SIM) {
    throw invalid_argument(
        "tiered config: link_bandwidth applies to SIM devices only (a real link has its own)");
  }

  device_resource_ = &resource_for(device);
  resource_for(host);
  device_ = device_resource_->place();
  host_place_ = host;
  budget_ = device_budget;

  strategy& dev_alloc = place_strategy(device_);
  device_base_ = dev_alloc.allocate(device_budget, nullptr);
  try {
    compute_ = make_stream(*device_resource_, device_);
    h2d_ = make_stream(*device_resource_, device_);
    d2h_ = make_stream(*device_resource_, device_);
    h2d_ready_ = device_resource_->create_event();
    d2h_ready_ = device_resource_->create_event();
    d2h_order_ = device_resource_->create_event();
    try {
      executor_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      throw backend_error(
          strprintf("dao_tiered_create: could not start the executor thread: %s", e.what()));
    }
  } catch (...) {
    destroy_stream(compute_);
    destroy_stream(h2d_);
    destroy_stream(d2h_);
    dev_alloc.deallocate(device_base_);
    throw;
  }
}

tiered_pool::~tiered_pool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    stopping_requested_.store(true);
  }
  work_cv_.notify_all();
  if (executor_.joinable()) executor_.join();
  destroy_stream(compute_);
  destroy_stream(h2d_);
  destroy_stream(d2h_);
  for (auto& t : tensors_) {
    if (t->host != nullptr) host_free(t->host, t->bytes);
    t->host = nullptr;
    t->magic = 0;
  }
  tensors_.clear();
  try {
    place_strategy(device_).deallocate(device_base_);
  } catch (...) {
  }
}

// --- calls of any thread ---------------------------------------------------

void tiered_pool::check_tensor(const dao_tensor* t, const char* function,
                               const char* name) const {
  if (t == nullptr) {
    throw invalid_argument(strprintf("%s: %s must not be NULL", function, name));
  }
  if (t->pool != this) {
    throw invalid_argument(strprintf(
        "%s: %s (%p) is a tensor of another tiered pool", function, name,
        static_cast<const void*>(t)));
  }
  if (t->released) {
    throw invalid_argument(strprintf("%s: %s (tensor #%llu) was already released", function,
                                     name, static_cast<unsigned long long>(t->id)));
  }
}

void tiered_pool::require_not_failed(const char* function) const {
  if (failed_) {
    throw invalid_state(strprintf("%s: the tiered pool has failed: %s", function,
                                  fail_message_.c_str()));
  }
}

void tiered_pool::set_score_callback(dao_score_fn score, void* user_data) {
  if (score == nullptr) {
    throw invalid_argument("dao_tiered_set_score_callback: score must not be NULL");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (scorer_.policy != evict_policy::callback) {
    throw invalid_state(strprintf(
        "dao_tiered_set_score_callback: the pool's policy is '%s'; create it with "
        "policy=callback to use a scoring function",
        policy_name(scorer_.policy)));
  }
  if (stats_.kernels_submitted != 0) {
    throw invalid_state(
        "dao_tiered_set_score_callback: kernels were already submitted; set the scoring "
        "function before the first submit");
  }
  scorer_.callback = score;
  scorer_.user_data = user_data;
}

dao_tensor* tiered_pool::create_tensor(std::size_t bytes) {
  if (bytes == 0) throw invalid_argument("dao_tensor_create: bytes must be > 0");
  if (bytes > arena_.capacity() || arena_round(bytes) > arena_.capacity()) {
    throw out_of_memory(strprintf(
        "dao_tensor_create: a tensor of %zu bytes does not fit in the device budget of %zu "
        "bytes",
        bytes, arena_.capacity()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  require_not_failed("dao_tensor_create");
  auto t = std::make_unique<dao_tensor>();
  t->pool = this;
  t->bytes = bytes;
  t->id = ++next_id_;
  tensors_.push_back(std::move(t));
  ++stats_.tensors_live;
  return tensors_.back().get();
}

void tiered_pool::append_access(dao_tensor& t, std::uint64_t time, bool read, bool write) {
  if (!t.accesses.empty() && t.accesses.back().t == time) {
    t.accesses.back().read |= read;
    t.accesses.back().write |= write;
    return;
  }
  t.accesses.push_back(tensor_access{time, read, write});
}

void tiered_pool::push(op* o) {
  queue_.push_back(o);
  queued();
}

// After an op went into the queue (mu_ held): counts it and wakes the
// executor if it sleeps. A spinning executor sees pushed_ change and needs
// no system call.
void tiered_pool::queued() {
  ++ops_submitted_;
  pushed_.store(ops_submitted_, std::memory_order_release);
  if (executor_idle_) work_cv_.notify_one();
}

// Waits (mu_ held by `lock`) until `done` holds, which happens once the
// executor has completed `target` ops. Only then does the executor wake
// anyone: waking a waiter after every op would cost a context switch each.
template <class Done>
void tiered_pool::wait_for(std::unique_lock<std::mutex>& lock, std::uint64_t target, Done done) {
  while (!done()) {
    wake_at_ = std::min(wake_at_, target);
    done_cv_.wait(lock);
  }
}

void tiered_pool::write(dao_tensor& t, const void* src, std::size_t bytes) {
  if (src == nullptr) throw invalid_argument("dao_tensor_write: src must not be NULL");
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_tensor(&t, "dao_tensor_write", "tensor");
    require_not_failed("dao_tensor_write");
    if (bytes != t.bytes) {
      throw invalid_argument(strprintf("dao_tensor_write: bytes is %zu but the tensor has %zu",
                                       bytes, t.bytes));
    }
    if (host_budget_ != 0 && stats_.host_bytes + bytes > host_budget_) {
      throw out_of_memory(strprintf(
          "dao_tensor_write: the host tier holds %llu bytes; %zu more would exceed its "
          "host_budget of %zu bytes",
          static_cast<unsigned long long>(stats_.host_bytes), bytes, host_budget_));
    }
    stats_.host_bytes += bytes;  // reserved for the staging copy
    stats_.peak_host_bytes = std::max(stats_.peak_host_bytes, stats_.host_bytes);
  }
  void* staging = nullptr;
  try {
    staging = place_strategy(host_place_).allocate(bytes, nullptr);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.host_bytes -= bytes;
    throw;
  }
  std::memcpy(staging, src, bytes);
  std::unique_ptr<op> o;
  std::lock_guard<std::mutex> lock(mu_);
  try {
    check_tensor(&t, "dao_tensor_write", "tensor");
    require_not_failed("dao_tensor_write");
    o = std::make_unique<op>();
    o->what = op::kind::write;
    o->tensor = &t;
    o->staging = staging;
    o->t = ++clock_;
    append_access(t, o->t, false, true);
    t.written = true;
    queue_.push_back(o.get());  // may throw: nothing queued then
  } catch (...) {
    host_free(staging, bytes);
    throw;
  }
  o.release();
  queued();
}

void tiered_pool::read(dao_tensor& t, void* dst, std::size_t bytes) {
  if (dst == nullptr) throw invalid_argument("dao_tensor_read: dst must not be NULL");
  std::unique_lock<std::mutex> lock(mu_);
  check_tensor(&t, "dao_tensor_read", "tensor");
  if (bytes != t.bytes) {
    throw invalid_argument(
        strprintf("dao_tensor_read: bytes is %zu but the tensor has %zu", bytes, t.bytes));
  }
  // A failed pool still reads: that is how its data is saved (the kernels
  // after the failure did not run, so a read gives what the last one left).
  if (!t.written) {
    throw invalid_state(strprintf(
        "dao_tensor_read: tensor #%llu was never written (no dao_tensor_write and no kernel "
        "output)",
        static_cast<unsigned long long>(t.id)));
  }
  op o;
  o.what = op::kind::read;
  o.tensor = &t;
  o.dst = dst;
  o.caller_owned = true;
  o.t = ++clock_;
  append_access(t, o.t, true, false);
  queue_.push_back(&o);
  queued();
  wait_for(lock, ops_submitted_, [&] { return o.done; });
  if (o.status != DAO_OK) throw error(o.status, o.message);
}

dao_tensor_state tiered_pool::state(const dao_tensor& t) {
  std::lock_guard<std::mutex> lock(mu_);
  check_tensor(&t, "dao_tensor_get_state", "tensor");
  if (!t.resident && !t.host_valid) return DAO_TENSOR_UNINITIALIZED;
  if (t.transit != nullptr && !t.transit->query()) return DAO_TENSOR_IN_TRANSIT;
  return t.resident ? DAO_TENSOR_ON_DEVICE : DAO_TENSOR_ON_HOST;
}

void tiered_pool::release(dao_tensor& t) {
  std::lock_guard<std::mutex> lock(mu_);
  check_tensor(&t, "dao_tensor_release", "tensor");
  auto o = std::make_unique<op>();
  o->what = op::kind::release;
  o->tensor = &t;
  if (!failed_) {
    queue_.push_back(o.get());
    o.release();
    queued();
  }
  t.released = true;  // a failed pool frees it at destroy
}

void tiered_pool::submit(dao_kernel_fn fn, void* user_data, dao_tensor* const* inputs,
                         std::size_t input_count, dao_tensor* const* outputs,
                         std::size_t output_count) {
  static const char* const f = "dao_kernel_submit";
  if (fn == nullptr) throw invalid_argument("dao_kernel_submit: fn must not be NULL");
  if (inputs == nullptr && input_count != 0) {
    throw invalid_argument("dao_kernel_submit: inputs is NULL but input_count is not 0");
  }
  if (outputs == nullptr && output_count != 0) {
    throw invalid_argument("dao_kernel_submit: outputs is NULL but output_count is not 0");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<op> o = take_op();
  o->what = op::kind::kernel;
  o->fn = fn;
  o->user_data = user_data;
  o->inputs.assign(inputs, inputs + input_count);
  o->outputs.assign(outputs, outputs + output_count);
  require_not_failed(f);
  for (dao_tensor* t : o->inputs) check_tensor(t, f, "an input");
  for (dao_tensor* t : o->outputs) check_tensor(t, f, "an output");
  if (scorer_.policy == evict_policy::callback && scorer_.callback == nullptr) {
    throw invalid_state(
        "dao_kernel_submit: the pool's policy is 'callback' but no scoring function was set "
        "(dao_tiered_set_score_callback)");
  }
  std::size_t total = 0;
  for (auto* list : {&o->inputs, &o->outputs}) {
    for (dao_tensor* t : *list) {
      if (std::find(o->distinct.begin(), o->distinct.end(), t) != o->distinct.end()) continue;
      o->distinct.push_back(t);
      total += arena_round(t->bytes);
    }
  }
  if (total > arena_.capacity()) {
    throw out_of_memory(strprintf(
        "dao_kernel_submit: the kernel's %zu tensors need %zu bytes at once but the device "
        "budget is %zu bytes",
        o->distinct.size(), total, arena_.capacity()));
  }
  queue_.push_back(o.get());  // may throw: nothing changed then
  o->t = ++clock_;
  o->seq = ++stats_.kernels_submitted;
  for (dao_tensor* t : o->inputs) append_access(*t, o->t, true, false);
  for (dao_tensor* t : o->outputs) {
    append_access(*t, o->t, false, true);
    t->written = true;
  }
  o.release();
  queued();
}

void tiered_pool::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  const std::uint64_t target = ops_submitted_;
  wait_for(lock, target, [&] { return ops_completed_ >= target; });
  if (failed_) {
    throw invalid_state(strprintf("dao_tiered_synchronize: %s", fail_message_.c_str()));
  }
}

void tiered_pool::read_stats(dao_tiered_stats& out) {
  std::lock_guard<std::mutex> lock(mu_);
  out = stats_;
}

// --- the executor ----------------------------------------------------------

void tiered_pool::run() noexcept {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (queue_.empty() && !stopping_) await_work(lock);
    if (queue_.empty()) break;
    op* o = queue_.front();
    queue_.pop_front();
    if (failed_ && o->what != op::kind::read) {
      discard(*o);
    } else {
      try {
        process(*o, lock);
      } catch (const std::exception& e) {
        fail(strprintf("operation at logical time %llu failed: %s",
                       static_cast<unsigned long long>(o->t), e.what()));
        if (o->what == op::kind::read) {
          o->status = DAO_ERR_INVALID_STATE;
          o->message = "dao_tensor_read: the tiered pool has failed: " + fail_message_;
        }
        if (o->what == op::kind::write && o->staging != nullptr) {
          host_free(o->staging, o->tensor->bytes);
          o->staging = nullptr;
        }
      }
    }
    finish(o);
    ++ops_completed_;
    if (ops_completed_ >= wake_at_) {
      wake_at_ = UINT64_MAX;
      done_cv_.notify_all();
    }
  }
}

// The queue is empty (mu_ held by `lock`). A submitting thread usually sends
// the next op within microseconds: spin for up to kSpinWait first, so that
// neither side pays a futex wake and a context switch per op, then sleep.
void tiered_pool::await_work(std::unique_lock<std::mutex>& lock) {
  constexpr auto kSpinWait = std::chrono::microseconds(50);
  const std::uint64_t seen = ops_submitted_;
  lock.unlock();
  const auto until = steady::now() + kSpinWait;
  for (unsigned i = 1; pushed_.load(std::memory_order_acquire) == seen; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && (steady::now() >= until || stopping_requested_.load())) break;
  }
  lock.lock();
  while (queue_.empty() && !stopping_) {
    executor_idle_ = true;
    work_cv_.wait(lock);
    executor_idle_ = false;
  }
}

void tiered_pool::finish(op* o) {
  if (o->caller_owned) {
    o->done = true;
  } else {
    recycle_op(o);
  }
}

// Ops are reused (mu_ held): a kernel op's vectors keep their capacity, so a
// submit allocates nothing once the pool has warmed up.
std::unique_ptr<tiered_pool::op> tiered_pool::take_op() {
  if (spare_ops_.empty()) return std::make_unique<op>();
  std::unique_ptr<op> o = std::move(spare_ops_.back());
  spare_ops_.pop_back();
  return o;
}

void tiered_pool::recycle_op(op* o) noexcept {
  constexpr std::size_t kSpareOps = 256;
  o->what = op::kind::kernel;
  o->t = o->seq = 0;
  o->fn = nullptr;
  o->user_data = nullptr;
  o->inputs.clear();
  o->outputs.clear();
  o->distinct.clear();
  o->tensor = nullptr;
  o->staging = nullptr;
  o->dst = nullptr;
  o->status = DAO_OK;
  o->message.clear();
  if (spare_ops_.size() < kSpareOps) {
    try {
      spare_ops_.emplace_back(o);
      return;
    } catch (...) {
    }
  }
  delete o;
}

void tiered_pool::discard(op& o) {
  switch (o.what) {
    case op::kind::read:
      o.status = DAO_ERR_INVALID_STATE;
      o.message = "dao_tensor_read: the tiered pool has failed: " + fail_message_;
      break;
    case op::kind::write:
      if (o.staging != nullptr) host_free(o.staging, o.tensor->bytes);
      o.staging = nullptr;
      break;
    default:
      break;
  }
}

void tiered_pool::fail(const std::string& message) {
  if (failed_) return;
  failed_ = true;
  fail_message_ = message;
}

void tiered_pool::process(op& o, std::unique_lock<std::mutex>& lock) {
  switch (o.what) {
    case op::kind::kernel:
      run_kernel(o, lock);
      break;
    case op::kind::write:
      run_write(o, lock);
      break;
    case op::kind::read:
      run_read(o, lock);
      break;
    case op::kind::release:
      free_if_dead(*o.tensor);
      break;
  }
}

void tiered_pool::advance(dao_tensor& t, std::uint64_t now) {
  while (t.cursor < t.accesses.size() && t.accesses[t.cursor].t <= now) {
    t.last_use = t.accesses[t.cursor].t;
    ++t.cursor;
  }
  // Drop the executed part of the table now and then.
  if (t.cursor >= 256 && t.cursor * 2 >= t.accesses.size()) {
    t.accesses.erase(t.accesses.begin(), t.accesses.begin() + static_cast<long>(t.cursor));
    t.cursor = 0;
  }
}

void tiered_pool::free_if_dead(dao_tensor& t) {
  if (t.released && !t.freed && t.cursor >= t.accesses.size() && !t.pinned) free_tensor(t);
}

void tiered_pool::free_tensor(dao_tensor& t) {
  if (t.resident) {
    arena_.release(t.offset);
    t.resident = false;
    set_device_bytes(-static_cast<std::int64_t>(t.bytes));
  }
  if (t.host != nullptr) {
    // A copy may still be reading or writing it.
    if (!d2h_->impl->query()) d2h_->impl->synchronize();
    if (!h2d_->impl->query()) h2d_->impl->synchronize();
    host_free(t.host, t.bytes);
    t.host = nullptr;
  }
  t.host_valid = false;
  t.prefetched = false;
  t.freed = true;
  t.accesses.clear();
  t.accesses.shrink_to_fit();
  t.cursor = 0;
  --stats_.tensors_live;
}

void tiered_pool::set_device_bytes(std::int64_t delta) noexcept {
  stats_.device_bytes = static_cast<std::uint64_t>(static_cast<std::int64_t>(stats_.device_bytes) + delta);
  stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, stats_.device_bytes);
}

void* tiered_pool::host_allocate(std::size_t bytes) {
  void* p = place_strategy(host_place_).allocate(bytes, nullptr);
  stats_.host_bytes += bytes;
  stats_.peak_host_bytes = std::max(stats_.peak_host_bytes, stats_.host_bytes);
  return p;
}

void tiered_pool::host_free(void* p, std::size_t bytes) noexcept {
  try {
    place_strategy(host_place_).deallocate(p);
  } catch (...) {
  }
  stats_.host_bytes -= bytes;
}

void tiered_pool::throttled_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes) {
  if (bandwidth_ <= 0) {
    s.copy(dst, src, bytes);
    return;
  }
  auto task = std::make_unique<throttle_task>();
  task->seconds = static_cast<double>(bytes) / bandwidth_;
  s.launch_host_func(throttle_start, task.get());
  s.copy(dst, src, bytes);
  s.launch_host_func(throttle_finish, task.get());
  task.release();  // throttle_finish deletes it
}

bool tiered_pool::host_room_for(std::size_t bytes, bool may_fail, const dao_tensor& t) {
  if (host_budget_ == 0 || stats_.host_bytes + bytes <= host_budget_) return true;
  if (may_fail) {
    fail(strprintf(
        "the host tier is full: making room for tensor #%llu (%zu bytes) needs %zu bytes more "
        "in the host tier, which holds %llu of its host_budget of %zu bytes; the kernel was "
        "not run and no data was lost",
        static_cast<unsigned long long>(t.id), t.bytes, bytes,
        static_cast<unsigned long long>(stats_.host_bytes), host_budget_));
  }
  return false;
}

void tiered_pool::evict(dao_tensor& t) {
  if (needs_copy(t)) {
    if (t.host == nullptr) t.host = host_allocate(t.bytes);
    throttled_copy(*d2h_->impl, t.host, device_ptr(t), t.bytes);
    if (t.transit == nullptr) t.transit = device_resource_->create_event();
    d2h_->impl->record(*t.transit);
    d2h_unwaited_ = true;
    d2h_unordered_ = true;
    t.host_valid = true;
    ++stats_.evictions;
    stats_.bytes_evicted += t.bytes;
  }
  t.resident = false;
  t.prefetched = false;
  set_device_bytes(-static_cast<std::int64_t>(t.bytes));
  if (!t.host_valid && t.host != nullptr) {
    // Never needed again and released: nothing to keep.
    host_free(t.host, t.bytes);
    t.host = nullptr;
  }
}

void tiered_pool::fetch(dao_tensor& t) {
  if (d2h_unordered_) {
    // The fetch may land where an eviction is still reading.
    d2h_->impl->record(*d2h_order_);
    h2d_->impl->wait(*d2h_order_);
    d2h_unordered_ = false;
  }
  throttled_copy(*h2d_->impl, device_ptr(t), t.host, t.bytes);
  if (t.transit == nullptr) t.transit = device_resource_->create_event();
  h2d_->impl->record(*t.transit);
  h2d_unwaited_ = true;
  ++stats_.fetches;
  stats_.bytes_fetched += t.bytes;
}

arena_run tiered_pool::best_run(std::size_t need, std::uint64_t now,
                                const std::function<bool(const dao_tensor*)>& evictable) {
  std::vector<dao_tensor_access_info> infos;
  const auto& blocks = arena_.blocks();
  return arena_.find_run(need, evictable, [&](arena_run& r) {
    infos.clear();
    for (std::size_t i = r.first; i <= r.last; ++i) {
      const dao_tensor* owner = blocks[i].owner;
      if (owner == nullptr) continue;
      dao_tensor_access_info info{};
      info.struct_size = sizeof info;
      info.tensor = owner;
      info.bytes = owner->bytes;
      info.now = now;
      info.last_use = owner->last_use;
      info.next_use = next_use(*owner);
      info.queued_uses = owner->accesses.size() - owner->cursor;
      info.dirty = owner->host_valid ? 0 : 1;
      infos.push_back(info);
      r.evicted_bytes += owner->bytes;
      if (needs_copy(*owner)) r.copy_bytes += owner->bytes;
    }
    r.score = scorer_.run_score(infos);
  });
}

bool tiered_pool::make_resident(dao_tensor& t, std::uint64_t now,
                                const std::function<bool(const dao_tensor*)>& evictable,
                                bool may_fail) {
  const std::size_t need = arena_round(t.bytes);
  long index = arena_.find_free(need);
  if (index < 0) {
    const arena_run run = best_run(need, now, evictable);
    const auto& blocks = arena_.blocks();
    if (!run.found) return false;
    // Host room for the copies first: all or nothing.
    std::size_t host_need = 0;
    for (std::size_t i = run.first; i <= run.last; ++i) {
      const dao_tensor* owner = blocks[i].owner;
      if (owner != nullptr && needs_copy(*owner) && owner->host == nullptr) {
        host_need += owner->bytes;
      }
    }
    if (!host_room_for(host_need, may_fail, t)) return false;
    std::vector<dao_tensor*> victims;
    for (std::size_t i = run.first; i <= run.last; ++i) {
      if (blocks[i].owner != nullptr) victims.push_back(blocks[i].owner);
    }
    try {
      for (dao_tensor* v : victims) evict(*v);
    } catch (const error& e) {
      // Host allocation failed: what was evicted is on the host, the rest
      // stays on the device.
      for (dao_tensor* v : victims) {
        if (!v->resident) arena_.release(v->offset);
      }
      if (may_fail) {
        fail(strprintf("the host tier could not take an evicted tensor: %s; the kernel was not "
                       "run and no data was lost",
                       e.what()));
      }
      return false;
    }
    index = static_cast<long>(arena_.vacate(run.first, run.last));
  }
  t.offset = arena_.take(static_cast<std::size_t>(index), need, &t);
  if (t.host_valid) {
    // Resident only once the copy is under way: a prefetch whose copy fails
    // is skipped, and must not leave a tensor "on the device" without data.
    try {
      fetch(t);
    } catch (...) {
      arena_.release(t.offset);
      throw;
    }
  }
  t.resident = true;
  set_device_bytes(static_cast<std::int64_t>(t.bytes));
  return true;
}

void tiered_pool::slide(std::size_t from, std::size_t to, std::size_t bytes) {
  char* base = static_cast<char*>(device_base_);
  const std::size_t gap = from - to;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(gap, bytes - done);
    compute_->impl->copy(base + to + done, base + from + done, n);
    done += n;
  }
}

bool tiered_pool::compaction_victims(const op& o, std::uint64_t now,
                                     std::vector<dao_tensor*>& victims, std::size_t& host_need) {
  victims.clear();
  host_need = 0;
  std::size_t need = 0;
  for (const dao_tensor* t : o.distinct) {
    if (!t->resident) need += arena_round(t->bytes);
  }
  std::size_t room = arena_.free_bytes();
  if (room < need) {
    // The policy's choice, tensor by tensor: placement no longer matters.
    struct candidate {
      dao_tensor* t;
      double score;
      std::size_t copy_bytes;
    };
    std::vector<candidate> candidates;
    std::vector<dao_tensor_access_info> info(1);
    for (const arena_block& b : arena_.blocks()) {
      dao_tensor* owner = b.owner;
      if (owner == nullptr || owner->pinned) continue;
      dao_tensor_access_info& i = info[0];
      i = dao_tensor_access_info{};
      i.struct_size = sizeof i;
      i.tensor = owner;
      i.bytes = owner->bytes;
      i.now = now;
      i.last_use = owner->last_use;
      i.next_use = next_use(*owner);
      i.queued_uses = owner->accesses.size() - owner->cursor;
      i.dirty = owner->host_valid ? 0 : 1;
      candidates.push_back(
          candidate{owner, scorer_.run_score(info), needs_copy(*owner) ? owner->bytes : 0});
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const candidate& x, const candidate& y) {
                       if (x.score != y.score) return x.score > y.score;
                       return x.copy_bytes < y.copy_bytes;
                     });
    for (const candidate& c : candidates) {
      if (room >= need) break;
      victims.push_back(c.t);
      room += arena_round(c.t->bytes);
      if (c.copy_bytes > 0 && c.t->host == nullptr) host_need += c.t->bytes;
    }
    if (room < need) return false;
  }
  return true;
}

bool tiered_pool::compact_and_place(op& o, std::uint64_t now,
                                    std::unique_lock<std::mutex>& lock) {
  std::vector<dao_tensor*> victims;
  std::size_t host_need = 0;
  if (!compaction_victims(o, now, victims, host_need)) return false;
  if (!victims.empty()) {
    if (!host_room_for(host_need, true, *o.distinct.front())) return false;
    for (dao_tensor* v : victims) {
      try {
        evict(*v);
      } catch (const error& e) {
        // What was evicted is on the host; the rest stays on the device.
        for (dao_tensor* w : victims) {
          if (!w->resident) arena_.release(w->offset);
        }
        fail(strprintf("the host tier could not take an evicted tensor: %s; the kernel was not "
                       "run and no data was lost",
                       e.what()));
        return false;
      }
    }
    for (dao_tensor* v : victims) arena_.release(v->offset);
  }
  // Nothing may still read or write the arena while tensors move: the
  // evictions above (and earlier ones) read from where others will land,
  // fetches and prefetches write into tensors that move.
  {
    unlocked u(lock);
    d2h_->impl->synchronize();
    h2d_->impl->synchronize();
  }
  d2h_unordered_ = false;
  const std::vector<arena_move> moves = arena_.compact();
  for (const arena_move& m : moves) {
    slide(m.from, m.to, m.size);
    m.owner->offset = m.to;
  }
  if (!moves.empty()) {
    // Fetches below land where the moved tensors were; later evictions read
    // where they are now.
    unlocked u(lock);
    compute_->impl->synchronize();
  }
  for (dao_tensor* t : o.distinct) {
    if (t->resident) continue;
    const long index = arena_.find_free(t->bytes);
    if (index < 0) {
      throw error(DAO_ERR_INTERNAL, "tiered pool: a kernel does not fit after compaction");
    }
    t->offset = arena_.take(static_cast<std::size_t>(index), arena_round(t->bytes), t);
    t->resident = true;
    set_device_bytes(static_cast<std::int64_t>(t->bytes));
    if (t->host_valid) fetch(*t);
  }
  return true;
}

void tiered_pool::prefetch_after(std::uint64_t /*now*/) {
  if (prefetch_ == 0) return;
  std::size_t seen = 0;
  for (op* q : queue_) {
    if (q->what != op::kind::kernel) continue;
    if (++seen > prefetch_) break;
    const std::uint64_t target = q->t;
    for (dao_tensor* t : q->inputs) {
      if (t->resident || !t->host_valid || t->freed || t->host == nullptr) continue;
      auto evictable = [&](const dao_tensor* x) {
        return !x->pinned && next_use(*x) > target;
      };
      bool placed = false;
      try {
        placed = make_resident(*t, q->t, evictable, false);
      } catch (const error&) {
        placed = false;
      }
      if (placed) {
        t->prefetched = true;
        ++stats_.prefetches;
      }
    }
  }
}

namespace {
// A byte moved device to device (compaction) is weighed as a quarter of a
// byte moved over the host link; compaction is chosen over evicting a run
// only when its weighed bytes are under half of the run's.
constexpr double kD2dWeight = 0.25;
constexpr double kCompactRatio = 0.5;
}  // namespace

bool tiered_pool::compaction_cheaper(const op& o, dao_tensor& t, std::uint64_t now,
                                     const std::function<bool(const dao_tensor*)>& evictable) {
  const arena_run run = best_run(arena_round(t.bytes), now, evictable);
  if (!run.found) return false;  // compaction is the fallback anyway
  double run_bytes = 0;
  const auto& blocks = arena_.blocks();
  for (std::size_t i = run.first; i <= run.last; ++i) {
    const dao_tensor* owner = blocks[i].owner;
    if (owner == nullptr) continue;
    if (needs_copy(*owner)) run_bytes += static_cast<double>(owner->bytes);
    if (next_use(*owner) != UINT64_MAX) run_bytes += static_cast<double>(owner->bytes);
  }
  if (run_bytes == 0) return false;
  std::vector<dao_tensor*> victims;
  std::size_t host_need = 0;
  if (!compaction_victims(o, now, victims, host_need)) return false;
  double compact_bytes = 0;
  for (const dao_tensor* v : victims) {
    if (needs_copy(*v)) compact_bytes += static_cast<double>(v->bytes);
    if (next_use(*v) != UINT64_MAX) compact_bytes += static_cast<double>(v->bytes);
  }
  if (compact_bytes >= kCompactRatio * run_bytes) return false;
  std::size_t cursor = 0;
  double slid = 0;
  for (const arena_block& b : blocks) {
    if (b.owner == nullptr) continue;
    if (std::find(victims.begin(), victims.end(), b.owner) != victims.end()) continue;
    if (b.offset != cursor) slid += static_cast<double>(b.size);
    cursor += b.size;
  }
  compact_bytes += kD2dWeight * slid;
  return compact_bytes < kCompactRatio * run_bytes;
}

void tiered_pool::run_kernel(op& o, std::unique_lock<std::mutex>& lock) {
  const std::uint64_t now = o.t;
  for (dao_tensor* t : o.distinct) {
    if (t->prefetched) {
      t->prefetched = false;
      if (t->resident && (t->transit == nullptr || t->transit->query())) {
        ++stats_.prefetches_in_time;
      }
    }
    t->pinned = true;
  }
  auto unpin = [&] {
    for (dao_tensor* t : o.distinct) t->pinned = false;
  };
  auto evictable = [](const dao_tensor* x) { return !x->pinned; };
  bool placed = true;
  try {
    for (dao_tensor* t : o.distinct) {
      if (t->resident) continue;
      if (arena_.find_free(t->bytes) < 0 &&
          (arena_.free_bytes() >= arena_round(t->bytes) ||
           compaction_cheaper(o, *t, now, evictable))) {
        // The free bytes suffice but are split, or compaction (and evicting
        // only the shortfall) moves clearly fewer bytes than evicting the
        // best run: compact rather than evict.
        placed = false;
        break;
      }
      if (!make_resident(*t, now, evictable, true)) {
        placed = false;
        break;
      }
    }
    if (!placed && !failed_) placed = compact_and_place(o, now, lock);
  } catch (...) {
    unpin();
    throw;
  }
  if (!placed || failed_) {
    unpin();
    if (!failed_) {
      fail(strprintf("kernel %llu: its tensors could not be placed in the device budget",
                     static_cast<unsigned long long>(o.seq)));
    } else {
      fail_message_ = strprintf("kernel %llu was not run: %s",
                                static_cast<unsigned long long>(o.seq), fail_message_.c_str());
    }
    return;
  }
  const bool wait_h2d = h2d_unwaited_;
  const bool wait_d2h = d2h_unwaited_;
  if (wait_h2d) {
    h2d_->impl->record(*h2d_ready_);
    h2d_unwaited_ = false;
  }
  if (wait_d2h) {
    d2h_->impl->record(*d2h_ready_);
    d2h_unwaited_ = false;
  }
  // Reused from kernel to kernel (only the executor touches them): no heap
  // allocation per kernel once they have grown.
  std::vector<void*>& in_ptrs = in_ptrs_;
  std::vector<void*>& out_ptrs = out_ptrs_;
  in_ptrs.clear();
  out_ptrs.clear();
  for (dao_tensor* t : o.inputs) in_ptrs.push_back(device_ptr(*t));
  for (dao_tensor* t : o.outputs) out_ptrs.push_back(device_ptr(*t));
  prefetch_after(now);

  dao_status status = DAO_OK;
  std::uint64_t stall = 0;
  {
    unlocked u(lock);
    const auto t0 = steady::now();
    if (wait_h2d) h2d_ready_->synchronize();
    if (wait_d2h) d2h_ready_->synchronize();
    stall = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t0).count());
    status = o.fn(o.user_data, in_ptrs.data(), in_ptrs.size(), out_ptrs.data(), out_ptrs.size(),
                  compute_->handle);
    compute_->impl->synchronize();
  }
  stats_.stall_ns += stall;
  ++stats_.kernels_run;
  unpin();
  for (dao_tensor* t : o.outputs) t->host_valid = false;
  // A kernel that failed may not have written its outputs: a tensor it was
  // to produce first holds no data.
  if (status == DAO_OK)
    for (dao_tensor* t : o.outputs) t->produced = true;
  for (dao_tensor* t : o.distinct) advance(*t, now);
  if (status != DAO_OK) {
    fail(strprintf("kernel %llu returned %s (%d); later kernels were not run",
                   static_cast<unsigned long long>(o.seq), dao_status_string(status),
                   static_cast<int>(status)));
  }
  for (dao_tensor* t : o.distinct) free_if_dead(*t);
}

void tiered_pool::run_write(op& o, std::unique_lock<std::mutex>& lock) {
  dao_tensor& t = *o.tensor;
  if (t.host != nullptr || t.resident) {
    // Copies may still read or write the old buffers.
    unlocked u(lock);
    h2d_->impl->synchronize();
    d2h_->impl->synchronize();
  }
  if (t.host != nullptr) host_free(t.host, t.bytes);
  if (t.resident) {
    arena_.release(t.offset);
    t.resident = false;
    set_device_bytes(-static_cast<std::int64_t>(t.bytes));
  }
  t.host = o.staging;
  o.staging = nullptr;
  t.host_valid = true;
  t.produced = true;
  t.prefetched = false;
  advance(t, o.t);
  free_if_dead(t);
}

// A read that fails (its copy could not be made) fails only itself: the
// tensor stays where it was, and the pool goes on.
void tiered_pool::run_read(op& o, std::unique_lock<std::mutex>& lock) {
  try {
    copy_out(o, lock);
  } catch (const error& e) {
    o.status = e.status();
    o.message = strprintf("dao_tensor_read: tensor #%llu: %s",
                          static_cast<unsigned long long>(o.tensor->id), e.what());
  }
  advance(*o.tensor, o.t);
  free_if_dead(*o.tensor);
}

void tiered_pool::copy_out(op& o, std::unique_lock<std::mutex>& lock) {
  dao_tensor& t = *o.tensor;
  if (!t.produced) {
    o.status = DAO_ERR_INVALID_STATE;
    o.message = strprintf(
        "dao_tensor_read: tensor #%llu holds no data: the write or kernel that was to produce "
        "it failed or never ran (the pool failed)",
        static_cast<unsigned long long>(t.id));
    return;
  }
  if (t.host_valid) {
    void* host = t.host;
    unlocked u(lock);
    d2h_->impl->synchronize();  // it may be an eviction still under way
    std::memcpy(o.dst, host, t.bytes);
  } else if (t.resident) {
    void* dev = device_ptr(t);
    unlocked u(lock);
    h2d_->impl->synchronize();  // it may be a fetch still under way
    d2h_->impl->copy(o.dst, dev, t.bytes);
    d2h_->impl->synchronize();
  } else {
    o.status = DAO_ERR_INVALID_STATE;
    o.message = strprintf("dao_tensor_read: tensor #%llu holds no data (never written)",
                          static_cast<unsigned long long>(t.id));
  }
}

}  // namespace dao::detail
