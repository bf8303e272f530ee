// The recorder's ring: a fixed array of 64-byte binary records, many
// producers (allocating threads), one consumer (the writer thread), as
// Dmitry Vyukov's bounded MPMC queue. A producer claims a cell with one
// compare-and-swap and publishes it with one release store; when the ring
// is full it gives up at once (the record is lost and counted). Nothing
// here allocates or blocks after construction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dao::detail::trace {

struct alignas(64) cell {
  std::atomic<std::uint32_t> seq{0};
  std::uint8_t what = 0;  // trace::kind
  std::uint64_t clock = 0;
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t req = 0;
  std::uint64_t extra = 0;  // alloc, use: the stream handle; oom, mark: text number
  std::uint32_t allocator = 0;
  std::uint32_t stream = 0;
  std::uint32_t stack = 0;  // stack id + 1; 0: none
  std::uint32_t tid = 0;
};
static_assert(sizeof(cell) == 64, "a ring cell is one cache line");

class ring {
 public:
  explicit ring(std::size_t cells)
      : mask_(static_cast<std::uint32_t>(cells - 1)), cells_(new cell[cells]) {
    for (std::size_t i = 0; i < cells; ++i)
      cells_[i].seq.store(static_cast<std::uint32_t>(i), std::memory_order_relaxed);
  }

  std::size_t size() const noexcept { return static_cast<std::size_t>(mask_) + 1; }

  // A cell to fill and publish(), or nullptr when the ring is full.
  cell* claim() noexcept {
    std::uint32_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      cell& c = cells_[pos & mask_];
      const std::uint32_t seq = c.seq.load(std::memory_order_acquire);
      const auto dif = static_cast<std::int32_t>(seq - pos);
      if (dif == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) return &c;
      } else if (dif < 0) {
        return nullptr;
      } else {
        pos = head_.load(std::memory_order_relaxed);
      }
    }
  }
  // The claimer's cell, filled: the writer may read it now.
  static void publish(cell& c) noexcept {
    c.seq.store(c.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Writer only: the next published cell in claim order, or nullptr (empty,
  // or the next one is claimed and not yet published). release() it after
  // reading.
  cell* next() noexcept {
    cell& c = cells_[tail_ & mask_];
    const std::uint32_t seq = c.seq.load(std::memory_order_acquire);
    return static_cast<std::int32_t>(seq - (tail_ + 1)) == 0 ? &c : nullptr;
  }
  void release(cell& c) noexcept {
    c.seq.store(tail_ + mask_ + 1, std::memory_order_release);
    ++tail_;
  }
  // Cells claimed and not yet released by the writer.
  std::uint32_t backlog() const noexcept { return head_.load(std::memory_order_relaxed) - tail_; }

 private:
  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::uint32_t tail_ = 0;
  std::uint32_t mask_;
  std::unique_ptr<cell[]> cells_;
};

}  // namespace dao::detail::trace
