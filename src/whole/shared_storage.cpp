// Mapped memory between processes: host memory that the transport shares
// among the ranks of one node (MPI_Win_allocate_shared). Continuous memory
// asks for the parts to be adjacent in rank order, so that entry i is at
// base + i * entry_size in every process; chunked memory lets the transport
// place each part where it likes.
#include <memory>

#include "core/error.hpp"
#include "dao/whole.h"
#include "util/format.hpp"
#include "whole/collective.hpp"
#include "whole/storage.hpp"

namespace dao::detail::whole {
namespace {

class shared_storage final : public storage {
 public:
  explicit shared_storage(int ranks) : storage(dao_place{DAO_PLACE_CPU, 0}, ranks) {}

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
  }

 private:
  std::unique_ptr<shared_segment> segment_;
};

}  // namespace

std::unique_ptr<storage> make_shared_storage(communicator& comm, int type, int,
                                             const partition& layout) {
  transport& t = comm.net();
  // This rank's bookkeeping, agreed on before the collective allocation: a
  // rank out of host memory here must not leave the others inside it.
  std::unique_ptr<shared_storage> out;
  agree_on_outcome(t, "dao_whole_create",
                   capture([&] { out = std::make_unique<shared_storage>(comm.size()); }));
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
