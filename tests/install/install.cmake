# Included from tests/CMakeLists.txt: installs the build into a scratch prefix
# and builds and runs an outside program against it (pkg-config, static
# pkg-config, find_package), runs the installed `dao` tool, and checks the
# SONAME and the exported symbols.
add_test(NAME install_consumer
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_install_test.sh
          ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install-scratch)
set_tests_properties(install_consumer PROPERTIES
  LABELS "install"
  # It installs the whole build: run it alone, after everything is built.
  RUN_SERIAL TRUE
  TIMEOUT 600)
