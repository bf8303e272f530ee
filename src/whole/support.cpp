// The types x locations table of whole memory (see docs/whole.md).
#include "whole/support.hpp"

#include "core/error.hpp"
#include "dao/whole.h"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail::whole {
namespace {

// Capabilities by kind, so that every rank decides alike without asking
// another process's devices.
bool host_accessible_kind(int kind) noexcept {
  return kind == DAO_PLACE_CPU || kind == DAO_PLACE_SIM || kind == DAO_PLACE_CUDA_PINNED ||
         kind == DAO_PLACE_CUDA_MANAGED;
}

// Places whose memory can be mapped page by page into one reserved range.
bool mappable_kind(int kind) noexcept { return kind == DAO_PLACE_CPU || kind == DAO_PLACE_SIM; }

// Parts on CUDA devices, every type, in one process or between the
// processes of one node: chunked and distributed (device_storage.cpp, CUDA
// IPC between processes), continuous (the driver's virtual memory
// management: continuous_storage.cpp in one process,
// device_range_storage.cpp between processes). In one process, chunked and
// continuous memory need peer access between every two of the devices.
// Throws unsupported saying why and what would work; nothing when no rank's
// place is a CUDA device.
void check_cuda_devices(const communicator& comm, int type) {
  int cuda = -1, other = -1;
  for (int r = 0; r < comm.size(); ++r) {
    if (raw_kind(comm.place(r).kind) == DAO_PLACE_CUDA) {
      if (cuda < 0) cuda = r;
    } else if (other < 0) {
      other = r;
    }
  }
  if (cuda < 0) return;
  const transport& t = comm.net();
  if (other >= 0) {
    throw unsupported(strprintf(
        "%s device memory: rank %d's place is %s and rank %d's is %s; parts on CUDA devices need "
        "every rank on a CUDA device (the host cannot address device memory); use location host "
        "(DAO_WHOLE_HOST)",
        type_name(type), cuda, place_to_string(comm.place(cuda)).c_str(), other,
        place_to_string(comm.place(other)).c_str()));
  }
  // In one process every rank's device is asked here; between processes
  // each rank's own driver answers at create (every rank fails alike).
  if (type == DAO_WHOLE_CONTINUOUS && t.shares_address_space()) {
    for (int r = 0; r < comm.size(); ++r) {
      if (resource_for(comm.place(r)).map_granularity() != 0) continue;
      throw unsupported(strprintf(
          "continuous device memory on CUDA devices maps every rank's part into one range of "
          "addresses with the driver's virtual memory management, which rank %d's %s does not "
          "offer (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, or a driver older "
          "than CUDA 10.2); use chunked (DAO_WHOLE_CHUNKED)",
          r, place_to_string(comm.place(r)).c_str()));
    }
  }
  if (!t.shares_address_space()) {
    if (!t.shares_host_memory()) {
      throw unsupported(strprintf(
          "%s device memory between processes maps each part into every process (CUDA IPC, or "
          "the driver's shareable handles for continuous memory), which needs every rank on one "
          "node, and these %d ranks are on more than one node (%s); across nodes it would need a "
          "CUDA-aware MPI, which libdao does not use; use location host (DAO_WHOLE_HOST)",
          type_name(type), comm.size(), t.name()));
    }
    return;  // the driver's IPC answers at create, on every rank alike
  }
  if (type == DAO_WHOLE_DISTRIBUTED) return;
  for (int r = 0; r < comm.size(); ++r) {
    system_resource& from = resource_for(comm.place(r));
    for (int q = 0; q < comm.size(); ++q) {
      std::string why;
      if (q == r || from.can_access_peer(resource_for(comm.place(q)), why)) continue;
      throw unsupported(strprintf(
          "%s device memory: rank %d (%s) could not address rank %d's part (%s): %s; use "
          "distributed (DAO_WHOLE_DISTRIBUTED), whose gather and scatter copy through the driver "
          "without peer access, or location host (DAO_WHOLE_HOST)",
          type_name(type), r, place_to_string(comm.place(r)).c_str(), q,
          place_to_string(comm.place(q)).c_str(), why.c_str()));
    }
  }
}

}  // namespace

