// Where a tiered pool's tensors live: arena placement, eviction by policy,
// compaction and prefetching (see placement.hpp).
#include "tiered/placement.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "tiered/transfers.hpp"
#include "tiered/unlocked.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// A byte moved device to device (compaction) is weighed as a quarter of a
// byte moved over the host link; compaction is chosen over evicting a run
// only when its weighed bytes are under half of the run's.
constexpr double kD2dWeight = 0.25;
constexpr double kCompactRatio = 0.5;

}  // namespace

placement::placement(std::size_t device_budget, const scorer& scorer, tier_memory& memory,
                     transfers& copies, dao_tiered_stats& stats)
    : arena_(device_budget),
      scorer_(scorer),
      memory_(memory),
      copies_(copies),
      stats_(stats),
      index_(scorer.policy) {}

void placement::fail(std::string message) {
  if (failure_.empty()) failure_ = std::move(message);
}

void placement::set_device_bytes(std::int64_t delta) noexcept {
  stats_.device_bytes =
      static_cast<std::uint64_t>(static_cast<std::int64_t>(stats_.device_bytes) + delta);
  stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, stats_.device_bytes);
}

void placement::release_device(tiered_tensor& t) {
  index_.remove(t);
  arena_.release(t.offset);
  t.resident = false;
  set_device_bytes(-static_cast<std::int64_t>(t.bytes));
}

bool placement::host_room_for(std::size_t bytes, bool may_fail, const tiered_tensor& t) {
  if (memory_.host_fits(bytes)) return true;
  if (may_fail) {
    fail(strprintf(
        "the host tier is full: making room for tensor #%llu (%zu bytes) needs %zu bytes more "
        "in the host tier, which holds %llu of its host_budget of %zu bytes; the kernel was "
        "not run and no data was lost",
        static_cast<unsigned long long>(t.id), t.bytes, bytes,
        static_cast<unsigned long long>(stats_.host_bytes), memory_.host_budget()));
  }
  return false;
}

void placement::evict(tiered_tensor& t) {
  index_.remove(t);
  copies_.note_vacated(t);
  if (needs_copy(t)) {
    if (t.host == nullptr) t.host = memory_.host_allocate(t.bytes);
    copies_.copy_to_host(t, device_ptr(t));
    t.host_valid = true;
    ++stats_.evictions;
    stats_.bytes_evicted += t.bytes;
  }
  t.resident = false;
  t.prefetched = false;
  set_device_bytes(-static_cast<std::int64_t>(t.bytes));
  if (!t.host_valid && t.host != nullptr) {
    // Never needed again and released: nothing to keep.
    memory_.host_free(t.host, t.bytes);
    t.host = nullptr;
  }
}

void placement::fetch(tiered_tensor& t) {
  copies_.copy_to_device(t, device_ptr(t));
  ++stats_.fetches;
  stats_.bytes_fetched += t.bytes;
}

void placement::score_run(arena_run& r, std::uint64_t now) {
  infos_.clear();
  const auto& blocks = arena_.blocks();
  for (std::size_t i = r.first; i <= r.last; ++i) {
    const tiered_tensor* owner = blocks[i].owner;
    if (owner == nullptr) continue;
    infos_.push_back(access_info(*owner, now));
    r.evicted_bytes += owner->bytes;
    if (needs_copy(*owner)) r.copy_bytes += owner->bytes;
  }
  r.score = scorer_.run_score(infos_);
}

arena_run placement::scan_runs(std::size_t need, std::uint64_t now, const evictable_fn& evictable) {
  return arena_.find_run(need, evictable, [&](arena_run& r) { score_run(r, now); });
}

bool placement::use_index() noexcept {
  if (!index_.supported()) return false;
  if (!index_.active()) index_.activate(arena_.blocks());
  return index_.active();
}

