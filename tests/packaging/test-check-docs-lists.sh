#!/usr/bin/env bash
# ctest docs_lists_check: check-docs-lists.py passes on a copy of the tree's
# README, docs, headers and top-level CMakeLists.txt, and fails, naming what
# is missing, when a page, a public header or a build option is added there
# without being listed.
# Usage: test-check-docs-lists.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check=$src/tests/packaging/check-docs-lists.py
fail() { echo "FAIL: $*" >&2; exit 1; }

fresh() {
  rm -rf "$work/tree"
  mkdir -p "$work/tree/docs"
  cp "$src/README.md" "$src/CMakeLists.txt" "$work/tree/"
  cp "$src"/docs/*.md "$work/tree/docs/"
  cp -r "$src/include" "$work/tree/include"
}
# refused WHAT: the check must fail and print WHAT.
refused() {
  if python3 "$check" "$work/tree" > "$work/out.txt" 2>&1; then
    cat "$work/out.txt"; fail "the check passed with $1 unlisted"
  fi
  grep -qF "$1" "$work/out.txt" || { cat "$work/out.txt"; fail "the check did not name $1"; }
  echo "refused: $(grep -F "$1" "$work/out.txt" | head -n 1)"
}

fresh
python3 "$check" "$work/tree" || fail "the check fails on the copy of the tree"

printf 'A new page {#new_page}\n==========\n' > "$work/tree/docs/new-page.md"
refused "docs/new-page.md is not linked from README.md"
refused "docs/new-page.md (@ref new_page) is not listed in docs/mainpage.md"

fresh
printf '/* a new area */\n' > "$work/tree/include/dao/new_area.h"
refused "include/dao/new_area.h is not in README.md's Headers list"
refused "include/dao/new_area.h is not in docs/mainpage.md's API list"

fresh
printf 'option(DAO_NEW_OPTION "new" OFF)\n' >> "$work/tree/CMakeLists.txt"
refused "build option DAO_NEW_OPTION is not in README.md's Build options"

fresh
mkdir -p "$work/prefix/lib/x86_64-linux-gnu" "$work/prefix/share/new"
touch "$work/prefix/lib/x86_64-linux-gnu/libdao.so.0" "$work/prefix/share/new/file.txt"
if python3 "$check" "$work/tree" --installed "$work/prefix" > "$work/out.txt" 2>&1; then
  cat "$work/out.txt"; fail "the check passed with an unlisted installed file"
fi
grep -qF "installed file share/new/file.txt matches no entry" "$work/out.txt" ||
  { cat "$work/out.txt"; fail "the check did not name share/new/file.txt"; }
if grep -qF "lib/libdao.so.0 matches no entry" "$work/out.txt"; then
  fail "lib/<multiarch>/libdao.so.0 was not read as lib/libdao.so.0"
fi
echo "refused: installed share/new/file.txt"
echo "docs_lists_check: OK"
