// Continuous memory on CUDA devices between the processes of one node: one
// range of addresses in every process, with every rank's granules at the
// same offsets in each. Every rank reserves the range in its own process
// (cuMemAddressReserve), maps the granules of its part from its own device
// as memory other processes can map (cuMemCreate with a POSIX file
// descriptor as shareable handle, cuMemExportToShareableHandle), and the
// ranks trade the descriptors' names with one allgather; each rank then
// maps every other rank's granules into its range (a copy of the
// descriptor taken with pidfd_getfd, cuMemImportFromShareableHandle,
// cuMemMap, cuMemSetAccess for its device). Entry i is at base + i *
// entry_size in every process, though base differs between processes.
// As in one process (continuous_storage.cpp), a granule belongs to the
// rank that owns its first byte.
//
// The memory lives as long as any process maps it: each rank unmaps
// everything in its range at destroy, in any order. The exporters close
// their descriptors once every rank has mapped (the agreement after the
// imports). The host cannot address the memory: copies go through the
// driver (copier()).
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

// A rank's granules: where in the range, and how other processes map them.
struct granules_record {
  std::uint64_t begin;  // offset in the range
  std::uint64_t bytes;  // 0: none
  exported_memory exported;
};

class device_range_storage final : public storage {
 public:
  device_range_storage(dao_place place, int ranks, int rank)
      : storage(place, ranks),
        rank_(rank),
        records_(static_cast<std::size_t>(ranks)),
        mapped_(static_cast<std::size_t>(ranks), 0) {}
  ~device_range_storage() override { undo(); }

  void prepare(std::size_t& granularity) {
    resource_ = &resource_for(place_);
    copier_ = std::make_unique<device_copier>(place_);
    granularity = resource_->map_granularity();
    if (granularity == 0) {
      throw unsupported(strprintf(
          "continuous memory: %s cannot map memory into a reserved range (the driver's virtual "
          "memory management); use chunked (DAO_WHOLE_CHUNKED)",
          place_to_string(place_).c_str()));
    }
  }

  void reserve(std::size_t bytes, const partition& layout) {
    range_ = static_cast<char*>(resource_->reserve_addresses(bytes));
    range_bytes_ = bytes;
    base_ = range_;
    for (int r = 0; r < layout.ranks(); ++r)
      parts_[static_cast<std::size_t>(r)] = base_ + layout.byte_offset(r);
  }

  // Maps this rank's granules, exportable; its record.
  granules_record map_own(std::size_t begin, std::size_t end) {
    granules_record mine{};
    mine.begin = begin;
    if (end > begin) {
      resource_->map_exportable(range_ + begin, end - begin, mine.exported);
      mine.bytes = end - begin;
      mapped_[static_cast<std::size_t>(rank_)] = 1;
      exporting_ = true;
    }
    own_ = mine;
    return mine;
  }

  void trade(transport& t, const granules_record& mine) {
    t.allgather(&mine, sizeof mine, records_.data());
  }

  // Maps every other rank's granules at their offsets.
  void map_others() {
    for (std::size_t r = 0; r < records_.size(); ++r) {
      const granules_record& rec = records_[r];
      if (static_cast<int>(r) == rank_ || rec.bytes == 0) continue;
      resource_->map_imported(range_ + rec.begin, rec.bytes, rec.exported);
      mapped_[r] = 1;
    }
  }

  // Every rank has mapped: the descriptors this rank kept open can go.
  void end_export() noexcept {
    if (!exporting_) return;
    resource_->end_export(own_.exported);
    exporting_ = false;
  }

  void release() override { undo(); }

 private:
  void undo() noexcept {
    if (copier_) copier_->finish_quietly();
    end_export();
    if (range_ == nullptr) return;
    for (std::size_t r = 0; r < mapped_.size(); ++r) {
      if (mapped_[r] == 0) continue;
      const granules_record& rec = static_cast<int>(r) == rank_ ? own_ : records_[r];
      resource_->unmap(range_ + rec.begin, rec.bytes);
      mapped_[r] = 0;
    }
    resource_->release_addresses(range_, range_bytes_);
    range_ = nullptr;
  }

  int rank_;
  system_resource* resource_ = nullptr;
  char* range_ = nullptr;
  std::size_t range_bytes_ = 0;
  granules_record own_{};
  bool exporting_ = false;
  std::vector<granules_record> records_;
  std::vector<char> mapped_;  // by rank: its granules are mapped in this range
};

std::size_t round_up(std::size_t x, std::size_t unit) { return (x + unit - 1) / unit * unit; }

}  // namespace

std::unique_ptr<storage> make_device_range_storage(communicator& comm, int location,
                                                   const partition& layout) {
  const char* fn = "dao_whole_create";
  transport& t = comm.net();
  const int me = comm.rank();
  const dao_place mine = part_place(comm, me, location);
  const std::size_t total = layout.entries() * layout.entry_size();
  std::unique_ptr<device_range_storage> out;
  std::vector<std::uint64_t> granularities;
  std::size_t granularity = 0;
  agree_on_outcome(t, fn, capture([&] {
                     out = std::make_unique<device_range_storage>(mine, comm.size(), me);
                     granularities.resize(static_cast<std::size_t>(comm.size()));
                     out->prepare(granularity);
                     if (total > SIZE_MAX - granularity + 1) {
                       throw invalid_argument(strprintf(
                           "dao_whole_create: desc->total_size %zu does not fit the address "
                           "space in whole granules of %zu bytes",
                           total, granularity));
                     }
                   }));
  const std::uint64_t g64 = granularity;
  t.allgather(&g64, sizeof g64, granularities.data());
  for (std::size_t r = 1; r < granularities.size(); ++r) {
    if (granularities[r] != granularities[0]) {
      throw unsupported(strprintf(
          "continuous memory: the ranks' devices map in different granules (%llu and %llu "
          "bytes); use chunked (DAO_WHOLE_CHUNKED)",
          static_cast<unsigned long long>(granularities[0]),
          static_cast<unsigned long long>(granularities[r])));
    }
  }
  agree_on_outcome(t, fn, capture([&] { out->reserve(round_up(total, granularity), layout); }));
  // Granule p belongs to the rank that owns byte p * granularity.
  granules_record own{};
  agree_on_outcome(t, fn, capture([&] {
                     const std::size_t begin = round_up(layout.byte_offset(me), granularity);
                     const std::size_t end =
                         round_up(layout.byte_offset(me) + layout.byte_size(me), granularity);
                     own = out->map_own(begin, layout.byte_size(me) != 0 ? end : begin);
                   }));
  out->trade(t, own);
  agree_on_outcome(t, fn, capture([&] { out->map_others(); }));
  out->end_export();
  return out;
}

}  // namespace dao::detail::whole
