// The key of a resident tensor in placement's index of resident tensors
// (resident_index.hpp), apart so that a tensor's record (tensor.hpp) can hold
// its own entry of that index: removing or re-keying a tensor then starts
// from its entry instead of searching the tree for it (issue 21).
#pragma once

#include <cstddef>
#include <functional>
#include <set>

namespace dao::detail {

struct tiered_tensor;

struct resident_key {
  double score = 0;        // the policy's score of the tensor alone
  std::size_t copy = 0;    // bytes evicting it copies to the host
  std::size_t bytes = 0;   // its bytes
  std::size_t offset = 0;  // in the arena
  tiered_tensor* t = nullptr;
};

struct resident_order {
  bool operator()(const resident_key& a, const resident_key& b) const noexcept {
    if (a.score != b.score) return a.score > b.score;
    if (a.copy != b.copy) return a.copy < b.copy;
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    if (a.offset != b.offset) return a.offset < b.offset;
    return std::less<tiered_tensor*>()(a.t, b.t);
  }
};

using resident_set = std::set<resident_key, resident_order>;

}  // namespace dao::detail
