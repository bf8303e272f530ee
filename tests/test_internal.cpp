// Internal pieces tested directly: the pointer map against std::unordered_map,
// size and config parsing, DAO_SIM_DEVICES parsing, size formatting, the
// reuse of a tiered pool's tensor records.
#include <algorithm>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <csetjmp>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

// Before cmocka.h, whose fail() macro clashes with their member functions.
#include "tiered/device_arena.hpp"
#include "tiered/resident_index.hpp"
#include "tiered/tiered_pool.hpp"

extern "C" {
#include <cmocka.h>
}

#include "capi/handles.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "resource/sim.hpp"
#include "util/format.hpp"
#include "util/pointer_map.hpp"

using namespace dao::detail;

static void pointer_map_matches_reference(void**) {
  pointer_map map;
  std::unordered_map<std::uintptr_t, std::uint32_t> reference;
  std::mt19937_64 rng(7);
  // Keys from a small range so that inserts, erases and probe chains collide.
  for (int step = 0; step < 200000; ++step) {
    std::uintptr_t key = (1 + rng() % 5000) * 256;
    int op = static_cast<int>(rng() % 3);
    auto it = reference.find(key);
    if (op == 0 && it == reference.end()) {
      auto value = static_cast<std::uint32_t>(rng());
      map.insert(key, value);
      reference[key] = value;
    } else if (op == 1) {
      map.erase(key);
      reference.erase(key);
    } else if (it != reference.end() && op == 2) {
      map.assign(key, it->second + 1);
      it->second += 1;
    }
    if (step % 997 == 0) {
      assert_int_equal(map.size(), reference.size());
      for (std::uintptr_t k = 256; k <= 5000 * 256; k += 256) {
        auto r = reference.find(k);
        assert_int_equal(map.find(k), r == reference.end() ? pointer_map::npos : r->second);
      }
    }
  }
}

static void parse_size_units(void**) {
  struct row {
    const char* text;
    std::size_t value;
  } rows[] = {{"0", 0},
              {"4096", 4096},
              {"1B", 1},
              {"1K", 1024},
              {"1KB", 1024},
              {"1KiB", 1024},
              {"2m", 2u << 20},
              {"2MiB", 2u << 20},
              {"3GiB", std::size_t(3) << 30},
              {"1TiB", std::size_t(1) << 40},
              {" 5 MiB ", 5u << 20},
              {"1.5KiB", 1536},
              {"0.25MiB", 1u << 18}};
  for (const row& r : rows) assert_int_equal(parse_size(r.text, "test"), r.value);
  for (const char* bad : {"", "MiB", "-1", "1.2.3", "1 XiB", "1e6", "18446744073709551616",
                          "17179869184GiB", "0.1"}) {
    bool threw = false;
    try {
      parse_size(bad, "test");
    } catch (const invalid_argument& e) {
      threw = std::strstr(e.what(), "test") != nullptr;
    }
    if (!threw) fail_msg("'%s' was accepted", bad);
  }
}

static void format_round_trips(void**) {
  for (std::size_t v : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(1024),
                        std::size_t(3) << 20, std::size_t(5) << 30, (std::size_t(1) << 40) + 1}) {
    assert_int_equal(parse_size(format_size_exact(v), "x"), v);
  }
  assert_string_equal(format_bytes(512).c_str(), "512 B");
  assert_string_equal(format_bytes(1536).c_str(), "1.5 KiB");
  assert_string_equal(format_bytes(std::size_t(64) << 20).c_str(), "64.0 MiB");
}

