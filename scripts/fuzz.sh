#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, AddressSanitizer +
# UndefinedBehaviorSanitizer, libdao instrumented for coverage) in build-fuzz/
# and runs each for SECONDS seconds (default 60) from its checked-in seed
# corpus, side by side, after the inputs under
# tests/fuzz/regressions/<harness>/ (each once). Prints the executions of each
# harness; exits non-zero if any harness crashed or broke an invariant,
# leaving the input under build-fuzz/crashes/<harness>/.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment: DAO_FUZZ_JOBS (build parallelism, default 2);
# DAO_FUZZ_PARALLEL (harnesses run at once, default: the number of cores);
# DAO_FUZZ_SEED (libFuzzer's -seed, so that runs start alike; default: a new
# one each run);
# DAO_FUZZ_SKIP_KNOWN=1 steers the harnesses around the bugs they already
# found (see tests/fuzz/README.md); ASAN_OPTIONS / UBSAN_OPTIONS override the
# defaults below. Longer runs and crash minimisation: tests/fuzz/README.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
jobs=${DAO_FUZZ_JOBS:-2}
parallel=${DAO_FUZZ_PARALLEL:-$(nproc)}
build="$root/build-fuzz"
harnesses="fuzz_allocator fuzz_recycle fuzz_tiered fuzz_config"

case "$seconds" in
  ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac
for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null 2>&1 || { echo "fuzz.sh: $tool is needed (apt-get install clang cmake)" >&2; exit 2; }
done

start=$(date +%s)
echo "== build ($build: clang, address+undefined, libFuzzer)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DDAO_SANITIZE=address,undefined -DDAO_BUILD_FUZZ=ON -DDAO_FUZZ_SECONDS="$seconds" \
  -DDAO_WERROR="${DAO_WERROR:-ON}" -DDAO_BUILD_BINDINGS=OFF -DDAO_BUILD_BENCH=OFF \
  -DDAO_BUILD_EXAMPLES=OFF -DDAO_BUILD_TOOLS=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $harnesses

export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One harness: its regression inputs, then SECONDS of fuzzing. Writes one
# summary line to $work/summary ("ok <execs>" or "FAILED <what>").
run_harness() {
  local h=$1
  local work="$build/fuzz-run/$h"
  local crashes="$build/crashes/$h"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$crashes"
  cp "$root/tests/fuzz/corpus/$h"/* "$work/corpus/" 2>/dev/null || true
  # Inputs that once found a bug must pass first.
  local input
  for input in "$root/tests/fuzz/regressions/$h"/*; do
    [ -f "$input" ] || continue
    if ! "$build/tests/$h" "$input" >"$work/regression.log" 2>&1; then
      cp "$input" "$crashes/"
      {
        grep -E "INVARIANT BROKEN|ERROR:|runtime error" "$work/regression.log" | head -n 5 || true
        echo "== $h: FAILED on the regression input $input (log $work/regression.log)"
      } >"$work/report"
      echo "FAILED regression:$(basename "$input")" >"$work/summary"
      return
    fi
  done
  local extra=()  # dictionary, seed
  if [ -f "$root/tests/fuzz/$h.dict" ]; then extra=(-dict="$root/tests/fuzz/$h.dict"); fi
  if [ -n "${DAO_FUZZ_SEED:-}" ]; then extra+=(-seed="$DAO_FUZZ_SEED"); fi
  local rc=0
  "$build/tests/$h" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "${extra[@]}" "$work/corpus" >"$work/fuzz.log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)
  if [ "$rc" -ne 0 ]; then
    {
      grep -E "INVARIANT BROKEN|ERROR:|runtime error|SUMMARY" "$work/fuzz.log" | head -n 20 || true
      echo "== $h: FAILED (exit $rc) after ${execs:-?} executions; input(s) in $crashes/, log $work/fuzz.log"
    } >"$work/report"
    echo "FAILED after-${execs:-?}-executions" >"$work/summary"
    return
  fi
  echo "ok ${execs:-?}" >"$work/summary"
}

# The harnesses run side by side, `parallel` at a time (each is one process
# plus libdao's stream threads).
echo "== fuzzing: $harnesses, ${seconds} s each, $parallel at a time"
for h in $harnesses; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_harness "$h" &
done
wait

summary=()
failed=0
for h in $harnesses; do
  work="$build/fuzz-run/$h"
  [ -f "$work/report" ] && cat "$work/report"
  read -r state detail <"$work/summary" || { state=FAILED; detail="no-result"; }
  if [ "$state" = ok ]; then
    summary+=("$h $detail executions")
  else
    failed=1
    summary+=("$h FAILED $detail")
  fi
done

echo "== fuzz summary (${seconds} s each, $(($(date +%s) - start)) s in all)"
for line in "${summary[@]}"; do
  printf '   %-16s %s\n' "${line%% *}" "${line#* }"
done
if [ "$failed" -ne 0 ]; then
  echo "== fuzz: FAILED (inputs under $build/crashes/; tests/fuzz/README.md says how to reproduce)"
  exit 1
fi
