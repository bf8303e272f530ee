// Tiered pools (include/dao/tiered.h), the client side: the calls behind
// dao_tiered_*, dao_tensor_* and dao_kernel_submit. It checks what callers
// pass, registers tensors, appends each operation to the access table (each
// tensor's list of (logical time, read/write)) and queues it for the
// executor, all under the pool's mutex; reads and synchronize wait for the
// executor.
//
// The parts, each in its own file: tiered_options (the config string),
// tier_memory (device range and host tier), transfers (streams and copies),
// placement (arena, eviction policy, compaction, prefetch), executor (queue
// and worker thread), tensor (a tensor's state and access table row),
// tensor_records (where the tensors' records live, and their reuse).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "dao/tiered.h"
#include "tiered/executor.hpp"
#include "tiered/placement.hpp"
#include "tiered/policy.hpp"
#include "tiered/tensor.hpp"
#include "tiered/tensor_records.hpp"
#include "tiered/tier_memory.hpp"
#include "tiered/tiered_options.hpp"
#include "tiered/transfers.hpp"

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
  tiered_tensor* create_tensor(std::size_t bytes);
  void write(tiered_tensor& t, const void* src, std::size_t bytes);
  void read(tiered_tensor& t, void* dst, std::size_t bytes);
  dao_tensor_state state(const tiered_tensor& t);
  void release(tiered_tensor& t);
  // dao_tensor_retire: no data needed after the uses queued so far.
  void retire(tiered_tensor& t);
  void submit(dao_kernel_fn fn, void* user_data, tiered_tensor* const* inputs,
              std::size_t input_count, tiered_tensor* const* outputs, std::size_t output_count);
  void synchronize();
  void trim();
  void read_stats(dao_tiered_stats& out);
  void read_link_stats(dao_tiered_link_stats& out);
  // Throws invalid_state when `function` would wait for ever: called from a
  // scoring callback of any pool, from a kernel of this pool (it would wait
  // for that kernel), or from a host function on one of this pool's streams
  // (a kernel may queue one on its stream; the executor waits for it).
  void refuse_on_executor(const char* function) const;
  // Throws invalid_state when called from a scoring callback of any tiered
  // pool: it runs with its pool's lock held, so no pool may be called there
  // (this pool's lock would deadlock; another's would invert the order).
  static void refuse_in_scoring(const char* function);
  // Tensor records held (live, released or free for reuse): a test hook for
  // the bound that record reuse keeps.
  std::size_t record_count() const;
  // The stream kernels run on: the C API gives it the handle kernels get.
  stream_object& compute_stream() noexcept { return copies_.compute_stream(); }

 private:
  // Checks a tensor passed in (caller holds mu_).
  void check_tensor(const tiered_tensor* t, const char* function, const char* name) const;
  void require_not_failed(const char* function) const;

  // In construction order: the options are checked before anything is
  // allocated, and the executor starts once everything else exists.
  const tiered_options options_;
  mutable std::mutex mu_;
  dao_tiered_stats stats_{};  // under mu_
  scorer scorer_;             // under mu_ (the callback is set before the first submit)
  tier_memory memory_;
  transfers copies_;
  placement placement_;
  tensor_records records_;     // under mu_
  std::uint64_t next_id_ = 0;  // under mu_
  std::uint64_t clock_ = 0;    // logical time of the last operation, under mu_
  executor executor_;          // last
};

}  // namespace dao::detail
