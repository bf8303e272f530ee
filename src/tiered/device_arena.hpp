// The device budget of a tiered pool: one contiguous range (a single
// allocation of device_budget bytes on the device place), cut into blocks in
// address order, each free or owned by one resident tensor. The free blocks
// are also indexed by (size, offset), so that the best fit is found in
// O(log n) rather than by a scan of every block (issue 21: the scan was a
// quarter of the executor's time on graphs of thousands of tensors).
// Placement looks for a contiguous run of blocks: first a free block that
// fits (best fit),
// else a run of free blocks and evictable tensors scored by the caller (the
// seed's evictCandidates over consecutive blocks). Not thread safe: the pool
// guards it with its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <utility>
#include <vector>

namespace dao::detail {

struct tiered_tensor;

// Every block is a multiple of this (and so starts aligned to it).
inline constexpr std::size_t kArenaGranule = 256;

// Rounds up to whole granules; a size that cannot be rounded (within a
// granule of SIZE_MAX) gives SIZE_MAX, larger than any budget, never 0.
inline std::size_t arena_round(std::size_t bytes) noexcept {
  if (bytes > SIZE_MAX - (kArenaGranule - 1)) return SIZE_MAX;
  return (bytes + kArenaGranule - 1) / kArenaGranule * kArenaGranule;
}

struct arena_block {
  std::size_t offset = 0;
  std::size_t size = 0;
  tiered_tensor* owner = nullptr;  // nullptr: free
};

// A candidate run [first, last] (block indices) and what evicting it costs.
struct arena_run {
  std::size_t first = 0;
  std::size_t last = 0;
  double score = 0;               // higher: better to evict
  std::size_t copy_bytes = 0;     // bytes that would be copied device -> host
  std::size_t evicted_bytes = 0;  // bytes of tensors it would evict
  bool found = false;
};

// One tensor slid toward the start of the arena by compact().
struct arena_move {
  tiered_tensor* owner = nullptr;
  std::size_t from = 0;
  std::size_t to = 0;  // to < from
  std::size_t size = 0;
};

class device_arena {
 public:
  // `capacity` is rounded down to the granule.
  explicit device_arena(std::size_t capacity);

  std::size_t capacity() const noexcept { return capacity_; }
  const std::vector<arena_block>& blocks() const noexcept { return blocks_; }

  // Best-fit free block for `size` (rounded): the smallest, then the lowest
  // address; or -1. O(log n).
  long find_free(std::size_t size) const noexcept;

  // Scans every minimal run of consecutive blocks (free, or owned by a tensor
  // for which `evictable` is true) that covers `size`; `score_run` fills in
  // score / copy_bytes / evicted_bytes of a run. Returns the best run:
  // highest score, then fewest bytes copied, then fewest evicted, then lowest
  // address.
  arena_run find_run(std::size_t size, const std::function<bool(const tiered_tensor*)>& evictable,
                     const std::function<void(arena_run&)>& score_run) const;

  // Takes `size` (rounded) at the start of the free block `index` for
  // `owner`; returns the offset.
  std::size_t take(std::size_t index, std::size_t size, tiered_tensor* owner);

  // Frees the block at `offset` (merging with free neighbours).
  void release(std::size_t offset);

  // The index of the block at `offset` (which must exist).
  std::size_t index_of(std::size_t offset) const;

  // Merges the blocks [first, last], which must all be free by now, into one.
  std::size_t merge_free(std::size_t first, std::size_t last);

  // Frees every block of [first, last] (their tensors have been evicted) and
  // merges them with free neighbours; returns the index of the free block.
  std::size_t vacate(std::size_t first, std::size_t last);

  // Slides every owned block toward offset 0 (keeping their order), so that
  // the free space becomes one block at the end. Returns the moves in
  // ascending address order: copying them in that order never writes over
  // a source not yet copied (a move whose ranges overlap itself must be
  // copied in ascending chunks of at most from - to bytes).
  std::vector<arena_move> compact();

  // Bytes in free blocks. O(1).
  std::size_t free_bytes() const noexcept { return free_bytes_; }

  // Whether the index of free blocks matches the blocks (a test hook).
  bool index_consistent() const;

 private:
  using free_key = std::pair<std::size_t, std::size_t>;  // (size, offset)
  // Adds / removes an entry of the free index, reusing removed nodes (the
  // insert throws only when there is none to reuse: nothing changed then).
  void free_insert(const free_key& k);
  bool free_erase(const free_key& k) noexcept;
  void index_free(const arena_block& b);
  void unindex_free(const arena_block& b) noexcept;
  // Merges the free blocks [first, last], none of them in the index, into
  // one, and indexes it; returns first.
  std::size_t merge_unindexed(std::size_t first, std::size_t last);

  std::size_t capacity_;
  std::vector<arena_block> blocks_;
  std::set<free_key> free_;                           // every free block
  std::vector<std::set<free_key>::node_type> spare_;  // nodes to reuse
  std::size_t free_bytes_ = 0;
};

}  // namespace dao::detail