const char* type_name(int type) noexcept {
  switch (type) {
    case DAO_WHOLE_CONTINUOUS: return "continuous";
    case DAO_WHOLE_CHUNKED: return "chunked";
    case DAO_WHOLE_DISTRIBUTED: return "distributed";
    default: return "unknown";
  }
}

const char* location_name(int location) noexcept {
  switch (location) {
    case DAO_WHOLE_DEVICE: return "device";
    case DAO_WHOLE_HOST: return "host";
    default: return "unknown";
  }
}

dao_place part_place(const communicator& comm, int rank, int location) {
  if (location == DAO_WHOLE_HOST) return dao_place{DAO_PLACE_CPU, 0};
  return comm.place(rank);
}

void check_support(const communicator& comm, int type, int location) {
  if (type < DAO_WHOLE_CONTINUOUS || type > DAO_WHOLE_DISTRIBUTED) {
    throw invalid_argument(strprintf(
        "type %d is not a dao_whole_type (0 continuous, 1 chunked, 2 distributed)", type));
  }
  if (location != DAO_WHOLE_DEVICE && location != DAO_WHOLE_HOST) {
    throw invalid_argument(
        strprintf("location %d is not a dao_whole_location (0 device, 1 host)", location));
  }
  const transport& t = comm.net();
  const bool mapped = type != DAO_WHOLE_DISTRIBUTED;
  if (location == DAO_WHOLE_DEVICE) check_cuda_devices(comm, type);
  for (int r = 0; r < comm.size(); ++r) {
    const dao_place p = part_place(comm, r, location);
    const int kind = raw_kind(p.kind);
    // Only a refusal names the place: the check allocates nothing when it
    // passes, so every rank passes or fails it alike.
    auto where = [&] { return place_to_string(p); };
    if (kind == DAO_PLACE_CUDA) continue;  // check_cuda_devices() said yes
    if (!host_accessible_kind(kind)) {
      throw unsupported(strprintf(
          "%s %s memory: rank %d's part would be on %s, device memory that this version of "
          "libdao cannot map between ranks (CUDA IPC or the driver's virtual memory management) "
          "nor copy with one-sided communication; use location host (DAO_WHOLE_HOST)",
          type_name(type), location_name(location), r, where().c_str()));
    }
    if (t.shares_address_space()) {
      if (type == DAO_WHOLE_CONTINUOUS && !mappable_kind(kind)) {
        throw unsupported(strprintf(
            "continuous %s memory needs one range of addresses backed page by page by every "
            "rank's place, and rank %d's place %s cannot be mapped so; use chunked "
            "(DAO_WHOLE_CHUNKED) or distributed (DAO_WHOLE_DISTRIBUTED), or location host",
            location_name(location), r, where().c_str()));
      }
      continue;
    }
    if (!mapped) continue;
    // A SIM device's part lives in the shared host memory and is charged to
    // the device (shared_storage.cpp): SIM stands in for GPUs, so a layout
    // works on it wherever it works on the host.
    if (kind != DAO_PLACE_CPU && kind != DAO_PLACE_SIM) {
      throw unsupported(strprintf(
          "%s %s memory over %s ranks in several processes is host memory shared through the "
          "transport, and rank %d's part would be on %s, which another process cannot map; use "
          "location host (DAO_WHOLE_HOST), or type distributed (DAO_WHOLE_DISTRIBUTED)",
          type_name(type), location_name(location), t.name(), r, where().c_str()));
    }
    if (!t.shares_host_memory()) {
      throw unsupported(
          strprintf("%s memory between processes needs every rank on one node (%s shared-memory "
                    "windows), and these %d ranks are on more than one node; use type distributed "
                    "(DAO_WHOLE_DISTRIBUTED)",
                    type_name(type), t.name(), comm.size()));
    }
  }
}

}  // namespace dao::detail::whole
