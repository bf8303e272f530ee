// Strategy "limit": an adaptor that caps the bytes in use through it
// (max_pool, and memory_fraction of the place's capacity) over any other
// strategy, given by the config key `upstream` (default: the place kind's
// built-in default strategy, buddy on the CPU and caching elsewhere). A
// request that would pass the cap fails with out_of_memory before the
// strategy below is asked; everything else (streams, statistics, snapshots,
// trim) is the strategy below's. Like RMM's limiting_resource_adaptor.
#pragma once

#include <atomic>

#include "strategy/limit.hpp"
#include "strategy/strategy.hpp"
#include "strategy/strategy_source.hpp"

namespace dao::detail {

class limit_strategy final : public strategy {
 public:
  limit_strategy(strategy_source& below, const limit_spec& spec) noexcept
      : strategy(below), inner_(below.inner()), limit_(below, spec) {}

  void* do_allocate(std::size_t bytes, const stream_object* stream) override;
  void do_deallocate(void* p) override;
  std::size_t usable_size(const void* p) const override { return inner_.usable_size(p); }
  std::size_t do_trim() override { return inner_.trim(); }
  allocator_counters counters() const override;
  void reset_peaks() override { inner_.reset_peaks(); }
  void reset_accumulated() override;
  bool stat(int metric, int pool, dao_stat& out) const override {
    return inner_.stat(metric, pool, out);
  }
  void do_record_stream(void* p, const stream_object* stream) override {
    inner_.record_stream(p, stream);
  }
  std::unique_ptr<snapshot_data> snapshot() const override { return inner_.snapshot(); }
  const char* name() const noexcept override { return "limit"; }
  std::string effective_config() const override { return limit_.spec().effective_config(true); }

 private:
  strategy& inner_;
  byte_limit limit_;  // counts the usable size of every live block
  std::atomic<std::uint64_t> refused_{0};
  // Refusals of a block the strategy below had already handed out (larger
  // than asked for): it counted an allocation and a free that, seen from
  // above, never happened; counters() takes them out again.
  std::atomic<std::uint64_t> refused_after_rounding_{0};
};

}  // namespace dao::detail
