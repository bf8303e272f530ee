# Runs a program that must fail: exit status EXPECT_RC and output matching
# EXPECT_REGEX. Used to prove that dao_growth's checks fire (a deliberate
# leak must make it fail, with a message that names the area and the growth).
#
#   cmake -DPROGRAM=... -DARGS="a;b;c" -DEXPECT_RC=1 -DEXPECT_REGEX=... -P expect_failure.cmake
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
message("${out}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}")
endif()
if(NOT out MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "the output does not match: ${EXPECT_REGEX}")
endif()
message("failed as expected (exit status ${rc}, output matches '${EXPECT_REGEX}')")
