// fuzz_config: arbitrary bytes as configuration strings.
//
// The first byte picks a target, the rest is the text:
//   0-2  dao_allocator_create with strategy buddy / caching / system, on
//        SIM 0 (64 MiB), SIM 1 (4 MiB) or the CPU (the second byte picks);
//   3    dao_tiered_create on SIM 0;
//   4    dao_recycle_create on the CPU;
//   5    the internal parser, config::parse, with every take_* on its keys;
//   6    the internal size parser, parse_size;
//   7-   dao_allocator_create as 0-2 with the strategies after the third of
//        strategy/strategy_list.h (7: limit), so that older inputs keep
//        their meaning.
// The text may stack strategies (`upstream=<name>`, `upstream.<key>=...`).
// Invariants:
//   - nothing crashes, hangs or leaks, and no exception other than libdao's
//     own escapes the internal parser (ASan, UBSan, libFuzzer);
//   - a failing call gives a documented status with a message, and leaves
//     its out-parameter alone;
//   - an allocator created from a config reports (dao_allocator_info) an
//     effective config that holds every key of its strategy once (and, when
//     stacked or an adaptor, `upstream` and the keys of the strategy below
//     prefixed `upstream.`, recursively), that
//     creates an allocator again, whose effective config is the same string
//     (round trip), and whose values are the values asked for;
//   - the allocator works (SIM): a small block can be allocated, written,
//     freed;
//   - config::parse gives trimmed, non-empty keys and values without commas,
//     distinct keys, and parses its own re-serialisation to the same list;
//   - parse_size of plain digits equals strtoull, and the exact formatting
//     of any parsed size parses back to the same number.
#include <cerrno>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"

#include "core/config.hpp"
#include "core/error.hpp"
#include "strategy/strategy_list.h"
#include "util/format.hpp"

using dao::detail::config;

