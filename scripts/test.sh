#!/usr/bin/env bash
# Builds libdao and runs every test, on a fresh Debian 12 machine too:
#   1. installs the Debian packages it needs when they are missing;
#   2. a normal build: every ctest test (cmocka unit and stress tests, public
#      headers as C99/C++, the CUDA backend against no driver and a fake one,
#      the dao tool, the examples, the installed package through pkg-config
#      and CMake, the Doxygen docs with warnings as errors, a benchmark smoke
#      run, and the checks of the house: layers only call down, the binding
#      raw layers are generated from the headers, the sources are formatted;
#      the Python package's unittest suites and its offline venv install);
#   3. every test of libdao code again under AddressSanitizer +
#      UndefinedBehaviorSanitizer, built with clang and its extra checks and
#      again with GCC (pooled memory poisoned, so a use after free inside a
#      pool is caught), and every multi-threaded test under ThreadSanitizer;
#   4. the libFuzzer harnesses of tests/fuzz (clang, ASan + UBSan): every
#      regression input, then each harness for DAO_FUZZ_SECONDS (default 60)
#      from its checked-in seed corpus (scripts/fuzz.sh).
# Environment: DAO_WERROR=ON makes warnings errors (CI sets it);
# DAO_TEST_SANITIZERS=0 skips steps 3 and 4, DAO_TEST_FUZZ=0 step 4,
# DAO_TEST_ASAN_CC=clang (or gcc) builds only that compiler's ASan build;
# DAO_TEST_JOBS sets the parallelism.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${DAO_TEST_JOBS:-$(nproc)}
werror=${DAO_WERROR:-OFF}

# --- 1. packages -----------------------------------------------------------
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_file() { [ -e "$1" ] || missing+=("$2"); }
need_cmd cmake cmake
need_cmd make make
need_cmd gcc gcc
need_cmd g++ g++
need_cmd pkg-config pkg-config
need_cmd doxygen doxygen
need_cmd readelf binutils
need_file /usr/include/cmocka.h libcmocka-dev
need_file /usr/include/jemalloc/jemalloc.h libjemalloc-dev
need_file /usr/include/mimalloc.h libmimalloc-dev
# The Fortran binding and the Julia binding's static checks.
need_cmd gfortran gfortran
need_cmd python3 python3
# The Python package's tests: a fresh venv (with pip from Debian's wheels).
need_file /usr/lib/python3/dist-packages/pip python3-pip
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# Partitioned memory over MPI (libdao-mpi and its mpirun tests).
need_cmd mpicc libopenmpi-dev
need_cmd mpirun openmpi-bin
# The ABI check (abidiff against abi/) and the fuzz harnesses (libFuzzer).
need_cmd abidiff abigail-tools
need_cmd clang clang
# The format check (scripts/check-format.sh).
need_cmd clang-format-14 clang-format-14
need_file /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a libclang-rt-14-dev
# The pages of `dao view` loaded in a headless browser (ctest tool_view_browser).
need_cmd chromium chromium
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

run_ctest() { # build-dir, extra ctest args...
  local dir=$1; shift
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" "$@")
}

# --- 2. the normal build and every test ---------------------------------------
echo "== build (DAO_WERROR=$werror)"
cmake -S "$root" -B "$root/build-test" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDAO_WERROR="$werror" -DDAO_BUILD_TESTS=ON >/dev/null
cmake --build "$root/build-test" -j "$jobs"
echo "== tests"
run_ctest "$root/build-test"

