// The memory of one whole memory object as one rank sees it: which parts it
// can address, and the window through which it reaches the others.
//
// Three kinds, chosen by make_storage():
// - in-process continuous (continuous_storage.cpp): one reserved range of
//   addresses; each rank maps the pages of its part from its own place.
// - own parts (parts_storage.cpp): each rank allocates its part from its
//   place's default allocator; in-process chunked memory shares the
//   pointers, distributed memory exposes the parts in a transport window.
// - shared segments (shared_storage.cpp): mapped memory between processes,
//   host memory the transport shares (MPI shared-memory windows).
// - device parts (device_storage.cpp): chunked and distributed memory on
//   CUDA devices, each rank's part from its device; in one process every
//   rank holds every part's address (peer access), between processes of a
//   node the parts are mapped with CUDA IPC. The host cannot address them:
//   copies go through copier().
// - a device range between processes (device_range_storage.cpp):
//   continuous memory on CUDA devices over processes of one node, every
//   rank's granules exported as file descriptors and mapped into one range
//   in every process.
#pragma once

#include <memory>
#include <vector>

#include "whole/communicator.hpp"
#include "whole/device_copy.hpp"
#include "whole/partition.hpp"
#include "whole/transport.hpp"

namespace dao::detail::whole {

class storage {
 public:
  virtual ~storage() = default;
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;

  // Collective, once: frees this rank's share of the memory, after every
  // rank has stopped using the object. (Destroying a storage without it
  // frees what this rank can free alone.)
  virtual void release() = 0;

  // Address of rank r's first byte in this process, or nullptr when the
  // part is not mapped here (distributed, another rank) or empty (chunked,
  // distributed).
  char* part(int rank) const noexcept { return parts_[static_cast<std::size_t>(rank)]; }
  // Entry 0 of a continuous object, else nullptr.
  char* base() const noexcept { return base_; }
  // The window of a distributed object, else nullptr.
  window* win() const noexcept { return window_.get(); }
  // Where this rank's part lives, for messages and dao_whole_get_info().
  dao_place place() const noexcept { return place_; }
  // The driver copies to use instead of memcpy when the host cannot
  // address the parts (device memory), else nullptr.
  device_copier* copier() const noexcept { return copier_.get(); }

 protected:
  explicit storage(dao_place place, int ranks)
      : parts_(static_cast<std::size_t>(ranks), nullptr), place_(place) {}

  std::vector<char*> parts_;
  char* base_ = nullptr;
  std::unique_ptr<window> window_;
  std::unique_ptr<device_copier> copier_;
  dao_place place_;
};

// Collective: builds the memory of a new object, after the ranks agreed on
// the arguments and check_support() passed. Throws alike on every rank.
std::unique_ptr<storage> make_storage(communicator& comm, int type, int location,
                                      const partition& layout);

// The kinds (one file each).
std::unique_ptr<storage> make_continuous_storage(communicator& comm, int location,
                                                 const partition& layout);
std::unique_ptr<storage> make_parts_storage(communicator& comm, int type, int location,
                                            const partition& layout);
std::unique_ptr<storage> make_shared_storage(communicator& comm, int type, int location,
                                             const partition& layout);
std::unique_ptr<storage> make_device_storage(communicator& comm, int type, int location,
                                             const partition& layout);
std::unique_ptr<storage> make_device_range_storage(communicator& comm, int location,
                                                   const partition& layout);
// Whether rank r's part of an object on `location` is device memory that
// the host cannot address (a CUDA device), on any rank.
bool device_parts(const communicator& comm, int location);

}  // namespace dao::detail::whole
