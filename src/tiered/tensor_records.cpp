// The records of a tiered pool's tensors and their reuse (see
// tensor_records.hpp).
#include "tiered/tensor_records.hpp"

#include <utility>

namespace dao::detail {

tiered_tensor* tensor_records::make() {
  if (free_count_ > kQuarantine) {
    tiered_tensor* t = free_head_;
    free_head_ = t->next_free;
    if (free_head_ == nullptr) free_tail_ = nullptr;
    --free_count_;
    std::unique_ptr<event_impl> transit = std::move(t->transit);
    *t = tiered_tensor{};  // a new tensor: magic set, nothing released or queued
    t->transit = std::move(transit);
    return t;
  }
  auto fresh = std::make_unique<tiered_tensor>();
  all_.push_back(std::move(fresh));  // strong guarantee: on a throw, `fresh` is freed
  return all_.back().get();
}

void tensor_records::reclaim(tiered_tensor& t) noexcept {
  // What the freed tensor still holds: the executed part of its access row.
  std::vector<tensor_access>().swap(t.accesses);
  t.cursor = 0;
  t.next_free = nullptr;
  if (free_tail_ == nullptr) {
    free_head_ = &t;
  } else {
    free_tail_->next_free = &t;
  }
  free_tail_ = &t;
  ++free_count_;
}

}  // namespace dao::detail