static void config_takes_and_rejects(void**) {
  config c = config::parse("a=1MiB, b = 0.5 ,c=true,d=text", "test config");
  assert_int_equal(*c.take_size("a"), 1u << 20);
  assert_true(*c.take_double("b") == 0.5);
  assert_true(*c.take_bool("c"));
  assert_string_equal(c.take_string("d")->c_str(), "text");
  assert_false(c.take_size("missing").has_value());
  c.reject_unknown({"a", "b", "c", "d"});

  config d = config::parse("x=1,y=2", "test config");
  d.take_size("x");
  try {
    d.reject_unknown({"x"});
    fail_msg("unknown key accepted");
  } catch (const invalid_argument& e) {
    assert_non_null(std::strstr(e.what(), "unknown key 'y'"));
  }
  config e = config::parse("flag=maybe,n=abc", "t");
  try {
    e.take_bool("flag");
    fail_msg("bad bool accepted");
  } catch (const invalid_argument&) {
  }
  try {
    e.take_double("n");
    fail_msg("bad number accepted");
  } catch (const invalid_argument&) {
  }
}

static void sim_devices_strings(void**) {
  using v = std::vector<std::size_t>;
  const std::size_t MiB = std::size_t(1) << 20, GiB = std::size_t(1) << 30;
  assert_true(parse_sim_devices("2x512MiB") == (v{512 * MiB, 512 * MiB}));
  assert_true(parse_sim_devices("1GiB,256MiB") == (v{GiB, 256 * MiB}));
  assert_true(parse_sim_devices(" 3X1GiB , 64MiB ") == (v{GiB, GiB, GiB, 64 * MiB}));
  assert_true(parse_sim_devices("0").empty());
  assert_true(parse_sim_devices("4096") == (v{4096}));
  for (const char* bad : {"", ",", "2x", "x1GiB", "0x1GiB", "2x0", "1GiB,,2GiB", "abc", "65x1MiB",
                          "1000x1MiB", "2y1GiB", "-1x1GiB"}) {
    bool threw = false;
    try {
      parse_sim_devices(bad);
    } catch (const invalid_argument& e) {
      threw = std::strstr(e.what(), "DAO_SIM_DEVICES") != nullptr;
    }
    if (!threw) fail_msg("'%s' was accepted", bad);
  }
}

// A kernel that copies its first input into its output.
static dao_status copy_kernel(void*, void* const* in, size_t n_in, void* const* out, size_t n_out,
                              dao_stream) {
  if (n_in != 1 || n_out != 1) return DAO_ERR_INTERNAL;
  std::memcpy(out[0], in[0], 4096);
  return DAO_OK;
}

