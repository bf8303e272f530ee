// Where a tiered pool's tensors live: placing them in the device arena,
// choosing with the eviction policy what to evict to the host tier,
// compacting the arena when its free space is split, and prefetching. It
// decides; tier_memory gives it the memory and transfers makes the copies.
//
// Every call: on the executor thread, with the pool's mutex held (a call
// that waits for copies takes `lock` and releases it while it waits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "dao/tiered.h"
#include "tiered/device_arena.hpp"
#include "tiered/policy.hpp"
#include "tiered/resident_index.hpp"
#include "tiered/tensor.hpp"
#include "tiered/tier_memory.hpp"

namespace dao::detail {

class transfers;

class placement {
 public:
  // `scorer`, `memory`, `copies` and `stats` (device_bytes, evictions,
  // fetches, prefetches and their bytes; host bytes through `memory`) must
  // outlive this object.
  placement(std::size_t device_budget, const scorer& scorer, tier_memory& memory, transfers& copies,
            dao_tiered_stats& stats);

  placement(const placement&) = delete;
  placement& operator=(const placement&) = delete;

  // The device budget rounded down to whole granules. Constant: any thread.
  std::size_t capacity() const noexcept { return arena_.capacity(); }

  // Where a resident tensor is on the device.
  void* device_ptr(const tiered_tensor& t) const noexcept { return memory_.device_ptr(t.offset); }

  // Makes every tensor of a kernel (`tensors`, distinct, all pinned)
  // resident at logical time `now`, evicting or compacting as needed.
  // Returns false when they could not be placed: with `failure` empty when
  // they do not fit, else with why the pool must fail (the host tier is
  // full or refused a tensor; no data was lost). Throws when a copy could
  // not be queued.
  bool place_kernel(const std::vector<tiered_tensor*>& tensors, std::uint64_t now,
                    std::unique_lock<std::mutex>& lock, std::string& failure);

  // Fetches `t`, an input of the kernel at logical time `target`, ahead of
  // it when it is on the host tier alone and room can be made by evicting
  // tensors that are not pinned and not used before `target`. Otherwise
  // (or when its copies fail) does nothing.
  void prefetch(tiered_tensor& t, std::uint64_t target);

  // A write: `t` now lives in the host buffer `buffer` (counted) alone; its
  // old buffers are freed once no copy uses them. With `keep_device`, a
  // resident `t` keeps its device block (write_to_device() fills it).
  void take_host_buffer(tiered_tensor& t, void* buffer, std::unique_lock<std::mutex>& lock,
                        bool keep_device = false);

  // Whether the data of a write of `t` at logical time `now` also goes to
  // the device at once (issue 21, item 7): only when that is free in
  // practice, so that the copy is one its next use would make anyway: the
  // next queued access of `t` is a kernel's, and `t` has a device block or
  // a free block fits it (no eviction).
  bool write_goes_to_device(const tiered_tensor& t, std::uint64_t now) const;
  // After take_host_buffer(t, ..., true): copies `t`'s host buffer (which
  // stays current) to its device block, taking a free one if it has none,
  // as a fetch would but counted apart (device_writes). If the copy cannot
  // be queued, `t` is left on the host alone. Throws only when the arena
  // cannot record a new block (std::bad_alloc: nothing changed).
  void write_to_device(tiered_tensor& t);
  // The writes that went to the device and their bytes (with the mutex).
  std::uint64_t device_writes() const noexcept { return device_writes_; }
  std::uint64_t device_write_bytes() const noexcept { return device_write_bytes_; }

  // Frees `t`'s memory in both tiers (once no copy uses it).
  void free_memory(tiered_tensor& t);

  // What `t`'s eviction score is made of may have changed (its accesses,
  // host_valid, released): keeps the index of resident tensors current.
  // Every change of those, for any tensor, must be followed by this call.
  void note_change(tiered_tensor& t) noexcept { index_.update(t); }

  // Whether the index of resident tensors matches the arena (a test hook).
  bool index_consistent() const { return index_.consistent(arena_.blocks()); }

  // dao_tiered_trim: moves every resident tensor to the host tier (copying
  // those whose host copy is stale), waits for the copies and gives the
  // device range back. Returns false with `failure` set, nothing moved, when
  // the host tier has no room for the copies (host_budget).
  bool trim(std::unique_lock<std::mutex>& lock, std::string& failure);

