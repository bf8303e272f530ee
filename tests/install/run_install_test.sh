#!/usr/bin/env bash
# Installs a libdao build into a scratch prefix and checks the installed tree
# the way a user of the library would meet it:
#   - an outside C99 program (consumer.c) built with `pkg-config --cflags --libs dao`
#     and run against the installed shared library;
#   - the same program linked statically with `pkg-config --static --libs dao`,
#     and with `pkg-config --libs dao-static` (no libdao.so in its dynamic
#     section either way);
#   - the same program built by a CMake project through find_package(dao);
#   - projects of C, C++ and Fortran only, and the components mpi and fortran
#     present and missing (cmake_consumers.sh);
#   - the installed `dao` tool (info, --help);
#   - the SONAME (libdao.so.0) and that only dao_* symbols are exported;
#   - every installed file is named by README.md's "Installed files" list
#     (tests/packaging/check-docs-lists.py --installed).
#
# Usage: run_install_test.sh <build-dir> <scratch-dir>
# The scratch directory is emptied first.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 <build-dir> <scratch-dir>" >&2
  exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
scratch=$2
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
prefix=$scratch/prefix
cc=${CC:-cc}
cflags_strict=(-std=c99 -pedantic -Wall -Wextra -Werror)

step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# The consumer expects exactly two simulated devices.
export DAO_SIM_DEVICES=2x64MiB
unset DAO_ALLOCATOR DAO_ALLOC_CONF

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$scratch/install.log" ||
  { cat "$scratch/install.log"; fail "cmake --install failed"; }
