// How the caching strategy maps and unmaps expandable segments. Over host
// memory (unmapped in part): which pages it gives back when it keeps within
// its reserve budget, over a resource whose memory comes in large pages (as host
// memory in transparent huge pages does): whole large pages first, since one
// given back in part stays split; granules only when no whole large page
// gives enough. The resource here maps host memory in 4 KiB granules with
// 64 KiB "large pages" and records every unmap, so that the test does not
// depend on the machine's huge page settings. Over a card (each map() one
// physical allocation, unmapped only whole): mappings grow with the segment
// and are never cut, as cuMemUnmap demands.
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>
#include <utility>
#include <map>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "resource/virtual_memory.hpp"
#include "strategy/caching.hpp"

using namespace dao::detail;

namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
constexpr std::size_t kGranule = 4 * KiB;
constexpr std::size_t kLargePage = 64 * KiB;

class paged_resource final : public system_resource {
 public:
  void* allocate(std::size_t) override { throw out_of_memory("paged_resource: only mapping"); }
  void deallocate(void*, std::size_t) noexcept override {}
  dao_place place() const noexcept override { return dao_place{DAO_PLACE_CPU, 0}; }
  memory_info info() const override { return memory_info{256 * MiB, 256 * MiB}; }
  bool host_accessible() const noexcept override { return true; }
  std::size_t map_granularity() const noexcept override { return kGranule; }
  std::size_t large_page_size() const noexcept override { return kLargePage; }
  void* reserve_addresses(std::size_t bytes) override {
    void* p = host_reserve(bytes);
    if (p == nullptr) throw out_of_memory("paged_resource: no addresses");
    base = reinterpret_cast<std::uintptr_t>(p);
    return p;
  }
  void release_addresses(void* p, std::size_t bytes) noexcept override { host_release(p, bytes); }
  void map(void* addr, std::size_t bytes) override {
    if (!host_commit(addr, bytes)) throw out_of_memory("paged_resource: commit refused");
  }
  void unmap(void* addr, std::size_t bytes) noexcept override {
    host_decommit(addr, bytes);
    unmaps.emplace_back(reinterpret_cast<std::uintptr_t>(addr) - base, bytes);
  }

  std::uintptr_t base = 0;                                  // of the one reservation
  std::vector<std::pair<std::size_t, std::size_t>> unmaps;  // offset, bytes
};

// A card's virtual memory as the driver has it: every map() call one
// physical allocation, unmap() only exactly the range of one, which the
// resource checks (a refused unmap is counted and changes nothing).
class card_resource final : public system_resource {
 public:
  void* allocate(std::size_t) override { throw out_of_memory("card_resource: only mapping"); }
  void deallocate(void*, std::size_t) noexcept override {}
  dao_place place() const noexcept override { return dao_place{DAO_PLACE_SIM, 0}; }
  memory_info info() const override { return memory_info{capacity, capacity}; }
  bool host_accessible() const noexcept override { return false; }
  std::size_t map_granularity() const noexcept override { return 2 * MiB; }
  bool unmaps_in_part() const noexcept override { return false; }
  void* reserve_addresses(std::size_t bytes) override {
    // Addresses only: nothing here touches the memory (host_accessible is false).
    base = next;
    next += bytes;
    return reinterpret_cast<void*>(base);
  }
  void release_addresses(void*, std::size_t) noexcept override {}
  void map(void* addr, std::size_t bytes) override {
    if (bytes > capacity - mapped_bytes) throw out_of_memory("card_resource: full");
    mappings.emplace(reinterpret_cast<std::uintptr_t>(addr), bytes);
    mapped_bytes += bytes;
    largest = std::max(largest, bytes);
    ++map_calls;
  }
  void unmap(void* addr, std::size_t bytes) noexcept override {
    auto it = mappings.find(reinterpret_cast<std::uintptr_t>(addr));
    if (it == mappings.end() || it->second != bytes) {
      ++refused;
      return;
    }
    mappings.erase(it);
    mapped_bytes -= bytes;
    ++unmap_calls;
  }

