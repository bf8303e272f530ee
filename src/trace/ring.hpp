// The recorder's rings: one per recording thread, a fixed array of 64-byte
// binary records with one producer (its thread) and one consumer (the
// writer thread).
//
// A record is stamped with the CPU's time-stamp counter when its cell is
// claimed, and the writer merges the rings in stamp order: no record takes
// a global number, because the locked add that would take it waits for
// every store the program has in flight (on this project's machine that
// was half of what recording cost). Claiming writes the stamp, then
// publishes the producer's position (`head`, a release store); filling
// the cell and publishing it (`seq`, the cell's position + 1, a release
// store) may come later: a free claims before the block goes back, so
// that its stamp comes before that of any allocation of the block by
// another thread. The writer reads `head` to know which claimed cells are
// still being filled and takes no record stamped after the earliest of
// those.
//
// Lines: the ring's constants, the producer's, the writer's; the producer
// reads the writer's line only when its ring looks full. A full ring
// drops the record and counts it. Nothing here allocates or blocks after
// a thread's first record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dao::detail::trace {

struct alignas(64) cell {
  // The cell's ring position + 1 once it is filled (a release store);
  // anything else means "not yet filled in this lap".
  std::atomic<std::uint64_t> seq{0};
  std::uint64_t clock = 0;  // the stamp, written when claimed
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t req = 0;
  std::uint64_t extra = 0;  // alloc, use: the stream handle; oom, mark: text number
  std::uint32_t allocator = 0;
  std::uint32_t stream = 0;
  std::uint32_t stack = 0;  // stack id + 1; 0: none
  std::uint8_t what = 0;    // trace::kind
};
static_assert(sizeof(cell) == 64, "a ring cell is one cache line");

struct thread_ring {
  explicit thread_ring(std::size_t cells)
      : cells_(new cell[cells]), mask(static_cast<std::uint64_t>(cells - 1)) {}

 private:
  // --- read-only after construction, read by both threads on every record:
  // a line of its own, never invalidated ---
  alignas(64) std::unique_ptr<cell[]> cells_;

 public:
  const std::uint64_t mask;

  // --- the producer's (its thread's) line ---
  alignas(64) std::atomic<std::uint64_t> head{0};  // cells claimed (written by the producer)
  std::uint64_t cached_tail = 0;                   // the writer's tail when last read
  std::atomic<std::uint64_t> lost{0};              // written by the producer only
  std::atomic<std::uint32_t> tid{0};               // the thread's number (set on adoption)

  // --- the writer's line ---
  alignas(64) std::atomic<std::uint64_t> tail{0};  // cells the writer took
  std::uint64_t writer_tail = 0;                   // the writer's copy
  std::atomic<bool> orphan{false};                 // its thread ended
  thread_ring* next = nullptr;                     // the list of every ring

  cell& at(std::uint64_t i) noexcept { return cells_[i & mask]; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(mask) + 1; }

  // Producer: claims a cell stamped `stamp` and returns its position + 1
  // (what publish() stores), or 0 when the ring is full (counted). While
  // full, the writer's position is re-read every 64th record only (the
  // line moves between the cores): dropping stays cheap.
  std::uint64_t take(std::uint64_t stamp) noexcept {
    const std::uint64_t h = head.load(std::memory_order_relaxed);
    if (h - cached_tail > mask) {
      const std::uint64_t dropped = lost.load(std::memory_order_relaxed);
      if ((dropped & 63) == 0) cached_tail = tail.load(std::memory_order_acquire);
      if (h - cached_tail > mask) {
        lost.store(dropped + 1, std::memory_order_relaxed);
        return 0;
      }
    }
    // Ask for ownership of a cell a few records ahead: the writer read it a
    // lap ago, so writing it needs the line back from the writer's core.
    prefetch_for_writing(&at(h + kPrefetchAhead));
    at(h).clock = stamp;
    head.store(h + 1, std::memory_order_release);  // the stamp is visible with it
    return h + 1;
  }
  static constexpr std::uint64_t kPrefetchAhead = 16;

  // Producer: the cell claimed as `position` (take()'s value) is filled.
  void publish(std::uint64_t position) noexcept {
    at(position - 1).seq.store(position, std::memory_order_release);
  }

 private:
  static void prefetch_for_writing(const void* p) noexcept {
#if defined(__x86_64__)
    // PREFETCHW (every x86-64 decodes it; the baseline target would make
    // __builtin_prefetch a read prefetch, which leaves the line shared).
    __asm__ volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p, 1, 3);
#endif
  }
};
static_assert(sizeof(thread_ring) == 192, "three lines: constants, producer, writer");

}  // namespace dao::detail::trace
