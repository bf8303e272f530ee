/**
 * @file interop.h
 * @brief Entry points for frameworks that take an allocator as C function
 *        pointers: PyTorch's `CUDAPluggableAllocator` and CuPy's
 *        `CFunctionAllocator`.
 *
 * The framework calls these functions directly; no C code of the user's is
 * needed. Each serves the place-level default allocator of a device
 * (dao_place_allocator()), so that `DAO_ALLOCATOR_CUDA` /
 * `DAO_ALLOC_CONF_CUDA` choose and tune it and dao_allocator_get_stats() on
 * that allocator shows what the framework holds.
 *
 * **Which place.** Device `n` is `cuda:n`. With the environment variable
 * `DAO_INTEROP_PLACE=sim` it is `sim:n` instead, a simulated device: for
 * tests and what-if runs only (a framework would hand host memory to its
 * GPU kernels). The variable is read once, at the first call of any function
 * of this header; later changes are not seen. Values: unset, empty or `cuda`
 * (the default) and `sim`; anything else makes every call fail with a
 * message that names the variable.
 *
 * **Streams.** The `stream` arguments are native stream handles: a
 * `CUstream` / `cudaStream_t` on CUDA, a ::dao_stream of the SIM device
 * under `DAO_INTEROP_PLACE=sim`. NULL is the legacy default stream. Any
 * other stream is wrapped once (as dao_stream_wrap() does) and the wrapper
 * cached, keyed by the handle and the stream's identity (`cuStreamGetId`;
 * on SIM the handle's own serial number), so that a stream destroyed by its
 * owner whose handle value a new stream then reuses gets a new wrapper and
 * never the old one's cached blocks. Whenever a new wrapper is made, the
 * wrappers of streams the driver no longer knows are retired too, so that
 * their cached memory goes back. The cache is bounded: it holds at most
 * ::DAO_INTEROP_STREAM_CACHE wrappers with no live block; beyond that, the
 * one used least recently is dropped after its stream has run its queued
 * work (its cached blocks then go back to the device). A wrapper with live
 * blocks stays until they are freed, since a freed block must stay ordered
 * after its stream's work. With a driver older than CUDA 12.0 (no
 * `cuStreamGetId`) a reused handle cannot be told apart: destroy a stream
 * only after freeing what was allocated on it and synchronizing it.
 *
 * **Failures.** The framework ABIs have no status: a failed call records
 * its message in dao_last_error() on the calling thread (and
 * dao_interop_get_stats() counts it); malloc then returns NULL, free and
 * record-stream change nothing. No call ever aborts the process.
 *
 * Every function here is safe to call concurrently from any thread.
 */
#ifndef DAO_INTEROP_H
#define DAO_INTEROP_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "place.h"
#include "status.h"

/** Most wrappers of native streams without live blocks that the interop
 *  stream cache keeps (see the file's description). */
#define DAO_INTEROP_STREAM_CACHE 64

/**
 * @brief What the interop entry points hold and have done.
 *
 * Size-tagged: set dao_interop_stats::struct_size to
 * `sizeof(dao_interop_stats)` (the rule of ::dao_allocator_stats).
 */
