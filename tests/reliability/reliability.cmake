# Included by tests/CMakeLists.txt (so CMAKE_CURRENT_SOURCE_DIR is tests/).
#
# test_bad_input: one table of every exported function with every kind of
#   bad argument it can get and the status it must give. It reads the
#   library's exported symbols (nm -D) and fails when a function has no row.
# test_misuse: double frees, frees on the wrong place or allocator, interior
#   pointers, handles of the wrong type, buffers released too often, tensors
#   used after release; each is refused with a status and a message, and
#   changes nothing.
# test_reentrancy: each (callback x library call) pair made from inside host
#   functions, kernels and scoring callbacks; allowed calls work, forbidden
#   ones give DAO_ERR_INVALID_STATE, and a watchdog fails a pair that hangs.
foreach(reliability_test test_bad_input test_misuse test_reentrancy)
  add_executable(${reliability_test}
                 ${CMAKE_CURRENT_SOURCE_DIR}/reliability/${reliability_test}.c)
  target_include_directories(${reliability_test} PRIVATE ${CMOCKA_INCLUDE_DIR}
                             ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${reliability_test} PRIVATE dao ${CMOCKA_LIBRARY} Threads::Threads)
  target_compile_options(${reliability_test} PRIVATE ${DAO_WARNING_FLAGS})
endforeach()

# The table runs in four parts (every fourth row each), in parallel: each
# row is a process of its own, and under ASan on a busy 2-core machine the
# whole table took over 5 minutes (issue 20).
foreach(part 1 2 3 4)
  add_test(NAME test_bad_input_${part} COMMAND test_bad_input $<TARGET_FILE:dao>)
  set_tests_properties(test_bad_input_${part} PROPERTIES
                       ENVIRONMENT "DAO_SIM_DEVICES=2x64MiB;DAO_INTEROP_PLACE=sim;DAO_BAD_INPUT_PART=${part}/4"
                       LABELS "unit;reliability" TIMEOUT 300)
endforeach()
add_test(NAME test_misuse COMMAND test_misuse)
set_tests_properties(test_misuse PROPERTIES
                     ENVIRONMENT "DAO_SIM_DEVICES=2x64MiB"
                     LABELS "unit;reliability" TIMEOUT 300)
add_test(NAME test_reentrancy COMMAND test_reentrancy)
set_tests_properties(test_reentrancy PROPERTIES
                     ENVIRONMENT "DAO_SIM_DEVICES=2x64MiB"
                     LABELS "unit;reliability" TIMEOUT 300)
# Host functions on CUDA streams, run by the fake driver's own threads.
if(DAO_CUDA_ENABLED)
  add_dependencies(test_reentrancy dao_fake_cuda)
  add_test(NAME test_reentrancy_cuda COMMAND test_reentrancy cuda)
  set_tests_properties(test_reentrancy_cuda PROPERTIES
                       ENVIRONMENT "${_dao_fake_cuda_env}"
                       LABELS "unit;reliability;cuda" TIMEOUT 300)
endif()

# test_hostile_numbers (issue 20, "hostile numbers"): every numeric config key
# (read from the library's own "known keys" lists, so a new key cannot go
# untested) and every size argument at 0, 1, the largest accepted value, just
# above it, SIZE_MAX, tiny and huge floats, NaN, infinities, negative numbers
# and malformed spellings; each case in a child process with a watchdog.
add_executable(test_hostile_numbers ${CMAKE_CURRENT_SOURCE_DIR}/reliability/test_hostile_numbers.c)
target_include_directories(test_hostile_numbers PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(test_hostile_numbers PRIVATE dao Threads::Threads)
target_compile_options(test_hostile_numbers PRIVATE ${DAO_WARNING_FLAGS})
add_test(NAME test_hostile_numbers COMMAND test_hostile_numbers)
set_tests_properties(test_hostile_numbers PROPERTIES ENVIRONMENT "DAO_SIM_DEVICES=2x64MiB"
                     LABELS "unit;reliability" TIMEOUT 600)
