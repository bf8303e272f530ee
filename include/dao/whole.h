/**
 * @file whole.h
 * @brief Partitioned ("whole") memory: one table of fixed-size entries
 *        spread over the places of a group of ranks, readable and writable
 *        by every rank.
 *
 * A *communicator* (::dao_comm) is a group of ranks, each with a place. It
 * is made either over several places of this process
 * (dao_comm_create_local(): one handle per rank, each used by a thread of
 * its own), or from an MPI communicator by the optional libdao-mpi library
 * (dao/whole_mpi.h: one rank per process). libdao itself does not depend on
 * MPI.
 *
 * A *whole memory object* (::dao_whole) has a total size in bytes and an
 * entry size (its data granularity); an entry is never split between ranks.
 * Each rank owns one contiguous range of whole entries. With `n` entries on
 * `w` ranks, rank `r` owns `n / w` entries, plus one more when
 * `r < n % w`, starting after the entries of the ranks before it; so sizes
 * differ by at most one entry and, with fewer entries than ranks, the last
 * ranks own none. dao_whole_get_partition() reports the range of any rank.
 *
 * Three types, as in WholeGraph's WholeMemory:
 * - ::DAO_WHOLE_CONTINUOUS: every rank sees the whole object as one range of
 *   addresses (dao_whole_get_base()), each part backed by its rank's memory.
 * - ::DAO_WHOLE_CHUNKED: every rank can address every part, but the parts
 *   are separate ranges (dao_whole_get_rank_pointer()).
 * - ::DAO_WHOLE_DISTRIBUTED: each rank addresses only its own part; other
 *   parts are reached by one-sided communication (dao_whole_gather(),
 *   dao_whole_scatter()).
 *
 * Continuous and chunked objects are *mapped*. dao_whole_gather(),
 * dao_whole_scatter(), dao_whole_load() and dao_whole_store() work for every
 * type. Which types a communicator can build on which location is decided
 * by dao_whole_supported(); docs/whole.md has the table.
 *
 * Collective calls (dao_whole_create(), dao_whole_destroy(),
 * dao_whole_load(), dao_whole_store(), dao_comm_barrier()) must be made by
 * every rank of the communicator, in the same order, as with MPI. Each one
 * first compares the call and its arguments across the ranks: ranks that
 * disagree (or are in different collective calls) all get
 * ::DAO_ERR_INVALID_ARGUMENT with a message that names the ranks and the
 * values, instead of waiting for each other; so does every rank when one
 * rank passes a bad argument. A step that fails on some ranks only (a
 * place without room, a file, or host memory for libdao's own bookkeeping
 * running out on one rank) fails the call on every rank alike, with a
 * message that names the failing rank, and every rank releases what it
 * made. A rank that never makes the call, though, leaves the others
 * waiting, as MPI does. One-sided calls (gather, scatter
 * and the queries) involve only the calling rank.
 *
 * Visibility: what a rank writes (scatter, or through a pointer into the
 * object) is seen by the other ranks after the next collective call that
 * they all make, for example dao_comm_barrier().
 */
#ifndef DAO_WHOLE_H
#define DAO_WHOLE_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "place.h"
#include "status.h"

/** Opaque handle to one rank of a communicator. */
typedef struct dao_comm dao_comm;
/** Opaque handle to one rank's view of a whole memory object. */
typedef struct dao_whole dao_whole;

/** Most ranks a communicator made by dao_comm_create_local() may have. */
#define DAO_COMM_LOCAL_MAX_RANKS 1024

/** How the parts of a whole memory object are addressed. The values are
 *  part of the ABI. */
typedef enum dao_whole_type {
  /** One range of addresses over all parts (mapped). */
  DAO_WHOLE_CONTINUOUS = 0,
  /** Every part addressable by every rank, as separate ranges (mapped). */
  DAO_WHOLE_CHUNKED = 1,
  /** Each rank addresses only its own part; the rest by one-sided
   *  communication. */
  DAO_WHOLE_DISTRIBUTED = 2
} dao_whole_type;

/** Where the parts of a whole memory object live. The values are part of
 *  the ABI. */
typedef enum dao_whole_location {
  /** On each rank's own place, as given to the communicator (a SIM device,
   *  a CUDA device, or the CPU). */
  DAO_WHOLE_DEVICE = 0,
  /** In host memory (the CPU place), whatever the ranks' places are. */
  DAO_WHOLE_HOST = 1
} dao_whole_location;

/** What a whole memory object is made of, for dao_whole_create(). Set
 *  `struct_size` to `sizeof(dao_whole_desc)`. */
