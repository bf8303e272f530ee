// fuzz_recycle: random recycle pool operations against a model of every
// buffer's state and references.
//
// The input drives up to 300 steps on up to 4 pools (alone or in a
// collection) on the CPU or a SIM device (64 MiB, so that large pools run
// out): create with random element sizes, shapes, counts and configs (valid
// and invalid), acquire, write, submit, take, retain, release (also too
// often), getters, close, statistics, destroy (refused while buffers are
// out), collection add / find / close / destroy, and calls with bad handles.
//
// The model keeps, for every buffer handle seen: its pool, data pointer,
// whether it is free, queued or held, the caller's references, its sequence
// number and the pattern last written into it. Invariants, after every step:
//   - each call gives the documented status (bad input: a message and no
//     change: the statistics and every buffer's state stay the same);
//   - acquire takes a free buffer or creates one while fewer than
//     max_buffers exist, else times out; it never hands out a buffer that
//     is held or queued; a reused buffer still holds what was last written
//     into it (no copy, no clearing); new buffers' memory is disjoint from
//     all others and 256-aligned;
//   - take gives the queued buffers first in, first out, with increasing
//     sequence numbers, and the data that was submitted;
//   - retain / release / submit follow the documented reference rules; a
//     release too many gives DAO_ERR_INVALID_STATE and changes nothing;
//   - a closed pool refuses acquires (DAO_ERR_CLOSED), still takes submits
//     and drains its queue, then gives DAO_ERR_CLOSED on take;
//   - statistics: created = free + queued + held, each equal to the model,
//     acquired / submitted / taken / timeouts equal to the model's counts,
//     peaks >= current values;
//   - shape, element size, bytes and place of a buffer are those of its pool.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

constexpr std::size_t MiB = std::size_t(1) << 20;

dao_place place_of(int pl) { return pl == 0 ? dao_place_cpu() : dao_place_sim(pl - 1); }

struct buffer_rec {
  int pool = -1;  // index in pools_ (unique for the input)
  void* data = nullptr;
  bool queued = false;
  unsigned refs = 0;  // the callers' references (not the queue's)
  std::uint64_t seq = UINT64_MAX;
  std::uint64_t seed = 0;  // pattern last written (0: never written)
  bool free() const { return !queued && refs == 0; }
};

struct pool_rec {
  dao_recycle_pool* pool = nullptr;
  bool alive = false;
  bool closed = false;
  bool in_collection = false;
  std::string name;
  int pl = 0;
  std::size_t element = 0, bytes = 0, max = 0;
  std::vector<std::size_t> shape;
  std::vector<dao_buffer*> buffers;  // every buffer created
  std::deque<dao_buffer*> queue;
  std::uint64_t next_seq = 0;
  std::uint64_t acquired = 0, submitted = 0, taken = 0, timeouts = 0;
};

class machine {
 public:
  explicit machine(FuzzedDataProvider& in) : in_(in) {}

  void run() {
    for (int step = 0; step < 300 && in_.remaining_bytes() > 0; ++step) {
      this->step();
      for (std::size_t i = 0; i < pools_.size(); ++i)
        if (pools_[i].alive) check_stats(static_cast<int>(i));
    }
    finish();
  }

 private:
  // ------------------------------------------------------------ model checks
  dao_recycle_stats stats(int pi) {
    dao_recycle_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    FUZZ_OK(dao_recycle_get_stats(pools_[pi].pool, &s));
    return s;
  }

