// The strategy layer: allocators that take memory from an upstream system
// resource and hand it out. A new strategy implements the pure virtual
// methods below and registers itself in strategy/factory.cpp; the C API,
// the place defaults and the conformance tests then cover it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dao/stream.h"
#include "resource/system_resource.hpp"

namespace dao::detail {

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

  void on_alloc(std::size_t block, std::size_t requested) noexcept {
    allocated_bytes += block;
    requested_bytes += requested;
    ++live_blocks;
    ++alloc_count;
    if (allocated_bytes > peak_allocated_bytes) peak_allocated_bytes = allocated_bytes;
  }
  void on_free(std::size_t block, std::size_t requested) noexcept {
    allocated_bytes -= block;
    requested_bytes -= requested;
    --live_blocks;
    ++free_count;
  }
  void on_system_alloc(std::size_t bytes) noexcept {
    reserved_bytes += bytes;
    ++system_alloc_count;
    if (reserved_bytes > peak_reserved_bytes) peak_reserved_bytes = reserved_bytes;
  }
  void on_system_free(std::size_t bytes) noexcept {
    reserved_bytes -= bytes;
    ++system_free_count;
  }
  void reset_peaks() noexcept {
    peak_allocated_bytes = allocated_bytes;
    peak_reserved_bytes = reserved_bytes;
  }
};

class strategy {
 public:
  explicit strategy(system_resource& upstream) : upstream_(upstream) {}
  virtual ~strategy() = default;
  strategy(const strategy&) = delete;
  strategy& operator=(const strategy&) = delete;

  // `bytes` > 0. Returns memory aligned to >= kMinAlignment or throws
  // out_of_memory / backend_error; on failure nothing changes.
  virtual void* allocate(std::size_t bytes, dao_stream stream) = 0;

  // Throws invalid_pointer, changing nothing, if `p` is not live here.
  virtual void deallocate(void* p) = 0;

  // Size of the live block at `p`; throws invalid_pointer otherwise.
  virtual std::size_t usable_size(const void* p) const = 0;

  // Gives cached memory back to the upstream; returns the bytes released.
  virtual std::size_t trim() = 0;

  virtual allocator_counters counters() const = 0;
  virtual void reset_peaks() = 0;

  virtual const char* name() const noexcept = 0;
  // Every config key with its effective value, parseable again.
  virtual std::string effective_config() const = 0;

  system_resource& upstream() const noexcept { return upstream_; }

 private:
  system_resource& upstream_;
};

}  // namespace dao::detail
