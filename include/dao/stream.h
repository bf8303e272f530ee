/**
 * @file stream.h
 * @brief Streams and events: ordered, asynchronous work on a place.
 *
 * A ::dao_stream is an opaque, pointer-sized handle to an ordered queue of
 * work (copies and host functions) on one place:
 * - SIM devices: each stream is a queue run by a worker thread of its own,
 *   so work really is asynchronous and ordering bugs show up in tests;
 * - CUDA places: a `CUstream` of the device's primary context;
 *   dao_stream_wrap() adopts a caller's own `CUstream` / `cudaStream_t`;
 * - CPU: a stream runs each operation at once, on the calling thread.
 *
 * NULL (::DAO_STREAM_DEFAULT) is the default stream: an operation given NULL
 * runs synchronously on the calling thread before the call returns. Events
 * mark a point in a stream; dao_stream_wait_event() orders one stream after
 * another.
 */
#ifndef DAO_STREAM_H
#define DAO_STREAM_H

#include <stddef.h>

#include "export.h"
#include "place.h"
#include "status.h"

/** Opaque stream handle; NULL is the default (synchronous) stream. */
typedef struct dao_stream_st *dao_stream;

/** Opaque event handle. */
typedef struct dao_event_st *dao_event;

/** The default stream of any place. */
#define DAO_STREAM_DEFAULT ((dao_stream)0)

/** A host function run in stream order by dao_launch_host_func(). */
typedef void (*dao_host_fn)(void *user_data);

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Create a stream on a place.
 * @param[in]  place The place (any kind with devices).
 * @param[out] out   Receives the stream, owned by the caller until
 *                   dao_stream_destroy(). Unchanged on failure.
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL, unknown kind, negative
 *                                  device.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @retval DAO_ERR_BACKEND          The driver or a thread could not be
 *                                  created.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_stream_create(dao_place place, dao_stream *out);

/**
 * @brief Adopt a caller's native stream (a `CUstream` on CUDA places).
 *
 * The native stream stays the caller's: dao_stream_destroy() frees only the
 * wrapper, and the caller must keep the native stream alive until then.
 * @param[in]  place  A CUDA place.
 * @param[in]  native The `CUstream` (may be NULL for CUDA's legacy default
 *                    stream).
 * @param[out] out    Receives the wrapper, owned by the caller.
 * @retval DAO_OK                   Wrapped.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL or a bad place.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @retval DAO_ERR_UNSUPPORTED      The place has no native streams (CPU,
 *                                  SIM).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_stream_wrap(dao_place place, void *native, dao_stream *out);

/**
 * @brief The native handle of a stream (`CUstream` on CUDA), NULL elsewhere.
 * @param[in]  stream The stream.
 * @param[out] native Receives the native handle.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p stream or @p native is NULL, or
 *                                  @p stream is not a stream handle.
 * @par Thread safety
 * Safe to call from any thread while @p stream is alive.
 */
DAO_API dao_status dao_stream_native(dao_stream stream, void **native);

/**
 * @brief The place of a stream.
 * @param[in]  stream The stream.
 * @param[out] place  Receives the place.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p stream or @p place is NULL, or not a
 *                                  stream handle.
 * @par Thread safety
 * Safe to call from any thread while @p stream is alive.
 */
DAO_API dao_status dao_stream_place(dao_stream stream, dao_place *place);

/**
 * @brief Wait until all work queued on a stream has run.
 *
 * Waits for the work queued before the call, not for work that other
 * threads queue meanwhile.
 * @param[in] stream The stream; NULL does nothing (the default stream is
 *                   synchronous).
 * @retval DAO_OK                   All work done.
 * @retval DAO_ERR_INVALID_ARGUMENT Not a stream handle.
 * @retval DAO_ERR_INVALID_STATE    Called from a host function running on
 *                                  this stream, which would wait for itself,
 *                                  or from one on a CUDA stream (see
 *                                  dao_launch_host_func()).
 * @retval DAO_ERR_BACKEND          The driver reported an error in the work.
 * @par Thread safety
 * Safe to call from any thread, also concurrently with work being queued.
 */