  void check_stats(int pi) {
    pool_rec& p = pools_[pi];
    dao_recycle_stats s = stats(pi);
    const std::uint64_t unseen = preallocated_[pi];  // preallocated, never acquired
    std::uint64_t free_n = unseen, queued_n = 0, held_n = 0;
    for (dao_buffer* b : p.buffers) {
      const buffer_rec& r = bufs_.at(b);
      if (r.queued) ++queued_n;
      else if (r.refs > 0) ++held_n;
      else ++free_n;
    }
    FUZZ_CHECK(s.created == p.buffers.size() + unseen && s.free == free_n && s.queued == queued_n &&
                   s.held == held_n,
               "pool %d: created %" PRIu64 " free %" PRIu64 " queued %" PRIu64 " held %" PRIu64
               "; model %zu %" PRIu64 " %" PRIu64 " %" PRIu64,
               pi, s.created, s.free, s.queued, s.held, p.buffers.size() + unseen, free_n, queued_n,
               held_n);
    FUZZ_CHECK(s.created == s.free + s.queued + s.held && s.created <= p.max, "pool %d: counts",
               pi);
    FUZZ_CHECK(s.acquired == p.acquired && s.submitted == p.submitted && s.taken == p.taken &&
                   s.timeouts == p.timeouts,
               "pool %d: acquired %" PRIu64 " submitted %" PRIu64 " taken %" PRIu64
               " timeouts %" PRIu64 "; model %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
               pi, s.acquired, s.submitted, s.taken, s.timeouts, p.acquired, p.submitted, p.taken,
               p.timeouts);
    FUZZ_CHECK(s.peak_free >= s.free && s.peak_queued >= s.queued && s.peak_held >= s.held,
               "pool %d: a peak below its current value", pi);
  }

  // Everything a refused call must leave alone.
  struct frozen {
    dao_recycle_stats s;
    std::map<dao_buffer*, buffer_rec> bufs;
  };
  frozen freeze(int pi) { return frozen{stats(pi), bufs_}; }
  void same(int pi, const frozen& f, const char* what) {
    dao_recycle_stats s = stats(pi);
    FUZZ_CHECK(std::memcmp(&s, &f.s, sizeof s) == 0, "%s changed the pool's statistics", what);
    (void)f.bufs;  // the model is unchanged by construction; the stats say the pool is too
  }

  void expect(dao_status got, dao_status want, const char* what) {
    if (got != want)
      FUZZ_FAIL("%s gave %d (%s), expected %d (%s)", what, (int)got, dao_status_string(got),
                (int)want, dao_status_string(want));
    FUZZ_MESSAGE(got);
  }

  int pick_pool() {
    std::vector<int> alive;
    for (std::size_t i = 0; i < pools_.size(); ++i)
      if (pools_[i].alive) alive.push_back(static_cast<int>(i));
    if (alive.empty()) return -1;
    return alive[in_.ConsumeIntegralInRange<std::size_t>(0, alive.size() - 1)];
  }

  // A buffer of a live pool, in any state.
  dao_buffer* pick_buffer(int pi) {
    if (pi < 0 || pools_[pi].buffers.empty()) return nullptr;
    return pools_[pi]
        .buffers[in_.ConsumeIntegralInRange<std::size_t>(0, pools_[pi].buffers.size() - 1)];
  }

  void check_contents(dao_buffer* b, const char* when) {
    const buffer_rec& r = bufs_.at(b);
    if (r.seed == 0) return;
    const std::size_t n = std::min(pools_[r.pool].bytes, fuzz::kPatternMax);
    std::size_t i = fuzz::first_mismatch(r.data, n, r.seed);
    if (i != n) FUZZ_FAIL("%s: buffer %p (data %p) changed at byte %zu", when, (void*)b, r.data, i);
  }

  void write(dao_buffer* b) {
    buffer_rec& r = bufs_.at(b);
    r.seed = ++seed_;
    fuzz::fill(r.data, std::min(pools_[r.pool].bytes, fuzz::kPatternMax), r.seed);
  }

