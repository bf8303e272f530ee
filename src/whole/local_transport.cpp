// In-process transport (see local_transport.hpp).
#include "whole/local_transport.hpp"

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "util/format.hpp"
#include "whole/collective.hpp"

namespace dao::detail::whole {
namespace {

// Where the ranks of one group meet. Lives as long as any rank's transport.
class group {
 public:
  // Each slot has room for an agreement record (collective.cpp) and the
  // few words the other collectives send, so that they allocate nothing.
  explicit group(int ranks)
      : ranks_(ranks),
        slots_(static_cast<std::size_t>(ranks)),
        failed_(static_cast<std::size_t>(ranks), 0),
        posted_(static_cast<std::size_t>(ranks)) {
    for (auto& slot : slots_) slot.reserve(kSlotBytes);
  }

  int ranks() const noexcept { return ranks_; }

  // A reusable barrier: the last rank to arrive opens the current
  // generation. The mutex also orders every rank's earlier writes before
  // every rank's later reads.
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t generation = generation_;
    if (++arrived_ == ranks_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

  // What a rank offers in an all-to-all: its send buffer and, for
  // alltoallv, its counts and displacements. The others copy their pieces
  // from it between two barriers, so it is valid while they read.
  struct offer {
    const char* send = nullptr;
    const std::size_t* counts = nullptr;
    const std::size_t* displs = nullptr;
    std::size_t unit = 0;
  };
  void post(int rank, const offer& o) {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_[static_cast<std::size_t>(rank)] = o;
  }
  offer posted(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_[static_cast<std::size_t>(rank)];
  }

  // A rank that cannot store its contribution (no memory for a slot larger
  // than reserved) still takes both steps, and then every rank throws: a
  // collective fails on every rank or on none.
  void allgather(int rank, const void* send, std::size_t bytes, void* recv) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& slot = slots_[static_cast<std::size_t>(rank)];
      const auto* p = static_cast<const unsigned char*>(send);
      char failed = 0;
      try {
        slot.assign(p, p + bytes);
      } catch (...) {
        slot.clear();
        failed = 1;
      }
      failed_[static_cast<std::size_t>(rank)] = failed;
    }
    barrier();
    bool sizes_match = true;
    int failed_rank = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto* out = static_cast<unsigned char*>(recv);
      for (std::size_t r = 0; r < slots_.size(); ++r) {
        if (failed_[r] != 0) {
          if (failed_rank < 0) failed_rank = static_cast<int>(r);
          continue;
        }
        const auto& slot = slots_[r];
        if (slot.size() != bytes) sizes_match = false;
        std::memcpy(out + r * bytes, slot.data(), slot.size() < bytes ? slot.size() : bytes);
      }
    }
    // Nobody may overwrite a slot before every rank has read them all.
    barrier();
    if (failed_rank >= 0) {
      throw out_of_memory(
          strprintf("in-process allgather: rank %d had no host memory for its %zu bytes",
                    failed_rank, bytes));
    }
    if (!sizes_match) {
      throw error(DAO_ERR_INTERNAL, "in-process allgather: the ranks sent different sizes");
    }
  }

 private:
  const int ranks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::vector<std::vector<unsigned char>> slots_;
  std::vector<char> failed_;   // by rank: its last contribution could not be stored
  std::vector<offer> posted_;  // by rank: its part of the current all-to-all
  static constexpr std::size_t kSlotBytes = kMaxAgreementRecord;
};

// A window over memory of this process: gets and puts are copies, complete
// at once.
class local_window final : public window {
 public:
  // Room for `ranks` parts, filled by add() without allocating.
  explicit local_window(int ranks) {
    bases_.reserve(static_cast<std::size_t>(ranks));
    sizes_.reserve(static_cast<std::size_t>(ranks));
  }
  void add(char* base, std::size_t bytes) noexcept {
    bases_.push_back(base);  // capacity reserved
    sizes_.push_back(bytes);
  }

  void get(int target, std::size_t offset, void* dst, std::size_t bytes) override {
    std::memcpy(dst, at(target, offset, bytes), bytes);
  }
  void put(int target, std::size_t offset, const void* src, std::size_t bytes) override {
    std::memcpy(at(target, offset, bytes), src, bytes);
  }
  void complete() override {}
  void free() override {}

 private:
  char* at(int target, std::size_t offset, std::size_t bytes) const {
    const auto t = static_cast<std::size_t>(target);
    if (target < 0 || t >= bases_.size() || offset > sizes_[t] || bytes > sizes_[t] - offset) {
      throw error(DAO_ERR_INTERNAL,
                  strprintf("in-process window: %zu bytes at %zu of rank %d are outside it", bytes,
                            offset, target));
    }
    return bases_[t] + offset;
  }

