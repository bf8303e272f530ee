// fuzz_allocator: random sequences of allocator operations against a
// reference model.
//
// The input drives up to 256 steps on up to 4 allocators (every strategy of
// strategy/strategy_list.h, alone or stacked with `upstream=`, with random
// valid and invalid configs, on the CPU or a SIM device of 64 MiB) and the three place defaults
// (dao_alloc / dao_free on CPU, SIM 0 and SIM 1): allocations of every size (0, small, large,
// beyond a device, huge) on the default stream or a stream of any place, frees of live blocks,
// double frees, frees of interior, foreign and other allocators' pointers,
// frees on the wrong place, usable_size, streams created, synchronised and
// destroyed, writes and checks queued on streams (host functions and
// dao_memcpy_async), record_stream, stream-ordered frees, copies, trims,
// statistics, detailed statistics, peaks and counters reset, snapshots, JSON,
// destroy (refused while blocks are live), and calls with bad handles.
//
// Invariants, checked after every step:
//   - every call gives the status its documentation promises (for bad input:
//     the status, a message, and nothing changed: all statistics equal);
//   - every pointer is 256-aligned, its usable size at least what was asked,
//     and no two live blocks of any allocator overlap;
//   - statistics agree with the model: live_blocks = live blocks,
//     allocated_bytes = sum of usable sizes, requested_bytes = sum of sizes
//     asked, alloc_count / free_count = calls that succeeded, reserved >=
//     allocated, peaks >= current values; the detailed statistics agree too
//     (small + large = all for caching); dao_used = the place default's bytes;
//   - a trim gives back exactly the reserved bytes it reports;
//   - a snapshot lists exactly the model's live blocks (address, size, size
//     asked) as allocated, its blocks tile each segment, its mapped bytes sum
//     to the reserved bytes;
//   - every live block holds the pattern last written into the bytes asked
//     for (not the whole usable size: under ASan the strategies poison the
//     bytes past the size asked for): checked at every free (in stream order for stream-ordered
//     frees), after trims, and for all blocks at the end of the input.
#include <algorithm>
#include <cinttypes>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <time.h>

#include "fuzz_common.h"
#include "strategy/strategy_list.h"

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;
constexpr std::size_t kSimCapacity = 64 * MiB;
constexpr std::size_t kMaxLiveBytes = 96 * MiB;  // what the model may hold at once
constexpr int kPlaces = 3;                       // CPU, SIM 0, SIM 1

dao_place place_of(int pl) { return pl == 0 ? dao_place_cpu() : dao_place_sim(pl - 1); }

enum strategy_kind { kBuddy, kCaching, kSystem };  // the first three of the list
#define FUZZ_STRATEGY_NAME(s) #s,
const char* const kStrategyNames[] = {DAO_STRATEGY_LIST(FUZZ_STRATEGY_NAME)};
#undef FUZZ_STRATEGY_NAME
constexpr int kStrategyCount = static_cast<int>(sizeof kStrategyNames / sizeof kStrategyNames[0]);

// The behaviour model of each strategy of the list, in its order: which
// semantics apply (stream-ordered, with snapshots and every statistic, as
// "caching"; or freeing at once, as "buddy" and "system"; or, for an
// adaptor, those of the strategy below it, by default the place kind's
// built-in default), and the config keys it takes with a few values each
// (the first valid, the last often not).
enum class semantics { frees_at_once, stream_ordered, as_below };
struct strategy_model {
  const char* name;
  semantics sem;
  const char* const (*keys)[6];
  int nkeys;
};
const char* const kBuddyKeys[][6] = {
    {"min_block", "256", "512", "4096", "65536", "100"},
    {"chunk_size", "1MiB", "2MiB", "4MiB", "16MiB", "3MiB"},
    {"max_pool", "0", "4MiB", "16MiB", "32MiB", "1GiB"},
    {"initial_pool", "0", "1MiB", "4MiB", "8MiB", "100MiB"},
};
const char* const kCachingKeys[][6] = {
    {"max_split_size", "0", "21MiB", "32MiB", "64MiB", "1MiB"},
    {"roundup_power2_divisions", "0", "1", "2", "4", "3"},
    {"garbage_collection_threshold", "0", "0.5", "0.8", "0.95", "1.5"},
    {"memory_fraction", "0", "0.25", "0.5", "1", "2"},
    {"max_pool", "0", "8MiB", "16MiB", "48MiB", "1TiB"},
    {"expandable_segments", "true", "false", "1", "off", "maybe"},
    {"reserve_slack", "none", "0", "0.5", "2", "-1"},
    {"reserve_headroom", "none", "0", "0.1", "1", "x"},
    {"fast_reuse", "true", "false", "1", "on", "often"},
    {"map_chunk", "auto", "2MiB", "20MiB", "1GiB", "0"},
};
const char* const kLimitKeys[][6] = {
    {"max_pool", "0", "1MiB", "4MiB", "16MiB", "lots"},
    {"memory_fraction", "0", "0.05", "0.25", "1", "1.5"},
};
const strategy_model kModels[] = {
    {"buddy", semantics::frees_at_once, kBuddyKeys, static_cast<int>(std::size(kBuddyKeys))},
    {"caching", semantics::stream_ordered, kCachingKeys, static_cast<int>(std::size(kCachingKeys))},
    {"system", semantics::frees_at_once, nullptr, 0},
    {"limit", semantics::as_below, kLimitKeys, static_cast<int>(std::size(kLimitKeys))},
};
static_assert(sizeof kModels / sizeof kModels[0] ==
                  sizeof kStrategyNames / sizeof kStrategyNames[0],
              "a strategy of strategy_list.h without its model here (kModels)");

// Whether an allocator of the stack `chain` (top first; an adaptor at the
// bottom stands over the place kind's default) is stream-ordered.
bool stream_ordered(const std::vector<int>& chain, int pl) {
  for (int k : chain)
    if (kModels[k].sem != semantics::as_below) return kModels[k].sem == semantics::stream_ordered;
  return pl != 0;  // built-in defaults: buddy on the CPU, caching on SIM devices
}

struct stream_rec {
  dao_stream s = nullptr;
  int pl = 0;
  int refs = 0;       // live blocks allocated on it or recorded on it
  bool busy = false;  // work queued since the last synchronize
};

struct block {
  void* p = nullptr;
  std::size_t req = 0;
  std::size_t usable = 0;
  std::size_t filled = 0;  // bytes of the pattern (min(req, table))
  std::uint64_t seed = 0;
  int stream = -1;                // stream it was allocated on
  int write_stream = -1;          // stream with a pending write, or -1
  std::vector<int> read_streams;  // streams with pending reads
  std::vector<int> recorded;      // record_stream
};

struct allocator_rec {
  dao_allocator* a = nullptr;
  int strategy = kBuddy;  // the strategy on top
  bool ordered = false;   // stream-ordered (see stream_ordered())
  int pl = 0;
  bool place_default = false;
  bool limited = false;            // max_pool / memory_fraction: may run out on the CPU
  bool accumulated_reset = false;  // reset_accumulated_stats was called (or, for a
                                   // place default, may have been, before this input)
  std::map<std::uintptr_t, block> live;
  std::vector<void*> freed;  // pointers freed, for double frees
  std::uint64_t base_allocs = 0, base_frees = 0, allocs = 0, frees = 0;
};