// A long-lived tiered pool that creates temporary tensors keeps a bounded
// number of tensor records (issue 20, defect 9: it kept one per tensor ever
// created until destroyed), and a released tensor's stale handle is still
// refused for the next kQuarantine creations.
static void tiered_records_are_reused(void**) {
  constexpr std::size_t kBytes = 4096;
  constexpr int kRounds = 4000;
  constexpr int kReadEvery = 50;
  dao_tiered* pool = nullptr;
  assert_int_equal(
      dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 64 * kBytes, nullptr, &pool), DAO_OK);
  tiered_pool& impl = *pool->impl;
  std::vector<unsigned char> data(kBytes), back(kBytes);
  for (std::size_t i = 0; i < kBytes; ++i) data[i] = static_cast<unsigned char>(i * 13);
  dao_tensor* keep = nullptr;  // lives throughout: written first, read last
  assert_int_equal(dao_tensor_create(pool, kBytes, &keep), DAO_OK);
  assert_int_equal(dao_tensor_write(keep, data.data(), kBytes), DAO_OK);
  for (int round = 0; round < kRounds; ++round) {
    dao_tensor *a = nullptr, *b = nullptr;
    assert_int_equal(dao_tensor_create(pool, kBytes, &a), DAO_OK);
    assert_int_equal(dao_tensor_create(pool, kBytes, &b), DAO_OK);
    assert_int_equal(dao_tensor_write(a, data.data(), kBytes), DAO_OK);
    assert_int_equal(dao_kernel_submit(pool, copy_kernel, nullptr, &a, 1, &b, 1), DAO_OK);
    // Released while the kernel may still be queued: freed once it has run.
    assert_int_equal(dao_tensor_release(a), DAO_OK);
    if (round % kReadEvery == 0) {
      assert_int_equal(dao_tensor_read(b, back.data(), kBytes), DAO_OK);
      assert_memory_equal(back.data(), data.data(), kBytes);
    }
    assert_int_equal(dao_tensor_release(b), DAO_OK);
  }
  assert_int_equal(dao_tiered_synchronize(pool), DAO_OK);
  // 2 * kRounds + 1 tensors made. Records held: the live one, the free ones
  // kept before reuse (kQuarantine), and those of the tensors released but
  // still queued, at most two per round since the last read (which waited
  // for everything queued before it), plus the two of the round at hand.
  const std::size_t records = impl.record_count();
  print_message("tiered pool: %zu records after %d tensors were created\n", records,
                2 * kRounds + 1);
  assert_true(records <= 1 + tensor_records::kQuarantine + 2 * (kReadEvery + 1));
  dao_tiered_stats st{};
  st.struct_size = sizeof st;
  assert_int_equal(dao_tiered_get_stats(pool, &st), DAO_OK);
  assert_int_equal(st.tensors_live, 1);

  // A stale handle is refused while its record waits for reuse.
  dao_tensor* stale = nullptr;
  assert_int_equal(dao_tensor_create(pool, kBytes, &stale), DAO_OK);
  assert_int_equal(dao_tensor_release(stale), DAO_OK);
  assert_int_equal(dao_tiered_synchronize(pool), DAO_OK);
  std::vector<dao_tensor*> more(tensor_records::kQuarantine);
  for (dao_tensor*& t : more) {
    assert_int_equal(dao_tensor_create(pool, kBytes, &t), DAO_OK);
    assert_true(t != stale);
  }
  assert_int_equal(dao_tensor_write(stale, data.data(), kBytes), DAO_ERR_INVALID_ARGUMENT);
  assert_non_null(std::strstr(dao_last_error(), "released"));
  for (dao_tensor* t : more) assert_int_equal(dao_tensor_release(t), DAO_OK);

  // The data of the tensor that lived throughout is intact.
  assert_int_equal(dao_tensor_read(keep, back.data(), kBytes), DAO_OK);
  assert_memory_equal(back.data(), data.data(), kBytes);
  assert_int_equal(dao_tensor_release(keep), DAO_OK);
  assert_int_equal(dao_tiered_destroy(pool), DAO_OK);
}

// The device arena's index of free blocks (issue 21) answers what the old
// linear scan answered: the smallest free block that fits, then the lowest
// address; checked after every one of many random takes, releases, vacates
// and compactions, with the index consistent with the blocks throughout.
static long linear_best_fit(const dao::detail::device_arena& a, std::size_t size) {
  size = dao::detail::arena_round(size);
  long best = -1;
  const auto& blocks = a.blocks();
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].owner != nullptr || blocks[i].size < size) continue;
    if (best < 0 || blocks[i].size < blocks[static_cast<std::size_t>(best)].size) {
      best = static_cast<long>(i);
    }
  }
  return best;
}

