// Limits on the memory a strategy holds (config keys max_pool and
// memory_fraction): parsed, computed and enforced here, once, for every
// strategy that offers them and for the "limit" adaptor strategy
// (limit_strategy.hpp).
//
// - limit_spec: the two keys and the cap they make on a place.
// - byte_limit: the count of bytes held against that cap; take() refuses,
//   with out_of_memory and a message, what would pass it.
// - limit_source: a memory source adaptor. A strategy takes its memory
//   through one, which counts what it allocates and maps (reserving
//   addresses costs no memory and is not counted).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

#include "core/config.hpp"
#include "resource/memory_source.hpp"

namespace dao::detail {

struct limit_spec {
  std::size_t max_pool = 0;    // bytes; 0: none
  double memory_fraction = 0;  // of the place's capacity; 0: none

  // Takes memory_fraction (when `with_fraction`) and max_pool from `cfg`,
  // validated.
  static limit_spec take(config& cfg, bool with_fraction);

  bool any() const noexcept { return max_pool != 0 || memory_fraction > 0; }

  // The cap in bytes on a place of `total_bytes` capacity (the smaller of
  // the two keys); 0 when there is none. A fraction of an unknown capacity
  // (0) does not limit.
  std::size_t cap(std::size_t total_bytes) const noexcept;

  // "max_pool=...,memory_fraction=..." (or max_pool alone), parseable again.
  std::string effective_config(bool with_fraction) const;
};

// Thread safe: take() and give() are atomic.
class byte_limit {
 public:
  // `place` gives the capacity that memory_fraction is a fraction of.
  byte_limit(const memory_source& place, const limit_spec& spec) noexcept
      : place_(place), spec_(spec) {}

  const limit_spec& spec() const noexcept { return spec_; }
  // The cap now (memory_fraction follows the place's capacity); 0: none.
  std::size_t cap() const noexcept;
  // Whether `extra` more bytes stay within the cap.
  bool fits(std::size_t extra) const noexcept { return fits(extra, used()); }
  // Bytes taken and not given back.
  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }

  // Counts `bytes` more, or throws out_of_memory ("<place>: <what> <bytes>
  // would pass the limit ...") and counts nothing.
  void take(std::size_t bytes, const char* what);
  void give(std::size_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  bool fits(std::size_t extra, std::size_t used) const noexcept;

  const memory_source& place_;
  limit_spec spec_;
  std::atomic<std::size_t> used_{0};
};

class limit_source final : public memory_source {
 public:
  limit_source(memory_source& upstream, const limit_spec& spec) noexcept
      : upstream_(upstream), limit_(upstream, spec) {}

  const byte_limit& limit() const noexcept { return limit_; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  dao_place place() const noexcept override { return upstream_.place(); }
  memory_info info() const override { return upstream_.info(); }
  bool host_accessible() const noexcept override { return upstream_.host_accessible(); }
  system_resource& resource() noexcept override { return upstream_.resource(); }
  std::size_t map_granularity() const noexcept override { return upstream_.map_granularity(); }
  std::size_t large_page_size() const noexcept override { return upstream_.large_page_size(); }
  bool unmaps_in_part() const noexcept override { return upstream_.unmaps_in_part(); }
  void* reserve_addresses(std::size_t bytes) override { return upstream_.reserve_addresses(bytes); }
  void release_addresses(void* base, std::size_t bytes) noexcept override {
    upstream_.release_addresses(base, bytes);
  }
  void map(void* addr, std::size_t bytes) override;
  void unmap(void* addr, std::size_t bytes) noexcept override;

 private:
  memory_source& upstream_;
  byte_limit limit_;
};

}  // namespace dao::detail
