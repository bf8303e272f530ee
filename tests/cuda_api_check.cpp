// Compile-time check of libdao's private CUDA driver API declarations
// (src/resource/cuda_api.h) against a CUDA toolkit's cuda.h, built only where
// a toolkit is found (tests/cuda.cmake): every constant has the toolkit's
// value, every type its size, every struct field its offset. Prototypes are
// checked by compiling the fake driver against both headers. The program
// itself prints the CUDA_VERSION checked against, so the log says which.
#include <cuda.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

namespace ours {
#define DAO_CUDA_API_NO_INCLUDES
#define DAO_CUDA_API_NO_PROTOTYPES
#include "resource/cuda_api.h"
}  // namespace ours

#define SAME_VALUE(name) \
  static_assert(static_cast<long long>(ours::name) == static_cast<long long>(::name), #name)
#define SAME_SIZE(type)                                                                         \
  static_assert(sizeof(ours::type) == sizeof(::type) && alignof(ours::type) == alignof(::type), \
                "size or alignment of " #type)
#define SAME_OFFSET(type, field) \
  static_assert(offsetof(ours::type, field) == offsetof(::type, field), #type "." #field)

SAME_VALUE(CUDA_SUCCESS);
SAME_VALUE(CUDA_ERROR_INVALID_VALUE);
SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY);
SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED);
SAME_VALUE(CUDA_ERROR_NO_DEVICE);
SAME_VALUE(CUDA_ERROR_INVALID_DEVICE);
SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT);
SAME_VALUE(CUDA_ERROR_INVALID_HANDLE);
SAME_VALUE(CUDA_ERROR_NOT_READY);
SAME_VALUE(CUDA_ERROR_ILLEGAL_ADDRESS);
SAME_VALUE(CUDA_ERROR_MAP_FAILED);
SAME_VALUE(CUDA_ERROR_NOT_FOUND);
SAME_VALUE(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
SAME_VALUE(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED);
SAME_VALUE(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
SAME_VALUE(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
SAME_VALUE(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
SAME_VALUE(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
SAME_VALUE(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
SAME_VALUE(CU_STREAM_DEFAULT);
SAME_VALUE(CU_STREAM_NON_BLOCKING);
SAME_VALUE(CU_EVENT_DEFAULT);
SAME_VALUE(CU_EVENT_BLOCKING_SYNC);
SAME_VALUE(CU_EVENT_DISABLE_TIMING);
SAME_VALUE(CU_EVENT_INTERPROCESS);
SAME_VALUE(CU_MEM_ATTACH_GLOBAL);
SAME_VALUE(CU_MEM_ATTACH_HOST);
SAME_VALUE(CU_MEM_ATTACH_SINGLE);
SAME_VALUE(CU_MEM_HANDLE_TYPE_NONE);
SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_NONE);
SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READ);
SAME_VALUE(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
SAME_VALUE(CU_MEM_LOCATION_TYPE_INVALID);
SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE);
SAME_VALUE(CU_MEM_ALLOCATION_TYPE_INVALID);
SAME_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED);
SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_MINIMUM);
SAME_VALUE(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
// Macros in both headers: a different definition would already be an error
// (a macro redefined with other tokens), these make the intent plain.
static_assert(CU_MEMHOSTALLOC_PORTABLE == 0x01 && CU_MEMHOSTALLOC_DEVICEMAP == 0x02 &&
                  CU_MEMHOSTALLOC_WRITECOMBINED == 0x04,
              "cuMemHostAlloc flags");
static_assert(CU_IPC_HANDLE_SIZE == 64, "CU_IPC_HANDLE_SIZE");

SAME_SIZE(CUresult);
SAME_SIZE(CUdevice);
SAME_SIZE(CUdeviceptr);
SAME_SIZE(CUcontext);
SAME_SIZE(CUstream);
SAME_SIZE(CUevent);
SAME_SIZE(CUhostFn);
SAME_SIZE(CUmemGenericAllocationHandle);
SAME_SIZE(CUdevice_attribute);
SAME_SIZE(CUmemAllocationGranularity_flags);
SAME_SIZE(CUmemLocation);
SAME_SIZE(CUmemAllocationProp);
SAME_SIZE(CUmemAccessDesc);
SAME_SIZE(CUipcMemHandle);
SAME_SIZE(CUipcMem_flags);
static_assert(std::is_signed<ours::CUdevice>::value == std::is_signed<::CUdevice>::value,
              "CUdevice signedness");
static_assert(std::is_same<ours::CUdeviceptr, ::CUdeviceptr>::value, "CUdeviceptr");
static_assert(
    std::is_same<ours::CUmemGenericAllocationHandle, ::CUmemGenericAllocationHandle>::value,
    "CUmemGenericAllocationHandle");
SAME_OFFSET(CUmemLocation, type);
SAME_OFFSET(CUmemLocation, id);
SAME_OFFSET(CUmemAllocationProp, type);
SAME_OFFSET(CUmemAllocationProp, requestedHandleTypes);
SAME_OFFSET(CUmemAllocationProp, location);
SAME_OFFSET(CUmemAllocationProp, win32HandleMetaData);
SAME_OFFSET(CUmemAllocationProp, allocFlags);
SAME_OFFSET(CUmemAccessDesc, location);
SAME_OFFSET(CUmemAccessDesc, flags);
SAME_OFFSET(CUipcMemHandle, reserved);

int main() {
  std::printf("src/resource/cuda_api.h agrees with cuda.h of CUDA_VERSION %d\n", CUDA_VERSION);
  return 0;
}
