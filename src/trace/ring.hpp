// The recorder's rings: one per recording thread, a fixed array of 64-byte
// binary records with one producer (its thread) and one consumer (the
// writer thread). A record takes a global sequence number (one atomic
// add), so that the writer merges the rings in the order the records were
// taken; the producer touches only its own ring's lines and that counter,
// never a line the writer writes, except to re-read the writer's position
// when its ring looks full. A full ring drops the record and counts it.
// Nothing here allocates or blocks after a thread's first record.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dao::detail::trace {

struct alignas(64) cell {
  // The record's global sequence number (from 1) once it is written; a
  // value at or below what the writer last took from this ring means "not
  // yet written in this lap".
  std::atomic<std::uint64_t> seq{0};
  std::uint64_t clock = 0;
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
  alignas(64) std::uint64_t head = 0;  // cells taken
  std::uint64_t cached_tail = 0;       // the writer's tail when last read
  std::atomic<std::uint64_t> lost{0};  // written by the producer only
  std::atomic<std::uint32_t> tid{0};   // the thread's number (set on adoption)

  // --- the writer's line ---
  alignas(64) std::atomic<std::uint64_t> tail{0};  // cells the writer took
  std::uint64_t writer_tail = 0;                   // the writer's copy
  std::uint64_t last_seq = 0;                      // seq of the last cell taken
  std::atomic<bool> orphan{false};                 // its thread ended
  thread_ring* next = nullptr;                     // the list of every ring

  cell& at(std::uint64_t i) noexcept { return cells_[i & mask]; }
  std::size_t size() const noexcept { return static_cast<std::size_t>(mask) + 1; }

  // Producer: a cell to fill, or nullptr when the ring is full (counted).
  // While full, the writer's position is re-read every 64th record only
  // (the line moves between the cores): dropping stays cheap.
  cell* take() noexcept {
    if (head - cached_tail > mask) {
      const std::uint64_t dropped = lost.load(std::memory_order_relaxed);
      if ((dropped & 63) == 0) cached_tail = tail.load(std::memory_order_acquire);
      if (head - cached_tail > mask) {
        lost.store(dropped + 1, std::memory_order_relaxed);
        return nullptr;
      }
    }
    // Ask for ownership of a cell a few records ahead: the writer has read
    // it a lap ago, so writing it needs the line back from the writer's
    // core; without this, the sequence number's locked add waits for that
    // transfer on every record.
    prefetch_for_writing(&at(head + kPrefetchAhead));
    return &at(head++);
  }
  static constexpr std::uint64_t kPrefetchAhead = 16;

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
