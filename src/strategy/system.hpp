// Strategy "system": no pooling. Each allocation goes straight to the system
// resource; a table of live blocks lets free() validate its pointer. The
// baseline for benchmarks, and the strategy to use under memory checkers.
#pragma once

#include <mutex>
#include <unordered_map>

#include "strategy/strategy.hpp"

namespace dao::detail {

class system_strategy final : public strategy {
 public:
  explicit system_strategy(memory_source& upstream);  // takes no config keys
  ~system_strategy() override;

  void* do_allocate(std::size_t bytes, const stream_object* stream) override;
  void do_deallocate(void* p) override;
  std::size_t usable_size(const void* p) const override;
  std::size_t do_trim() override { return 0; }
  allocator_counters counters() const override;
  void reset_peaks() override;
  void reset_accumulated() override;
  const char* name() const noexcept override { return "system"; }
  std::string effective_config() const override { return ""; }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const void*, std::size_t> live_;
  allocator_counters counters_;
};

}  // namespace dao::detail
