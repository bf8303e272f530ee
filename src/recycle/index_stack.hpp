// The recycle pool's free list: a bounded lock-free stack of buffer indices
// (Treiber's stack over an array of links), allocating nothing after
// construction. Last in, first out: an acquire gets the buffer released
// most recently, whose memory is still in the caches (and whose pages are
// mapped), instead of the one that has waited longest. With a FIFO free list
// a pool of 64 buffers of 1 MiB cycles through 64 MiB of cold memory even
// when the pipeline needs only two buffers at a time (issue 22).
//
// Inline: push and pop are the pool's hot path.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dao::detail {

// The links live in the caller's records (one std::atomic<std::uint32_t>
// per value, reached through `link(value)`), so that the pop that takes a
// buffer reads its link from the line it is about to write anyway (the
// buffer's record) instead of from one more shared line.
class index_stack {
 public:
  index_stack() = default;
  index_stack(const index_stack&) = delete;
  index_stack& operator=(const index_stack&) = delete;

  // Puts `value` (not in the stack) on top. Sequentially consistent, so
  // that a waker's look at the waiter count after it cannot be ordered
  // before it (recycle_pool::wait_for).
  template <class Link>
  void push(std::uint32_t value, Link&& link) noexcept {
    push_chain(value, value, link);
  }

  // Puts a chain of values (not in the stack) on top with one exchange of
  // the head: `top`, the values linked under it through `link`, down to
  // `bottom` (the same as `top` for one value), whose link is overwritten.
  // `top` goes out first, then the values under it in link order. Used by
  // the pool's per-thread stashes (recycle_pool.hpp), which hand released
  // buffers over in batches. Sequentially consistent, as push().
  template <class Link>
  void push_chain(std::uint32_t top, std::uint32_t bottom, Link&& link) noexcept;

  // Takes the top value; false when the stack is empty.
  template <class Link>
  bool try_pop(std::uint32_t& value, Link&& link) noexcept;

  static constexpr std::uint32_t kEmpty = 0xffffffffu;

 private:
  // The head word: the top index in the low 32 bits, a counter above that
  // changes with every successful push and pop, so that a pop that read
  // the top and its link cannot succeed after the stack went through other
  // states and came back to the same top (the ABA problem). A link is
  // atomic because such a pop may read it while another thread pops and
  // pushes that value again; the counter then refuses the pop's exchange.
  static std::uint64_t make_head(std::uint64_t old, std::uint32_t top) noexcept {
    return ((old >> 32) + 1) << 32 | top;
  }

  alignas(64) std::atomic<std::uint64_t> head_{kEmpty};
};

template <class Link>
inline void index_stack::push_chain(std::uint32_t top, std::uint32_t bottom, Link&& link) noexcept {
  std::atomic<std::uint32_t>& next = link(bottom);
  std::uint64_t head = head_.load(std::memory_order_relaxed);
  for (;;) {
    next.store(static_cast<std::uint32_t>(head), std::memory_order_relaxed);
    if (head_.compare_exchange_weak(head, make_head(head, top), std::memory_order_seq_cst,
                                    std::memory_order_relaxed))
      return;
  }
}

template <class Link>
inline bool index_stack::try_pop(std::uint32_t& value, Link&& link) noexcept {
  // Sequentially consistent (on x86 and ARMv8 as cheap as acquire): a
  // sleeper's registration and this look must not pass each other.
  std::uint64_t head = head_.load(std::memory_order_seq_cst);
  for (;;) {
    const auto top = static_cast<std::uint32_t>(head);
    if (top == kEmpty) return false;
    const std::uint32_t below = link(top).load(std::memory_order_relaxed);
    if (head_.compare_exchange_weak(head, make_head(head, below), std::memory_order_seq_cst,
                                    std::memory_order_seq_cst)) {
      value = top;
      return true;
    }
  }
}

}  // namespace dao::detail
