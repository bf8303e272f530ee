#!/usr/bin/env bash
# Checks the ABI of a libdao build against the baseline in abi/:
#   1. the exported symbols (abi/libdao.symbols): a removed symbol fails, an
#      added one is reported;
#   2. the SONAME: the same as the baseline's, and libdao.so.<major>;
#   3. abidiff of the library against abi/libdao.abi, with only the types of
#      the public headers counting: any change that is not an addition fails
#      (a changed function signature, a changed public struct or enum value),
#      except what docs/abi.md allows (a sized struct growing at its end, an
#      enum's end marker moving);
#   4. debian/libdao<major>.symbols lists every exported symbol (a note only).
# The build must have debug information (RelWithDebInfo or Debug).
#
# Usage: scripts/check-abi.sh BUILD_DIR
# DAO_ABI_BASELINE=DIR compares against another baseline (default: abi/).
# Exit status: 0 compatible (additions allowed), 1 incompatible, 2 usage or
# tool error, 77 the library has no debug information (ctest: skipped).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/abi-common.sh
. "$root/scripts/abi-common.sh"

if [ "$#" -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
for tool in abidiff nm readelf; do
  if ! command -v "$tool" > /dev/null 2>&1; then
    echo "error: $tool not found (Debian: apt-get install abigail-tools binutils)" >&2
    exit 2
  fi
done
build=$(cd "$1" && pwd)
baseline=${DAO_ABI_BASELINE:-$root/abi}
for f in libdao.symbols libdao.abi; do
  [ -f "$baseline/$f" ] || { echo "error: baseline $baseline/$f is missing" >&2; exit 2; }
done
lib=$(dao_abi_library "$build") || exit $?
# The headers of the tree the build came from: a build of a modified copy is
# judged by its own headers.
src=$(dao_abi_source_dir "$build")
[ -d "$src/include/dao" ] || src=$root
headers=$src/include

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
echo "== ABI of $lib"
echo "   against $baseline (headers: $headers)"

# --- 1. exported symbols ---------------------------------------------------------
dao_abi_exports "$lib" > "$work/exports"
LC_ALL=C sort -u "$baseline/libdao.symbols" > "$work/baseline"
removed=$(LC_ALL=C comm -23 "$work/baseline" "$work/exports")
added=$(LC_ALL=C comm -13 "$work/baseline" "$work/exports")
echo "symbols: $(wc -l < "$work/exports") exported, $(wc -l < "$work/baseline") in the baseline"
if [ -n "$removed" ]; then
  echo "INCOMPATIBLE: symbols removed:"
  printf '%s\n' "$removed" | sed 's/^/  /'
  failed=1
fi
if [ -n "$added" ]; then
  echo "added symbols (compatible):"
  printf '%s\n' "$added" | sed 's/^/  /'
fi

# --- 2. SONAME -------------------------------------------------------------------------
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
base_soname=$(grep -o "soname='[^']*'" "$baseline/libdao.abi" | head -n 1 | sed "s/soname='\(.*\)'/\1/")
major=$(sed -n 's/^#define DAO_VERSION_MAJOR \([0-9]*\).*/\1/p' "$src/include/dao/version.h")
echo "SONAME: $soname (baseline: $base_soname, version.h major: $major)"
if [ "$soname" != "libdao.so.$major" ]; then
  echo "INCOMPATIBLE: SONAME $soname does not follow DAO_VERSION_MAJOR ($major)"
  failed=1
fi
if [ "$soname" != "$base_soname" ]; then
  echo "INCOMPATIBLE: the SONAME changed from $base_soname to $soname. If the ABI breaks on"
  echo "  purpose, regenerate the baseline: scripts/update-abi.sh $build (see docs/abi.md)"
  failed=1
fi

# --- 3. abidiff --------------------------------------------------------------------------
dao_abi_suppressions "$headers" > "$work/policy.abignore"
# Added functions are left out of this run (--no-added-syms), so any change
# it still sees is one that can break a program built against the baseline.
rc=0
abidiff --no-added-syms --headers-dir2 "$headers" --drop-private-types \
  --exported-interfaces-only --suppressions "$work/policy.abignore" \
  "$baseline/libdao.abi" "$lib" > "$work/abidiff.txt" 2>&1 || rc=$?
# abidiff's status is a bit field: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.
if [ $((rc & 3)) -ne 0 ]; then
  cat "$work/abidiff.txt"
  echo "error: abidiff failed (status $rc)" >&2
  exit 2
fi
if [ $((rc & 12)) -ne 0 ]; then
  sed 's/^/  /' "$work/abidiff.txt"
  echo "INCOMPATIBLE: abidiff found ABI changes (status $rc: $( [ $((rc & 8)) -ne 0 ] &&
    echo "incompatible change" || echo "change to a function or a public type"))"
  failed=1
else
  echo "abidiff: no incompatible change"
fi
if [ -n "$added" ]; then
  # The signatures of the additions, for the record.
  abidiff --added-fns --added-vars --headers-dir2 "$headers" --drop-private-types \
    --exported-interfaces-only "$baseline/libdao.abi" "$lib" 2>&1 |
    sed -n '/^[0-9]* Added function/,$p' | sed 's/^/  /' || true
fi

# --- 4. the Debian symbols file ------------------------------------------------------------
symbols_file=$src/debian/libdao$major.symbols
if [ -f "$symbols_file" ]; then
  sed -n 's/^ \([A-Za-z_][A-Za-z_0-9]*\)@.*/\1/p' "$symbols_file" | LC_ALL=C sort -u > "$work/debian"
  missing=$(LC_ALL=C comm -13 "$work/debian" "$work/exports")
  if [ -n "$missing" ]; then
    echo "note: not yet in ${symbols_file#"$src"/} (scripts/update-abi.sh adds them):"
    printf '%s\n' "$missing" | sed 's/^/    /'
  fi
fi

if [ "$failed" -ne 0 ]; then
  echo "ABI check: FAILED (docs/abi.md says what may change and how to break the ABI on purpose)"
  exit 1
fi
echo "ABI check: OK"
