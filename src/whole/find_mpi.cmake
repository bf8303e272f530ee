# Whether libdao-mpi is built: option DAO_WITH_MPI (AUTO, ON, OFF), like
# DAO_WITH_CUDA. Sets DAO_MPI_ENABLED. Included early (src/whole/sources.cmake,
# before tests/ and bench/ are added, which need to know) and again by
# src/whole/mpi.cmake, which builds the library; the first inclusion decides.
include_guard(GLOBAL)

set(DAO_WITH_MPI "AUTO" CACHE STRING
    "libdao-mpi (partitioned memory over MPI): ON, OFF or AUTO (on when MPI is found)")
set_property(CACHE DAO_WITH_MPI PROPERTY STRINGS AUTO ON OFF)

set(DAO_MPI_ENABLED OFF)
if(DAO_WITH_MPI STREQUAL "AUTO" OR DAO_WITH_MPI)
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(DAO_MPI_ENABLED ON)
  elseif(NOT DAO_WITH_MPI STREQUAL "AUTO")
    message(FATAL_ERROR "DAO_WITH_MPI=ON but MPI (C) was not found; install an MPI "
                        "(Debian: apt-get install libopenmpi-dev openmpi-bin) or set MPI_HOME")
  endif()
endif()
if(DAO_MPI_ENABLED)
  message(STATUS "libdao ${PROJECT_VERSION}: libdao-mpi ON (MPI ${MPI_C_VERSION}, "
                 "${MPIEXEC_EXECUTABLE})")
elseif(DAO_WITH_MPI STREQUAL "AUTO")
  message(STATUS "libdao ${PROJECT_VERSION}: libdao-mpi OFF: MPI was not found (install "
                 "libopenmpi-dev and openmpi-bin, or set MPI_HOME, to build partitioned "
                 "memory over MPI)")
else()
  message(STATUS "libdao ${PROJECT_VERSION}: libdao-mpi OFF (DAO_WITH_MPI=OFF)")
endif()

# How to start MPI programs here (tests and the benchmark). Open MPI refuses
# more processes than cores without --oversubscribe, and refuses to run as
# root without --allow-run-as-root; other MPIs take neither flag.
set(DAO_MPIEXEC_EXTRA_FLAGS "")
set(DAO_MPIEXEC_ENV "")
if(DAO_MPI_ENABLED AND MPIEXEC_EXECUTABLE)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
    OUTPUT_VARIABLE _dao_mpiexec_version ERROR_VARIABLE _dao_mpiexec_version
    RESULT_VARIABLE _dao_mpiexec_rc)
  if(_dao_mpiexec_version MATCHES "Open MPI|OpenRTE")
    list(APPEND DAO_MPIEXEC_EXTRA_FLAGS --oversubscribe)
    # Yield instead of spinning while waiting: the ranks may share cores.
    list(APPEND DAO_MPIEXEC_ENV OMPI_MCA_rmaps_base_oversubscribe=1
                                OMPI_MCA_mpi_yield_when_idle=1)
    execute_process(COMMAND id -u OUTPUT_VARIABLE _dao_uid OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _dao_id_rc)
    if(_dao_id_rc EQUAL 0 AND _dao_uid STREQUAL "0")
      list(APPEND DAO_MPIEXEC_EXTRA_FLAGS --allow-run-as-root)
    endif()
  endif()
endif()