  void check_getters(dao_buffer* b) {
    const buffer_rec& r = bufs_.at(b);
    const pool_rec& p = pools_[r.pool];
    void* data = nullptr;
    FUZZ_OK(dao_buffer_data(b, &data));
    FUZZ_CHECK(data == r.data, "buffer data moved from %p to %p", r.data, data);
    int ndim = 0;
    const size_t* shape = nullptr;
    FUZZ_OK(dao_buffer_shape(b, &ndim, &shape));
    FUZZ_CHECK(ndim == static_cast<int>(p.shape.size()) &&
                   std::equal(p.shape.begin(), p.shape.end(), shape),
               "buffer shape differs from its pool's");
    size_t element = 0, bytes = 0;
    FUZZ_OK(dao_buffer_size(b, &element, &bytes));
    FUZZ_CHECK(element == p.element && bytes == p.bytes,
               "buffer size %zu x -> %zu, pool %zu -> %zu", element, bytes, p.element, p.bytes);
    dao_place place{};
    FUZZ_OK(dao_buffer_place(b, &place));
    FUZZ_CHECK(place.kind == place_of(p.pl).kind && place.device == place_of(p.pl).device,
               "buffer place");
    std::uint64_t seq = 0;
    FUZZ_OK(dao_buffer_sequence(b, &seq));
    FUZZ_CHECK(seq == r.seq, "buffer sequence %" PRIu64 ", model %" PRIu64, seq, r.seq);
  }

  // ------------------------------------------------------------ steps
  void step() {
    switch (in_.ConsumeIntegralInRange<int>(0, 19)) {
      case 0:
      case 1: return op_create();
      case 2:
      case 3:
      case 4: return op_acquire();
      case 5:
      case 6: return op_submit();
      case 7:
      case 8: return op_take();
      case 9: return op_retain();
      case 10:
      case 11: return op_release();
      case 12: return op_getters();
      case 13: return op_close();
      case 14: return op_destroy();
      case 15: return op_collection();
      case 16: return op_bad_handles();
      case 17: return op_wrong_pool();
      case 18: return op_find();
      default: return op_timeout();
    }
  }

