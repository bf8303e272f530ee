# Included from tests/CMakeLists.txt: checks the `dao` command-line tool
# (output, errors, exit statuses).
if(TARGET dao_tool)
  add_test(NAME tool
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_tool_test.sh $<TARGET_FILE:dao_tool> ${PROJECT_VERSION})
  set_tests_properties(tool PROPERTIES LABELS "tool")
endif()
