/**
 * @file whole_mpi.h
 * @brief Communicators over MPI, for partitioned memory (whole.h) across
 *        processes and machines. In the libdao-mpi library.
 *
 * Link with `-ldao_mpi -ldao` and your MPI (with CMake: `dao::dao_mpi`).
 * libdao itself does not depend on MPI; only libdao-mpi does, and this
 * header includes `<mpi.h>`. libdao-mpi is built against one MPI
 * implementation (the one found when libdao was built); use the same one.
 *
 * Over MPI, each process is one rank. Mapped memory (continuous, chunked)
 * is host memory in MPI shared-memory windows (`MPI_Win_allocate_shared`)
 * and needs every rank on one node (parts on SIM devices live there too,
 * charged to each rank's device); distributed memory is exposed in MPI
 * windows (`MPI_Win_create` over each process's own place, or host memory
 * that MPI allocates) and read and written with `MPI_Get` and `MPI_Put`
 * (one call per target rank, with indexed datatypes) in a passive-target
 * epoch (`MPI_Win_lock_all`, `MPI_Win_flush_all`), so dao_whole_gather()
 * and dao_whole_scatter() never need the other ranks to take part; when
 * every rank calls dao_whole_gather_collective() or
 * dao_whole_scatter_collective(), the ranks exchange with `MPI_Alltoall`
 * and `MPI_Alltoallv` instead.
 */
#ifndef DAO_WHOLE_MPI_H
#define DAO_WHOLE_MPI_H

#include <mpi.h>

#include "export.h"
#include "place.h"
#include "status.h"
#include "whole.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Make this process's communicator handle over an MPI communicator.
 *        Collective over @p comm: every process of it calls it.
 *
 * libdao-mpi duplicates @p comm (MPI_Comm_dup), so its traffic never mixes
 * with the caller's, and sets MPI_ERRORS_RETURN on the duplicate and on its
 * windows, so that MPI failures come back as ::DAO_ERR_BACKEND with MPI's
 * message. The ranks are those of @p comm; @p place is this process's place
 * (for example `dao_place_sim(local_rank)`, or `dao_place_cpu()`).
 *
 * MPI must be initialised, and the handle destroyed (dao_comm_destroy())
 * before MPI_Finalize. Calling whole memory functions from several threads
 * of a process needs MPI initialised with MPI_THREAD_SERIALIZED or
 * MPI_THREAD_MULTIPLE; below MPI_THREAD_MULTIPLE, libdao-mpi serialises its
 * own MPI calls.
 *
 * @param[in]  comm  An intra-communicator that this process belongs to.
 * @param[in]  place This process's place; processes may pass different
 *                   places.
 * @param[out] out   Receives the handle, owned by the caller until
 *                   dao_comm_destroy(). NULL on failure.
 * @retval DAO_OK                   Created on every process.
 * @retval DAO_ERR_INVALID_ARGUMENT MPI_COMM_NULL, an inter-communicator, a
 *                                  NULL @p out on some process, or an
 *                                  unknown place kind (every process gets
 *                                  it, except for the first two).
 * @retval DAO_ERR_NO_DEVICE        Some process's place does not exist in
 *                                  that process.
 * @retval DAO_ERR_INVALID_STATE    MPI is not initialised, or already
 *                                  finalised.
 * @retval DAO_ERR_BACKEND          An MPI call failed; the message has MPI's
 *                                  error string.
 * @par Thread safety
 * As any collective MPI call.
 */
DAO_API dao_status dao_comm_create_mpi(MPI_Comm comm, dao_place place, dao_comm **out);

#ifdef __cplusplus
}
#endif

#endif /* DAO_WHOLE_MPI_H */
