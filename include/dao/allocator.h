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
 * - `"caching"`: stream-ordered caching allocator, as PyTorch's CUDA caching
 *   allocator (the default of device places). Requests are rounded up to
 *   512 B; blocks belong to the stream they were allocated on and are reused
 *   only there (see dao_allocator_record_stream()); freed blocks stay cached
 *   for reuse, split and merged with their neighbours; when the place is full
 *   the cache is released and the request retried before
 *   ::DAO_ERR_OUT_OF_MEMORY. Where the place supports virtual memory (CPU,
 *   SIM, CUDA devices) memory comes in *expandable segments*: one reserved
 *   address range per stream whose pages are mapped as blocks need them, so
 *   best fit works across the whole range and a full device can use every
 *   free page. Elsewhere it carves PyTorch's segments (2 MiB for requests up
 *   to 1 MiB, 20 MiB for 1-10 MiB, larger ones rounded up to 2 MiB).
 *   Config keys (PyTorch's names where they mean the same):
 *   - `max_split_size_mb` / `max_split_size` (default 0 = none, else > 20 MiB):
 *     blocks this large are never split and serve only requests within
 *     20 MiB of their size (segment mode).
 *   - `roundup_power2_divisions` (default 0): round sizes up to the next of
 *     N steps between powers of two (N a power of two up to 64).
 *   - `garbage_collection_threshold` (default 0 = off, else in (0, 1)): when
 *     reserved memory passes this fraction of the limit, cached memory is
 *     released before new memory is taken.
 *   - `memory_fraction` (default 0 = none): at most this fraction of the
 *     place's capacity; `max_pool` (default 0 = none): at most this many bytes.
 *   - `expandable_segments` (default true): use expandable segments where
 *     the place can map memory.
 *   - `reserve_headroom` (default 0.1, or none): with expandable segments,
 *     give cached pages back before reserved memory grows past the peak of
 *     allocated memory by more than this fraction; it widens by itself when
 *     that makes the allocator unmap and map again often.
 *   - `reserve_slack` (default none): with expandable segments, give cached
 *     pages back before reserved memory grows past the memory in use by more
 *     than this fraction (a lower peak for more system calls).
 *   - `fast_reuse` (default true): a freed block waits, unmerged, in a list
 *     of its size class (16 per power of two), and the next request of that
 *     class, or of up to three classes smaller, takes it back as it is (so a
 *     block may be up to a quarter larger than the rounded request; usable
 *     size and statistics say so). The waiting blocks hold at most
 *     `reserve_headroom` times the allocated memory (no bound with none);
 *     beyond, a free merges at once. Merging waits until the allocator
 *     would take new memory, and until a trim, snapshot or inactive-split
 *     statistic. `false`: every free merges at once (exact best fit).
 *   The environment variable `DAO_NO_CACHING=1` turns caching off (every
 *   free gives the memory back) for debugging with memory checkers.
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
 * `sizeof(dao_allocator_stats)` before calling dao_allocator_get_stats(). The
 * rule of every size-tagged struct (this one, ::dao_segment_info,
 * ::dao_block_info, ::dao_recycle_stats, ::dao_tiered_stats, ::dao_sim_cost
 * and those of whole.h): the library writes the fields its own version
 * knows, never more than its own `sizeof` and never past `struct_size`;
 * bytes past its fields (those of a newer header) are left as they are, so
 * zero-fill the struct to read 0 there. A `struct_size` smaller than the
 * library's struct, or larger than 65536 (64 KiB, more than any libdao struct
 * will be: an unset field), is refused with ::DAO_ERR_INVALID_ARGUMENT and
 * nothing is written. So a program built against an older header keeps
 * working with a newer library.
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
  uint64_t alloc_retry_count;    /**< Allocations that succeeded only after
                                      cached memory was released and the
                                      system asked again. */
} dao_allocator_stats;

/**
 * @brief What a detailed statistic counts (dao_allocator_get_stat()).
 *
 * As in PyTorch's caching allocator: *allocated* is what callers hold;
 * *reserved* is what the allocator holds from the system (segments, or
 * mapped memory of expandable segments); *active* is allocated plus freed
 * blocks still waiting for other streams' work; *inactive split* is free
 * memory inside segments that are partly in use (fragmentation).
 */