  void op_create() {
    if (pools_.size() >= 6) return;
    const int pl = in_.ConsumeIntegralInRange<int>(0, 3);  // 3: a SIM device that does not exist
    std::size_t element = std::size_t(1) << in_.ConsumeIntegralInRange<int>(0, 3);
    const int ndim = in_.ConsumeIntegralInRange<int>(0, DAO_RECYCLE_MAX_DIMS + 1);
    std::vector<std::size_t> shape(static_cast<std::size_t>(std::max(ndim, 1)));
    // At most 16 x 16 x 16 x 2^5 elements of 8 bytes (4 MiB): the CPU gives
    // what is asked.
    for (std::size_t i = 0; i < shape.size(); ++i)
      shape[i] = in_.ConsumeIntegralInRange<std::size_t>(1, i < 3 ? 16 : 2);
    const int flavour = in_.ConsumeIntegralInRange<int>(0, 11);
    if (flavour == 0) element = 0;
    if (flavour == 1 && !shape.empty()) shape[0] = 0;
    if (flavour == 2) shape[0] = SIZE_MAX / 2;          // the product overflows
    if (flavour == 3 && pl != 0) shape[0] = 64 * 1024;  // large buffers: SIM runs out
    std::size_t max = in_.ConsumeIntegralInRange<std::size_t>(1, 8);
    if (flavour == 4) max = 0;
    if (flavour == 5) max = (std::size_t(1) << 20) + 1;
    std::size_t prealloc = in_.ConsumeIntegralInRange<std::size_t>(0, max);
    if (flavour == 6) prealloc = max + 1;
    static const char* const configs[] = {"",        "name=frames", "spin=0",   "spin=100,name=x",
                                          "bogus=1", "spin=-1",     "spin=abc", "name="};
    const char* config = configs[in_.ConsumeIntegralInRange<int>(0, 7)];
    std::size_t bytes = element;
    bool overflow = false;
    for (std::size_t e : shape) {
      if (e != 0 && bytes > SIZE_MAX / e) overflow = true;
      else bytes *= e;
    }
    const bool bad_args = element == 0 || ndim < 1 || ndim > DAO_RECYCLE_MAX_DIMS || bytes == 0 ||
                          overflow || max == 0 || max > (std::size_t(1) << 20) || prealloc > max;
    const bool bad_config =
        std::strcmp(config, "bogus=1") == 0 || std::strcmp(config, "spin=-1") == 0 ||
        std::strcmp(config, "spin=abc") == 0 || std::strcmp(config, "name=") == 0;
    const bool in_collection = in_.ConsumeBool();
    std::string name = "pool" + std::to_string(pools_.size());
    dao_recycle_pool* pool = reinterpret_cast<dao_recycle_pool*>(std::uintptr_t{0x5a5a5a00});
    dao_status s;
    if (in_collection) {
      if (collection_ == nullptr) FUZZ_OK(dao_collection_create(&collection_));
      s = dao_collection_add(collection_, name.c_str(), place_of(pl), element, ndim, shape.data(),
                             max, prealloc, config, &pool);
    } else {
      s = dao_recycle_create(place_of(pl), element, ndim, shape.data(), max, prealloc, config,
                             &pool);
    }
    if (bad_args || bad_config) {
      if (s != DAO_ERR_INVALID_ARGUMENT && !(pl == 3 && s == DAO_ERR_NO_DEVICE))
        FUZZ_FAIL("recycle create (element %zu, ndim %d, bytes %zu%s, max %zu, prealloc %zu, '%s') "
                  "gave %d (%s)",
                  element, ndim, bytes, overflow ? " overflowing" : "", max, prealloc, config,
                  (int)s, dao_status_string(s));
      FUZZ_MESSAGE(s);
      FUZZ_CHECK(pool == reinterpret_cast<dao_recycle_pool*>(std::uintptr_t{0x5a5a5a00}) ||
                     pool == nullptr,
                 "a failed create wrote a pool");
      return;
    }
    if (pl == 3) {
      expect(s, DAO_ERR_NO_DEVICE, "recycle create on SIM 2");
      return;
    }
    if (s == DAO_ERR_OUT_OF_MEMORY) {
      FUZZ_CHECK(pl != 0 || bytes > (std::size_t(1) << 40),
                 "recycle create ran out of memory for %zu x %zu bytes", prealloc, bytes);
      FUZZ_MESSAGE(s);
      return;
    }
    FUZZ_OK(s);
    pool_rec p;
    p.pool = pool;
    p.alive = true;
    p.in_collection = in_collection;
    p.name = name;
    p.pl = pl;
    p.element = element;
    p.bytes = bytes;
    p.max = max;
    p.shape = shape;
    pools_.push_back(p);
    const int pi = static_cast<int>(pools_.size()) - 1;
    dao_recycle_stats st = stats(pi);
    FUZZ_CHECK(st.created == prealloc && st.free == prealloc,
               "created %" PRIu64 " of %zu preallocated", st.created, prealloc);
    // The preallocated buffers are unknown handles until acquired: count
    // them as anonymous free buffers, named when they come out.
    preallocated_[pi] = prealloc;
  }

  // Registers a handle met for the first time.
  void meet(int pi, dao_buffer* b) {
    pool_rec& p = pools_[pi];
    buffer_rec r;
    r.pool = pi;
    FUZZ_OK(dao_buffer_data(b, &r.data));
    FUZZ_CHECK(r.data != nullptr && reinterpret_cast<std::uintptr_t>(r.data) % 256 == 0,
               "buffer data %p", r.data);
    auto lo = reinterpret_cast<std::uintptr_t>(r.data);
    for (const auto& [h, o] : bufs_) {
      auto olo = reinterpret_cast<std::uintptr_t>(o.data);
      if (pools_[o.pool].alive && lo < olo + pools_[o.pool].bytes && olo < lo + p.bytes)
        FUZZ_FAIL("new buffer %p (%zu bytes) overlaps buffer %p (%zu bytes)", r.data, p.bytes,
                  o.data, pools_[o.pool].bytes);
    }
    bufs_[b] = r;
    p.buffers.push_back(b);
  }

