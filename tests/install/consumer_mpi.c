/* A C program outside libdao that links libdao-mpi through
 * find_package(dao COMPONENTS mpi) (tests/install/cmake_consumers.sh): built
 * and linked there, which checks the component's include path (mpi.h too)
 * and link line; run it under mpirun. */
#include <dao.h>
#include <dao/whole_mpi.h>

#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  dao_comm *comm = NULL;
  dao_status s = dao_comm_create_mpi(MPI_COMM_WORLD, dao_place_cpu(), &comm);
  printf("consumer_mpi: dao_comm_create_mpi -> %s\n", dao_status_string(s));
  if (s == DAO_OK) dao_comm_destroy(comm);
  MPI_Finalize();
  return s == DAO_OK ? 0 : 1;
}