typedef struct dao_whole_desc {
  size_t struct_size;          /**< In: sizeof(dao_whole_desc). */
  dao_whole_type type;         /**< Continuous, chunked or distributed. */
  dao_whole_location location; /**< Device (each rank's place) or host. */
  size_t total_size;           /**< Bytes of the whole object (> 0). */
  size_t entry_size;           /**< Bytes of one entry (> 0); divides total_size. */
} dao_whole_desc;

/** The entries and bytes one rank owns (size-tagged; may grow at its end).
 *  Set `struct_size` to `sizeof(dao_whole_range)`. */
typedef struct dao_whole_range {
  size_t struct_size; /**< In: sizeof(dao_whole_range). */
  int rank;           /**< The rank this range belongs to. */
  size_t first_entry; /**< Index of its first entry. */
  size_t entry_count; /**< Number of entries (0 when it owns none). */
  size_t byte_offset; /**< first_entry * entry_size. */
  size_t byte_size;   /**< entry_count * entry_size. */
} dao_whole_range;

/** What a whole memory object is, seen from one rank (size-tagged; may grow
 *  at its end). Set `struct_size` to `sizeof(dao_whole_info)`. */
typedef struct dao_whole_info {
  size_t struct_size;          /**< In: sizeof(dao_whole_info). */
  dao_whole_type type;         /**< As created. */
  dao_whole_location location; /**< As created. */
  size_t total_size;           /**< Bytes of the whole object. */
  size_t entry_size;           /**< Bytes of one entry. */
  size_t entry_count;          /**< total_size / entry_size. */
  int rank;                    /**< This rank. */
  int size;                    /**< Ranks of the communicator. */
  dao_place place;             /**< Where this rank's part lives. */
} dao_whole_info;

/** What a communicator is, seen from one rank (size-tagged; may grow at its
 *  end). Set `struct_size` to `sizeof(dao_comm_info)`. */
typedef struct dao_comm_info {
  size_t struct_size;       /**< In: sizeof(dao_comm_info). */
  int rank;                 /**< This rank, 0 .. size - 1. */
  int size;                 /**< Number of ranks. */
  dao_place place;          /**< This rank's place. */
  const char *transport;    /**< "in-process" or "mpi"; a static string. */
  int shares_address_space; /**< 1 when all ranks are in this process. */
  int shares_host_memory;   /**< 1 when all ranks can map each other's
                                 host memory (one process, or MPI ranks on
                                 one node). */
} dao_comm_info;

