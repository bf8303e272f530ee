/**
 * @file recycle.h
 * @brief Recycle pools: typed, shaped, reference-counted buffers for
 *        streaming pipelines, handed from fill threads to operate threads.
 *
 * A pool holds up to `max_buffers` buffers of one element size and shape on
 * one place. A fill thread *acquires* a free buffer, fills it and *submits*
 * it to the pool's queue; operate threads *take* the next submitted buffer
 * (first in, first out), work on it and *release* it. A buffer may be handed
 * to several readers with dao_buffer_retain(); it returns to the free list
 * when its last reference is released, and is then reused as it is: no
 * copying and, once all buffers exist, no allocation at all.
 *
 * Ownership of references: dao_recycle_acquire() and dao_recycle_take() give
 * the caller one reference. dao_recycle_submit() *moves* the caller's
 * reference into the queue (retain first to keep using the buffer).
 * dao_buffer_retain() adds one, dao_buffer_release() drops one. A handle
 * whose references are all dropped must not be used again: the pool may
 * hand the same buffer to someone else at once. Several holders may read a
 * shared buffer; writing to one that others hold is the caller's business
 * (libdao does not lock buffer contents).
 *
 * Blocking calls take a timeout in seconds: 0 tries once, a negative value
 * waits for ever. They wait on condition variables after a short spin,
 * never by sleeping.
 *
 * A pool cannot be destroyed while any buffer is out (acquired, queued or
 * taken): dao_recycle_destroy() then fails with ::DAO_ERR_BUSY and says how
 * many are out, so no handle can outlive its pool by accident. Close the
 * pool first to wake waiters and refuse new acquires.
 */
#ifndef DAO_RECYCLE_H
#define DAO_RECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "place.h"
#include "status.h"

/** Most dimensions a buffer shape may have. */
#define DAO_RECYCLE_MAX_DIMS 8

/** Opaque pool handle. */
typedef struct dao_recycle_pool dao_recycle_pool;
/** Opaque handle to one buffer of a pool (one reference to it). */
typedef struct dao_buffer dao_buffer;
/** Opaque handle to a named set of pools. */
typedef struct dao_collection dao_collection;

/**
 * @brief Statistics of a pool. Set `struct_size` to
 *        `sizeof(dao_recycle_stats)` before dao_recycle_get_stats(); the
 *        struct may grow at its end in later versions (the rule of
 *        size-tagged structs is written at ::dao_allocator_stats).
 *
 * Every buffer is in exactly one state: free (in the free list), held
 * (acquired or taken, or retained, by callers) or queued (submitted, not yet
 * taken); created = free + held + queued.
 */
