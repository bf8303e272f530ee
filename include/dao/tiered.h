/**
 * @file tiered.h
 * @brief Tiered pools: a device memory budget backed by a host tier, with a
 *        kernel queue whose future accesses decide what to evict.
 *
 * A program whose tensors do not all fit in device memory creates tensors
 * (sizes only) and submits *kernels*: host functions with their input and
 * output tensors. Submitting returns at once; an executor thread runs the
 * kernels in submission order. Before each kernel it makes every tensor of
 * the kernel resident in the device budget — allocating, evicting other
 * tensors to the host tier when there is no room, and fetching back what was
 * evicted — then calls the kernel with the device pointers, then frees the
 * tensors that no queued kernel uses any more.
 *
 * Every submit advances a logical clock and records each access (tensor,
 * time, read or write), so the executor knows the *future*: the default
 * policy, `belady`, evicts what is next used furthest ahead (never again
 * first). The device budget is managed as one contiguous range, and eviction
 * opens a contiguous run of blocks large enough for the request.
 *
 * Copies run asynchronously on their own streams (device to host, host to
 * device), ordered against the compute stream with events; the inputs of the
 * next `prefetch` kernels are fetched ahead while the current kernel runs,
 * when that evicts nothing needed sooner.
 *
 * Config keys (`key=value,...`):
 * - `policy`: `belady` (default), `lru`, `size_aware` (bytes weighed
 *   against the distance to the next use), or `callback` (see
 *   dao_tiered_set_score_callback()).
 * - `prefetch` (default 2): kernels ahead whose inputs are fetched early;
 *   0 turns prefetching off.
 * - `host_budget` (default 0 = no limit): most bytes in the host tier.
 * - `staging_buffers` (default 4) and `staging_chunk` (default 1MiB): with a
 *   pageable (CPU) host tier, copies go through this many pinned buffers per
 *   direction, allocated with the pool, filled and drained by a worker thread
 *   per direction while the DMAs run; `staging_buffers=0` copies straight
 *   from pageable memory, which blocks the executor in each copy.
 * - `inline_copy` (default 64KiB, 0 to 256MiB): with staging, a copy of at
 *   most this many bytes is made by the executor itself, at once (after any
 *   staged copy it could overtake), instead of by a staging thread (a
 *   hand-off costs more than a small copy); 0: never.
 * - `link_bandwidth` (SIM device only; default: the SIM cost profile's pinned
 *   rate, else 0 = unlimited): DMA copies between the device and pinned
 *   memory take bytes / bandwidth seconds, e.g. `16GB/s` or `25GiB/s`.
 * - `pageable_to_device`, `pageable_to_host` (SIM device only; default: the
 *   profile's, else 0 = not modelled): copies from and to pageable memory
 *   take bytes / rate and block their caller (staging fills and drains its
 *   buffers at these rates).
 * - `sim_host` (SIM device only): `pageable` (default) or `pinned`, what the
 *   CPU host tier stands for.
 * - `idle_trim` (default `0` = never): once the queue has been empty this
 *   long (`500ms`, `2s`, `100us`, `1min`; 1 ms to 24 hours), the executor
 *   gives the device range back as dao_tiered_trim() does, so memory the
 *   program allocates outside the pool while it idles finds room; the next
 *   kernel takes the range again. When the host tier has no room
 *   (`host_budget`) nothing moves and the pool keeps the range until it has
 *   run more work.
 */
#ifndef DAO_TIERED_H
#define DAO_TIERED_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "place.h"
#include "status.h"
#include "stream.h"

/** Opaque tiered pool handle. */
typedef struct dao_tiered dao_tiered;
/** Opaque tensor handle (one tensor of a tiered pool). */
typedef struct dao_tensor dao_tensor;

/** Where a tensor's data is. */
typedef enum dao_tensor_state {
  DAO_TENSOR_UNINITIALIZED = 0, /**< Never written: no memory anywhere. */
  DAO_TENSOR_ON_DEVICE = 1,     /**< Resident in the device budget. */
  DAO_TENSOR_ON_HOST = 2,       /**< Evicted to (or written into) the host tier. */
  DAO_TENSOR_IN_TRANSIT = 3     /**< Being copied between the tiers. */
} dao_tensor_state;

