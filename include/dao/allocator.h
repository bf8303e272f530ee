/**
 * @file allocator.h
 * @brief Allocator objects: a strategy on a place, configured by a string.
 *
 * Strategies of this version:
 * - `"buddy"`: a binary buddy allocator that grows its pool in chunks taken
 *   from the place's system resource, splits and merges buddies, and serves
 *   requests larger than a chunk straight from the system resource.
 *   Config keys:
 *   - `min_block` (default 256 B): smallest block; a power of two >= 256.
 *   - `chunk_size` (default 64 MiB, at most a quarter of a device's
 *     capacity, at least 1 MiB): bytes taken from the system at a time;
 *     a power of two >= min_block.
 *   - `max_pool` (default 0 = no cap): hard cap on the bytes held from the
 *     system (chunks and large blocks together); past it, allocations give
 *     ::DAO_ERR_OUT_OF_MEMORY.
 *   - `initial_pool` (default 0): bytes of chunks reserved at creation.
 * - `"system"`: no pooling; every allocation goes to the system resource.
 *   Useful as a baseline and under memory checkers. No config keys.
 *
 * A config string is a comma-separated list of `key=value` pairs, for
 * example `"chunk_size=16MiB,max_pool=1GiB"`. Sizes take B, KiB, MiB, GiB,
 * TiB (and K, M, G, T, KB, MB, GB, TB as powers of 1024). Unknown keys,
 * repeated keys and malformed values are errors, never ignored.
 *
 * Every pointer handed out is aligned to at least 256 bytes. A size of 0
 * allocates nothing and gives NULL; freeing NULL does nothing.
 */
#ifndef DAO_ALLOCATOR_H
#define DAO_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "place.h"
#include "status.h"
#include "stream.h"

/** Opaque allocator handle, created by dao_allocator_create(). */
typedef struct dao_allocator dao_allocator;

/**
 * @brief Statistics of an allocator.
 *
 * The struct may grow at its end in later versions. Set dao_allocator_stats::struct_size to
 * `sizeof(dao_allocator_stats)` before calling dao_allocator_get_stats();
 * the library fills only the fields that fit in that size, so a program
 * built against an older header keeps working with a newer library.
 */
typedef struct dao_allocator_stats {
  size_t struct_size;            /**< In: sizeof(dao_allocator_stats). */
  uint64_t allocated_bytes;      /**< Bytes in live blocks (block sizes). */
  uint64_t peak_allocated_bytes; /**< Peak of allocated_bytes. */
  uint64_t requested_bytes;      /**< Sum of the sizes asked for by live allocations. */
  uint64_t reserved_bytes;       /**< Bytes held from the system resource. */
  uint64_t peak_reserved_bytes;  /**< Peak of reserved_bytes. */
  uint64_t live_blocks;          /**< Number of live allocations. */
  uint64_t alloc_count;          /**< Successful allocations since creation. */
  uint64_t free_count;           /**< Successful frees since creation. */
  uint64_t failed_alloc_count;   /**< Allocations that failed for lack of memory. */
  uint64_t system_alloc_count;   /**< Allocations made from the system resource. */
  uint64_t system_free_count;    /**< Frees made to the system resource. */
  uint64_t largest_free_block;   /**< Largest request servable without growing. */
} dao_allocator_stats;

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Create an allocator of a strategy on a place.
 *
 * Creating reserves nothing unless the config asks for it (`initial_pool`).
 *
 * @param[in]  place    Where the memory comes from.
 * @param[in]  strategy "buddy" or "system"; NULL for the place's default
 *                      strategy (`DAO_ALLOCATOR`, see memory.h).
 * @param[in]  config   `key=value,...` for the strategy; NULL or "" for its
 *                      built-in defaults. Copied.
 * @param[out] out      Receives the handle, owned by the caller until
 *                      dao_allocator_destroy(). Unchanged on failure.
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL, the strategy is unknown,
 *                                  or the config is malformed or has an
 *                                  unknown key; the message says which.
 * @retval DAO_ERR_NO_DEVICE        The place's device does not exist.
 * @retval DAO_ERR_OUT_OF_MEMORY    `initial_pool` could not be reserved.
 * @retval DAO_ERR_BACKEND          The driver failed while reserving
 *                                  `initial_pool`.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_allocator_create(dao_place place, const char *strategy,
                                        const char *config, dao_allocator **out);

