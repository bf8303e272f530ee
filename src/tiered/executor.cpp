// The executor of a tiered pool: its queue and worker thread (see
// executor.hpp).
#include "tiered/executor.hpp"

#include <algorithm>
#include <chrono>
#include <system_error>

#include "core/callback_scope.hpp"
#include "core/error.hpp"
#include "tiered/placement.hpp"
#include "tiered/tensor.hpp"
#include "tiered/tensor_records.hpp"
#include "tiered/tier_memory.hpp"
#include "tiered/transfers.hpp"
#include "tiered/unlocked.hpp"
#include "util/raw_enum.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {
using steady = std::chrono::steady_clock;
}  // namespace

executor::executor(std::mutex& mu, placement& placement, transfers& copies, tier_memory& memory,
                   tensor_records& records, dao_tiered_stats& stats, std::size_t prefetch,
                   std::uint64_t idle_trim_ns)
    : mu_(mu),
      placement_(placement),
      copies_(copies),
      memory_(memory),
      records_(records),
      stats_(stats),
      prefetch_(prefetch),
      idle_trim_ns_(idle_trim_ns) {
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error& e) {
    throw backend_error(
        strprintf("dao_tiered_create: could not start the executor thread: %s", e.what()));
  }
}

void executor::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// --- calls of the submitting threads ---------------------------------------

// Ops are reused (mu_ held): a kernel op's vectors keep their capacity, so a
// submit allocates nothing once the pool has warmed up.
std::unique_ptr<tiered_op> executor::take_op() {
  if (spare_ops_.empty()) return std::make_unique<tiered_op>();
  std::unique_ptr<tiered_op> o = std::move(spare_ops_.back());
  spare_ops_.pop_back();
  return o;
}

// Counts the op and wakes the thread if it sleeps.
void executor::enqueue(tiered_op* o) {
  queue_.push_back(o);
  if (queue_.size() > peak_queue_) peak_queue_ = queue_.size();
  ++ops_submitted_;
  if (executor_idle_) work_cv_.notify_one();
}

// Waits (mu_ held by `lock`) until `done` holds, which happens once the
// executor has completed `target` ops. Only then does the executor wake
// anyone: waking a waiter after every op would cost a context switch each.
template <class Done>
void executor::wait_for(std::unique_lock<std::mutex>& lock, std::uint64_t target, Done done) {
  while (!done()) {
    wake_at_ = std::min(wake_at_, target);
    done_cv_.wait(lock);
  }
}

void executor::wait_done(std::unique_lock<std::mutex>& lock, const tiered_op& o) {
  wait_for(lock, ops_submitted_, [&] { return o.done; });
}

void executor::wait_drained(std::unique_lock<std::mutex>& lock) {
  const std::uint64_t target = ops_submitted_;
  wait_for(lock, target, [&] { return ops_completed_ >= target; });
}

void executor::quiesce_copies(std::unique_lock<std::mutex>& lock) {
  unlocked u(lock);
  copies_.quiesce();
}

// --- the thread ------------------------------------------------------------