  std::size_t capacity = std::size_t(64) << 30;
  std::uintptr_t next = std::uintptr_t(1) << 44;  // never dereferenced
  std::uintptr_t base = 0;
  std::map<std::uintptr_t, std::size_t> mappings;  // base -> bytes
  std::size_t mapped_bytes = 0, largest = 0;
  int map_calls = 0, unmap_calls = 0, refused = 0;
};

// reserve_headroom=0: reserved memory may not grow past the peak in use.
caching_options tight_budget() {
  caching_options o;
  o.reserve_headroom = 0;
  return o;
}

std::int64_t reserved(const caching_strategy& c) {
  dao_stat s{};
  assert_true(c.stat(DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL, s));
  return s.current;
}

}  // namespace

// A, B, C of 8 MiB and E of 16 MiB (peak 40 MiB, all mapped); E and B
// freed; D of 20 MiB + 4 KiB takes the tail and needs 4 MiB + 4 KiB more
// mapped, which the budget (the 40 MiB peak) pays for from B's hole: in
// whole large pages, 4 MiB + 64 KiB from its end.
static void budget_release_takes_whole_large_pages(void**) {
  paged_resource r;
  caching_strategy c(r, tight_budget());
  void* a = c.allocate(8 * MiB, nullptr);
  void* b = c.allocate(8 * MiB, nullptr);
  void* cc = c.allocate(8 * MiB, nullptr);
  void* e = c.allocate(16 * MiB, nullptr);
  assert_int_equal(reserved(c), 40 * MiB);
  c.deallocate(e);
  c.deallocate(b);
  assert_true(r.unmaps.empty());
  void* d = c.allocate(20 * MiB + 4 * KiB, nullptr);
  assert_int_equal(reinterpret_cast<std::uintptr_t>(d) - r.base, 24 * MiB);
  std::size_t released = 0;
  for (const auto& [offset, bytes] : r.unmaps) {
    assert_int_equal(offset % kLargePage, 0);
    assert_int_equal(bytes % kLargePage, 0);
    assert_true(offset >= 8 * MiB && offset + bytes <= 16 * MiB);  // inside B's hole
    released += bytes;
  }
  assert_int_equal(released, 4 * MiB + kLargePage);
  assert_int_equal(reserved(c), 40 * MiB + 4 * KiB - kLargePage);
  for (void* p : {a, cc, d}) c.deallocate(p);
}

// The same with blocks too small to hold a whole large page in the hole
// (and reserved far below 64 large pages): the budget is kept in granules.
static void budget_release_falls_back_to_granules(void**) {
  paged_resource r;
  caching_strategy c(r, tight_budget());
  void* a = c.allocate(32 * KiB, nullptr);
  void* b = c.allocate(32 * KiB, nullptr);
  void* cc = c.allocate(32 * KiB, nullptr);
  void* e = c.allocate(64 * KiB, nullptr);
  assert_int_equal(reserved(c), 160 * KiB);
  c.deallocate(e);
  c.deallocate(b);
  void* d = c.allocate(84 * KiB, nullptr);  // needs [160, 180) KiB mapped
  assert_int_equal(reinterpret_cast<std::uintptr_t>(d) - r.base, 96 * KiB);
  assert_int_equal(r.unmaps.size(), 1);
  assert_int_equal(r.unmaps[0].first, 44 * KiB);  // the end of B's hole
  assert_int_equal(r.unmaps[0].second, 20 * KiB);
  assert_int_equal(reserved(c), 160 * KiB);
  for (void* p : {a, cc, d}) c.deallocate(p);
}

