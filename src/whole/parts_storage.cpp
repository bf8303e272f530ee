// Own parts: each rank's part is one allocation from its place's default
// allocator (the place defaults of memory.h). In-process chunked memory
// shares the pointers, as every rank is in this address space; distributed
// memory exposes each part in a transport window, and other ranks reach it
// only through that window. Between processes, distributed host memory is
// allocated by the transport itself when it can (MPI_Win_allocate, whose
// windows MPI serves fastest).
#include <memory>

#include "core/error.hpp"
#include "strategy/place_defaults.hpp"
#include "dao/stream.h"
#include "dao/whole.h"
#include "resource/system_resource.hpp"
#include "whole/collective.hpp"
#include "whole/storage.hpp"
#include "whole/support.hpp"

namespace dao::detail::whole {
namespace {

class parts_storage final : public storage {
 public:
  parts_storage(dao_place place, int ranks, int rank) : storage(place, ranks), rank_(rank) {}
  ~parts_storage() override {
    // Not released (a create that failed on every rank): a window is
    // dropped without the collective free, as no rank uses it.
    window_.reset();
    free_own();
  }

  void allocate_own(std::size_t bytes) {
    strategy& a = internal_place_strategy(place_);
    own_ = static_cast<char*>(a.allocate(bytes, nullptr));
    allocator_ = &a;
    parts_[static_cast<std::size_t>(rank_)] = own_;
  }

  void use_window(std::unique_ptr<window> w, std::size_t bytes) {
    window_ = std::move(w);
    if (bytes != 0) parts_[static_cast<std::size_t>(rank_)] = static_cast<char*>(window_->local());
  }

  void expose(transport& t, std::size_t bytes) { window_ = t.expose(own_, bytes); }

  void share_pointers(transport& t) { t.allgather(&own_, sizeof own_, parts_.data()); }

  void release() override {
    if (window_) {
      window_->free();
      window_.reset();
    }
    free_own();
  }

 private:
  void free_own() noexcept {
    if (own_ != nullptr) {
      try {
        allocator_->deallocate(own_);
      } catch (...) {
        // The place allocator handed this block out; it cannot refuse it.
      }
      own_ = nullptr;
    }
  }

  int rank_;
  strategy* allocator_ = nullptr;
  char* own_ = nullptr;
};

}  // namespace

std::unique_ptr<storage> make_parts_storage(communicator& comm, int type, int location,
                                            const partition& layout) {
  transport& t = comm.net();
  const int me = comm.rank();
  const dao_place place = part_place(comm, me, location);
  const std::size_t bytes = layout.byte_size(me);
  std::unique_ptr<parts_storage> out;
  // Each rank's bookkeeping, agreed on before any collective step.
  agree_on_outcome(t, "dao_whole_create",
                   capture([&] { out = std::make_unique<parts_storage>(place, comm.size(), me); }));
  const bool distributed = type == DAO_WHOLE_DISTRIBUTED;

  bool all_host = true;
  for (int r = 0; r < comm.size(); ++r)
    if (raw_kind(part_place(comm, r, location).kind) != DAO_PLACE_CPU) all_host = false;
  if (distributed && !t.shares_address_space() && all_host) {
    // The same decision on every rank, so the collective call is matched.
    std::unique_ptr<window> w = t.allocate_exposed(bytes);
    if (w) {
      out->use_window(std::move(w), bytes);
      return out;
    }
  }

  const outcome allocated = capture([&] {
    if (bytes != 0) out->allocate_own(bytes);
  });
  agree_on_outcome(t, "dao_whole_create", allocated);
  // A transport's collective fails on every rank alike; agreed on anyway,
  // so that a rank whose exposure failed locally does not return alone.
  agree_on_outcome(t, "dao_whole_create", capture([&] {
                     if (distributed) {
                       out->expose(t, bytes);
                     } else {
                       out->share_pointers(t);
                     }
                   }));
  return out;
}

}  // namespace dao::detail::whole
