// The resident tensors ordered by the eviction policy (see resident_index.hpp).
#include "tiered/resident_index.hpp"

#include <limits>
#include <new>
#include <utility>

namespace dao::detail {

resident_key resident_index::key_of(tiered_tensor& t) const noexcept {
  resident_key k;
  if (policy_ == evict_policy::belady) {
    const std::uint64_t next = next_use(t);
    // As scorer::run_score computes it for a run of this tensor alone.
    k.score =
        next == UINT64_MAX ? std::numeric_limits<double>::infinity() : static_cast<double>(next);
  } else {
    k.score = -static_cast<double>(t.last_use);
  }
  k.copy = needs_copy(t) ? t.bytes : 0;
  k.bytes = t.bytes;
  k.offset = t.offset;
  k.t = &t;
  return k;
}

static void store_key(tiered_tensor& t, const resident_key& k) noexcept {
  t.index_score = k.score;
  t.index_copy = k.copy;
  t.index_offset = k.offset;
}

void resident_index::activate(const std::vector<arena_block>& blocks) noexcept {
  if (active_ || !supported()) return;
  active_ = true;
  for (const arena_block& b : blocks) {
    if (b.owner == nullptr) continue;
    add(*b.owner);
    if (!active_) return;  // out of memory
  }
}

void resident_index::deactivate() noexcept {
  for (const resident_key& k : set_) k.t->indexed = false;
  set_.clear();
  spare_.clear();
  active_ = false;
}

void resident_index::add(tiered_tensor& t) noexcept {
  if (!active_ || t.indexed) return;
  const resident_key k = key_of(t);
  if (!spare_.empty()) {
    set_type::node_type node = std::move(spare_.back());
    spare_.pop_back();
    node.value() = k;
    t.index_entry = set_.insert(std::move(node)).position;
  } else {
    try {
      t.index_entry = set_.insert(k).first;
    } catch (const std::bad_alloc&) {
      deactivate();
      return;
    }
  }
  store_key(t, k);
  t.indexed = true;
}

void resident_index::remove(tiered_tensor& t) noexcept {
  if (!t.indexed) return;
  t.indexed = false;
  // Its own entry: no search of the tree (issue 21).
  set_type::node_type node = set_.extract(t.index_entry);
  t.index_entry = set_type::iterator{};
  try {
    spare_.push_back(std::move(node));  // strong guarantee: on failure `node` frees it
  } catch (const std::bad_alloc&) {
  }
}

void resident_index::update(tiered_tensor& t) noexcept {
  if (!t.indexed) return;
  const resident_key k = key_of(t);
  if (k.score == t.index_score && k.copy == t.index_copy && k.offset == t.index_offset) return;
  // Re-keyed from its own entry: the tree is searched once (for the new
  // place), not twice. The node is reused: nothing allocated.
  set_type::node_type node = set_.extract(t.index_entry);
  node.value() = k;
  t.index_entry = set_.insert(std::move(node)).position;
  store_key(t, k);
}

bool resident_index::consistent(const std::vector<arena_block>& blocks) const {
  if (!active_) return true;
  std::size_t owners = 0;
  for (const arena_block& b : blocks) {
    if (b.owner == nullptr) continue;
    ++owners;
    if (!b.owner->indexed) return false;
    const resident_key k = key_of(*b.owner);
    auto it = set_.find(k);
    if (it == set_.end() || it->t != b.owner || it != b.owner->index_entry) return false;
  }
  return owners == set_.size();
}

}  // namespace dao::detail
