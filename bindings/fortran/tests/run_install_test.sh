#!/usr/bin/env bash
# ctest fortran_install: installs the build into a scratch prefix, then
# builds the README example against the installed tree with
# `pkg-config --cflags --libs dao-fortran`, and again as a CMake project with
# find_package(dao) and dao::dao_fortran, and runs both, as a user would.
#
# Usage: run_install_test.sh <build-dir> <scratch-dir> <fortran-compiler> <example.f90>
set -euo pipefail

if [ "$#" -ne 4 ]; then
  echo "usage: $0 <build-dir> <scratch-dir> <fortran-compiler> <example.f90>" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
scratch=$2
fc=$3
example=$4
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
prefix=$scratch/prefix

fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$scratch/install.log" ||
  { cat "$scratch/install.log"; fail "cmake --install failed"; }
pc=$(find "$prefix" -name dao-fortran.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "dao-fortran.pc was not installed"
pcdir=$(dirname "$pc")
export PKG_CONFIG_PATH=$pcdir
libdir=$(pkg-config --variable=libdir dao-fortran)
fmoddir=$(pkg-config --variable=fmoddir dao-fortran)
echo "dao-fortran $(pkg-config --modversion dao-fortran): $pc"
[ -e "$fmoddir/dao.mod" ] || fail "dao.mod is not in fmoddir=$fmoddir"
[ -e "$fmoddir/dao_c.mod" ] || fail "dao_c.mod is not in fmoddir=$fmoddir"
ls "$libdir"/libdao_fortran.so.* > /dev/null 2>&1 || fail "libdao_fortran.so.* not in $libdir"
soname=$(objdump -p "$libdir/libdao_fortran.so" | awk '/SONAME/ { print $2 }')
echo "SONAME $soname"
case $soname in
  libdao_fortran.so.[0-9]*) ;;
  *) fail "unexpected SONAME '$soname'" ;;
esac
# The paths in the .pc file are those of the installed tree.
case $(cd "$fmoddir" && pwd -P) in
  "$(cd "$prefix" && pwd -P)"/*) ;;
  *) fail "fmoddir=$fmoddir is outside the installed prefix $prefix" ;;
esac

flags=$(pkg-config --cflags --libs dao-fortran)
echo "$fc example $flags"
# shellcheck disable=SC2086  # the flags are words
"$fc" -Wall -Wextra -Werror "$example" -o "$scratch/quickstart" $flags \
  -Wl,-rpath,"$libdir"
"$scratch/quickstart"
# The same through CMake, in a project of Fortran only (no C: the package
# must not need FindThreads, which refuses to run without C or CXX):
# find_package(dao COMPONENTS fortran) and dao::dao_fortran.
mkdir -p "$scratch/cmake-src"
cp "$example" "$scratch/cmake-src/quickstart.f90"
cat > "$scratch/cmake-src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(dao_fortran_consumer LANGUAGES Fortran)
find_package(dao REQUIRED COMPONENTS fortran)
add_executable(quickstart quickstart.f90)
target_link_libraries(quickstart PRIVATE dao::dao_fortran)
CMAKE
cmake -S "$scratch/cmake-src" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_Fortran_COMPILER="$fc" -DCMAKE_BUILD_RPATH="$libdir" > "$scratch/cmake.log" 2>&1 ||
  { cat "$scratch/cmake.log"; fail "find_package(dao COMPONENTS fortran) failed"; }
cmake --build "$scratch/cmake-build" > "$scratch/cmake-build.log" 2>&1 ||
  { cat "$scratch/cmake-build.log"; fail "building against dao::dao_fortran failed"; }
"$scratch/cmake-build/quickstart" > /dev/null
echo "installed Fortran binding (pkg-config and find_package): OK"
