// Tiered pools (include/dao/tiered.h): a device budget backed by a host
// tier, a kernel queue and an executor thread that makes each kernel's
// tensors resident, choosing what to evict from the queued future.
//
// Submitters (any thread) append to the access table (each tensor's list of
// (logical time, read/write)) and to the queue under the pool's mutex; the
// executor pops operations in order (kernels, and the pseudo-kernels that
// tensor writes, reads and releases become), plans under the mutex, and
// releases it only to wait for copies and to run a kernel.
//
// Copies: device -> host on the D2H stream, host -> device on the H2D
// stream. A fetch into memory that an eviction is still reading waits for it
// (the H2D stream waits on an event recorded on the D2H stream); before a
// kernel runs, the executor waits on events recorded after that kernel's own
// copies (so prefetches queued after them keep running while it computes).
// After the kernel the compute stream is synchronized, so its tensors can
// move at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dao/tiered.h"
#include "resource/stream.hpp"
#include "tiered/device_arena.hpp"
#include "tiered/policy.hpp"

namespace dao::detail {

class tiered_pool;
class system_resource;

// One entry of the access table: every access of one operation.
struct tensor_access {
  std::uint64_t t = 0;
  bool read = false;
  bool write = false;
};

}  // namespace dao::detail

struct dao_tensor {
  static constexpr std::uint64_t kMagic = 0x64616f74656e7372ull;  // "daotensr"
  std::uint64_t magic = kMagic;
  dao::detail::tiered_pool* pool = nullptr;
  std::size_t bytes = 0;
  std::uint64_t id = 0;

  // Everything below: under the pool's mutex.
  bool released = false;  // the caller dropped the handle
  bool freed = false;     // its memory is gone (released, no queued use)
  bool written = false;   // a write or a kernel output was submitted
  bool produced = false;  // a write or a kernel output has run: it holds data
  std::vector<dao::detail::tensor_access> accesses;  // the access table row
  std::size_t cursor = 0;  // accesses[cursor] is the next not yet executed
  std::uint64_t last_use = 0;

  // Executor state.
  bool resident = false;
  std::size_t offset = 0;   // in the device arena, when resident
  void* host = nullptr;     // host tier buffer (may be stale)
  bool host_valid = false;  // the host buffer holds the current data
  bool pinned = false;      // used by the kernel being prepared
  bool prefetched = false;  // fetched ahead, not yet used
  std::unique_ptr<dao::detail::event_impl> transit;  // after its last copy
};

namespace dao::detail {

class tiered_pool {
 public:
  tiered_pool(dao_place device, dao_place host, std::size_t device_budget, const char* config);
  // Stops the executor once the queue has drained (at once if failed), then
  // frees everything. Never throws.
  ~tiered_pool();

  tiered_pool(const tiered_pool&) = delete;
  tiered_pool& operator=(const tiered_pool&) = delete;

  void set_score_callback(dao_score_fn score, void* user_data);
  dao_tensor* create_tensor(std::size_t bytes);
  void write(dao_tensor& t, const void* src, std::size_t bytes);
  void read(dao_tensor& t, void* dst, std::size_t bytes);
  dao_tensor_state state(const dao_tensor& t);
  void release(dao_tensor& t);
  void submit(dao_kernel_fn fn, void* user_data, dao_tensor* const* inputs,
              std::size_t input_count, dao_tensor* const* outputs, std::size_t output_count);
  void synchronize();
  void read_stats(dao_tiered_stats& out);
  // The stream kernels run on (its `handle` is what they are given).
  stream_object& compute_stream() noexcept { return *compute_; }

 private:
  struct op {
    enum class kind { kernel, write, read, release };
    kind what = kind::kernel;
    std::uint64_t t = 0;
    std::uint64_t seq = 0;  // kernel submission number (1-based)
    dao_kernel_fn fn = nullptr;
    void* user_data = nullptr;
    std::vector<dao_tensor*> inputs, outputs, distinct;
    dao_tensor* tensor = nullptr;  // write / read / release
    void* staging = nullptr;       // write: the host buffer holding src
    void* dst = nullptr;           // read
    bool caller_owned = false;     // read: lives on the caller's stack
    bool done = false;
    dao_status status = DAO_OK;
    std::string message;
  };

  // Checks a tensor passed in (caller holds mu_).
  void check_tensor(const dao_tensor* t, const char* function, const char* name) const;
  void require_not_failed(const char* function) const;
  void append_access(dao_tensor& t, std::uint64_t time, bool read, bool write);
  void push(op* o);
  void queued();
  std::unique_ptr<op> take_op();
  void recycle_op(op* o) noexcept;
  template <class Done>
  void wait_for(std::unique_lock<std::mutex>& lock, std::uint64_t target, Done done);

  // --- executor (all with mu_ held unless said otherwise) ---
  void run() noexcept;
  void await_work(std::unique_lock<std::mutex>& lock);
  void process(op& o, std::unique_lock<std::mutex>& lock);
  void run_kernel(op& o, std::unique_lock<std::mutex>& lock);
  void run_write(op& o, std::unique_lock<std::mutex>& lock);
  void run_read(op& o, std::unique_lock<std::mutex>& lock);
  void copy_out(op& o, std::unique_lock<std::mutex>& lock);
  void discard(op& o);
  void finish(op* o);
  void fail(const std::string& message);
  void advance(dao_tensor& t, std::uint64_t now);
  void free_if_dead(dao_tensor& t);
  void free_tensor(dao_tensor& t);

