// In-process continuous memory: rank 0 reserves one range of addresses for
// the whole object; each rank backs the pages of its part with memory of
// its own place (the virtual memory of the place's system resource, so a
// SIM device's capacity is charged exactly as a GPU's would be). A page is
// backed by the rank that owns its first byte: when a part does not end on
// a page boundary, its last page also holds the first bytes of the next
// rank's part.
//
// On CUDA devices the range is reserved and mapped with the driver's
// virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap on
// each rank's own device, in granules of the driver's granularity); each
// rank then lets every other rank's device read and write its pages
// (cuMemSetAccess, over peer access, which check_support() asked for), and
// gather, scatter, store and load copy with the driver (copier()).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"
#include "whole/collective.hpp"
#include "whole/storage.hpp"
#include "whole/support.hpp"

namespace dao::detail::whole {
namespace {

struct mapping {
  system_resource* resource = nullptr;
  char* addr = nullptr;
  std::size_t bytes = 0;
};

// The reserved range and what each rank mapped into it; shared by the
// ranks' storages, undone by the last of them to go.
class reserved_range : public std::enable_shared_from_this<reserved_range> {
 public:
  reserved_range(system_resource& reserver, std::size_t bytes, int ranks)
      : reserver_(reserver), bytes_(bytes), maps_(static_cast<std::size_t>(ranks)) {
    base_ = static_cast<char*>(reserver_.reserve_addresses(bytes_));
  }
  ~reserved_range() {
    for (const mapping& m : maps_)
      if (m.bytes != 0) m.resource->unmap(m.addr, m.bytes);
    reserver_.release_addresses(base_, bytes_);
  }
  reserved_range(const reserved_range&) = delete;
  reserved_range& operator=(const reserved_range&) = delete;

  char* base() const noexcept { return base_; }

  // Gives rank `rank`'s pages back to its place (at destroy, when no rank
  // uses the object any more), so that its memory is free when the rank's
  // destroy returns, whoever drops the range last.
  void unmap(int rank) noexcept {
    mapping& m = maps_[static_cast<std::size_t>(rank)];
    if (m.bytes != 0) m.resource->unmap(m.addr, m.bytes);
    m = mapping{};
  }

  // Each rank records only its own mapping, before the outcome agreement
  // that follows, so the last owner sees every rank's entry.
  void map(int rank, system_resource& resource, std::size_t offset, std::size_t bytes) {
    resource.map(base_ + offset, bytes);
    maps_[static_cast<std::size_t>(rank)] = mapping{&resource, base_ + offset, bytes};
  }

 private:
  system_resource& reserver_;
  std::size_t bytes_;
  char* base_ = nullptr;
  std::vector<mapping> maps_;
};

class continuous_storage final : public storage {
 public:
  continuous_storage(dao_place place, int ranks, int rank) : storage(place, ranks), rank_(rank) {}

  // The host cannot address the place's memory: copies go through the
  // driver.
  void use_copier() { copier_ = std::make_unique<device_copier>(place_); }

  void attach(std::shared_ptr<reserved_range> range, const partition& layout) {
    range_ = std::move(range);
    base_ = range_->base();
    for (int r = 0; r < layout.ranks(); ++r)
      parts_[static_cast<std::size_t>(r)] = base_ + layout.byte_offset(r);
  }

  // Every rank has stopped using the object (the destroy call waited for
  // all): this rank's pages go now, the range with the last rank.
  void release() override {
    if (!range_) return;
    range_->unmap(rank_);
    range_.reset();
  }

 private:
  int rank_;
  std::shared_ptr<reserved_range> range_;
};

std::size_t round_up(std::size_t x, std::size_t unit) { return (x + unit - 1) / unit * unit; }

}  // namespace

std::unique_ptr<storage> make_continuous_storage(communicator& comm, int location,
                                                 const partition& layout) {
  transport& t = comm.net();
  const int me = comm.rank();
  const dao_place mine = part_place(comm, me, location);
  std::unique_ptr<continuous_storage> out;
  const std::size_t total = layout.entries() * layout.entry_size();
  // This rank's bookkeeping is made in the steps whose outcome the ranks
  // agree on, never between two collective steps.
  std::vector<std::uint64_t> granularities;
  std::vector<reserved_range*> all;

  // Every place must map in pages of the same size (host pages for CPU and
  // SIM). Each rank checks its own; the outcome is agreed below.
  std::size_t granularity = 0;
  system_resource* resource = nullptr;
  outcome checked = capture([&] {
    out = std::make_unique<continuous_storage>(mine, comm.size(), me);
    granularities.resize(static_cast<std::size_t>(comm.size()));
    all.resize(static_cast<std::size_t>(comm.size()));
    resource = &resource_for(mine);
    if (!resource->host_accessible()) out->use_copier();
    granularity = resource->map_granularity();
    if (granularity == 0) {
      throw unsupported(
          strprintf("continuous memory: %s cannot map memory into a reserved range; use chunked "
                    "(DAO_WHOLE_CHUNKED)",
                    place_to_string(mine).c_str()));
    }
    // Whole pages of the object must fit the address space: rounded up, a
    // size this close to SIZE_MAX would wrap to zero pages (issue 20).
    if (total > SIZE_MAX - granularity + 1) {
      throw invalid_argument(strprintf(
          "dao_whole_create: desc->total_size %zu does not fit the address space in whole pages "
          "of %zu bytes",
          total, granularity));
    }
  });
  agree_on_outcome(t, "dao_whole_create", checked);
  const std::uint64_t g64 = granularity;
  t.allgather(&g64, sizeof g64, granularities.data());
  for (std::size_t r = 1; r < granularities.size(); ++r) {
    if (granularities[r] != granularities[0]) {
      throw unsupported(strprintf(
          "continuous memory: the ranks' places map in different page sizes (%llu and %llu "
          "bytes); use chunked (DAO_WHOLE_CHUNKED)",
          static_cast<unsigned long long>(granularities[0]),
          static_cast<unsigned long long>(granularities[r])));
    }
  }

  // Rank 0 reserves the range and hands it to the others.
  std::shared_ptr<reserved_range> range;
  const outcome reserved = capture([&] {
    if (me == 0) {
      range =
          std::make_shared<reserved_range>(*resource, round_up(total, granularity), comm.size());
    }
  });
  agree_on_outcome(t, "dao_whole_create", reserved);
  reserved_range* shared = range.get();
  t.allgather(&shared, sizeof shared, all.data());
  // Rank 0 keeps its reference at least until the agreement below, which
  // every rank reaches only after taking its own.
  if (me != 0) range = all[0]->shared_from_this();

  // Page p is backed by the rank that owns byte p * granularity.
  const outcome mapped = capture([&] {
    const std::size_t begin = round_up(layout.byte_offset(me), granularity);
    const std::size_t end = round_up(layout.byte_offset(me) + layout.byte_size(me), granularity);
    if (layout.byte_size(me) == 0 || end <= begin) return;
    range->map(me, *resource, begin, end - begin);
    // Every other rank's device reaches these pages too (nothing to do for
    // host memory, which every rank's thread reaches).
    if (resource->host_accessible()) return;
    for (int r = 0; r < comm.size(); ++r) {
      if (r != me)
        resource->grant_access(range->base() + begin, end - begin,
                               resource_for(part_place(comm, r, location)));
    }
  });
  agree_on_outcome(t, "dao_whole_create", mapped);
  out->attach(std::move(range), layout);
  return out;
}

}  // namespace dao::detail::whole
