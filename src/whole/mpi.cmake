# libdao-mpi: communicators over MPI for partitioned memory
# (include/dao/whole_mpi.h). Included at the end of the top-level
# CMakeLists.txt. A library of its own, so that libdao never depends on MPI:
# it links libdao (through its public C API only) and MPI::MPI_C.
include(${CMAKE_CURRENT_LIST_DIR}/find_mpi.cmake)
if(NOT DAO_MPI_ENABLED)
  return()
endif()

add_library(dao_mpi SHARED ${CMAKE_CURRENT_LIST_DIR}/mpi/mpi_transport.cpp)
# The header includes <mpi.h>: users of dao_mpi need MPI's include path too.
target_link_libraries(dao_mpi PUBLIC dao MPI::MPI_C)
target_compile_options(dao_mpi PRIVATE ${DAO_WARNING_FLAGS})
target_compile_definitions(dao_mpi PRIVATE DAO_BUILDING_LIBRARY)
set_target_properties(dao_mpi PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  EXPORT_NAME dao_mpi)
target_link_options(dao_mpi PRIVATE
  "LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/mpi/libdao_mpi.map")
set_property(TARGET dao_mpi APPEND PROPERTY LINK_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/mpi/libdao_mpi.map)
if(NOT DAO_SANITIZE)
  target_link_options(dao_mpi PRIVATE "LINKER:--no-undefined")
endif()
add_library(dao::dao_mpi ALIAS dao_mpi)

# Installed beside libdao (the top level installs every header, whole_mpi.h
# included), with its own CMake export file and pkg-config file.
install(TARGETS dao_mpi EXPORT daoMpiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT daoMpiTargets NAMESPACE dao:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dao)

# dao-mpi.pc: the include and link flags of MPI come from MPI's own
# pkg-config file when the machine has the one of this MPI, else they are
# written out (cmake/DaoMpiPkgConfig.cmake).
include(${PROJECT_SOURCE_DIR}/cmake/DaoMpiPkgConfig.cmake)
set(_dao_mpi_modules "")
foreach(_dao_mpi_pc ompi-c mpich)
  find_file(_dao_mpi_pc_file ${_dao_mpi_pc}.pc
    PATHS ENV PKG_CONFIG_PATH /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/pkgconfig /usr/lib/pkgconfig
          /usr/share/pkgconfig
    NO_CACHE)
  if(_dao_mpi_pc_file)
    list(APPEND _dao_mpi_modules ${_dao_mpi_pc})
  endif()
  unset(_dao_mpi_pc_file)
endforeach()
dao_mpi_pc_fields(DAO_MPI_PC_REQUIRES DAO_MPI_PC_CFLAGS DAO_MPI_PC_LIBS
  VERSION "${MPI_C_LIBRARY_VERSION_STRING}"
  INCLUDE_DIRS ${MPI_C_INCLUDE_DIRS}
  LIBRARIES ${MPI_C_LIBRARIES}
  MODULES ${_dao_mpi_modules})
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/dao-mpi.pc CONTENT [=[
prefix=@DAO_PC_PREFIX@
exec_prefix=${prefix}
libdir=@DAO_PC_LIBDIR@
includedir=@DAO_PC_INCLUDEDIR@

Name: dao-mpi
Description: libdao partitioned memory over MPI (libdao-mpi)
URL: @PROJECT_HOMEPAGE_URL@
Version: @PROJECT_VERSION@
Requires: dao @DAO_MPI_PC_REQUIRES@
Cflags: -I${includedir}@DAO_MPI_PC_CFLAGS@
Libs: -L${libdir} -ldao_mpi@DAO_MPI_PC_LIBS@
]=] @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dao-mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
