#!/usr/bin/env bash
# Checks `dao replay` and `dao plan` (issue 18) on small traces made here:
# their figures, that plan agrees with direct probes of replay, that a
# trace recorded with DAO_TRACE (of a replay) replays to the same peak, that
# a cut-short file still replays, and the bad-input rows of each
# subcommand (missing, foreign, truncated files, unknown options: exit 2
# with a message).
#
# Usage: run_replay_plan_test.sh <path-to-dao>
set -euo pipefail

dao=$1
. "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh"
json_field() { grep -oE "\"$2\":[0-9]+" "$out/$1" | head -1 | cut -d: -f2; }

# A trace of 3000 operations: buffers of 1 KiB to 2 MiB, at most 40 live.
trace=$out/small.jsonl
awk 'BEGIN {
  print "{\"format\":\"dao-trace\",\"version\":1,\"libdao\":\"test\",\"pid\":0,\"clock\":\"logical\",\"start_ns\":0,\"source\":\"ops-jsonl\"}";
  print "{\"k\":\"allocator\",\"t\":0,\"id\":1,\"place\":\"sim:0\",\"strategy\":\"caching\",\"config\":\"\",\"capacity\":0}";
  seed = 7; n = 0; t = 0;
  for (i = 0; i < 3000; ++i) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    if (n > 0 && (seed % 100 < 45 || n >= 40)) {
      j = seed % n; p = live[j]; live[j] = live[n - 1]; --n;
      printf "{\"k\":\"free\",\"t\":%d,\"a\":1,\"ptr\":%d,\"s\":0}\n", ++t, p;
    } else {
      size = 1024 + (seed % 2048) * 1024;
      p = 4096 * (i + 1); live[n++] = p;
      printf "{\"k\":\"alloc\",\"t\":%d,\"a\":1,\"ptr\":%d,\"size\":%d,\"req\":%d,\"s\":0}\n", ++t, p, size, size;
    }
  }
}' > "$trace"

# --help
run replay_help 0 -- replay --help
has replay_help.out "^usage: dao replay TRACE"
run plan_help 0 -- plan --help
has plan_help.out "^usage: dao plan TRACE"
run help_replay 0 -- help replay
has help_replay.out "^usage: dao replay"

# replay: figures, text and JSON
run replay 0 -- replay "$trace"
has replay.out "^fits: +yes"
has replay.out "^peak reserved: "
has replay.out "^system calls: "
has replay.out "^driver \(sim\): "
run replay_json 0 -- replay "$trace" --json --capacity 1GiB --strategy buddy
has replay_json.out '"fits":true'
has replay_json.out '"capacity":1073741824'
has replay_json.out '"strategy":"buddy"'
run replay_small 3 -- replay "$trace" --capacity 1MiB
has replay_small.out "^fits: +no: allocation of .* on line [0-9]+ failed"

# plan agrees with direct probes: its capacity fits, one step less does not
run plan 0 -- plan "$trace" --json --strategy buddy
has plan.out '"max_load":[0-9]+'
step=$(json_field plan.out step)
cap_default=$(grep -oE '"capacity":[0-9]+' "$out/plan.out" | sed -n 1p | cut -d: -f2)
cap_buddy=$(grep -oE '"capacity":[0-9]+' "$out/plan.out" | sed -n 2p | cut -d: -f2)
max_load=$(json_field plan.out max_load)
[ -n "$cap_default" ] && [ -n "$cap_buddy" ] || fail "plan gave no capacities: $(cat "$out/plan.out")"
[ "$cap_default" -ge "$max_load" ] || fail "plan's capacity $cap_default is below the max load $max_load"
run probe_default_at 0 -- replay "$trace" --capacity "$cap_default"
run probe_default_below 3 -- replay "$trace" --capacity "$((cap_default - step))"
run probe_buddy_at 0 -- replay "$trace" --strategy buddy --capacity "$cap_buddy"
run probe_buddy_below 3 -- replay "$trace" --strategy buddy --capacity "$((cap_buddy - step))"
run plan_text 0 -- plan "$trace" --strategy caching --config expandable_segments=false
has plan_text.out "^max load: "
has plan_text.out "^best fit: "
has plan_text.out "^This job needs a .* card with libdao defaults and a .* card with caching \(expandable_segments=false\)"

