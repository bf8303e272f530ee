// A strategy seen as a memory source, so that one strategy can take its
// memory from another (config key `upstream`, see registry.hpp): caching
// segments carved from a buddy pool, a limit over any strategy. Owns the
// strategy it adapts. Allocations go on the default stream.
#pragma once

#include <memory>
#include <utility>

#include "strategy/strategy.hpp"

namespace dao::detail {

class strategy_source final : public memory_source {
 public:
  explicit strategy_source(std::unique_ptr<strategy> inner) noexcept : inner_(std::move(inner)) {}

  strategy& inner() noexcept { return *inner_; }
  const strategy& inner() const noexcept { return *inner_; }

  void* allocate(std::size_t bytes) override { return inner_->allocate(bytes, nullptr); }
  void deallocate(void* p, std::size_t) noexcept override {
    try {
      inner_->deallocate(p);
    } catch (...) {  // cannot happen: p came from inner_->allocate()
    }
  }
  dao_place place() const noexcept override { return inner_->upstream().place(); }
  memory_info info() const override { return inner_->upstream().info(); }
  bool host_accessible() const noexcept override { return inner_->upstream().host_accessible(); }
  system_resource& resource() noexcept override { return inner_->upstream().resource(); }

 private:
  std::unique_ptr<strategy> inner_;
};

}  // namespace dao::detail