pc=$(find "$prefix" -name dao.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || fail "dao.pc was not installed"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
echo "pkg-config file: $pc"
echo "library dir:     $libdir"
for f in include/dao.h include/dao/version.h include/dao/allocator.h bin/dao; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
[ -e "$libdir/libdao.a" ] || fail "libdao.a was not installed"
[ -n "$(find "$libdir" -path '*/cmake/dao/daoConfig.cmake')" ] || fail "daoConfig.cmake was not installed"

step "pkg-config --cflags --libs dao (shared library)"
version=$(PKG_CONFIG_PATH=$pcdir pkg-config --modversion dao)
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs dao)
echo "dao $version: $flags"
# The .pc file must describe the tree it was installed into (cmake --install
# --prefix), not the prefix the build was configured with.
for var in libdir includedir; do
  dir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=$var dao)
  case $(cd "$dir" 2> /dev/null && pwd -P) in
    "$(cd "$prefix" && pwd -P)"/*) ;;
    *) fail "dao.pc gives $var=$dir, outside the installed prefix $prefix" ;;
  esac
done
# shellcheck disable=SC2086  # the flags are words
"$cc" "${cflags_strict[@]}" "$here/consumer.c" -o "$scratch/consumer_pc" $flags
# (Output kept in variables: with pipefail, `producer | grep -q` can fail
# when grep exits first and the producer gets SIGPIPE.)
loaded=$(LD_LIBRARY_PATH=$libdir ldd "$scratch/consumer_pc")
case $loaded in
  *"$libdir/libdao.so.0"*) ;;
  *) echo "$loaded"; fail "consumer_pc does not load the installed libdao.so.0" ;;
esac
LD_LIBRARY_PATH=$libdir "$scratch/consumer_pc"

step "pkg-config --static --libs dao (static library)"
static_flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --static --cflags --libs dao)
echo "$static_flags"
# Ask the linker for libdao.a where the flags say -ldao (it would prefer the
# .so); everything else must come from Libs.private.
static_flags=$(printf '%s\n' "$static_flags" | sed 's/\(^\|[[:space:]]\)-ldao\([[:space:]]\|$\)/\1-l:libdao.a\2/')
# shellcheck disable=SC2086
"$cc" "${cflags_strict[@]}" "$here/consumer.c" -o "$scratch/consumer_static" $static_flags
dynamic=$(readelf -d "$scratch/consumer_static")
case $dynamic in
  *"NEEDED"*"[libdao"*) fail "consumer_static still needs the shared libdao" ;;
esac
"$scratch/consumer_static" > "$scratch/consumer_static.log" ||
  { cat "$scratch/consumer_static.log"; fail "consumer_static failed"; }
tail -n 1 "$scratch/consumer_static.log"

step "pkg-config --libs dao-static (static library, documented way)"
static_flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs dao-static)
echo "$static_flags"
case " $static_flags " in
  *" -ldao "*) fail "dao-static.pc says -ldao, which the linker resolves to libdao.so" ;;
esac
# shellcheck disable=SC2086
"$cc" "${cflags_strict[@]}" "$here/consumer.c" -o "$scratch/consumer_dao_static" $static_flags
dynamic=$(readelf -d "$scratch/consumer_dao_static")
case $dynamic in
  *"NEEDED"*"[libdao"*) fail "consumer_dao_static still needs the shared libdao" ;;
esac
# Without LD_LIBRARY_PATH, and with the installed library out of reach.
env -u LD_LIBRARY_PATH "$scratch/consumer_dao_static" > "$scratch/consumer_dao_static.log" ||
  { cat "$scratch/consumer_dao_static.log"; fail "consumer_dao_static failed"; }
tail -n 1 "$scratch/consumer_dao_static.log"

step "find_package(dao) with CMAKE_PREFIX_PATH=$prefix"
cmake -S "$here/consumer_cmake" -B "$scratch/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$scratch/cmake-configure.log" ||
  { cat "$scratch/cmake-configure.log"; fail "configuring the find_package consumer failed"; }
cmake --build "$scratch/cmake-build" > "$scratch/cmake-build.log" 2>&1 ||
  { cat "$scratch/cmake-build.log"; fail "building the find_package consumer failed"; }
"$scratch/cmake-build/consumer" > "$scratch/consumer_cmake.log" ||
  { cat "$scratch/consumer_cmake.log"; fail "the find_package consumer failed"; }
tail -n 1 "$scratch/consumer_cmake.log"
"$scratch/cmake-build/consumer_static" > "$scratch/consumer_cmake_static.log" ||
  { cat "$scratch/consumer_cmake_static.log"; fail "the find_package consumer (dao::dao_static) failed"; }
tail -n 1 "$scratch/consumer_cmake_static.log"

step "find_package(dao) in C, C++ and Fortran projects, with and without components"
"$here/cmake_consumers.sh" "$prefix" "$scratch/consumers" "$libdir"

step "every installed file is in README.md's Installed files list"
if command -v python3 > /dev/null; then
  python3 "$here/../packaging/check-docs-lists.py" "$here/../.." --installed "$prefix"
else
  echo "python3 not found: skipped"
fi

step "installed dao tool"
"$prefix/bin/dao" --help > "$scratch/dao-help.txt" || fail "dao --help failed"
grep -q "Usage: dao" "$scratch/dao-help.txt" || fail "dao --help printed no usage"
# No LD_LIBRARY_PATH: the tool finds the installed library by itself.
"$prefix/bin/dao" info > "$scratch/dao-info.txt" || { cat "$scratch/dao-info.txt"; fail "dao info failed"; }
cat "$scratch/dao-info.txt"
grep -q "^sim: 2 devices" "$scratch/dao-info.txt" || fail "dao info does not show 2 sim devices"
tool_version=$("$prefix/bin/dao" --version) || fail "dao --version failed"
case $tool_version in
  *"$version"*) echo "$tool_version" ;;
  *) fail "dao --version printed '$tool_version', not $version" ;;
esac

step "SONAME and exported symbols"
lib=$(readlink -f "$libdir/libdao.so")
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
echo "$lib: SONAME $soname"
[ "$soname" = "libdao.so.0" ] || fail "SONAME is '$soname', expected libdao.so.0"
[ -e "$libdir/libdao.so.0" ] || fail "the libdao.so.0 link was not installed"
# Type A entries are symbol-version nodes of a version script, not symbols.
nm -D --defined-only "$lib" | awk 'NF >= 3 && $2 != "A" { print $3 }' > "$scratch/exports.txt"
count=$(wc -l < "$scratch/exports.txt")
others=$(grep -v '^dao_' "$scratch/exports.txt" || true)
if [ -n "$others" ]; then
  printf "%s\n" "$others" | sed -n 1,20p
  fail "libdao exports symbols without the dao_ prefix"
fi
echo "$count exported symbols, all dao_*"

echo
echo "install test: OK"
