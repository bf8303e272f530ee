#!/usr/bin/env bash
# ctest version_consistency: every place that states libdao's version agrees
# with include/dao/version.h, the one source of truth:
#   - the CMake project version (read from version.h by CMakeLists.txt);
#   - the Version of the generated pkg-config files (dao.pc, dao-fortran.pc);
#   - the upstream part of the newest debian/changelog entry;
#   - the newest released section of CHANGELOG.md ("## [X.Y.Z]"), if any
#     release has been made yet.
# scripts/bump-version.sh changes them together (see docs/abi.md).
#
# Usage: check-version.sh SOURCE_DIR CMAKE_PROJECT_VERSION BUILD_DIR
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 SOURCE_DIR CMAKE_PROJECT_VERSION BUILD_DIR" >&2
  exit 2
fi
src=$1
cmake_version=$2
build=$3
failed=0

part() { sed -n "s/^#define DAO_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" "$src/include/dao/version.h"; }
major=$(part MAJOR)
minor=$(part MINOR)
patch=$(part PATCH)
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
  echo "FAIL: include/dao/version.h does not define DAO_VERSION_MAJOR/MINOR/PATCH as numbers"
  exit 1
fi
version=$major.$minor.$patch
echo "include/dao/version.h: $version"

check() { # what, value
  if [ "$2" = "$version" ]; then
    echo "$1: $2"
  else
    echo "FAIL: $1 says '$2', include/dao/version.h says $version"
    failed=1
  fi
}

check "CMake project version" "$cmake_version"

for pc in "$build/dao.pc" "$build/dao-fortran.pc"; do
  if [ -f "$pc" ]; then
    check "$(basename "$pc") Version" "$(sed -n 's/^Version: *//p' "$pc")"
  elif [ "$(basename "$pc")" = dao.pc ]; then
    echo "FAIL: $pc was not generated"
    failed=1
  fi
done
# dao-fortran.pc requires the same version of dao.
if [ -f "$build/dao-fortran.pc" ]; then
  requires=$(sed -n 's/^Requires: *dao *= *//p' "$build/dao-fortran.pc")
  [ -z "$requires" ] || check "dao-fortran.pc Requires dao =" "$requires"
fi

if [ -f "$src/debian/changelog" ]; then
  # "libdao (1:0.1.0-1) unstable; ..." -> 0.1.0 (no epoch, no Debian revision)
  debian=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$src/debian/changelog")
  upstream=${debian#*:}
  upstream=${upstream%-*}
  check "debian/changelog ($debian)" "$upstream"
else
  echo "debian/changelog: not in this tree, skipped"
fi

# The newest "## [X.Y.Z]" heading; "## [Unreleased]" does not count.
released=$(sed -n 's/^## \[\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\)\].*/\1/p' "$src/CHANGELOG.md" | head -n 1)
if [ -n "$released" ]; then
  check "CHANGELOG.md newest release" "$released"
else
  echo "CHANGELOG.md: no released section yet, skipped"
fi

if [ "$failed" -ne 0 ]; then
  echo "version consistency: FAILED (scripts/bump-version.sh X.Y.Z changes them together)"
  exit 1
fi
echo "version consistency: OK"