namespace {

// find_run's order: highest score, then fewest bytes copied, then fewest
// evicted, then lowest address.
bool better_run(const arena_run& r, const arena_run& best) noexcept {
  if (!best.found) return true;
  if (r.score != best.score) return r.score > best.score;
  if (r.copy_bytes != best.copy_bytes) return r.copy_bytes < best.copy_bytes;
  if (r.evicted_bytes != best.evicted_bytes) return r.evicted_bytes < best.evicted_bytes;
  return r.first < best.first;
}

}  // namespace

// A run's score is the smallest of its tensors' scores (the index's policies),
// its copied and evicted bytes at least those of any of its tensors: no run
// holding a tensor can beat that tensor's key. So the tensors are visited in
// the index's order, each with every minimal run that holds it (as find_run
// enumerates them: one per first block), until the next tensor's key is
// below the best run found. Among runs equal in all but the address, a run
// holding tensor x alone (and free blocks, merged: at most one before it)
// starts at x's block or the one before, and the index orders such tensors
// by address.
arena_run placement::indexed_run(std::size_t need, std::uint64_t now, const evictable_fn& evictable,
                                 bool& done) {
  done = true;
  const std::size_t size = arena_round(need);
  arena_run best;
  if (arena_.find_free(size) >= 0) {
    // A free block alone covers it: a run without tensors (the scan's case).
    done = false;
    return best;
  }
  const auto& blocks = arena_.blocks();
  const std::size_t n = blocks.size();
  auto usable = [&](std::size_t i) {
    return blocks[i].owner == nullptr || evictable(blocks[i].owner);
  };
  // Past this many blocks visited, a scan is cheaper.
  const std::size_t limit = 4 * n + 64;
  std::size_t work = 0;
  for (const resident_key& k : index_.entries()) {
    bool same = false;  // the key ties the best run in all but the address
    if (best.found) {
      if (k.score != best.score) {
        if (k.score < best.score) break;
      } else if (k.copy != best.copy_bytes) {
        if (k.copy > best.copy_bytes) break;
      } else if (k.bytes != best.evicted_bytes) {
        if (k.bytes > best.evicted_bytes) break;
      } else {
        same = true;
      }
    }
    tiered_tensor* x = k.t;
    if (!evictable(x)) continue;
    const std::size_t b = arena_.index_of(x->offset);
    if (same && b > best.first + 1) break;
    // The runs [i, j] with i <= b <= j, for i = b, b - 1, ...
    std::size_t before = 0;  // bytes of the blocks i .. b - 1
    for (std::size_t i = b;; --i) {
      if (i < b) {
        if (!usable(i)) break;
        before += blocks[i].size;
        if (before >= size) break;  // the run from i (and before) ends before b
      }
      std::size_t total = before;
      std::size_t j = b;
      bool covered = false;
      for (; j < n && usable(j); ++j) {
        total += blocks[j].size;
        ++work;
        if (total >= size) {
          covered = true;
          break;
        }
      }
      if (covered) {
        arena_run r;
        r.first = i;
        r.last = j;
        r.found = true;
        score_run(r, now);
        work += j - i + 1;
        if (better_run(r, best)) best = r;
      }
      if (work > limit) {
        done = false;
        return arena_run{};
      }
      if (i == 0) break;
    }
  }
  return best;
}

arena_run placement::best_run(std::size_t need, std::uint64_t now, const evictable_fn& evictable) {
  if (use_index()) {
    bool done = false;
    arena_run run = indexed_run(need, now, evictable, done);
    if (done) {
#ifndef NDEBUG
      // Debug builds check the index's choice against the scan's.
      const arena_run scan = scan_runs(need, now, evictable);
      if (scan.found != run.found ||
          (run.found && (scan.first != run.first || scan.last != run.last))) {
        throw error(DAO_ERR_INTERNAL,
                    "tiered pool: the index of resident tensors chose another run than the scan");
      }
#endif
      return run;
    }
  }
  return scan_runs(need, now, evictable);
}

