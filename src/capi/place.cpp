// dao_place_*: place constructors, device counts, memory info, descriptions.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
    *count = backend_for(raw_kind(kind)).device_count();
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
  return kind_name(raw_kind(kind));
}

extern "C" const char* dao_place_backend_description(dao_place_kind kind_arg) {
  const int kind = raw_kind(kind_arg);
  if (kind < 0 || kind >= DAO_PLACE_KIND_COUNT) return "unknown place kind";
  std::string text;
  try {
    try {
      text = backend_for(kind).description();
    } catch (const error& e) {
      text = e.what();  // e.g. a malformed DAO_SIM_DEVICES: say so
    }
  } catch (...) {
    return "description unavailable: internal error";
  }
  // Callers may keep the pointer forever, and a description can change once
  // (SIM before and after configuration): keep every distinct text, leaked
  // on purpose so that it outlives static destructors.
  static std::mutex mutex;
  static auto* kept = new std::vector<std::unique_ptr<std::string>>[DAO_PLACE_KIND_COUNT];
  std::lock_guard<std::mutex> lock(mutex);
  auto& versions = kept[kind];
  try {
    if (versions.empty() || *versions.back() != text)
      versions.push_back(std::make_unique<std::string>(std::move(text)));
  } catch (...) {
    if (versions.empty()) return "description unavailable: out of host memory";
  }
  return versions.back()->c_str();
}
