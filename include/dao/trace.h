/**
 * @file trace.h
 * @brief Memory history: recording every allocator's events to a file, and
 *        an out-of-memory observer (issue 18).
 *
 * A recording writes the history of every allocator of the process (those
 * of dao_allocator_create(), the place defaults behind dao_alloc(), and the
 * strategies under recycle and tiered pools and partitioned memory) to one
 * file of JSON Lines, the format of docs/trace-format.md (version 1):
 * allocations, frees, stream uses, memory taken from and given back to the
 * system (`map`, `unmap`), out-of-memory failures and trims, each with a
 * monotonic timestamp, sizes, stream, place and, when asked for, the
 * caller's stack. `dao replay`, `dao plan` and `dao view` read it.
 *
 * How it stays cheap: an allocating thread writes a 64-byte binary record
 * into its own fixed ring (one atomic add for the global order, no lock,
 * no system call, no allocation after its first record) and a writer
 * thread, at the lowest priority, formats and writes the lines. A full
 * ring drops records and counts them (a `lost` record in the file): the
 * allocating thread never waits. The writer flushes whole lines every
 * `flush_ms`, so a process that is killed leaves a file readable up to its
 * last flush; a clean stop (dao_trace_stop(), or the process's exit) writes
 * an `end` record. With no recording running, an allocator call pays one
 * predictable branch on a global flag.
 *
 * The environment variable `DAO_TRACE=path` starts a recording when the
 * library is loaded, with the options of `DAO_TRACE_OPTIONS`
 * (docs/environment.md).
 */
#ifndef DAO_TRACE_H
#define DAO_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "allocator.h"
#include "export.h"
#include "status.h"
#include "stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Start recording every allocator's history to a file.
 * @param[in] path    The file, created or truncated; `%p` in it is replaced
 *                    by the process id. Copied.
 * @param[in] options `key=value,...`, NULL or "" for the defaults. Keys:
 *   - `stacks` (default false): record the caller's stack with every
 *     allocation and free (backtrace(); symbolized by the writer thread
 *     with dladdr, written once per distinct stack as a `stack` record).
 *     Costs about a microsecond per call.
 *   - `depth` (default 16, 1 to 64): frames per stack.
 *   - `ring` (default 4MiB, 4 KiB to 1 GiB): bytes of each recording
 *     thread's ring (64 bytes per record, rounded down to a power of two
 *     records), taken at the thread's first record. Larger rides out
 *     longer bursts or a writer that gets less CPU. A ring lives as long as
 *     the process; when its thread ends, the next new thread takes it
 *     over, so the memory is that many rings as threads recorded at once.
 *   - `flush_ms` (default 100, 1 to 60000): the writer writes what it has
 *     formatted at least this often.
 *   - `format` (default `binary`): `binary` writes the frequent records
 *     (alloc, free, use, map, unmap, trim) as fixed 48-byte binary records
 *     and the rest as JSON lines, framed (docs/trace-format.md, "The binary
 *     encoding"): the writer keeps up with tens of millions of records a
 *     second. `jsonl` writes every record as a JSON line (grep, jq); the
 *     writer formats text, about ten times the work, and drops records
 *     (counted) when a program allocates faster than it formats.
 *     `dao convert` turns the first into the second.
 *   - `clock` (default `counter`): what stamps each record. `counter`: the
 *     CPU's time-stamp counter (converted to CLOCK_MONOTONIC nanoseconds by
 *     the writer) where Linux uses it as its clock, else CLOCK_MONOTONIC;
 *     `monotonic`: CLOCK_MONOTONIC always (slower to read).
 * The threads' records are merged in stamp order: a block's free always
 * comes before its next allocation, whichever threads made them.
 * @retval DAO_OK                   Recording.
 * @retval DAO_ERR_INVALID_ARGUMENT @p path is NULL or empty, cannot be opened
 *                                  for writing (the message says why), or
 *                                  @p options is malformed or has an unknown
 *                                  key. Nothing started.
 * @retval DAO_ERR_INVALID_STATE    A recording is running already.
 * @retval DAO_ERR_BACKEND          The writer thread could not be started.
 * @retval DAO_ERR_OUT_OF_MEMORY    No host memory for the ring.
 * @par Thread safety
 * Safe to call from any thread, concurrently with any allocator call and
 * with the other dao_trace_* functions. Allocations of other threads made
 * while it runs may or may not be recorded.
 */
DAO_API dao_status dao_trace_start(const char *path, const char *options);

