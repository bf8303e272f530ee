// Device parts: chunked and distributed memory on CUDA devices. Each rank's
// part is one allocation from its device's default allocator for libdao's
// own memory (the place defaults of memory.h), so dao_used_internal(),
// capacity and out-of-memory behave as for any other memory on the device.
//
// - One process (in-process communicators): every rank holds every part's
//   address, which is a device address in the process's unified address
//   space. Chunked memory promises that code on each rank's device can
//   address every part, so each rank enables peer access from its device to
//   every other rank's device (cuCtxEnablePeerAccess); check_support()
//   refuses chunked memory where the hardware has no peer access between
//   two of the devices. Distributed memory needs none: its gather and
//   scatter copy with the driver, which reaches every device.
// - Processes of one node (a transport that shares host memory): every
//   rank exports its part with CUDA IPC (cuIpcGetMemHandle names the whole
//   allocation; the record carries the part's offset in it), the ranks
//   trade the records with one allgather, and each maps the others' parts
//   (cuIpcOpenMemHandle, with lazy peer access) and unmaps them at destroy
//   (cuIpcCloseMemHandle) before any owner frees its part. A part of the
//   same process (a transport over threads) is used directly: the driver
//   refuses to open a handle in the process that exported it.
//
// The host cannot address device memory: gather, scatter, store and load
// copy through the driver (copier(), device_copy.hpp).
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "dao/whole.h"
#include "resource/system_resource.hpp"
#include "strategy/place_defaults.hpp"
#include "strategy/strategy.hpp"
#include "util/format.hpp"
#include "whole/collective.hpp"
#include "whole/storage.hpp"
#include "whole/support.hpp"

namespace dao::detail::whole {
namespace {

// What a rank tells the others about its part (plain bytes, one allgather).
struct part_record {
  std::uint64_t process;  // getpid() of the owner
  std::uint64_t address;  // the part's address in the owner's process
  std::uint64_t bytes;
  exported_memory exported;  // for other processes (CUDA IPC)
};

class device_storage final : public storage {
 public:
  device_storage(transport& t, dao_place place, int ranks, int rank)
      : storage(place, ranks),
        transport_(t),
        rank_(rank),
        records_(static_cast<std::size_t>(ranks)),
        imported_(static_cast<std::size_t>(ranks), 0) {}
  ~device_storage() override {
    // Not released (a create that failed on every rank): what this rank
    // can undo alone.
    close_imports();
    copier_.reset();
    free_own();
  }

  // This rank's part and its copier.
  void allocate_own(std::size_t bytes) {
    resource_ = &resource_for(place_);
    copier_ = std::make_unique<device_copier>(place_);
    if (bytes == 0) return;
    strategy& a = internal_place_strategy(place_);
    own_ = static_cast<char*>(a.allocate(bytes, nullptr));
    allocator_ = &a;
    parts_[static_cast<std::size_t>(rank_)] = own_;
  }

  // In one process: every part's address is usable as it is.
  void share_pointers() { transport_.allgather(&own_, sizeof own_, parts_.data()); }

  // Chunked in one process: this rank's device may address every other
  // rank's part.
  void enable_peers(const communicator& comm) {
    for (int r = 0; r < comm.size(); ++r) {
      if (r == rank_) continue;
      resource_->enable_peer_access(resource_for(comm.place(r)));
    }
  }

  // Between processes: this rank's record (its part exported when a rank
  // of another process will map it).
  part_record describe(std::size_t bytes, bool exported) {
    part_record mine;
    std::memset(&mine, 0, sizeof mine);
    mine.process = static_cast<std::uint64_t>(::getpid());
    mine.address = reinterpret_cast<std::uintptr_t>(own_);
    mine.bytes = bytes;
    if (bytes != 0 && exported) resource_->export_memory(own_, bytes, mine.exported);
    return mine;
  }

  void trade(const part_record& mine) { transport_.allgather(&mine, sizeof mine, records_.data()); }

