// Eviction scores (see policy.hpp).
#include "tiered/policy.hpp"

#include <algorithm>
#include <limits>

#include "core/callback_scope.hpp"
#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

evict_policy parse_policy(const std::string& name, const std::string& context) {
  if (name == "belady") return evict_policy::belady;
  if (name == "lru") return evict_policy::lru;
  if (name == "size_aware") return evict_policy::size_aware;
  if (name == "callback") return evict_policy::callback;
  throw invalid_argument(
      strprintf("%s: policy='%s' is unknown (expected belady, lru, size_aware or callback)",
                context.c_str(), name.c_str()));
}

const char* policy_name(evict_policy p) noexcept {
  switch (p) {
    case evict_policy::belady: return "belady";
    case evict_policy::lru: return "lru";
    case evict_policy::size_aware: return "size_aware";
    case evict_policy::callback: return "callback";
  }
  return "unknown";
}

double scorer::run_score(const std::vector<dao_tensor_access_info>& tensors) const {
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (policy) {
    case evict_policy::belady: {
      double score = inf;
      for (const auto& t : tensors) {
        if (t.next_use != UINT64_MAX) score = std::min(score, static_cast<double>(t.next_use));
      }
      return score;
    }
    case evict_policy::lru: {
      double latest = -1;
      for (const auto& t : tensors) latest = std::max(latest, static_cast<double>(t.last_use));
      return -latest;
    }
    case evict_policy::size_aware: {
      double cost = 0;
      for (const auto& t : tensors) {
        if (t.next_use == UINT64_MAX) continue;
        const double distance = t.next_use > t.now ? static_cast<double>(t.next_use - t.now) : 1.0;
        cost += static_cast<double>(t.bytes) / distance;
      }
      return -cost;
    }
    case evict_policy::callback: {
      // Runs with the pool's lock held: every pool call refuses inside it
      // (tiered_pool::refuse_reentry) rather than deadlock.
      const callback_scope scope(callback_scope::kind::scoring, this);
      double sum = 0;
      for (const auto& t : tensors) sum += callback != nullptr ? callback(user_data, &t) : 0.0;
      return sum;
    }
  }
  return 0;
}

}  // namespace dao::detail