typedef enum dao_stat_metric {
  DAO_STAT_ALLOCATED_BYTES = 0,       /**< Bytes of allocated blocks. */
  DAO_STAT_ALLOCATED_BLOCKS = 1,      /**< Number of allocated blocks. */
  DAO_STAT_RESERVED_BYTES = 2,        /**< Bytes held from the system. */
  DAO_STAT_RESERVED_SEGMENTS = 3,     /**< System allocations held. */
  DAO_STAT_ACTIVE_BYTES = 4,          /**< Bytes of active blocks. */
  DAO_STAT_ACTIVE_BLOCKS = 5,         /**< Number of active blocks. */
  DAO_STAT_INACTIVE_SPLIT_BYTES = 6,  /**< Free bytes in partly used segments. */
  DAO_STAT_INACTIVE_SPLIT_BLOCKS = 7, /**< Free blocks in partly used segments. */
  DAO_STAT_REQUESTED_BYTES = 8        /**< Bytes asked for by allocated blocks. */
} dao_stat_metric;

/** Number of ::dao_stat_metric values of this version. */
#define DAO_STAT_METRIC_COUNT 9

/**
 * @brief Which blocks a statistic covers.
 *
 * Blocks count in the small or large pool by their size (up to 1 MiB:
 * small). Reserved memory counts by segment: with expandable segments, small
 * and large blocks share one segment per stream, counted in the large pool,
 * so the small pool's reserved bytes stay 0 there.
 */
typedef enum dao_stat_pool {
  DAO_STAT_POOL_ALL = 0,   /**< Every block. */
  DAO_STAT_POOL_SMALL = 1, /**< Blocks of the small pool (requests <= 1 MiB). */
  DAO_STAT_POOL_LARGE = 2  /**< Blocks of the large pool. */
} dao_stat_pool;

/** Number of ::dao_stat_pool values of this version. */
#define DAO_STAT_POOL_COUNT 3

/** One statistic: its current value, peak, and accumulated increases and
 *  decreases since creation (or dao_allocator_reset_accumulated_stats()). */
typedef struct dao_stat {
  int64_t current;   /**< Value now. */
  int64_t peak;      /**< Largest value since creation or the last reset. */
  int64_t allocated; /**< Sum of all increases. */
  int64_t freed;     /**< Sum of all decreases. */
} dao_stat;

/** State of a block in a snapshot. */
typedef enum dao_block_state {
  DAO_BLOCK_FREE = 0,        /**< Cached, reusable on its stream. */
  DAO_BLOCK_ALLOCATED = 1,   /**< Held by a caller. */
  DAO_BLOCK_PENDING_FREE = 2 /**< Freed, waiting for other streams' work. */
} dao_block_state;

/** A segment in a snapshot: one system allocation, or one expandable
 *  segment (reserved addresses of which `mapped_bytes` are backed). */
typedef struct dao_segment_info {
  size_t struct_size;  /**< In: sizeof(dao_segment_info). */
  uintptr_t address;   /**< First byte. */
  size_t size;         /**< Bytes of addresses the segment spans. */
  size_t mapped_bytes; /**< Bytes backed by memory (= size unless expandable). */
  dao_stat_pool pool;  /**< ::DAO_STAT_POOL_SMALL or ::DAO_STAT_POOL_LARGE. */
  dao_stream stream;   /**< Stream its blocks belong to. */
  int expandable;      /**< 1 for an expandable segment. */
  size_t block_count;  /**< Blocks in it, in address order. */
} dao_segment_info;

/** A block in a snapshot. */
typedef struct dao_block_info {
  size_t struct_size;    /**< In: sizeof(dao_block_info). */
  uintptr_t address;     /**< First byte. */
  size_t size;           /**< Block size. */
  size_t requested_size; /**< Size asked for (0 unless allocated). */
  dao_block_state state; /**< Its state. */
  dao_stream stream;     /**< Stream it belongs to. */
} dao_block_info;

