// Eviction policies of a tiered pool: how a run of consecutive blocks is
// scored from what the access table says of its tensors. The executor evicts
// the run with the highest score (ties: fewest bytes copied).
//
// - belady: a tensor's score is its next use (never again: +infinity); a
//   run's is the smallest among its tensors, so the run whose nearest next
//   use is furthest ahead goes.
// - lru: a run's score is minus the latest last use among its tensors (the
//   run least recently used goes).
// - size_aware: evicting a tensor costs bytes / (next use - now), the bytes
//   that must come back weighed by how soon (0 if never used again); a run's
//   score is minus the sum, so runs of few bytes needed late go first.
// - callback: the user's function per tensor, summed over the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dao/tiered.h"

namespace dao::detail {

enum class evict_policy { belady, lru, size_aware, callback };

// Throws invalid_argument for an unknown name.
evict_policy parse_policy(const std::string& name, const std::string& context);
const char* policy_name(evict_policy p) noexcept;

struct scorer {
  evict_policy policy = evict_policy::belady;
  dao_score_fn callback = nullptr;
  void* user_data = nullptr;

  // Score of a run holding `tensors` (free blocks contribute nothing).
  double run_score(const std::vector<dao_tensor_access_info>& tensors) const;
};

}  // namespace dao::detail