 private:
  using evictable_fn = std::function<bool(const tiered_tensor*)>;

  // Places `t` in the arena (evicting tensors for which `evictable` holds),
  // fetching its data if it is on the host. Returns false when no run fits
  // or (with `may_fail`) the host tier is full: then failure_ says why.
  // `known`: best_run's answer for `t`, when the caller has just found it.
  bool make_resident(tiered_tensor& t, std::uint64_t now, const evictable_fn& evictable,
                     bool may_fail, const arena_run* known = nullptr);
  // The best run of blocks to evict for `need` bytes (see find_run).
  arena_run best_run(std::size_t need, std::uint64_t now, const evictable_fn& evictable);
  // best_run by a scan of every run (any policy).
  arena_run scan_runs(std::size_t need, std::uint64_t now, const evictable_fn& evictable);
  // best_run through the index: only the runs holding the tensors ranked
  // first, until none can beat the best found; sets `done` false (and
  // returns nothing) when that would cost more than a scan.
  arena_run indexed_run(std::size_t need, std::uint64_t now, const evictable_fn& evictable,
                        bool& done);
  // Scores the run [r.first, r.last] (score, copy_bytes, evicted_bytes).
  void score_run(arena_run& r, std::uint64_t now);
  // Whether the index can be used (built on first use).
  bool use_index() noexcept;
  // The tensors compact_and_place would evict (policy order) so that the
  // kernel's missing tensors fit in the free bytes; false if they cannot.
  bool compaction_victims(const std::vector<tiered_tensor*>& tensors, std::uint64_t now,
                          std::vector<tiered_tensor*>& victims, std::size_t& host_need);
  // compaction_victims's choice by a sort of every resident tensor (any
  // policy) / through the index; `room`: the free bytes, grown by each
  // victim's (returned / updated).
  std::size_t sorted_victims(std::uint64_t now, std::size_t need, std::size_t room,
                             std::vector<tiered_tensor*>& victims, std::size_t& host_need);
  void indexed_victims(std::size_t need, std::size_t& room, std::vector<tiered_tensor*>& victims,
                       std::size_t& host_need);
  // Whether compacting moves clearly fewer bytes than evicting the best run
  // for `t` (device to device bytes weighed lower than host transfers).
  // `run`: that best run (best_run for `t`).
  bool compaction_cheaper(const std::vector<tiered_tensor*>& tensors, tiered_tensor& t,
                          std::uint64_t now, const evictable_fn& evictable, arena_run& run);
  // When the resident tensors (the kernel's own among them) split the free
  // space so that no contiguous run fits: evicts, chosen by the policy one
  // tensor at a time, only what the kernel's missing tensors still need in
  // bytes, then slides every resident tensor toward offset 0 (device to
  // device copies on the compute stream, after the copy streams drain) so
  // that the free space is one block, and places the missing tensors there.
  bool compact_and_place(const std::vector<tiered_tensor*>& tensors, std::uint64_t now,
                         std::unique_lock<std::mutex>& lock);
  bool host_room_for(std::size_t bytes, bool may_fail, const tiered_tensor& t);
  void evict(tiered_tensor& t);
  void fetch(tiered_tensor& t);
  // Gives a resident `t`'s block back to the arena: it is on the device no
  // longer.
  void release_device(tiered_tensor& t);
  void fail(std::string message);
  void set_device_bytes(std::int64_t delta) noexcept;

  device_arena arena_;
  const scorer& scorer_;
  tier_memory& memory_;
  transfers& copies_;
  dao_tiered_stats& stats_;
  std::string failure_;  // why place_kernel failed, set by fail()
  std::uint64_t device_writes_ = 0;
  std::uint64_t device_write_bytes_ = 0;
  resident_index index_;
  std::vector<dao_tensor_access_info> infos_;  // scratch of score_run
  // Scratch of make_resident (a run's victims) and of compaction_cheaper /
  // compact_and_place (compaction's): no heap allocation per eviction.
  std::vector<tiered_tensor*> run_victims_;
  std::vector<tiered_tensor*> compact_victims_;
  // Scratch of indexed_victims: per size, the entries not yet taken.
  std::vector<
      std::pair<resident_index::set_type::const_iterator, resident_index::set_type::const_iterator>>
      heads_;
};

}  // namespace dao::detail
