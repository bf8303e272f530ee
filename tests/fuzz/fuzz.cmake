# Included by tests/CMakeLists.txt.
#
# 1. The soak program (tests/soak/dao_soak.c): built in every build, with any
#    compiler. It is not part of CI's default run except for a 5-second smoke
#    run (label "soak") that keeps it compiled and working; see
#    tests/soak/README.md for long runs. With it the resource-growth soak
#    (tests/soak/dao_growth.c), run briefly by ctest (label "soak").
# 2. The libFuzzer harnesses (tests/fuzz/fuzz_*.c*): only with clang and
#    -DDAO_BUILD_FUZZ=ON, in a build configured with
#    -DDAO_SANITIZE=address,undefined (scripts/fuzz.sh does all of it). Each
#    harness is a ctest test (label "fuzz") that runs for DAO_FUZZ_SECONDS
#    from a temporary copy of its checked-in corpus.

# --- the soak program ----------------------------------------------------------
add_executable(dao_soak ${CMAKE_CURRENT_SOURCE_DIR}/soak/dao_soak.c)
target_link_libraries(dao_soak PRIVATE dao Threads::Threads)
# Reads the list of strategies from strategy/strategy_list.h (C, no C++).
target_include_directories(dao_soak PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_options(dao_soak PRIVATE ${DAO_WARNING_FLAGS})
# Linked by the C++ driver: with clang and -fsanitize=undefined, libdao's C++
# code needs the sanitizer's C++ runtime (vptr checks), which only clang++
# links in.
set_target_properties(dao_soak PROPERTIES LINKER_LANGUAGE CXX)
add_test(NAME soak_smoke COMMAND dao_soak --seconds 5 --threads 3 --quiet)
# Its own SIM devices (DAO_SIM_DEVICES unset: dao_soak configures 2 x 96 MiB).
set_tests_properties(soak_smoke PROPERTIES LABELS "unit;soak" TIMEOUT 120
                     ENVIRONMENT "DAO_SIM_DEVICES=")

# The resource-growth soak (tests/soak/dao_growth.c; issue 20): each area's
# create/use/release cycle, failing when memory keeps growing or libdao's
# counters drift. ctest runs every area for 2 s (about 16 s in all); the
# long run (10 minutes per area) is in tests/soak/README.md.
add_executable(dao_growth ${CMAKE_CURRENT_SOURCE_DIR}/soak/dao_growth.c)
target_link_libraries(dao_growth PRIVATE dao Threads::Threads)
target_compile_options(dao_growth PRIVATE ${DAO_WARNING_FLAGS})
set_target_properties(dao_growth PROPERTIES LINKER_LANGUAGE CXX)
add_test(NAME growth_smoke COMMAND dao_growth --seconds 2 --quiet)
# The detector must fire: a deliberate leak per cycle (--inject-leak, test
# only) of C heap makes the growth check fail, one of dao_alloc memory the
# exact counter check.
add_test(NAME growth_detects_host_leak
         COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:dao_growth>
                 "-DARGS=--seconds;2;--area;streams;--area;tiered_long;--inject-leak;host:65536"
                 -DEXPECT_RC=1
                 "-DEXPECT_REGEX=FAIL: area tiered_long: C heap in use keeps growing.*FAIL: area streams: [^\n]*keeps growing"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/soak/expect_failure.cmake)
add_test(NAME growth_detects_counter_drift
         COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:dao_growth>
                 "-DARGS=--seconds;1;--area;recycle;--inject-leak;dao:256"
                 -DEXPECT_RC=1
                 "-DEXPECT_REGEX=FAIL: area recycle: dao_used\\(cpu\\) is [0-9]+ after cycle 1, it was [0-9]+ before the first cycle"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/soak/expect_failure.cmake)
set_tests_properties(growth_smoke growth_detects_host_leak growth_detects_counter_drift
                     PROPERTIES LABELS "unit;soak" TIMEOUT 120 ENVIRONMENT "DAO_SIM_DEVICES=")

# --- the fuzz harnesses ----------------------------------------------------------
option(DAO_BUILD_FUZZ "Build the libFuzzer harnesses (clang; use with DAO_SANITIZE=address,undefined)" OFF)
set(DAO_FUZZ_SECONDS 60 CACHE STRING "Seconds each fuzz harness runs as a ctest test")

if(DAO_BUILD_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DAO_BUILD_FUZZ=ON needs clang and clang++ (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT DAO_SANITIZE MATCHES "address")
    message(WARNING "DAO_BUILD_FUZZ=ON without DAO_SANITIZE=address,undefined: the harnesses "
                    "will miss memory errors inside libdao")
  endif()
  # Coverage feedback from inside libdao, not only from the harnesses.
  target_compile_options(dao_objects PRIVATE -fsanitize=fuzzer-no-link)

  set(DAO_FUZZ_HARNESSES fuzz_allocator fuzz_recycle fuzz_tiered fuzz_config)
  set(DAO_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
  foreach(harness ${DAO_FUZZ_HARNESSES})
    if(EXISTS ${DAO_FUZZ_DIR}/${harness}.cpp)
      set(source ${DAO_FUZZ_DIR}/${harness}.cpp)
    else()
      set(source ${DAO_FUZZ_DIR}/${harness}.c)
    endif()
    add_executable(${harness} ${source})
    # The static library: fuzz_config calls the internal parser too.
    target_link_libraries(${harness} PRIVATE dao_static Threads::Threads)
    target_include_directories(${harness} PRIVATE ${DAO_FUZZ_DIR} ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(${harness} PRIVATE ${DAO_WARNING_FLAGS} -fsanitize=fuzzer)
    target_link_options(${harness} PRIVATE -fsanitize=fuzzer)

    add_test(NAME ${harness}
      COMMAND ${CMAKE_COMMAND}
        -DHARNESS=$<TARGET_FILE:${harness}>
        -DCORPUS=${DAO_FUZZ_DIR}/corpus/${harness}
        -DREGRESSIONS=${DAO_FUZZ_DIR}/regressions/${harness}
        -DWORK=${CMAKE_CURRENT_BINARY_DIR}/fuzz-work/${harness}
        -DSECONDS=${DAO_FUZZ_SECONDS}
        -DDICT=${DAO_FUZZ_DIR}/${harness}.dict
        -P ${DAO_FUZZ_DIR}/run_fuzz.cmake)
    math(EXPR timeout "${DAO_FUZZ_SECONDS} * 2 + 300")
    set_tests_properties(${harness} PROPERTIES LABELS fuzz TIMEOUT ${timeout})
  endforeach()
endif()