DAO_API dao_status dao_stream_synchronize(dao_stream stream);

/**
 * @brief Whether all work queued on a stream has run, without waiting.
 * @param[in]  stream The stream; NULL is always idle.
 * @param[out] idle   Receives 1 if idle, 0 if work is pending.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p idle is NULL or not a stream handle.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_stream_query(dao_stream stream, int *idle);

/**
 * @brief Make later work on @p stream wait until @p event has completed.
 *
 * The wait is for the event's last record before this call; recording the
 * event again later does not change what the stream waits for.
 * @param[in] stream The waiting stream; NULL waits on the calling thread.
 * @param[in] event  An event of the same place (or any place for NULL; a
 *                   SIM stream may also wait on an event of another SIM
 *                   device).
 * @retval DAO_OK                   Queued (or, for NULL, waited).
 * @retval DAO_ERR_INVALID_ARGUMENT A handle is invalid, or the event belongs
 *                                  to another place.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_stream_wait_event(dao_stream stream, dao_event event);

/**
 * @brief Destroy a stream after its queued work has run.
 *
 * Waits for the queued work first. A wrapped stream (dao_stream_wrap()) is
 * waited for but stays alive: only the wrapper is freed.
 * @param[in] stream The stream; invalid after ::DAO_OK.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not a stream handle.
 * @retval DAO_ERR_INVALID_STATE    Called from a host function running on
 *                                  this stream (or on a CUDA stream), or
 *                                  @p stream is a tiered pool's kernel
 *                                  stream; nothing destroyed.
 * @par Thread safety
 * No call may use @p stream concurrently or afterwards.
 */
DAO_API dao_status dao_stream_destroy(dao_stream stream);

/**
 * @brief Create an event on a place.
 * @param[in]  place The place.
 * @param[out] out   Receives the event, owned by the caller until
 *                   dao_event_destroy(). A new event counts as completed.
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT @p out is NULL or a bad place.
 * @retval DAO_ERR_NO_DEVICE        The device does not exist.
 * @retval DAO_ERR_BACKEND          The driver failed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_event_create(dao_place place, dao_event *out);

/**
 * @brief Record @p event at the current end of @p stream.
 *
 * The event completes when all work queued on the stream before this call
 * has run. Recording again moves the event to the new point.
 * @param[in] event  The event.
 * @param[in] stream A stream of the event's place, or NULL: the event
 *                   completes at once (on CUDA places it is recorded on
 *                   the legacy default stream and waited for).
 * @retval DAO_OK                   Recorded.
 * @retval DAO_ERR_INVALID_ARGUMENT A handle is invalid or the places differ.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_event_record(dao_event event, dao_stream stream);

/**
 * @brief Whether an event has completed, without waiting.
 * @param[in]  event The event.
 * @param[out] done  Receives 1 if completed, 0 otherwise.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p event or @p done is NULL, or not an
 *                                  event handle.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_event_query(dao_event event, int *done);

/**
 * @brief Wait until an event has completed.
 * @param[in] event The event.
 * @retval DAO_OK                   Completed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not an event handle.
 * @retval DAO_ERR_INVALID_STATE    Called from a host function running on
 *                                  the stream the event was last recorded
 *                                  on, after the function (it would wait
 *                                  for itself), or from one on a CUDA
 *                                  stream; nothing waited.
 * @retval DAO_ERR_BACKEND          The driver failed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_event_synchronize(dao_event event);

/**
 * @brief Destroy an event. Pending work that will complete it is unaffected.
 * @param[in] event The event; invalid after ::DAO_OK.
 * @retval DAO_OK                   Destroyed.
 * @retval DAO_ERR_INVALID_ARGUMENT NULL or not an event handle.
 * @par Thread safety
 * No call may use @p event concurrently or afterwards.
 */