/**
 * @brief A kernel: called by the executor thread with the device pointers of
 *        its tensors, in the order they were submitted, and the compute
 *        stream. It may queue device work on @p stream (it is waited for
 *        before the tensors move), or compute directly on SIM memory.
 * @return ::DAO_OK, or any other status to report failure: the pool enters
 *         a failed state that dao_tiered_synchronize() reports.
 *
 * Reentrancy: a kernel runs on the pool's executor thread, with the pool's
 * lock released (tested pair by pair in tests/reliability/test_reentrancy.c):
 * - allowed: dao_kernel_submit(), dao_tensor_write(), dao_tensor_create(),
 *   dao_tensor_release() (they queue work; it runs after this kernel),
 *   dao_tensor_get_state() and dao_tiered_get_stats() of its own pool; any
 *   call on another pool (unless that pool's kernels wait for this one);
 *   dao_stream_synchronize() of @p stream, dao_launch_host_func() and copies
 *   on it; allocators;
 * - ::DAO_ERR_INVALID_STATE with a message, nothing done:
 *   dao_tiered_synchronize(), dao_tensor_read() and dao_tiered_destroy() of
 *   its own pool (they would wait for this kernel), dao_stream_destroy() of
 *   @p stream (the pool owns it). A host function the kernel queues on
 *   @p stream gets the same for the same three pool calls.
 */
typedef dao_status (*dao_kernel_fn)(void *user_data, void *const *inputs, size_t input_count,
                                    void *const *outputs, size_t output_count, dao_stream stream);

/** What a scoring callback learns of one tensor that could be evicted. */
typedef struct dao_tensor_access_info {
  size_t struct_size;       /**< sizeof(dao_tensor_access_info). */
  const dao_tensor *tensor; /**< The tensor. */
  size_t bytes;             /**< Its size. */
  uint64_t now;             /**< Logical time of the kernel being prepared. */
  uint64_t last_use;        /**< Logical time of its last use so far. */
  uint64_t next_use;        /**< Next queued use, or UINT64_MAX if none. */
  uint64_t queued_uses;     /**< Queued kernels that use it. */
  int dirty;                /**< 1 if the host tier has no current copy. */
} dao_tensor_access_info;

/**
 * @brief Scores a candidate for eviction (policy `callback`): the executor
 *        evicts the contiguous run of blocks with the highest total score.
 *
 * Reentrancy: called on the executor thread with the pool's lock held
 * (tested pair by pair in tests/reliability/test_reentrancy.c):
 * - allowed: calls that take no pool's lock: allocators, streams and events,
 *   dao_status_string(), dao_last_error();
 * - ::DAO_ERR_INVALID_STATE with a message, nothing done: every
 *   dao_tiered_*, dao_tensor_* and dao_kernel_submit() call, on this pool
 *   (its lock is held) and on any other (taking a second pool's lock would
 *   invert the lock order), dao_tiered_create() included.
 */
typedef double (*dao_score_fn)(void *user_data, const dao_tensor_access_info *info);

