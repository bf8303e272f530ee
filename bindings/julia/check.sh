#!/usr/bin/env bash
# Checks the Julia binding (bindings/julia/Dao) against a libdao build.
#
#   bindings/julia/check.sh BUILD_DIR
#
# 1. Static checks that need no Julia (check.py): every ccall against the
#    symbols of BUILD_DIR/libdao.so and the prototypes of include/dao/*.h,
#    coverage of the C API, struct layouts and constants against a compiled C
#    probe, and the structure of the Julia sources.
# 2. The Julia test suite (Dao/test/runtests.jl) when `julia` is on PATH, with
#    DAO_LIBRARY=BUILD_DIR/libdao.so and DAO_SIM_DEVICES=2x64MiB; otherwise it
#    says so and stops with success.
# Exits non-zero when a static check or a Julia test fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)

echo "== static checks of the Julia binding"
python3 "$here/check.py" "$build"

if ! command -v julia >/dev/null 2>&1; then
  echo "julia not found: Julia tests SKIPPED (static checks passed)"
  exit 0
fi

echo "== Julia tests ($(julia --version))"
export DAO_LIBRARY="$build/libdao.so"
export DAO_SIM_DEVICES=2x64MiB
# The tests expect libdao's default strategies.
unset DAO_LIB_DIR DAO_ALLOCATOR DAO_ALLOC_CONF DAO_NO_CACHING
for kind in CPU CUDA CUDA_PINNED CUDA_MANAGED SIM; do
  unset "DAO_ALLOCATOR_$kind" "DAO_ALLOC_CONF_$kind"
done
# Two threads, so that the tests also cover work handed between Julia threads.
exec julia --startup-file=no --check-bounds=yes --threads=2 --project="$here/Dao" \
  "$here/Dao/test/runtests.jl"