# a recorded trace (the replay itself, under DAO_TRACE) replays to the same peak
rec=$out/recorded.jsonl
run recorded 0 "DAO_TRACE=$rec" "DAO_TRACE_OPTIONS=flush_ms=10" -- replay "$trace" --json
peak1=$(json_field recorded.out peak_allocated)
run rereplay 0 -- replay "$rec" --json --allocator 1
peak2=$(json_field rereplay.out peak_allocated)
[ "$peak1" = "$peak2" ] || fail "recorded replay: peak allocated $peak2, the original $peak1"
allocs1=$(json_field recorded.out allocs)
allocs2=$(json_field rereplay.out allocs)
[ "$allocs1" = "$allocs2" ] || fail "recorded replay: $allocs2 allocations, the original $allocs1"

head -1 "$rec" | grep -q '"encoding":"binary"' || fail "the recorder's default is not the binary encoding"

# dao convert turns it into JSON Lines with the same records: it replays the same
run convert_recorded 0 -- convert "$rec" -o "$out/recorded-text.jsonl" --json
has convert_recorded.out '"from": "dao-trace"'
if grep -q '"encoding"' "$out/recorded-text.jsonl"; then fail "converted trace still says binary"; fi
run rereplay_text 0 -- replay "$out/recorded-text.jsonl" --json --allocator 1
[ "$(json_field rereplay_text.out peak_allocated)" = "$peak1" ] ||
  fail "converted recording: peak allocated $(json_field rereplay_text.out peak_allocated), the original $peak1"
[ "$(json_field rereplay_text.out allocs)" = "$allocs1" ] || fail "converted recording: allocations differ"

# a file cut short (as a killed recorder leaves it) still replays, and says so
head -c "$(( $(wc -c < "$rec") / 2 ))" "$rec" > "$out/cut.jsonl"
run cut 0 -- replay "$out/cut.jsonl"
has cut.err "last line is incomplete"
head -c "$(( $(wc -c < "$out/recorded-text.jsonl") / 2 ))" "$out/recorded-text.jsonl" > "$out/cut-text.jsonl"
run cut_text 0 -- replay "$out/cut-text.jsonl"
has cut_text.err "last line is incomplete"

# bad input: exit 2 and a message, for each subcommand
printf 'id,lower,upper,size\n1,0,10,4096\n' > "$out/foreign.csv"
{ sed -n 1,3p "$trace"; echo '{"k":"alloc","t":'; sed -n 4,8p "$trace"; } > "$out/broken.jsonl"
head -1 "$trace" > "$out/header_only.jsonl"
sed 's/"version":1/"version":2/' "$trace" > "$out/v2.jsonl"
for cmd in replay plan; do
  run ${cmd}_missing 2 -- $cmd "$out/no-such-file.jsonl"
  has ${cmd}_missing.err "cannot open"
  run ${cmd}_foreign 2 -- $cmd "$out/foreign.csv"
  has ${cmd}_foreign.err "not a dao trace"
  run ${cmd}_broken 2 -- $cmd "$out/broken.jsonl"
  has ${cmd}_broken.err "broken.jsonl:4: "
  run ${cmd}_empty 2 -- $cmd /dev/null
  has ${cmd}_empty.err "empty file"
  run ${cmd}_version 2 -- $cmd "$out/v2.jsonl"
  has ${cmd}_version.err "version 2"
  run ${cmd}_option 2 -- $cmd "$trace" --frobnicate
  has ${cmd}_option.err "unknown option '--frobnicate'"
  run ${cmd}_no_trace 2 -- $cmd
  has ${cmd}_no_trace.err "no trace file given"
  run ${cmd}_two 2 -- $cmd "$trace" "$trace"
  has ${cmd}_two.err "unexpected argument"
  run ${cmd}_strategy 2 -- $cmd "$trace" --strategy nonesuch
  has ${cmd}_strategy.err "nonesuch"
  run ${cmd}_config 2 -- $cmd "$trace" --strategy caching --config colour=blue
  has ${cmd}_config.err "colour"
  run ${cmd}_missing_value 2 -- $cmd "$trace" --strategy
  has ${cmd}_missing_value.err "missing value after '--strategy'"
done
run replay_capacity 2 -- replay "$trace" --capacity lots
has replay_capacity.err "not a size"
run replay_place 2 -- replay "$trace" --place moon:3
has replay_place.err "not a place"
run replay_capacity_cpu 2 -- replay "$trace" --place cpu --capacity 1GiB
has replay_capacity_cpu.err "SIM places only"
run plan_header_only 2 -- plan "$out/header_only.jsonl"
has plan_header_only.err "no allocation"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "dao replay / dao plan: all checks passed"