namespace {

// The model of each strategy of strategy/strategy_list.h, in its order: the
// keys of its own effective config (dao_allocator_info), and whether it is
// an adaptor (over the place kind's built-in default without `upstream`).
struct strategy_model {
  const char* name;
  std::vector<std::string> keys;
  bool adaptor;
};
const strategy_model kModels[] = {
    {"buddy", {"min_block", "chunk_size", "max_pool", "initial_pool"}, false},
    {"caching",
     {"max_split_size", "roundup_power2_divisions", "garbage_collection_threshold",
      "memory_fraction", "max_pool", "expandable_segments", "reserve_slack", "reserve_headroom",
      "fast_reuse", "map_chunk"},
     false},
    {"system", {}, false},
    {"limit", {"max_pool", "memory_fraction"}, true},
};
#define FUZZ_STRATEGY_NAME(s) #s,
const char* const kStrategies[] = {DAO_STRATEGY_LIST(FUZZ_STRATEGY_NAME)};
#undef FUZZ_STRATEGY_NAME
constexpr int kStrategyCount = static_cast<int>(sizeof kStrategies / sizeof kStrategies[0]);
static_assert(sizeof kModels / sizeof kModels[0] == sizeof kStrategies / sizeof kStrategies[0],
              "a strategy of strategy_list.h without its model here (kModels)");
static_assert(kStrategyCount >= 3, "targets 0-2 are the first three strategies");

int strategy_index(const std::string& name) {
  for (int i = 0; i < kStrategyCount; ++i)
    if (name == kStrategies[i]) return i;
  FUZZ_FAIL("an allocator was created over the unknown strategy '%s'", name.c_str());
  return 0;
}

// The keys of the effective config of strategy `index` created from the
// config `asked`, under `prefix` ("upstream." for the strategy below, ...).
void expected_keys(int index, const std::map<std::string, std::string>& asked,
                   const std::string& prefix, dao_place place, std::vector<std::string>& out) {
  for (const std::string& k : kModels[index].keys) out.push_back(prefix + k);
  std::string below;
  auto it = asked.find(prefix + "upstream");
  if (it != asked.end()) below = it->second;
  else if (kModels[index].adaptor) below = place.kind == DAO_PLACE_CPU ? "buddy" : "caching";
  if (below.empty()) return;
  out.push_back(prefix + "upstream");
  expected_keys(strategy_index(below), asked, prefix + "upstream.", place, out);
}

// A key without its `upstream.` prefixes.
std::string base_key(const std::string& key) {
  std::string k = key;
  while (k.compare(0, 9, "upstream.") == 0) k.erase(0, 9);
  return k;
}

enum class kind { size, number, boolean, none_or_number, auto_or_size };

kind kind_of(const std::string& key) {
  if (key == "roundup_power2_divisions" || key == "garbage_collection_threshold" ||
      key == "memory_fraction" || key == "max_split_size_mb")
    return kind::number;
  if (key == "expandable_segments" || key == "fast_reuse") return kind::boolean;
  if (key == "reserve_slack" || key == "reserve_headroom") return kind::none_or_number;
  if (key == "map_chunk") return kind::auto_or_size;
  return kind::size;
}

// Splits "k=v,k=v" the way config::parse does (it is known to succeed).
std::map<std::string, std::string> split(const std::string& text) {
  std::map<std::string, std::string> out;
  config c = config::parse(text, "fuzz");
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    std::string item(dao::detail::trim_spaces(std::string_view(text).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (!item.empty()) {
      std::size_t eq = item.find('=');
      out[std::string(dao::detail::trim_spaces(std::string_view(item).substr(0, eq)))] =
          std::string(dao::detail::trim_spaces(std::string_view(item).substr(eq + 1)));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double number_of(const std::string& v) { return std::strtod(v.c_str(), nullptr); }

bool boolean_of(const std::string& v) {
  for (const char* yes : {"1", "true", "yes", "on"})
    if (strcasecmp(v.c_str(), yes) == 0) return true;
  return false;
}

// Whether the value asked for (`asked`, a key of the input) is the value
// reported (`effective`), for the key as the effective config names it.
void check_value(const std::string& prefixed, const std::string& asked,
                 const std::string& effective, const std::string& input,
                 const std::string& eff_config) {
  const std::string key = base_key(prefixed);
  bool same = true;
  if (key == "upstream") {  // the name of the strategy below
    FUZZ_CHECK(asked == effective, "config '%s' asked %s=%s but the effective config '%s' says %s",
               input.c_str(), prefixed.c_str(), asked.c_str(), eff_config.c_str(),
               effective.c_str());
    return;
  }
  switch (kind_of(key)) {
    case kind::size: {
      std::size_t want = dao::detail::parse_size(asked, key);
      // max_split_size: blocks of SIZE_MAX bytes and more are never split
      // anyway, so it means no limit, which the effective config calls 0.
      if (key == "max_split_size" && want == SIZE_MAX) want = 0;
      same = want == dao::detail::parse_size(effective, key);
      break;
    }
    case kind::number: same = number_of(asked) == number_of(effective); break;
    case kind::boolean: same = boolean_of(asked) == boolean_of(effective); break;
    case kind::none_or_number:
      same = (asked == "none") == (effective == "none") &&
             (asked == "none" || number_of(asked) == number_of(effective));
      break;
    case kind::auto_or_size:
      same = (asked == "auto") == (effective == "auto") &&
             (asked == "auto" ||
              dao::detail::parse_size(asked, key) == dao::detail::parse_size(effective, key));
      break;
  }
  if (!same)
    FUZZ_FAIL("config '%s' asked %s=%s but the effective config '%s' says %s=%s", input.c_str(),
              prefixed.c_str(), asked.c_str(), eff_config.c_str(), prefixed.c_str(),
              effective.c_str());
}

void fuzz_allocator_config(int strategy, int where, const std::string& text) {
  dao_place place = where == 0 ? dao_place_sim(0) : where == 1 ? dao_place_sim(1) : dao_place_cpu();
  // An initial_pool on the CPU would reserve real host memory of any size
  // the input asks for; SIM devices check their capacity first.
  if (where == 2 && text.find("initial_pool") != std::string::npos) place = dao_place_sim(0);
  dao_allocator* sentinel = reinterpret_cast<dao_allocator*>(uintptr_t{0x5a5a5a5a5a5a5a00});
  dao_allocator* a = sentinel;
  dao_status s = dao_allocator_create(place, kStrategies[strategy], text.c_str(), &a);
  FUZZ_MESSAGE(s);
  if (s != DAO_OK) {
    FUZZ_CHECK(s == DAO_ERR_INVALID_ARGUMENT || s == DAO_ERR_OUT_OF_MEMORY,
               "dao_allocator_create(%s, '%s') gave %d (%s)", kStrategies[strategy], text.c_str(),
               (int)s, dao_status_string(s));
    FUZZ_CHECK(a == sentinel, "a failed dao_allocator_create changed its out-parameter");
    return;
  }
  const char* name = nullptr;
  const char* eff = nullptr;
  dao_place got_place{};
  FUZZ_OK(dao_allocator_info(a, &got_place, &name, &eff));
  FUZZ_CHECK(name != nullptr && std::strcmp(name, kStrategies[strategy]) == 0,
             "strategy reported as '%s'", name ? name : "(null)");
  FUZZ_CHECK(got_place.kind == place.kind && got_place.device == place.device, "place changed");
  const std::string eff1 = eff;

  // Every key of the strategy, once, and nothing else.
  std::map<std::string, std::string> keys;
  try {
    keys = split(eff1);
  } catch (const dao::detail::error& e) {
    FUZZ_FAIL("effective config '%s' does not parse: %s", eff1.c_str(), e.what());
  }
  const std::map<std::string, std::string> asked = split(text);
  std::vector<std::string> expected;
  expected_keys(strategy, asked, "", place, expected);
  FUZZ_CHECK(keys.size() == expected.size(), "effective config '%s' has %zu keys, expected %zu",
             eff1.c_str(), keys.size(), expected.size());
  for (const std::string& k : expected)
    FUZZ_CHECK(keys.count(k) == 1, "effective config '%s' lacks %s", eff1.c_str(), k.c_str());

  // The values asked for are the values reported.
  for (const auto& [k, v] : asked) {
    const std::string base = base_key(k);
    if (base == "max_split_size_mb") {
      const std::string prefix = k.substr(0, k.size() - base.size());
      const std::string bytes_key = prefix + "max_split_size";
      if (asked.count(bytes_key) != 0) continue;  // both given: one wins
      double mb = number_of(v);
      std::size_t eff_bytes = dao::detail::parse_size(keys[bytes_key], k);
      // mb is a whole number that passed validation; mb MiB may not fit a size_t.
      if (mb >= 17592186044416.0 /* 2^44 */ || eff_bytes != static_cast<std::size_t>(mb) << 20)
        FUZZ_FAIL("config '%s' asked %s=%s but the effective config '%s' says %s=%s", text.c_str(),
                  k.c_str(), v.c_str(), eff1.c_str(), bytes_key.c_str(), keys[bytes_key].c_str());
      continue;
    }
    if (base == "expandable_segments") continue;  // false where the place cannot map
    if (keys.count(k) != 0) {
      check_value(k, v, keys[k], text, eff1);
    }
  }

  // The allocator works (on SIM devices: a CPU allocator may take a chunk
  // of any size the input asks for from the host).
  if (where != 2) {
    void* p = nullptr;
    dao_status sa = dao_allocator_alloc(a, 1000, nullptr, &p);
    FUZZ_CHECK(sa == DAO_OK || sa == DAO_ERR_OUT_OF_MEMORY, "alloc of 1000 bytes gave %d (%s)",
               (int)sa, dao_status_string(sa));
    if (sa == DAO_OK) {
      FUZZ_CHECK(p != nullptr && reinterpret_cast<uintptr_t>(p) % 256 == 0, "bad pointer %p", p);
      fuzz::fill(p, 1000, 7);
      FUZZ_CHECK(fuzz::first_mismatch(p, 1000, 7) == 1000, "block does not hold what was written");
      FUZZ_OK(dao_allocator_free(a, p));
    }
  }
  // Gone first: an initial_pool may fill the device.
  FUZZ_OK(dao_allocator_destroy(a));

  // Round trip.
  dao_allocator* b = nullptr;
  dao_status s2 = dao_allocator_create(place, kStrategies[strategy], eff1.c_str(), &b);
  if (s2 != DAO_OK)
    FUZZ_FAIL("config '%s' gives the effective config '%s', which dao_allocator_create refuses "
              "with %d (%s)",
              text.c_str(), eff1.c_str(), (int)s2, dao_status_string(s2));
  const char* eff2 = nullptr;
  FUZZ_OK(dao_allocator_info(b, nullptr, nullptr, &eff2));
  FUZZ_CHECK(eff1 == eff2, "round trip: '%s' gives '%s', which gives '%s'", text.c_str(),
             eff1.c_str(), eff2);
  FUZZ_OK(dao_allocator_destroy(b));
}

void fuzz_tiered_config(const std::string& text) {
  dao_tiered* pool = reinterpret_cast<dao_tiered*>(uintptr_t{0x5a5a5a5a5a5a5a00});
  dao_status s = dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 1 << 20, text.c_str(), &pool);
  FUZZ_MESSAGE(s);
  if (s != DAO_OK) {
    FUZZ_CHECK(s == DAO_ERR_INVALID_ARGUMENT, "dao_tiered_create('%s') gave %d (%s)", text.c_str(),
               (int)s, dao_status_string(s));
    return;
  }
  dao_tensor* t = nullptr;
  FUZZ_OK(dao_tensor_create(pool, 4096, &t));
  FUZZ_OK(dao_tensor_release(t));
  FUZZ_OK(dao_tiered_synchronize(pool));
  FUZZ_OK(dao_tiered_destroy(pool));
}

void fuzz_recycle_config(const std::string& text) {
  const size_t shape[1] = {64};
  dao_recycle_pool* pool = reinterpret_cast<dao_recycle_pool*>(uintptr_t{0x5a5a5a5a5a5a5a00});
  dao_status s = dao_recycle_create(dao_place_cpu(), 4, 1, shape, 2, 1, text.c_str(), &pool);
  FUZZ_MESSAGE(s);
  if (s != DAO_OK) {
    FUZZ_CHECK(s == DAO_ERR_INVALID_ARGUMENT, "dao_recycle_create('%s') gave %d (%s)", text.c_str(),
               (int)s, dao_status_string(s));
    return;
  }
  dao_buffer* b = nullptr;
  FUZZ_OK(dao_recycle_acquire(pool, 0, &b));
  FUZZ_OK(dao_buffer_release(b));
  FUZZ_OK(dao_recycle_destroy(pool));
}

void fuzz_parser(std::string_view text) {
  config c;
  try {
    c = config::parse(text, "fuzz");
  } catch (const dao::detail::invalid_argument&) {
    return;
  }
  // Re-split by hand and compare with what the parser kept.
  std::vector<std::pair<std::string, std::string>> items;
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t comma = rest.find(',');
    std::string_view item = dao::detail::trim_spaces(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    FUZZ_CHECK(eq != std::string_view::npos, "parse accepted an item without '='");
    std::string k(dao::detail::trim_spaces(item.substr(0, eq)));
    std::string v(dao::detail::trim_spaces(item.substr(eq + 1)));
    FUZZ_CHECK(!k.empty() && !v.empty(), "parse accepted an empty key or value");
    for (const auto& [k2, v2] : items) FUZZ_CHECK(k2 != k, "parse accepted a repeated key");
    items.emplace_back(k, v);
  }
  // Every key is found by take_string with its value; re-serialised, the
  // list parses to the same list.
  std::string again;
  for (const auto& [k, v] : items) {
    std::optional<std::string> got = c.take_string(k);
    FUZZ_CHECK(got.has_value() && *got == v, "take_string(%s) lost its value", k.c_str());
    again += k + "=" + v + ",";
  }
  c.reject_unknown({});  // all taken: must not throw
  config d = config::parse(again, "fuzz again");
  for (const auto& [k, v] : items) {
    std::optional<std::string> got = d.take_string(k);
    FUZZ_CHECK(got.has_value() && *got == v, "re-serialised config lost %s", k.c_str());
    // The typed readers either give a value or throw libdao's invalid_argument.
    config e = config::parse(k + "=" + v, "fuzz typed");
    try {
      (void)e.take_size(k);
    } catch (const dao::detail::invalid_argument&) {
    }
    try {
      std::optional<double> x = e.take_double(k);
      FUZZ_CHECK(!x || std::isfinite(*x), "take_double gave a non-finite number");
    } catch (const dao::detail::invalid_argument&) {
    }
    try {
      (void)e.take_bool(k);
    } catch (const dao::detail::invalid_argument&) {
    }
  }
  d.reject_unknown({});
  // A key that is not there is not taken.
  try {
    config f = config::parse(text, "fuzz unknown");
    if (!items.empty()) {
      f.reject_unknown({});
      FUZZ_FAIL("reject_unknown accepted untaken keys");
    }
  } catch (const dao::detail::invalid_argument&) {
  }
}

void fuzz_size(std::string_view text) {
  std::size_t v = 0;
  try {
    v = dao::detail::parse_size(text, "fuzz");
  } catch (const dao::detail::invalid_argument&) {
    // Plain digits that fit are never refused.
    std::string_view t = dao::detail::trim_spaces(text);
    if (!t.empty() && t.size() <= 19 && t.find_first_not_of("0123456789") == std::string_view::npos)
      FUZZ_FAIL("parse_size refused the number '%.*s'", (int)t.size(), t.data());
    return;
  }
  std::string_view t = dao::detail::trim_spaces(text);
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos) {
    std::string digits(t);
    errno = 0;
    unsigned long long want = std::strtoull(digits.c_str(), nullptr, 10);
    FUZZ_CHECK(errno == 0 && want == v, "parse_size('%s') = %zu, strtoull says %llu",
               digits.c_str(), v, want);
  }
  std::string exact = dao::detail::format_size_exact(v);
  std::size_t back = dao::detail::parse_size(exact, "fuzz exact");
  FUZZ_CHECK(back == v, "format_size_exact(%zu) = '%s' parses to %zu", v, exact.c_str(), back);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (int i = 0; i < kStrategyCount; ++i)
    if (std::strcmp(kModels[i].name, kStrategies[i]) != 0) {
      std::fprintf(stderr, "fuzz_config: model %d is '%s', strategy_list.h says '%s'\n", i,
                   kModels[i].name, kStrategies[i]);
      std::abort();
    }
  const size_t caps[2] = {size_t(64) << 20, size_t(4) << 20};
  if (dao_sim_configure(2, caps) != DAO_OK) {
    std::fprintf(stderr, "fuzz_config: dao_sim_configure: %s\n", dao_last_error());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const int target = data[0] % (4 + kStrategyCount);
  std::string_view raw(reinterpret_cast<const char*>(data + 1), size - 1);
  if (target <= 2 || target >= 7) {
    if (raw.empty()) return 0;
    const int where = static_cast<unsigned char>(raw[0]) % 3;
    // A C string ends at its first NUL.
    std::string text(raw.substr(1));
    text = text.c_str();
    fuzz_allocator_config(target <= 2 ? target : target - 4, where, text);
  } else if (target == 3 || target == 4) {
    std::string text(raw);
    text = text.c_str();
    if (target == 3) fuzz_tiered_config(text);
    else fuzz_recycle_config(text);
  } else if (target == 5) {
    fuzz_parser(raw);
  } else {
    fuzz_size(raw);
  }
  return 0;
}
