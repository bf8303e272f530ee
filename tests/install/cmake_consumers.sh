#!/usr/bin/env bash
# The CMake package (find_package(dao)) as projects of every kind meet it, in
# an installed tree (run_install_test.sh) or unpacked Debian packages
# (scripts/build-deb.sh):
#   - C only, C++ only: find_package(dao) needs nothing but the C library (no
#     MPI even where libdao-mpi is installed, no FindThreads), and the
#     programs build and run, shared and static;
#   - Fortran only (no C): find_package(dao COMPONENTS fortran) and the
#     binding's example, when the tree has the Fortran component;
#   - C with COMPONENTS mpi: dao::dao_mpi and MPI, when the tree has it;
#   - missing components: an unknown one, and mpi/fortran in a tree without
#     them (their export files hidden for the run), fail with a message that
#     names the component and what provides it; OPTIONAL_COMPONENTS do not.
#
# Usage: cmake_consumers.sh <prefix> <scratch-dir> [<libdir>]
# <prefix> is what CMAKE_PREFIX_PATH gets; <libdir> (default: found under
# it) goes into LD_LIBRARY_PATH for the runs. DAO_CONSUMERS picks the checks
# (default "c cxx fortran mpi missing"; the autopkgtests each pick theirs).
# Components that are installed are hidden for "missing" only where the
# package directory is writable (a scratch or unpacked tree, never /usr).
# Exits non-zero on any failure.
set -euo pipefail
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
  echo "usage: $0 <prefix> <scratch-dir> [<libdir>]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
prefix=$(cd "$1" && pwd)
scratch=$2
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
config=$(find "$prefix" -path '*/cmake/dao/daoConfig.cmake' | head -n 1)
[ -n "$config" ] || { echo "FAIL: no daoConfig.cmake under $prefix" >&2; exit 1; }
cmakedir=$(dirname "$config")
libdir=${3:-$(dirname "$(dirname "$cmakedir")")}
export DAO_SIM_DEVICES=2x64MiB LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset DAO_ALLOCATOR DAO_ALLOC_CONF

fail() { echo "FAIL: $*" >&2; exit 1; }
n=0
# configure NAME ARGS...: configures the consumer project; the log is kept.
configure() {
  local name=$1; shift
  cmake -S "$here/consumer_components" -B "$scratch/$name" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release "$@" \
    > "$scratch/$name.log" 2>&1
}
# consumer NAME ARGS...: configures, builds and runs every program it made.
consumer() {
  local name=$1; shift
  n=$((n + 1))
  configure "$name" "$@" || { cat "$scratch/$name.log"; fail "$name: configuring failed"; }
  grep -q "dao_DIR:PATH=$cmakedir" "$scratch/$name/CMakeCache.txt" ||
    fail "$name: find_package(dao) found $(sed -n 's/^dao_DIR:PATH=//p' "$scratch/$name/CMakeCache.txt")"
  cmake --build "$scratch/$name" > "$scratch/$name-build.log" 2>&1 ||
    { cat "$scratch/$name-build.log"; fail "$name: building failed"; }
  for exe in consumer consumer_static; do
    [ -x "$scratch/$name/$exe" ] || continue
    [ "${RUN:-1}" = 1 ] || continue
    "$scratch/$name/$exe" > "$scratch/$name-$exe.out" 2>&1 ||
      { cat "$scratch/$name-$exe.out"; fail "$name: $exe failed"; }
    if [ "$exe" = consumer_static ]; then
      case $(readelf -d "$scratch/$name/$exe") in
        *"NEEDED"*"[libdao.so"*) fail "$name: $exe (dao::dao_static) needs libdao.so" ;;
      esac
    fi
  done
  echo "$name: OK"
}
# refused NAME EXPECTED ARGS...: configuring must fail and say EXPECTED.
refused() {
  local name=$1 expected=$2; shift 2
  n=$((n + 1))
  if configure "$name" "$@"; then
    cat "$scratch/$name.log"; fail "$name: find_package(dao) succeeded"
  fi
  # CMake wraps long messages: compare without line breaks and indentation.
  tr -s ' \n' ' ' < "$scratch/$name.log" | grep -qF -- "$expected" ||
    { cat "$scratch/$name.log"; fail "$name: the message does not say '$expected'"; }
  echo "$name: refused as it should be: $(tr -s ' \n' ' ' < "$scratch/$name.log" |
    grep -o "Reason given by package:.\{0,160\}" | head -n 1)"
}

