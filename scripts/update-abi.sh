#!/usr/bin/env bash
# Regenerates the ABI baseline on purpose, from a build of this tree:
#   abi/libdao.symbols          the exported symbols, sorted
#   abi/libdao.abi              abidw dump of the public interface
#   debian/libdao<major>.symbols  the Debian symbols file: symbols already
#                               listed keep their version, new ones get the
#                               version of include/dao/version.h
# Run it when a release adds API (so that the additions are guarded from
# then on), or after an ABI break together with a new major version and
# SONAME (scripts/bump-version.sh). It refuses to record an incompatible
# change under the same SONAME unless --force is given. See docs/abi.md.
#
# Usage: scripts/update-abi.sh [--force] BUILD_DIR
# The build must be RelWithDebInfo (or Debug): abidw reads the debug info.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/abi-common.sh
. "$root/scripts/abi-common.sh"

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
if [ "$#" -ne 1 ]; then
  echo "usage: $0 [--force] BUILD_DIR" >&2
  exit 2
fi
for tool in abidw abidiff nm readelf; do
  command -v "$tool" > /dev/null 2>&1 ||
    { echo "error: $tool not found (Debian: apt-get install abigail-tools binutils)" >&2; exit 2; }
done
build=$(cd "$1" && pwd)
lib=$(dao_abi_library "$build") || exit $?
src=$(dao_abi_source_dir "$build")
if [ "$(cd "${src:-/nonexistent}" 2> /dev/null && pwd -P)" != "$(cd "$root" && pwd -P)" ]; then
  echo "error: $build was configured from '${src}', not from $root" >&2
  exit 2
fi
version=$(sed -n 's/^#define DAO_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
  "$root/include/dao/version.h" | paste -sd.)
major=${version%%.*}
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libdao.so.$major" ]; then
  echo "error: SONAME $soname does not match version $version: rebuild after changing version.h" >&2
  exit 2
fi

# Only a compatible change, or a break that comes with a new SONAME, may be
# recorded: the check says which.
if [ -f "$root/abi/libdao.abi" ] && [ "$force" -eq 0 ]; then
  base_soname=$(grep -o "soname='[^']*'" "$root/abi/libdao.abi" | head -n 1 | sed "s/soname='\(.*\)'/\1/")
  if [ "$base_soname" = "$soname" ] && ! "$root/scripts/check-abi.sh" "$build" > "$build/check-abi.log" 2>&1; then
    cat "$build/check-abi.log"
    echo "error: the ABI breaks but the SONAME is still $soname. Bump the major version" >&2
    echo "  (scripts/bump-version.sh), rebuild, and run this again; --force overrides." >&2
    exit 1
  fi
fi

mkdir -p "$root/abi"
dao_abi_exports "$lib" > "$root/abi/libdao.symbols"
dao_abi_dump "$lib" "$root/include" "$root/abi/libdao.abi"
echo "wrote abi/libdao.symbols ($(wc -l < "$root/abi/libdao.symbols") symbols) and abi/libdao.abi ($soname)"

# The Debian symbols file: one per SONAME, named after the library package.
package=libdao$major
symbols_file=$root/debian/$package.symbols
if [ -d "$root/debian" ]; then
  tmp=$(mktemp)
  other_sections=""
  if [ -f "$symbols_file" ]; then
    # Sections of other libraries in the package (the Fortran binding's)
    # are kept as they are.
    other_sections=$(awk -v lib="libdao.so.$major" '
      /^[^ #*]/ { keep = ($1 != lib) } keep { print }' "$symbols_file")
  fi
  {
    echo "libdao.so.$major $package #MINVER#"
    echo "* Build-Depends-Package: libdao-dev"
    while read -r sym; do
      # A symbol keeps the version that introduced it.
      old=""
      if [ -f "$symbols_file" ]; then
        old=$(sed -n "s/^ $sym@Base \(.*\)/\1/p" "$symbols_file")
      fi
      echo " $sym@Base ${old:-$version}"
    done < "$root/abi/libdao.symbols"
    if [ -n "$other_sections" ]; then printf '%s\n' "$other_sections"; fi
  } > "$tmp"
  mv "$tmp" "$symbols_file"
  chmod 644 "$symbols_file"
  echo "wrote debian/$package.symbols"
  if [ -f "$root/debian/control" ] && ! grep -q "^Package: $package\$" "$root/debian/control"; then
    echo "note: debian/control has no package $package: rename the library package (and its"
    echo "  debian/libdao*.{install,symbols} files) for SONAME $soname; see docs/packaging.md"
  fi
fi