#ifdef __cplusplus
extern "C" {
#endif

/* --- communicators ------------------------------------------------------ */

/**
 * @brief Create a communicator over several places of this process: rank
 *        `i` has `places[i]`.
 *
 * One handle per rank is written to @p comms. Each rank is meant to be
 * driven by a thread of its own: collective calls block until every rank's
 * handle has made the same call. A place may appear more than once (for
 * example four ranks on the CPU).
 *
 * @param[in]  count  Number of ranks, 1 .. ::DAO_COMM_LOCAL_MAX_RANKS.
 * @param[in]  places @p count places; copied.
 * @param[out] comms  Array of @p count handles that receives one handle per
 *                    rank; each is owned by the caller until
 *                    dao_comm_destroy(). Unchanged on failure.
 * @retval DAO_OK                   Created.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL pointer, @p count out of range,
 *                                  or a place of an unknown kind.
 * @retval DAO_ERR_NO_DEVICE        A place does not exist on this machine
 *                                  (the message names it and says why).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_comm_create_local(int count, const dao_place *places, dao_comm **comms);

/**
 * @brief Destroy one rank's communicator handle.
 *
 * Each rank destroys its own handle. For an in-process communicator this
 * does not wait for the other ranks; for an MPI communicator it frees
 * libdao's duplicate of the MPI communicator (MPI_Comm_free, which MPI
 * defines as collective), and must come before MPI_Finalize.
 *
 * @param[in] comm The handle; NULL is a no-op.
 * @retval DAO_OK                   Destroyed; the handle is gone.
 * @retval DAO_ERR_INVALID_ARGUMENT @p comm is not a live communicator.
 * @retval DAO_ERR_BUSY             Whole memory objects created on this
 *                                  handle still exist (the message says how
 *                                  many). Nothing was changed.
 * @par Thread safety
 * Not concurrently with any other use of the same handle.
 */
DAO_API dao_status dao_comm_destroy(dao_comm *comm);

/**
 * @brief This rank's index in the communicator.
 * @param[in]  comm The handle.
 * @param[out] rank Receives 0 .. size - 1.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument or a handle that is not
 *                                  a live communicator.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_comm_rank(const dao_comm *comm, int *rank);

/**
 * @brief Number of ranks of the communicator.
 * @param[in]  comm The handle.
 * @param[out] size Receives the number of ranks.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument or a handle that is not
 *                                  a live communicator.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_comm_size(const dao_comm *comm, int *size);

/**
 * @brief The place of any rank of the communicator.
 * @param[in]  comm  The handle.
 * @param[in]  rank  0 .. size - 1.
 * @param[out] place Receives the place that rank was created with.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, or
 *                                  @p rank out of range.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_comm_rank_place(const dao_comm *comm, int rank, dao_place *place);

/**
 * @brief Describe a communicator.
 * @param[in]  comm The handle.
 * @param[out] info Receives the description; set `info->struct_size` first.
 *                  Its `transport` string is static. Only the fields this
 *                  version knows are written, nothing past them (the rule
 *                  of size-tagged structs is written at ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, or a
 *                                  `struct_size` smaller than this
 *                                  version's struct or larger than 65536
 *                                  (64 KiB); nothing is written.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_comm_get_info(const dao_comm *comm, dao_comm_info *info);

/**
 * @brief Wait until every rank has called it, and make what each rank wrote
 *        into whole memory objects before it visible to every rank after
 *        it. Collective.
 * @param[in] comm The handle.
 * @retval DAO_OK                   Every rank arrived.
 * @retval DAO_ERR_INVALID_ARGUMENT A dead handle, or the ranks are in
 *                                  different collective calls (every rank
 *                                  gets it; the message names the calls).
 * @retval DAO_ERR_BACKEND          The transport (MPI) failed.
 * @par Thread safety
 * Collective calls on one handle must not run concurrently.
 */
DAO_API dao_status dao_comm_barrier(dao_comm *comm);

/* --- whole memory objects ----------------------------------------------- */

/**
 * @brief Name of a type: "continuous", "chunked" or "distributed".
 * @param type Any value.
 * @return A static string; "unknown" for a value that is not a type.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API const char *dao_whole_type_name(dao_whole_type type);

/**
 * @brief Name of a location: "device" or "host".
 * @param location Any value.
 * @return A static string; "unknown" for a value that is not a location.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API const char *dao_whole_location_name(dao_whole_location location);

/**
 * @brief Whether this communicator can build whole memory of a type on a
 *        location. Not collective: every rank gets the same answer.
 *
 * In-process communicators build every type on host-accessible places (CPU,
 * SIM, CUDA pinned and managed); continuous memory needs places with
 * virtual memory mapping (CPU, SIM). MPI communicators build distributed
 * memory on host-accessible places, and mapped memory in host memory when
 * all ranks are on one node (MPI shared-memory windows). On CUDA devices
 * (every rank on one) chunked and distributed memory are built: in one
 * process over any devices (chunked only where every two of them have peer
 * access, cuDeviceCanAccessPeer), between processes when all ranks are on
 * one node (CUDA IPC); continuous memory where every device has virtual
 * memory management and every two have peer access (the message points to
 * chunked otherwise): in one process this is asked here, between processes
 * each rank's driver answers at dao_whole_create() (every rank alike). No
 * device memory across nodes.
 *
 * @param[in] comm     The handle.
 * @param[in] type     The type.
 * @param[in] location The location.
 * @retval DAO_OK                   Supported.
 * @retval DAO_ERR_UNSUPPORTED      Not supported; the message says why and
 *                                  which type or location would work.
 * @retval DAO_ERR_INVALID_ARGUMENT A dead handle, or an unknown type or
 *                                  location.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_supported(const dao_comm *comm, dao_whole_type type,
                                       dao_whole_location location);

/**
 * @brief Create a whole memory object. Collective.
 *
 * Every rank allocates its part (on its place for ::DAO_WHOLE_DEVICE, in
 * host memory for ::DAO_WHOLE_HOST) and, for mapped types, maps the other
 * ranks' parts. The contents start undefined: fill them through the local
 * pointer, dao_whole_scatter() or dao_whole_load().
 *
 * @param[in]  comm This rank's communicator handle.
 * @param[in]  desc Type, location, total size and entry size; all ranks
 *                  must pass the same values.
 * @param[out] out  Receives this rank's handle of the object, owned by the
 *                  caller until dao_whole_destroy(). NULL on failure.
 * @retval DAO_OK                   Created on every rank.
 * @retval DAO_ERR_INVALID_ARGUMENT On every rank: some rank passed a NULL
 *                                  pointer, a bad `struct_size` (smaller
 *                                  than this version's ::dao_whole_desc or
 *                                  larger than 65536), a zero
 *                                  size, an entry size that does not divide
 *                                  the total size, or an unknown type or
 *                                  location; or the ranks disagree on an
 *                                  argument (the message names the ranks
 *                                  and their values).
 * @retval DAO_ERR_UNSUPPORTED      On every rank: the type cannot be built
 *                                  on that location by this communicator;
 *                                  the message says which would work.
 * @retval DAO_ERR_OUT_OF_MEMORY    On every rank: some rank's place has no
 *                                  room for its part, or some rank ran out
 *                                  of host memory for its bookkeeping (the
 *                                  message names the rank, and the place).
 *                                  No rank keeps anything of the object.
 * @retval DAO_ERR_BACKEND          The transport (MPI) failed.
 * @par Thread safety
 * Collective calls on one communicator handle must not run concurrently.
 */
DAO_API dao_status dao_whole_create(dao_comm *comm, const dao_whole_desc *desc, dao_whole **out);

/**
 * @brief Destroy a whole memory object and free its memory. Collective:
 *        every rank destroys its handle of the same object.
 *
 * Returns on each rank once every rank has stopped using the object, so no
 * rank reads a part that is being freed.
 *
 * @param[in] whole This rank's handle; NULL is a no-op (and is not a
 *                  collective call: then no rank may pass a live handle).
 * @retval DAO_OK                   Destroyed; the handle is gone.
 * @retval DAO_ERR_INVALID_ARGUMENT A dead handle, or (on every rank) the
 *                                  ranks are destroying different objects
 *                                  or are in different collective calls.
 *                                  Nothing was destroyed.
 *
 * A destroy allocates nothing, so it never fails for lack of memory (with a
 * transport handed in, only the transport's own barrier can fail).
 * @par Thread safety
 * Not concurrently with any other use of the object on this rank.
 */
DAO_API dao_status dao_whole_destroy(dao_whole *whole);

/**
 * @brief Describe a whole memory object.
 * @param[in]  whole The handle.
 * @param[out] info  Receives the description; set `info->struct_size`
 *                   first. Only the fields this version knows are written,
 *                   nothing past them (see ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, or a
 *                                  `struct_size` smaller than this
 *                                  version's struct or larger than 65536
 *                                  (64 KiB); nothing is written.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_get_info(const dao_whole *whole, dao_whole_info *info);

/**
 * @brief The entries and bytes a rank owns, by the partition rule in the
 *        file comment.
 * @param[in]  whole The handle.
 * @param[in]  rank  Any rank, 0 .. size - 1.
 * @param[out] range Receives the range; set `range->struct_size` first.
 *                   Only the fields this version knows are written,
 *                   nothing past them (see ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, a
 *                                  `struct_size` smaller than this
 *                                  version's struct or larger than 65536
 *                                  (64 KiB), or @p rank out of range;
 *                                  nothing is written.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_get_partition(const dao_whole *whole, int rank,
                                           dao_whole_range *range);

/**
 * @brief The rank that owns an entry.
 * @param[in]  whole The handle.
 * @param[in]  index Entry index, 0 .. entry_count - 1.
 * @param[out] rank  Receives the owner.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, or
 *                                  @p index out of range.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_entry_rank(const dao_whole *whole, int64_t index, int *rank);

/**
 * @brief This rank's own part: its address and its range. Works for every
 *        type.
 * @param[in]  whole The handle.
 * @param[out] ptr   Receives the address of the first byte of this rank's
 *                   part: memory on its place, host-accessible except on a
 *                   CUDA device, where it is a device address (read and
 *                   write it with driver copies or kernels). NULL when
 *                   the rank owns no entries, except for continuous objects,
 *                   where it is the address the part would start at. Valid
 *                   until dao_whole_destroy().
 * @param[out] range Receives this rank's range; may be NULL. Set
 *                   `range->struct_size` first. Only the fields this version
 *                   knows are written, nothing past them (see
 *                   ::dao_allocator_stats).
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL @p ptr, a dead handle, or a
 *                                  `struct_size` smaller than this
 *                                  version's struct or larger than 65536
 *                                  (64 KiB).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_get_local(const dao_whole *whole, void **ptr, dao_whole_range *range);

/**
 * @brief The address, in this process, of any rank's part of a mapped
 *        (continuous or chunked) object.
 * @param[in]  whole The handle.
 * @param[in]  rank  Any rank, 0 .. size - 1.
 * @param[out] ptr   Receives the address of that rank's first byte (NULL
 *                   when it owns no entries, except for continuous objects).
 *                   On CUDA devices a device address, usable by kernels on
 *                   this rank's device (peer access, or a CUDA IPC mapping
 *                   between processes). Valid until dao_whole_destroy().
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, or
 *                                  @p rank out of range.
 * @retval DAO_ERR_UNSUPPORTED      The object is distributed and @p rank is
 *                                  not this rank: its memory is not mapped
 *                                  here (use dao_whole_gather()).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_get_rank_pointer(const dao_whole *whole, int rank, void **ptr);

/**
 * @brief The address of entry 0 of a continuous object: entry `i` is at
 *        `base + i * entry_size` for every `i`, whichever rank owns it.
 * @param[in]  whole The handle.
 * @param[out] base  Receives the address. Valid until dao_whole_destroy().
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument or a dead handle.
 * @retval DAO_ERR_UNSUPPORTED      The object is chunked or distributed:
 *                                  its parts are not one range (use
 *                                  dao_whole_get_rank_pointer() or
 *                                  dao_whole_gather()).
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_whole_get_base(const dao_whole *whole, void **base);

/**
 * @brief Copy entries, by global index, into a local buffer: entry
 *        `indices[i]` goes to `dst + i * entry_size`. Not collective.
 *
 * Mapped objects are read directly; distributed objects by one-sided
 * communication (MPI_Get on MPI, copies through the in-process transport).
 * Returns when every entry is in @p dst.
 *
 * @param[in]  whole   The handle.
 * @param[in]  indices @p count entry indices, each 0 .. entry_count - 1, in
 *                     any order, repeats allowed. May be NULL when @p count
 *                     is 0.
 * @param[in]  count   Number of entries to copy.
 * @param[out] dst     Host-accessible memory of `count * entry_size` bytes
 *                     (CPU memory, or memory of a SIM place); for an object
 *                     on CUDA devices any memory the driver can copy to
 *                     (host or device: the parts are copied with
 *                     cuMemcpyAsync, one copy per run of consecutive
 *                     indices, and the call waits for them). May be NULL
 *                     when @p count is 0.
 * @retval DAO_OK                   Copied.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, a size
 *                                  that overflows, or an index out of range
 *                                  (the message gives its position and
 *                                  value); then nothing was copied.
 * @retval DAO_ERR_BACKEND          The transport (MPI) failed.
 * @par Thread safety
 * In-process: safe from any thread. MPI: from several threads only when MPI
 * was initialised with MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE.
 * Reading entries that another rank writes at the same time gives either
 * value, or a mix.
 */
DAO_API dao_status dao_whole_gather(dao_whole *whole, const int64_t *indices, size_t count,
                                    void *dst);

/**
 * @brief Copy a local buffer into entries, by global index: `src + i *
 *        entry_size` goes to entry `indices[i]`. Not collective.
 *
 * Mapped objects are written directly; distributed objects by one-sided
 * communication (MPI_Put on MPI). When an index appears more than once,
 * one of its copies wins; which one is not defined. Other ranks see the new values after the next
 * collective call (for example dao_comm_barrier()).
 *
 * @param[in] whole   The handle.
 * @param[in] src     Host-accessible memory of `count * entry_size` bytes;
 *                    for an object on CUDA devices host or device memory
 *                    (driver copies, as for dao_whole_gather()). May be
 *                    NULL when @p count is 0.
 * @param[in] indices @p count entry indices, each 0 .. entry_count - 1.
 *                    May be NULL when @p count is 0.
 * @param[in] count   Number of entries to copy.
 * @retval DAO_OK                   Copied.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a dead handle, a size
 *                                  that overflows, or an index out of range
 *                                  (the message gives its position and
 *                                  value); then nothing was written.
 * @retval DAO_ERR_BACKEND          The transport (MPI) failed.
 * @par Thread safety
 * As dao_whole_gather(). Writes of the same entry by two ranks at once leave
 * either value, or a mix.
 */
DAO_API dao_status dao_whole_scatter(dao_whole *whole, const void *src, const int64_t *indices,
                                     size_t count);

/**
 * @brief dao_whole_gather() called by every rank together: each rank gets
 *        its own entries, `indices[i]` into `dst + i * entry_size`.
 *        Collective.
 *
 * On distributed memory the ranks exchange requests and answers with
 * two-sided collectives, as a hand-written exchange would: one all-to-all
 * of counts, one all-to-all-v of indices and one of the entries
 * (`MPI_Alltoall` and `MPI_Alltoallv` over MPI). Every rank serves the
 * entries it owns, so this is the fast path when all ranks gather at the
 * same time (a training step); dao_whole_gather() stays the one to use when
 * ranks gather on their own schedule (the owner does nothing to serve a
 * one-sided get). On continuous and chunked memory, and over a transport
 * without the all-to-all operations, each rank copies its entries as
 * dao_whole_gather() does; the call is still collective.
 *
 * Ranks may pass different counts and indices (a count of 0 too). Every
 * rank's arguments are checked before anything is exchanged: when any rank
 * passed a bad argument, every rank fails with the same status and a
 * message that names that rank, and nothing was copied anywhere.
 *
 * @param[in]  whole   This rank's handle.
 * @param[in]  indices @p count entry indices, each 0 .. entry_count - 1, in
 *                     any order, repeats allowed. May be NULL when @p count
 *                     is 0.
 * @param[in]  count   Number of entries this rank gathers; over MPI at most
 *                     `INT_MAX / ranks`.
 * @param[out] dst     Host-accessible memory of `count * entry_size` bytes
 *                     (on CUDA devices also device memory, as for
 *                     dao_whole_gather()). May be NULL when @p count is 0.
 * @retval DAO_OK                   Every rank has its entries.
 * @retval DAO_ERR_INVALID_ARGUMENT On every rank: some rank passed a NULL
 *                                  argument, a size that overflows or an
 *                                  index out of range (the message gives
 *                                  the rank, the position and the value),
 *                                  the ranks passed different objects, or
 *                                  they are in different collective calls.
 *                                  Only on this rank: a NULL or dead
 *                                  handle (the others then wait, as in any
 *                                  collective call a rank never makes).
 * @retval DAO_ERR_UNSUPPORTED      On every rank: some rank's count is
 *                                  more than the transport can exchange in
 *                                  one call.
 * @retval DAO_ERR_OUT_OF_MEMORY    On every rank: some rank had no host
 *                                  memory for the exchange's buffers.
 * @retval DAO_ERR_BACKEND          The transport (MPI) failed.
 * @par Thread safety
 * Collective calls on one communicator handle must not run concurrently.
 * Buffers for the exchange are kept with the object between calls (they
 * grow to the largest exchange so far and are freed with the object).
 */
DAO_API dao_status dao_whole_gather_collective(dao_whole *whole, const int64_t *indices,
                                               size_t count, void *dst);

/**
 * @brief dao_whole_scatter() called by every rank together: each rank
 *        writes `src + i * entry_size` to entry `indices[i]`. Collective.
 *
 * On distributed memory the entries travel with two-sided collectives (see
 * dao_whole_gather_collective()) and each owner writes its own part; on
 * mapped memory each rank writes directly. When ranks write the same entry
 * (or one rank writes it twice), one of the values wins; which one is not
 * defined. Every rank sees every rank's writes after the next collective
 * call (dao_comm_barrier()).
 *
 * @param[in] whole   This rank's handle.
 * @param[in] src     Host-accessible memory of `count * entry_size` bytes
 *                    (on CUDA devices also device memory). May be NULL when
 *                    @p count is 0.
 * @param[in] indices @p count entry indices, each 0 .. entry_count - 1.
 *                    May be NULL when @p count is 0.
 * @param[in] count   Number of entries this rank writes; over MPI at most
 *                    `INT_MAX / ranks`.
 * @retval DAO_OK                   Written.
 * @retval DAO_ERR_INVALID_ARGUMENT As dao_whole_gather_collective(); then
 *                                  nothing was written anywhere.
 * @retval DAO_ERR_UNSUPPORTED      As dao_whole_gather_collective().
 * @retval DAO_ERR_OUT_OF_MEMORY    As dao_whole_gather_collective(); then
 *                                  nothing was written anywhere.
 * @retval DAO_ERR_BACKEND          The transport (MPI) failed.
 * @par Thread safety
 * As dao_whole_gather_collective().
 */
DAO_API dao_status dao_whole_scatter_collective(dao_whole *whole, const void *src,
                                                const int64_t *indices, size_t count);

/**
 * @brief Write the whole object to a file: rank 0 creates (or truncates)
 *        the file at the total size, then every rank writes its own part at
 *        its byte offset. Collective.
 *
 * The file holds the entries in index order and nothing else, so it can be
 * loaded into an object of any type, location and number of ranks with the
 * same total size. Every rank must see the same file (one node, or a shared
 * file system) under the same path.
 *
 * @param[in] whole This rank's handle.
 * @param[in] path  File name, the same on every rank.
 * @retval DAO_OK                   Written by every rank.
 * @retval DAO_ERR_INVALID_ARGUMENT On every rank: a NULL path on some rank,
 *                                  different paths or objects, or the ranks
 *                                  are in different collective calls.
 * @retval DAO_ERR_BACKEND          On every rank: some rank could not
 *                                  create, open or write the file (the
 *                                  message names the rank and the system's
 *                                  error).
 * @par Thread safety
 * Collective calls on one communicator handle must not run concurrently.
 */
DAO_API dao_status dao_whole_store(dao_whole *whole, const char *path);

/**
 * @brief Read the whole object from a file written by dao_whole_store() (or
 *        any file of exactly total_size bytes): every rank reads its own
 *        part. Collective.
 * @param[in] whole This rank's handle.
 * @param[in] path  File name, the same on every rank.
 * @retval DAO_OK                   Read by every rank; visible to all.
 * @retval DAO_ERR_INVALID_ARGUMENT On every rank: a NULL path, different
 *                                  paths or objects, ranks in different
 *                                  collective calls, or a file whose size is
 *                                  not the object's total size. Nothing was
 *                                  read.
 * @retval DAO_ERR_NOT_FOUND        On every rank: the file does not exist
 *                                  for some rank. Nothing was read.
 * @retval DAO_ERR_BACKEND          On every rank: some rank could not open
 *                                  or read it (the message names the rank
 *                                  and the system's error); when reading
 *                                  failed part-way, the contents are
 *                                  undefined.
 * @par Thread safety
 * Collective calls on one communicator handle must not run concurrently.
 */
DAO_API dao_status dao_whole_load(dao_whole *whole, const char *path);

#ifdef DAO_EXPERIMENTAL
/* --- transports (experimental: the layout may change without a SONAME bump) */

/**
 * @brief A communication library's operations, handed to libdao by
 *        dao_comm_create_transport(). Experimental: define
 *        `DAO_EXPERIMENTAL` before including dao.h to see it.
 *
 * libdao-mpi fills one over MPI; another library could fill one over its
 * own transport. Every operation returns ::DAO_OK or a failure status, and
 * on failure makes `last_error` return a message on the calling thread.
 * Operations marked collective are called by libdao on every rank in the
 * same order. Window and segment handles are the transport's own.
 */
typedef struct dao_comm_transport {
  size_t struct_size;     /**< sizeof(dao_comm_transport). */
  void *self;             /**< Passed to every operation. */
  int rank;               /**< This rank, 0 .. size - 1. */
  int size;               /**< Number of ranks (>= 1). */
  const char *name;       /**< Static name, e.g. "mpi". */
  int shares_host_memory; /**< 1 when `shared_allocate` works (every rank
                               on one node). */
  /** Message of the last failed operation on the calling thread. */
  const char *(*last_error)(void *self);
  /** Collective: returns once every rank has called it; before returning,
   *  makes every rank's earlier writes into windows and shared segments
   *  visible to every rank. */
  dao_status (*barrier)(void *self);
  /** Collective: every rank sends @p bytes; @p recv receives `size * bytes`,
   *  rank r's at `r * bytes`. */
  dao_status (*allgather)(void *self, const void *send, size_t bytes, void *recv);
  /** Collective: expose @p bytes of this rank's memory at @p local for
   *  one-sided access; @p window receives a handle. */
  dao_status (*window_create)(void *self, void *local, size_t bytes, void **window);
  /** Collective, optional (may be NULL): allocate @p bytes of host memory
   *  owned by the transport and expose it; @p local receives its address. */
  dao_status (*window_allocate)(void *self, size_t bytes, void **local, void **window);
  /** Start reading @p bytes at @p offset of rank @p target's window into
   *  @p dst; complete after `window_complete`. */
  dao_status (*window_get)(void *self, void *window, int target, size_t offset, void *dst,
                           size_t bytes);
  /** Start writing @p bytes from @p src at @p offset of rank @p target's
   *  window; complete at the target after `window_complete`. */
  dao_status (*window_put)(void *self, void *window, int target, size_t offset, const void *src,
                           size_t bytes);
  /** Complete every get and put this rank started on the window. */
  dao_status (*window_complete)(void *self, void *window);
  /** Collective: free a window (and memory from `window_allocate`). */
  dao_status (*window_free)(void *self, void *window);
  /** Collective, optional (may be NULL): allocate @p bytes of host memory
   *  that every rank can map; with @p contiguous, the ranks' parts are
   *  adjacent, in rank order. @p local receives this rank's part. */
  dao_status (*shared_allocate)(void *self, size_t bytes, int contiguous, void **segment,
                                void **local);
  /** Address in this process of rank @p rank's part of a segment. */
  dao_status (*shared_query)(void *self, void *segment, int rank, void **ptr);
  /** Collective: free a shared segment. */
  dao_status (*shared_free)(void *self, void *segment);
  /** Release the transport; called once, by dao_comm_destroy(). */
  void (*destroy)(void *self);
  /** Optional (may be NULL: libdao then calls `window_get` per piece):
   *  start reading @p count pieces from rank @p target's window, piece i
   *  being @p lengths[i] bytes at @p target_offsets[i], into @p dst +
   *  @p dst_offsets[i]; complete after `window_complete`. The arrays are
   *  the caller's and may be reused once this returns. */
  dao_status (*window_get_many)(void *self, void *window, int target, size_t count,
                                const size_t *target_offsets, const size_t *lengths, void *dst,
                                const size_t *dst_offsets);
  /** Optional (may be NULL): as `window_get_many`, writing @p src +
   *  @p src_offsets[i] to the pieces of rank @p target's window. */
  dao_status (*window_put_many)(void *self, void *window, int target, size_t count,
                                const size_t *target_offsets, const size_t *lengths,
                                const void *src, const size_t *src_offsets);
  /* Added after window_put_many: a struct_size that ends there is still
     accepted, and these fields then read as NULL and 0. */
  /** Collective, optional (may be NULL, together with `alltoallv`: the
   *  collective gather and scatter then use the window): every rank sends
   *  @p bytes to each rank, `send + r * bytes` to rank r, and receives rank
   *  r's at `recv + r * bytes`. */
  dao_status (*alltoall)(void *self, const void *send, size_t bytes, void *recv);
  /** Collective, optional (see `alltoall`): rank r gets `send_counts[r]`
   *  units of @p unit bytes from `send + send_displs[r] * unit`; this rank
   *  receives `recv_counts[r]` units from rank r at `recv + recv_displs[r] *
   *  unit`. Counts and displacements are in units. */
  dao_status (*alltoallv)(void *self, const void *send, const size_t *send_counts,
                          const size_t *send_displs, void *recv, const size_t *recv_counts,
                          const size_t *recv_displs, size_t unit);
  /** The largest count, displacement or total (in units) that `alltoallv`
   *  takes, for example INT_MAX for MPI; 0: no limit. */
  size_t exchange_limit;
} dao_comm_transport;

/**
 * @brief Make this rank's communicator handle over a transport. Collective
 *        (it exchanges the ranks' places through the transport).
 *        Experimental.
 *
 * @param[in]  transport The operations; copied. Unless it is NULL or its
 *                       `struct_size` is smaller than
 *                       `offsetof(dao_comm_transport, alltoall)` (the
 *                       fields up to `window_put_many`; later ones read as
 *                       NULL and 0 when left out) or larger than 65536, libdao owns the
 *                       transport from this call on, and calls its
 *                       `destroy` when the call fails or when the handle is
 *                       destroyed.
 * @param[in]  place     This rank's place.
 * @param[out] out       Receives the handle, owned by the caller until
 *                       dao_comm_destroy().
 * @retval DAO_OK                   Created on every rank.
 * @retval DAO_ERR_INVALID_ARGUMENT A NULL argument, a missing operation, a
 *                                  bad rank or size, or a bad place on some
 *                                  rank (every rank gets it).
 * @retval DAO_ERR_NO_DEVICE        Some rank's place does not exist there.
 * @retval DAO_ERR_BACKEND          The transport failed.
 * @par Thread safety
 * Safe to call from any thread.
 */
DAO_API dao_status dao_comm_create_transport(const dao_comm_transport *transport, dao_place place,
                                             dao_comm **out);
/**
 * @brief Record a failure for dao_last_error() on the calling thread, for a
 *        transport library whose own entry point fails before it can hand
 *        libdao a transport (for example MPI not initialised). Experimental.
 * @param status  The status to return (not ::DAO_OK).
 * @param message The message; copied (cut at 1023 bytes). NULL records "".
 * @return @p status.
 * @par Thread safety
 * Safe to call from any thread; sets only this thread's message.
 */
DAO_API dao_status dao_comm_transport_error(dao_status status, const char *message);
#endif /* DAO_EXPERIMENTAL */

#ifdef __cplusplus
}
#endif

#endif /* DAO_WHOLE_H */
