// Maps a place to its backend and system resource, validating it on the way.
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

const char* kind_name(int kind) noexcept {
  switch (kind) {
    case DAO_PLACE_CPU: return "cpu";
    case DAO_PLACE_CUDA: return "cuda";
    case DAO_PLACE_CUDA_PINNED: return "cuda_pinned";
    case DAO_PLACE_CUDA_MANAGED: return "cuda_managed";
    case DAO_PLACE_SIM: return "sim";
    default: return "unknown";
  }
}

backend& backend_for(int kind) {
  switch (kind) {
    case DAO_PLACE_CPU: return host_backend();
    case DAO_PLACE_CUDA: return cuda_device_backend();
    case DAO_PLACE_CUDA_PINNED: return cuda_pinned_backend();
    case DAO_PLACE_CUDA_MANAGED: return cuda_managed_backend();
    case DAO_PLACE_SIM: return sim_backend();
  }
  throw invalid_argument(
      strprintf("unknown place kind %d (valid kinds are 0..%d)", kind, DAO_PLACE_KIND_COUNT - 1));
}

system_resource& resource_for(dao_place place) {
  backend& b = backend_for(raw_kind(place.kind));
  if (place.device < 0) {
    throw invalid_argument(strprintf("%s: device index %d is negative",
                                     kind_name(raw_kind(place.kind)), place.device));
  }
  return b.resource(place.device);
}

std::string place_to_string(dao_place place) {
  const int kind = raw_kind(place.kind);
  if ((kind == DAO_PLACE_CPU || kind == DAO_PLACE_CUDA_PINNED) && place.device == 0)
    return kind_name(kind);
  return strprintf("%s:%d", kind_name(kind), place.device);
}

}  // namespace dao::detail