  std::vector<char*> bases_;
  std::vector<std::size_t> sizes_;
};

class local_transport final : public transport {
 public:
  local_transport(std::shared_ptr<group> g, int rank) : group_(std::move(g)), rank_(rank) {}

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return group_->ranks(); }
  const char* name() const noexcept override { return "in-process"; }
  bool shares_address_space() const noexcept override { return true; }
  bool shares_host_memory() const noexcept override { return true; }

  void barrier() override { group_->barrier(); }
  void allgather(const void* send, std::size_t bytes, void* recv) override {
    group_->allgather(rank_, send, bytes, recv);
  }

  // The all-to-alls copy straight from the other ranks' send buffers: every
  // rank posts its own, and after a barrier copies its pieces; a second
  // barrier keeps every buffer alive until all ranks have read it.
  bool has_exchange() const noexcept override { return true; }
  void alltoall(const void* send, std::size_t bytes, void* recv) override {
    group::offer mine;
    mine.send = static_cast<const char*>(send);
    mine.unit = bytes;
    group_->post(rank_, mine);
    group_->barrier();
    bool sizes_match = true;
    auto* out = static_cast<char*>(recv);
    for (int r = 0; r < size(); ++r) {
      const group::offer o = group_->posted(r);
      if (o.unit != bytes) {
        sizes_match = false;
        continue;
      }
      std::memcpy(out + static_cast<std::size_t>(r) * bytes,
                  o.send + static_cast<std::size_t>(rank_) * bytes, bytes);
    }
    group_->barrier();
    if (!sizes_match) {
      throw error(DAO_ERR_INTERNAL, "in-process alltoall: the ranks sent different sizes");
    }
  }
  void alltoallv(const void* send, const std::size_t* send_counts, const std::size_t* send_displs,
                 void* recv, const std::size_t* recv_counts, const std::size_t* recv_displs,
                 std::size_t unit) override {
    group::offer mine;
    mine.send = static_cast<const char*>(send);
    mine.counts = send_counts;
    mine.displs = send_displs;
    mine.unit = unit;
    group_->post(rank_, mine);
    group_->barrier();
    int mismatch = -1;
    auto* out = static_cast<char*>(recv);
    const auto me = static_cast<std::size_t>(rank_);
    for (int r = 0; r < size(); ++r) {
      const auto k = static_cast<std::size_t>(r);
      const group::offer o = group_->posted(r);
      if (o.unit != unit || o.counts[me] != recv_counts[k]) {
        if (mismatch < 0) mismatch = r;
        continue;
      }
      if (recv_counts[k] != 0) {
        std::memcpy(out + recv_displs[k] * unit, o.send + o.displs[me] * unit,
                    recv_counts[k] * unit);
      }
    }
    group_->barrier();
    if (mismatch >= 0) {
      throw error(DAO_ERR_INTERNAL,
                  strprintf("in-process alltoallv: rank %d sends rank %d another count or unit "
                            "than it expects",
                            mismatch, rank_));
    }
  }

  // Everything this rank needs is made before the exchange, and the ranks
  // agree on that: no rank leaves the others in the allgather.
  std::unique_ptr<window> expose(void* local, std::size_t bytes) override {
    struct exposed {
      char* base;
      std::size_t bytes;
    } mine{static_cast<char*>(local), bytes};
    std::vector<exposed> all;
    std::unique_ptr<local_window> w;
    const outcome prepared = capture([&] {
      all.resize(static_cast<std::size_t>(size()));
      w = std::make_unique<local_window>(size());
    });
    agree_on_outcome(*this, "in-process expose", prepared);
    allgather(&mine, sizeof mine, all.data());
    for (const exposed& e : all) w->add(e.base, e.bytes);
    return w;
  }

  // In-process memory comes from the ranks' places, never from here.
  std::unique_ptr<window> allocate_exposed(std::size_t) override { return nullptr; }
  std::unique_ptr<shared_segment> allocate_shared(std::size_t, bool) override {
    throw error(DAO_ERR_INTERNAL, "in-process transport: shared segments are not used in-process");
  }

 private:
  std::shared_ptr<group> group_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<transport>> make_local_group(int ranks) {
  auto g = std::make_shared<group>(ranks);
  std::vector<std::unique_ptr<transport>> out;
  out.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    out.push_back(std::make_unique<local_transport>(g, r));
    reserve_agreement(*out.back());
  }
  return out;
}

}  // namespace dao::detail::whole
