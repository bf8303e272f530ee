# Included from tests/CMakeLists.txt: the checks that a distribution and the
# programs linked against libdao rely on (docs/abi.md, docs/packaging.md).

# The version stated everywhere agrees with include/dao/version.h.
add_test(NAME version_consistency
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/check-version.sh
          ${PROJECT_SOURCE_DIR} ${PROJECT_VERSION} ${PROJECT_BINARY_DIR})
set_tests_properties(version_consistency PROPERTIES LABELS unit TIMEOUT 60)

# Every config key and environment variable the code knows is in the table of
# docs/environment.md, and the table names nothing else.
add_test(NAME config_docs
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/check-config-docs.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(config_docs PROPERTIES LABELS unit TIMEOUT 60)

# The ABI of libdao.so against the baseline in abi/ (abidiff, from Debian's
# abigail-tools). A build without debug information cannot be compared: the
# script exits 77 and ctest reports the test as skipped.
find_program(DAO_ABIDIFF abidiff)
if(DAO_ABIDIFF)
  add_test(NAME abi_check
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-abi.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(abi_check PROPERTIES
    LABELS abi
    SKIP_RETURN_CODE 77
    TIMEOUT 300)
else()
  message(STATUS "abi check skipped: abidiff not found (Debian: apt-get install abigail-tools)")
endif()

# The lists of README.md and docs/ (pages, headers, build options) name
# everything the tree has (the installed files are checked by
# install_consumer); docs_lists_check shows the check refuses what is missing.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME docs_lists
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_LIST_DIR}/check-docs-lists.py ${PROJECT_SOURCE_DIR})
  add_test(NAME docs_lists_check
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/test-check-docs-lists.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs_lists docs_lists_check PROPERTIES LABELS "unit;lint" TIMEOUT 60)
else()
  message(STATUS "libdao: no python3; tests docs_lists* not registered")
endif()

# dao-mpi.pc with any MPI (issue 19): MPI's own pkg-config module, or its
# flags written out where it has none.
add_test(NAME mpi_pc_fields
  COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_LIST_DIR}/test-mpi-pc-fields.cmake)
set_tests_properties(mpi_pc_fields PROPERTIES LABELS "unit" TIMEOUT 60)
