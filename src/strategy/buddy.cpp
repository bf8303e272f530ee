// The buddy strategy (see buddy.hpp): its options, chunks from the upstream,
// splitting and merging buddies, large blocks, trim and statistics.
#include "strategy/buddy.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

bool is_power_of_two(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

int log2_exact(std::size_t x) noexcept { return 63 - __builtin_clzll(x); }

std::size_t floor_power_of_two(std::size_t x) noexcept {
  return x == 0 ? 0 : std::size_t(1) << log2_exact(x);
}

}  // namespace

buddy_options buddy_options::from_config(config& cfg, const memory_source& upstream) {
  buddy_options o;
  // A chunk is at most a quarter of a device, so a small device still holds
  // several and the pool can give whole ones back.
  std::size_t total = upstream.info().total_bytes;
  if (total != 0) {
    std::size_t quarter = floor_power_of_two(total / 4);
    o.chunk_size = std::max<std::size_t>(std::min(o.chunk_size, quarter), std::size_t(1) << 20);
  }
  if (auto v = cfg.take_size("min_block")) o.min_block = *v;
  if (auto v = cfg.take_size("chunk_size")) o.chunk_size = *v;
  o.limit = limit_spec::take(cfg, false);
  if (auto v = cfg.take_size("initial_pool")) o.initial_pool = *v;
  // Unknown keys were refused before (the registry holds the key list).

  const char* ctx = cfg.context().c_str();
  if (!is_power_of_two(o.min_block) || o.min_block < kMinAlignment) {
    throw invalid_argument(strprintf("%s: min_block=%zu must be a power of two >= %zu", ctx,
                                     o.min_block, kMinAlignment));
  }
  if (!is_power_of_two(o.chunk_size) || o.chunk_size < o.min_block) {
    throw invalid_argument(strprintf("%s: chunk_size=%zu must be a power of two >= min_block (%zu)",
                                     ctx, o.chunk_size, o.min_block));
  }
  if (log2_exact(o.chunk_size) - log2_exact(o.min_block) >= kBuddyMaxOrders) {
    throw invalid_argument(
        strprintf("%s: chunk_size/min_block must be below 2^%d", ctx, kBuddyMaxOrders));
  }
  // An initial pool larger than the place can never be reserved; on the CPU,
  // whose chunks are virtual memory, the constructor's loop took chunk after
  // chunk until the address space ran out (issue 20: initial_pool=2^63 hung
  // for minutes). Refuse it at once.
  if (total != 0 && o.initial_pool > total) {
    throw out_of_memory(strprintf("%s: initial_pool (%s) is larger than the memory of %s (%s)", ctx,
                                  format_bytes(o.initial_pool).c_str(),
                                  place_to_string(upstream.place()).c_str(),
                                  format_bytes(total).c_str()));
  }
  if (o.limit.max_pool != 0 && o.initial_pool > o.limit.max_pool) {
    throw invalid_argument(strprintf("%s: initial_pool (%s) is larger than max_pool (%s)", ctx,
                                     format_bytes(o.initial_pool).c_str(),
                                     format_bytes(o.limit.max_pool).c_str()));
  }
  return o;
}

buddy_strategy::buddy_strategy(memory_source& upstream, const buddy_options& options)
    : strategy(upstream),
      options_(options),
      source_(upstream, options.limit),
      top_order_(log2_exact(options.chunk_size) - log2_exact(options.min_block)) {
  std::fill(std::begin(free_heads_), std::end(free_heads_), kNone);
  host_memory_ = upstream.host_accessible();
  try {
    std::lock_guard<fast_mutex> lock(mutex_);
    // Whole chunks while they fit max_pool (and the place), then the
    // largest power of two that does: as close to initial_pool as the cap
    // allows, in blocks of at least min_block.
    while (counters_.reserved_bytes < options_.initial_pool) {
      reserve_bookkeeping();
      const std::size_t remaining = options_.initial_pool - counters_.reserved_bytes;
      int order = std::min(top_order_, order_for(remaining));
      if (options_.limit.any()) {
        const std::size_t room = source_.limit().cap() - source_.limit().used();
        while (order > 0 && order_bytes(order) > room) --order;
        if (order_bytes(order) > room) break;  // not even min_block is left
      }
      grow(order, false);
    }
  } catch (...) {
    release_free_chunks();
    throw;
  }
}

