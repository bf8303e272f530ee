// The defaults of system_resource's sharing of device memory (see
// system_resource.hpp): a place shares nothing but with itself. Host
// memory needs none of it (every rank of a process addresses it, and
// between processes the transport shares it); the CUDA device resource
// overrides them with peer access and CUDA IPC (resource/cuda.cpp).
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

bool system_resource::can_access_peer(system_resource& other, std::string& why) {
  if (&other == this) return true;
  why = strprintf("%s cannot address memory of %s directly", place_to_string(place()).c_str(),
                  place_to_string(other.place()).c_str());
  return false;
}

void system_resource::enable_peer_access(system_resource& other) {
  std::string why;
  if (!can_access_peer(other, why)) throw unsupported(why);
}

void system_resource::grant_access(void*, std::size_t, system_resource& other) {
  if (&other == this) return;
  throw unsupported(strprintf("%s: memory of this place cannot be mapped for %s",
                              place_to_string(place()).c_str(),
                              place_to_string(other.place()).c_str()));
}

void system_resource::map_exportable(void*, std::size_t, exported_memory&) {
  throw unsupported(strprintf("%s: memory of this place cannot be mapped by another process",
                              place_to_string(place()).c_str()));
}

void system_resource::map_imported(void*, std::size_t, const exported_memory&) {
  throw unsupported(strprintf("%s: memory of another process cannot be mapped here",
                              place_to_string(place()).c_str()));
}

void system_resource::end_export(exported_memory&) noexcept {}

void system_resource::export_memory(void*, std::size_t, exported_memory&) {
  throw unsupported(strprintf("%s: memory of this place cannot be exported to another process",
                              place_to_string(place()).c_str()));
}

void* system_resource::import_memory(const exported_memory&) {
  throw unsupported(strprintf("%s: memory of another process cannot be imported here",
                              place_to_string(place()).c_str()));
}

void system_resource::close_imported(void*, const exported_memory&) noexcept {}

}  // namespace dao::detail
