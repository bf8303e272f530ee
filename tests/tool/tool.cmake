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
endif()
