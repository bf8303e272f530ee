// An open-addressing hash map from addresses to 32-bit indices: the buddy
// allocator's O(1) lookup of blocks by address, without a heap node per
// entry. Linear probing with backward-shift deletion (no tombstones), so
// lookups stay short however many inserts and erases have happened. The
// table is kept at most a quarter full: a probe then almost always ends at
// its first slot, so the allocators' free and alloc paths take no
// mispredicted branch here (at half full, three per free+alloc pair).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dao::detail {

class pointer_map {
 public:
  static constexpr std::uint32_t npos = UINT32_MAX;

  pointer_map() { slots_.resize(kInitialSlots); }

  std::size_t size() const noexcept { return size_; }

  std::uint32_t find(std::uintptr_t key) const noexcept {
    if (key == 0) return npos;  // 0 marks an empty slot, never a key
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(key);; i = (i + 1) & mask) {
      const slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == 0) return npos;
    }
  }

  // `key` must be non-zero and absent. May throw std::bad_alloc when growing;
  // the map is unchanged then.
  void insert(std::uintptr_t key, std::uint32_t value) {
    if ((size_ + 1) * kLoadInverse > slots_.size()) grow();
    place(key, value);
    ++size_;
  }

  // Updates the value of a present key.
  void assign(std::uintptr_t key, std::uint32_t value) noexcept {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(key);; i = (i + 1) & mask) {
      if (slots_[i].key == key) {
        slots_[i].value = value;
        return;
      }
    }
  }

  // Removes `key` if present.
  void erase(std::uintptr_t key) noexcept { take(key); }

  // Removes `key` and returns its value, or npos when absent: one probe
  // where find() then erase() would take two.
  std::uint32_t take(std::uintptr_t key) noexcept {
    if (key == 0) return npos;
    std::size_t mask = slots_.size() - 1;
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return npos;
      i = (i + 1) & mask;
    }
    const std::uint32_t value = slots_[i].value;
    // Backward-shift: move later entries of the probe run into the hole.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask; slots_[j].key != 0; j = (j + 1) & mask) {
      std::size_t h = home(slots_[j].key);
      // Entry j may move to the hole if its home is not in (hole, j].
      bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = slot{};
    --size_;
    return value;
  }

  // Whether `n` more entries fit without growing.
  bool has_room(std::size_t n) const noexcept {
    return (size_ + n) * kLoadInverse <= slots_.size();
  }

  // Makes room for `n` entries so that the next inserts cannot fail.
  void reserve(std::size_t n) {
    while (n * kLoadInverse > slots_.size()) grow();
  }

 private:
  struct slot {
    std::uintptr_t key = 0;
    std::uint32_t value = 0;
  };

  static constexpr std::size_t kInitialSlots = 64;  // a power of two
  static constexpr std::size_t kLoadInverse = 4;    // at most 1/4 full

  // Fibonacci hashing: the top bits of the product mix every bit of the
  // key, so keys that differ only in a few middle bits (blocks of one
  // segment) spread over the whole table.
  std::size_t home(std::uintptr_t key) const noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(key) * 0x9E3779B97F4A7C15ull) >>
                                    shift_);
  }

  void place(std::uintptr_t key, std::uint32_t value) noexcept {
    std::size_t mask = slots_.size() - 1;
    std::size_t i = home(key);
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = slot{key, value};
  }

  // Out of line: rare, and inlined into insert() it would keep insert() out
  // of its callers' fast paths.
  __attribute__((noinline)) void grow() {
    std::vector<slot> bigger(slots_.size() * 2);
    bigger.swap(slots_);
    --shift_;
    for (const slot& s : bigger)
      if (s.key != 0) place(s.key, s.value);
  }

  std::vector<slot> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64 - 6;  // 64 - log2(slots_.size())
};

}  // namespace dao::detail
