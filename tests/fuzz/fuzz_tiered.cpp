// fuzz_tiered: a tiered pool on a SIM device with a small device budget,
// random tensors, writes, kernels, reads and releases, against a host-side
// reference execution of the same kernels.
//
// The input picks the budget (64 KiB to 1 MiB), the policy (belady, lru,
// size_aware, callback), prefetching and the link bandwidth, then drives up
// to 200 steps: create tensors (also of size 0 or larger than the budget),
// write them, submit kernels on 1-3 inputs and 1-2 outputs (in place or not,
// together larger than the budget now and then), read, get_state, release,
// synchronize, statistics, and bad input (a tensor of another pool, a
// released tensor, wrong sizes, NULL arguments, a fake pool). Now and then a
// kernel fails on purpose: the pool must report it and still read what the
// kernels before it left.
//
// Kernels compute out_o[i] = id * 2654435761 + i * (o + 1) + sum_j
// in_j[i % words_j] on uint32 words; the harness runs the same code on host
// copies at submit time. Invariants:
//   - each call gives the documented status (bad input changes nothing:
//     later reads still match the model);
//   - a kernel is called once, in submission order, with its tensors' counts,
//     with 256-aligned pointers, one per distinct tensor, whose ranges do
//     not overlap, and with inputs that hold exactly what the model says
//     (checked inside the kernel, so eviction and fetch errors show at once);
//   - every read equals the host reference; a never-written tensor reads as
//     DAO_ERR_INVALID_STATE;
//   - after synchronize: kernels_run = kernels submitted, device bytes and
//     their peak within the budget, tensors_live = tensors not released,
//     every written tensor on the device or the host;
//   - a failed pool refuses new work with DAO_ERR_INVALID_STATE and reads
//     give the data the kernels before the failure left.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace {

constexpr std::size_t KiB = 1024;