typedef struct dao_recycle_stats {
  size_t struct_size;       /**< In: sizeof(dao_recycle_stats). */
  uint64_t created;         /**< Buffers created so far (at most max_buffers). */
  uint64_t free;            /**< Buffers in the free list. */
  uint64_t queued;          /**< Buffers submitted and not yet taken. */
  uint64_t held;            /**< Buffers held by callers. */
  uint64_t peak_free;       /**< Peak of free. */
  uint64_t peak_queued;     /**< Peak of queued. */
  uint64_t peak_held;       /**< Peak of held. */
  uint64_t acquired;        /**< Successful acquires. */
  uint64_t submitted;       /**< Successful submits. */
  uint64_t taken;           /**< Successful takes. */
  uint64_t acquire_waits;   /**< Acquires that had to wait. */
  uint64_t take_waits;      /**< Takes that had to wait. */
  uint64_t acquire_wait_ns; /**< Total time acquires waited, in ns. */
  uint64_t take_wait_ns;    /**< Total time takes waited, in ns. */
  uint64_t timeouts;        /**< Acquires and takes that timed out. */
} dao_recycle_stats;

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Create a pool of buffers of one element size and shape on a place.
 *
 * Buffer memory comes from the place's default allocator (dao_alloc()); each
 * buffer is `element_size` × the product of `shape` bytes, aligned to at
 * least 256 bytes. Buffers are created lazily, when an acquire finds the
 * free list empty, up to `max_buffers`; after that they are only recycled.
 * On the CPU and on SIM devices the @p preallocate buffers have their pages
 * touched now, so that their first use pays no page faults.
 *
 * @param[in]  place        Where the buffers live.
 * @param[in]  element_size Bytes per element (> 0).
 * @param[in]  ndim         Number of dimensions, 1 .. ::DAO_RECYCLE_MAX_DIMS.
 * @param[in]  shape        @p ndim extents, each > 0, in the caller's order
 *                          (libdao does not reorder: a Fortran caller passes
 *                          its column-major extents). Copied.
 * @param[in]  max_buffers  Most buffers the pool may create (1 .. 2^20).
 * @param[in]  preallocate  Buffers to create now (<= @p max_buffers).
 * @param[in]  config       `key=value,...` or NULL/"" for defaults. Keys:
 *                          `name` (a label for messages and statistics),
 *                          `spin` (iterations a blocking call spins before
 *                          it sleeps, and at most 50 µs; only 64 while most
 *                          of the pool's recent waits on that side lasted
 *                          longer than that; the first 64 are busy pauses,
 *                          skipped while they have mostly not ended that
 *                          side's waits (threads sharing a core), the rest
 *                          yield; default 2000, 0 to never spin).
 * @param[out] out          Receives the pool, owned by the caller until
 *                          dao_recycle_destroy(). Unchanged on failure.
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer, a zero or overflowing
 *                                  size, a bad @p ndim, or a bad config.
 * @retval DAO_ERR_NO_DEVICE        The place's device does not exist.
 * @retval DAO_ERR_OUT_OF_MEMORY    The preallocated buffers do not fit;
 *                                  nothing is kept.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_recycle_create(dao_place place, size_t element_size, int ndim,
                                      const size_t *shape, size_t max_buffers, size_t preallocate,
                                      const char *config, dao_recycle_pool **out);

/**
 * @brief Get a free buffer to fill (the seed's `new_buffer`).
 *
 * Takes one from the free list, the one released last (last in, first
 * out: its memory is the most likely to be in the caches), else creates one
 * if fewer than `max_buffers` exist, else waits until one is released.
 * Releases reach the free list through a small stash of the releasing
 * thread (pools of 8 buffers or more, of at most 128 KiB each): the calling
 * thread's own releases come first, most recent first; a few buffers
 * released by other threads may wait in their stash and go out after those
 * already in the free list. Every free buffer is found, stashed or not,
 * before the call creates a buffer, sleeps or fails.
 * @param[in]  pool    The pool.
 * @param[in]  timeout Seconds to wait: 0 tries once, < 0 (or more than
 *                     1e9) waits for ever; NaN is refused.
 * @param[out] out     Receives the buffer with one reference for the
 *                     caller. Set to NULL on failure.
 * @retval DAO_OK                   Acquired.
 * @retval DAO_ERR_INVALID_ARGUMENT @p pool or @p out is NULL, or not a pool.
 * @retval DAO_ERR_TIMEOUT          No buffer became free in time.
 * @retval DAO_ERR_CLOSED           The pool is closed (also wakes waiters).
 * @retval DAO_ERR_OUT_OF_MEMORY    A new buffer was needed and could not be
 *                                  allocated (returned at once, without
 *                                  waiting for held buffers); the pool keeps
 *                                  working with those it has.
 * @par Thread safety
 * Safe to call from any number of threads at once.
 */
DAO_API dao_status dao_recycle_acquire(dao_recycle_pool *pool, double timeout, dao_buffer **out);

/**
 * @brief Queue a filled buffer for the operate threads (the seed's
 *        `complete_buffer`). Never blocks: the queue has room for every
 *        buffer of the pool.
 *
 * Moves the caller's reference into the queue and gives the buffer the
 * next sequence number of the pool. Allowed on a closed pool, so that work
 * in flight can be drained.
 * @param[in] pool   The pool.
 * @param[in] buffer A buffer of @p pool that the caller holds a reference
 *                   to and that is not already queued.
 * @retval DAO_OK                   Queued.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL or invalid handle, or a buffer of
 *                                  another pool.
 * @retval DAO_ERR_INVALID_STATE    The buffer is not held (already released
 *                                  or already queued). Nothing changed.
 * @par Thread safety
 * Safe to call from any number of threads at once.
 */
DAO_API dao_status dao_recycle_submit(dao_recycle_pool *pool, dao_buffer *buffer);

