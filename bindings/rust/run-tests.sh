#!/bin/sh
# Runs the Rust binding's tests against the libdao built in BUILD_DIR (a CMake
# build directory of libdao that holds libdao.so):
#
#   bindings/rust/run-tests.sh BUILD_DIR
#
# Builds under BUILD_DIR/rust-target, so the source tree stays clean; uses no
# crate from a registry (--offline). Exits non-zero when a test fails; prints
# "skipped: cargo not found" and exits 0 when there is no cargo on PATH or in
# $HOME/.cargo/bin. CTest runs it as the test `rust_bindings`.
set -eu

if [ "$#" -ne 1 ]; then
  echo "usage: $0 BUILD_DIR (a CMake build directory of libdao holding libdao.so)" >&2
  exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || {
  echo "$0: no build directory $1" >&2
  exit 2
}
if [ ! -e "$build/libdao.so" ]; then
  echo "$0: $build holds no libdao.so; build libdao first (cmake --build $1)" >&2
  exit 2
fi

cargo=$(command -v cargo 2>/dev/null || true)
if [ -z "$cargo" ] && [ -x "${HOME:-/nonexistent}/.cargo/bin/cargo" ]; then
  cargo="$HOME/.cargo/bin/cargo"
  PATH="$HOME/.cargo/bin:$PATH" # rustc, rustdoc beside it
  export PATH
fi
if [ -z "$cargo" ]; then
  echo "skipped: cargo not found (on PATH or in \$HOME/.cargo/bin)"
  exit 0
fi

DAO_LIB_DIR=$build
DAO_INCLUDE_DIR=$(cd "$here/../../include" && pwd)
LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
DAO_SIM_DEVICES=2x64MiB
CARGO_TARGET_DIR=$build/rust-target
export DAO_LIB_DIR DAO_INCLUDE_DIR LD_LIBRARY_PATH DAO_SIM_DEVICES CARGO_TARGET_DIR
# The tests check the library's defaults: do not let the caller's choices in.
unset DAO_ALLOCATOR DAO_ALLOC_CONF DAO_NO_CACHING || true

# Share the machine: one job unless the caller says otherwise.
jobs=${DAO_RUST_JOBS:-1}

cd "$here"
# Cargo writes Cargo.lock beside the workspace manifest (no dependencies, so
# nothing to pin; .gitignore ignores it). Leave the tree as it was found.
if [ ! -e Cargo.lock ]; then
  trap 'rm -f "$here/Cargo.lock"' EXIT
fi
echo "== $("$cargo" --version) against $build/libdao.so"
"$cargo" test --offline --workspace --no-fail-fast -j "$jobs"
# The CUDA places once more with libdao's fake CUDA driver (host memory
# behind the driver API, built with the C tests), so that the CUDA paths run
# on machines without a GPU too.
fake="$build/tests/libdao_fake_cuda.so"
if [ -e "$fake" ]; then
  echo "== again with the fake CUDA driver ($fake, 2 devices)"
  DAO_CUDA_LIBRARY=$fake FAKE_CUDA_DEVICES=2 FAKE_CUDA_CAPACITY=64M \
    "$cargo" test --offline -p dao --tests --no-fail-fast -j "$jobs"
fi
"$cargo" doc --offline --no-deps --workspace -j "$jobs"
echo "== Rust binding: all tests passed"