bool placement::make_resident(tiered_tensor& t, std::uint64_t now, const evictable_fn& evictable,
                              bool may_fail, const arena_run* known) {
  const std::size_t need = arena_round(t.bytes);
  long index = arena_.find_free(need);
  if (index < 0) {
    const arena_run run = known != nullptr ? *known : best_run(need, now, evictable);
    const auto& blocks = arena_.blocks();
    if (!run.found) return false;
    // Host room for the copies first: all or nothing.
    std::size_t host_need = 0;
    for (std::size_t i = run.first; i <= run.last; ++i) {
      const tiered_tensor* owner = blocks[i].owner;
      if (owner != nullptr && needs_copy(*owner) && owner->host == nullptr) {
        host_need += owner->bytes;
      }
    }
    if (!host_room_for(host_need, may_fail, t)) return false;
    // Reused from eviction to eviction: no heap allocation per eviction.
    std::vector<tiered_tensor*>& victims = run_victims_;
    victims.clear();
    for (std::size_t i = run.first; i <= run.last; ++i) {
      if (blocks[i].owner != nullptr) victims.push_back(blocks[i].owner);
    }
    try {
      for (tiered_tensor* v : victims) evict(*v);
    } catch (const error& e) {
      // Host allocation failed: what was evicted is on the host, the rest
      // stays on the device.
      for (tiered_tensor* v : victims) {
        if (!v->resident) arena_.release(v->offset);
      }
      if (may_fail) {
        fail(strprintf("the host tier could not take an evicted tensor: %s; the kernel was not "
                       "run and no data was lost",
                       e.what()));
      }
      return false;
    }
    index = static_cast<long>(arena_.vacate(run.first, run.last));
  }
  t.offset = arena_.take(static_cast<std::size_t>(index), need, &t);
  if (t.host_valid) {
    // Resident only once the copy is under way: a prefetch whose copy fails
    // is skipped, and must not leave a tensor "on the device" without data.
    try {
      fetch(t);
    } catch (...) {
      arena_.release(t.offset);
      throw;
    }
  }
  t.resident = true;
  index_.add(t);
  set_device_bytes(static_cast<std::int64_t>(t.bytes));
  return true;
}

bool placement::compaction_victims(const std::vector<tiered_tensor*>& tensors, std::uint64_t now,
                                   std::vector<tiered_tensor*>& victims, std::size_t& host_need) {
  victims.clear();
  host_need = 0;
  std::size_t need = 0;
  for (const tiered_tensor* t : tensors) {
    if (!t->resident) need += arena_round(t->bytes);
  }
  std::size_t room = arena_.free_bytes();
  if (room < need) {
    if (use_index()) {
      indexed_victims(need, room, victims, host_need);
#ifndef NDEBUG
      // Debug builds check the index's choice against the sort's.
      std::vector<tiered_tensor*> sorted;
      std::size_t sorted_need = 0;
      sorted_victims(now, need, arena_.free_bytes(), sorted, sorted_need);
      if (sorted != victims || sorted_need != host_need) {
        throw error(DAO_ERR_INTERNAL,
                    "tiered pool: the index of resident tensors chose other victims than the sort");
      }
#endif
    } else {
      room = sorted_victims(now, need, room, victims, host_need);
    }
    if (room < need) return false;
  }
  return true;
}