/** Opaque, immutable copy of an allocator's segments and blocks. */
typedef struct dao_snapshot dao_snapshot;

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Create an allocator of a strategy on a place.
 *
 * Creating reserves nothing unless the config asks for it (`initial_pool`).
 *
 * @param[in]  place    Where the memory comes from.
 * @param[in]  strategy "buddy", "caching", "system" or "limit"; NULL for the
 *                      place's default strategy (`DAO_ALLOCATOR`, see memory.h).
 * @param[in]  config   `key=value,...` for the strategy; NULL or "" for its
 *                      built-in defaults. Copied. Strategies stack: the key
 *                      `upstream=<strategy>` makes this one take its memory
 *                      from that strategy, whose own keys follow as
 *                      `upstream.<key>=<value>` ("limit" caps the bytes in
 *                      use over its upstream; see docs/architecture.md).
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
DAO_API dao_status dao_allocator_create(dao_place place, const char *strategy, const char *config,
                                        dao_allocator **out);

/**
 * @brief Allocate @p size bytes, aligned to at least 256 bytes.
 *
 * @param[in]  a      The allocator.
 * @param[in]  size   Bytes; 0 gives NULL and ::DAO_OK.
 * @param[in]  stream The stream the memory will be used on (NULL: the
 *                    default stream). "caching" is stream-ordered: the block
 *                    belongs to this stream and, once freed, is reused only
 *                    for requests on it, so work queued on the stream before
 *                    the free finishes first; cached memory goes back to
 *                    the place only once the stream has run that work. The
 *                    stream may be destroyed before the block is freed.
 *                    "buddy" and "system" accept a stream of any place
 *                    and give memory back at once on free: finish all work
 *                    on it before freeing.
 * @param[out] ptr    Receives the pointer, owned by the caller until
 *                    dao_allocator_free() on the same allocator. Set to
 *                    NULL on failure.
 * @retval DAO_OK                   Allocated.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p ptr is NULL, @p stream is not
 *                                  a stream handle, or ("caching") a stream
 *                                  of another place.
 * @retval DAO_ERR_OUT_OF_MEMORY    No room (place full, `max_pool`
 *                                  reached, or a size too large to round);
 *                                  the message tells the size, capacity,
 *                                  reserved and allocated bytes.
 * @retval DAO_ERR_BACKEND          The driver failed otherwise.
 * @par Thread safety
 * Safe to call concurrently with any call on the same allocator except
 * dao_allocator_destroy().
 */
DAO_API dao_status dao_allocator_alloc(dao_allocator *a, size_t size, dao_stream stream,
                                       void **ptr);

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
 *
 * A free never fails for lack of memory: what a stream-ordered free needs
 * (an event and a queue entry per stream of dao_allocator_record_stream())
 * is taken when the stream is recorded. Where a stream cannot record that
 * event (its own queue out of memory), the free waits for the stream
 * instead.
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
DAO_API dao_status dao_allocator_usable_size(dao_allocator *a, const void *ptr, size_t *size);

/**
 * @brief Hand cached memory back to the system resource.
 *
 * For "buddy": every chunk that is wholly free is released. For "caching":
 * every segment (or, in expandable segments, every page) that no live block
 * uses; first it waits for the streams of the memory it gives back, since
 * work queued on a stream before a free may still use the freed block (as
 * PyTorch's `empty_cache` synchronizes). It waits without holding the
 * allocator's lock, so a host function on one of those streams may use the
 * allocator meanwhile; memory of a stream given more work meanwhile stays
 * cached. (So do an allocation's out-of-memory retry and, with
 * `DAO_NO_CACHING=1`, a free.) Live blocks are never touched. A stack
 * (`upstream=`) is trimmed down to the system resource: each strategy below
 * is trimmed after the one above it.
 *
 * @param[in]  a        The allocator.
 * @param[out] released Receives the bytes given back, what the allocator's
 *                      `reserved_bytes` fell by; may be NULL.
 * @retval DAO_OK                   Done (possibly 0 bytes).
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL.
 *
 * A trim needs no memory of its own, so it never fails for lack of it.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_trim(dao_allocator *a, size_t *released);

/**
 * @brief Read the statistics of an allocator.
 *
 * @param[in]     a     The allocator.
 * @param[in,out] stats Caller's struct with `struct_size` set; the fields this
 *                      version knows are written, nothing past them (see
 *                      ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p stats is NULL, or
 *                                  `struct_size` is smaller than this
 *                                  version's struct or larger than 65536
 *                                  (64 KiB); nothing is written.
 * @par Thread safety
 * As dao_allocator_free(); the figures are one consistent snapshot.
 */
