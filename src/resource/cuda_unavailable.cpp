// CUDA backends of a build without CUDA: no devices, and a message that says
// why. Built instead of cuda.cpp when DAO_WITH_CUDA is OFF.
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

class cuda_unavailable final : public backend {
 public:
  explicit cuda_unavailable(const char* kind) : kind_(kind) {}
  int device_count() override { return 0; }
  std::string description() override {
    return "not available: libdao was built without CUDA support (DAO_WITH_CUDA=OFF)";
  }
  system_resource& resource(int device) override {
    throw no_device(strprintf("%s device %d is not available: libdao was built without CUDA "
                              "support (DAO_WITH_CUDA=OFF)",
                              kind_, device));
  }

 private:
  const char* kind_;
};

}  // namespace

backend& cuda_device_backend() {
  static cuda_unavailable* b = new cuda_unavailable("cuda");
  return *b;
}
backend& cuda_pinned_backend() {
  static cuda_unavailable* b = new cuda_unavailable("cuda_pinned");
  return *b;
}
backend& cuda_managed_backend() {
  static cuda_unavailable* b = new cuda_unavailable("cuda_managed");
  return *b;
}

}  // namespace dao::detail
