// Helpers shared by the C++ tests that fail things on purpose
// (test_fault_injection, test_host_oom): a cheap data pattern for live
// blocks, and a SIM device's free memory with its default allocator's cache
// given back. Header-only; include after <cmocka.h>.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dao.h"

namespace dao_test {

// Writes every `stride`-th byte and the last one of [p, p+bytes).
inline void fill(void* p, std::size_t bytes, std::uint32_t seed, std::size_t stride = 61) {
  auto* c = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; i += stride)
    c[i] = static_cast<unsigned char>(seed * 131u + i);
  c[bytes - 1] = static_cast<unsigned char>(seed);
}

// Whether fill() of the same arguments is still there.
inline bool intact(const void* p, std::size_t bytes, std::uint32_t seed, std::size_t stride = 61) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; i += stride)
    if (c[i] != static_cast<unsigned char>(seed * 131u + i)) return false;
  return c[bytes - 1] == static_cast<unsigned char>(seed);
}

// Free memory of SIM device `device` once its default allocator (which
// tiered pools take their device budget from) has given back what it caches.
inline std::size_t sim_free(int device) {
  dao_allocator* place_default = nullptr;
  assert_int_equal(dao_place_allocator(dao_place_sim(device), &place_default), DAO_OK);
  assert_int_equal(dao_allocator_trim(place_default, nullptr), DAO_OK);
  std::size_t free_bytes = 0;
  assert_int_equal(dao_place_memory_info(dao_place_sim(device), &free_bytes, nullptr), DAO_OK);
  return free_bytes;
}

}  // namespace dao_test