DAO_API dao_status dao_allocator_get_stats(dao_allocator *a, dao_allocator_stats *stats);

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
DAO_API dao_status dao_allocator_info(dao_allocator *a, dao_place *place, const char **strategy,
                                      const char **config);

/**
 * @brief Read one detailed statistic.
 *
 * "caching" keeps every metric for every pool. "buddy" and "system" keep
 * ::DAO_STAT_POOL_ALL of the allocated, active (equal to allocated: they
 * free at once), reserved (bytes and segments) and requested metrics, and
 * no inactive-split metric.
 * @param[in]  a      The allocator.
 * @param[in]  metric What to read.
 * @param[in]  pool   Which blocks.
 * @param[out] out    Receives the statistic.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p out is NULL, or an unknown
 *                                  metric or pool.
 * @retval DAO_ERR_UNSUPPORTED      The strategy does not keep this one.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_get_stat(dao_allocator *a, dao_stat_metric metric,
                                          dao_stat_pool pool, dao_stat *out);

/**
 * @brief Set the accumulated parts (allocated, freed) of every detailed
 *        statistic, and the counters of dao_allocator_stats, to zero.
 * @param[in] a The allocator.
 * @retval DAO_OK                   Done.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_reset_accumulated_stats(dao_allocator *a);

/**
 * @brief Mark a block as used on another stream, as PyTorch's
 *        `recordStream`.
 *
 * A block belongs to the stream it was allocated on and is reused only
 * there. When it is also used on @p stream, call this: on free, the block is
 * then reused only after the work queued on @p stream up to the free has run.
 * @param[in] a      A stream-ordered allocator ("caching").
 * @param[in] ptr    A live pointer of @p a.
 * @param[in] stream The other stream, of the allocator's place; its own
 *                   stream or NULL does nothing. It may be destroyed
 *                   before the block is freed: the allocator keeps what it
 *                   needs of the stream until the block's reuse no longer
 *                   depends on it.
 * @retval DAO_OK                   Recorded.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL, @p stream is not a stream
 *                                  handle, or it belongs to another place.
 * @retval DAO_ERR_INVALID_POINTER  @p ptr is not live in @p a.
 * @retval DAO_ERR_OUT_OF_MEMORY    No host memory for the event and queue
 *                                  entry the block's free will need (taken
 *                                  here, so that the free cannot fail).
 *                                  Nothing was recorded.
 * @retval DAO_ERR_UNSUPPORTED      The strategy is not stream-ordered
 *                                  ("buddy", "system" free at once:
 *                                  synchronize before freeing).
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_record_stream(dao_allocator *a, void *ptr, dao_stream stream);

/**
 * @brief Take a snapshot of every segment and block of an allocator.
 * @param[in]  a   The allocator ("caching").
 * @param[out] out Receives the snapshot, owned by the caller until
 *                 dao_snapshot_destroy(); it does not change afterwards.
 * @retval DAO_OK                   Taken.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p out is NULL.
 * @retval DAO_ERR_UNSUPPORTED      The strategy keeps no segments.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_snapshot(dao_allocator *a, dao_snapshot **out);

/**
 * @brief Number of segments in a snapshot.
 * @param[in]  snapshot The snapshot.
 * @param[out] count    Receives the count.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument.
 * @par Thread safety
 * Safe from any thread; a snapshot never changes.
 */
DAO_API dao_status dao_snapshot_segment_count(const dao_snapshot *snapshot, size_t *count);