checks=" ${DAO_CONSUMERS:-c cxx fortran mpi missing} "
want() { case $checks in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

has_fortran=0; has_mpi=0
[ -f "$cmakedir/daoFortranTargets.cmake" ] && has_fortran=1
[ -f "$cmakedir/daoMpiTargets.cmake" ] && has_mpi=1
if want c; then
  # With MPI's component installed or not, a C project gets no MPI.
  consumer c-only -DCONSUMER_LANGUAGE=C -DCONSUMER_SOURCE="$here/consumer.c"
fi
if want cxx; then
  consumer cxx-only -DCONSUMER_LANGUAGE=CXX -DCONSUMER_SOURCE="$here/consumer_cxx.cpp"
fi
if ! want fortran; then
  :
elif [ "$has_fortran" = 1 ] && command -v gfortran > /dev/null; then
  consumer fortran-only -DCONSUMER_LANGUAGE=Fortran -DCONSUMER_COMPONENTS=fortran \
    -DCONSUMER_SOURCE="$src/bindings/fortran/examples/quickstart.f90"
else
  echo "fortran-only: skipped (no Fortran component in the tree, or no gfortran)"
fi
if ! want mpi; then
  :
elif [ "$has_mpi" = 1 ]; then
  # Built, not run: running needs the MPI launcher.
  RUN=0 consumer c-mpi -DCONSUMER_LANGUAGE=C -DCONSUMER_COMPONENTS=mpi \
    -DCONSUMER_SOURCE="$here/consumer_mpi.c"
  # C-only again with MPI installed: checked by c-only above (no MPI looked for).
else
  echo "c-mpi: skipped (no mpi component in the tree)"
fi

# The components absent: an unknown one, and the known ones where they are
# not installed, or hidden for these runs (their export files renamed, and
# restored on any exit) where the tree may be changed.
if want missing; then
  refused unknown-component "unknown component 'nosuch' (known: mpi, fortran)" \
    -DCONSUMER_LANGUAGE=C -DCONSUMER_COMPONENTS=nosuch
  hidden=()
  restore() { for f in "${hidden[@]}"; do mv "$f.hidden" "$f"; done; hidden=(); }
  trap restore EXIT
  if [ -w "$cmakedir" ] && [ "$(cd "$cmakedir" && pwd -P)" != "/usr/lib/cmake/dao" ] &&
     [ "${cmakedir#/usr/lib/}" = "$cmakedir" ]; then
    for f in "$cmakedir"/daoMpiTargets*.cmake "$cmakedir"/daoFortranTargets*.cmake; do
      [ -f "$f" ] || continue
      mv "$f" "$f.hidden"
      hidden+=("$f")
    done
    has_fortran=0; has_mpi=0
  fi
  if [ "$has_mpi" = 0 ]; then
    refused missing-mpi "component mpi (libdao_mpi, dao::dao_mpi) is not installed" \
      -DCONSUMER_LANGUAGE=C -DCONSUMER_COMPONENTS=mpi
  else
    echo "missing-mpi: skipped (installed in a tree this script does not change)"
  fi
  if [ "$has_fortran" = 0 ]; then
    refused missing-fortran "component fortran (libdao_fortran, dao::dao_fortran, module dao) is not installed" \
      -DCONSUMER_LANGUAGE=C -DCONSUMER_COMPONENTS=fortran
  else
    echo "missing-fortran: skipped (installed in a tree this script does not change)"
  fi
  if [ "$has_mpi" = 0 ] && [ "$has_fortran" = 0 ]; then
    n=$((n + 1))
    configure optional-missing -DCONSUMER_LANGUAGE=C -DCONSUMER_OPTIONAL="mpi;fortran" ||
      { cat "$scratch/optional-missing.log"; fail "optional-missing: OPTIONAL_COMPONENTS failed"; }
    grep -q "dao_mpi_FOUND=FALSE" "$scratch/optional-missing.log" ||
      { cat "$scratch/optional-missing.log"; fail "optional-missing: dao_mpi_FOUND is not FALSE"; }
    echo "optional-missing: OK (dao_mpi_FOUND=FALSE, dao_fortran_FOUND=FALSE)"
  fi
  restore
fi
echo "cmake consumers: $n checks OK"
