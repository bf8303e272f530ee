// Maps a place to its backend and system resource, validating it on the way.
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

backend& backend_for(dao_place_kind kind) {
  switch (kind) {
    case DAO_PLACE_CPU: return host_backend();
    case DAO_PLACE_CUDA: return cuda_device_backend();
    case DAO_PLACE_CUDA_PINNED: return cuda_pinned_backend();
    case DAO_PLACE_CUDA_MANAGED: return cuda_managed_backend();
    case DAO_PLACE_SIM: return sim_backend();
  }
  throw invalid_argument(strprintf("unknown place kind %d (valid kinds are 0..%d)",
                                   static_cast<int>(kind), DAO_PLACE_KIND_COUNT - 1));
}

system_resource& resource_for(dao_place place) {
  backend& b = backend_for(place.kind);
  if (place.device < 0) {
    throw invalid_argument(strprintf("%s: device index %d is negative",
                                     dao_place_kind_name(place.kind), place.device));
  }
  return b.resource(place.device);
}

std::string place_to_string(dao_place place) {
  if (place.kind == DAO_PLACE_CPU || place.kind == DAO_PLACE_CUDA_PINNED)
    return place.device == 0 ? dao_place_kind_name(place.kind)
                             : strprintf("%s:%d", dao_place_kind_name(place.kind), place.device);
  return strprintf("%s:%d", dao_place_kind_name(place.kind), place.device);
}

}  // namespace dao::detail