# --- 3. sanitizers --------------------------------------------------------------
if [ "${DAO_TEST_SANITIZERS:-1}" != "0" ]; then
  # Impossible sizes are part of the tests: let the sanitizer allocator say no
  # instead of aborting.
  export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Lock-order inversions are reported with both stacks (docs/reliability.md).
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  # Built with clang, whose UndefinedBehaviorSanitizer also checks what
  # GCC's does not: float-to-integer conversions out of range, enum loads
  # outside the enum's values, implicit truncations of integers, calls
  # through a function pointer of the wrong type (issue 20: GCC's build
  # missed an enum read as int); and with GCC, whose AddressSanitizer
  # instruments what it compiles differently (and whose build is the one
  # users' packages get). DAO_TEST_ASAN_CC names the compilers, "clang gcc"
  # by default; "clang" alone saves about three minutes.
  for asan_cc in ${DAO_TEST_ASAN_CC:-clang gcc}; do
    echo "== AddressSanitizer + UndefinedBehaviorSanitizer ($asan_cc)"
    asan_checks=address,undefined
    asan_env=()
    asan_flags=()
    asan_dir="$root/build-asan-$asan_cc"
    if [ "$asan_cc" = clang ]; then
      asan_checks=address,undefined,float-cast-overflow,enum,implicit-integer-truncation
      # C programs link the C++ library: they need clang's C++ sanitizer runtime.
      asan_env=(CC=clang CXX=clang++)
      asan_flags=(-DCMAKE_EXE_LINKER_FLAGS=-fsanitize-link-c++-runtime
        "-DCMAKE_C_STANDARD_LIBRARIES=-lstdc++" -DDAO_BUILD_BINDINGS=OFF)
    elif [ "$asan_cc" = gcc ]; then
      asan_env=(CC=gcc CXX=g++)
    else
      echo "scripts/test.sh: DAO_TEST_ASAN_CC: '$asan_cc' is not clang or gcc" >&2
      exit 2
    fi
    env "${asan_env[@]}" cmake -S "$root" -B "$asan_dir" -DCMAKE_BUILD_TYPE=Debug \
      -DDAO_WERROR="$werror" -DDAO_SANITIZE="$asan_checks" -DDAO_BUILD_BENCH=OFF \
      -DDAO_BUILD_EXAMPLES=OFF "${asan_flags[@]}" >/dev/null
    cmake --build "$asan_dir" -j "$jobs"
    # Every test that runs libdao code; not the benchmarks (timings), the
    # header and docs checks (nothing runs), the install and ABI checks (a
    # sanitizer build is not a release), nor the bindings (their programs
    # would need the sanitizer runtime preloaded; clang's build has none).
    run_ctest "$asan_dir" -LE "bench|headers|docs|install|abi|rust|julia|fortran|python|soak|lint"
  done
  echo "== ThreadSanitizer"
  cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=Debug -DDAO_WERROR="$werror" \
    -DDAO_SANITIZE=thread -DDAO_BUILD_BENCH=OFF -DDAO_BUILD_EXAMPLES=OFF \
    -DDAO_BUILD_TOOLS=OFF >/dev/null
  # Every test of code that runs on several threads.
  tsan_tests="test_stress test_interop test_status test_stream test_stacking test_caching_basics test_caching_model test_caching_streams test_caching_record_fails test_caching_nocache test_caching_oom test_caching_release test_caching_snapshot test_recycle test_recycle_stress test_tiered test_whole test_reentrancy test_trace"
  # shellcheck disable=SC2086
  cmake --build "$root/build-tsan" -j "$jobs" --target $tsan_tests
  run_ctest "$root/build-tsan" -R "^($(echo $tsan_tests | tr ' ' '|'))\$"
  if [ "${DAO_TEST_FUZZ:-1}" != "0" ]; then
    echo "== fuzz"
    # A fixed seed: each run starts from the same mutations, so that a run
    # fails for a change, not for luck (long runs look for new bugs).
    DAO_WERROR="$werror" DAO_FUZZ_JOBS="$jobs" DAO_FUZZ_SEED="${DAO_FUZZ_SEED:-1}" \
      "$root/scripts/fuzz.sh" "${DAO_FUZZ_SECONDS:-60}"
  fi
fi
echo "== all tests passed"