typedef struct dao_interop_stats {
  size_t struct_size;       /**< In: sizeof(dao_interop_stats). */
  dao_place_kind kind;      /**< Kind of place served: ::DAO_PLACE_CUDA or
                                 ::DAO_PLACE_SIM. */
  uint64_t cached_streams;  /**< Stream wrappers held now (with and without
                                 live blocks). */
  uint64_t idle_streams;    /**< Of those, wrappers without live blocks; at
                                 most ::DAO_INTEROP_STREAM_CACHE. */
  uint64_t streams_wrapped; /**< Wrappers made since the process started. */
  uint64_t streams_evicted; /**< Wrappers dropped because the cache was full. */
  uint64_t streams_retired; /**< Wrappers retired because their stream was
                                 destroyed (its handle named another stream,
                                 or the driver refused it). */
  uint64_t failed_mallocs;  /**< Allocations that returned NULL for a failure
                                 (not for size 0). */
  uint64_t failed_frees;    /**< Frees and record-streams refused (bad pointer,
                                 device or stream). */
} dao_interop_stats;

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief PyTorch's `CUDAPluggableAllocator` allocation function.
 *
 * Allocates @p size bytes from the default allocator of device @p device
 * (`cuda:device`, or `sim:device` under `DAO_INTEROP_PLACE=sim`) in the
 * order of @p stream. Load it with
 * `torch.cuda.memory.CUDAPluggableAllocator(path_to_libdao,
 * "dao_pluggable_malloc", "dao_pluggable_free")`: the signature is PyTorch's
 * `void *(size_t, int, cudaStream_t)` (`ptrdiff_t` and `size_t` have the
 * same width, and PyTorch never passes a size with the top bit set).
 *
 * @param[in] size   Bytes. 0 returns NULL without allocating and without
 *                   recording an error (PyTorch calls it for empty tensors
 *                   and keeps the NULL); negative: NULL and an error.
 * @param[in] device Device index.
 * @param[in] stream The stream the memory will be used on: NULL (legacy
 *                   default stream) or a native stream handle of the device
 *                   (see the file's description).
 * @return The pointer, aligned to at least 256 bytes, owned by the caller
 *         until dao_pluggable_free() (or dao_cupy_free(), or dao_free() on
 *         the place). NULL on failure, with the message in dao_last_error():
 *         a negative size, an unknown or absent device, a stream that is not
 *         a live stream of the device, out of memory (the message tells the
 *         size and what the device holds), a malformed `DAO_INTEROP_PLACE`,
 *         `DAO_ALLOCATOR_<KIND>` or `DAO_ALLOC_CONF_<KIND>`.
 * @par Thread safety
 * Safe to call concurrently with every function of libdao.
 */
DAO_API void *dao_pluggable_malloc(ptrdiff_t size, int device, void *stream);

/**
 * @brief PyTorch's `CUDAPluggableAllocator` free function.
 *
 * Frees a block of dao_pluggable_malloc() or dao_cupy_malloc() in stream
 * order: the block is reused at once for later work on the stream it was
 * allocated on, and on other streams only once that stream has run the work
 * queued before the free (see dao_pluggable_record_stream() for blocks used
 * on several streams).
 *
 * @param[in] ptr    The block; NULL does nothing (and records nothing).
 * @param[in] size   The size given to the allocation; not needed (the block
 *                   knows its size), so any value is accepted.
 * @param[in] device The device the block was allocated on. A block allocated
 *                   here is found whatever @p device says; @p device is used
 *                   for a pointer of the place's allocator that did not come
 *                   through these entry points (dao_alloc()).
 * @param[in] stream The stream the block was allocated on; not needed (the
 *                   block knows its stream), so any value is accepted.
 * A pointer that is not a live block of the device (foreign, already freed,
 * interior) or an unknown device: nothing is freed, the message is recorded
 * in dao_last_error() and counted in dao_interop_stats::failed_frees.
 * @par Thread safety
 * Safe to call concurrently with every function of libdao; @p ptr must not
 * be freed twice concurrently.
 */
DAO_API void dao_pluggable_free(void *ptr, ptrdiff_t size, int device, void *stream);

/**
 * @brief PyTorch's record-stream hook: @p ptr is also used on @p stream.
 *
 * The signature of `CUDAPluggableAllocator::set_record_stream_fn`,
 * `void (void *, cudaStream_t)`, which PyTorch calls for
 * `Tensor.record_stream` where the loaded allocator was given one (the
 * Python class takes only malloc and free; set this hook where the PyTorch
 * build lets you, else `Tensor.record_stream` does nothing and the
 * caller must synchronize the other stream before freeing). After it, the
 * block's free waits for the work queued on @p stream up to the free
 * before the block is reused (dao_allocator_record_stream() on the place's
 * default allocator).
 *
 * @param[in] ptr    A live block of dao_pluggable_malloc() or
 *                   dao_cupy_malloc().
 * @param[in] stream A native stream of the block's device; NULL or the
 *                   block's own stream does nothing.
 * A pointer that is not live, a stream that is not a live stream of the
 * device, or no host memory for the event the free will need: nothing is
 * recorded, the message goes to dao_last_error() and is counted in
 * dao_interop_stats::failed_frees.
 * @par Thread safety
 * Safe to call concurrently with every function of libdao, but not with the
 * free of @p ptr.
 */
DAO_API void dao_pluggable_record_stream(void *ptr, void *stream);

/**
 * @brief CuPy's `CFunctionAllocator` allocation function.
 *
 * `cupy.cuda.memory.CFunctionAllocator(param, malloc_func, free_func,
 * owner)` calls `malloc_func(param, size, device)`.
 *
 * @param[in] param  NULL: allocate on the legacy default stream. Otherwise
 *                   a pointer to a `void *` slot that holds the stream to
 *                   allocate on (a native handle, or NULL), read at every
 *                   call: the caller keeps it equal to CuPy's current stream
 *                   (`cupy.cuda.get_current_stream().ptr`) and keeps the
 *                   slot alive while the allocator is in use. libdao only
 *                   reads it.
 * @param[in] size   Bytes; 0 returns NULL without an error.
 * @param[in] device Device index, as for dao_pluggable_malloc().
 * @return As dao_pluggable_malloc().
 * @par Thread safety
 * Safe to call concurrently with every function of libdao; the slot may be
 * written concurrently only if the caller makes each write of it atomic (one
 * aligned pointer store).
 */
DAO_API void *dao_cupy_malloc(void *param, size_t size, int device);

/**
 * @brief CuPy's `CFunctionAllocator` free function: `free_func(param, ptr,
 *        device)`.
 *
 * As dao_pluggable_free(): the block's own stream orders its reuse, so
 * @p param is not read.
 * @param[in] param  As for dao_cupy_malloc(); not used.
 * @param[in] ptr    The block; NULL does nothing.
 * @param[in] device The device it was allocated on.
 * @par Thread safety
 * As dao_pluggable_free().
 */
DAO_API void dao_cupy_free(void *param, void *ptr, int device);

/**
 * @brief Read what the interop entry points hold and have done.
 *
 * Reading reads `DAO_INTEROP_PLACE` if no entry point has yet.
 * @param[in,out] stats Caller's struct with `struct_size` set.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p stats is NULL, its `struct_size` is
 *                                  wrong (nothing written), or
 *                                  `DAO_INTEROP_PLACE` is malformed.
 * @par Thread safety
 * Safe to call from any thread; the figures are one consistent snapshot.
 */
DAO_API dao_status dao_interop_get_stats(dao_interop_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* DAO_INTEROP_H */