std::size_t placement::sorted_victims(std::uint64_t now, std::size_t need, std::size_t room,
                                      std::vector<tiered_tensor*>& victims,
                                      std::size_t& host_need) {
  // The policy's choice, tensor by tensor: placement no longer matters.
  struct candidate {
    tiered_tensor* t;
    double score;
    std::size_t copy_bytes;
  };
  std::vector<candidate> candidates;
  std::vector<dao_tensor_access_info> info(1);
  for (const arena_block& b : arena_.blocks()) {
    tiered_tensor* owner = b.owner;
    if (owner == nullptr || owner->pinned) continue;
    info[0] = access_info(*owner, now);
    candidates.push_back(
        candidate{owner, scorer_.run_score(info), needs_copy(*owner) ? owner->bytes : 0});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const candidate& x, const candidate& y) {
                     if (x.score != y.score) return x.score > y.score;
                     return x.copy_bytes < y.copy_bytes;
                   });
  for (const candidate& c : candidates) {
    if (room >= need) break;
    victims.push_back(c.t);
    room += arena_round(c.t->bytes);
    if (c.copy_bytes > 0 && c.t->host == nullptr) host_need += c.t->bytes;
  }
  return room;
}

// sorted_victims through the index: its order is the sort's (score, then
// bytes copied) but for tensors equal in both, which the sort keeps in
// address order and the index orders by bytes first; those are merged back
// into address order, one run of the index per size.
void placement::indexed_victims(std::size_t need, std::size_t& room,
                                std::vector<tiered_tensor*>& victims, std::size_t& host_need) {
  const auto& entries = index_.entries();
  auto it = entries.begin();
  while (room < need && it != entries.end()) {
    const double score = it->score;
    const std::size_t copy = it->copy;
    heads_.clear();
    auto g = it;
    while (g != entries.end() && g->score == score && g->copy == copy) {
      resident_key last;
      last.score = score;
      last.copy = copy;
      last.bytes = g->bytes;
      last.offset = SIZE_MAX;
      const auto end = entries.upper_bound(last);
      heads_.emplace_back(g, end);
      g = end;
    }
    while (room < need) {
      std::size_t pick = heads_.size();
      for (std::size_t h = 0; h < heads_.size(); ++h) {
        if (heads_[h].first == heads_[h].second) continue;
        if (pick == heads_.size() || heads_[h].first->offset < heads_[pick].first->offset) pick = h;
      }
      if (pick == heads_.size()) break;
      tiered_tensor* x = heads_[pick].first->t;
      ++heads_[pick].first;
      if (x->pinned) continue;
      victims.push_back(x);
      room += arena_round(x->bytes);
      if (copy > 0 && x->host == nullptr) host_need += x->bytes;
    }
    it = g;
  }
}

bool placement::compact_and_place(const std::vector<tiered_tensor*>& tensors, std::uint64_t now,
                                  std::unique_lock<std::mutex>& lock) {
  std::vector<tiered_tensor*>& victims = compact_victims_;
  std::size_t host_need = 0;
  if (!compaction_victims(tensors, now, victims, host_need)) return false;
  if (!victims.empty()) {
    if (!host_room_for(host_need, true, *tensors.front())) return false;
    for (tiered_tensor* v : victims) {
      try {
        evict(*v);
      } catch (const error& e) {
        // What was evicted is on the host; the rest stays on the device.
        for (tiered_tensor* w : victims) {
          if (!w->resident) arena_.release(w->offset);
        }
        fail(strprintf("the host tier could not take an evicted tensor: %s; the kernel was not "
                       "run and no data was lost",
                       e.what()));
        return false;
      }
    }
    for (tiered_tensor* v : victims) arena_.release(v->offset);
  }
  // Nothing may still read or write the arena while tensors move: the
  // evictions above (and earlier ones) read from where others will land,
  // fetches and prefetches write into tensors that move.
  {
    unlocked u(lock);
    copies_.wait_copies();
  }
  const std::vector<arena_move> moves = arena_.compact();
  for (const arena_move& m : moves) {
    copies_.slide(memory_.device_ptr(0), m.from, m.to, m.size);
    m.owner->offset = m.to;
    index_.update(*m.owner);
  }
  if (!moves.empty()) {
    // Fetches below land where the moved tensors were; later evictions read
    // where they are now.
    unlocked u(lock);
    copies_.synchronize_compute();
  }
  for (tiered_tensor* t : tensors) {
    if (t->resident) continue;
    const long index = arena_.find_free(t->bytes);
    if (index < 0) {
      throw error(DAO_ERR_INTERNAL, "tiered pool: a kernel does not fit after compaction");
    }
    t->offset = arena_.take(static_cast<std::size_t>(index), arena_round(t->bytes), t);
    t->resident = true;
    index_.add(*t);
    set_device_bytes(static_cast<std::int64_t>(t->bytes));
    if (t->host_valid) fetch(*t);
  }
  return true;
}

