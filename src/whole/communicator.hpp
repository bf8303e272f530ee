// A communicator: one rank's view of a group of ranks, each with a place,
// over a transport (in-process or handed in by libdao-mpi).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dao/place.h"
#include "whole/collective.hpp"
#include "whole/transport.hpp"

namespace dao::detail::whole {

class communicator {
 public:
  communicator(std::unique_ptr<transport> t, std::vector<dao_place> places)
      : transport_(std::move(t)), places_(std::move(places)) {}

  transport& net() const noexcept { return *transport_; }
  int rank() const noexcept { return transport_->rank(); }
  int size() const noexcept { return transport_->size(); }
  dao_place place(int rank) const { return places_.at(static_cast<std::size_t>(rank)); }
  const std::vector<dao_place>& places() const noexcept { return places_; }

  // Objects are numbered in the order this rank created them; as every
  // rank creates them in the same order, the numbers agree across ranks.
  std::uint64_t objects_created() const noexcept { return objects_created_; }
  std::uint64_t number_new_object() noexcept { return ++objects_created_; }

  // Live whole memory objects of this rank's handle.
  std::atomic<int> live_objects{0};

 private:
  std::unique_ptr<transport> transport_;
  std::vector<dao_place> places_;
  std::uint64_t objects_created_ = 0;
};

// The communicators of a new in-process group, rank i on places[i]. Checks
// every place (invalid_argument, no_device).
std::vector<std::unique_ptr<communicator>> make_local_communicators(
    const std::vector<dao_place>& places);

// Collective over `t`: checks this rank's place and exchanges every rank's
// place; every rank fails alike when one rank's place is bad or its `pre`
// (the C API's own checks) failed.
std::unique_ptr<communicator> make_communicator(std::unique_ptr<transport> t, dao_place place,
                                                const char* function, const outcome& pre);

}  // namespace dao::detail::whole