  void op_acquire() {
    const int pi = pick_pool();
    if (pi < 0) return;
    pool_rec& p = pools_[pi];
    std::size_t free_known = 0;
    for (dao_buffer* b : p.buffers) free_known += bufs_.at(b).free();
    const std::size_t free_n = free_known + preallocated_[pi];
    const std::size_t created = p.buffers.size() + preallocated_[pi];
    dao_buffer* b = reinterpret_cast<dao_buffer*>(1);
    frozen before = freeze(pi);
    dao_status s = dao_recycle_acquire(p.pool, 0, &b);
    if (p.closed) {
      expect(s, DAO_ERR_CLOSED, "acquire on a closed pool");
      FUZZ_CHECK(b == nullptr, "a failed acquire left a handle");
      same(pi, before, "acquire on a closed pool");
      return;
    }
    if (free_n == 0 && created == p.max) {
      expect(s, DAO_ERR_TIMEOUT, "acquire with every buffer out");
      FUZZ_CHECK(b == nullptr, "a failed acquire left a handle");
      ++p.timeouts;
      return;
    }
    if (s == DAO_ERR_OUT_OF_MEMORY) {
      FUZZ_CHECK(free_n == 0 && (p.pl != 0 || p.bytes > (std::size_t(1) << 40)),
                 "acquire ran out of memory with %zu free buffers on place %d", free_n, p.pl);
      FUZZ_MESSAGE(s);
      same(pi, before, "an acquire out of memory");
      return;
    }
    FUZZ_OK(s);
    ++p.acquired;
    auto it = bufs_.find(b);
    if (it == bufs_.end()) {  // a new or preallocated buffer
      if (free_known > 0 && preallocated_[pi] == 0)
        FUZZ_FAIL("acquire created a buffer while %zu were free", free_known);
      if (preallocated_[pi] > 0) --preallocated_[pi];
      meet(pi, b);
      it = bufs_.find(b);
    } else {
      FUZZ_CHECK(it->second.pool == pi, "acquire gave a buffer of another pool");
      FUZZ_CHECK(it->second.free(), "acquire gave a buffer that is %s (refs %u)",
                 it->second.queued ? "queued" : "held", it->second.refs);
      check_contents(b, "a recycled buffer");
    }
    it->second.refs = 1;
    it->second.seq = UINT64_MAX;
    check_getters(b);
    if (in_.ConsumeBool()) write(b);
  }

  dao_buffer* pick_in_state(int pi, int want) {  // 0 free, 1 held, 2 queued
    std::vector<dao_buffer*> list;
    for (dao_buffer* b : pools_[pi].buffers) {
      const buffer_rec& r = bufs_.at(b);
      const int state = r.queued ? 2 : r.refs > 0 ? 1 : 0;
      if (state == want) list.push_back(b);
    }
    if (list.empty()) return nullptr;
    return list[in_.ConsumeIntegralInRange<std::size_t>(0, list.size() - 1)];
  }

  void op_submit() {
    const int pi = pick_pool();
    if (pi < 0) return;
    pool_rec& p = pools_[pi];
    dao_buffer* b = pick_buffer(pi);
    if (b == nullptr) return;
    buffer_rec& r = bufs_.at(b);
    frozen before = freeze(pi);
    dao_status s = dao_recycle_submit(p.pool, b);
    if (r.queued || r.refs == 0) {
      expect(s, DAO_ERR_INVALID_STATE,
             r.queued ? "submit of a queued buffer" : "submit of a free buffer");
      same(pi, before, "a refused submit");
      return;
    }
    FUZZ_OK(s);
    --r.refs;  // moved into the queue
    r.queued = true;
    r.seq = p.next_seq++;
    p.queue.push_back(b);
    ++p.submitted;
  }