static void arena_index_matches_scan(void**) {
  using dao::detail::device_arena;
  device_arena arena(std::size_t(1) << 20);
  std::vector<dao::detail::tiered_tensor> owners(512);
  std::vector<std::size_t> offsets;  // taken blocks
  std::mt19937_64 rng(21);
  for (int step = 0; step < 20000; ++step) {
    const unsigned op = static_cast<unsigned>(rng() % 100);
    if (op < 55) {
      const std::size_t size = 1 + rng() % (std::size_t(24) << 10);
      const long got = arena.find_free(size);
      assert_int_equal(got, linear_best_fit(arena, size));
      if (got >= 0 && offsets.size() < owners.size()) {
        offsets.push_back(arena.take(static_cast<std::size_t>(got), size, &owners[offsets.size()]));
      }
    } else if (op < 90 && !offsets.empty()) {
      const std::size_t k = rng() % offsets.size();
      arena.release(offsets[k]);
      offsets.erase(offsets.begin() + static_cast<long>(k));
    } else if (op < 97 && offsets.size() >= 2) {
      // Vacate a run of two consecutive blocks (free or not).
      const std::size_t first = rng() % (arena.blocks().size() - 1);
      std::vector<std::size_t> gone;
      for (std::size_t i = first; i <= first + 1; ++i) {
        if (arena.blocks()[i].owner != nullptr) gone.push_back(arena.blocks()[i].offset);
      }
      arena.vacate(first, first + 1);
      for (std::size_t o : gone) {
        offsets.erase(std::find(offsets.begin(), offsets.end(), o));
      }
    } else if (op >= 97) {
      for (const dao::detail::arena_move& m : arena.compact()) {
        *std::find(offsets.begin(), offsets.end(), m.from) = m.to;
      }
    }
    assert_true(arena.index_consistent());
    std::size_t free_total = 0;
    for (const auto& b : arena.blocks())
      if (b.owner == nullptr) free_total += b.size;
    assert_int_equal(arena.free_bytes(), free_total);
  }
}

// The index of resident tensors (issue 21): ordered by the policy's score
// (belady: furthest next use first, never again before all), then bytes
// copied, bytes and offset; keys follow the tensors (update) and entries
// come and go (add / remove) without losing consistency.
static void resident_index_orders_by_policy(void**) {
  using namespace dao::detail;
  std::vector<tiered_tensor> ts(6);
  std::vector<arena_block> blocks;
  const std::uint64_t next[6] = {50, 10, UINT64_MAX, 30, 30, 20};
  for (std::size_t i = 0; i < ts.size(); ++i) {
    ts[i].bytes = 256;
    ts[i].offset = 256 * i;
    ts[i].host_valid = (i == 4);  // 4 copies nothing: before 3 at the same score
    if (next[i] != UINT64_MAX) append_access(ts[i], next[i], true, false);
    blocks.push_back(arena_block{256 * i, 256, &ts[i]});
  }
  resident_index index(evict_policy::belady);
  assert_true(index.supported());
  assert_false(index.active());
  index.activate(blocks);
  assert_true(index.active());
  assert_true(index.consistent(blocks));
  auto order = [&] {
    std::vector<std::size_t> got;
    for (const resident_key& k : index.entries())
      got.push_back(static_cast<std::size_t>(k.t - &ts[0]));
    return got;
  };
  assert_true((order() == std::vector<std::size_t>{2, 0, 4, 3, 5, 1}));
  // Tensor 1 runs its use at 10 and is used again at 60: furthest.
  append_access(ts[1], 60, true, false);
  advance(ts[1], 10);
  assert_false(index.consistent(blocks));  // stale until updated
  index.update(ts[1]);
  assert_true(index.consistent(blocks));
  assert_true((order() == std::vector<std::size_t>{2, 1, 0, 4, 3, 5}));
  // Tensor 2 leaves the device; then comes back.
  index.remove(ts[2]);
  blocks.erase(blocks.begin() + 2);
  assert_true(index.consistent(blocks));
  assert_true((order() == std::vector<std::size_t>{1, 0, 4, 3, 5}));
  blocks.insert(blocks.begin() + 2, arena_block{512, 256, &ts[2]});
  index.add(ts[2]);
  assert_true(index.consistent(blocks));
  assert_int_equal(index.entries().size(), 6);
  // lru: the least recently used first; size_aware and callback: no index.
  assert_false(resident_index(evict_policy::size_aware).supported());
  assert_false(resident_index(evict_policy::callback).supported());
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pointer_map_matches_reference),
      cmocka_unit_test(parse_size_units),
      cmocka_unit_test(format_round_trips),
      cmocka_unit_test(config_takes_and_rejects),
      cmocka_unit_test(sim_devices_strings),
      cmocka_unit_test(tiered_records_are_reused),
      cmocka_unit_test(arena_index_matches_scan),
      cmocka_unit_test(resident_index_orders_by_policy),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