/** Statistics of a tiered pool (size-tagged; may grow at its end). */
typedef struct dao_tiered_stats {
  size_t struct_size;          /**< In: sizeof(dao_tiered_stats). */
  uint64_t kernels_submitted;  /**< Kernels submitted. */
  uint64_t kernels_run;        /**< Kernels run. */
  uint64_t evictions;          /**< Tensors copied device → host to make room. */
  uint64_t bytes_evicted;      /**< Bytes copied device → host. */
  uint64_t fetches;            /**< Tensors copied host → device. */
  uint64_t bytes_fetched;      /**< Bytes copied host → device. */
  uint64_t prefetches;         /**< Fetches started ahead of their kernel. */
  uint64_t prefetches_in_time; /**< ... that had completed when it started. */
  uint64_t stall_ns;           /**< Time the executor waited for data: for copies
                                    before a kernel, for a copy from pageable
                                    memory that blocked it, for copies to
                                    drain (compaction, writes, reads). */
  uint64_t device_bytes;       /**< Bytes resident in the device budget now. */
  uint64_t peak_device_bytes;  /**< Peak of device_bytes. */
  uint64_t host_bytes;         /**< Bytes in the host tier now. */
  uint64_t peak_host_bytes;    /**< Peak of host_bytes. */
  uint64_t tensors_live;       /**< Tensors not yet freed. */
  uint64_t device_range_bytes; /**< Device memory the pool holds now: its
                                    budget's range, or 0 once given back
                                    (dao_tiered_trim(), `idle_trim`) until
                                    the next kernel takes it again. */
  uint64_t trims;              /**< Times the range was given back, by
                                    dao_tiered_trim() or `idle_trim`. */
  uint64_t idle_trims;         /**< ... of which by `idle_trim`. */
} dao_tiered_stats;

/**
 * The link between the tiers of a tiered pool: what was copied each way,
 * how long the copies took, and how much of that time the executor did not
 * wait for (size-tagged; may grow at its end). Read by
 * dao_tiered_get_link_stats().
 *
 * The copy time of a direction is the time during which at least one copy
 * that way was under way (from its first byte to its last, staging
 * included), so bytes / time is the rate the link achieved while busy.
 */
typedef struct dao_tiered_link_stats {
  size_t struct_size;             /**< In: sizeof(dao_tiered_link_stats). */
  uint64_t bytes_to_device;       /**< Bytes copied host → device: the
                                       fetches, and the data of
                                       dao_tensor_write() that went
                                       straight to the device (the excess
                                       over ::dao_tiered_stats::bytes_fetched). */
  uint64_t bytes_to_host;         /**< Bytes copied device → host (evictions). */
  uint64_t copies_to_device;      /**< Tensors copied host → device (fetches
                                       and writes, as bytes_to_device). */
  uint64_t copies_to_host;        /**< Tensors copied device → host. */
  uint64_t copy_ns_to_device;     /**< Time a copy host → device was under way. */
  uint64_t copy_ns_to_host;       /**< Time a copy device → host was under way. */
  uint64_t copy_ns;               /**< Time any copy was under way (the union). */
  uint64_t stall_ns;              /**< Time the executor waited for data
                                       (::dao_tiered_stats::stall_ns). */
  uint64_t kernel_ns;             /**< Time the executor spent in kernels. */
  uint64_t hidden_ns;             /**< copy_ns - stall_ns (0 if negative): copy
                                       time the executor did not wait for;
                                       hidden_ns / copy_ns is the fraction
                                       hidden. */
  uint64_t to_device_bytes_per_s; /**< bytes_to_device / copy_ns_to_device
                                       (0 without copies). */
  uint64_t to_host_bytes_per_s;   /**< bytes_to_host / copy_ns_to_host. */
  uint64_t staged_bytes;          /**< Bytes copied through staging buffers. */
  uint64_t staging_bytes;         /**< Bytes of pinned staging buffers held. */
  int host_pageable;              /**< 1: the host tier is pageable memory. */
  int staged;                     /**< 1: its copies go through staging buffers. */
} dao_tiered_link_stats;

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Create a tiered pool.
 * @param[in]  device        The device place (CUDA or SIM).
 * @param[in]  host          The host tier (CPU or CUDA pinned).
 * @param[in]  device_budget Bytes of device memory the pool may use (> 0);
 *                           taken from the device at creation
 *                           (dao_tiered_trim() gives it back). Rounded
 *                           down, never up: to whole 512-byte blocks (256
 *                           bytes under 512), so a budget equal to the
 *                           device's free memory fits.
 * @param[in]  config        See the file comment; NULL or "" for defaults.
 * @param[out] out           Receives the pool, owned by the caller until
 *                           dao_tiered_destroy().
 * @retval DAO_OK                   Created; the executor thread runs.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL @p out, a zero budget, a place of
 *                                  the wrong kind, or a bad config.
 * @retval DAO_ERR_NO_DEVICE        A place's device does not exist.
 * @retval DAO_ERR_OUT_OF_MEMORY    The budget does not fit on the device
 *                                  (the message gives the bytes asked for).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tiered_create(dao_place device, dao_place host, size_t device_budget,
                                     const char *config, dao_tiered **out);