buddy_strategy::~buddy_strategy() {
  // Destroy is refused while blocks are live, but give back everything anyway.
  for (const chunk& c : chunks_) {
    if (!c.live) continue;
    unpoison(c.base, order_bytes(c.order));
    source_.deallocate(reinterpret_cast<void*>(c.base), order_bytes(c.order));
  }
  for (const auto& [addr, lb] : large_) source_.deallocate(reinterpret_cast<void*>(addr), lb.bytes);
}

int buddy_strategy::order_for(std::size_t bytes) const noexcept {
  std::size_t units_minus_one = (bytes - 1) >> log2_exact(options_.min_block);
  return units_minus_one == 0 ? 0 : 64 - __builtin_clzll(units_minus_one);
}

std::uint32_t buddy_strategy::new_record() {
  if (!spare_records_.empty()) {
    std::uint32_t r = spare_records_.back();
    spare_records_.pop_back();
    return r;
  }
  blocks_.emplace_back();
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void buddy_strategy::push_free(std::uint32_t index) noexcept {
  block& b = blocks_[index];
  b.free = true;
  b.prev = kNone;
  b.next = free_heads_[b.order];
  if (b.next != kNone) blocks_[b.next].prev = index;
  free_heads_[b.order] = index;
  nonempty_orders_ |= std::uint64_t(1) << b.order;
}

void buddy_strategy::unlink_free(std::uint32_t index) noexcept {
  block& b = blocks_[index];
  if (b.prev != kNone) {
    blocks_[b.prev].next = b.next;
  } else {
    free_heads_[b.order] = b.next;
    if (b.next == kNone) nonempty_orders_ &= ~(std::uint64_t(1) << b.order);
  }
  if (b.next != kNone) blocks_[b.next].prev = b.prev;
  b.free = false;
}

std::size_t buddy_strategy::largest_free_block() const noexcept {
  return nonempty_orders_ == 0 ? 0 : order_bytes(63 - __builtin_clzll(nonempty_orders_));
}

out_of_memory buddy_strategy::oom(std::size_t bytes, const char* why) const {
  memory_info info{};
  try {
    info = upstream().info();
  } catch (...) {
  }
  const std::string place = place_to_string(upstream().place());
  return out_of_memory(strprintf(
      "buddy allocator on %s: out of memory: tried to allocate %s (%s). %s has a total "
      "capacity of %s of which %s is free. This allocator holds %s: %s allocated, %s "
      "reserved but unallocated, largest free block %s (max_pool %s)",
      place.c_str(), format_bytes(bytes).c_str(), why, place.c_str(),
      format_bytes(info.total_bytes).c_str(), format_bytes(info.free_bytes).c_str(),
      format_bytes(counters_.reserved_bytes).c_str(),
      format_bytes(counters_.allocated_bytes).c_str(),
      format_bytes(counters_.reserved_bytes - counters_.allocated_bytes).c_str(),
      format_bytes(largest_free_block()).c_str(),
      options_.limit.any() ? format_bytes(options_.limit.max_pool).c_str() : "unlimited"));
}

// Makes room in every bookkeeping table for one more chunk and a full chain
// of splits, so that allocate, deallocate and trim cannot fail half-way.
void buddy_strategy::reserve_bookkeeping() {
  std::size_t need = blocks_.size() + static_cast<std::size_t>(top_order_) + 1;
  if (blocks_.capacity() < need) blocks_.reserve(std::max(need, blocks_.capacity() * 2));
  if (spare_records_.capacity() < blocks_.capacity()) spare_records_.reserve(blocks_.capacity());
  if (chunks_.capacity() < chunks_.size() + 1)
    chunks_.reserve(std::max<std::size_t>(8, chunks_.capacity() * 2));
  if (spare_chunks_.capacity() < chunks_.capacity()) spare_chunks_.reserve(chunks_.capacity());
  by_address_.reserve(by_address_.size() + static_cast<std::size_t>(top_order_) + 2);
}

// Adds one chunk: a full one if the cap and the place allow, otherwise one
// just big enough for `order`, so a nearly full device is still usable.
// Either adds the chunk whole or changes nothing.
void buddy_strategy::grow(int order, bool may_release_idle) {
  std::size_t wanted = order_bytes(top_order_);
  std::size_t needed = order_bytes(order);
  auto fits_cap = [&](std::size_t bytes) { return source_.limit().fits(bytes); };
  auto try_allocate = [&](std::size_t bytes) -> void* {
    try {
      return source_.allocate(bytes);
    } catch (const out_of_memory&) {
      return nullptr;
    }
  };
  void* p = nullptr;
  int chunk_order = top_order_;
  if (fits_cap(wanted)) p = try_allocate(wanted);
  if (p == nullptr && needed < wanted && fits_cap(needed)) {
    p = try_allocate(needed);
    chunk_order = order;
  }
  if (p == nullptr && may_release_idle && release_free_chunks() > 0) {
    // Smaller chunks were idle: give them back and try once more.
    ++counters_.alloc_retry_count;
    if (fits_cap(wanted)) {
      p = try_allocate(wanted);
      chunk_order = top_order_;
    }
    if (p == nullptr && needed < wanted && fits_cap(needed)) {
      p = try_allocate(needed);
      chunk_order = order;
    }
  }
  if (p == nullptr) {
    ++counters_.failed_alloc_count;
    throw oom(needed, fits_cap(needed) ? "the place has no room for another chunk"
                                       : "max_pool would be exceeded");
  }
  std::uint32_t ci;
  if (!spare_chunks_.empty()) {
    ci = spare_chunks_.back();
    spare_chunks_.pop_back();
  } else {
    chunks_.emplace_back();
    ci = static_cast<std::uint32_t>(chunks_.size() - 1);
  }
  auto base = reinterpret_cast<std::uintptr_t>(p);
  poison(base, order_bytes(chunk_order));  // all free
  chunks_[ci] = chunk{base, static_cast<std::uint8_t>(chunk_order), true};
  std::uint32_t r = new_record();
  blocks_[r] = block{base, 0, ci, kNone, kNone, static_cast<std::uint8_t>(chunk_order), true};
  by_address_.insert(base, r);
  push_free(r);
  counters_.on_system_alloc(order_bytes(chunk_order));
}

void* buddy_strategy::do_allocate(std::size_t bytes, const stream_object*) {
  if (bytes > options_.chunk_size) return allocate_large(bytes);
  const int order = order_for(bytes);
  std::lock_guard<fast_mutex> lock(mutex_);
  std::uint64_t usable = nonempty_orders_ & ~((std::uint64_t(1) << order) - 1);
  if (usable == 0) {
    reserve_bookkeeping();
    grow(order, true);
    usable = nonempty_orders_ & ~((std::uint64_t(1) << order) - 1);
  }
  int j = __builtin_ctzll(usable);
  // Only a split creates records; reserve before the first change.
  if (j > order) reserve_bookkeeping();
  std::uint32_t index = free_heads_[j];
  unlink_free(index);
  while (j > order) {
    --j;
    blocks_[index].order = static_cast<std::uint8_t>(j);
    std::uintptr_t upper = blocks_[index].addr + order_bytes(j);
    std::uint32_t r = new_record();
    blocks_[r] =
        block{upper, 0, blocks_[index].chunk, kNone, kNone, static_cast<std::uint8_t>(j), true};
    by_address_.insert(upper, r);
    push_free(r);
  }
  block& b = blocks_[index];
  b.free = false;
  b.requested = bytes;
  unpoison(b.addr, order_bytes(order));  // all of it: usable_size() promises it
  counters_.on_alloc(order_bytes(order), bytes);
  trace::t_block_size = order_bytes(order);  // for a recording (strategy.hpp)
  return reinterpret_cast<void*>(b.addr);
}

void* buddy_strategy::allocate_large(std::size_t bytes) {
  std::lock_guard<fast_mutex> lock(mutex_);
  auto over_cap = [&] { return !source_.limit().fits(bytes); };
  if (over_cap() && (release_free_chunks() == 0 || over_cap())) {
    ++counters_.failed_alloc_count;
    throw oom(bytes, "max_pool would be exceeded");
  }
  reserve_bookkeeping();
  large_.reserve(large_.size() + 1);
  void* p = nullptr;
  try {
    p = source_.allocate(bytes);
  } catch (const out_of_memory&) {
    // Idle chunks may be what stands in the way: give them back, try again.
    if (release_free_chunks() > 0) {
      ++counters_.alloc_retry_count;
      try {
        p = source_.allocate(bytes);
      } catch (const out_of_memory&) {
      }
    }
    if (p == nullptr) {
      ++counters_.failed_alloc_count;
      throw oom(bytes, "the place has no room for it");
    }
  }
  try {
    large_.emplace(reinterpret_cast<std::uintptr_t>(p), large_block{bytes, bytes});
  } catch (...) {
    source_.deallocate(p, bytes);
    throw;
  }
  counters_.on_system_alloc(bytes);
  counters_.on_alloc(bytes, bytes);
  return p;
}

void buddy_strategy::do_deallocate(void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<fast_mutex> lock(mutex_);
  std::uint32_t index = by_address_.find(addr);
  if (index == pointer_map::npos) {
    auto it = large_.find(addr);
    if (it == large_.end()) {
      throw invalid_pointer(
          strprintf("buddy allocator on %s: pointer %p is not a live allocation of this allocator "
                    "(allocated elsewhere, already freed, or not the start of a block)",
                    place_to_string(upstream().place()).c_str(), p));
    }
    source_.deallocate(p, it->second.bytes);
    counters_.on_free(it->second.bytes, it->second.requested);
    counters_.on_system_free(it->second.bytes);
    large_.erase(it);
    return;
  }
  if (blocks_[index].free) {
    throw invalid_pointer(strprintf("buddy allocator on %s: pointer %p was already freed",
                                    place_to_string(upstream().place()).c_str(), p));
  }
  counters_.on_free(order_bytes(blocks_[index].order), blocks_[index].requested);
  blocks_[index].requested = 0;
  poison(blocks_[index].addr, order_bytes(blocks_[index].order));
  const chunk& c = chunks_[blocks_[index].chunk];
  while (blocks_[index].order < c.order) {
    const std::size_t size = order_bytes(blocks_[index].order);
    const std::uintptr_t buddy_addr = c.base + ((blocks_[index].addr - c.base) ^ size);
    const std::uint32_t buddy = by_address_.find(buddy_addr);
    if (buddy == pointer_map::npos || !blocks_[buddy].free ||
        blocks_[buddy].order != blocks_[index].order)
      break;
    unlink_free(buddy);
    const std::uint32_t lower = buddy_addr < blocks_[index].addr ? buddy : index;
    const std::uint32_t upper = lower == buddy ? index : buddy;
    by_address_.erase(blocks_[upper].addr);
    spare_records_.push_back(upper);  // capacity reserved by allocate()
    index = lower;
    ++blocks_[index].order;
  }
  push_free(index);
}

std::size_t buddy_strategy::usable_size(const void* p) const {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<fast_mutex> lock(mutex_);
  std::uint32_t index = by_address_.find(addr);
  if (index != pointer_map::npos && !blocks_[index].free) return order_bytes(blocks_[index].order);
  auto it = large_.find(addr);
  if (it != large_.end()) return it->second.bytes;
  throw invalid_pointer(strprintf("buddy allocator on %s: pointer %p is not a live allocation",
                                  place_to_string(upstream().place()).c_str(), p));
}

std::size_t buddy_strategy::release_free_chunks() {
  std::size_t released = 0;
  for (std::uint32_t ci = 0; ci < chunks_.size(); ++ci) {
    chunk& c = chunks_[ci];
    if (!c.live) continue;
    std::uint32_t index = by_address_.find(c.base);
    if (index == pointer_map::npos || !blocks_[index].free || blocks_[index].order != c.order)
      continue;
    unlink_free(index);
    by_address_.erase(c.base);
    spare_records_.push_back(index);
    unpoison(c.base, order_bytes(c.order));
    source_.deallocate(reinterpret_cast<void*>(c.base), order_bytes(c.order));
    counters_.on_system_free(order_bytes(c.order));
    released += order_bytes(c.order);
    c.live = false;
    spare_chunks_.push_back(ci);
  }
  return released;
}

std::size_t buddy_strategy::do_trim() {
  std::lock_guard<fast_mutex> lock(mutex_);
  return release_free_chunks();
}

allocator_counters buddy_strategy::counters() const {
  std::lock_guard<fast_mutex> lock(mutex_);
  allocator_counters c = counters_;
  c.largest_free_block = largest_free_block();
  return c;
}

void buddy_strategy::reset_peaks() {
  std::lock_guard<fast_mutex> lock(mutex_);
  counters_.reset_peaks();
}

void buddy_strategy::reset_accumulated() {
  std::lock_guard<fast_mutex> lock(mutex_);
  counters_.reset_accumulated();
}

std::string buddy_strategy::effective_config() const {
  return strprintf("min_block=%s,chunk_size=%s,max_pool=%s,initial_pool=%s",
                   format_size_exact(options_.min_block).c_str(),
                   format_size_exact(options_.chunk_size).c_str(),
                   format_size_exact(options_.limit.max_pool).c_str(),
                   format_size_exact(options_.initial_pool).c_str());
}

}  // namespace dao::detail
