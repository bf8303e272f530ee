// The partition rule of whole memory: `entries` entries over `ranks` ranks,
// each rank one contiguous range of whole entries. Rank r owns q = entries /
// ranks entries, plus one when r < rem = entries % ranks, after the entries
// of the ranks before it. Sizes differ by at most one entry; with fewer
// entries than ranks the last ranks own none.
#pragma once

#include <cstddef>

namespace dao::detail::whole {

class partition {
 public:
  partition() = default;
  partition(std::size_t entries, std::size_t entry_size, int ranks) noexcept
      : entries_(entries),
        entry_size_(entry_size),
        ranks_(ranks),
        q_(entries / static_cast<std::size_t>(ranks)),
        rem_(entries % static_cast<std::size_t>(ranks)),
        split_(rem_ * (q_ + 1)) {}

  std::size_t entries() const noexcept { return entries_; }
  std::size_t entry_size() const noexcept { return entry_size_; }
  int ranks() const noexcept { return ranks_; }

  std::size_t first(int rank) const noexcept {
    const auto r = static_cast<std::size_t>(rank);
    return r * q_ + (r < rem_ ? r : rem_);
  }
  std::size_t count(int rank) const noexcept {
    return q_ + (static_cast<std::size_t>(rank) < rem_ ? 1 : 0);
  }
  std::size_t byte_offset(int rank) const noexcept { return first(rank) * entry_size_; }
  std::size_t byte_size(int rank) const noexcept { return count(rank) * entry_size_; }

  // The owner of entry `index` (< entries()).
  int owner(std::size_t index) const noexcept {
    if (index < split_) return static_cast<int>(index / (q_ + 1));
    return static_cast<int>(rem_ + (index - split_) / q_);
  }

 private:
  std::size_t entries_ = 0;
  std::size_t entry_size_ = 0;
  int ranks_ = 1;
  std::size_t q_ = 0;
  std::size_t rem_ = 0;
  std::size_t split_ = 0;  // entries owned by the ranks that hold q_ + 1
};

}  // namespace dao::detail::whole
