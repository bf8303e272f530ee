# Partitioned memory (include/dao/whole.h). Included by tests/CMakeLists.txt.
#
# test_whole: one process, a thread per rank, over SIM devices and the CPU,
# and over a transport handed in through the C hook (label unit).
# test_whole_mpi*: one process per rank under mpiexec, when libdao-mpi is
# built (label mpi).

dao_add_test_executable(test_whole whole/test_whole.c)
# Four 64 MiB devices for the ranks, and a small one that a part does not fit.
dao_unit_test(test_whole ENV "DAO_SIM_DEVICES=4x64MiB,16MiB")

# test_whole_cuda: chunked and distributed memory on CUDA devices, over the
# fake driver (tests/cuda.cmake) with device memory the host cannot touch.
if(TARGET dao_fake_cuda)
  dao_add_test_executable(test_whole_cuda whole/test_whole_cuda.c)
  target_link_libraries(test_whole_cuda PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(test_whole_cuda dao_fake_cuda)
  set(_dao_whole_cuda_env "DAO_CUDA_LIBRARY=$<TARGET_FILE:dao_fake_cuda>" FAKE_CUDA_DEVICES=4
      FAKE_CUDA_CAPACITY=67108864 FAKE_CUDA_HIDDEN=1)
  add_test(NAME test_whole_cuda COMMAND test_whole_cuda)
  add_test(NAME test_whole_cuda_no_peer COMMAND test_whole_cuda no-peer)
  add_test(NAME test_whole_cuda_no_vmm COMMAND test_whole_cuda no-vmm)
  add_test(NAME test_whole_cuda_faults COMMAND test_whole_cuda faults)
  set_tests_properties(test_whole_cuda PROPERTIES ENVIRONMENT "${_dao_whole_cuda_env}")
  set_tests_properties(test_whole_cuda_no_peer PROPERTIES
                       ENVIRONMENT "${_dao_whole_cuda_env};FAKE_CUDA_NO_PEER=1")
  set_tests_properties(test_whole_cuda_no_vmm PROPERTIES
                       ENVIRONMENT "${_dao_whole_cuda_env};FAKE_CUDA_NO_VMM=1")
  set_tests_properties(test_whole_cuda_faults PROPERTIES ENVIRONMENT
    "${_dao_whole_cuda_env};DAO_FAULT_INJECT=copy=p0.05,alloc=p0.08,map=p0.08,seed=5")
  # One rank out of host memory at its k-th C++ allocation, for every k,
  # over the CUDA paths (tests/test_whole_oom.cpp).
  add_test(NAME test_whole_oom_cuda COMMAND test_whole_oom cuda)
  set_tests_properties(test_whole_oom_cuda PROPERTIES LABELS "unit;reliability;cuda" TIMEOUT 300
                       ENVIRONMENT "${_dao_whole_cuda_env}")
  set_tests_properties(test_whole_cuda test_whole_cuda_no_peer test_whole_cuda_no_vmm
                       test_whole_cuda_faults PROPERTIES LABELS "unit;cuda" TIMEOUT 300)
endif()

if(NOT DAO_MPI_ENABLED)
  # The header needs <mpi.h>; without MPI there is nothing to check it with.
  set_tests_properties(header_c99_dao_whole_mpi_h header_cxx_dao_whole_mpi_h
                       PROPERTIES DISABLED TRUE)
  return()
endif()

# whole_mpi.h includes <mpi.h>: give the header checks MPI's include path (as
# system directories, like a compiler wrapper would).
string(REPLACE ";" ":" _dao_mpi_include_path "${MPI_C_INCLUDE_DIRS}")
set_tests_properties(header_c99_dao_whole_mpi_h PROPERTIES
  ENVIRONMENT "C_INCLUDE_PATH=${_dao_mpi_include_path}")
set_tests_properties(header_cxx_dao_whole_mpi_h PROPERTIES
  ENVIRONMENT "CPLUS_INCLUDE_PATH=${_dao_mpi_include_path}")

dao_add_test_executable(test_whole_mpi whole/test_whole_mpi.c)
target_link_libraries(test_whole_mpi PRIVATE dao_mpi ${CMAKE_DL_LIBS})

# DAO_MPIEXEC_EXTRA_FLAGS and DAO_MPIEXEC_ENV come from src/whole/find_mpi.cmake.
# Open MPI's own MPI_Init and MPI_Finalize leak about 120 KB (a program that
# does nothing else shows the same), so a leak check of MPI programs says
# nothing about libdao: test_whole runs with it, under ASan, instead.
set(_dao_mpi_sanitizer_env "")
if(DAO_SANITIZE MATCHES "address")
  set(_dao_mpi_sanitizer_env "ASAN_OPTIONS=detect_leaks=0")
endif()

# dao_mpi_test(<name> <ranks>)
function(dao_mpi_test name ranks)
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${DAO_MPIEXEC_EXTRA_FLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:test_whole_mpi> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "DAO_SIM_DEVICES=4x64MiB;${DAO_MPIEXEC_ENV};${_dao_mpi_sanitizer_env}"
    LABELS "mpi"
    TIMEOUT 600)
endfunction()
dao_mpi_test(test_whole_mpi 4)
# 3: uneven halves in test_split (2 ranks and 1); 1: a world of one.
dao_mpi_test(test_whole_mpi_3 3)
dao_mpi_test(test_whole_mpi_1 1)

# The same program on CUDA devices of the fake driver (two per process, so
# that processes share a device number too): chunked and distributed memory
# between processes through CUDA IPC.
if(TARGET dao_fake_cuda)
  add_dependencies(test_whole_mpi dao_fake_cuda)
  foreach(_ranks 4 3)
    add_test(NAME test_whole_mpi_cuda_${_ranks}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_ranks} ${DAO_MPIEXEC_EXTRA_FLAGS}
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:test_whole_mpi> ${MPIEXEC_POSTFLAGS} cuda)
    set_tests_properties(test_whole_mpi_cuda_${_ranks} PROPERTIES
      ENVIRONMENT "DAO_CUDA_LIBRARY=$<TARGET_FILE:dao_fake_cuda>;FAKE_CUDA_DEVICES=2;FAKE_CUDA_CAPACITY=67108864;FAKE_CUDA_HIDDEN=1;${DAO_MPIEXEC_ENV};${_dao_mpi_sanitizer_env}"
      LABELS "mpi;cuda"
      TIMEOUT 600)
  endforeach()
endif()

# One rank out of host memory at its k-th C++ allocation, for every k, over
# the collective calls (issue 20, defect 11): every rank agrees on the
# outcome, nothing leaks, nothing hangs (new_fault.cpp replaces operator new
# in this program, libdao's and libdao-mpi's included).
add_executable(test_whole_mpi_oom whole/test_whole_mpi_oom.cpp new_fault.cpp)
target_include_directories(test_whole_mpi_oom PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_whole_mpi_oom PRIVATE dao_mpi dao Threads::Threads)
target_compile_options(test_whole_mpi_oom PRIVATE ${DAO_WARNING_FLAGS})
add_test(NAME test_whole_mpi_oom
  COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 3 ${DAO_MPIEXEC_EXTRA_FLAGS}
          ${MPIEXEC_PREFLAGS} $<TARGET_FILE:test_whole_mpi_oom> ${MPIEXEC_POSTFLAGS})
set_tests_properties(test_whole_mpi_oom PROPERTIES
  ENVIRONMENT "${DAO_MPIEXEC_ENV};${_dao_mpi_sanitizer_env}"
  LABELS "mpi;reliability"
  TIMEOUT 600)
