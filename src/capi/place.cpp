// dao_place_*: place constructors, device counts, memory info, descriptions.
#include <mutex>
#include <string>

#include "capi/guard.hpp"
#include "dao/place.h"
#include "resource/system_resource.hpp"

using namespace dao::detail;

extern "C" dao_place dao_place_cpu(void) { return dao_place{DAO_PLACE_CPU, 0}; }
extern "C" dao_place dao_place_cuda(int device) { return dao_place{DAO_PLACE_CUDA, device}; }
extern "C" dao_place dao_place_cuda_pinned(void) { return dao_place{DAO_PLACE_CUDA_PINNED, 0}; }
extern "C" dao_place dao_place_cuda_managed(int device) {
  return dao_place{DAO_PLACE_CUDA_MANAGED, device};
}
extern "C" dao_place dao_place_sim(int device) { return dao_place{DAO_PLACE_SIM, device}; }

extern "C" dao_status dao_place_device_count(dao_place_kind kind, int* count) {
  return guarded([&] {
    require_non_null(count, "dao_place_device_count", "count");
    *count = backend_for(kind).device_count();
  });
}

extern "C" dao_status dao_place_memory_info(dao_place place, size_t* free_bytes,
                                            size_t* total_bytes) {
  return guarded([&] {
    memory_info info = resource_for(place).info();
    if (free_bytes != nullptr) *free_bytes = info.free_bytes;
    if (total_bytes != nullptr) *total_bytes = info.total_bytes;
  });
}

extern "C" const char* dao_place_kind_name(dao_place_kind kind) {
  switch (kind) {
    case DAO_PLACE_CPU: return "cpu";
    case DAO_PLACE_CUDA: return "cuda";
    case DAO_PLACE_CUDA_PINNED: return "cuda_pinned";
    case DAO_PLACE_CUDA_MANAGED: return "cuda_managed";
    case DAO_PLACE_SIM: return "sim";
  }
  return "unknown";
}

extern "C" const char* dao_place_backend_description(dao_place_kind kind) {
  if (static_cast<int>(kind) < 0 || static_cast<int>(kind) >= DAO_PLACE_KIND_COUNT)
    return "unknown place kind";
  // Computed once per kind and kept: the caller may hold the pointer forever.
  static std::once_flag once[DAO_PLACE_KIND_COUNT];
  static std::string* text[DAO_PLACE_KIND_COUNT];
  std::call_once(once[kind], [kind] {
    try {
      text[kind] = new std::string(backend_for(kind).description());
    } catch (const std::exception& e) {
      text[kind] = new std::string(e.what());
    }
  });
  return text[kind]->c_str();
}