FUZZ_NO_COVERAGE std::uint64_t hash_words(const std::uint32_t* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

struct kernel_args {
  std::uint32_t id = 0;
  std::uint64_t seq = 0;  // submission number, 1, 2, ...
  int nin = 0, nout = 0;
  int in[3] = {0, 0, 0}, out[2] = {0, 0};  // tensor indices in the model
  std::size_t in_words[3] = {0, 0, 0}, out_words[2] = {0, 0};
  std::uint64_t in_hash[3] = {0, 0, 0};  // what each input must hold
  bool fail = false;
  std::atomic<int>* calls = nullptr;  // times it ran
  std::atomic<std::uint64_t>* last_seq = nullptr;
};

FUZZ_NO_COVERAGE void compute(const kernel_args& k, std::uint32_t* const* in,
                              std::uint32_t* const* out) {
  for (int o = 0; o < k.nout; ++o)
    for (std::size_t i = 0; i < k.out_words[o]; ++i) {
      std::uint32_t v =
          k.id * 2654435761u + static_cast<std::uint32_t>(i) * static_cast<std::uint32_t>(o + 1);
      for (int j = 0; j < k.nin; ++j) v += in[j][i % k.in_words[j]];
      out[o][i] = v;
    }
}

dao_status kernel(void* user_data, void* const* inputs, size_t input_count, void* const* outputs,
                  size_t output_count, dao_stream stream) {
  (void)stream;
  const auto* k = static_cast<const kernel_args*>(user_data);
  FUZZ_CHECK(k->calls->fetch_add(1) == 0, "kernel %" PRIu64 " ran twice", k->seq);
  const std::uint64_t before = k->last_seq->exchange(k->seq);
  FUZZ_CHECK(before < k->seq, "kernel %" PRIu64 " ran after kernel %" PRIu64, k->seq, before);
  FUZZ_CHECK(
      input_count == static_cast<size_t>(k->nin) && output_count == static_cast<size_t>(k->nout),
      "kernel %" PRIu64 " got %zu inputs and %zu outputs, submitted with %d and %d", k->seq,
      input_count, output_count, k->nin, k->nout);
  // One pointer per distinct tensor, aligned, not overlapping another's.
  struct range {
    int tensor;
    std::uintptr_t lo, hi;
  };
  std::vector<range> ranges;
  auto add = [&](int t, void* p, std::size_t words) {
    auto lo = reinterpret_cast<std::uintptr_t>(p);
    FUZZ_CHECK(p != nullptr && lo % 256 == 0, "kernel %" PRIu64 ": tensor %d at %p", k->seq, t, p);
    for (const range& r : ranges) {
      if (r.tensor == t) {
        FUZZ_CHECK(r.lo == lo, "kernel %" PRIu64 ": tensor %d given at two addresses", k->seq, t);
      } else {
        FUZZ_CHECK(lo + words * 4 <= r.lo || r.hi <= lo,
                   "kernel %" PRIu64 ": tensors %d and %d overlap on the device", k->seq, t,
                   r.tensor);
      }
    }
    ranges.push_back(range{t, lo, lo + words * 4});
  };
  for (int j = 0; j < k->nin; ++j) add(k->in[j], inputs[j], k->in_words[j]);
  for (int o = 0; o < k->nout; ++o) add(k->out[o], outputs[o], k->out_words[o]);
  for (int j = 0; j < k->nin; ++j) {
    const std::uint64_t h =
        hash_words(static_cast<const std::uint32_t*>(inputs[j]), k->in_words[j]);
    FUZZ_CHECK(h == k->in_hash[j],
               "kernel %" PRIu64 ": input %d (tensor %d, %zu words) does not hold what "
               "was written and computed before it",
               k->seq, j, k->in[j], k->in_words[j]);
  }
  if (k->fail) return DAO_ERR_INTERNAL;
  compute(*k, reinterpret_cast<std::uint32_t* const*>(const_cast<void**>(inputs)),
          reinterpret_cast<std::uint32_t* const*>(const_cast<void**>(outputs)));
  return DAO_OK;
}

double score(void* user_data, const dao_tensor_access_info* info) {
  const std::size_t budget = *static_cast<const std::size_t*>(user_data);
  FUZZ_CHECK(info != nullptr && info->struct_size >= sizeof(dao_tensor_access_info) &&
                 info->tensor != nullptr,
             "score callback: bad info");
  FUZZ_CHECK(info->bytes > 0 && info->bytes <= budget, "score callback: a tensor of %zu bytes",
             info->bytes);
  FUZZ_CHECK(
      info->last_use <= info->now && (info->next_use == UINT64_MAX || info->next_use >= info->now),
      "score callback: last use %" PRIu64 ", now %" PRIu64 ", next use %" PRIu64, info->last_use,
      info->now, info->next_use);
  // Deterministic: far next use and large size first.
  return (info->next_use == UINT64_MAX ? 1e12 : static_cast<double>(info->next_use - info->now)) +
         static_cast<double>(info->bytes) * 1e-9;
}

struct tensor_rec {
  dao_tensor* t = nullptr;
  std::size_t words = 0;
  bool released = false;
  bool has_data = false;  // in the model
  std::vector<std::uint32_t> model;
};

class machine {
 public:
  explicit machine(FuzzedDataProvider& in) : in_(in) {}

  void run() {
    if (!create()) return;
    for (int step = 0; step < 200 && in_.remaining_bytes() > 0 && !failed_; ++step) this->step();
    if (failed_) after_failure();
    finish();
  }

 private:
  void expect(dao_status got, dao_status want, const char* what) {
    if (got != want)
      FUZZ_FAIL("%s gave %d (%s), expected %d (%s)", what, (int)got, dao_status_string(got),
                (int)want, dao_status_string(want));
    FUZZ_MESSAGE(got);
  }

  bool create() {
    static const std::size_t budgets[] = {64 * KiB, 96 * KiB, 256 * KiB, 1024 * KiB};
    budget_ = budgets[in_.ConsumeIntegralInRange<int>(0, 3)];
    tensors_.reserve(16);
    static const char* const policies[] = {"belady", "lru", "size_aware", "callback"};
    const int policy = in_.ConsumeIntegralInRange<int>(0, 3);
    callback_ = policy == 3;
    std::string config = std::string("policy=") + policies[policy] +
                         ",prefetch=" + std::to_string(in_.ConsumeIntegralInRange<int>(0, 3));
    if (in_.ConsumeBool()) config += ",link_bandwidth=50GB/s";
    if (in_.ConsumeBool()) config += ",host_budget=1GiB";
    // Refused creations first.
    dao_tiered* bad = nullptr;
    expect(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), 0, "", &bad),
           DAO_ERR_INVALID_ARGUMENT, "tiered_create with a zero budget");
    switch (in_.ConsumeIntegralInRange<int>(0, 6)) {
      case 0:
        expect(dao_tiered_create(dao_place_cpu(), dao_place_cpu(), budget_, "", &bad),
               DAO_ERR_INVALID_ARGUMENT, "tiered_create on the CPU");
        break;
      case 1:
        expect(dao_tiered_create(dao_place_sim(0), dao_place_sim(1), budget_, "", &bad),
               DAO_ERR_INVALID_ARGUMENT, "tiered_create with a SIM host tier");
        break;
      case 2:
        expect(dao_tiered_create(dao_place_sim(5), dao_place_cpu(), budget_, "", &bad),
               DAO_ERR_NO_DEVICE, "tiered_create on SIM 5");
        break;
      case 3:
        expect(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), std::size_t(1) << 40, "", &bad),
               DAO_ERR_OUT_OF_MEMORY, "tiered_create with a budget larger than the device");
        break;
      case 4:
        expect(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), budget_, "policy=oracle", &bad),
               DAO_ERR_INVALID_ARGUMENT, "tiered_create with an unknown policy");
        break;
      default: break;
    }
    FUZZ_OK(dao_tiered_create(dao_place_sim(0), dao_place_cpu(), budget_, config.c_str(), &pool_));
    if (callback_) {
      if (in_.ConsumeBool()) {
        // Without a scoring function, submits are refused.
        tensor_rec probe;
        FUZZ_OK(dao_tensor_create(pool_, 64, &probe.t));
        dao_tensor* list[1] = {probe.t};
        expect(dao_kernel_submit(pool_, kernel, nullptr, nullptr, 0, list, 1),
               DAO_ERR_INVALID_STATE, "submit under policy=callback without a function");
        FUZZ_OK(dao_tensor_release(probe.t));
      }
      FUZZ_OK(dao_tiered_set_score_callback(pool_, score, &budget_));
    } else {
      expect(dao_tiered_set_score_callback(pool_, score, &budget_), DAO_ERR_INVALID_STATE,
             "set_score_callback under another policy");
    }
    return true;
  }

  int pick_tensor(bool live_only) {
    std::vector<int> list;
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (!live_only || !tensors_[i].released) list.push_back(static_cast<int>(i));
    if (list.empty()) return -1;
    return list[in_.ConsumeIntegralInRange<std::size_t>(0, list.size() - 1)];
  }

  void step() {
    switch (in_.ConsumeIntegralInRange<int>(0, 15)) {
      case 0:
      case 1: return op_create_tensor();
      case 2:
      case 3: return op_write();
      case 4:
      case 5:
      case 6:
      case 7: return op_kernel();
      case 8:
      case 9: return op_read();
      case 10: return op_release();
      case 11: return op_synchronize();
      case 12: return op_state();
      case 13: return op_bad_input();
      case 14: return op_foreign();
      default: return op_stats();
    }
  }

  void op_create_tensor() {
    if (tensors_.size() >= 12) return;
    dao_tensor* t = nullptr;
    switch (in_.ConsumeIntegralInRange<int>(0, 9)) {
      case 0:
        expect(dao_tensor_create(pool_, 0, &t), DAO_ERR_INVALID_ARGUMENT, "tensor of 0 bytes");
        return;
      case 1:
        expect(dao_tensor_create(pool_, budget_ + 256, &t), DAO_ERR_OUT_OF_MEMORY,
               "tensor larger than the budget");
        return;
      default: break;
    }
    tensor_rec r;
    const std::size_t max_words = in_.ConsumeBool() ? budget_ / 16 : budget_ / 4;
    r.words = in_.ConsumeIntegralInRange<std::size_t>(1, max_words);
    FUZZ_OK(dao_tensor_create(pool_, r.words * 4, &r.t));
    r.model.assign(r.words, 0);
    tensors_.push_back(std::move(r));
  }

  void op_write() {
    const int i = pick_tensor(true);
    if (i < 0) return;
    tensor_rec& r = tensors_[i];
    const std::uint64_t seed = ++seed_;
    std::memcpy(r.model.data(), fuzz::pattern(seed), r.words * 4);
    FUZZ_OK(dao_tensor_write(r.t, r.model.data(), r.words * 4));
    r.has_data = true;
  }

  void op_kernel() {
    std::vector<int> with_data, live;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      if (tensors_[i].released) continue;
      live.push_back(static_cast<int>(i));
      if (tensors_[i].has_data) with_data.push_back(static_cast<int>(i));
    }
    if (live.empty()) return;
    auto k = std::make_unique<kernel_args>();
    k->nin = with_data.empty()
                 ? 0
                 : in_.ConsumeIntegralInRange<int>(0, std::min<int>(3, with_data.size()));
    k->nout = in_.ConsumeIntegralInRange<int>(1, std::min<int>(2, live.size()));
    for (int j = 0; j < k->nin; ++j) {  // distinct inputs with data
      int t;
      do t = with_data[in_.ConsumeIntegralInRange<std::size_t>(0, with_data.size() - 1)];
      while (std::find(k->in, k->in + j, t) != k->in + j && in_.remaining_bytes() > 0);
      if (std::find(k->in, k->in + j, t) != k->in + j) return;
      k->in[j] = t;
    }
    for (int o = 0; o < k->nout; ++o) {  // distinct outputs, in place now and then
      int t;
      do
        t = (k->nin > 0 && in_.ConsumeBool())
                ? k->in[in_.ConsumeIntegralInRange<int>(0, k->nin - 1)]
                : live[in_.ConsumeIntegralInRange<std::size_t>(0, live.size() - 1)];
      while (std::find(k->out, k->out + o, t) != k->out + o && in_.remaining_bytes() > 0);
      if (std::find(k->out, k->out + o, t) != k->out + o) return;
      k->out[o] = t;
    }
    dao_tensor* ins[3];
    dao_tensor* outs[2];
    std::uint32_t* min[3];
    std::uint32_t* mout[2];
    std::size_t need = 0;
    std::vector<int> distinct;
    for (int j = 0; j < k->nin; ++j) {
      tensor_rec& r = tensors_[k->in[j]];
      ins[j] = r.t;
      min[j] = r.model.data();
      k->in_words[j] = r.words;
      k->in_hash[j] = hash_words(r.model.data(), r.words);
      distinct.push_back(k->in[j]);
    }
    for (int o = 0; o < k->nout; ++o) {
      tensor_rec& r = tensors_[k->out[o]];
      outs[o] = r.t;
      mout[o] = r.model.data();
      k->out_words[o] = r.words;
      if (std::find(distinct.begin(), distinct.end(), k->out[o]) == distinct.end())
        distinct.push_back(k->out[o]);
    }
    for (int t : distinct) need += (tensors_[t].words * 4 + 255) / 256 * 256;
    k->id = static_cast<std::uint32_t>(++kernel_ids_);
    k->fail = in_.ConsumeIntegralInRange<int>(0, 63) == 0;
    k->calls = &calls_[kernel_ids_ % kCallSlots];
    k->last_seq = &last_seq_;
    k->calls->store(0);
    k->seq = submitted_ + 1;  // before it can run
    const dao_status s = dao_kernel_submit(pool_, kernel, k.get(), ins, static_cast<size_t>(k->nin),
                                           outs, static_cast<size_t>(k->nout));
    if (need > budget_) {
      expect(s, DAO_ERR_OUT_OF_MEMORY, "a kernel whose tensors do not fit the budget");
      --kernel_ids_;
      return;
    }
    FUZZ_OK(s);
    ++submitted_;
    kernel_args* raw = k.get();
    kernels_.push_back(std::move(k));
    if (raw->fail) {
      // The pool fails at this kernel: what it reads from now on is what the
      // kernels before it left.
      expect(dao_tiered_synchronize(pool_), DAO_ERR_INVALID_STATE,
             "synchronize after a failing kernel");
      failed_ = true;
      return;
    }
    compute(*raw, min, mout);
    for (int o = 0; o < raw->nout; ++o) tensors_[raw->out[o]].has_data = true;
  }

  void check_read(tensor_rec& r, const char* what) {
    std::vector<std::uint32_t> got(r.words, 0xdeadbeefu);
    const dao_status s = dao_tensor_read(r.t, got.data(), r.words * 4);
    if (!r.has_data) {  // never written (or only by work a failure discarded)
      expect(s, DAO_ERR_INVALID_STATE, "read of a tensor that holds no data");
      return;
    }
    FUZZ_OK(s);
    if (got != r.model) {
      std::size_t i = 0;
      while (got[i] == r.model[i]) ++i;
      FUZZ_FAIL("%s: tensor of %zu words differs from the host reference at word %zu: %08x, "
                "expected %08x",
                what, r.words, i, got[i], r.model[i]);
    }
  }

  void op_read() {
    const int i = pick_tensor(true);
    if (i < 0) return;
    check_read(tensors_[i], "read");
  }

  void op_release() {
    const int i = pick_tensor(true);
    if (i < 0) return;
    FUZZ_OK(dao_tensor_release(tensors_[i].t));
    tensors_[i].released = true;
  }

  void op_synchronize() {
    FUZZ_OK(dao_tiered_synchronize(pool_));
    dao_tiered_stats s = stats();
    FUZZ_CHECK(s.kernels_run == submitted_ && s.kernels_submitted == submitted_,
               "after synchronize: %" PRIu64 " of %" PRIu64 " kernels run, %" PRIu64 " submitted",
               s.kernels_run, s.kernels_submitted, submitted_);
    std::uint64_t live = 0;
    for (const tensor_rec& r : tensors_) live += !r.released;
    FUZZ_CHECK(s.tensors_live == live,
               "after synchronize: tensors_live %" PRIu64 ", model %" PRIu64, s.tensors_live, live);
    for (const tensor_rec& r : tensors_) {
      if (r.released) continue;
      dao_tensor_state st;
      FUZZ_OK(dao_tensor_get_state(r.t, &st));
      if (r.has_data)
        FUZZ_CHECK(
            st == DAO_TENSOR_ON_DEVICE || st == DAO_TENSOR_ON_HOST || st == DAO_TENSOR_IN_TRANSIT,
            "a written tensor in state %d after synchronize", (int)st);
      else
        FUZZ_CHECK(st == DAO_TENSOR_UNINITIALIZED, "a never-written tensor in state %d", (int)st);
    }
  }

  dao_tiered_stats stats() {
    dao_tiered_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    FUZZ_OK(dao_tiered_get_stats(pool_, &s));
    FUZZ_CHECK(s.device_bytes <= budget_ && s.peak_device_bytes <= budget_ &&
                   s.peak_device_bytes >= s.device_bytes,
               "device bytes %" PRIu64 " (peak %" PRIu64 ") with a budget of %zu", s.device_bytes,
               s.peak_device_bytes, budget_);
    FUZZ_CHECK(s.peak_host_bytes >= s.host_bytes && s.kernels_run <= s.kernels_submitted &&
                   s.prefetches_in_time <= s.prefetches && s.bytes_evicted >= s.evictions &&
                   s.bytes_fetched >= s.fetches,
               "tiered statistics inconsistent");
    return s;
  }

  void op_stats() {
    dao_tiered_stats s = stats();
    FUZZ_CHECK(s.kernels_submitted == submitted_, "kernels_submitted %" PRIu64 ", model %" PRIu64,
               s.kernels_submitted, submitted_);
    dao_tiered_stats small;
    std::memset(&small, 0, sizeof small);
    small.struct_size = 8;
    expect(dao_tiered_get_stats(pool_, &small), DAO_ERR_INVALID_ARGUMENT,
           "tiered_get_stats with a small struct");
  }

  void op_state() {
    const int i = pick_tensor(false);
    if (i < 0) return;
    tensor_rec& r = tensors_[i];
    dao_tensor_state st;
    const dao_status s = dao_tensor_get_state(r.t, &st);
    if (r.released) {
      expect(s, DAO_ERR_INVALID_ARGUMENT, "get_state of a released tensor");
      return;
    }
    FUZZ_OK(s);
    FUZZ_CHECK(st >= DAO_TENSOR_UNINITIALIZED && st <= DAO_TENSOR_IN_TRANSIT, "state %d", (int)st);
    expect(dao_tensor_get_state(r.t, nullptr), DAO_ERR_INVALID_ARGUMENT, "get_state(NULL out)");
  }

  void op_bad_input() {
    const int i = pick_tensor(false);
    if (i < 0) return;
    tensor_rec& r = tensors_[i];
    std::vector<std::uint32_t> buf(r.words + 1);
    dao_tensor* list[1] = {r.t};
    if (r.released) {
      expect(dao_tensor_read(r.t, buf.data(), r.words * 4), DAO_ERR_INVALID_ARGUMENT,
             "read of a released tensor");
      expect(dao_tensor_write(r.t, buf.data(), r.words * 4), DAO_ERR_INVALID_ARGUMENT,
             "write of a released tensor");
      expect(dao_tensor_release(r.t), DAO_ERR_INVALID_ARGUMENT, "release of a released tensor");
      expect(dao_kernel_submit(pool_, kernel, nullptr, list, 1, nullptr, 0),
             DAO_ERR_INVALID_ARGUMENT, "submit with a released tensor");
      return;
    }
    expect(dao_tensor_read(r.t, buf.data(), r.words * 4 + 4), DAO_ERR_INVALID_ARGUMENT,
           "read of a wrong size");
    expect(dao_tensor_write(r.t, buf.data(), r.words * 4 - 4 * (r.words > 1) + 4 * (r.words == 1)),
           DAO_ERR_INVALID_ARGUMENT, "write of a wrong size");
    expect(dao_tensor_read(r.t, nullptr, r.words * 4), DAO_ERR_INVALID_ARGUMENT, "read into NULL");
    expect(dao_tensor_write(r.t, nullptr, r.words * 4), DAO_ERR_INVALID_ARGUMENT,
           "write from NULL");
    expect(dao_kernel_submit(pool_, nullptr, nullptr, list, 1, nullptr, 0),
           DAO_ERR_INVALID_ARGUMENT, "submit without a function");
    expect(dao_kernel_submit(pool_, kernel, nullptr, nullptr, 1, nullptr, 0),
           DAO_ERR_INVALID_ARGUMENT, "submit with NULL inputs and a count");
    alignas(64) static unsigned char fake[256];
    expect(dao_tiered_synchronize(reinterpret_cast<dao_tiered*>(fake)), DAO_ERR_INVALID_ARGUMENT,
           "synchronize(fake pool)");
    expect(dao_tensor_read(reinterpret_cast<dao_tensor*>(fake), buf.data(), 4),
           DAO_ERR_INVALID_ARGUMENT, "read(fake tensor)");
    expect(dao_tensor_create(nullptr, 64, list), DAO_ERR_INVALID_ARGUMENT,
           "tensor_create(NULL pool)");
  }

  // A tensor of another pool.
  void op_foreign() {
    const int i = pick_tensor(true);
    if (i < 0) return;
    if (other_ == nullptr)
      FUZZ_OK(dao_tiered_create(dao_place_sim(1), dao_place_cpu(), 64 * KiB, "", &other_));
    std::vector<std::uint32_t> buf(tensors_[i].words);
    dao_tensor* mine[1] = {tensors_[i].t};
    expect(dao_kernel_submit(other_, kernel, nullptr, mine, 1, nullptr, 0),
           DAO_ERR_INVALID_ARGUMENT, "submit of a tensor to another pool");
    dao_tensor* theirs = nullptr;
    FUZZ_OK(dao_tensor_create(other_, 256, &theirs));
    dao_tensor* list[2] = {tensors_[i].t, theirs};
    expect(dao_kernel_submit(pool_, kernel, nullptr, list, 2, nullptr, 0), DAO_ERR_INVALID_ARGUMENT,
           "submit mixing two pools' tensors");
    FUZZ_OK(dao_tensor_release(theirs));
  }

  void after_failure() {
    dao_tensor* t = nullptr;
    expect(dao_tensor_create(pool_, 64, &t), DAO_ERR_INVALID_STATE,
           "tensor_create on a failed pool");
    expect(dao_tiered_synchronize(pool_), DAO_ERR_INVALID_STATE, "synchronize of a failed pool");
    for (tensor_rec& r : tensors_) {
      if (r.released) continue;
      std::vector<std::uint32_t> buf(r.words);
      expect(dao_tensor_write(r.t, buf.data(), r.words * 4), DAO_ERR_INVALID_STATE,
             "write on a failed pool");
      dao_tensor* list[1] = {r.t};
      expect(dao_kernel_submit(pool_, kernel, nullptr, list, 1, nullptr, 0), DAO_ERR_INVALID_STATE,
             "submit on a failed pool");
      // Reads still give what the kernels before the failure left.
      check_read(r, "read of a failed pool");
    }
  }

  void finish() {
    if (!failed_) {
      FUZZ_OK(dao_tiered_synchronize(pool_));
      for (tensor_rec& r : tensors_)
        if (!r.released) check_read(r, "final read");
      op_synchronize();
    }
    FUZZ_OK(dao_tiered_destroy(pool_));
    if (other_ != nullptr) FUZZ_OK(dao_tiered_destroy(other_));
    // Each kernel ran once unless the failure discarded it.
    for (const auto& k : kernels_) {
      const int calls = k->calls->load();
      FUZZ_CHECK(calls <= 1, "kernel ran %d times", calls);
    }
  }

  static constexpr int kCallSlots = 1024;
  FuzzedDataProvider& in_;
  dao_tiered* pool_ = nullptr;
  dao_tiered* other_ = nullptr;
  std::size_t budget_ = 0;
  bool callback_ = false;
  bool failed_ = false;
  std::vector<tensor_rec> tensors_;
  std::vector<std::unique_ptr<kernel_args>> kernels_;
  std::atomic<int> calls_[kCallSlots] = {};
  std::atomic<std::uint64_t> last_seq_{0};
  std::uint64_t kernel_ids_ = 0, submitted_ = 0, seed_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const size_t caps[2] = {size_t(64) << 20, size_t(64) << 20};
  if (dao_sim_configure(2, caps) != DAO_OK) {
    std::fprintf(stderr, "fuzz_tiered: dao_sim_configure: %s\n", dao_last_error());
    std::abort();
  }
  fuzz::pattern_table();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  auto m = std::make_unique<machine>(in);
  m->run();
  return 0;
}