  void op_take() {
    const int pi = pick_pool();
    if (pi < 0) return;
    pool_rec& p = pools_[pi];
    dao_buffer* b = reinterpret_cast<dao_buffer*>(1);
    const double timeout = in_.ConsumeBool() ? 0.0 : 1e-4;
    dao_status s = dao_recycle_take(p.pool, timeout, &b);
    if (p.queue.empty()) {
      expect(s, p.closed ? DAO_ERR_CLOSED : DAO_ERR_TIMEOUT, "take from an empty queue");
      FUZZ_CHECK(b == nullptr, "a failed take left a handle");
      if (!p.closed) ++p.timeouts;
      return;
    }
    FUZZ_OK(s);
    FUZZ_CHECK(b == p.queue.front(), "take gave %p, the queue's head is %p (first in, first out)",
               (void*)b, (void*)p.queue.front());
    p.queue.pop_front();
    buffer_rec& r = bufs_.at(b);
    r.queued = false;
    ++r.refs;  // the queue's reference becomes the caller's
    ++p.taken;
    check_contents(b, "a taken buffer");
    check_getters(b);
  }

  void op_retain() {
    const int pi = pick_pool();
    dao_buffer* b = pick_buffer(pi);
    if (b == nullptr) return;
    buffer_rec& r = bufs_.at(b);
    frozen before = freeze(pi);
    dao_status s = dao_buffer_retain(b);
    if (r.refs == 0) {  // free, or queued with only the queue's reference
      expect(s, DAO_ERR_INVALID_STATE, "retain of a buffer the caller holds no reference to");
      same(pi, before, "a refused retain");
      return;
    }
    FUZZ_OK(s);
    ++r.refs;
  }

  void op_release() {
    const int pi = pick_pool();
    dao_buffer* b = pick_buffer(pi);
    if (b == nullptr) return;
    buffer_rec& r = bufs_.at(b);
    frozen before = freeze(pi);
    dao_status s = dao_buffer_release(b);
    if (r.refs == 0) {  // a release too many
      expect(s, DAO_ERR_INVALID_STATE, "release of a buffer the caller holds no reference to");
      same(pi, before, "an over-release");
      return;
    }
    FUZZ_OK(s);
    --r.refs;
  }

  void op_getters() {
    const int pi = pick_pool();
    dao_buffer* b = pick_buffer(pi);
    if (b == nullptr) return;
    check_getters(b);
    if (!bufs_.at(b).free()) check_contents(b, "a buffer out");
    expect(dao_buffer_data(b, nullptr), DAO_ERR_INVALID_ARGUMENT, "dao_buffer_data(NULL out)");
    expect(dao_buffer_sequence(b, nullptr), DAO_ERR_INVALID_ARGUMENT,
           "dao_buffer_sequence(NULL out)");
    FUZZ_OK(dao_buffer_shape(b, nullptr, nullptr));
    FUZZ_OK(dao_buffer_size(b, nullptr, nullptr));
  }

  void op_close() {
    const int pi = pick_pool();
    if (pi < 0) return;
    if (in_.ConsumeBool() && collection_ != nullptr) {
      FUZZ_OK(dao_collection_close(collection_));
      for (pool_rec& p : pools_)
        if (p.alive && p.in_collection) p.closed = true;
      return;
    }
    FUZZ_OK(dao_recycle_close(pools_[pi].pool));
    pools_[pi].closed = true;
  }

  bool out(int pi) {
    for (dao_buffer* b : pools_[pi].buffers)
      if (!bufs_.at(b).free()) return true;
    return false;
  }

  void forget(int pi) {
    for (dao_buffer* b : pools_[pi].buffers) bufs_.erase(b);
    pools_[pi].buffers.clear();
    pools_[pi].alive = false;
  }