/**
 * @brief Allocate @p size bytes, aligned to at least 256 bytes.
 *
 * @param[in]  a      The allocator.
 * @param[in]  size   Bytes; 0 gives NULL and ::DAO_OK.
 * @param[in]  stream The stream the memory will be used on. Strategies of
 *                    this version are not stream-ordered and accept any
 *                    stream: the memory may be used on any stream, and the
 *                    caller must finish work on it before freeing it.
 * @param[out] ptr    Receives the pointer, owned by the caller until
 *                    dao_allocator_free() on the same allocator. Set to
 *                    NULL on failure.
 * @retval DAO_OK                   Allocated.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p ptr is NULL.
 * @retval DAO_ERR_OUT_OF_MEMORY    No room (place full, `max_pool`
 *                                  reached, or a size too large to round);
 *                                  the message tells the size, capacity,
 *                                  reserved and allocated bytes.
 * @retval DAO_ERR_BACKEND          The driver failed otherwise.
 * @par Thread safety
 * Safe to call concurrently with any call on the same allocator except
 * dao_allocator_destroy().
 */
DAO_API dao_status dao_allocator_alloc(dao_allocator *a, size_t size,
                                       dao_stream stream, void **ptr);

/**
 * @brief Free a pointer that @p a handed out.
 *
 * @param[in] a   The allocator.
 * @param[in] ptr A live pointer from dao_allocator_alloc() on @p a, or NULL
 *                (does nothing).
 * @retval DAO_OK                   Freed.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL.
 * @retval DAO_ERR_INVALID_POINTER  @p ptr is not live in @p a (foreign,
 *                                  already freed, or interior). Nothing
 *                                  was changed.
 * @par Thread safety
 * Safe to call concurrently with any call on the same allocator except
 * dao_allocator_destroy().
 */
DAO_API dao_status dao_allocator_free(dao_allocator *a, void *ptr);

/**
 * @brief Usable size of a live block: at least what was asked for.
 *
 * @param[in]  a    The allocator.
 * @param[in]  ptr  A live pointer of @p a.
 * @param[out] size Receives the block's size in bytes.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p size is NULL.
 * @retval DAO_ERR_INVALID_POINTER  @p ptr is not live in @p a.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_usable_size(dao_allocator *a, const void *ptr,
                                             size_t *size);

/**
 * @brief Hand cached memory back to the system resource.
 *
 * For "buddy": every chunk that is wholly free is released. Live blocks are
 * never touched.
 *
 * @param[in]  a        The allocator.
 * @param[out] released Receives the bytes given back; may be NULL.
 * @retval DAO_OK                   Done (possibly 0 bytes).
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_trim(dao_allocator *a, size_t *released);

/**
 * @brief Read the statistics of an allocator.
 *
 * @param[in]     a     The allocator.
 * @param[in,out] stats Caller's struct with `struct_size` set; the fields that
 *                      fit in `struct_size` are written.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p stats is NULL, or
 *                                  `struct_size` is smaller than the first
 *                                  version of the struct.
 * @par Thread safety
 * As dao_allocator_free(); the figures are one consistent snapshot.
 */
DAO_API dao_status dao_allocator_get_stats(dao_allocator *a,
                                           dao_allocator_stats *stats);

/**
 * @brief Set every peak statistic to its current value.
 * @param[in] a The allocator.
 * @retval DAO_OK                   Done.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_reset_peak_stats(dao_allocator *a);

/**
 * @brief Place, strategy and effective configuration of an allocator.
 *
 * @param[in]  a        The allocator.
 * @param[out] place    Receives its place; may be NULL.
 * @param[out] strategy Receives the strategy name; may be NULL.
 * @param[out] config   Receives every config key with its effective value,
 *                      as a string that dao_allocator_create() accepts;
 *                      may be NULL.
 * The strings belong to the allocator and live until it is destroyed.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL.
 * @par Thread safety
 * Safe to call from any thread while @p a is alive.
 */
DAO_API dao_status dao_allocator_info(dao_allocator *a, dao_place *place,
                                      const char **strategy,
                                      const char **config);

/**
 * @brief Destroy an allocator and give all its memory back to the system.
 *
 * Refused while blocks are live, so that no memory in use is lost: free them
 * first. The place default allocators (dao_place_allocator()) cannot be
 * destroyed.
 *
 * @param[in] a The allocator; invalid after ::DAO_OK.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL or a place default.
 * @retval DAO_ERR_BUSY             Blocks are still live; the message says
 *                                  how many and how many bytes. Nothing
 *                                  was changed.
 * @par Thread safety
 * No other call may use @p a concurrently or afterwards.
 */
DAO_API dao_status dao_allocator_destroy(dao_allocator *a);

#ifdef __cplusplus
}
#endif

#endif /* DAO_ALLOCATOR_H */