DAO_API dao_status dao_event_destroy(dao_event event);

/**
 * @brief Copy @p bytes from @p src to @p dst in stream order.
 *
 * On SIM and CPU places both pointers must be host-addressable (any SIM, CPU,
 * pinned or managed memory); on CUDA places any pointers the driver knows
 * (unified addressing). With the default stream (NULL) the copy is a plain
 * memcpy on the calling thread, so both must be host-addressable. The
 * memory must stay valid until the copy has run.
 * @param[out] dst    Destination.
 * @param[in]  src    Source.
 * @param[in]  bytes  Bytes to copy; 0 does nothing.
 * @param[in]  stream The stream; NULL copies before returning.
 * @retval DAO_OK                   Queued (or done, for NULL).
 * @retval DAO_ERR_INVALID_ARGUMENT @p dst or @p src is NULL with
 *                                  @p bytes > 0, the ranges overlap, or not
 *                                  a stream handle.
 * @retval DAO_ERR_BACKEND          The driver refused the copy.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_memcpy_async(void *dst, const void *src, size_t bytes, dao_stream stream);

/**
 * @brief Run a host function in stream order, like `cuLaunchHostFunc`.
 *
 * @p fn runs once all earlier work on the stream has run, and later work
 * waits for it to return. On SIM and CUDA streams it runs on a libdao or
 * driver thread; with NULL (and on CPU streams) it runs at once on the
 * calling thread, where every call is as allowed as in the caller.
 *
 * Reentrancy: what a host function on stream S may call (tested pair by
 * pair in tests/reliability/test_reentrancy.c):
 * - allowed: dao_stream_query(), dao_event_record(), dao_stream_wait_event()
 *   on S, dao_memcpy_async() and dao_launch_host_func() on S (queued after
 *   the function), dao_event_query(), dao_event_synchronize() of an event
 *   recorded before the function, creating and destroying other streams and
 *   events, dao_allocator_alloc() / dao_allocator_free() on any allocator
 *   (also while another thread trims it), dao_allocator_trim() (memory
 *   cached for S stays cached: it cannot settle before the function
 *   returns), the functions of a tiered pool other than those below, and
 *   dao_stream_synchronize() of another SIM stream;
 * - ::DAO_ERR_INVALID_STATE with a message, nothing done:
 *   dao_stream_synchronize(S), dao_stream_destroy(S), dao_event_synchronize()
 *   or dao_stream_wait_event(NULL, e) of an event last recorded on S after
 *   the function; dao_tiered_synchronize(), dao_tensor_read() and
 *   dao_tiered_destroy() of a pool whose kernel stream S is;
 *   dao_allocator_destroy() of a "caching" allocator that orders memory on
 *   S (blocks allocated on S, or stream-ordered frees recorded on S), which
 *   would wait for S;
 * - on a CUDA stream, where the driver allows no driver call, every wait:
 *   dao_stream_synchronize() and dao_stream_destroy() of any CUDA stream and
 *   dao_event_synchronize() of any CUDA event. Calls that reach the driver
 *   otherwise (copies, records, allocations on CUDA places) work with the
 *   test driver but may fail with ::DAO_ERR_BACKEND on a real one;
 * - not detected (the caller must avoid it): waiting for S through another
 *   stream: dao_stream_synchronize() of a stream that waits on an event
 *   recorded on S after the function (telling would mean following every
 *   chain of waits between streams at each synchronize).
 * @param[in] stream The stream; NULL runs @p fn before returning.
 * @param[in] fn     The function; must not be NULL.
 * @param[in] user_data Passed to @p fn; owned by the caller.
 * @retval DAO_OK                   Queued (or run, for NULL).
 * @retval DAO_ERR_INVALID_ARGUMENT @p fn is NULL or not a stream handle.
 * @retval DAO_ERR_BACKEND          The driver refused.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_launch_host_func(dao_stream stream, dao_host_fn fn, void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* DAO_STREAM_H */
