# The CUDA driver backend, tested without a GPU. libdao loads the driver with
# dlopen, and DAO_CUDA_LIBRARY points it to another library: here a fake
# driver (tests/fake_cuda) that serves the driver API from host memory. A
# process loads the driver once, so one executable runs once per situation.
# Included from tests/CMakeLists.txt; needs DAO_CUDA_ENABLED,
# DAO_WARNING_FLAGS and CMOCKA_LIBRARY. The fake driver and the test take the
# driver API declarations from src/resource/cuda_api.h, like libdao, so all
# of this builds without a CUDA toolkit, on every machine.
if(DAO_CUDA_ENABLED)
  add_library(dao_fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda/fake_cuda.c)
  target_include_directories(dao_fake_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(dao_fake_cuda PRIVATE ${DAO_WARNING_FLAGS})
  target_link_libraries(dao_fake_cuda PRIVATE Threads::Threads)
  # Its entry points must be exported whatever the project's defaults are.
  set_target_properties(dao_fake_cuda PROPERTIES C_VISIBILITY_PRESET default)
  # The same driver without the virtual memory management entry points, as
  # an old driver.
  add_library(dao_fake_cuda_novmm SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda/fake_cuda.c)
  target_include_directories(dao_fake_cuda_novmm PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(dao_fake_cuda_novmm PRIVATE ${DAO_WARNING_FLAGS})
  target_compile_definitions(dao_fake_cuda_novmm PRIVATE FAKE_CUDA_WITHOUT_VMM=1)
  target_link_libraries(dao_fake_cuda_novmm PRIVATE Threads::Threads)
  set_target_properties(dao_fake_cuda_novmm PROPERTIES C_VISIBILITY_PRESET default)

  # Where a CUDA toolkit is installed, cuda_api.h is checked against its
  # cuda.h: constants, sizes and offsets (cuda_api_check.cpp, at compile
  # time) and prototypes (the fake driver compiled against cuda.h).
  if(DAO_CUDA_TOOLKIT_INCLUDE_DIR)
    add_executable(cuda_api_check ${CMAKE_CURRENT_LIST_DIR}/cuda_api_check.cpp)
    target_include_directories(cuda_api_check PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_include_directories(cuda_api_check SYSTEM PRIVATE ${DAO_CUDA_TOOLKIT_INCLUDE_DIR})
    target_compile_options(cuda_api_check PRIVATE ${DAO_WARNING_FLAGS})
    add_library(dao_fake_cuda_toolkit_check OBJECT ${CMAKE_CURRENT_LIST_DIR}/fake_cuda/fake_cuda.c)
    target_include_directories(dao_fake_cuda_toolkit_check SYSTEM PRIVATE
                               ${DAO_CUDA_TOOLKIT_INCLUDE_DIR})
    target_compile_definitions(dao_fake_cuda_toolkit_check PRIVATE FAKE_CUDA_TOOLKIT_HEADER=1)
    target_compile_options(dao_fake_cuda_toolkit_check PRIVATE ${DAO_WARNING_FLAGS})
    add_dependencies(cuda_api_check dao_fake_cuda_toolkit_check)
    add_test(NAME cuda_api_matches_toolkit COMMAND cuda_api_check)
    set_tests_properties(cuda_api_matches_toolkit PROPERTIES LABELS "unit;cuda"
      PASS_REGULAR_EXPRESSION "agrees with cuda.h of CUDA_VERSION [0-9]+")
  else()
    message(STATUS "libdao: no CUDA toolkit's cuda.h (DAO_CUDA_TOOLKIT_INCLUDE_DIR); test "
                   "cuda_api_matches_toolkit not registered (the build does not need one)")
  endif()

  add_executable(test_cuda_backend ${CMAKE_CURRENT_LIST_DIR}/test_cuda_backend.c)
  if(CMOCKA_INCLUDE_DIR)
    target_include_directories(test_cuda_backend PRIVATE ${CMOCKA_INCLUDE_DIR})
  endif()
  target_link_libraries(test_cuda_backend PRIVATE dao ${CMOCKA_LIBRARY} Threads::Threads
                                                  ${CMAKE_DL_LIBS})
  # cuda_api.h: the types of the fake driver's entry points it calls.
  target_include_directories(test_cuda_backend PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(test_cuda_backend PRIVATE ${DAO_WARNING_FLAGS})
  # Not linked (libdao dlopens it), but it must be built before the tests run.
  add_dependencies(test_cuda_backend dao_fake_cuda dao_fake_cuda_novmm)

  set(_dao_fake_cuda "DAO_CUDA_LIBRARY=$<TARGET_FILE:dao_fake_cuda>")
  # 64 MiB per device and of pinned memory; a 12345-byte allocation fails
  # with CUDA_ERROR_ILLEGAL_ADDRESS.
  set(_dao_fake_cuda_env
      "${_dao_fake_cuda}" FAKE_CUDA_DEVICES=2 FAKE_CUDA_CAPACITY=67108864
      FAKE_CUDA_HOST_CAPACITY=67108864 FAKE_CUDA_FAIL_SIZE=12345)

  add_test(NAME test_cuda_backend_fake COMMAND test_cuda_backend fake)
  set_tests_properties(test_cuda_backend_fake PROPERTIES ENVIRONMENT "${_dao_fake_cuda_env}")

  # The PyTorch / CuPy entry points on cuda:n, with real CUstream handles
  # (the fake driver's, with cuStreamGetId) wrapped and cached.
  add_test(NAME test_interop_cuda_fake COMMAND test_interop cuda)
  set_tests_properties(test_interop_cuda_fake PROPERTIES LABELS "unit;cuda" TIMEOUT 300
                       ENVIRONMENT "${_dao_fake_cuda_env}")

  # A SIM device with the h200 profile behaves as the card (the fake driver
  # has the H200's 2 MiB granularity) under the same allocator and config.
  add_executable(test_sim_vs_card ${CMAKE_CURRENT_LIST_DIR}/test_sim_vs_card.c)
  target_include_directories(test_sim_vs_card PRIVATE ${CMOCKA_INCLUDE_DIR}
                                                      ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(test_sim_vs_card PRIVATE dao ${CMOCKA_LIBRARY})
  target_compile_options(test_sim_vs_card PRIVATE ${DAO_WARNING_FLAGS})
  add_dependencies(test_sim_vs_card dao_fake_cuda)
  add_test(NAME test_sim_vs_card COMMAND test_sim_vs_card)
  set_tests_properties(test_sim_vs_card PROPERTIES LABELS "unit;cuda" ENVIRONMENT
    "${_dao_fake_cuda};FAKE_CUDA_DEVICES=1;FAKE_CUDA_CAPACITY=268435456;DAO_SIM_DEVICES=256MiB;DAO_SIM_COSTS=h200")

  # The same tests without virtual memory, where the caching strategy falls
  # back to classic segments: a device that reports no support, and a driver
  # that lacks the entry points.
  add_test(NAME test_cuda_backend_fake_no_vmm_device COMMAND test_cuda_backend fake-no-vmm)
  set_tests_properties(test_cuda_backend_fake_no_vmm_device PROPERTIES
    ENVIRONMENT "${_dao_fake_cuda_env};FAKE_CUDA_NO_VMM=1")
  set(_dao_fake_cuda_novmm_env "${_dao_fake_cuda_env}")
  list(TRANSFORM _dao_fake_cuda_novmm_env REPLACE "dao_fake_cuda>$" "dao_fake_cuda_novmm>")
  add_test(NAME test_cuda_backend_fake_no_vmm_driver COMMAND test_cuda_backend fake-no-vmm)
  set_tests_properties(test_cuda_backend_fake_no_vmm_driver PROPERTIES
    ENVIRONMENT "${_dao_fake_cuda_novmm_env}")

  add_test(NAME test_cuda_backend_no_driver
           COMMAND test_cuda_backend none
                   "no-such-dir/libcuda.so.1 (from DAO_CUDA_LIBRARY) could not be loaded (dlopen: ")
  set_tests_properties(test_cuda_backend_no_driver PROPERTIES
    ENVIRONMENT "DAO_CUDA_LIBRARY=${CMAKE_CURRENT_BINARY_DIR}/no-such-dir/libcuda.so.1")

  add_test(NAME test_cuda_backend_no_device
           COMMAND test_cuda_backend none
                   "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)")
  set_tests_properties(test_cuda_backend_no_device PROPERTIES
    ENVIRONMENT "${_dao_fake_cuda};FAKE_CUDA_DEVICES=0")

  # A library that is not a driver at all: libdao itself.
  add_test(NAME test_cuda_backend_not_a_driver COMMAND test_cuda_backend none "lacks cuInit")
  set_tests_properties(test_cuda_backend_not_a_driver PROPERTIES
    ENVIRONMENT "DAO_CUDA_LIBRARY=$<TARGET_FILE:dao>")

  # The machine's own driver: a real GPU where there is one, else the
  # "not available" answer.
  add_test(NAME test_cuda_backend_driver COMMAND test_cuda_backend driver)
  set_tests_properties(test_cuda_backend_driver PROPERTIES ENVIRONMENT "DAO_CUDA_LIBRARY=")

  # scripts/gpu-check.sh against the fake driver, so that the GPU check runs
  # on every CI machine: the tests, benchmark rows and replays it drives, on
  # small sizes and the small traces of bench/traces.
  # Only where the benchmarks are built (not in the sanitizer builds), and
  # labelled bench too: it times them.
  if(TARGET bench_alloc AND TARGET bench_traces)
    add_test(NAME gpu_check_fake
             COMMAND ${PROJECT_SOURCE_DIR}/scripts/gpu-check.sh --quick --timeout 150
                     --traces-only A,B ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR}/bench/traces)
    set_tests_properties(gpu_check_fake PROPERTIES LABELS "cuda;bench" TIMEOUT 600 ENVIRONMENT
      "${_dao_fake_cuda};FAKE_CUDA_DEVICES=1;FAKE_CUDA_CAPACITY=1073741824;OUT=${CMAKE_CURRENT_BINARY_DIR}/gpu-check")
  endif()

  set_tests_properties(test_cuda_backend_fake test_cuda_backend_fake_no_vmm_device
                       test_cuda_backend_fake_no_vmm_driver
                       test_cuda_backend_no_driver
                       test_cuda_backend_no_device test_cuda_backend_not_a_driver
                       test_cuda_backend_driver
                       PROPERTIES LABELS "unit;cuda" TIMEOUT 300)
endif()
