# Partitioned memory (include/dao/whole.h), included by the top-level
# CMakeLists.txt before the library is made. Everything here goes into
# libdao, which never links MPI; libdao-mpi is built by src/whole/mpi.cmake.
list(APPEND DAO_SOURCES
  src/capi/whole.cpp
  src/whole/collective.cpp
  src/whole/communicator.cpp
  src/whole/continuous_storage.cpp
  src/whole/device_copy.cpp
  src/whole/device_range_storage.cpp
  src/whole/device_storage.cpp
  src/whole/exchange.cpp
  src/whole/file.cpp
  src/whole/hooked_transport.cpp
  src/whole/local_transport.cpp
  src/whole/parts_storage.cpp
  src/whole/shared_storage.cpp
  src/whole/storage.cpp
  src/whole/support.cpp
  src/whole/whole_memory.cpp)

# Decide about MPI now: tests/ and bench/ are added before mpi.cmake runs.
include(${CMAKE_CURRENT_LIST_DIR}/find_mpi.cmake)
