// In-process transport (see local_transport.hpp).
#include "whole/local_transport.hpp"

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail::whole {
namespace {

// Where the ranks of one group meet. Lives as long as any rank's transport.
class group {
 public:
  explicit group(int ranks) : ranks_(ranks), slots_(static_cast<std::size_t>(ranks)) {}

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

  void allgather(int rank, const void* send, std::size_t bytes, void* recv) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& slot = slots_[static_cast<std::size_t>(rank)];
      const auto* p = static_cast<const unsigned char*>(send);
      slot.assign(p, p + bytes);
    }
    barrier();
    bool sizes_match = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto* out = static_cast<unsigned char*>(recv);
      for (std::size_t r = 0; r < slots_.size(); ++r) {
        const auto& slot = slots_[r];
        if (slot.size() != bytes) sizes_match = false;
        std::memcpy(out + r * bytes, slot.data(), slot.size() < bytes ? slot.size() : bytes);
      }
    }
    // Nobody may overwrite a slot before every rank has read them all.
    barrier();
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
};

// A window over memory of this process: gets and puts are copies, complete
// at once.
class local_window final : public window {
 public:
  local_window(std::vector<char*> bases, std::vector<std::size_t> sizes)
      : bases_(std::move(bases)), sizes_(std::move(sizes)) {}

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

  std::unique_ptr<window> expose(void* local, std::size_t bytes) override {
    struct exposed {
      char* base;
      std::size_t bytes;
    } mine{static_cast<char*>(local), bytes};
    std::vector<exposed> all(static_cast<std::size_t>(size()));
    allgather(&mine, sizeof mine, all.data());
    std::vector<char*> bases;
    std::vector<std::size_t> sizes;
    for (const exposed& e : all) {
      bases.push_back(e.base);
      sizes.push_back(e.bytes);
    }
    return std::make_unique<local_window>(std::move(bases), std::move(sizes));
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
  for (int r = 0; r < ranks; ++r) out.push_back(std::make_unique<local_transport>(g, r));
  return out;
}

}  // namespace dao::detail::whole
