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
 */
#ifndef DAO_SIM_H
#define DAO_SIM_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif /* DAO_SIM_H */
