// The strategy layer: allocators that take memory from an upstream memory
// source (a place's system resource, or another strategy) and hand it out.
// A new strategy implements the pure virtual methods below and gets a row in
// strategy/registry.cpp (and its name in strategy/strategy_list.h); the C
// API, the place defaults, the conformance tests, the soak and the fuzzers
// then cover it.
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dao/allocator.h"
#include "dao/stream.h"
#include "resource/memory_source.hpp"
#include "resource/stream.hpp"
#include "trace/recorder.hpp"

namespace dao::detail {

// An immutable copy of a strategy's segments and blocks (the C API wraps it
// in a dao_snapshot).
struct snapshot_data {
  struct segment {
    dao_segment_info info;
    std::vector<dao_block_info> blocks;
  };
  std::vector<segment> segments;
};

// One statistic: current value, peak, and accumulated increases/decreases.
struct stat_value {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;

  void add(std::int64_t amount) noexcept {
    if (amount > 0) up(amount);
    else down(-amount);
  }
  // The hot paths know the direction: no branch on the sign.
  void up(std::int64_t amount) noexcept {
    current += amount;
    allocated += amount;
    peak = current > peak ? current : peak;
  }
  void down(std::int64_t amount) noexcept {
    current -= amount;
    freed += amount;
  }
  void reset_peak() noexcept { peak = current; }
  void reset_accumulated() noexcept { allocated = freed = 0; }
};

// Counters shared by every strategy (the public dao_allocator_stats without
// its size tag).
struct allocator_counters {
  std::uint64_t allocated_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;
  std::uint64_t requested_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::uint64_t alloc_count = 0;
  std::uint64_t free_count = 0;
  std::uint64_t failed_alloc_count = 0;
  std::uint64_t system_alloc_count = 0;
  std::uint64_t system_free_count = 0;
  std::uint64_t largest_free_block = 0;
  std::uint64_t alloc_retry_count = 0;
  // The detailed statistics of the whole allocator (DAO_STAT_POOL_ALL) that
  // every strategy keeps; the fields above summarise them.
  stat_value allocated_bytes_stat, allocated_blocks_stat, reserved_bytes_stat,
      reserved_segments_stat, requested_bytes_stat;

  void on_alloc(std::size_t block, std::size_t requested) noexcept {
    allocated_bytes_stat.add(static_cast<std::int64_t>(block));
    allocated_blocks_stat.add(1);
    requested_bytes_stat.add(static_cast<std::int64_t>(requested));
    ++alloc_count;
    sync();
  }
  void on_free(std::size_t block, std::size_t requested) noexcept {
    allocated_bytes_stat.add(-static_cast<std::int64_t>(block));
    allocated_blocks_stat.add(-1);
    requested_bytes_stat.add(-static_cast<std::int64_t>(requested));
    ++free_count;
    sync();
  }
  void on_system_alloc(std::size_t bytes) noexcept {
    reserved_bytes_stat.add(static_cast<std::int64_t>(bytes));
    reserved_segments_stat.add(1);
    ++system_alloc_count;
    sync();
  }
  void on_system_free(std::size_t bytes) noexcept {
    reserved_bytes_stat.add(-static_cast<std::int64_t>(bytes));
    reserved_segments_stat.add(-1);
    ++system_free_count;
    sync();
  }
  void reset_peaks() noexcept {
    each([](stat_value& s) { s.reset_peak(); });
    sync();
  }
  void reset_accumulated() noexcept {
    each([](stat_value& s) { s.reset_accumulated(); });
    alloc_count = free_count = failed_alloc_count = 0;
    system_alloc_count = system_free_count = alloc_retry_count = 0;
  }
  // The statistic of `metric` for the whole allocator, or nullptr when
  // only a stream-ordered strategy keeps it. Active blocks equal allocated
  // ones in a strategy that frees at once.
  const stat_value* find(int metric) const noexcept {
    switch (metric) {
      case DAO_STAT_ALLOCATED_BYTES:
      case DAO_STAT_ACTIVE_BYTES: return &allocated_bytes_stat;
      case DAO_STAT_ALLOCATED_BLOCKS:
      case DAO_STAT_ACTIVE_BLOCKS: return &allocated_blocks_stat;
      case DAO_STAT_RESERVED_BYTES: return &reserved_bytes_stat;
      case DAO_STAT_RESERVED_SEGMENTS: return &reserved_segments_stat;
      case DAO_STAT_REQUESTED_BYTES: return &requested_bytes_stat;
      default: return nullptr;
    }
  }
  // Sets the summary fields from the statistics they come from.
  void refresh() noexcept { sync(); }

 private:
  template <class F>
  void each(F f) noexcept {
    f(allocated_bytes_stat);
    f(allocated_blocks_stat);
    f(reserved_bytes_stat);
    f(reserved_segments_stat);
    f(requested_bytes_stat);
  }
  // Keeps the summary fields equal to the statistics they come from.
  void sync() noexcept {
    allocated_bytes = static_cast<std::uint64_t>(allocated_bytes_stat.current);
    peak_allocated_bytes = static_cast<std::uint64_t>(allocated_bytes_stat.peak);
    requested_bytes = static_cast<std::uint64_t>(requested_bytes_stat.current);
    reserved_bytes = static_cast<std::uint64_t>(reserved_bytes_stat.current);
    peak_reserved_bytes = static_cast<std::uint64_t>(reserved_bytes_stat.peak);
    live_blocks = static_cast<std::uint64_t>(allocated_blocks_stat.current);
  }
};

class strategy {
 public:
  explicit strategy(memory_source& upstream) : upstream_(upstream) {}
  virtual ~strategy() = default;
  strategy(const strategy&) = delete;
  strategy& operator=(const strategy&) = delete;