  // Maps every other rank's part (records_ from trade()).
  void import_all() {
    const auto process = static_cast<std::uint64_t>(::getpid());
    for (std::size_t r = 0; r < records_.size(); ++r) {
      const part_record& rec = records_[r];
      if (static_cast<int>(r) == rank_ || rec.bytes == 0) continue;
      if (rec.process == process) {
        parts_[r] = reinterpret_cast<char*>(static_cast<std::uintptr_t>(rec.address));
        continue;
      }
      parts_[r] = static_cast<char*>(resource_->import_memory(rec.exported));
      imported_[r] = 1;
    }
  }

  // Unmaps the other processes' parts (each rank its own mappings).
  void close_imports() noexcept {
    for (std::size_t r = 0; r < imported_.size(); ++r) {
      if (imported_[r] == 0) continue;
      resource_->close_imported(parts_[r], records_[r].exported);
      imported_[r] = 0;
      parts_[r] = nullptr;
    }
  }

  // Collective: no rank uses the object any more. Every rank unmaps the
  // others' parts, and only once all have (a barrier), frees its own: the
  // driver leaves freeing exported memory that another process still maps
  // undefined.
  void release() override {
    close_imports();
    if (!transport_.shares_address_space()) transport_.barrier();  // on every rank alike
    if (copier_) copier_->finish_quietly();
    free_own();
  }

 private:
  void free_own() noexcept {
    if (own_ == nullptr) return;
    try {
      allocator_->deallocate(own_);
    } catch (...) {
      // The place allocator handed this block out; it cannot refuse it.
    }
    own_ = nullptr;
  }

  transport& transport_;
  int rank_;
  system_resource* resource_ = nullptr;  // of place_
  strategy* allocator_ = nullptr;
  char* own_ = nullptr;
  std::vector<part_record> records_;
  std::vector<char> imported_;  // by rank: parts_[r] was mapped with import_memory()
};

}  // namespace

bool device_parts(const communicator& comm, int location) {
  if (location != DAO_WHOLE_DEVICE) return false;
  for (int r = 0; r < comm.size(); ++r)
    if (raw_kind(comm.place(r).kind) == DAO_PLACE_CUDA) return true;
  return false;
}

std::unique_ptr<storage> make_device_storage(communicator& comm, int type, int location,
                                             const partition& layout) {
  const char* fn = "dao_whole_create";
  transport& t = comm.net();
  const int me = comm.rank();
  const dao_place place = part_place(comm, me, location);
  const std::size_t bytes = layout.byte_size(me);
  std::unique_ptr<device_storage> out;
  agree_on_outcome(t, fn, capture([&] {
                     out = std::make_unique<device_storage>(t, place, comm.size(), me);
                     out->allocate_own(bytes);
                   }));
  if (t.shares_address_space()) {
    out->share_pointers();
    if (type == DAO_WHOLE_CHUNKED)
      agree_on_outcome(t, fn, capture([&] { out->enable_peers(comm); }));
    return out;
  }
  // Which ranks are other processes: a part that only ranks of its own
  // process use (a transport over threads) is not exported.
  std::vector<std::uint64_t> processes;
  agree_on_outcome(t, fn,
                   capture([&] { processes.resize(static_cast<std::size_t>(comm.size())); }));
  const auto process = static_cast<std::uint64_t>(::getpid());
  t.allgather(&process, sizeof process, processes.data());
  bool other_process = false;
  for (std::uint64_t p : processes)
    if (p != process) other_process = true;
  part_record mine{};
  agree_on_outcome(t, fn, capture([&] { mine = out->describe(bytes, other_process); }));
  out->trade(mine);
  const outcome imported = capture([&] { out->import_all(); });
  const outcome agreed = capture([&] { agree_on_outcome(t, fn, imported); });
  if (!agreed.ok()) {
    // Every rank unmaps what it mapped before any rank frees its part.
    out->close_imports();
    t.barrier();
    throw error(agreed.status, agreed.message);
  }
  return out;
}

}  // namespace dao::detail::whole
