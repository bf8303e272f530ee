// Which pages the caching strategy gives back when it keeps within its
// reserve budget, over a resource whose memory comes in large pages (as host
// memory in transparent huge pages does): whole large pages first, since one
// given back in part stays split; granules only when no whole large page
// gives enough. The resource here maps host memory in 4 KiB granules with
// 64 KiB "large pages" and records every unmap, so that the test does not
// depend on the machine's huge page settings.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>
#include <utility>
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

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(budget_release_takes_whole_large_pages),
      cmocka_unit_test(budget_release_falls_back_to_granules),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
