// Tiered pools, the client side: checking what callers pass, registering
// tensors, the access table and queueing operations (see tiered_pool.hpp).
#include "tiered/tiered_pool.hpp"

#include <algorithm>
#include <cstring>

#include "core/callback_scope.hpp"
#include "core/error.hpp"
#include "resource/sim.hpp"
#include "resource/sim_costs.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// The options of a pool on `device` and `host`, once the places and the
// budget are checked: nothing is allocated before.
tiered_options checked_options(dao_place device, dao_place host, std::size_t device_budget,
                               const char* config_text) {
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
    throw invalid_argument(
        strprintf("dao_tiered_create: device_budget is %zu bytes; it must be at least %zu",
                  device_budget, kArenaGranule));
  }
  return tiered_options::parse(config_text, dk == DAO_PLACE_SIM);
}

// How copies between the tiers are made (SIM: and how long they take: the
// config's rates, else those of the SIM cost profile, else not modelled).
link_model link_for(const tiered_options& o, dao_place device, dao_place host) {
  link_model m;
  const bool sim = raw_kind(device.kind) == DAO_PLACE_SIM;
  m.host_pageable = sim ? !o.sim_host_pinned : raw_kind(host.kind) == DAO_PLACE_CPU;
  m.staging_buffers = o.staging_buffers;
  m.staging_chunk = o.staging_chunk;
  m.inline_bytes = o.inline_copy;
  if (sim) {
    const sim_profile& profile = sim_current_profile();
    m.pinned_bytes_per_s = o.bandwidth_given ? o.bandwidth : profile.pinned_gbs * 1e9;
    m.pageable_bytes_per_s[kToDevice] =
        o.pageable_to_device_given ? o.pageable_to_device : profile.to_device_gbs * 1e9;
    m.pageable_bytes_per_s[kToHost] =
        o.pageable_to_host_given ? o.pageable_to_host : profile.to_host_gbs * 1e9;
  }
  return m;
}

}  // namespace

// --- creation and destruction ----------------------------------------------

tiered_pool::tiered_pool(dao_place device, dao_place host, std::size_t device_budget,
                         const char* config_text)
    : options_(checked_options(device, host, device_budget, config_text)),
      scorer_{options_.policy, nullptr, nullptr},
      memory_(device, host, reserved_budget(device_budget), options_.host_budget, stats_),
      copies_(memory_.device_resource(), memory_.device_place(), link_for(options_, device, host),
              memory_),
      placement_(reserved_budget(device_budget), scorer_, memory_, copies_, stats_),
      executor_(mu_, placement_, copies_, memory_, records_, stats_, options_.prefetch,
                options_.idle_trim_ns) {}

tiered_pool::~tiered_pool() {
  executor_.stop();
  // Copies may still use host buffers (prefetches queued by the last kernel).
  copies_.close();
  records_.for_each([this](tiered_tensor& t) {
    if (t.host != nullptr) memory_.host_free(t.host, t.bytes);
    t.host = nullptr;
    t.magic = 0;
  });
}

// --- calls of any thread ---------------------------------------------------

void tiered_pool::check_tensor(const tiered_tensor* t, const char* function,
                               const char* name) const {
  if (t == nullptr) {
    throw invalid_argument(strprintf("%s: %s must not be NULL", function, name));
  }
  if (t->pool != this) {
    throw invalid_argument(strprintf("%s: %s (%p) is a tensor of another tiered pool", function,
                                     name, static_cast<const void*>(t)));
  }
  if (t->released) {
    throw invalid_argument(strprintf("%s: %s (tensor #%llu) was already released", function, name,
                                     static_cast<unsigned long long>(t->id)));
  }
}

void tiered_pool::require_not_failed(const char* function) const {
  if (executor_.failed()) {
    throw invalid_state(strprintf("%s: the tiered pool has failed: %s", function,
                                  executor_.fail_message().c_str()));
  }
}

