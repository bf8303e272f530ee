cmake_minimum_required(VERSION 3.16)
# cmake -P: dao-mpi.pc's MPI fields for the MPIs a user may have
# (cmake/DaoMpiPkgConfig.cmake): MPI's own module where it exists and is the
# MPI libdao-mpi was built with, else MPI's flags written out.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/DaoMpiPkgConfig.cmake)

function(expect what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: got '${got}', want '${want}'")
  endif()
endfunction()

dao_mpi_pc_fields(r c l VERSION "Open MPI v4.1.4, package: Debian OpenMPI"
  INCLUDE_DIRS /usr/lib/x86_64-linux-gnu/openmpi/include
  LIBRARIES /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so MODULES ompi-c mpich)
expect("Open MPI with ompi-c" "${r}|${c}|${l}" "ompi-c||")

dao_mpi_pc_fields(r c l VERSION "MPICH Version: 4.0.2" INCLUDE_DIRS /usr/include/mpich
  LIBRARIES /usr/lib/libmpich.so MODULES ompi-c mpich)
expect("MPICH with both modules installed" "${r}|${c}|${l}" "mpich||")

dao_mpi_pc_fields(r c l VERSION "Intel(R) MPI Library 2021.10 for Linux"
  INCLUDE_DIRS /opt/intel/mpi/include /opt/intel/mpi/include/gfortran
  LIBRARIES /opt/intel/mpi/lib/release/libmpi.so /opt/intel/mpi/lib/libmpifort.so
  MODULES ompi-c)
expect("Intel MPI (no module of its own)" "${r}|${c}|${l}"
  "| -I/opt/intel/mpi/include -I/opt/intel/mpi/include/gfortran| /opt/intel/mpi/lib/release/libmpi.so /opt/intel/mpi/lib/libmpifort.so")

dao_mpi_pc_fields(r c l VERSION "Open MPI v5.0.0" INCLUDE_DIRS /opt/ompi/include
  LIBRARIES /opt/ompi/lib/libmpi.so MODULES mpich)
expect("Open MPI in /opt without its module" "${r}|${c}|${l}"
  "| -I/opt/ompi/include| /opt/ompi/lib/libmpi.so")

dao_mpi_pc_fields(r c l VERSION "" INCLUDE_DIRS /x LIBRARIES -lmpi MODULES mpich)
expect("unknown MPI, one module" "${r}|${c}|${l}" "mpich||")

message(STATUS "dao-mpi.pc fields: 5 cases ok")