// Growing to 8 GiB in 4 MiB blocks on a card: within the budget (5 %
// over the peak in use) the segment grows by whole 20 MiB pages, one driver
// call each, not one per 2 MiB granule (4096); everything reserved is
// mapped and counted, and destroying the allocator unmaps each mapping
// exactly once. One request of 4 GiB takes 16 to 32 mappings.
static void card_mappings_grow_with_the_segment(void**) {
  card_resource r;
  {
    caching_strategy c(r, caching_options{});
    std::vector<void*> blocks;
    for (int i = 0; i < 2048; ++i) blocks.push_back(c.allocate(4 * MiB, nullptr));
    assert_true(r.map_calls <= 8 * 1024 / 20 * 9 / 8);  // about one per page
    assert_true(r.largest >= 20 * MiB && r.largest <= std::size_t(1) << 30);
    assert_int_equal(reserved(c), r.mapped_bytes);
    assert_true(r.mapped_bytes <= std::size_t(8) * 1024 * MiB * 105 / 100 + 20 * MiB);
    for (void* p : blocks) c.deallocate(p);
  }
  assert_int_equal(r.refused, 0);
  assert_true(r.mappings.empty());
  assert_int_equal(r.mapped_bytes, 0);
  {
    caching_strategy c(r, caching_options{});
    const int calls = r.map_calls;
    void* p = c.allocate(std::size_t(4) << 30, nullptr);
    assert_true(r.map_calls - calls <= 32);  // pieces of 1/32 to 1/16 of it
    assert_true(r.largest >= 128 * MiB);
    c.deallocate(p);
  }
  assert_int_equal(r.refused, 0);
  assert_true(r.mappings.empty());
}

// map_chunk bounds each mapping; a trim then gives back every mapping that
// no live block touches, whole, and keeps the ones a live block is in.
static void card_trim_unmaps_whole_mappings(void**) {
  card_resource r;
  caching_options o;
  o.map_chunk = 8 * MiB;
  caching_strategy c(r, o);
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(c.allocate(3 * MiB, nullptr));
  assert_true(r.largest <= 8 * MiB);
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (i % 16 != 0) c.deallocate(blocks[i]);
  const std::size_t before = r.mapped_bytes;
  const std::size_t released = c.trim();
  assert_true(released > 0);
  assert_int_equal(r.refused, 0);
  assert_int_equal(before - r.mapped_bytes, released);
  assert_int_equal(reserved(c), r.mapped_bytes);
  // Every block still live lies in mapped memory.
  for (std::size_t i = 0; i < blocks.size(); i += 16) {
    const auto p = reinterpret_cast<std::uintptr_t>(blocks[i]);
    auto it = r.mappings.upper_bound(p);
    assert_true(it != r.mappings.begin());
    --it;
    std::uintptr_t end = it->first + it->second;
    while (end < p + 3 * MiB && r.mappings.count(end) != 0) end += r.mappings[end];
    assert_true(it->first <= p && end >= p + 3 * MiB);
  }
  // At most the mappings under the four live blocks (each at most two) stay.
  assert_true(r.mappings.size() <= 8);
  for (std::size_t i = 0; i < blocks.size(); i += 16) c.deallocate(blocks[i]);
  c.trim();
  assert_true(r.mappings.empty());
  assert_int_equal(reserved(c), 0);
}

// Keeping within the budget on a card: only whole mappings inside free
// blocks go, never part of one (which the driver would refuse).
static void card_budget_release_takes_whole_mappings(void**) {
  card_resource r;
  caching_options o = tight_budget();
  o.map_chunk = 4 * MiB;
  caching_strategy c(r, o);
  void* a = c.allocate(8 * MiB, nullptr);
  void* b = c.allocate(8 * MiB, nullptr);
  void* cc = c.allocate(8 * MiB, nullptr);
  void* e = c.allocate(16 * MiB, nullptr);
  c.deallocate(e);
  c.deallocate(b);
  const int unmaps = r.unmap_calls;
  void* d = c.allocate(20 * MiB + 4 * KiB, nullptr);
  assert_true(r.unmap_calls > unmaps);  // B's hole paid for the growth
  assert_int_equal(r.refused, 0);
  assert_int_equal(reserved(c), r.mapped_bytes);
  for (void* p : {a, cc, d}) c.deallocate(p);
  assert_int_equal(r.refused, 0);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(budget_release_takes_whole_large_pages),
      cmocka_unit_test(budget_release_falls_back_to_granules),
      cmocka_unit_test(card_mappings_grow_with_the_segment),
      cmocka_unit_test(card_trim_unmaps_whole_mappings),
      cmocka_unit_test(card_budget_release_takes_whole_mappings),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
