// The device budget's blocks (see device_arena.hpp).
#include "tiered/device_arena.hpp"

#include <algorithm>
#include <cassert>

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

device_arena::device_arena(std::size_t capacity)
    : capacity_(capacity / kArenaGranule * kArenaGranule) {
  if (capacity_ > 0) {
    blocks_.push_back(arena_block{0, capacity_, nullptr});
    index_free(blocks_.back());
  }
}

// The free index's nodes are reused (issue 21): a take or a release, which
// every eviction and fetch makes, allocates nothing in steady state.
void device_arena::free_insert(const free_key& k) {
  if (spare_.empty()) {
    free_.insert(k);  // may throw: nothing changed then
    return;
  }
  std::set<free_key>::node_type node = std::move(spare_.back());
  spare_.pop_back();
  node.value() = k;
  free_.insert(std::move(node));
}

bool device_arena::free_erase(const free_key& k) noexcept {
  std::set<free_key>::node_type node = free_.extract(k);
  if (node.empty()) return false;
  // At most as many spare nodes as the index has held entries at once.
  try {
    spare_.push_back(std::move(node));
  } catch (...) {
    // Not kept: the node is freed with `node`.
  }
  return true;
}

void device_arena::index_free(const arena_block& b) {
  free_insert(free_key{b.size, b.offset});
  free_bytes_ += b.size;
}

void device_arena::unindex_free(const arena_block& b) noexcept {
  if (free_erase(free_key{b.size, b.offset})) free_bytes_ -= b.size;
}

long device_arena::find_free(std::size_t size) const noexcept {
  size = arena_round(size);
  auto it = free_.lower_bound(free_key{size, 0});
  if (it == free_.end()) return -1;
  // The block at that offset exists (binary search over the blocks).
  auto b = std::lower_bound(blocks_.begin(), blocks_.end(), it->second,
                            [](const arena_block& x, std::size_t o) { return x.offset < o; });
  return static_cast<long>(b - blocks_.begin());
}

bool device_arena::index_consistent() const {
  std::size_t n = 0, bytes = 0;
  for (const arena_block& b : blocks_) {
    if (b.owner != nullptr) continue;
    if (free_.count(free_key{b.size, b.offset}) == 0) return false;
    ++n;
    bytes += b.size;
  }
  return n == free_.size() && bytes == free_bytes_;
}

arena_run device_arena::find_run(std::size_t size,
                                 const std::function<bool(const tiered_tensor*)>& evictable,
                                 const std::function<void(arena_run&)>& score_run) const {
  size = arena_round(size);
  arena_run best;
  const std::size_t n = blocks_.size();
  auto usable = [&](std::size_t i) {
    return blocks_[i].owner == nullptr || evictable(blocks_[i].owner);
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!usable(i)) continue;
    std::size_t total = 0;
    std::size_t j = i;
    bool ok = false;
    for (; j < n && usable(j); ++j) {
      total += blocks_[j].size;
      if (total >= size) {
        ok = true;
        break;
      }
    }
    if (!ok) {
      // Nothing starting at i..j-1 can cover either: skip past the blocker.
      if (j >= n) break;
      i = j;
      continue;
    }
    arena_run run;
    run.first = i;
    run.last = j;
    run.found = true;
    score_run(run);
    const bool better =
        !best.found || run.score > best.score ||
        (run.score == best.score &&
         (run.copy_bytes < best.copy_bytes ||
          (run.copy_bytes == best.copy_bytes && run.evicted_bytes < best.evicted_bytes)));
    if (better) best = run;
  }
  return best;
}