/**
 * @brief Set the scoring function of policy `callback`.
 * @param[in] pool      The pool (created with `policy=callback`).
 * @param[in] score     The function; must not be NULL.
 * @param[in] user_data Passed to @p score.
 * @retval DAO_OK                   Set.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument.
 * @retval DAO_ERR_INVALID_STATE    The pool's policy is not `callback`, or
 *                                  kernels were already submitted.
 * @par Thread safety
 * Call before the first submit.
 */
DAO_API dao_status dao_tiered_set_score_callback(dao_tiered *pool, dao_score_fn score,
                                                 void *user_data);

/**
 * @brief Create a tensor of @p bytes; nothing is allocated until it is
 *        written or a kernel uses it.
 * @param[in]  pool  The pool.
 * @param[in]  bytes Size (> 0 and no larger than the device budget).
 * @param[out] out   Receives the tensor; the caller holds it until
 *                   dao_tensor_release().
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument or a zero size.
 * @retval DAO_ERR_OUT_OF_MEMORY    Larger than the device budget.
 * @retval DAO_ERR_INVALID_STATE    The pool has failed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tensor_create(dao_tiered *pool, size_t bytes, dao_tensor **out);

/**
 * @brief Copy @p bytes from host memory into a tensor, in kernel order: the
 *        write happens after every kernel already submitted that uses the
 *        tensor, and before any submitted later. Returns once @p src has been
 *        copied (it may be reused at once).
 *
 * The data lands in the host tier; when the write runs, it also goes
 * straight to the device if that is free: the next queued use of the
 * tensor is a kernel's and the tensor has device memory or a free block
 * fits it (nothing is evicted for it). Then the kernel finds it there
 * instead of fetching it; the copy counts in
 * ::dao_tiered_link_stats::bytes_to_device, not as a fetch. A write whose
 * next use is not yet submitted, or is a read, stays on the host.
 * @param[in] tensor A tensor the caller holds.
 * @param[in] src    Host memory of @p bytes.
 * @param[in] bytes  Must equal the tensor's size.
 * @retval DAO_OK                   Written (queued in order).
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a size mismatch, or a
 *                                  released tensor.
 * @retval DAO_ERR_OUT_OF_MEMORY    The host tier is full, or the host has
 *                                  no memory for the write's bookkeeping;
 *                                  nothing was queued or changed.
 * @retval DAO_ERR_INVALID_STATE    The pool has failed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tensor_write(dao_tensor *tensor, const void *src, size_t bytes);

/**
 * @brief Copy a tensor into host memory, after every kernel submitted so far
 *        that writes it has run (waits for them).
 *
 * A failed pool still reads, so that its data can be saved (for example into
 * a new pool): the kernels after the failure did not run, so the read gives
 * the data as the last kernel that ran left it.
 * @param[in]  tensor A tensor the caller holds.
 * @param[out] dst    Host memory of @p bytes.
 * @param[in]  bytes  Must equal the tensor's size.
 * @retval DAO_OK                   Read.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a size mismatch, or a
 *                                  released tensor.
 * @retval DAO_ERR_INVALID_STATE    The tensor was never written, or holds
 *                                  no data because the pool failed before
 *                                  its first write ran (the message says),
 *                                  or the call comes from a kernel of the
 *                                  tensor's pool (::dao_kernel_fn).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tensor_read(dao_tensor *tensor, void *dst, size_t bytes);

/**
 * @brief Where a tensor's data is now (a snapshot; it may change at once).
 * @param[in]  tensor The tensor.
 * @param[out] state  Receives the state.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument or a released tensor.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tensor_get_state(const dao_tensor *tensor, dao_tensor_state *state);

/**
 * @brief Drop the caller's handle. The tensor's memory is freed once the
 *        last queued kernel that uses it has run, and then its record is
 *        kept for reuse, so a pool that creates temporary tensors stays
 *        bounded. The handle must not be used again: a use after release is
 *        refused (::DAO_ERR_INVALID_ARGUMENT, "already released") until the
 *        record is reused by a later dao_tensor_create(), which happens only
 *        after at least 256 more tensors of the pool were released.
 * @param[in] tensor The tensor.
 * @retval DAO_OK                   Released.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or an already released tensor.
 * @retval DAO_ERR_OUT_OF_MEMORY    No host memory for the release's record
 *                                  in the pool's queue. Nothing changed:
 *                                  the tensor and its data stay valid;
 *                                  release it again later.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tensor_release(dao_tensor *tensor);

/**
 * @brief Say that a tensor's data is needed by no use after those already
 *        submitted, while keeping the handle (issue 21). The kernels, reads
 *        and writes queued so far still see its data; once they have run
 *        the tensor no longer counts as live: evicting it copies nothing
 *        back to the host tier (its device copy is dropped), as for a
 *        released tensor. A later dao_tensor_write() or a kernel that has
 *        it as an output gives it new data and makes it live again. Until
 *        then dao_tensor_read() refuses it (::DAO_ERR_INVALID_STATE, "holds
 *        no data") and a kernel that reads it sees undefined contents.
 *        Retiring a retired tensor is allowed and changes nothing.
 * @param[in] tensor A tensor the caller holds; still owned by the caller
 *                   (dao_tensor_release() drops it).
 * @retval DAO_OK                   Retired.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL, a handle that is not a tensor, or
 *                                  a released tensor; nothing changed.
 * @retval DAO_ERR_INVALID_STATE    Called from a scoring callback; nothing
 *                                  changed.
 * @par Thread safety
 * Safe to call from any thread; ordered with the calls of other threads
 * on the same pool as they take its lock. Refused inside a scoring
 * callback, like every call on the pool.
 */