bool placement::compaction_cheaper(const std::vector<tiered_tensor*>& tensors, tiered_tensor& t,
                                   std::uint64_t now, const evictable_fn& evictable,
                                   arena_run& run) {
  run = best_run(arena_round(t.bytes), now, evictable);
  if (!run.found) return false;  // compaction is the fallback anyway
  double run_bytes = 0;
  const auto& blocks = arena_.blocks();
  for (std::size_t i = run.first; i <= run.last; ++i) {
    const tiered_tensor* owner = blocks[i].owner;
    if (owner == nullptr) continue;
    if (needs_copy(*owner)) run_bytes += static_cast<double>(owner->bytes);
    if (next_use(*owner) != UINT64_MAX) run_bytes += static_cast<double>(owner->bytes);
  }
  if (run_bytes == 0) return false;
  std::vector<tiered_tensor*>& victims = compact_victims_;
  std::size_t host_need = 0;
  if (!compaction_victims(tensors, now, victims, host_need)) return false;
  double compact_bytes = 0;
  for (const tiered_tensor* v : victims) {
    if (needs_copy(*v)) compact_bytes += static_cast<double>(v->bytes);
    if (next_use(*v) != UINT64_MAX) compact_bytes += static_cast<double>(v->bytes);
  }
  if (compact_bytes >= kCompactRatio * run_bytes) return false;
  std::size_t cursor = 0;
  double slid = 0;
  for (const arena_block& b : blocks) {
    if (b.owner == nullptr) continue;
    if (std::find(victims.begin(), victims.end(), b.owner) != victims.end()) continue;
    if (b.offset != cursor) slid += static_cast<double>(b.size);
    cursor += b.size;
  }
  compact_bytes += kD2dWeight * slid;
  return compact_bytes < kCompactRatio * run_bytes;
}

bool placement::place_kernel(const std::vector<tiered_tensor*>& tensors, std::uint64_t now,
                             std::unique_lock<std::mutex>& lock, std::string& failure) {
  failure_.clear();
  auto evictable = [](const tiered_tensor* x) { return !x->pinned; };
  bool placed = true;
  for (tiered_tensor* t : tensors) {
    if (t->resident) continue;
    // The best run that compaction_cheaper found, which make_resident
    // evicts: nothing changes in between, so it is not searched twice.
    arena_run run;
    bool known = false;
    if (arena_.find_free(t->bytes) < 0) {
      bool compact = arena_.free_bytes() >= arena_round(t->bytes);
      if (!compact) {
        compact = compaction_cheaper(tensors, *t, now, evictable, run);
        known = true;
      }
      if (compact) {
        // The free bytes suffice but are split, or compaction (and evicting
        // only the shortfall) moves clearly fewer bytes than evicting the
        // best run: compact rather than evict.
        placed = false;
        break;
      }
    }
    if (!make_resident(*t, now, evictable, true, known ? &run : nullptr)) {
      placed = false;
      break;
    }
  }
  if (!placed && failure_.empty()) placed = compact_and_place(tensors, now, lock);
  failure.swap(failure_);
  return placed && failure.empty();
}

void placement::prefetch(tiered_tensor& t, std::uint64_t target) {
  if (t.resident || !t.host_valid || t.freed || t.host == nullptr) return;
  auto evictable = [&](const tiered_tensor* x) { return !x->pinned && next_use(*x) > target; };
  bool placed = false;
  try {
    placed = make_resident(t, target, evictable, false);
  } catch (const error&) {
    placed = false;
  }
  if (placed) {
    t.prefetched = true;
    ++stats_.prefetches;
  }
}