  void op_destroy() {
    const int pi = pick_pool();
    if (pi < 0) return;
    pool_rec& p = pools_[pi];
    frozen before = freeze(pi);
    dao_status s = dao_recycle_destroy(p.pool);
    if (p.in_collection) {
      expect(s, DAO_ERR_INVALID_ARGUMENT, "destroy of a pool of a collection");
      same(pi, before, "a refused destroy");
      return;
    }
    if (out(pi)) {
      expect(s, DAO_ERR_BUSY, "destroy with buffers out");
      same(pi, before, "a refused destroy");
      return;
    }
    FUZZ_OK(s);
    forget(pi);
  }

  void op_collection() {
    if (collection_ == nullptr) return;
    bool busy = false;
    for (std::size_t i = 0; i < pools_.size(); ++i)
      if (pools_[i].alive && pools_[i].in_collection && out(static_cast<int>(i))) busy = true;
    dao_status s = dao_collection_destroy(collection_);
    if (busy) {
      expect(s, DAO_ERR_BUSY, "collection destroy with buffers out");
      return;
    }
    FUZZ_OK(s);
    collection_ = nullptr;
    for (std::size_t i = 0; i < pools_.size(); ++i)
      if (pools_[i].alive && pools_[i].in_collection) forget(static_cast<int>(i));
  }

  void op_find() {
    if (collection_ == nullptr) return;
    const int pi = pick_pool();
    dao_recycle_pool* found = nullptr;
    if (pi >= 0 && pools_[pi].in_collection && in_.ConsumeBool()) {
      FUZZ_OK(dao_collection_find(collection_, pools_[pi].name.c_str(), &found));
      FUZZ_CHECK(found == pools_[pi].pool, "collection_find gave another pool");
      // The same name again is refused.
      const size_t shape[1] = {4};
      expect(dao_collection_add(collection_, pools_[pi].name.c_str(), dao_place_cpu(), 4, 1, shape,
                                1, 0, "", nullptr),
             DAO_ERR_INVALID_ARGUMENT, "collection_add of a name in use");
      return;
    }
    expect(dao_collection_find(collection_, "no such pool", &found), DAO_ERR_NOT_FOUND,
           "collection_find");
    const size_t shape[1] = {4};
    expect(dao_collection_add(collection_, "", dao_place_cpu(), 4, 1, shape, 1, 0, "", nullptr),
           DAO_ERR_INVALID_ARGUMENT, "collection_add with an empty name");
  }

  void op_bad_handles() {
    alignas(64) static unsigned char fake[256];
    dao_buffer* b = reinterpret_cast<dao_buffer*>(1);
    expect(dao_recycle_acquire(nullptr, 0, &b), DAO_ERR_INVALID_ARGUMENT, "acquire(NULL)");
    FUZZ_CHECK(b == nullptr, "acquire(NULL) left a handle");
    expect(dao_recycle_take(reinterpret_cast<dao_recycle_pool*>(fake), 0, &b),
           DAO_ERR_INVALID_ARGUMENT, "take(fake pool)");
    expect(dao_recycle_close(reinterpret_cast<dao_recycle_pool*>(fake)), DAO_ERR_INVALID_ARGUMENT,
           "close(fake)");
    expect(dao_buffer_retain(reinterpret_cast<dao_buffer*>(fake)), DAO_ERR_INVALID_ARGUMENT,
           "retain(fake)");
    expect(dao_buffer_release(nullptr), DAO_ERR_INVALID_ARGUMENT, "release(NULL)");
    void* d = nullptr;
    expect(dao_buffer_data(reinterpret_cast<dao_buffer*>(fake), &d), DAO_ERR_INVALID_ARGUMENT,
           "data(fake)");
    const int pi = pick_pool();
    if (pi < 0) return;
    expect(dao_recycle_submit(pools_[pi].pool, reinterpret_cast<dao_buffer*>(fake)),
           DAO_ERR_INVALID_ARGUMENT, "submit(fake buffer)");
    expect(dao_recycle_submit(pools_[pi].pool, nullptr), DAO_ERR_INVALID_ARGUMENT, "submit(NULL)");
    expect(dao_recycle_acquire(pools_[pi].pool, NAN, &b), DAO_ERR_INVALID_ARGUMENT,
           "acquire with a NaN timeout");
    expect(dao_recycle_acquire(pools_[pi].pool, 0, nullptr), DAO_ERR_INVALID_ARGUMENT,
           "acquire(NULL out)");
    dao_recycle_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s - 8;
    expect(dao_recycle_get_stats(pools_[pi].pool, &s), DAO_ERR_INVALID_ARGUMENT,
           "get_stats with a small struct");
  }