DAO_API dao_status dao_tensor_retire(dao_tensor *tensor);

/**
 * @brief Submit a kernel; returns at once.
 *
 * A tensor may appear in both lists (read and written). All tensors must
 * belong to @p pool and be held by the caller, and together fit in the
 * device budget.
 * @param[in] pool         The pool.
 * @param[in] fn           The kernel; must not be NULL.
 * @param[in] user_data    Passed to @p fn; must stay valid until it has run.
 * @param[in] inputs       Tensors read (may be NULL when @p input_count is 0).
 * @param[in] input_count  Number of inputs.
 * @param[in] outputs      Tensors written.
 * @param[in] output_count Number of outputs.
 * @retval DAO_OK                   Queued.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a released tensor or a
 *                                  tensor of another pool.
 * @retval DAO_ERR_OUT_OF_MEMORY    The kernel's tensors cannot fit in the
 *                                  device budget at once (message: sizes),
 *                                  or the host has no memory for the
 *                                  submission's bookkeeping. Either way the
 *                                  kernel was not queued and nothing changed:
 *                                  the call may be repeated.
 * @retval DAO_ERR_INVALID_STATE    The pool has failed.
 * @par Thread safety
 * Safe to call from any thread; kernels run in the order the calls return.
 */
DAO_API dao_status dao_kernel_submit(dao_tiered *pool, dao_kernel_fn fn, void *user_data,
                                     dao_tensor *const *inputs, size_t input_count,
                                     dao_tensor *const *outputs, size_t output_count);

