/**
 * @file place.h
 * @brief Places: where memory lives (CPU, CUDA device, CUDA pinned host,
 *        CUDA managed, simulated device), and what this machine has of each.
 */
#ifndef DAO_PLACE_H
#define DAO_PLACE_H

#include <stddef.h>

#include "export.h"
#include "status.h"

/**
 * @brief Kinds of place. The values are part of the ABI.
 */
typedef enum dao_place_kind {
  /** Host memory from the operating system. One place, device 0. */
  DAO_PLACE_CPU = 0,
  /** Memory of CUDA device n, through the CUDA driver API. The driver
   *  library (`libcuda.so.1`, or the path in `DAO_CUDA_LIBRARY`) is loaded at
   *  run time; without it there are no CUDA devices. */
  DAO_PLACE_CUDA = 1,
  /** Page-locked host memory registered with the CUDA driver. Device 0. */
  DAO_PLACE_CUDA_PINNED = 2,
  /** CUDA managed (unified) memory, associated with device n. */
  DAO_PLACE_CUDA_MANAGED = 3,
  /** A simulated device: host memory with a hard capacity, see sim.h. */
  DAO_PLACE_SIM = 4
} dao_place_kind;

/** Number of place kinds of this version (one past the largest kind). */
#define DAO_PLACE_KIND_COUNT 5

/**
 * @brief A place: a kind and a device index. A small value passed by value.
 *
 * Build it with the constructors below. A place may name a device that does
 * not exist; functions that use it then return ::DAO_ERR_NO_DEVICE.
 */
typedef struct dao_place {
  dao_place_kind kind; /**< What kind of memory. */
  int device;          /**< Device index; 0 for CPU and CUDA_PINNED. */
} dao_place;

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The host place.
 * @return `{DAO_PLACE_CPU, 0}`.
 * @par Thread safety
 * Safe to call from any thread; touches no state.
 */
DAO_API dao_place dao_place_cpu(void);

/**
 * @brief A CUDA device's memory.
 * @param device Device index; not checked here (use dao_place_device_count()).
 * @return `{DAO_PLACE_CUDA, device}`.
 * @par Thread safety
 * Safe to call from any thread; touches no state.
 */
DAO_API dao_place dao_place_cuda(int device);

/**
 * @brief Page-locked host memory registered with the CUDA driver.
 * @return `{DAO_PLACE_CUDA_PINNED, 0}`.
 * @par Thread safety
 * Safe to call from any thread; touches no state.
 */
DAO_API dao_place dao_place_cuda_pinned(void);

/**
 * @brief Managed (unified) memory associated with a CUDA device.
 * @param device Device index; not checked here.
 * @return `{DAO_PLACE_CUDA_MANAGED, device}`.
 * @par Thread safety
 * Safe to call from any thread; touches no state.
 */
DAO_API dao_place dao_place_cuda_managed(int device);

/**
 * @brief A simulated device (see sim.h).
 * @param device Device index; not checked here.
 * @return `{DAO_PLACE_SIM, device}`.
 * @par Thread safety
 * Safe to call from any thread; touches no state.
 */
DAO_API dao_place dao_place_sim(int device);

/**
 * @brief Number of devices of a kind on this machine.
 *
 * CPU always has 1. CUDA and CUDA_MANAGED have the driver's device count,
 * 0 when libdao was built without CUDA or no driver or GPU is present
 * (dao_place_backend_description() says why). CUDA_PINNED has 1 when at
 * least one CUDA device exists, else 0. SIM has the configured count
 * (see sim.h). The first call for a kind initialises its backend.
 *
 * @param[in]  kind  A ::dao_place_kind.
 * @param[out] count Receives the count. Unchanged on failure.
 * @retval DAO_OK                   @p count was written (possibly 0).
 * @retval DAO_ERR_INVALID_ARGUMENT @p count is NULL, @p kind is unknown, or
 *                                  (SIM) `DAO_SIM_DEVICES` is malformed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_place_device_count(dao_place_kind kind, int *count);

/**
 * @brief Free and total bytes of a place, as its backend reports them.
 *
 * For CPU and CUDA_PINNED: physical memory of the machine. For CUDA and
 * CUDA_MANAGED: `cuMemGetInfo` of the device. For SIM: the capacity and what
 * is not yet taken from it.
 *
 * @param[in]  place       The place.
 * @param[out] free_bytes  Receives the free bytes; may be NULL.
 * @param[out] total_bytes Receives the total bytes; may be NULL.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT Unknown kind or a negative device index.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist here (including
 *                                  a device other than 0 for CPU and
 *                                  CUDA_PINNED); the message says why.
 * @retval DAO_ERR_BACKEND          The driver failed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_place_memory_info(dao_place place, size_t *free_bytes, size_t *total_bytes);

/**
 * @brief Lower-case name of a kind: "cpu", "cuda", "cuda_pinned",
 *        "cuda_managed" or "sim".
 * @param kind Any value, including ones that are not a kind.
 * @return A static string; "unknown" for a value that is not a kind.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API const char *dao_place_kind_name(dao_place_kind kind);

/**
 * @brief One line describing the backend that serves a kind, and why it has
 *        no devices when it has none.
 *
 * For example "CUDA driver 13.0 via libcuda.so.1, 1 device(s): …" or
 * "not available: libcuda.so.1 not found: no NVIDIA driver (…)".
 * Initialises the backend.
 * @param kind Any value, including ones that are not a kind.
 * @return A string owned by libdao that lives until the process ends;
 *         "unknown place kind" for a value that is not a kind.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API const char *dao_place_backend_description(dao_place_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* DAO_PLACE_H */
