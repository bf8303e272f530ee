/**
 * @file memory.h
 * @brief Place-level allocation: dao_alloc(), dao_free(), dao_used().
 *
 * Each place has one default allocator, created on first use. Its strategy
 * comes from `DAO_ALLOCATOR_<KIND>` (KIND one of CPU, CUDA, CUDA_PINNED,
 * CUDA_MANAGED, SIM), else `DAO_ALLOCATOR`, else "buddy" for the CPU place and
 * "caching" for every other place; its config from
 * `DAO_ALLOC_CONF_<KIND>`, else `DAO_ALLOC_CONF`, else the strategy's
 * defaults. The environment is read once, at the first use of any place.
 */
#ifndef DAO_MEMORY_H
#define DAO_MEMORY_H

#include <stddef.h>

#include "allocator.h"
#include "export.h"
#include "place.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Allocate @p size bytes on a place, aligned to at least 256 bytes.
 *
 * @param[in]  place Where.
 * @param[in]  size  Bytes; 0 gives NULL and ::DAO_OK.
 * @param[out] ptr   Receives the pointer, owned by the caller until
 *                   dao_free() on the same place. Set to NULL on failure.
 * @retval DAO_OK                   Allocated.
 * @retval DAO_ERR_INVALID_ARGUMENT @p ptr is NULL, an unknown kind, a bad
 *                                  device index, or a malformed
 *                                  `DAO_ALLOCATOR` / `DAO_ALLOC_CONF`.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist; the message
 *                                  says why.
 * @retval DAO_ERR_OUT_OF_MEMORY    No room; the message tells the size and
 *                                  what the place holds.
 * @retval DAO_ERR_BACKEND          The driver failed otherwise (CUDA places);
 *                                  the message has the driver's error.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_alloc(dao_place place, size_t size, void **ptr);

/**
 * @brief Free a pointer that dao_alloc() gave on the same place.
 *
 * @param[in] place The place it was allocated on.
 * @param[in] ptr   The pointer, or NULL (does nothing).
 * @retval DAO_OK                   Freed.
 * @retval DAO_ERR_INVALID_ARGUMENT Unknown kind or bad device index.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @retval DAO_ERR_INVALID_POINTER  @p ptr is not live on this place
 *                                  (foreign, already freed, or from another
 *                                  place), or is memory the library took
 *                                  for itself (a recycle pool's buffer, a
 *                                  tiered pool's tier, a part of partitioned
 *                                  memory: see dao_used_internal()). Nothing
 *                                  was changed.
 *
 * A valid free allocates nothing, so it never fails for lack of memory.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_free(dao_place place, void *ptr);

/**
 * @brief Bytes currently handed out on a place by dao_alloc(), counted in
 *        block sizes (so at least the sum of the sizes asked for).
 *
 * Only the caller's memory: what the library takes for itself on the place
 * (recycle pools, tiered pools, partitioned memory) is counted apart, by
 * dao_used_internal().
 *
 * @param[in]  place The place.
 * @param[out] bytes Receives the count.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p bytes is NULL, unknown kind or bad
 *                                  device index.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_used(dao_place place, size_t *bytes);

/**
 * @brief Bytes the library itself holds on a place, counted in block sizes:
 *        the memory of recycle pools (recycle.h), tiered pools
 *        (tiered.h) and partitioned memory parts (whole.h) that live
 *        there.
 *
 * That memory comes from an allocator of its own per place, which takes it
 * straight from the place and caches nothing (strategy "system"; the pools
 * keep and reuse their memory themselves, and what they give back is the
 * place's again at once). So it is never counted by dao_used(), and
 * dao_free() refuses its pointers with DAO_ERR_INVALID_POINTER.
 * DAO_ALLOCATOR and DAO_ALLOC_CONF (and their limits) apply to the caller's
 * memory only.
 *
 * @param[in]  place The place.
 * @param[out] bytes Receives the count (0 while the library holds nothing
 *                   there).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p bytes is NULL, unknown kind or bad
 *                                  device index.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_used_internal(dao_place place, size_t *bytes);

/**
 * @brief The default allocator of a place, created if needed.
 *
 * Use it to read statistics, trim, or allocate with a stream. It belongs to
 * libdao and lives until the process ends; dao_allocator_destroy() refuses
 * it.
 *
 * @param[in]  place The place.
 * @param[out] out   Receives the borrowed handle.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL, unknown kind, bad device
 *                                  index, or malformed environment.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_place_allocator(dao_place place, dao_allocator **out);

/**
 * @brief Strategy and config that the default allocators of a kind use,
 *        from the environment, without creating anything.
 *
 * @param[in]  kind     The place kind.
 * @param[out] strategy Receives the strategy name; may be NULL.
 * @param[out] config   Receives the config string ("" for the strategy's
 *                      defaults); may be NULL.
 * The strings live until the process ends.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT Unknown kind.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_place_default_config(dao_place_kind kind, const char **strategy,
                                            const char **config);

#ifdef __cplusplus
}
#endif

#endif /* DAO_MEMORY_H */
