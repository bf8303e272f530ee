# Included from tests/CMakeLists.txt: checks the `dao` command-line tool
# (output, errors, exit statuses).
if(TARGET dao_tool)
  add_test(NAME tool
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_tool_test.sh $<TARGET_FILE:dao_tool> ${PROJECT_VERSION})
  set_tests_properties(tool PROPERTIES LABELS "tool")
  # dao replay / dao plan (issue 18)
  add_test(NAME tool_replay_plan
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_replay_plan_test.sh $<TARGET_FILE:dao_tool>)
  set_tests_properties(tool_replay_plan PROPERTIES LABELS "tool" TIMEOUT 300)
  # dao plan agrees with bench_traces' own replay on the bench's traces
  if(TARGET bench_traces)
    add_test(NAME tool_plan_vs_bench
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_plan_vs_bench_test.sh $<TARGET_FILE:dao_tool>
              $<TARGET_FILE:bench_traces> ${PROJECT_SOURCE_DIR}/bench/traces)
    set_tests_properties(tool_plan_vs_bench PROPERTIES LABELS "tool" TIMEOUT 300)
  endif()
endif()

# dao convert and dao view (issue 18): converters on small files made here
# (a lifetime CSV, an ops JSONL trace, PyTorch snapshot pickles built with
# Python's pickle), bad-input rows, hostile pickles; then the pages in
# headless Chromium (SKIP, status 77, where it is missing or cannot start),
# with screenshots kept in <build>/tests/tool/artifacts.
if(TARGET dao_tool)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    add_test(NAME tool_convert_view
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_convert_view_test.sh $<TARGET_FILE:dao_tool>
              ${CMAKE_CURRENT_LIST_DIR})
    add_test(NAME tool_view_browser
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_view_browser_test.sh $<TARGET_FILE:dao_tool>
              ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_BINARY_DIR}/tool/artifacts)
    set_tests_properties(tool_convert_view tool_view_browser PROPERTIES LABELS "tool")
    set_tests_properties(tool_view_browser PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
  endif()
endif()