struct host_task {
  void* p;
  std::size_t n;
  std::uint64_t seed;
  bool check;
};

void run_task(void* user) {
  auto* t = static_cast<host_task*>(user);
  if (t->check) {
    std::size_t i = fuzz::first_mismatch(t->p, t->n, t->seed);
    if (i != t->n)
      FUZZ_FAIL("a check in stream order found block %p (%zu bytes, seed %" PRIu64
                ") changed at byte %zu",
                t->p, t->n, t->seed, i);
  } else {
    fuzz::fill(t->p, t->n, t->seed);
  }
  delete t;
}

// Keeps a stream busy for a while (user_data: microseconds), so that what
// the caller does next happens before the work queued after it runs.
void delay(void* us) {
  struct timespec ts = {0, static_cast<long>(reinterpret_cast<std::uintptr_t>(us)) * 1000};
  nanosleep(&ts, nullptr);
}

class machine {
 public:
  explicit machine(FuzzedDataProvider& in) : in_(in) {}

  void run() {
    for (int pl = 0; pl < kPlaces; ++pl) {
      FUZZ_OK(dao_event_create(place_of(pl), &events_[pl]));
      allocator_rec r;
      FUZZ_OK(dao_place_allocator(place_of(pl), &r.a));
      r.strategy = pl == 0 ? kBuddy : kCaching;  // the defaults (no DAO_ALLOCATOR set)
      r.ordered = pl != 0;
      r.pl = pl;
      r.place_default = true;
      r.accumulated_reset = true;
      dao_allocator_stats s = stats(r);
      r.base_allocs = s.alloc_count;
      r.base_frees = s.free_count;
      FUZZ_CHECK(s.live_blocks == 0, "place default starts an input with live blocks");
      allocs_.push_back(std::move(r));
    }
    for (int step = 0; step < 256 && in_.remaining_bytes() > 0; ++step) {
      this->step();
      check_all_stats();
    }
    finish();
  }

 private:
  // ------------------------------------------------------------ helpers
  dao_allocator_stats stats(const allocator_rec& r) {
    dao_allocator_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    FUZZ_OK(dao_allocator_get_stats(r.a, &s));
    return s;
  }