  static std::uint64_t next_use(const dao_tensor& t) noexcept {
    return t.cursor < t.accesses.size() ? t.accesses[t.cursor].t : UINT64_MAX;
  }
  static bool needs_copy(const dao_tensor& t) noexcept {
    return !t.host_valid && (t.cursor < t.accesses.size() || !t.released);
  }

  // Places `t` in the arena (evicting tensors for which `evictable` holds),
  // fetching its data if it is on the host. Returns false when no run fits
  // or (with `may_fail`) the host tier is full: then the pool has failed.
  bool make_resident(dao_tensor& t, std::uint64_t now,
                     const std::function<bool(const dao_tensor*)>& evictable, bool may_fail);
  // The best run of blocks to evict for `need` bytes (see find_run).
  arena_run best_run(std::size_t need, std::uint64_t now,
                     const std::function<bool(const dao_tensor*)>& evictable);
  // The tensors compact_and_place would evict (policy order) so that the
  // kernel's missing tensors fit in the free bytes; false if they cannot.
  bool compaction_victims(const op& o, std::uint64_t now, std::vector<dao_tensor*>& victims,
                          std::size_t& host_need);
  // Whether compacting moves clearly fewer bytes than evicting the best run
  // for `t` (device to device bytes weighed lower than host transfers).
  bool compaction_cheaper(const op& o, dao_tensor& t, std::uint64_t now,
                          const std::function<bool(const dao_tensor*)>& evictable);
  bool host_room_for(std::size_t bytes, bool may_fail, const dao_tensor& t);
  void evict(dao_tensor& t);
  void fetch(dao_tensor& t);
  // When the resident tensors (the kernel's own among them) split the free
  // space so that no contiguous run fits: evicts, chosen by the policy one
  // tensor at a time, only what the kernel's missing tensors still need in
  // bytes, then slides every resident tensor toward offset 0 (device to
  // device copies on the compute stream, after the copy streams drain) so
  // that the free space is one block, and places the missing tensors there.
  bool compact_and_place(op& o, std::uint64_t now, std::unique_lock<std::mutex>& lock);
  // Copies `bytes` from `from` to `to` (to < from) inside the arena on the
  // compute stream, in ascending chunks that never overlap.
  void slide(std::size_t from, std::size_t to, std::size_t bytes);
  void prefetch_after(std::uint64_t now);
  void throttled_copy(stream_impl& s, void* dst, const void* src, std::size_t bytes);
  void* host_allocate(std::size_t bytes);
  void host_free(void* p, std::size_t bytes) noexcept;
  void* device_ptr(const dao_tensor& t) const noexcept {
    return static_cast<char*>(device_base_) + t.offset;
  }
  void set_device_bytes(std::int64_t delta) noexcept;

  dao_place device_{};
  dao_place host_place_{};
  system_resource* device_resource_ = nullptr;
  std::size_t budget_ = 0;
  void* device_base_ = nullptr;

  scorer scorer_;
  std::size_t prefetch_ = 2;
  std::size_t host_budget_ = 0;
  double bandwidth_ = 0;  // bytes per second, 0 = unlimited

  stream_object* compute_ = nullptr;
  stream_object* h2d_ = nullptr;
  stream_object* d2h_ = nullptr;
  std::unique_ptr<event_impl> h2d_ready_, d2h_ready_, d2h_order_;
  bool h2d_unwaited_ = false;   // H2D copies since h2d_ready_ was recorded
  bool d2h_unwaited_ = false;   // D2H copies since d2h_ready_ was recorded
  bool d2h_unordered_ = false;  // D2H copies the H2D stream has not waited for

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // the executor waits for work
  std::condition_variable done_cv_;  // synchronize / read wait for progress
  std::deque<op*> queue_;
  std::uint64_t clock_ = 0;
  std::uint64_t ops_submitted_ = 0;
  std::uint64_t ops_completed_ = 0;
  std::atomic<std::uint64_t> pushed_{0};  // ops_submitted_, read by the spinning executor
  std::atomic<bool> stopping_requested_{false};
  bool executor_idle_ = false;            // the executor sleeps on work_cv_
  std::uint64_t wake_at_ = UINT64_MAX;    // ops_completed_ that a waiter needs
  std::vector<void*> in_ptrs_, out_ptrs_;  // the executor's, for each kernel's pointers
  std::vector<std::unique_ptr<op>> spare_ops_;  // finished ops, for reuse
  std::uint64_t next_id_ = 0;
  bool stopping_ = false;
  bool failed_ = false;
  std::string fail_message_;
  std::vector<std::unique_ptr<dao_tensor>> tensors_;
  device_arena arena_;
  dao_tiered_stats stats_{};

  std::thread executor_;  // last: started once everything above exists
};

}  // namespace dao::detail
