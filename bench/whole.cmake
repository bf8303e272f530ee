# Gather throughput of partitioned memory over MPI against a plain
# MPI_Alltoallv gather (bench_whole.c; see docs/whole.md). Built only with
# libdao-mpi (src/whole/find_mpi.cmake decides, before this file runs).
if(NOT DAO_MPI_ENABLED)
  return()
endif()

add_executable(bench_whole bench_whole.c)
target_link_libraries(bench_whole PRIVATE dao_mpi)
target_compile_options(bench_whole PRIVATE ${DAO_WARNING_FLAGS})
target_compile_definitions(bench_whole PRIVATE "DAO_BENCH_BUILD_TYPE=\"$<CONFIG>\"")

if(DAO_BUILD_TESTS AND (NOT DEFINED BUILD_TESTING OR BUILD_TESTING))
  enable_testing()
  # Four ranks (groups of 1, 2 and 4), a small table; fails only when a
  # gather errs or returns wrong entries, never on timings.
  add_test(NAME bench_whole_quick
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 4 ${DAO_MPIEXEC_EXTRA_FLAGS}
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:bench_whole> ${MPIEXEC_POSTFLAGS} --quick)
  set(_dao_bench_env ${DAO_MPIEXEC_ENV})
  if(DAO_SANITIZE MATCHES "address")
    list(APPEND _dao_bench_env ASAN_OPTIONS=detect_leaks=0)  # Open MPI's own leaks
  endif()
  set_tests_properties(bench_whole_quick PROPERTIES
    LABELS "bench" TIMEOUT 600 ENVIRONMENT "${_dao_bench_env}")
endif()
