// Fault injection at the system resources' sites (see fault_injection.hpp):
// the counters, the armed sites and the DAO_FAULT_INJECT spec.
#include "resource/fault_injection.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.hpp"

namespace dao::detail::faults {

namespace {

struct site_state {
  std::atomic<bool> armed{false};
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> fail_at{0};    // call number that fails; 0: none
  std::atomic<std::uint64_t> threshold{0};  // probability * 2^64; 0: none
  std::atomic<std::uint64_t> draws{0};
  std::atomic<std::uint64_t> seed{0};
  std::atomic<std::uint64_t> injected{0};
};

site_state g_sites[site_count];
std::once_flag g_env_once;

bool arm_spec(const char* spec) noexcept;

std::uint64_t mix64(std::uint64_t x) noexcept {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void arm_from_environment() noexcept {
  const char* spec = std::getenv("DAO_FAULT_INJECT");
  if (spec == nullptr || *spec == '\0') return;
  if (!arm_spec(spec)) {
    // No status can reach anyone here: say it where a tester will look.
    std::fprintf(stderr, "libdao: DAO_FAULT_INJECT='%s' is malformed; no faults injected\n", spec);
  }
}

bool parse_site(const std::string& name, site& out) noexcept {
  for (int i = 0; i < site_count; ++i) {
    if (name == site_name(static_cast<site>(i))) {
      out = static_cast<site>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* site_name(site s) noexcept {
  switch (s) {
    case alloc: return "alloc";
    case map: return "map";
    case copy: return "copy";
    case record: return "record";
    default: return "?";
  }
}

bool inject(site s) noexcept {
  std::call_once(g_env_once, arm_from_environment);
  site_state& st = g_sites[s];
  const std::uint64_t n = st.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!st.armed.load(std::memory_order_relaxed)) return false;
  bool fail = false;
  std::uint64_t at = st.fail_at.load(std::memory_order_relaxed);
  if (at != 0 && n == at && st.fail_at.compare_exchange_strong(at, 0, std::memory_order_relaxed))
    fail = true;
  const std::uint64_t threshold = st.threshold.load(std::memory_order_relaxed);
  if (!fail && threshold != 0) {
    const std::uint64_t draw = st.draws.fetch_add(1, std::memory_order_relaxed);
    fail = mix64(st.seed.load(std::memory_order_relaxed) ^ mix64(draw)) < threshold;
  }
  if (fail) st.injected.fetch_add(1, std::memory_order_relaxed);
  return fail;
}

namespace {

void set_nth(site s, std::uint64_t n) noexcept {
  site_state& st = g_sites[s];
  st.fail_at.store(n == 0 ? 0 : st.calls.load(std::memory_order_relaxed) + n,
                   std::memory_order_relaxed);
  st.armed.store(n != 0 || st.threshold.load(std::memory_order_relaxed) != 0,
                 std::memory_order_relaxed);
}

void set_probability(site s, double p, std::uint64_t seed) noexcept {
  site_state& st = g_sites[s];
  std::uint64_t threshold = 0;
  if (p >= 1) threshold = UINT64_MAX;
  else if (p > 0) threshold = static_cast<std::uint64_t>(p * 18446744073709551616.0);
  st.seed.store(seed, std::memory_order_relaxed);
  st.draws.store(0, std::memory_order_relaxed);
  st.threshold.store(threshold, std::memory_order_relaxed);
  st.armed.store(threshold != 0 || st.fail_at.load(std::memory_order_relaxed) != 0,
                 std::memory_order_relaxed);
}

}  // namespace

void raise_fault(site s, const std::string& where) {
  const std::string message = where + ": failed (injected fault at site '" + site_name(s) +
                              "', call " + std::to_string(calls(s)) +
                              "; DAO_FAULT_INJECT or a test armed it)";
  if (s == copy) throw backend_error(message);
  throw out_of_memory(message);
}

void fail_nth(site s, std::uint64_t n) noexcept {
  std::call_once(g_env_once, arm_from_environment);
  set_nth(s, n);
}

void fail_with_probability(site s, double p, std::uint64_t seed) noexcept {
  std::call_once(g_env_once, arm_from_environment);
  set_probability(s, p, seed);
}

void reset() noexcept {
  std::call_once(g_env_once, [] {});  // a reset also overrides the environment
  for (site_state& st : g_sites) {
    st.armed.store(false, std::memory_order_relaxed);
    st.fail_at.store(0, std::memory_order_relaxed);
    st.threshold.store(0, std::memory_order_relaxed);
    st.calls.store(0, std::memory_order_relaxed);
    st.draws.store(0, std::memory_order_relaxed);
    st.injected.store(0, std::memory_order_relaxed);
  }
}

std::uint64_t calls(site s) noexcept { return g_sites[s].calls.load(std::memory_order_relaxed); }

std::uint64_t injected(site s) noexcept {
  return g_sites[s].injected.load(std::memory_order_relaxed);
}

bool arm_from_spec(const char* spec) noexcept {
  std::call_once(g_env_once, arm_from_environment);
  return arm_spec(spec);
}

namespace {

// "alloc=5,map=p0.01,copy=3,seed=7": the n-th call, or each call with
// probability p (the seed applies to every probability in the spec).
bool arm_spec(const char* spec) noexcept {
  try {
    struct request {
      bool nth = false, prob = false;
      std::uint64_t n = 0;
      double p = 0;
    } wanted[site_count];
    std::uint64_t seed = 0;
    std::string text(spec);
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t comma = text.find(',', pos);
      if (comma == std::string::npos) comma = text.size();
      const std::string item = text.substr(pos, comma - pos);
      pos = comma + 1;
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) return false;
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      char* end = nullptr;
      if (key == "seed") {
        seed = std::strtoull(value.c_str(), &end, 10);
        if (*end != '\0') return false;
        continue;
      }
      site s;
      if (!parse_site(key, s)) return false;
      if (value[0] == 'p') {
        const double p = std::strtod(value.c_str() + 1, &end);
        if (end == value.c_str() + 1 || *end != '\0' || !(p > 0 && p <= 1)) return false;
        wanted[s].prob = true;
        wanted[s].p = p;
      } else {
        const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
        if (end == value.c_str() || *end != '\0' || n == 0 || value[0] == '-') return false;
        wanted[s].nth = true;
        wanted[s].n = n;
      }
    }
    for (int i = 0; i < site_count; ++i) {
      if (wanted[i].nth) set_nth(static_cast<site>(i), wanted[i].n);
      if (wanted[i].prob) set_probability(static_cast<site>(i), wanted[i].p, seed);
    }
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

}  // namespace dao::detail::faults