void executor::run() noexcept {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (queue_.empty() && !stopping_) await_work(lock);
    if (queue_.empty()) break;
    tiered_op* o = queue_.front();
    queue_.pop_front();
    idle_trim_done_ = false;
    if (failed_ && o->what != tiered_op::kind::read) {
      discard(*o);
    } else {
      try {
        process(*o, lock);
      } catch (const std::exception& e) {
        fail(strprintf("operation at logical time %llu failed: %s",
                       static_cast<unsigned long long>(o->t), e.what()));
        if (o->what == tiered_op::kind::read) {
          o->status = DAO_ERR_INVALID_STATE;
          o->message = "dao_tensor_read: the tiered pool has failed: " + fail_message_;
        }
        if (o->what == tiered_op::kind::trim) {
          o->status = DAO_ERR_INVALID_STATE;
          o->message = "dao_tiered_trim: the tiered pool has failed: " + fail_message_;
        }
        if (o->what == tiered_op::kind::write && o->staging != nullptr) {
          memory_.host_free(o->staging, o->tensor->bytes);
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

// The queue is empty (mu_ held by `lock`): sleep until an op is queued. No
// spinning (issue 21): on a loaded machine a spinning executor took the
// core the submitting thread needed; a submitter that runs ahead (the usual
// case) finds the executor busy and wakes nobody.
// With idle_trim, the sleep has a deadline: a queue still empty then (and
// no stop asked for) gives the device range back, once per idle spell.
void executor::await_work(std::unique_lock<std::mutex>& lock) {
  while (queue_.empty() && !stopping_) {
    const bool trim_due =
        idle_trim_ns_ != 0 && !idle_trim_done_ && !failed_ && memory_.device_held();
    executor_idle_ = true;
    if (!trim_due) {
      work_cv_.wait(lock);
      executor_idle_ = false;
      continue;
    }
    const auto deadline = steady::now() + std::chrono::nanoseconds(idle_trim_ns_);
    const bool woken =
        work_cv_.wait_until(lock, deadline, [&] { return !queue_.empty() || stopping_; });
    executor_idle_ = false;
    if (!woken) trim_when_idle(lock);
  }
}

// dao_tiered_trim() without a caller: a refusal (no room in the host tier)
// or a host allocation that fails part way leaves every tensor readable on
// one tier or the other, so it is not the pool's failure; the pool just
// keeps what it holds until it has run more work.
void executor::trim_when_idle(std::unique_lock<std::mutex>& lock) {
  idle_trim_done_ = true;
  std::string failure;
  try {
    const std::uint64_t before = stats_.trims;
    placement_.trim(lock, failure);
    if (stats_.trims != before) ++stats_.idle_trims;
  } catch (...) {
    // As after a refused dao_tiered_trim(): what moved is on the host.
  }
}

void executor::finish(tiered_op* o) {
  if (o->caller_owned) {
    o->done = true;
  } else {
    recycle_op(o);
  }
}

void executor::recycle_op(tiered_op* o) noexcept {
  // As many ops are kept for reuse as the queue has held at once (at least
  // 256, at most 65536, about 16 MiB with their lists): a program that
  // submits a step ahead and then waits allocates nothing per kernel from
  // its second step on (issue 21), and ops made by releases (which always
  // make their own) do not pile up.
  constexpr std::size_t kSpareOps = 65536;
  o->what = tiered_op::kind::kernel;
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
  const std::size_t keep = std::min(kSpareOps, std::max<std::size_t>(256, peak_queue_));
  if (spare_ops_.size() < keep) {
    try {
      spare_ops_.emplace_back(o);
      return;
    } catch (...) {
    }
  }
  delete o;
}

void executor::discard(tiered_op& o) {
  switch (o.what) {
    case tiered_op::kind::read:
      o.status = DAO_ERR_INVALID_STATE;
      o.message = "dao_tensor_read: the tiered pool has failed: " + fail_message_;
      break;
    case tiered_op::kind::write:
      if (o.staging != nullptr) memory_.host_free(o.staging, o.tensor->bytes);
      o.staging = nullptr;
      break;
    case tiered_op::kind::trim:
      o.status = DAO_ERR_INVALID_STATE;
      o.message = "dao_tiered_trim: the tiered pool has failed: " + fail_message_;
      break;
    default: break;
  }
}

void executor::fail(const std::string& message) {
  if (failed_) return;
  failed_ = true;
  fail_message_ = message;
}

void executor::process(tiered_op& o, std::unique_lock<std::mutex>& lock) {
  switch (o.what) {
    case tiered_op::kind::kernel: run_kernel(o, lock); break;
    case tiered_op::kind::write: run_write(o, lock); break;
    case tiered_op::kind::read: run_read(o, lock); break;
    case tiered_op::kind::release: run_release(*o.tensor); break;
    case tiered_op::kind::trim: run_trim(o, lock); break;
  }
}

// The last operation queued for a released tensor: every earlier one that
// uses it has run, and no later one can name it (a released tensor is
// refused), so once its memory is freed the record goes back for reuse.
void executor::run_release(tiered_tensor& t) {
  free_if_dead(t);
  if (t.freed) records_.reclaim(t);
}

// Frees a released tensor whose queued uses have all run.
void executor::free_if_dead(tiered_tensor& t) {
  if (!t.released || t.freed || t.cursor < t.accesses.size() || t.pinned) return;
  placement_.free_memory(t);
  t.freed = true;
  t.accesses.clear();
  t.accesses.shrink_to_fit();
  t.cursor = 0;
  --stats_.tensors_live;
}

// The inputs of the next `prefetch_` kernels in the queue.
void executor::prefetch_after() {
  if (prefetch_ == 0) return;
  std::size_t seen = 0;
  for (tiered_op* q : queue_) {
    if (q->what != tiered_op::kind::kernel) continue;
    if (++seen > prefetch_) break;
    for (tiered_tensor* t : q->inputs) placement_.prefetch(*t, q->t);
  }
}

namespace {

// The empty volatile asm marks the caller as having an effect: GCC counts a
// prefetch as none, so it found warm_ahead() free of side effects and
// dropped its call altogether (measured: no prefetch left in run_kernel).
inline void prefetch_line(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p);
  __asm__ volatile("");
#else
  (void)p;
#endif
}

}  // namespace

// With 10^4 live tensors touched at random (issue 21), the op of the next
// kernel, its list of tensors, their records, the entries of their access
// rows and of the index of resident tensors are rarely in cache when the
// kernel runs: each was a cache miss, one after the other (the address of
// the next is in the one before). Their loads are started in stages, a few
// kernels ahead, each stage from what the one before brought in. Only
// prefetch instructions: a wrong guess costs a load, never a result.
void executor::warm_ahead() const noexcept {
  constexpr std::size_t kOpAhead = 12, kListAhead = 9, kRecordAhead = 6, kRowAhead = 3;
  const std::size_t queued = queue_.size();
  if (queued > kOpAhead) prefetch_line(queue_[kOpAhead]);
  if (queued > kListAhead) prefetch_line(queue_[kListAhead]->distinct.data());
  if (queued > kRecordAhead) {
    for (const tiered_tensor* t : queue_[kRecordAhead]->distinct) {
      const char* r = reinterpret_cast<const char*>(t);
      for (std::size_t at = 0; at < sizeof(tiered_tensor); at += 64) prefetch_line(r + at);
      prefetch_line(r + sizeof(tiered_tensor) - 1);
    }
  }
  if (queued > kRowAhead) {
    for (const tiered_tensor* t : queue_[kRowAhead]->distinct) {
      if (t->cursor < t->accesses.size()) prefetch_line(&t->accesses[t->cursor]);
      if (t->indexed) prefetch_line(&*t->index_entry);
    }
  }
}

void executor::run_trim(tiered_op& o, std::unique_lock<std::mutex>& lock) {
  std::string failure;
  try {
    if (!placement_.trim(lock, failure)) {
      o.status = DAO_ERR_OUT_OF_MEMORY;
      o.message = failure;
    }
  } catch (const error& e) {
    o.status = e.status();
    o.message = strprintf("dao_tiered_trim: %s; the tensors moved so far are on the host tier, "
                          "the others on the device",
                          e.what());
  }
}

void executor::run_kernel(tiered_op& o, std::unique_lock<std::mutex>& lock) {
  const std::uint64_t now = o.t;
  warm_ahead();
  // After dao_tiered_trim: the device range is taken again (throws
  // out_of_memory, which fails the pool, if the device has no room now).
  if (!memory_.device_held()) memory_.acquire_device();
  for (tiered_tensor* t : o.distinct) {
    if (t->prefetched) {
      t->prefetched = false;
      if (t->resident && copies_.arrived(*t)) {
        ++stats_.prefetches_in_time;
      }
    }
    t->pinned = true;
  }
  auto unpin = [&] {
    for (tiered_tensor* t : o.distinct) t->pinned = false;
  };
  bool placed = false;
  std::string failure;
  try {
    placed = placement_.place_kernel(o.distinct, now, lock, failure);
  } catch (...) {
    unpin();
    throw;
  }
  if (!placed) {
    unpin();
    if (failure.empty()) {
      fail(strprintf("kernel %llu: its tensors could not be placed in the device budget",
                     static_cast<unsigned long long>(o.seq)));
    } else {
      fail(strprintf("kernel %llu was not run: %s", static_cast<unsigned long long>(o.seq),
                     failure.c_str()));
    }
    return;
  }
  const transfers::fence fence = copies_.fence_kernel(o.distinct);
  // Reused from kernel to kernel (only the executor touches them): no heap
  // allocation per kernel once they have grown.
  std::vector<void*>& in_ptrs = in_ptrs_;
  std::vector<void*>& out_ptrs = out_ptrs_;
  in_ptrs.clear();
  out_ptrs.clear();
  for (tiered_tensor* t : o.inputs) in_ptrs.push_back(placement_.device_ptr(*t));
  for (tiered_tensor* t : o.outputs) out_ptrs.push_back(placement_.device_ptr(*t));
  prefetch_after();

  // The kernel's status as the C code returned it: any int. Loading a value
  // outside the enumerators as a dao_status would be undefined in C++, so it
  // is stored as returned and read back as bytes (raw_enum), never loaded.
  int status = DAO_OK;
  std::uint64_t kernel_ns = 0;
  {
    unlocked u(lock);
    // Timed by transfers: the pool's stall_ns. The kernel's time starts when
    // that wait ends (one clock read, not two).
    steady::time_point t0;
    if (!copies_.wait_fence(fence, t0)) t0 = steady::now();
    // Marked as this pool's kernel (owner: the executor), so that calls
    // that would wait for it refuse (tiered_pool::refuse_reentry).
    const callback_scope scope(callback_scope::kind::kernel, this, copies_.compute_handle());
    const dao_status returned = o.fn(o.user_data, in_ptrs.data(), in_ptrs.size(), out_ptrs.data(),
                                     out_ptrs.size(), copies_.compute_handle());
    status = raw_enum(returned);
    copies_.synchronize_compute();
    kernel_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t0).count());
  }
  kernel_ns_ += kernel_ns;
  ++stats_.kernels_run;
  unpin();
  for (tiered_tensor* t : o.outputs) t->host_valid = false;
  // A kernel that failed may not have written its outputs: a tensor it was
  // to produce first holds no data.
  if (status == DAO_OK)
    for (tiered_tensor* t : o.outputs) t->produced = true;
  for (tiered_tensor* t : o.distinct) {
    advance(*t, now);
    placement_.note_change(*t);  // its accesses and host_valid
  }
  if (status != DAO_OK) {
    fail(strprintf("kernel %llu returned %s (%d); later kernels were not run",
                   static_cast<unsigned long long>(o.seq), status_text(status), status));
  }
  for (tiered_tensor* t : o.distinct) free_if_dead(*t);
}

void executor::run_write(tiered_op& o, std::unique_lock<std::mutex>& lock) {
  tiered_tensor& t = *o.tensor;
  // Straight to the device too when that is free in practice (issue 21,
  // item 7): else the first use fetches it.
  const bool to_device = placement_.write_goes_to_device(t, o.t);
  placement_.take_host_buffer(t, o.staging, lock, to_device);
  o.staging = nullptr;
  t.produced = true;
  if (to_device) placement_.write_to_device(t);
  advance(t, o.t);
  placement_.note_change(t);
  free_if_dead(t);
}

// A read that fails (its copy could not be made) fails only itself: the
// tensor stays where it was, and the pool goes on.
void executor::run_read(tiered_op& o, std::unique_lock<std::mutex>& lock) {
  try {
    copy_out(o, lock);
  } catch (const error& e) {
    o.status = e.status();
    o.message = strprintf("dao_tensor_read: tensor #%llu: %s",
                          static_cast<unsigned long long>(o.tensor->id), e.what());
  }
  advance(*o.tensor, o.t);
  placement_.note_change(*o.tensor);
  free_if_dead(*o.tensor);
}

void executor::copy_out(tiered_op& o, std::unique_lock<std::mutex>& lock) {
  tiered_tensor& t = *o.tensor;
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
    copies_.read_host(o.dst, host, t.bytes);
  } else if (t.resident) {
    void* dev = placement_.device_ptr(t);
    unlocked u(lock);
    copies_.read_device(o.dst, dev, t.bytes);
  } else {
    o.status = DAO_ERR_INVALID_STATE;
    o.message = strprintf("dao_tensor_read: tensor #%llu holds no data (never written)",
                          static_cast<unsigned long long>(t.id));
  }
}

}  // namespace dao::detail