/**
 * @brief Stop the recording: write what the ring holds, an `end` record,
 *        and close the file.
 * Also done at the process's exit (atexit). Waits for the writer thread
 * (milliseconds).
 * @retval DAO_OK                Stopped; the file is complete.
 * @retval DAO_ERR_INVALID_STATE No recording is running.
 * @par Thread safety
 * As dao_trace_start(). Allowed in an out-of-memory callback.
 */
DAO_API dao_status dao_trace_stop(void);

/**
 * @brief Write every record taken so far to the file now, without stopping.
 * Waits until the writer has written them (at most a second, when another
 * thread holds a record half written).
 * @retval DAO_OK                Written.
 * @retval DAO_ERR_INVALID_STATE No recording is running.
 * @par Thread safety
 * As dao_trace_start(). Allowed in an out-of-memory callback.
 */
DAO_API dao_status dao_trace_flush(void);

/**
 * @brief Put a note in the history (a `mark` record), for example the name
 *        of a phase of the program.
 * @param[in] text UTF-8 text, copied. At most 4096 marks wait for the
 *                 writer at a time; past that a mark is written empty.
 * @retval DAO_OK                   Recorded, or nothing to do when no
 *                                  recording runs.
 * @retval DAO_ERR_INVALID_ARGUMENT @p text is NULL.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_trace_mark(const char *text);

/**
 * @brief What the recording has done. Size-tagged: set `struct_size` to
 *        `sizeof(dao_trace_stats)` (see ::dao_allocator_stats for the rule).
 */
typedef struct dao_trace_stats {
  size_t struct_size;     /**< In: sizeof(dao_trace_stats). */
  int active;             /**< 1 while a recording runs. */
  uint64_t records;       /**< Records written to the file (lines after the header). */
  uint64_t lost;          /**< Records dropped because the ring was full. */
  uint64_t pending;       /**< Records in the ring, not yet written. */
  uint64_t bytes_written; /**< Bytes written to the file. */
} dao_trace_stats;

/**
 * @brief Read the recording's counts: of the running recording, or of the
 *        last one after it stopped (all 0 before any).
 * @param[in,out] stats Caller's struct with `struct_size` set.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT @p stats is NULL, or `struct_size` is
 *                                  smaller than this version's struct or
 *                                  larger than 65536; nothing is written.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_trace_get_stats(dao_trace_stats *stats);

/**
 * @brief An out-of-memory observer.
 * @param allocator The allocator that failed (for dao_alloc(): the place's
 *                  default allocator, as dao_place_allocator() gives it).
 * @param size      The bytes asked for.
 * @param stream    The stream asked for (NULL: the default stream).
 * @param user_data What was passed to dao_allocator_set_oom_callback().
 */
typedef void (*dao_oom_callback)(dao_allocator *allocator, size_t size, dao_stream stream,
                                 void *user_data);

/**
 * @brief Call @p fn each time an allocation from @p a fails for lack of
 *        memory, as PyTorch's out-of-memory observer.
 *
 * It runs on the thread that asked, after the allocator has done all it
 * can (released cached memory and tried again), before the allocation
 * returns ::DAO_ERR_OUT_OF_MEMORY; dao_last_error() gives the failure's
 * message inside it and still after it. Inside it a program may read
 * statistics, take a snapshot (dao_allocator_snapshot()), free memory of
 * @p a, use other allocators, and mark, flush or stop the recording, so as
 * to keep the history of the moment it ran out. It must not allocate from
 * @p a, destroy it or set its callback: those calls return
 * ::DAO_ERR_INVALID_STATE there (no deadlock, no recursion). It should not
 * throw (C++) or longjmp.
 * @param[in] a         The allocator (a handle of dao_allocator_create() or
 *                      dao_place_allocator(); the callback of a place's
 *                      default allocator also runs for dao_alloc()).
 * @param[in] fn        The callback; NULL removes it.
 * @param[in] user_data Passed to @p fn; owned by the caller, and must live
 *                      while the callback is set.
 * @retval DAO_OK                   Set (replacing any earlier one).
 * @retval DAO_ERR_INVALID_ARGUMENT @p a is NULL or not an allocator.
 * @retval DAO_ERR_INVALID_STATE    Called from @p a's own callback.
 * @par Thread safety
 * Safe to call from any thread while @p a is alive; an allocation failing
 * meanwhile calls the old callback or the new one.
 */
DAO_API dao_status dao_allocator_set_oom_callback(dao_allocator *a, dao_oom_callback fn,
                                                  void *user_data);

#ifdef __cplusplus
}
#endif

#endif