void tiered_pool::set_score_callback(dao_score_fn score, void* user_data) {
  refuse_in_scoring("dao_tiered_set_score_callback");
  if (score == nullptr) {
    throw invalid_argument("dao_tiered_set_score_callback: score must not be NULL");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (scorer_.policy != evict_policy::callback) {
    throw invalid_state(
        strprintf("dao_tiered_set_score_callback: the pool's policy is '%s'; create it with "
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

tiered_tensor* tiered_pool::create_tensor(std::size_t bytes) {
  refuse_in_scoring("dao_tensor_create");
  if (bytes == 0) throw invalid_argument("dao_tensor_create: bytes must be > 0");
  if (bytes > placement_.capacity() || arena_round(bytes) > placement_.capacity()) {
    throw out_of_memory(strprintf(
        "dao_tensor_create: a tensor of %zu bytes does not fit in the device budget of %zu "
        "bytes",
        bytes, placement_.capacity()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  require_not_failed("dao_tensor_create");
  tiered_tensor* t = records_.make();  // may throw: nothing changed then
  t->pool = this;
  t->bytes = bytes;
  t->id = ++next_id_;
  ++stats_.tensors_live;
  return t;
}

void tiered_pool::write(tiered_tensor& t, const void* src, std::size_t bytes) {
  refuse_in_scoring("dao_tensor_write");
  if (src == nullptr) throw invalid_argument("dao_tensor_write: src must not be NULL");
  {
    std::lock_guard<std::mutex> lock(mu_);
    check_tensor(&t, "dao_tensor_write", "tensor");
    require_not_failed("dao_tensor_write");
    if (bytes != t.bytes) {
      throw invalid_argument(
          strprintf("dao_tensor_write: bytes is %zu but the tensor has %zu", bytes, t.bytes));
    }
    if (!memory_.host_fits(bytes)) {
      throw out_of_memory(strprintf(
          "dao_tensor_write: the host tier holds %llu bytes; %zu more would exceed its "
          "host_budget of %zu bytes",
          static_cast<unsigned long long>(stats_.host_bytes), bytes, memory_.host_budget()));
    }
    memory_.host_reserve(bytes);  // for the staging copy
  }
  void* staging = nullptr;
  try {
    staging = memory_.host_allocate_reserved(bytes);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    memory_.host_unreserve(bytes);
    throw;
  }
  std::memcpy(staging, src, bytes);
  std::unique_ptr<tiered_op> o;
  std::lock_guard<std::mutex> lock(mu_);
  try {
    check_tensor(&t, "dao_tensor_write", "tensor");
    require_not_failed("dao_tensor_write");
    o = executor_.take_op();
    o->what = tiered_op::kind::write;
    o->tensor = &t;
    o->staging = staging;
    reserve_access(t);           // may throw: nothing changed then
    executor_.enqueue(o.get());  // may throw: nothing queued then
    // Published: nothing below throws.
    o->t = ++clock_;
    append_access(t, o->t, false, true);
    t.written = true;
    t.retired = false;
    placement_.note_change(t);
  } catch (...) {
    memory_.host_free(staging, bytes);
    throw;
  }
  o.release();
}

void tiered_pool::refuse_in_scoring(const char* function) {
  if (!callback_scope::inside(callback_scope::kind::scoring)) return;
  throw invalid_state(strprintf(
      "%s: called from a scoring callback (dao_score_fn) of a tiered pool, which runs with that "
      "pool's lock held; a scoring callback may call no dao_tiered_*, dao_tensor_* or "
      "dao_kernel_submit function (it would deadlock)",
      function));
}

void tiered_pool::refuse_on_executor(const char* function) const {
  refuse_in_scoring(function);
  if (executor_.on_worker()) {
    throw invalid_state(strprintf(
        "%s: called from a kernel (dao_kernel_fn) of this pool, on its executor thread, where it "
        "would wait for that kernel itself; call it from another thread, after "
        "dao_kernel_submit",
        function));
  }
  const callback_scope* host = callback_scope::find(callback_scope::kind::host_function);
  if (host != nullptr && copies_.owns_stream(host->owner())) {
    throw invalid_state(strprintf(
        "%s: called from a host function (dao_launch_host_func) on one of this pool's streams "
        "(a kernel's stream), which the pool's executor waits for; it would wait for itself",
        function));
  }
}

void tiered_pool::read(tiered_tensor& t, void* dst, std::size_t bytes) {
  refuse_on_executor("dao_tensor_read");
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
        "dao_tensor_read: tensor #%llu holds no data: it was never written (no dao_tensor_write "
        "and no kernel output) or was retired (dao_tensor_retire) since",
        static_cast<unsigned long long>(t.id)));
  }
  tiered_op o;
  o.what = tiered_op::kind::read;
  o.tensor = &t;
  o.dst = dst;
  o.caller_owned = true;
  reserve_access(t);      // may throw: nothing changed then
  executor_.enqueue(&o);  // may throw: nothing queued then
  o.t = ++clock_;
  append_access(t, o.t, true, false);
  placement_.note_change(t);
  executor_.wait_done(lock, o);
  if (o.status != DAO_OK) throw error(o.status, o.message);
}

dao_tensor_state tiered_pool::state(const tiered_tensor& t) {
  refuse_in_scoring("dao_tensor_get_state");
  std::lock_guard<std::mutex> lock(mu_);
  check_tensor(&t, "dao_tensor_get_state", "tensor");
  if (!t.resident && !t.host_valid) return DAO_TENSOR_UNINITIALIZED;
  if (!copies_.arrived(t)) return DAO_TENSOR_IN_TRANSIT;
  return t.resident ? DAO_TENSOR_ON_DEVICE : DAO_TENSOR_ON_HOST;
}

void tiered_pool::release(tiered_tensor& t) {
  refuse_in_scoring("dao_tensor_release");
  std::lock_guard<std::mutex> lock(mu_);
  check_tensor(&t, "dao_tensor_release", "tensor");
  // A new op (the release's own record, issue 20: its allocation may fail,
  // and then nothing changed); the executor keeps it for reuse by kernels.
  auto o = std::make_unique<tiered_op>();
  o->what = tiered_op::kind::release;
  o->tensor = &t;
  if (!executor_.failed()) {
    executor_.enqueue(o.get());
    o.release();
  }
  t.released = true;  // a failed pool frees it at destroy
  placement_.note_change(t);
}

void tiered_pool::retire(tiered_tensor& t) {
  refuse_in_scoring("dao_tensor_retire");
  std::lock_guard<std::mutex> lock(mu_);
  check_tensor(&t, "dao_tensor_retire", "tensor");
  // Nothing to queue: the uses queued so far keep its data (needs_copy),
  // and once they have run it is evicted without a copy back.
  t.retired = true;
  t.written = false;  // dao_tensor_read refuses until it is written again
  placement_.note_change(t);
}

void tiered_pool::submit(dao_kernel_fn fn, void* user_data, tiered_tensor* const* inputs,
                         std::size_t input_count, tiered_tensor* const* outputs,
                         std::size_t output_count) {
  static const char* const f = "dao_kernel_submit";
  refuse_in_scoring(f);
  if (fn == nullptr) throw invalid_argument("dao_kernel_submit: fn must not be NULL");
  if (inputs == nullptr && input_count != 0) {
    throw invalid_argument("dao_kernel_submit: inputs is NULL but input_count is not 0");
  }
  if (outputs == nullptr && output_count != 0) {
    throw invalid_argument("dao_kernel_submit: outputs is NULL but output_count is not 0");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<tiered_op> o = executor_.take_op();
  o->what = tiered_op::kind::kernel;
  o->fn = fn;
  o->user_data = user_data;
  o->inputs.assign(inputs, inputs + input_count);
  o->outputs.assign(outputs, outputs + output_count);
  require_not_failed(f);
  for (tiered_tensor* t : o->inputs) check_tensor(t, f, "an input");
  for (tiered_tensor* t : o->outputs) check_tensor(t, f, "an output");
  if (scorer_.policy == evict_policy::callback && scorer_.callback == nullptr) {
    throw invalid_state(
        "dao_kernel_submit: the pool's policy is 'callback' but no scoring function was set "
        "(dao_tiered_set_score_callback)");
  }
  std::size_t total = 0;
  for (auto* list : {&o->inputs, &o->outputs}) {
    for (tiered_tensor* t : *list) {
      if (std::find(o->distinct.begin(), o->distinct.end(), t) != o->distinct.end()) continue;
      o->distinct.push_back(t);
      total += arena_round(t->bytes);
    }
  }
  if (total > placement_.capacity()) {
    throw out_of_memory(strprintf(
        "dao_kernel_submit: the kernel's %zu tensors need %zu bytes at once but the device "
        "budget is %zu bytes",
        o->distinct.size(), total, placement_.capacity()));
  }
  // All or nothing: everything that can throw (the op and its lists above,
  // room in each tensor's access row here, the queue's slot) comes before
  // the op is published; once it is queued nothing throws. Appending the
  // accesses after the push once freed a queued op when an append ran out
  // of memory (issue 20).
  for (tiered_tensor* t : o->distinct) reserve_access(*t);
  executor_.enqueue(o.get());  // may throw: nothing queued then
  o->t = ++clock_;
  o->seq = ++stats_.kernels_submitted;
  for (tiered_tensor* t : o->inputs) append_access(*t, o->t, true, false, true);
  for (tiered_tensor* t : o->outputs) {
    append_access(*t, o->t, false, true, true);
    t->written = true;
    t->retired = false;
  }
  // Their eviction scores (the index of resident tensors).
  for (tiered_tensor* t : o->distinct) placement_.note_change(*t);
  o.release();
}

void tiered_pool::synchronize() {
  refuse_on_executor("dao_tiered_synchronize");
  std::unique_lock<std::mutex> lock(mu_);
  executor_.wait_drained(lock);
  if (executor_.failed()) {
    throw invalid_state(strprintf("dao_tiered_synchronize: %s", executor_.fail_message().c_str()));
  }
  // The evictions and prefetches the last kernels caused run on after them:
  // once this returns no tensor is in transit.
  executor_.quiesce_copies(lock);
}

void tiered_pool::trim() {
  refuse_on_executor("dao_tiered_trim");
  std::unique_lock<std::mutex> lock(mu_);
  require_not_failed("dao_tiered_trim");
  tiered_op o;
  o.what = tiered_op::kind::trim;
  o.caller_owned = true;
  executor_.enqueue(&o);  // may throw: nothing queued then
  o.t = clock_;           // uses no tensor: it does not advance the clock
  executor_.wait_done(lock, o);
  if (o.status != DAO_OK) throw error(o.status, o.message);
}

std::size_t tiered_pool::record_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

void tiered_pool::read_stats(dao_tiered_stats& out) {
  refuse_in_scoring("dao_tiered_get_stats");
  std::lock_guard<std::mutex> lock(mu_);
  out = stats_;
  out.stall_ns = copies_.waited_ns();
  out.device_range_bytes = memory_.device_range_bytes();
}

void tiered_pool::read_link_stats(dao_tiered_link_stats& out) {
  refuse_in_scoring("dao_tiered_get_link_stats");
  std::lock_guard<std::mutex> lock(mu_);
  const link_clock::reading times = copies_.copy_times();
  // Host to device: the fetches, and the writes that went to the device
  // (placement::write_to_device; not fetches: dao_tiered_stats has none of
  // them), so that the bytes match the copy time.
  out.bytes_to_device = stats_.bytes_fetched + placement_.device_write_bytes();
  out.bytes_to_host = stats_.bytes_evicted;
  out.copies_to_device = stats_.fetches + placement_.device_writes();
  out.copies_to_host = stats_.evictions;
  out.copy_ns_to_device = times.busy_ns[kToDevice];
  out.copy_ns_to_host = times.busy_ns[kToHost];
  out.copy_ns = times.any_ns;
  out.stall_ns = copies_.waited_ns();
  out.kernel_ns = executor_.kernel_ns();
  out.hidden_ns = out.copy_ns > out.stall_ns ? out.copy_ns - out.stall_ns : 0;
  auto rate = [](std::uint64_t bytes, std::uint64_t ns) -> std::uint64_t {
    return ns > 0 ? static_cast<std::uint64_t>(static_cast<double>(bytes) * 1e9 /
                                               static_cast<double>(ns))
                  : 0;
  };
  out.to_device_bytes_per_s = rate(out.bytes_to_device, out.copy_ns_to_device);
  out.to_host_bytes_per_s = rate(out.bytes_to_host, out.copy_ns_to_host);
  out.staged_bytes = copies_.staged_bytes();
  out.staging_bytes = copies_.staging_bytes();
  out.host_pageable = copies_.link().host_pageable ? 1 : 0;
  out.staged = copies_.link().staged() ? 1 : 0;
}

}  // namespace dao::detail