/**
 * @brief Take the next submitted buffer, first in first out (the seed's
 *        `operate_buffer`).
 * @param[in]  pool    The pool.
 * @param[in]  timeout Seconds to wait: 0 tries once, < 0 waits for ever.
 * @param[out] out     Receives the buffer; the queue's reference becomes the
 *                     caller's. Set to NULL on failure.
 * @retval DAO_OK                   Taken.
 * @retval DAO_ERR_INVALID_ARGUMENT @p pool or @p out is NULL, or not a pool.
 * @retval DAO_ERR_TIMEOUT          Nothing was submitted in time.
 * @retval DAO_ERR_CLOSED           The pool is closed and its queue is empty.
 * @par Thread safety
 * Safe to call from any number of threads at once.
 */
DAO_API dao_status dao_recycle_take(dao_recycle_pool *pool, double timeout, dao_buffer **out);

/**
 * @brief Close a pool: wake every waiter with ::DAO_ERR_CLOSED and refuse
 *        new acquires; submits still work and queued buffers can still be
 *        taken until the queue is empty. Closing twice is harmless.
 * @param[in] pool The pool.
 * @retval DAO_OK                   Closed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a pool.
 * @par Thread safety
 * Safe to call from any thread, also while others wait.
 */
DAO_API dao_status dao_recycle_close(dao_recycle_pool *pool);

/**
 * @brief Read a pool's statistics. Every field is exact when no call runs,
 *        and created = free + queued + held always. While calls run,
 *        created, free, queued and held are the counts of one instant
 *        when two reads of the counters agree, else (a pipeline changing
 *        them faster, after 100 tries) a few operations apart; peaks can
 *        be below the true high by the calls running at that moment
 *        (docs/recycle.md, "Statistics").
 * @param[in]     pool  The pool.
 * @param[in,out] stats Caller's struct with `struct_size` set; the fields this
 *                      version knows are written, nothing past them.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer, not a pool, or
 *                                  `struct_size` smaller than this version's
 *                                  struct or larger than 65536 (64 KiB);
 *                                  nothing is written.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_recycle_get_stats(dao_recycle_pool *pool, dao_recycle_stats *stats);

/**
 * @brief Destroy a pool and free its buffers' memory.
 *
 * Refused while any buffer is out (held or queued): the message says how
 * many. Close the pool, drain its queue and release every buffer first.
 * @param[in] pool The pool; invalid after ::DAO_OK.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL, not a pool, or a pool that belongs
 *                                  to a collection (destroy the collection).
 * @retval DAO_ERR_BUSY             Buffers are out. Nothing changed.
 * @par Thread safety
 * No other call may use @p pool concurrently or afterwards.
 */
DAO_API dao_status dao_recycle_destroy(dao_recycle_pool *pool);

/**
 * @brief Add a reference to a buffer, for another holder.
 * @param[in] buffer A buffer the caller holds a reference to.
 * @retval DAO_OK                   Retained.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a buffer.
 * @retval DAO_ERR_INVALID_STATE    The buffer is free, or queued with no
 *                                  reference but the queue's (holders who
 *                                  retained before submitting may retain
 *                                  and release while it is queued), or it
 *                                  has 2^32-1 references already.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_buffer_retain(dao_buffer *buffer);

/**
 * @brief Drop a reference; the last one returns the buffer to the free list
 *        (through the calling thread's stash; see dao_recycle_acquire())
 *        and wakes a waiting acquire.
 * @param[in] buffer A buffer the caller holds a reference to; do not use the
 *                   handle after its last reference is dropped.
 * @retval DAO_OK                   Released.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a buffer.
 * @retval DAO_ERR_INVALID_STATE    The buffer holds no reference of the
 *                                  caller's (a double release, or a queued
 *                                  buffer whose only reference is the
 *                                  queue's). Nothing changed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_buffer_release(dao_buffer *buffer);

/**
 * @brief Data pointer of a buffer (the same for its whole life).
 * @param[in]  buffer The buffer.
 * @param[out] data   Receives the pointer (host-accessible unless the place
 *                    is a CUDA device).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer or not a buffer.
 * @par Thread safety
 * Safe to call from any thread while a reference is held.
 */
