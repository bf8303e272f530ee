#!/usr/bin/env bash
# `dao plan` agrees with the bench (issue 18): each shared trace of the
# bench's quick set is converted with `dao convert`, planned with
# `dao plan`, and the capacity it gives is probed with bench_traces' own
# replay (`--probe FILE CAPACITY`, from the CSV, another code path): it
# must run there, and one search step less must not.
#
# Usage: run_plan_vs_bench_test.sh <path-to-dao> <path-to-bench_traces> <traces-dir>
set -euo pipefail

dao=$1
bench=$2
traces=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
clean_env=(env -u DAO_SIM_DEVICES -u DAO_SIM_COSTS -u DAO_ALLOCATOR -u DAO_ALLOC_CONF
  -u DAO_ALLOCATOR_SIM -u DAO_ALLOC_CONF_SIM -u DAO_TRACE -u DAO_TRACE_OPTIONS)

checked=0
for csv in "$traces"/minimalloc/*.csv "$traces"/somas/resnet50.csv; do
  [ -f "$csv" ] || continue
  name=$(basename "$csv" .csv)
  "${clean_env[@]}" "$dao" convert "$csv" -o "$out/$name.jsonl" > /dev/null 2> "$out/$name.err" ||
    { fail "$name: dao convert failed: $(cat "$out/$name.err")"; continue; }
  "${clean_env[@]}" "$dao" plan "$out/$name.jsonl" --json > "$out/$name.plan" 2> "$out/$name.err" ||
    { fail "$name: dao plan failed: $(cat "$out/$name.err")"; continue; }
  cap=$(grep -oE '"capacity":[0-9]+' "$out/$name.plan" | head -1 | cut -d: -f2)
  step=$(grep -oE '"step":[0-9]+' "$out/$name.plan" | head -1 | cut -d: -f2)
  status=0
  "${clean_env[@]}" "$bench" --probe "$csv" "$cap" > "$out/$name.probe" 2>&1 || status=$?
  [ "$status" -eq 0 ] || fail "$name: plan says $cap bytes; bench_traces --probe exits $status there: $(cat "$out/$name.probe")"
  status=0
  "${clean_env[@]}" "$bench" --probe "$csv" "$((cap - step))" > "$out/$name.probe" 2>&1 || status=$?
  [ "$status" -eq 3 ] || fail "$name: plan says $cap bytes; bench_traces --probe at $((cap - step)) exits $status, expected 3 (out of memory)"
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || fail "no trace found under $traces"
if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "dao plan agrees with bench_traces on $checked trace(s)"