  // A buffer held from one pool submitted to another.
  void op_wrong_pool() {
    const int a = pick_pool(), c = pick_pool();
    if (a < 0 || c < 0 || a == c) return;
    dao_buffer* b = pick_in_state(a, 1);
    if (b == nullptr) return;
    frozen before = freeze(c);
    expect(dao_recycle_submit(pools_[c].pool, b), DAO_ERR_INVALID_ARGUMENT,
           "submit to another pool");
    same(c, before, "a submit to another pool");
  }

  // A blocking acquire or take that must time out (single thread).
  void op_timeout() {
    const int pi = pick_pool();
    if (pi < 0) return;
    pool_rec& p = pools_[pi];
    if (p.closed) return;
    dao_buffer* b = nullptr;
    if (p.queue.empty()) {
      expect(dao_recycle_take(p.pool, 2e-4, &b), DAO_ERR_TIMEOUT, "take with nothing queued");
      ++p.timeouts;
    }
  }

  void finish() {
    // Drain, release everything, destroy.
    for (std::size_t i = 0; i < pools_.size(); ++i) {
      pool_rec& p = pools_[i];
      if (!p.alive) continue;
      FUZZ_OK(dao_recycle_close(p.pool));
      p.closed = true;
      while (!p.queue.empty()) {
        dao_buffer* b = nullptr;
        FUZZ_OK(dao_recycle_take(p.pool, 0, &b));
        FUZZ_CHECK(b == p.queue.front(), "drain: not first in, first out");
        p.queue.pop_front();
        bufs_.at(b).queued = false;
        ++bufs_.at(b).refs;
        ++p.taken;
        check_contents(b, "drained buffer");
      }
      dao_buffer* b = nullptr;
      expect(dao_recycle_take(p.pool, 0, &b), DAO_ERR_CLOSED, "take from a closed, empty pool");
      for (dao_buffer* h : p.buffers) {
        buffer_rec& r = bufs_.at(h);
        while (r.refs > 0) {
          FUZZ_OK(dao_buffer_release(h));
          --r.refs;
        }
        expect(dao_buffer_release(h), DAO_ERR_INVALID_STATE, "a release too many");
      }
      check_stats(static_cast<int>(i));
      if (!p.in_collection) {
        FUZZ_OK(dao_recycle_destroy(p.pool));
        forget(static_cast<int>(i));
      }
    }
    if (collection_ != nullptr) FUZZ_OK(dao_collection_destroy(collection_));
  }

  FuzzedDataProvider& in_;
  std::vector<pool_rec> pools_;
  std::map<int, std::size_t> preallocated_;  // preallocated buffers not yet seen
  std::map<dao_buffer*, buffer_rec> bufs_;
  dao_collection* collection_ = nullptr;
  std::uint64_t seed_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const size_t caps[2] = {64 * MiB, 64 * MiB};
  if (dao_sim_configure(2, caps) != DAO_OK) {
    std::fprintf(stderr, "fuzz_recycle: dao_sim_configure: %s\n", dao_last_error());
    std::abort();
  }
  fuzz::pattern_table();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  machine m(in);
  m.run();
  return 0;
}
