# dao_mpi_pc_fields(): what dao-mpi.pc says about MPI (issue 19: it must
# work with any MPI, not only one with a pkg-config file).
#
#   dao_mpi_pc_fields(<requires-var> <cflags-var> <libs-var>
#                     VERSION <MPI_C_LIBRARY_VERSION_STRING>
#                     INCLUDE_DIRS <dirs...> LIBRARIES <files or flags...>
#                     MODULES <pkg-config modules that exist...>)
#
# MPI's own module when the build machine has the one of the MPI that
# libdao-mpi was built with (Open MPI: ompi-c, MPICH and its derivatives:
# mpich), so that a consumer gets MPI's flags as MPI itself gives them;
# otherwise MPI's include directories and libraries as FindMPI found them,
# written out (-I per directory, each library as a path or flag).
function(dao_mpi_pc_fields out_requires out_cflags out_libs)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "VERSION" "INCLUDE_DIRS;LIBRARIES;MODULES")
  set(wanted "")
  if("${arg_VERSION}" MATCHES "Open MPI")
    set(wanted ompi-c)
  elseif("${arg_VERSION}" MATCHES "MPICH")
    set(wanted mpich)
  elseif("${arg_VERSION}" STREQUAL "")
    set(wanted ompi-c mpich)  # not known: the first module there is
  endif()
  foreach(module IN LISTS wanted)
    if(module IN_LIST arg_MODULES)
      set(${out_requires} "${module}" PARENT_SCOPE)
      set(${out_cflags} "" PARENT_SCOPE)
      set(${out_libs} "" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(cflags "")
  foreach(dir IN LISTS arg_INCLUDE_DIRS)
    string(APPEND cflags " -I${dir}")
  endforeach()
  set(libs "")
  foreach(lib IN LISTS arg_LIBRARIES)
    string(APPEND libs " ${lib}")
  endforeach()
  set(${out_requires} "" PARENT_SCOPE)
  set(${out_cflags} "${cflags}" PARENT_SCOPE)
  set(${out_libs} "${libs}" PARENT_SCOPE)
endfunction()
