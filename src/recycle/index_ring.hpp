// The recycle pool's queues: a bounded multi-producer multi-consumer ring of
// buffer indices (Dmitry Vyukov's queue), lock-free, allocating nothing
// after construction. Inline: push and pop are the pool's hot path.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "util/cpu_relax.hpp"

namespace dao::detail {

// A bounded multi-producer multi-consumer ring of 32-bit values (Dmitry
// Vyukov's queue). Capacity is a power of two; each cell carries the
// position ("turn") it may next be written or read at.
class index_ring {
 public:
  explicit index_ring(std::size_t capacity);  // a power of two
  index_ring(const index_ring&) = delete;
  index_ring& operator=(const index_ring&) = delete;

  // Appends `value`. `stamp(position)` runs after the cell is claimed and
  // before the value becomes visible, with the value's position in the
  // order of pushes (0, 1, 2, ...). The pool never puts more values in a
  // ring than it has cells, so a push cannot find the ring full; it can only
  // find the cell of the previous lap still being read by a pop that has
  // claimed it and not yet let go (a few instructions and its `taken`), and
  // waits for that.
  template <class Stamp>
  void push(std::uint32_t value, Stamp&& stamp) noexcept;

  // Removes the oldest value; false when there is none (or when the oldest
  // is still being written by its push, which then wakes sleepers itself).
  // `taken(value, position)` runs once the value is claimed and before its
  // cell is handed back to pushes, with the value's position in the order of
  // pushes. (The pool changes the buffer's state there: a locked change of
  // the buffer's record after the cell's release would wait for that store
  // to reach this core's cache, the cell's line coming from the pushing
  // thread; before it, the two lines are fetched one at a time anyway but
  // the release then completes in the background.)
  template <class Taken>
  bool try_pop(Taken&& taken) noexcept;

  // Pushes and pops so far (each counted when it claims its position, before
  // the value is written or read). Only grow; tail_ is written by pushes
  // only and head_ by pops only, so a pipeline's fill side and operate side
  // each keep their own counter on their own line (the pool's statistics
  // use them as its submitted and taken counts).
  std::uint64_t pushed() const noexcept { return tail_.load(std::memory_order_seq_cst); }
  std::uint64_t popped() const noexcept { return head_.load(std::memory_order_seq_cst); }

 private:
  struct cell {
    std::atomic<std::uint64_t> turn{0};
    std::uint32_t value = 0;
  };
  // The cell of `position`. Cells are 16 bytes, four to a cache line: in
  // position order, a push would write the cell next to the one a pop is
  // reading, on the same line, and the two sides would pass that line back
  // and forth for every value. Consecutive positions go to cells a quarter
  // of the ring apart instead (a bijection: the low two bits of the index
  // become its high two), on different lines once the ring has 16 cells.
  cell& cell_at(std::uint64_t position) const noexcept {
    const std::uint64_t i = position & mask_;
    return cells_[shift_ == 0 ? i : (i >> 2) | ((i & 3) << shift_)];
  }

  std::unique_ptr<cell[]> cells_;
  std::uint64_t mask_;
  unsigned shift_ = 0;                              // log2(capacity) - 2 from 16 cells on, else 0
  alignas(64) std::atomic<std::uint64_t> tail_{0};  // next position to push
  alignas(64) std::atomic<std::uint64_t> head_{0};  // next position to pop
};

inline index_ring::index_ring(std::size_t capacity)
    : cells_(new cell[capacity]), mask_(static_cast<std::uint64_t>(capacity - 1)) {
  if (capacity >= 16) {
    unsigned log2 = 0;
    while ((std::size_t(1) << log2) < capacity) ++log2;
    shift_ = log2 - 2;
  }
  for (std::size_t i = 0; i < capacity; ++i) cell_at(i).turn.store(i, std::memory_order_relaxed);
}

template <class Stamp>
inline void index_ring::push(std::uint32_t value, Stamp&& stamp) noexcept {
  std::uint64_t pos = tail_.load(std::memory_order_relaxed);
  unsigned busy = 0;
  for (;;) {
    cell& c = cell_at(pos);
    const std::uint64_t turn = c.turn.load(std::memory_order_acquire);
    const auto diff = static_cast<std::int64_t>(turn - pos);
    if (diff == 0) {
      if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
        c.value = value;
        stamp(pos);
        // Sequentially consistent, so that the waker's look at the waiter
        // count (after this) cannot be ordered before it (wait_point).
        c.turn.exchange(pos + 1, std::memory_order_seq_cst);
        return;
      }
    } else if (diff < 0) {
      // The pop of the previous lap has claimed this cell and not yet let
      // go of it: it is a few instructions from doing so.
      if (++busy < 64) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
      pos = tail_.load(std::memory_order_relaxed);
    } else {
      pos = tail_.load(std::memory_order_relaxed);
    }
  }
}

template <class Taken>
inline bool index_ring::try_pop(Taken&& taken) noexcept {
  std::uint64_t pos = head_.load(std::memory_order_relaxed);
  for (;;) {
    cell& c = cell_at(pos);
    // Sequentially consistent (on x86 and ARMv8 as cheap as acquire): a
    // sleeper's registration and this look must not pass each other
    // (wait_for).
    const std::uint64_t turn = c.turn.load(std::memory_order_seq_cst);
    const auto diff = static_cast<std::int64_t>(turn - (pos + 1));
    if (diff == 0) {
      if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
        taken(c.value, pos);
        c.turn.store(pos + mask_ + 1, std::memory_order_release);
        return true;
      }
    } else if (diff < 0) {
      return false;
    } else {
      pos = head_.load(std::memory_order_relaxed);
    }
  }
}

}  // namespace dao::detail
