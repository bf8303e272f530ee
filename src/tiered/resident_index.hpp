// The resident tensors of a tiered pool ordered as the eviction policy ranks
// them, so that choosing what to evict does not score every run of the arena
// and sort every resident tensor at each eviction (issue 21: that made the
// executor cost ~200 us per kernel with 10^4 live tensors at a 50 % budget).
//
// Only for the policies whose run score is the smallest score among the
// run's tensors, each tensor's own score depending on the tensor alone:
// belady (its next use; never again: +infinity) and lru (minus its last
// use). size_aware depends on the current time and callback on the user, so
// they keep the full scan.
//
// Order (best to evict first): score descending, then bytes that evicting
// copies ascending, then bytes ascending, then offset ascending — the
// find_run tie-breaks of a run of one tensor, so that a search in this order
// can stop as soon as no run holding the next tensor can beat the best run
// found (placement.cpp).
//
// Every member: under the pool's mutex. Keys must be refreshed (update())
// whenever what they are made of changes: a tensor's accesses (advance,
// append_access), host_valid, released, its offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "tiered/device_arena.hpp"
#include "tiered/policy.hpp"
#include "tiered/resident_key.hpp"
#include "tiered/tensor.hpp"

namespace dao::detail {

class resident_index {
 public:
  using set_type = resident_set;

  explicit resident_index(evict_policy policy) noexcept : policy_(policy) {}

  // Whether the policy's run score is the smallest of its tensors' scores.
  bool supported() const noexcept {
    return policy_ == evict_policy::belady || policy_ == evict_policy::lru;
  }
  bool active() const noexcept { return active_; }

  // Indexes every tensor owning one of `blocks` (built on the first
  // eviction: a pool where everything fits never pays for the index). Stays
  // inactive when memory runs out.
  void activate(const std::vector<arena_block>& blocks) noexcept;

  // `t` became resident / is resident no longer / may have changed.
  void add(tiered_tensor& t) noexcept;
  void remove(tiered_tensor& t) noexcept;
  void update(tiered_tensor& t) noexcept;

  // The key `t` has now.
  resident_key key_of(tiered_tensor& t) const noexcept;

  const set_type& entries() const noexcept { return set_; }

  // Whether every indexed key is current and every owner of `blocks` is
  // indexed (a test hook; linear).
  bool consistent(const std::vector<arena_block>& blocks) const;

 private:
  void deactivate() noexcept;

  evict_policy policy_;
  bool active_ = false;
  set_type set_;
  // Nodes of removed entries, reused by add(): no heap allocation per
  // eviction in steady state.
  std::vector<set_type::node_type> spare_;
};

}  // namespace dao::detail
