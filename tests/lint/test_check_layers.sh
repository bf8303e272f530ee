#!/usr/bin/env bash
# Tests scripts/check-layers.py itself: it passes on the tree as it is, and
# fails on copies of src/ with a planted include that runs up a layer, one
# that runs across features, and a folder that is in no layer.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
check="$root/scripts/check-layers.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 "$check" --root "$root"

expect_failure() { # what, then the planted file's relative path
  local what=$1 planted=$2
  if python3 "$check" --root "$work/tree" >"$work/out" 2>&1; then
    echo "FAIL: the check passed with $what"; cat "$work/out"; exit 1
  fi
  grep -q "$planted" "$work/out" || { echo "FAIL: $what not named"; cat "$work/out"; exit 1; }
  echo "ok: refused $what"
}

fresh() { rm -rf "$work/tree"; mkdir -p "$work/tree"; cp -r "$root/src" "$work/tree/src"; }

fresh
printf '#include "capi/guard.hpp"\n' >>"$work/tree/src/util/format.cpp"
expect_failure "util including capi" "src/util/format.cpp"

fresh
printf '#include "strategy/strategy.hpp"\n' >>"$work/tree/src/resource/host.cpp"
expect_failure "resource including strategy" "src/resource/host.cpp"

fresh
printf '#include "tiered/tiered_pool.hpp"\n' >>"$work/tree/src/recycle/collection.cpp"
expect_failure "one feature including another" "src/recycle/collection.cpp"

fresh
mkdir -p "$work/tree/src/extra"
printf '#include "core/error.hpp"\n' >"$work/tree/src/extra/thing.cpp"
expect_failure "a folder in no layer" "src/extra/thing.cpp"

echo "check-layers: its own tests passed"