  void check_stats(const allocator_rec& r) {
    dao_allocator_stats s = stats(r);
    std::uint64_t allocated = 0, requested = 0;
    for (const auto& [addr, b] : r.live) {
      allocated += b.usable;
      requested += b.req;
    }
    const char* name = kStrategyNames[r.strategy];
    FUZZ_CHECK(s.live_blocks == r.live.size(), "%s: live_blocks %" PRIu64 ", model %zu", name,
               s.live_blocks, r.live.size());
    FUZZ_CHECK(s.allocated_bytes == allocated,
               "%s: allocated_bytes %" PRIu64 ", sum of usable sizes %" PRIu64, name,
               s.allocated_bytes, allocated);
    FUZZ_CHECK(s.requested_bytes == requested, "%s: requested_bytes %" PRIu64 ", model %" PRIu64,
               name, s.requested_bytes, requested);
    FUZZ_CHECK(s.reserved_bytes >= s.allocated_bytes,
               "%s: reserved %" PRIu64 " < allocated %" PRIu64, name, s.reserved_bytes,
               s.allocated_bytes);
    FUZZ_CHECK(
        s.peak_allocated_bytes >= s.allocated_bytes && s.peak_reserved_bytes >= s.reserved_bytes,
        "%s: a peak below its current value", name);
    FUZZ_CHECK(s.alloc_count == r.base_allocs + r.allocs && s.free_count == r.base_frees + r.frees,
               "%s: alloc_count %" PRIu64 " free_count %" PRIu64 ", model %" PRIu64 " %" PRIu64,
               name, s.alloc_count, s.free_count, r.base_allocs + r.allocs, r.base_frees + r.frees);
    // The detailed statistics say the same.
    dao_stat st;
    FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &st));
    FUZZ_CHECK(st.current == static_cast<std::int64_t>(allocated) && st.peak >= st.current,
               "%s: allocated stat %" PRId64 " (peak %" PRId64 "), model %" PRIu64, name,
               st.current, st.peak, allocated);
    FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_REQUESTED_BYTES, DAO_STAT_POOL_ALL, &st));
    FUZZ_CHECK(st.current == static_cast<std::int64_t>(requested), "%s: requested stat %" PRId64,
               name, st.current);
    FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL, &st));
    FUZZ_CHECK(st.current == static_cast<std::int64_t>(s.reserved_bytes),
               "%s: reserved stat %" PRId64 ", stats %" PRIu64, name, st.current, s.reserved_bytes);
    FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_POOL_ALL, &st));
    FUZZ_CHECK(st.current == static_cast<std::int64_t>(r.live.size()),
               "%s: blocks stat %" PRId64 ", model %zu", name, st.current, r.live.size());
    if (!r.ordered) {  // they free at once: active = allocated
      FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_ACTIVE_BYTES, DAO_STAT_POOL_ALL, &st));
      FUZZ_CHECK(st.current == static_cast<std::int64_t>(allocated),
                 "%s: active %" PRId64 " != allocated %" PRIu64, name, st.current, allocated);
    }
    if (r.ordered) {
      for (int m : {DAO_STAT_ALLOCATED_BYTES, DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_REQUESTED_BYTES,
                    DAO_STAT_ACTIVE_BYTES, DAO_STAT_RESERVED_BYTES}) {
        dao_stat all, small, large;
        FUZZ_OK(dao_allocator_get_stat(r.a, (dao_stat_metric)m, DAO_STAT_POOL_ALL, &all));
        FUZZ_OK(dao_allocator_get_stat(r.a, (dao_stat_metric)m, DAO_STAT_POOL_SMALL, &small));
        FUZZ_OK(dao_allocator_get_stat(r.a, (dao_stat_metric)m, DAO_STAT_POOL_LARGE, &large));
        FUZZ_CHECK(all.current == small.current + large.current,
                   "caching: metric %d: all %" PRId64 " != small %" PRId64 " + large %" PRId64, m,
                   all.current, small.current, large.current);
        FUZZ_CHECK(all.current >= 0 && all.peak >= all.current, "caching: metric %d: peak/current",
                   m);
      }
      FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_POOL_ALL, &st));
      FUZZ_CHECK(st.current == static_cast<std::int64_t>(r.live.size()),
                 "caching: blocks stat %" PRId64, st.current);
      FUZZ_OK(dao_allocator_get_stat(r.a, DAO_STAT_ACTIVE_BYTES, DAO_STAT_POOL_ALL, &st));
      FUZZ_CHECK(st.current >= static_cast<std::int64_t>(allocated), "caching: active < allocated");
    }
    if (r.place_default) {
      size_t used = 0;
      FUZZ_OK(dao_used(place_of(r.pl), &used));
      FUZZ_CHECK(used == allocated, "dao_used(%d) = %zu, model %" PRIu64, r.pl, used, allocated);
    }
  }

  void check_all_stats() {
    for (const allocator_rec& r : allocs_) check_stats(r);
  }

  // Nothing may change on a refused call.
  struct frozen {
    dao_allocator_stats s;
  };
  frozen freeze(const allocator_rec& r) { return frozen{stats(r)}; }
  void same(const allocator_rec& r, const frozen& f, const char* what) {
    dao_allocator_stats s = stats(r);
    FUZZ_CHECK(std::memcmp(&s, &f.s, sizeof s) == 0, "%s changed the statistics of a %s allocator",
               what, kStrategyNames[r.strategy]);
  }

  void expect_refused(dao_status got, dao_status want, const char* what) {
    if (got != want)
      FUZZ_FAIL("%s gave %d (%s), expected %d (%s)", what, (int)got, dao_status_string(got),
                (int)want, dao_status_string(want));
    FUZZ_MESSAGE(got);
  }

  allocator_rec* pick_allocator() {
    if (allocs_.empty()) return nullptr;
    return &allocs_[in_.ConsumeIntegralInRange<std::size_t>(0, allocs_.size() - 1)];
  }

  block* pick_block(allocator_rec& r) {
    if (r.live.empty()) return nullptr;
    auto it = r.live.begin();
    std::advance(it, in_.ConsumeIntegralInRange<std::size_t>(0, r.live.size() - 1));
    return &it->second;
  }

  std::uint64_t new_seed() { return ++seed_; }

  // Overlap with any live block of any allocator.
  void check_no_overlap(const void* p, std::size_t n) {
    auto lo = reinterpret_cast<std::uintptr_t>(p);
    for (const allocator_rec& r : allocs_) {
      auto it = r.live.upper_bound(lo);
      if (it != r.live.end() && it->first < lo + n)
        FUZZ_FAIL("new block [%p, +%zu) overlaps live block %p of a %s allocator", p, n,
                  it->second.p, kStrategyNames[r.strategy]);
      if (it != r.live.begin()) {
        --it;
        if (it->first + it->second.usable > lo)
          FUZZ_FAIL("new block [%p, +%zu) overlaps live block %p (+%zu) of a %s allocator", p, n,
                    it->second.p, it->second.usable, kStrategyNames[r.strategy]);
      }
    }
  }

  // Waits for the work queued on a stream (only if some was: every wait is
  // a round trip to the stream's thread, slow on a loaded machine).
  void sync(int si) {
    if (si < 0 || !streams_[si].busy) return;
    FUZZ_OK(dao_stream_synchronize(streams_[si].s));
    streams_[si].busy = false;
  }

  // Waits for all queued work on the block.
  void quiesce(block& b) {
    sync(b.write_stream);
    for (int si : b.read_streams) sync(si);
    b.write_stream = -1;
    b.read_streams.clear();
    if (b.stream >= 0) sync(b.stream);  // a previous owner's work in stream order
  }

  void cpu_check(block& b, const char* when) {
    quiesce(b);
    std::size_t i = fuzz::first_mismatch(b.p, b.filled, b.seed);
    if (i != b.filled)
      FUZZ_FAIL("%s: block %p (%zu bytes asked, %zu usable, seed %" PRIu64 ") changed at byte %zu",
                when, b.p, b.req, b.usable, b.seed, i);
  }

  void cpu_fill(block& b) {
    quiesce(b);
    b.seed = new_seed();
    fuzz::fill(b.p, b.filled, b.seed);
  }

  // A write in the block's stream order.
  void stream_fill(block& b) {
    if (b.stream < 0) return cpu_fill(b);
    for (int si : b.read_streams) sync(si);  // readers see the old contents first
    b.read_streams.clear();
    b.seed = new_seed();
    dao_stream s = streams_[b.stream].s;
    if (in_.ConsumeBool()) {
      FUZZ_OK(dao_memcpy_async(b.p, fuzz::pattern(b.seed), b.filled, s));
    } else {
      FUZZ_OK(dao_launch_host_func(s, run_task, new host_task{b.p, b.filled, b.seed, false}));
    }
    streams_[b.stream].busy = true;
    b.write_stream = b.stream;
  }

  // A check queued on stream si, ordered after the block's pending write
  // (after a delay of `delay_us`, or now and then 500 us).
  void stream_check(block& b, int si, unsigned delay_us = 0) {
    if (b.write_stream >= 0 && b.write_stream != si) {
      const int wpl = streams_[b.write_stream].pl;
      FUZZ_OK(dao_event_record(events_[wpl], streams_[b.write_stream].s));
      if (streams_[si].pl != 0 && wpl != 0) {
        FUZZ_OK(dao_stream_wait_event(streams_[si].s, events_[wpl]));
      } else {
        FUZZ_OK(dao_event_synchronize(events_[wpl]));
      }
    }
    // Now and then the stream is busy for a while first, so that whatever
    // the caller does next happens before the check runs.
    if (delay_us == 0 && in_.ConsumeIntegralInRange<int>(0, 7) == 0) delay_us = 500;
    if (delay_us != 0)
      FUZZ_OK(dao_launch_host_func(streams_[si].s, delay,
                                   reinterpret_cast<void*>(std::uintptr_t{delay_us})));
    FUZZ_OK(
        dao_launch_host_func(streams_[si].s, run_task, new host_task{b.p, b.filled, b.seed, true}));
    streams_[si].busy = true;
    if (si != b.write_stream &&
        std::find(b.read_streams.begin(), b.read_streams.end(), si) == b.read_streams.end())
      b.read_streams.push_back(si);
  }

  void release_refs(block& b) {
    if (b.stream >= 0) --streams_[b.stream].refs;
    for (int si : b.recorded) --streams_[si].refs;
  }

  // ------------------------------------------------------------ steps
  void step() {
    switch (in_.ConsumeIntegralInRange<int>(0, 27)) {
      case 0:
      case 1: return op_create();
      case 2:
      case 3:
      case 4:
      case 5: return op_alloc();
      case 6:
      case 7:
      case 8: return op_free();
      case 9: return op_double_free();
      case 10: return op_interior();
      case 11: return op_foreign();
      case 12: return op_usable_size();
      case 13: return op_stream_create();
      case 14: return op_stream_destroy();
      case 15: return op_synchronize();
      case 16: return op_record_stream();
      case 17: return op_stream_write();
      case 18: return op_stream_read();
      case 19: return op_cpu_write_check();
      case 20: return op_trim();
      case 21: return op_get_stat();
      case 22: return op_snapshot();
      case 23: return op_json();
      case 24: return op_reset();
      case 25: return op_destroy();
      case 26: return op_bad_handles();
      default: return op_copy();
    }
  }

  // A strategy's own keys, each present or not, with one of its values.
  std::string make_keys(int strategy, bool& limited) {
    std::string out;
    const strategy_model& m = kModels[strategy];
    for (int k = 0; k < m.nkeys; ++k) {
      if (!in_.ConsumeBool()) continue;
      const char* const* row = m.keys[k];
      const int v = in_.ConsumeIntegralInRange<int>(1, 5);
      if (!out.empty()) out += ',';
      out += std::string(row[0]) + "=" + row[v];
      if ((std::strcmp(row[0], "max_pool") == 0 && std::strcmp(row[v], "0") != 0) ||
          (std::strcmp(row[0], "memory_fraction") == 0 && std::strcmp(row[v], "0") != 0))
        limited = true;
    }
    return out;
  }

  // `own` with `upstream=<below>` and the config of the strategy below,
  // each key prefixed `upstream.`.
  static std::string stacked(std::string own, int below, const std::string& below_config) {
    if (!own.empty()) own += ',';
    own += std::string("upstream=") + kStrategyNames[below];
    std::size_t start = 0;
    while (start < below_config.size()) {
      std::size_t comma = below_config.find(',', start);
      if (comma == std::string::npos) comma = below_config.size();
      own += ",upstream." + below_config.substr(start, comma - start);
      start = comma + 1;
    }
    return own;
  }

  // A config for `strategy`. Now and then something malformed, or a stack:
  // the strategy under another one, or over another one (12 and 13 meant
  // nothing before stacking: the regression inputs do not pick them, and
  // decode as they did); `chain` receives the stack, top first.
  std::string make_config(int strategy, bool& limited, std::vector<int>& chain) {
    limited = false;
    std::string out = make_keys(strategy, limited);
    chain.assign(1, strategy);
    switch (in_.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: out += ",bogus_key=1"; break;
      case 1: out += ",="; break;
      case 2: out += ",,"; break;
      case 3: out = in_.ConsumeRandomLengthString(64); break;
      case 12: {  // under another strategy
        const int top = in_.ConsumeIntegralInRange<int>(0, kStrategyCount - 1);
        out = stacked(make_keys(top, limited), strategy, out);
        chain.insert(chain.begin(), top);
        break;
      }
      case 13: {  // over another strategy
        const int below = in_.ConsumeIntegralInRange<int>(0, kStrategyCount - 1);
        out = stacked(out, below, make_keys(below, limited));
        chain.push_back(below);
        break;
      }
      default: break;
    }
    return out;
  }

  void op_create() {
    if (allocs_.size() >= kPlaces + 4) return;
    // The first three strategies here; the others of the list come in
    // stacks (make_config), so that older inputs keep their meaning.
    int strategy = in_.ConsumeIntegralInRange<int>(0, 2);
    const int where = in_.ConsumeIntegralInRange<int>(0, 7);
    bool limited = false;
    std::vector<int> chain;
    std::string config = make_config(strategy, limited, chain);
    strategy = chain.front();
    if (std::getenv("FUZZ_TRACE_CREATE") != nullptr)
      std::fprintf(stderr, "create %s (%zu in the stack) on %d: '%s'\n", kStrategyNames[strategy],
                   chain.size(), where, config.c_str());
    dao_allocator* sentinel = reinterpret_cast<dao_allocator*>(std::uintptr_t{0x5a5a5a00});
    dao_allocator* a = sentinel;
    if (where >= 5) {  // a place that does not exist, or a strategy that does not
      dao_place bad = where == 5   ? dao_place_sim(7)
                      : where == 6 ? dao_place_cuda(0)
                                   : dao_place_cpu();
      const char* name = where == 7 ? "bogus" : kStrategyNames[strategy];
      dao_status s = dao_allocator_create(bad, name, config.c_str(), &a);
      FUZZ_CHECK(s == (where == 7 ? DAO_ERR_INVALID_ARGUMENT : DAO_ERR_NO_DEVICE),
                 "dao_allocator_create on a bad place/strategy gave %d (%s)", (int)s,
                 dao_status_string(s));
      FUZZ_MESSAGE(s);
      FUZZ_CHECK(a == sentinel, "a failed create changed its out-parameter");
      return;
    }
    const int pl = where % kPlaces;
    // An initial_pool on the CPU reserves real memory: keep it small there.
    if (pl == 0 && config.find("initial_pool=100MiB") != std::string::npos) return;
    dao_status s = dao_allocator_create(place_of(pl), kStrategyNames[strategy], config.c_str(), &a);
    if (s != DAO_OK) {
      FUZZ_MESSAGE(s);
      // Out of memory: documented for an initial_pool that cannot be
      // reserved: a SIM device may be full, or an upstream limit of the
      // chain (upstream.max_pool) is below it; otherwise the CPU has room
      // for the few MiB asked here (initial_pool <= max_pool of the same
      // strategy, or the config is refused).
      const bool upstream_limited = config.find("upstream.max_pool") != std::string::npos;
      FUZZ_CHECK(
          s == DAO_ERR_INVALID_ARGUMENT ||
              (s == DAO_ERR_OUT_OF_MEMORY && config.find("initial_pool") != std::string::npos &&
               (pl != 0 || upstream_limited)),
          "dao_allocator_create(%s, '%s') gave %d (%s)", kStrategyNames[strategy], config.c_str(),
          (int)s, dao_status_string(s));
      FUZZ_CHECK(a == sentinel, "a failed create changed its out-parameter");
      return;
    }
    allocator_rec r;
    r.a = a;
    r.strategy = strategy;
    r.ordered = stream_ordered(chain, pl);
    r.pl = pl;
    r.limited = limited || config.find("max_pool") != std::string::npos ||
                config.find("memory_fraction") != std::string::npos;
    dao_allocator_stats st = stats(r);
    FUZZ_CHECK(st.live_blocks == 0 && st.allocated_bytes == 0 && st.alloc_count == 0,
               "a new allocator has blocks");
    allocs_.push_back(std::move(r));
  }

  std::size_t pick_size(int pl, bool& must_fail) {
    must_fail = false;
    switch (in_.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: return 0;
      case 1:
      case 2:
      case 3:
      case 4: return in_.ConsumeIntegralInRange<std::size_t>(1, 512);
      case 5:
      case 6:
      case 7: return in_.ConsumeIntegralInRange<std::size_t>(513, 64 * KiB);
      case 8:
      case 9: return in_.ConsumeIntegralInRange<std::size_t>(64 * KiB, MiB + 4096);
      case 10:
      case 11:  // large; now and then very large (slow: fresh pages to fill)
        return in_.ConsumeIntegralInRange<std::size_t>(
            MiB, in_.ConsumeIntegralInRange<int>(0, 7) == 0 ? 16 * MiB : 3 * MiB);
      case 12:
        if (pl == 0) return in_.ConsumeIntegralInRange<std::size_t>(1, 4096);
        must_fail = true;  // more than the device has
        return in_.ConsumeIntegralInRange<std::size_t>(kSimCapacity + 1, std::size_t(1) << 36);
      case 13:
        must_fail = true;
        return in_.ConsumeIntegralInRange<std::size_t>(std::size_t(1) << 48, SIZE_MAX);
      case 14: must_fail = true; return SIZE_MAX - in_.ConsumeIntegralInRange<std::size_t>(0, 4096);
      default: return in_.ConsumeIntegralInRange<std::size_t>(1, 256 * 3);
    }
  }

  std::size_t live_bytes() const {
    std::size_t n = 0;
    for (const allocator_rec& r : allocs_)
      for (const auto& [addr, b] : r.live) n += b.usable;
    return n;
  }

  // -1 for the default stream, else a stream index.
  int pick_stream() {
    if (streams_.empty() || in_.ConsumeIntegralInRange<int>(0, 3) == 0) return -1;
    return in_.ConsumeIntegralInRange<int>(0, static_cast<int>(streams_.size()) - 1);
  }

  void op_alloc() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    bool must_fail = false;
    const std::size_t n = pick_size(r->pl, must_fail);
    const int si = r->place_default ? -1 : pick_stream();
    if (!must_fail && live_bytes() + n > kMaxLiveBytes) return;
    const bool wrong_place = si >= 0 && r->ordered && streams_[si].pl != r->pl;
    frozen before = freeze(*r);
    void* p = reinterpret_cast<void*>(1);
    dao_status s = r->place_default
                       ? dao_alloc(place_of(r->pl), n, &p)
                       : dao_allocator_alloc(r->a, n, si >= 0 ? streams_[si].s : nullptr, &p);
    // With a size of 0 (nothing to allocate) or an impossible size, either
    // status may come first.
    if (wrong_place && !(n == 0 && s == DAO_OK) && !(must_fail && s == DAO_ERR_OUT_OF_MEMORY)) {
      expect_refused(s, DAO_ERR_INVALID_ARGUMENT, "caching alloc with another place's stream");
      FUZZ_CHECK(p == nullptr, "a refused alloc left %p", p);
      same(*r, before, "a refused alloc");
      return;
    }
    if (n == 0) {
      FUZZ_CHECK(s == DAO_OK && p == nullptr, "alloc(0) gave %d and %p", (int)s, p);
      same(*r, before, "alloc(0)");
      return;
    }
    if (s == DAO_ERR_OUT_OF_MEMORY) {
      FUZZ_MESSAGE(s);
      FUZZ_CHECK(must_fail || r->pl != 0 || r->limited,
                 "%s on the CPU ran out of memory for %zu bytes", kStrategyNames[r->strategy], n);
      FUZZ_CHECK(p == nullptr, "a failed alloc left %p", p);
      dao_allocator_stats after = stats(*r);
      FUZZ_CHECK(after.live_blocks == before.s.live_blocks &&
                     after.allocated_bytes == before.s.allocated_bytes &&
                     after.requested_bytes == before.s.requested_bytes &&
                     after.alloc_count == before.s.alloc_count,
                 "a failed alloc changed the live blocks");
      return;
    }
    if (s != DAO_OK || must_fail)
      FUZZ_FAIL("%s alloc of %zu bytes gave %d (%s)%s", kStrategyNames[r->strategy], n, (int)s,
                dao_status_string(s), must_fail ? " but must fail" : "");
    FUZZ_CHECK(p != nullptr && reinterpret_cast<std::uintptr_t>(p) % 256 == 0, "pointer %p", p);
    size_t usable = 0;
    FUZZ_OK(dao_allocator_usable_size(r->a, p, &usable));
    FUZZ_CHECK(usable >= n, "usable size %zu < %zu asked", usable, n);
    check_no_overlap(p, usable);
    block b;
    b.p = p;
    b.req = n;
    b.usable = usable;
    b.filled = std::min(n, fuzz::kPatternMax);
    b.stream = si;
    if (si >= 0) ++streams_[si].refs;
    ++r->allocs;
    r->freed.erase(std::remove(r->freed.begin(), r->freed.end(), p), r->freed.end());
    block& placed = r->live.emplace(reinterpret_cast<std::uintptr_t>(p), b).first->second;
    // A block on a stream is written in that stream's order (a previous owner's
    // work may still be queued there); others by the host.
    if (si >= 0 && in_.ConsumeBool()) stream_fill(placed);
    else cpu_fill(placed);
  }

  void free_block(allocator_rec& r, std::map<std::uintptr_t, block>::iterator it) {
    block& b = it->second;
    // Stream-ordered (caching, on a stream): check in stream order, free at
    // once. Buddy and system free at once: all work must be done first.
    const bool ordered = r.ordered && !r.place_default && b.stream >= 0 && in_.ConsumeBool();
    if (ordered) {
      stream_check(b, b.stream, 200);  // runs after the free below
    } else {
      cpu_check(b, "free");
    }
    dao_status s = r.place_default ? dao_free(place_of(r.pl), b.p) : dao_allocator_free(r.a, b.p);
    FUZZ_CHECK(s == DAO_OK, "free of a live block gave %d (%s)", (int)s, dao_status_string(s));
    ++r.frees;
    release_refs(b);
    r.freed.push_back(b.p);
    if (r.freed.size() > 64) r.freed.erase(r.freed.begin());
    r.live.erase(it);
  }

  void op_free() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr || r->live.empty()) return;
    auto it = r->live.begin();
    std::advance(it, in_.ConsumeIntegralInRange<std::size_t>(0, r->live.size() - 1));
    void* p = it->second.p;
    free_block(*r, it);
    if (!r->place_default) {
      size_t n = 0;
      expect_refused(dao_allocator_usable_size(r->a, p, &n), DAO_ERR_INVALID_POINTER,
                     "usable_size of a freed block");
    }
  }

  dao_status free_on(allocator_rec& r, void* p) {
    return r.place_default ? dao_free(place_of(r.pl), p) : dao_allocator_free(r.a, p);
  }

  void op_double_free() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr || r->freed.empty()) return;
    void* p = r->freed[in_.ConsumeIntegralInRange<std::size_t>(0, r->freed.size() - 1)];
    if (r->live.count(reinterpret_cast<std::uintptr_t>(p)) != 0) return;  // live again
    frozen before = freeze(*r);
    expect_refused(free_on(*r, p), DAO_ERR_INVALID_POINTER, "double free");
    same(*r, before, "a double free");
  }

  void op_interior() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    block* b = pick_block(*r);
    if (b == nullptr || b->usable < 2) return;
    char* q = static_cast<char*>(b->p) + in_.ConsumeIntegralInRange<std::size_t>(
                                             1, std::min<std::size_t>(b->usable - 1, 1 << 20));
    frozen before = freeze(*r);
    expect_refused(free_on(*r, q), DAO_ERR_INVALID_POINTER, "free of an interior pointer");
    if (!r->place_default) {
      size_t n = 0;
      expect_refused(dao_allocator_usable_size(r->a, q, &n), DAO_ERR_INVALID_POINTER,
                     "usable_size of an interior pointer");
      // Buddy and system: both "not stream-ordered" and "not live" apply.
      const dao_status rs = dao_allocator_record_stream(r->a, q, nullptr);
      if (r->ordered || rs != DAO_ERR_UNSUPPORTED)
        expect_refused(rs, DAO_ERR_INVALID_POINTER, "record_stream of an interior pointer");
    }
    same(*r, before, "an interior free");
  }

  void op_foreign() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    alignas(256) static char stack_like[1024];
    void* q = nullptr;
    switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: {  // another allocator's block
        allocator_rec* o = pick_allocator();
        block* b = o == r ? nullptr : pick_block(*o);
        if (b == nullptr) return;
        q = b->p;
        break;
      }
      case 1: q = stack_like + 256; break;
      case 2:
        q = reinterpret_cast<void*>(in_.ConsumeIntegral<std::uintptr_t>() & ~std::uintptr_t{255});
        break;
      default:
        q = reinterpret_cast<void*>(std::uintptr_t{256} *
                                    in_.ConsumeIntegralInRange<int>(1, 1 << 20));
        break;
    }
    if (q == nullptr || r->live.count(reinterpret_cast<std::uintptr_t>(q)) != 0) return;
    frozen before = freeze(*r);
    expect_refused(free_on(*r, q), DAO_ERR_INVALID_POINTER, "free of a foreign pointer");
    if (!r->place_default) {
      size_t n = 0;
      expect_refused(dao_allocator_usable_size(r->a, q, &n), DAO_ERR_INVALID_POINTER,
                     "usable_size of a foreign pointer");
    }
    same(*r, before, "a foreign free");
    // A place default's block freed on another place.
    if (r->place_default && !r->live.empty()) {
      block* b = pick_block(*r);
      const int other = (r->pl + 1 + in_.ConsumeIntegralInRange<int>(0, 1)) % kPlaces;
      frozen f2 = freeze(*r);
      expect_refused(dao_free(place_of(other), b->p), DAO_ERR_INVALID_POINTER,
                     "dao_free on the wrong place");
      same(*r, f2, "dao_free on the wrong place");
    }
  }

  void op_usable_size() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    block* b = pick_block(*r);
    if (b == nullptr) return;
    size_t n = 0;
    FUZZ_OK(dao_allocator_usable_size(r->a, b->p, &n));
    FUZZ_CHECK(n == b->usable, "usable size changed from %zu to %zu", b->usable, n);
    expect_refused(dao_allocator_usable_size(r->a, b->p, nullptr), DAO_ERR_INVALID_ARGUMENT,
                   "usable_size with a NULL out-parameter");
  }

  void op_stream_create() {
    if (streams_.size() >= 6) return;
    const int pl = in_.ConsumeIntegralInRange<int>(0, kPlaces);
    dao_stream s = nullptr;
    if (pl == kPlaces) {
      expect_refused(dao_stream_create(dao_place_sim(9), &s), DAO_ERR_NO_DEVICE, "stream on SIM 9");
      return;
    }
    FUZZ_OK(dao_stream_create(place_of(pl), &s));
    stream_rec rec;
    rec.s = s;
    rec.pl = pl;
    streams_.push_back(rec);
  }

  void op_stream_destroy() {
    if (streams_.empty()) return;
    const int si = in_.ConsumeIntegralInRange<int>(0, static_cast<int>(streams_.size()) - 1);
    if (streams_[si].refs != 0 || streams_[si].s == nullptr) return;
    // Blocks that still list it as a pending reader: it is done once destroyed.
    for (allocator_rec& r : allocs_)
      for (auto& [addr, b] : r.live) {
        FUZZ_CHECK(b.stream != si && b.write_stream != si, "model: stream in use");
        b.read_streams.erase(std::remove(b.read_streams.begin(), b.read_streams.end(), si),
                             b.read_streams.end());
      }
    FUZZ_OK(dao_stream_destroy(streams_[si].s));
    streams_[si].s = nullptr;
    // Keep indices stable: reuse the slot for a new stream of the same place.
    FUZZ_OK(dao_stream_create(place_of(streams_[si].pl), &streams_[si].s));
    streams_[si].busy = false;
  }

  void op_synchronize() {
    if (streams_.empty()) return;
    const int si = in_.ConsumeIntegralInRange<int>(0, static_cast<int>(streams_.size()) - 1);
    FUZZ_OK(dao_stream_synchronize(streams_[si].s));
    streams_[si].busy = false;
    for (allocator_rec& r : allocs_)
      for (auto& [addr, b] : r.live) {
        if (b.write_stream == si) b.write_stream = -1;
        b.read_streams.erase(std::remove(b.read_streams.begin(), b.read_streams.end(), si),
                             b.read_streams.end());
      }
    int idle = 0;
    FUZZ_OK(dao_stream_query(streams_[si].s, &idle));
  }

  void op_record_stream() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr || r->place_default) return;
    block* b = pick_block(*r);
    if (b == nullptr) return;
    const int si = pick_stream();
    dao_stream s = si >= 0 ? streams_[si].s : nullptr;
    frozen before = freeze(*r);
    dao_status st = dao_allocator_record_stream(r->a, b->p, s);
    if (!r->ordered) {
      expect_refused(st, DAO_ERR_UNSUPPORTED, "record_stream on buddy/system");
      same(*r, before, "record_stream on buddy/system");
      return;
    }
    if (si >= 0 && streams_[si].pl != r->pl) {
      expect_refused(st, DAO_ERR_INVALID_ARGUMENT, "record_stream with another place's stream");
      same(*r, before, "record_stream with another place's stream");
      return;
    }
    FUZZ_OK(st);
    if (si >= 0 && si != b->stream &&
        std::find(b->recorded.begin(), b->recorded.end(), si) == b->recorded.end()) {
      b->recorded.push_back(si);
      ++streams_[si].refs;
    }
  }

  void op_stream_write() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    block* b = pick_block(*r);
    if (b != nullptr) stream_fill(*b);
  }

  // A check on the block's stream or a stream recorded for it.
  void op_stream_read() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    block* b = pick_block(*r);
    if (b == nullptr || b->stream < 0) return;
    int si = b->stream;
    if (!b->recorded.empty() && in_.ConsumeBool())
      si = b->recorded[in_.ConsumeIntegralInRange<std::size_t>(0, b->recorded.size() - 1)];
    stream_check(*b, si);
  }

  void op_cpu_write_check() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    block* b = pick_block(*r);
    if (b == nullptr) return;
    cpu_check(*b, "check");
    if (in_.ConsumeBool()) cpu_fill(*b);
  }

  void check_blocks(allocator_rec& r, const char* when) {
    for (auto& [addr, b] : r.live) cpu_check(b, when);
  }

  void op_trim() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    dao_allocator_stats before = stats(*r);
    size_t released = 0;
    FUZZ_OK(dao_allocator_trim(r->a, in_.ConsumeBool() ? &released : nullptr));
    dao_allocator_stats after = stats(*r);
    FUZZ_CHECK(after.reserved_bytes <= before.reserved_bytes, "trim grew the reserved bytes");
    if (released != 0)
      FUZZ_CHECK(before.reserved_bytes - after.reserved_bytes == released,
                 "%s trim reported %zu bytes released, reserved went from %" PRIu64 " to %" PRIu64,
                 kStrategyNames[r->strategy], released, before.reserved_bytes,
                 after.reserved_bytes);
    check_blocks(*r, "after trim");
  }

  void op_get_stat() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    const int m = in_.ConsumeIntegralInRange<int>(-1, DAO_STAT_METRIC_COUNT);
    const int p = in_.ConsumeIntegralInRange<int>(-1, DAO_STAT_POOL_COUNT);
    dao_stat st;
    dao_status s = dao_allocator_get_stat(r->a, static_cast<dao_stat_metric>(m),
                                          static_cast<dao_stat_pool>(p), &st);
    if (m < 0 || m >= DAO_STAT_METRIC_COUNT || p < 0 || p >= DAO_STAT_POOL_COUNT) {
      expect_refused(s, DAO_ERR_INVALID_ARGUMENT, "get_stat of an unknown metric or pool");
      return;
    }
    // Buddy and system keep the whole-pool figures but the inactive split.
    const bool kept = r->ordered || (p == DAO_STAT_POOL_ALL && m != DAO_STAT_INACTIVE_SPLIT_BYTES &&
                                     m != DAO_STAT_INACTIVE_SPLIT_BLOCKS);
    if (!kept) {
      expect_refused(s, DAO_ERR_UNSUPPORTED, "get_stat of a statistic the strategy does not keep");
      return;
    }
    FUZZ_OK(s);
    FUZZ_CHECK(st.current >= 0 && st.peak >= st.current && st.allocated >= 0 && st.freed >= 0,
               "get_stat(%d, %d): current %" PRId64 " peak %" PRId64 " allocated %" PRId64
               " freed %" PRId64,
               m, p, st.current, st.peak, st.allocated, st.freed);
    // Increases minus decreases since creation are the current value (a
    // reset of the accumulated parts starts them again from 0).
    if (!r->accumulated_reset)
      FUZZ_CHECK(st.allocated - st.freed == st.current,
                 "get_stat(%d, %d): allocated %" PRId64 " - freed %" PRId64 " != current %" PRId64,
                 m, p, st.allocated, st.freed, st.current);
    expect_refused(dao_allocator_get_stat(r->a, static_cast<dao_stat_metric>(m),
                                          static_cast<dao_stat_pool>(p), nullptr),
                   DAO_ERR_INVALID_ARGUMENT, "get_stat with a NULL out-parameter");
  }

  void op_snapshot() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    dao_snapshot* snap = nullptr;
    dao_status s = dao_allocator_snapshot(r->a, &snap);
    if (!r->ordered) {
      expect_refused(s, DAO_ERR_UNSUPPORTED, "snapshot of buddy/system");
      return;
    }
    FUZZ_OK(s);
    dao_allocator_stats st = stats(*r);
    size_t count = 0;
    FUZZ_OK(dao_snapshot_segment_count(snap, &count));
    std::map<std::uintptr_t, dao_block_info> allocated;
    std::uint64_t mapped = 0;
    std::uintptr_t prev_end = 0;
    for (size_t i = 0; i < count; ++i) {
      dao_segment_info seg;
      std::memset(&seg, 0, sizeof seg);
      seg.struct_size = sizeof seg;
      FUZZ_OK(dao_snapshot_segment(snap, i, &seg));
      FUZZ_CHECK(seg.address >= prev_end, "snapshot segments overlap or are out of order");
      prev_end = seg.address + seg.size;
      FUZZ_CHECK(seg.mapped_bytes <= seg.size, "segment maps %zu of %zu bytes", seg.mapped_bytes,
                 seg.size);
      FUZZ_CHECK(seg.expandable || seg.mapped_bytes == seg.size,
                 "a fixed segment not wholly mapped");
      mapped += seg.mapped_bytes;
      std::uintptr_t at = seg.address;
      for (size_t j = 0; j < seg.block_count; ++j) {
        dao_block_info b;
        std::memset(&b, 0, sizeof b);
        b.struct_size = sizeof b;
        FUZZ_OK(dao_snapshot_block(snap, i, j, &b));
        FUZZ_CHECK(b.address == at && b.size > 0,
                   "segment %zu block %zu at %#" PRIxPTR " size %zu does not follow %#" PRIxPTR, i,
                   j, b.address, b.size, at);
        at += b.size;
        if (b.state == DAO_BLOCK_ALLOCATED) allocated[b.address] = b;
        else FUZZ_CHECK(b.requested_size == 0, "a free block with a requested size");
      }
      FUZZ_CHECK(at == seg.address + seg.size,
                 "the blocks of segment %zu end at %#" PRIxPTR ", the segment at %#" PRIxPTR, i, at,
                 seg.address + seg.size);
      dao_block_info b;
      std::memset(&b, 0, sizeof b);
      b.struct_size = sizeof b;
      expect_refused(dao_snapshot_block(snap, i, seg.block_count, &b), DAO_ERR_INVALID_ARGUMENT,
                     "snapshot block past the end");
    }
    FUZZ_CHECK(mapped == st.reserved_bytes,
               "snapshot maps %" PRIu64 " bytes, reserved_bytes %" PRIu64, mapped,
               st.reserved_bytes);
    FUZZ_CHECK(allocated.size() == r->live.size(), "snapshot has %zu allocated blocks, model %zu",
               allocated.size(), r->live.size());
    for (const auto& [addr, b] : r->live) {
      auto it = allocated.find(addr);
      FUZZ_CHECK(it != allocated.end(), "live block %p missing from the snapshot", b.p);
      FUZZ_CHECK(it->second.size == b.usable && it->second.requested_size == b.req,
                 "snapshot block %p: size %zu asked %zu, model %zu asked %zu", b.p, it->second.size,
                 it->second.requested_size, b.usable, b.req);
    }
    dao_segment_info seg;
    std::memset(&seg, 0, sizeof seg);
    seg.struct_size = sizeof seg;
    expect_refused(dao_snapshot_segment(snap, count, &seg), DAO_ERR_INVALID_ARGUMENT,
                   "snapshot segment past the end");
    seg.struct_size = 1;
    if (count > 0)
      expect_refused(dao_snapshot_segment(snap, 0, &seg), DAO_ERR_INVALID_ARGUMENT,
                     "snapshot segment with a too small struct_size");
    FUZZ_OK(dao_snapshot_destroy(snap));
  }

  void op_json() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    size_t len = 0;
    dao_status s = dao_allocator_snapshot_json(r->a, nullptr, 0, &len);
    if (!r->ordered) {
      expect_refused(s, DAO_ERR_UNSUPPORTED, "JSON of buddy/system");
      return;
    }
    FUZZ_OK(s);
    FUZZ_CHECK(len > 2, "empty JSON");
    const size_t cap = in_.ConsumeIntegralInRange<size_t>(1, len + 2);
    std::vector<char> buf(cap, '\x7f');
    size_t len2 = 0;
    FUZZ_OK(dao_allocator_snapshot_json(r->a, buf.data(), cap, &len2));
    FUZZ_CHECK(len2 == len, "JSON length changed from %zu to %zu with nothing done", len, len2);
    const size_t written = std::min(len, cap - 1);
    FUZZ_CHECK(buf[written] == '\0' && std::strlen(buf.data()) == written &&
                   (written == 0 || buf[0] == '{'),
               "JSON of %zu bytes into %zu: not terminated where it should be", len, cap);
    expect_refused(dao_allocator_snapshot_json(r->a, nullptr, 10, &len2), DAO_ERR_INVALID_ARGUMENT,
                   "JSON with a NULL buffer and a capacity");
  }

  void op_reset() {
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    if (in_.ConsumeBool()) {
      FUZZ_OK(dao_allocator_reset_peak_stats(r->a));
      dao_allocator_stats s = stats(*r);
      FUZZ_CHECK(
          s.peak_allocated_bytes == s.allocated_bytes && s.peak_reserved_bytes == s.reserved_bytes,
          "after reset_peak_stats: peaks %" PRIu64 "/%" PRIu64 ", current %" PRIu64 "/%" PRIu64,
          s.peak_allocated_bytes, s.peak_reserved_bytes, s.allocated_bytes, s.reserved_bytes);
    } else {
      FUZZ_OK(dao_allocator_reset_accumulated_stats(r->a));
      r->base_allocs = r->base_frees = r->allocs = r->frees = 0;
      r->accumulated_reset = true;
      dao_stat st;
      FUZZ_OK(dao_allocator_get_stat(r->a, DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, &st));
      FUZZ_CHECK(st.allocated == 0 && st.freed == 0, "accumulated stats not reset");
    }
  }

  void destroy(std::size_t index) {
    allocator_rec& r = allocs_[index];
    FUZZ_OK(dao_allocator_destroy(r.a));
    allocs_.erase(allocs_.begin() + static_cast<std::ptrdiff_t>(index));
  }

  void op_destroy() {
    if (allocs_.size() <= kPlaces) return;
    const std::size_t i = in_.ConsumeIntegralInRange<std::size_t>(kPlaces, allocs_.size() - 1);
    allocator_rec& r = allocs_[i];
    if (!r.live.empty()) {
      frozen before = freeze(r);
      expect_refused(dao_allocator_destroy(r.a), DAO_ERR_BUSY, "destroy with live blocks");
      same(r, before, "a refused destroy");
      if (!in_.ConsumeBool()) return;
      while (!r.live.empty()) free_block(r, r.live.begin());
    }
    destroy(i);
  }

  void op_bad_handles() {
    alignas(64) static unsigned char fake[256];
    dao_allocator* bad = reinterpret_cast<dao_allocator*>(fake);
    void* p = reinterpret_cast<void*>(1);
    expect_refused(dao_allocator_alloc(nullptr, 16, nullptr, &p), DAO_ERR_INVALID_ARGUMENT,
                   "alloc(NULL)");
    FUZZ_CHECK(p == nullptr, "alloc(NULL) left the pointer");
    expect_refused(dao_allocator_alloc(bad, 16, nullptr, &p), DAO_ERR_INVALID_ARGUMENT,
                   "alloc(fake)");
    expect_refused(dao_allocator_free(bad, nullptr), DAO_ERR_INVALID_ARGUMENT, "free(fake)");
    expect_refused(dao_allocator_trim(bad, nullptr), DAO_ERR_INVALID_ARGUMENT, "trim(fake)");
    expect_refused(dao_allocator_destroy(bad), DAO_ERR_INVALID_ARGUMENT, "destroy(fake)");
    expect_refused(dao_allocator_info(nullptr, nullptr, nullptr, nullptr), DAO_ERR_INVALID_ARGUMENT,
                   "info(NULL)");
    allocator_rec* r = pick_allocator();
    if (r == nullptr) return;
    frozen before = freeze(*r);
    if (r->place_default) {
      expect_refused(dao_allocator_destroy(r->a), DAO_ERR_INVALID_ARGUMENT,
                     "destroy of a place default");
    } else {
      expect_refused(dao_allocator_alloc(r->a, 16, nullptr, nullptr), DAO_ERR_INVALID_ARGUMENT,
                     "alloc with NULL out");
      dao_allocator_stats small;
      std::memset(&small, 0, sizeof small);
      small.struct_size = 4;
      expect_refused(dao_allocator_get_stats(r->a, &small), DAO_ERR_INVALID_ARGUMENT,
                     "get_stats with a tiny struct");
      // A caller's struct newer (larger) than the library's: the fields the
      // library does not know are left as they are (issue 20: nothing past
      // the library's own struct is written), and so is what lies past it.
      alignas(dao_allocator_stats) unsigned char newer[sizeof(dao_allocator_stats) + 32];
      std::memset(newer, 0xee, sizeof newer);
      dao_allocator_stats* s = reinterpret_cast<dao_allocator_stats*>(newer);
      s->struct_size = sizeof(dao_allocator_stats) + 16;
      FUZZ_OK(dao_allocator_get_stats(r->a, s));
      FUZZ_CHECK(s->struct_size == sizeof(dao_allocator_stats) + 16,
                 "get_stats changed struct_size");
      for (size_t i = sizeof(dao_allocator_stats); i < sizeof newer; ++i)
        FUZZ_CHECK(newer[i] == 0xee, "get_stats: byte %zu past the library's struct is %#x", i,
                   newer[i]);
      FUZZ_OK(dao_allocator_free(r->a, nullptr));
    }
    same(*r, before, "calls with bad arguments");
  }

  // Copies block A into block B of the same size (B takes A's contents).
  void op_copy() {
    allocator_rec* r1 = pick_allocator();
    allocator_rec* r2 = pick_allocator();
    if (r1 == nullptr || r2 == nullptr) return;
    block* a = pick_block(*r1);
    block* b = pick_block(*r2);
    if (a == nullptr || b == nullptr) return;
    if (a == b) {          // overlapping ranges are refused
      if (a->filled >= 3)  // n - 1 bytes from p to p + 1 overlap when n - 1 >= 2
        expect_refused(dao_memcpy_async(static_cast<char*>(a->p) + 1, a->p, a->filled - 1, nullptr),
                       DAO_ERR_INVALID_ARGUMENT, "memcpy of overlapping ranges");
      return;
    }
    if (a->filled != b->filled) return;
    cpu_check(*a, "copy source");
    quiesce(*b);
    const int si = b->stream;
    FUZZ_OK(dao_memcpy_async(b->p, a->p, a->filled, si >= 0 ? streams_[si].s : nullptr));
    b->seed = a->seed;
    if (si >= 0) {
      // A is read on B's stream: wait before anything changes or frees A.
      streams_[si].busy = true;
      sync(si);
    }
  }

  void finish() {
    for (stream_rec& s : streams_) FUZZ_OK(dao_stream_synchronize(s.s));
    for (allocator_rec& r : allocs_) {
      check_blocks(r, "at the end");
      while (!r.live.empty()) free_block(r, r.live.begin());
    }
    check_all_stats();
    while (allocs_.size() > kPlaces) destroy(allocs_.size() - 1);
    for (stream_rec& s : streams_) FUZZ_OK(dao_stream_destroy(s.s));
    for (int pl = 0; pl < kPlaces; ++pl) {
      FUZZ_OK(dao_event_destroy(events_[pl]));
      size_t used = 1;
      FUZZ_OK(dao_used(place_of(pl), &used));
      FUZZ_CHECK(used == 0, "dao_used(%d) = %zu after every block was freed", pl, used);
    }
  }

  FuzzedDataProvider& in_;
  std::vector<allocator_rec> allocs_;
  std::vector<stream_rec> streams_;
  dao_event events_[kPlaces] = {};
  std::uint64_t seed_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (int i = 0; i < kStrategyCount; ++i)
    if (std::strcmp(kModels[i].name, kStrategyNames[i]) != 0) {
      std::fprintf(stderr, "fuzz_allocator: model %d is '%s', strategy_list.h says '%s'\n", i,
                   kModels[i].name, kStrategyNames[i]);
      std::abort();
    }
  const size_t caps[2] = {kSimCapacity, kSimCapacity};
  if (dao_sim_configure(2, caps) != DAO_OK) {
    std::fprintf(stderr, "fuzz_allocator: dao_sim_configure: %s\n", dao_last_error());
    std::abort();
  }
  unsetenv("DAO_ALLOCATOR");
  unsetenv("DAO_ALLOC_CONF");
  unsetenv("DAO_NO_CACHING");
  fuzz::pattern_table();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  machine m(in);
  m.run();
  return 0;
}