/**
 * @brief One segment of a snapshot, in address order.
 * @param[in]     snapshot The snapshot.
 * @param[in]     index    0 .. count-1.
 * @param[in,out] info     Caller's struct with `struct_size` set; the
 *                         fields this version knows are written, nothing
 *                         past them (see ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, @p index out of range, or
 *                                  `struct_size` smaller than this version's
 *                                  struct or larger than 65536 (64 KiB);
 *                                  nothing is written.
 * @par Thread safety
 * Safe from any thread.
 */
DAO_API dao_status dao_snapshot_segment(const dao_snapshot *snapshot, size_t index,
                                        dao_segment_info *info);

/**
 * @brief One block of a segment of a snapshot, in address order.
 * @param[in]     snapshot The snapshot.
 * @param[in]     segment  Segment index.
 * @param[in]     index    Block index in the segment.
 * @param[in,out] info     Caller's struct with `struct_size` set; the
 *                         fields this version knows are written, nothing
 *                         past them (see ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, an index out of range, or
 *                                  `struct_size` smaller than this version's
 *                                  struct or larger than 65536 (64 KiB);
 *                                  nothing is written.
 * @par Thread safety
 * Safe from any thread.
 */
DAO_API dao_status dao_snapshot_block(const dao_snapshot *snapshot, size_t segment, size_t index,
                                      dao_block_info *info);

/**
 * @brief Destroy a snapshot.
 * @param[in] snapshot The snapshot; NULL does nothing.
 * @retval DAO_OK                   Destroyed (or NULL).
 * @retval DAO_ERR_INVALID_ARGUMENT Not a live snapshot handle; nothing freed.
 * @par Thread safety
 * No call may use @p snapshot concurrently or afterwards.
 */
DAO_API dao_status dao_snapshot_destroy(dao_snapshot *snapshot);

/**
 * @brief The allocator's segments, blocks, statistics and config as JSON.
 *
 * Works like snprintf: writes at most @p capacity bytes including the
 * terminating NUL, and always sets @p length to the full length (without
 * the NUL). Call with a NULL buffer to learn the length; the allocator may
 * change between two calls, so loop until @p length < @p capacity.
 * @param[in]  a        The allocator ("caching").
 * @param[out] buffer   Caller's buffer, or NULL when @p capacity is 0.
 * @param[in]  capacity Bytes available in @p buffer.
 * @param[out] length   Receives the length of the whole document.
 * @retval DAO_OK                   Written (possibly truncated: compare).
 * @retval DAO_ERR_INVALID_ARGUMENT @p a or @p length is NULL, or @p buffer
 *                                  is NULL with @p capacity > 0.
 * @retval DAO_ERR_UNSUPPORTED      The strategy keeps no segments.
 * @par Thread safety
 * As dao_allocator_free().
 */
DAO_API dao_status dao_allocator_snapshot_json(dao_allocator *a, char *buffer, size_t capacity,
                                               size_t *length);

/**
 * @brief Destroy an allocator and give all its memory back to the system.
 *
 * Refused while blocks are live, so that no memory in use is lost: free them
 * first. "caching" first waits for work queued on the streams of freed
 * blocks (a stream-ordered free). The place default allocators
 * (dao_place_allocator()) cannot be destroyed.
 *
 * @param[in] a The allocator; invalid after ::DAO_OK.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL or a place default.
 * @retval DAO_ERR_BUSY             Blocks are still live; the message says
 *                                  how many and how many bytes. Nothing
 *                                  was changed.
 * @retval DAO_ERR_INVALID_STATE    Called from a host function
 *                                  (dao_launch_host_func()) of a stream that
 *                                  a "caching" @p a orders memory on: the
 *                                  destroy would wait for that stream, so
 *                                  for the function itself. Nothing was
 *                                  changed; destroy it from another thread.
 * @par Thread safety
 * No other call may use @p a concurrently or afterwards.
 */
DAO_API dao_status dao_allocator_destroy(dao_allocator *a);

#ifdef __cplusplus
}
#endif

#endif /* DAO_ALLOCATOR_H */