DAO_API dao_status dao_buffer_data(const dao_buffer *buffer, void **data);

/**
 * @brief Shape of a buffer.
 * @param[in]  buffer The buffer.
 * @param[out] ndim   Receives the number of dimensions; may be NULL.
 * @param[out] shape  Receives a pointer to the extents, owned by the pool and
 *                    valid while the pool lives; may be NULL.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p buffer is NULL or not a buffer.
 * @par Thread safety
 * Safe to call from any thread while a reference is held.
 */
DAO_API dao_status dao_buffer_shape(const dao_buffer *buffer, int *ndim, const size_t **shape);

/**
 * @brief Element size and total bytes of a buffer.
 * @param[in]  buffer       The buffer.
 * @param[out] element_size Receives the element size; may be NULL.
 * @param[out] bytes        Receives element size × elements; may be NULL.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p buffer is NULL or not a buffer.
 * @par Thread safety
 * Safe to call from any thread while a reference is held.
 */
DAO_API dao_status dao_buffer_size(const dao_buffer *buffer, size_t *element_size, size_t *bytes);

/**
 * @brief Place of a buffer.
 * @param[in]  buffer The buffer.
 * @param[out] place  Receives the place.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer or not a buffer.
 * @par Thread safety
 * Safe to call from any thread while a reference is held.
 */
DAO_API dao_status dao_buffer_place(const dao_buffer *buffer, dao_place *place);

/**
 * @brief Sequence number of a buffer: its position in the pool's order of
 *        submission (0 for the first submit), or UINT64_MAX if it has not
 *        been submitted since it was acquired.
 * @param[in]  buffer   The buffer.
 * @param[out] sequence Receives the number.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer or not a buffer.
 * @par Thread safety
 * Safe to call from any thread while a reference is held.
 */
DAO_API dao_status dao_buffer_sequence(const dao_buffer *buffer, uint64_t *sequence);

/**
 * @brief Create an empty collection of named pools (the seed's
 *        `memory_collection`).
 * @param[out] out Receives the collection, owned by the caller.
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_collection_create(dao_collection **out);

/**
 * @brief Create a pool (as dao_recycle_create()) under a name in a
 *        collection. The collection owns the pool.
 * @param[in]  collection The collection.
 * @param[in]  name       A name not yet used in it (copied).
 * @param[in]  place, element_size, ndim, shape, max_buffers, preallocate, config
 *                        As for dao_recycle_create().
 * @param[out] out        Receives the pool (borrowed; may be NULL).
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT As dao_recycle_create(), a NULL or empty
 *                                  name, or a name already used.
 * @retval DAO_ERR_NO_DEVICE, DAO_ERR_OUT_OF_MEMORY As dao_recycle_create().
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_collection_add(dao_collection *collection, const char *name, dao_place place,
                                      size_t element_size, int ndim, const size_t *shape,
                                      size_t max_buffers, size_t preallocate, const char *config,
                                      dao_recycle_pool **out);

/**
 * @brief Look a pool up by name.
 * @param[in]  collection The collection.
 * @param[in]  name       The name.
 * @param[out] out        Receives the pool (borrowed, valid while the
 *                        collection lives).
 * @retval DAO_OK                   Found.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer or not a collection.
 * @retval DAO_ERR_NOT_FOUND        No pool of that name; the message lists
 *                                  the names there are.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_collection_find(dao_collection *collection, const char *name,
                                       dao_recycle_pool **out);

/**
 * @brief Close every pool of a collection (dao_recycle_close()).
 * @param[in] collection The collection.
 * @retval DAO_OK                   Closed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a collection.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_collection_close(dao_collection *collection);

/**
 * @brief Destroy a collection and all its pools.
 *
 * Refused while any pool has buffers out; the message names the pools and
 * how many buffers each has out. Nothing is destroyed then.
 * @param[in] collection The collection; invalid after ::DAO_OK.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a collection.
 * @retval DAO_ERR_BUSY             Buffers are out.
 * @par Thread safety
 * No other call may use the collection or its pools concurrently or
 * afterwards.
 */
DAO_API dao_status dao_collection_destroy(dao_collection *collection);

#ifdef __cplusplus
}
#endif

#endif /* DAO_RECYCLE_H */