void placement::take_host_buffer(tiered_tensor& t, void* buffer, std::unique_lock<std::mutex>& lock,
                                 bool keep_device) {
  if (t.host != nullptr || t.resident) {
    // Copies may still read or write the old buffers.
    unlocked u(lock);
    copies_.wait_copies();
  }
  if (t.host != nullptr) memory_.host_free(t.host, t.bytes);
  if (t.resident && !keep_device) release_device(t);
  t.host = buffer;
  t.host_valid = true;
  t.prefetched = false;
}

bool placement::write_goes_to_device(const tiered_tensor& t, std::uint64_t now) const {
  // Not after dao_tiered_trim() (the range is given back until a kernel
  // takes it again), and not for data that a read, or nothing, uses next:
  // such a copy would cross the link for nothing (with a hostile 1 B/s link
  // it took for ever, and the pool's synchronize waited for it).
  if (!memory_.device_held()) return false;
  const tensor_access* next = access_after(t, now);
  if (next == nullptr || !next->kernel) return false;
  return t.resident || arena_.find_free(arena_round(t.bytes)) >= 0;
}

void placement::write_to_device(tiered_tensor& t) {
  const bool had_block = t.resident;
  if (!had_block) {
    const long index = arena_.find_free(arena_round(t.bytes));
    if (index < 0) return;  // cannot happen after write_goes_to_device
    t.offset = arena_.take(static_cast<std::size_t>(index), arena_round(t.bytes), &t);
  }
  try {
    // Ordered as a fetch: after every eviction's device reads (it may land
    // where they read); the next kernel's fence waits for it.
    copies_.copy_to_device(t, device_ptr(t));
  } catch (...) {
    // Not queued: the data stays on the host alone (its next use fetches it).
    if (had_block) {
      release_device(t);
    } else {
      arena_.release(t.offset);
    }
    return;
  }
  if (!had_block) {
    t.resident = true;
    index_.add(t);
    set_device_bytes(static_cast<std::int64_t>(t.bytes));
  }
  ++device_writes_;
  device_write_bytes_ += t.bytes;
}

void placement::free_memory(tiered_tensor& t) {
  if (t.resident) release_device(t);
  if (t.host != nullptr) {
    // A copy may still be reading or writing it.
    copies_.settle_copies();
    memory_.host_free(t.host, t.bytes);
    t.host = nullptr;
  }
  t.host_valid = false;
  t.prefetched = false;
}

bool placement::trim(std::unique_lock<std::mutex>& lock, std::string& failure) {
  std::vector<tiered_tensor*> resident;
  std::size_t host_need = 0;
  for (const arena_block& b : arena_.blocks()) {
    if (b.owner == nullptr) continue;
    resident.push_back(b.owner);
    if (needs_copy(*b.owner) && b.owner->host == nullptr) host_need += b.owner->bytes;
  }
  if (!resident.empty()) {
    if (!memory_.host_fits(host_need)) {
      failure = strprintf(
          "dao_tiered_trim: the host tier has no room for the %zu bytes of tensors that live on "
          "the device alone (it holds %llu of its host_budget of %zu bytes); nothing was moved",
          host_need, static_cast<unsigned long long>(stats_.host_bytes), memory_.host_budget());
      return false;
    }
    for (tiered_tensor* t : resident) {
      evict(*t);  // may throw (host memory): what moved is on the host, consistent
      arena_.release(t->offset);
    }
  }
  {
    // The evictions read the range that is given back.
    unlocked u(lock);
    copies_.wait_copies();
  }
  if (memory_.device_held()) ++stats_.trims;
  memory_.release_device();
  return true;
}

}  // namespace dao::detail