std::size_t device_arena::take(std::size_t index, std::size_t size, tiered_tensor* owner) {
  size = arena_round(size);
  arena_block& b = blocks_.at(index);
  if (b.owner != nullptr || b.size < size) {
    throw error(DAO_ERR_INTERNAL, "tiered pool: arena block taken twice or too small");
  }
  const std::size_t offset = b.offset;
  if (b.size > size) {
    const arena_block rest{b.offset + size, b.size - size, nullptr};
    if (index + 1 < blocks_.size() && blocks_[index + 1].owner == nullptr) {
      arena_block& next = blocks_[index + 1];
      // Allocates first (may throw: nothing changed then).
      free_insert(free_key{next.size + rest.size, rest.offset});
      free_erase(free_key{next.size, next.offset});
      free_erase(free_key{b.size, b.offset});
      next.offset = rest.offset;
      next.size += rest.size;
    } else {
      blocks_.insert(blocks_.begin() + static_cast<long>(index) + 1, rest);  // may throw
      try {
        free_insert(free_key{rest.size, rest.offset});
      } catch (...) {
        blocks_.erase(blocks_.begin() + static_cast<long>(index) + 1);
        throw;
      }
      free_erase(free_key{blocks_[index].size, blocks_[index].offset});
    }
    arena_block& taken = blocks_[index];
    taken.size = size;
    taken.owner = owner;
    free_bytes_ -= size;
  } else {
    unindex_free(b);
    b.owner = owner;
  }
  return offset;
}

std::size_t device_arena::index_of(std::size_t offset) const {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                             [](const arena_block& b, std::size_t o) { return b.offset < o; });
  if (it == blocks_.end() || it->offset != offset) {
    throw error(DAO_ERR_INTERNAL, strprintf("tiered pool: no arena block at offset %zu", offset));
  }
  return static_cast<std::size_t>(it - blocks_.begin());
}

std::size_t device_arena::merge_unindexed(std::size_t first, std::size_t last) {
  std::size_t total = 0;
  for (std::size_t i = first; i <= last; ++i) {
    if (blocks_[i].owner != nullptr) {
      throw error(DAO_ERR_INTERNAL, "tiered pool: merging an owned arena block");
    }
    total += blocks_[i].size;
  }
  blocks_[first].size = total;
  blocks_.erase(blocks_.begin() + static_cast<long>(first) + 1,
                blocks_.begin() + static_cast<long>(last) + 1);
  index_free(blocks_[first]);
  return first;
}

std::size_t device_arena::merge_free(std::size_t first, std::size_t last) {
  for (std::size_t i = first; i <= last; ++i) unindex_free(blocks_[i]);
  return merge_unindexed(first, last);
}

std::size_t device_arena::vacate(std::size_t first, std::size_t last) {
  for (std::size_t i = first; i <= last; ++i) {
    if (blocks_.at(i).owner == nullptr) unindex_free(blocks_[i]);
    blocks_[i].owner = nullptr;
  }
  while (last + 1 < blocks_.size() && blocks_[last + 1].owner == nullptr) {
    unindex_free(blocks_[++last]);
  }
  while (first > 0 && blocks_[first - 1].owner == nullptr) unindex_free(blocks_[--first]);
  return merge_unindexed(first, last);
}

void device_arena::release(std::size_t offset) {
  std::size_t i = index_of(offset);
  if (blocks_[i].owner == nullptr) return;  // already free
  blocks_[i].owner = nullptr;
  std::size_t first = i;
  std::size_t last = i;
  if (i + 1 < blocks_.size() && blocks_[i + 1].owner == nullptr) {
    last = i + 1;
    unindex_free(blocks_[last]);
  }
  if (i > 0 && blocks_[i - 1].owner == nullptr) {
    first = i - 1;
    unindex_free(blocks_[first]);
  }
  merge_unindexed(first, last);
}

std::vector<arena_move> device_arena::compact() {
  std::vector<arena_move> moves;
  std::vector<arena_block> packed;
  packed.reserve(blocks_.size());
  std::size_t at = 0;
  for (const arena_block& b : blocks_) {
    if (b.owner == nullptr) continue;
    if (b.offset != at) moves.push_back(arena_move{b.owner, b.offset, at, b.size});
    packed.push_back(arena_block{at, b.size, b.owner});
    at += b.size;
  }
  if (at < capacity_) packed.push_back(arena_block{at, capacity_ - at, nullptr});
  blocks_.swap(packed);
  while (!free_.empty()) {
    const free_key k = *free_.begin();
    free_erase(k);
  }
  free_bytes_ = 0;
  if (at < capacity_) index_free(blocks_.back());
  return moves;
}

}  // namespace dao::detail