/**
 * @brief Wait until every submitted kernel has run, and the copies between
 *        the tiers that they caused (evictions, prefetches) have finished:
 *        every tensor is then on the device or on the host, none in transit.
 * @param[in] pool The pool.
 * @retval DAO_OK                   All ran.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a pool.
 * @retval DAO_ERR_INVALID_STATE    The pool failed: a kernel returned an error
 *                                  or the host tier was full; the message
 *                                  says which kernel (its submission number)
 *                                  and what happened. No data was lost:
 *                                  dao_tensor_read() still works. Or the
 *                                  call comes from a kernel of this pool
 *                                  (::dao_kernel_fn): nothing waited.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tiered_synchronize(dao_tiered *pool);

/**
 * @brief Give the pool's device memory back: wait until every kernel
 *        submitted so far has run, move every resident tensor to the host
 *        tier (copying those whose host copy is stale), and return the
 *        device budget's memory to the device place's allocator, where the
 *        rest of the program can use it. The pool takes the budget again
 *        from that allocator when a kernel next needs it, and fetches its
 *        tensors back as they are used.
 *
 * A pool holds its budget as one range of the device place's allocator
 * from dao_tiered_create() on (docs/tiered.md says why); call this between
 * phases of a program that needs the card for something else meanwhile,
 * or let the pool do it when idle with the config key `idle_trim`.
 * @param[in] pool The pool.
 * @retval DAO_OK                   Trimmed: it holds no device memory now.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a pool.
 * @retval DAO_ERR_OUT_OF_MEMORY    The host tier has no room (`host_budget`)
 *                                  for the tensors that live on the device
 *                                  alone; nothing was moved. Or the host
 *                                  refused a buffer part way: the tensors
 *                                  moved so far are on the host, the rest
 *                                  on the device, no data lost (message).
 * @retval DAO_ERR_INVALID_STATE    The pool has failed (its data stays
 *                                  readable), or the call comes from a kernel
 *                                  of this pool (::dao_kernel_fn): nothing
 *                                  was done.
 * @par Thread safety
 * Safe to call from any thread. If the device has no room for the budget
 * when a later kernel needs it, the pool fails (dao_tiered_synchronize()
 * says so; no data is lost).
 */
DAO_API dao_status dao_tiered_trim(dao_tiered *pool);

/**
 * @brief Read the statistics of a pool.
 * @param[in]     pool  The pool.
 * @param[in,out] stats Caller's struct with `struct_size` set; the fields this
 *                      version knows are written, nothing past them (the
 *                      rule of size-tagged structs is written at
 *                      ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, not a pool, or
 *                                  `struct_size` smaller than this version's
 *                                  struct or larger than 65536 (64 KiB);
 *                                  nothing is written.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_tiered_get_stats(dao_tiered *pool, dao_tiered_stats *stats);

/**
 * @brief Read what a pool has copied between its tiers, and how long that
 *        took (::dao_tiered_link_stats).
 * @param[in]     pool  The pool.
 * @param[in,out] stats Caller's struct with `struct_size` set; the fields this
 *                      version knows are written, nothing past them (the
 *                      rule of size-tagged structs is written at
 *                      ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, not a pool, or
 *                                  `struct_size` smaller than this version's
 *                                  struct or larger than 65536 (64 KiB);
 *                                  nothing is written.
 * @retval DAO_ERR_INVALID_STATE    Called from a scoring callback
 *                                  (::dao_score_fn); nothing is written.
 * @par Thread safety
 * Safe to call from any thread, and from a kernel of the pool.
 */
DAO_API dao_status dao_tiered_get_link_stats(dao_tiered *pool, dao_tiered_link_stats *stats);

/**
 * @brief Stop the executor after the queued kernels (or at once if the pool
 *        failed), free every tensor and the device budget. Always succeeds
 *        for a valid pool; tensor handles become invalid.
 * @param[in] pool The pool.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a pool.
 * @retval DAO_ERR_INVALID_STATE    Called from a kernel of this pool
 *                                  (::dao_kernel_fn); nothing was destroyed.
 * @par Thread safety
 * No other call may use the pool or its tensors concurrently or afterwards.
 */
DAO_API dao_status dao_tiered_destroy(dao_tiered *pool);

#ifdef __cplusplus
}
#endif

#endif /* DAO_TIERED_H */