  // The four calls that change what is allocated. Each is one branch on
  // the recorder's flag (trace/recorder.hpp) around the strategy's own
  // do_*() below: with recording off, nothing else (issue 18).
  //
  // `bytes` > 0. Returns memory aligned to >= kMinAlignment or throws
  // out_of_memory / backend_error; on failure nothing changes.
  void* allocate(std::size_t bytes, const stream_object* stream) {
    if (__builtin_expect(trace::active(), 0)) return traced_allocate(bytes, stream);
    return do_allocate(bytes, stream);
  }
  // Throws invalid_pointer, changing nothing, if `p` is not live here.
  void deallocate(void* p) {
    if (__builtin_expect(trace::active(), 0)) return traced_deallocate(p);
    do_deallocate(p);
  }
  // Gives cached memory back to the upstream; returns the bytes released.
  std::size_t trim() {
    if (__builtin_expect(trace::active(), 0)) return traced_trim();
    return do_trim();
  }
  // Stream-ordered strategies override do_record_stream(); the default
  // throws unsupported (after checking that `p` is live).
  void record_stream(void* p, const stream_object* stream) {
    if (__builtin_expect(trace::active(), 0)) return traced_record_stream(p, stream);
    do_record_stream(p, stream);
  }

  // Size of the live block at `p`; throws invalid_pointer otherwise.
  virtual std::size_t usable_size(const void* p) const = 0;

  virtual allocator_counters counters() const = 0;
  virtual void reset_peaks() = 0;
  virtual void reset_accumulated() = 0;

  // A detailed statistic; false when the strategy does not keep it. The
  // default serves DAO_STAT_POOL_ALL from counters().
  virtual bool stat(int metric, int pool, dao_stat& out) const;

  // Stream-ordered strategies override this; the default throws
  // unsupported.
  virtual std::unique_ptr<snapshot_data> snapshot() const;
  // Whether destroying this strategy waits for the stream whose
  // implementation is `stream` (stream_impl*, compared only): a host
  // function of that stream must not destroy it (issue 20, reentrancy).
  // Strategies that never wait for a stream keep the default, false.
  virtual bool destroy_waits_for(const void* stream) const;

  virtual const char* name() const noexcept = 0;
  // Every config key of this strategy with its effective value, parseable
  // again.
  virtual std::string effective_config() const = 0;

  // effective_config() and, for a stacked strategy, `upstream=<name>` and
  // the upstream's own full config with every key prefixed `upstream.`.
  std::string full_config() const;

  memory_source& upstream() const noexcept { return upstream_; }

  // Stacking (config key `upstream`): takes ownership of the source this
  // strategy was built on, which wraps `below`, so that it lives as long as
  // this strategy (it is destroyed after the derived class has given back
  // its memory).
  void adopt_upstream(std::unique_ptr<memory_source> source, const strategy* below) noexcept {
    owned_upstream_ = std::move(source);
    below_ = below;
  }
  // The strategy this one takes its memory from, or nullptr.
  const strategy* below() const noexcept { return below_; }

  // --- recording (issue 18) ---
  // A strategy that serves another (`upstream=`) is recorded through the
  // one above it: its own calls are not (make_strategy() says so).
  void set_traced(bool traced) noexcept { traced_ = traced; }
  // This allocator's id in the running recording (registering it on first
  // use); 0 when nothing records or it is not traced.
  std::uint32_t trace_id();

  // An out-of-memory observer (dao_allocator_set_oom_callback): opaque to
  // this layer, kept here so that every path to the strategy (an allocator
  // handle, dao_alloc on a place) finds it. Replaced ones are kept until
  // the strategy dies: a thread may still be calling one.
  struct oom_observer {
    void (*fn)(void*, std::size_t, void*, void*) = nullptr;  // the C callback, cast back above
    void* user_data = nullptr;
    void* handle = nullptr;  // the dao_allocator it was set on
  };
  const oom_observer* observer() const noexcept {
    return observer_.load(std::memory_order_acquire);
  }
  void set_observer(const oom_observer& o);

 protected:
  virtual void* do_allocate(std::size_t bytes, const stream_object* stream) = 0;
  virtual void do_deallocate(void* p) = 0;
  virtual std::size_t do_trim() = 0;
  virtual void do_record_stream(void* p, const stream_object* stream);

 private:
  void* traced_allocate(std::size_t bytes, const stream_object* stream);
  void traced_deallocate(void* p);
  std::size_t traced_trim();
  void traced_record_stream(void* p, const stream_object* stream);

  memory_source& upstream_;
  bool traced_ = true;
  std::atomic<std::uint64_t> trace_slot_{0};
  std::atomic<const oom_observer*> observer_{nullptr};
  std::mutex observers_mutex_;
  std::vector<std::unique_ptr<oom_observer>> observers_;
  std::unique_ptr<memory_source> owned_upstream_;
  const strategy* below_ = nullptr;
};

}  // namespace dao::detail

// The declarations of the methods a pooling strategy (one that keeps memory
// of its own) overrides, the same in each: write them once.
#define DAO_STRATEGY_POOL_METHODS_                                            \
  void* do_allocate(std::size_t bytes, const stream_object* stream) override; \
  void do_deallocate(void* p) override;                                       \
  std::size_t usable_size(const void* p) const override;                      \
  std::size_t do_trim() override;                                             \
  allocator_counters counters() const override;                               \
  void reset_peaks() override;                                                \
  void reset_accumulated() override
