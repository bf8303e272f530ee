// The executor of a tiered pool: its operation queue and the worker thread
// that runs the operations in order: kernels, and the pseudo-kernels that
// tensor writes, reads and releases become. For each kernel it has the
// placement make the kernel's tensors resident, starts the prefetches of the
// kernels queued next, waits for the kernel's copies and runs it.
//
// Submitters (any thread) push operations under the pool's mutex; the
// executor pops them in order, works under that mutex, and releases it only
// to wait for copies and to run a kernel. After a kernel the compute stream
// is synchronized, so its tensors can move at once. When an operation fails
// the pool fails: later operations are discarded (reads answer with the
// reason), and the pool refuses new work.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dao/tiered.h"

namespace dao::detail {

struct tiered_tensor;

class placement;
class tensor_records;
class tier_memory;
class transfers;

// One queued operation, as a submitter fills it in.
struct tiered_op {
  enum class kind { kernel, write, read, release, trim };
  kind what = kind::kernel;
  std::uint64_t t = 0;
  std::uint64_t seq = 0;  // kernel submission number (1-based)
  dao_kernel_fn fn = nullptr;
  void* user_data = nullptr;
  std::vector<tiered_tensor*> inputs, outputs, distinct;
  tiered_tensor* tensor = nullptr;  // write / read / release
  void* staging = nullptr;          // write: the host buffer holding src
  void* dst = nullptr;              // read
  bool caller_owned = false;        // read, trim: lives on the caller's stack
  bool done = false;
  dao_status status = DAO_OK;
  std::string message;
};

class executor {
 public:
  // Starts the worker thread (throws backend_error if it cannot). `mu` is
  // the pool's mutex; everything passed in must outlive this object.
  // `prefetch`: how many queued kernels ahead have their inputs fetched.
  // `records` takes back each released tensor's record once its release
  // operation has run.
  // `idle_trim_ns`: after this long with an empty queue the thread gives
  // the device range back (0: never).
  executor(std::mutex& mu, placement& placement, transfers& copies, tier_memory& memory,
           tensor_records& records, dao_tiered_stats& stats, std::size_t prefetch,
           std::uint64_t idle_trim_ns);
  // Stops the thread (see stop).
  ~executor() { stop(); }

  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

  // Stops the thread once the queue has drained (at once if failed), with
  // the mutex not held. Never throws.
  void stop() noexcept;

  // --- with the pool's mutex held ---

  // An operation to fill in and enqueue (reused: a kernel op's lists keep
  // their capacity, so a submit allocates nothing once the pool has warmed).
  std::unique_ptr<tiered_op> take_op();
  // Queues `o` (owned by the queue from then on unless caller_owned) and
  // wakes the thread. May throw: nothing is queued then.
  void enqueue(tiered_op* o);
  // Waits (the mutex held by `lock`, released while waiting) until the
  // caller-owned `o`, the last op queued, is done.
  void wait_done(std::unique_lock<std::mutex>& lock, const tiered_op& o);
  // Waits until every op queued so far has run or been discarded.
  void wait_drained(std::unique_lock<std::mutex>& lock);
  // Waits (mu_ released meanwhile) until the copies queued so far have
  // finished: after wait_drained(), every tensor is then on the device or
  // on the host, none in transit.
  void quiesce_copies(std::unique_lock<std::mutex>& lock);
  bool failed() const noexcept { return failed_; }
  // Whether the caller is the executor thread: a kernel or a scoring
  // callback of this pool (no mutex needed).
  bool on_worker() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }
  const std::string& fail_message() const noexcept { return fail_message_; }
  // Nanoseconds spent in kernels (with their compute stream's work).
  std::uint64_t kernel_ns() const noexcept { return kernel_ns_; }

 private:
  // The thread (all with the mutex held unless said otherwise).
  void run() noexcept;
  void await_work(std::unique_lock<std::mutex>& lock);
  void process(tiered_op& o, std::unique_lock<std::mutex>& lock);
  void run_kernel(tiered_op& o, std::unique_lock<std::mutex>& lock);
  void run_write(tiered_op& o, std::unique_lock<std::mutex>& lock);
  void run_read(tiered_op& o, std::unique_lock<std::mutex>& lock);
  void run_trim(tiered_op& o, std::unique_lock<std::mutex>& lock);
  void trim_when_idle(std::unique_lock<std::mutex>& lock);
  void copy_out(tiered_op& o, std::unique_lock<std::mutex>& lock);
  void prefetch_after();
  // Starts loading what the kernels queued next will touch (prefetch
  // instructions only: reads nothing the executor relies on, changes nothing).
  void warm_ahead() const noexcept;
  void discard(tiered_op& o);
  void finish(tiered_op* o);
  void recycle_op(tiered_op* o) noexcept;
  void fail(const std::string& message);
  void free_if_dead(tiered_tensor& t);
  void run_release(tiered_tensor& t);
  template <class Done>
  void wait_for(std::unique_lock<std::mutex>& lock, std::uint64_t target, Done done);

  std::mutex& mu_;
  placement& placement_;
  transfers& copies_;
  tier_memory& memory_;
  tensor_records& records_;
  dao_tiered_stats& stats_;
  std::size_t prefetch_;
  std::uint64_t idle_trim_ns_;

  // Everything below: under mu_ unless said otherwise.
  std::condition_variable work_cv_;  // the thread waits for work
  std::condition_variable done_cv_;  // wait_done / wait_drained wait for progress
  std::deque<tiered_op*> queue_;
  std::size_t peak_queue_ = 0;  // the most ops queued at once
  std::uint64_t ops_submitted_ = 0;
  std::uint64_t ops_completed_ = 0;
  bool executor_idle_ = false;             // the thread sleeps on work_cv_
  bool idle_trim_done_ = false;            // tried since the last op: not again until more work
  std::uint64_t wake_at_ = UINT64_MAX;     // ops_completed_ that a waiter needs
  std::vector<void*> in_ptrs_, out_ptrs_;  // the thread's, for each kernel's pointers
  std::vector<std::unique_ptr<tiered_op>> spare_ops_;  // finished ops, for reuse
  bool stopping_ = false;
  bool failed_ = false;
  std::uint64_t kernel_ns_ = 0;
  std::string fail_message_;

  std::thread thread_;  // last: started once everything above exists
};

}  // namespace dao::detail
