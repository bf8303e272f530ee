// Mapped memory between processes: host memory that the transport shares
// among the ranks of one node (MPI_Win_allocate_shared). Continuous memory
// asks for the parts to be adjacent in rank order, so that entry i is at
// base + i * entry_size in every process; chunked memory lets the transport
// place each part where it likes.
//
// Parts on SIM devices (location device): a SIM device is host memory with
// a capacity, private to its process. Its part lives in the shared segment,
// where every process can map it, and the rank's device is charged the
// part's size (an allocation from the device that is never touched, so it
// costs no host memory), so that capacity, dao_used_internal() and
// out-of-memory behave as for any other memory on the device.
#include <memory>

#include "core/error.hpp"
#include "dao/whole.h"
#include "resource/system_resource.hpp"
#include "strategy/place_defaults.hpp"
#include "strategy/strategy.hpp"
#include "util/format.hpp"
#include "whole/collective.hpp"
#include "whole/storage.hpp"

namespace dao::detail::whole {
namespace {

class shared_storage final : public storage {
 public:
  shared_storage(dao_place place, int ranks) : storage(place, ranks) {}
  ~shared_storage() override { uncharge(); }

  // Charges a SIM device for this rank's part (see the file comment).
  void charge(std::size_t bytes) {
    if (bytes == 0 || raw_kind(place_.kind) != DAO_PLACE_SIM) return;
    strategy& a = internal_place_strategy(place_);
    charge_ = a.allocate(bytes, nullptr);
    charger_ = &a;
  }

  void attach(std::unique_ptr<shared_segment> segment) { segment_ = std::move(segment); }

  void map_parts(int type, const partition& layout) {
    for (int r = 0; r < layout.ranks(); ++r) {
      parts_[static_cast<std::size_t>(r)] =
          layout.byte_size(r) != 0 ? static_cast<char*>(segment_->part(r)) : nullptr;
    }
    if (type != DAO_WHOLE_CONTINUOUS) return;
    // Entry 0's address, from any rank that owns entries (rank 0 always
    // does: there is at least one entry and rank 0 gets the first).
    base_ = parts_[0] - layout.byte_offset(0);
    for (int r = 0; r < layout.ranks(); ++r) {
      char* expected = base_ + layout.byte_offset(r);
      if (layout.byte_size(r) != 0 && parts_[static_cast<std::size_t>(r)] != expected) {
        throw unsupported(strprintf(
            "continuous host memory: the transport placed rank %d's part %td bytes away from "
            "where one range needs it; use chunked (DAO_WHOLE_CHUNKED)",
            r, parts_[static_cast<std::size_t>(r)] - expected));
      }
      parts_[static_cast<std::size_t>(r)] = expected;
    }
  }

  void release() override {
    if (segment_) {
      segment_->free();
      segment_.reset();
    }
    uncharge();
  }

 private:
  void uncharge() noexcept {
    if (charge_ == nullptr) return;
    try {
      charger_->deallocate(charge_);
    } catch (...) {
      // The device's allocator gave this pointer; it cannot refuse it.
    }
    charge_ = nullptr;
  }

  std::unique_ptr<shared_segment> segment_;
  void* charge_ = nullptr;
  strategy* charger_ = nullptr;
};

}  // namespace

std::unique_ptr<storage> make_shared_storage(communicator& comm, int type, int location,
                                             const partition& layout) {
  transport& t = comm.net();
  // This rank's bookkeeping and its device's charge, agreed on before the
  // collective allocation: a rank out of memory here must not leave the
  // others inside it.
  std::unique_ptr<shared_storage> out;
  agree_on_outcome(t, "dao_whole_create", capture([&] {
                     const dao_place place = location == DAO_WHOLE_DEVICE
                                                 ? comm.place(comm.rank())
                                                 : dao_place{DAO_PLACE_CPU, 0};
                     out = std::make_unique<shared_storage>(place, comm.size());
                     out->charge(layout.byte_size(comm.rank()));
                   }));
  out->attach(t.allocate_shared(layout.byte_size(comm.rank()), type == DAO_WHOLE_CONTINUOUS));
  const outcome mapped = capture([&] { out->map_parts(type, layout); });
  const outcome agreed = capture([&] { agree_on_outcome(t, "dao_whole_create", mapped); });
  if (!agreed.ok()) {
    out->release();  // collective: every rank has the same outcome
    throw error(agreed.status, agreed.message);
  }
  return out;
}

}  // namespace dao::detail::whole
