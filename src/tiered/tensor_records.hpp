// The records of a tiered pool's tensors: where each tensor's record lives
// (its address is the tensor's C handle, so a record never moves), and the
// reuse of the records of released tensors, so that a long-lived pool that
// creates temporary tensors keeps a bounded number of records (issue 20: it
// kept one per tensor ever created).
//
// A released tensor's record comes back here once no queued operation refers
// to it any more (the executor runs the tensor's release operation, the last
// one queued for it). It keeps its magic value and its `released` mark, so a
// use of the stale handle is refused with "already released"; records are
// reused first in, first out, and only when more than kQuarantine of them are
// free, so that a stale handle is detected for at least the next kQuarantine
// tensor creations. Every call: with the pool's mutex held.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "tiered/tensor.hpp"

namespace dao::detail {

class tensor_records {
 public:
  // Records kept free (and refusing their stale handles) before one is
  // reused.
  static constexpr std::size_t kQuarantine = 256;

  tensor_records() = default;
  tensor_records(const tensor_records&) = delete;
  tensor_records& operator=(const tensor_records&) = delete;

  // A record for a new tensor, every field as a new tiered_tensor has it but
  // the copy event (kept for reuse). May throw std::bad_alloc: nothing
  // changed then.
  tiered_tensor* make();

  // Takes back the record of a released tensor whose memory is freed and
  // that no queued operation refers to. Never throws (no allocation).
  void reclaim(tiered_tensor& t) noexcept;

  // Every record (live, released, free), for the pool's destructor.
  template <class Fn>
  void for_each(Fn fn) {
    for (auto& t : all_) fn(*t);
  }

  // Records held (live, released or free): the bound the reuse keeps.
  std::size_t size() const noexcept { return all_.size(); }
  // Records free for reuse.
  std::size_t free_count() const noexcept { return free_count_; }

 private:
  std::vector<std::unique_ptr<tiered_tensor>> all_;
  tiered_tensor* free_head_ = nullptr;  // oldest free record (first reused)
  tiered_tensor* free_tail_ = nullptr;
  std::size_t free_count_ = 0;
};

}  // namespace dao::detail
