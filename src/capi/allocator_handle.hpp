// What a dao_allocator handle holds. Private to the C API layer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dao/allocator.h"
#include "strategy/strategy.hpp"

struct dao_allocator {
  static constexpr std::uint64_t kMagic = 0x64616f616c6c6f63ull;  // "daoalloc"

  std::uint64_t magic = kMagic;  // catches handles of another type early
  std::unique_ptr<dao::detail::strategy> impl;
  std::string config;            // effective config, for dao_allocator_info
  bool place_default = false;    // owned by libdao, never destroyed
};

namespace dao::detail {

// Checks a handle passed in by a caller; throws invalid_argument when NULL or
// not an allocator handle.
dao_allocator& checked(dao_allocator* a, const char* function);

// Wraps a new strategy in a handle owned by the caller.
dao_allocator* make_handle(std::unique_ptr<strategy> impl, bool place_default);

}  // namespace dao::detail
