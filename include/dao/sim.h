/**
 * @file sim.h
 * @brief Simulated devices (SIM places): GPU-like memory on any machine.
 *
 * A SIM device is host memory with a hard capacity. Memory is taken from the
 * host per system allocation, so a large capacity costs nothing until used,
 * but asking past the capacity gives ::DAO_ERR_OUT_OF_MEMORY exactly as a
 * full GPU would.
 *
 * The devices are set, in order of precedence, by dao_sim_configure() called
 * before first use, by the environment variable `DAO_SIM_DEVICES`
 * (`2x512MiB`, `1GiB,256MiB`, `3x1GiB,64MiB`, or `0` for none), or else one
 * device of 1 GiB. Sizes take the suffixes B, KiB, MiB, GiB, TiB (and K, M,
 * G, T, KB, MB, GB, TB as powers of 1024).
 *
 * **Cost profiles.** A SIM device can also stand in for a particular card:
 * with a cost profile other than `none` it maps memory in the card's
 * granularity and accounts, for every driver call it stands in for
 * (allocation and free, physical create / map / set-access / unmap /
 * release, event record and query, synchronization, host functions, copies
 * by bytes), the time that card's driver takes, as *simulated driver time*:
 * accounted, never slept, so programs and tests run at full speed and still
 * see what the calls would cost. Profiles: `none` (the default: host pages,
 * no costs) and `h200` (an NVIDIA H200 with driver 580, measured; see
 * docs/places.md). Chosen by dao_sim_set_profile() before first use, or by
 * the environment variable `DAO_SIM_COSTS`.
 */
#ifndef DAO_SIM_H
#define DAO_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

/** Most simulated devices a process may have. */
#define DAO_SIM_MAX_DEVICES 64

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Set the number and capacities of the simulated devices.
 *
 * Must be called before the first use of a SIM place (any call that takes a
 * SIM place or kind); it overrides `DAO_SIM_DEVICES`. Calling it again with
 * the same configuration after first use succeeds and changes nothing.
 *
 * @param[in] count      Number of devices, 0 to ::DAO_SIM_MAX_DEVICES.
 * @param[in] capacities @p count capacities in bytes (each > 0), or NULL for
 *                       1 GiB each. Copied; the caller keeps ownership.
 * @retval DAO_OK                   Configured.
 * @retval DAO_ERR_INVALID_ARGUMENT @p count out of range or a capacity of 0.
 * @retval DAO_ERR_INVALID_STATE    SIM devices are already in use with a
 *                                  different configuration. Nothing changed.
 * @par Thread safety
 * Safe to call from any thread; a call racing with the first use of a SIM
 * place either takes effect or returns ::DAO_ERR_INVALID_STATE.
 */
DAO_API dao_status dao_sim_configure(int count, const size_t *capacities);

/** Driver calls whose simulated cost a SIM device accounts. */
typedef enum dao_sim_op {
  DAO_SIM_OP_ALLOC = 0,           /**< A segment allocation (cuMemAlloc). */
  DAO_SIM_OP_FREE = 1,            /**< A segment free (cuMemFree). */
  DAO_SIM_OP_CREATE = 2,          /**< A physical allocation (cuMemCreate). */
  DAO_SIM_OP_MAP = 3,             /**< Mapping one physical allocation (cuMemMap). */
  DAO_SIM_OP_SET_ACCESS = 4,      /**< Enabling access to a mapped range (cuMemSetAccess). */
  DAO_SIM_OP_UNMAP = 5,           /**< Unmapping one physical allocation (cuMemUnmap). */
  DAO_SIM_OP_RELEASE = 6,         /**< Releasing one physical allocation (cuMemRelease). */
  DAO_SIM_OP_EVENT_RECORD = 7,    /**< Recording an event on a stream. */
  DAO_SIM_OP_EVENT_QUERY = 8,     /**< Querying an event or a stream. */
  DAO_SIM_OP_SYNCHRONIZE = 9,     /**< Synchronizing a stream or an event. */
  DAO_SIM_OP_HOST_FUNC = 10,      /**< A host function queued on a stream. */
  DAO_SIM_OP_COPY_TO_DEVICE = 11, /**< A copy from host memory to the device. */
  DAO_SIM_OP_COPY_TO_HOST = 12,   /**< A copy from the device to host memory. */
  DAO_SIM_OP_COPY_ON_DEVICE = 13, /**< A copy within device memory. */
  DAO_SIM_OP_COUNT = 14           /**< Number of operations; not an operation. */
} dao_sim_op;

/** What one SIM device accounted for one operation (size-tagged). */
typedef struct dao_sim_cost {
  size_t struct_size; /**< Set to sizeof(dao_sim_cost) before the call. */
  uint64_t count;     /**< Calls since the device's first use or last reset. */
  uint64_t bytes;     /**< Bytes they concerned (mapped, allocated, copied). */
  uint64_t ns;        /**< Simulated driver time they took, in nanoseconds. */
} dao_sim_cost;

/**
 * @brief Choose the cost profile of the simulated devices.
 *
 * Must be called before the first use of a SIM place, like
 * dao_sim_configure(); it overrides `DAO_SIM_COSTS`. Calling it again with
 * the profile in effect succeeds and changes nothing.
 *
 * @param[in] profile "none" or "h200".
 * @retval DAO_OK                   Chosen.
 * @retval DAO_ERR_INVALID_ARGUMENT @p profile is NULL or unknown (the message
 *                                  lists the profiles).
 * @retval DAO_ERR_INVALID_STATE    SIM devices are already in use with another
 *                                  profile. Nothing changed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_sim_set_profile(const char *profile);

/**
 * @brief The cost profile in effect (fixes the SIM configuration, as a first
 *        use does).
 *
 * @param[out] profile Receives the profile's name, a static string.
 * @retval DAO_OK                   Done.
 * @retval DAO_ERR_INVALID_ARGUMENT @p profile is NULL, or `DAO_SIM_COSTS` or
 *                                  `DAO_SIM_DEVICES` is malformed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_sim_get_profile(const char **profile);

/**
 * @brief What a SIM device accounted for one operation.
 *
 * @param[in]  device The SIM device.
 * @param[in]  op     The operation.
 * @param[out] out    Receives the count, bytes and simulated time; its
 *                    `struct_size` must be set. The fields this version
 *                    knows are written, nothing past them (the rule of
 *                    size-tagged structs is written at ::dao_allocator_stats).
 * @retval DAO_OK                   Done.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL, its struct_size smaller
 *                                  than this version's struct or larger than
 *                                  65536 (64 KiB), or @p op unknown; nothing
 *                                  is written.
 * @retval DAO_ERR_NO_DEVICE        SIM device @p device does not exist.
 * @par Thread safety
 * Safe to call from any thread; the three fields are read one by one while
 * other threads may add to them.
 */
DAO_API dao_status dao_sim_get_cost(int device, dao_sim_op op, dao_sim_cost *out);

/**
 * @brief Zero the accounted costs of a SIM device.
 *
 * @param[in] device The SIM device.
 * @retval DAO_OK            Done.
 * @retval DAO_ERR_NO_DEVICE SIM device @p device does not exist.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_sim_reset_costs(int device);

/**
 * @brief The name of an operation ("alloc", "create", "copy_to_device", ...).
 *
 * @param[in] op The operation; any value.
 * @return A static string, never NULL: the name, or "unknown" for a value
 *         that is not an operation.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API const char *dao_sim_op_name(dao_sim_op op);

#ifdef __cplusplus
}
#endif

#endif /* DAO_SIM_H */
