#!/usr/bin/env bash
# gpu-check.sh: libdao on a real GPU (issue 16), in one run with one table.
#
#   scripts/gpu-check.sh [--build] [--quick] [--traces-only LIST] [--timeout S]
#                        BUILD_DIR [TRACES_DIR]
#
# Steps, each under `timeout`, all output in a log ($OUT/gpu-check.log when
# OUT is set, else ./gpu-check.log):
#   1. the device: `nvidia-smi -L` where present, `dao info`;
#   2. the tests that touch the machine's driver, run as binaries (ctest may
#      be absent): test_cuda_backend driver, test_conformance, test_allocator,
#      test_memory defaults, test_recycle, test_place, test_whole_cuda driver
#      (partitioned memory on the card: chunked and distributed objects,
#      gathers and scatters through the driver, peer access where several
#      devices allow it, issue 22);
#   3. bench_alloc --only dao-caching-cuda,dao-caching-exact-cuda,dao-buddy-cuda
#      on cuda:0, and the same strategies on SIM with DAO_SIM_COSTS=h200;
#   4. bench_traces --place cuda:0 and --place sim:0 (DAO_SIM_COSTS=h200) on
#      TRACES_DIR (default: ../shared/traces beside the source tree), traces
#      bert_base,resnet50,pangu_2.6B (--traces-only LIST to change);
#   4b. bench_tiered --stream (issue 21): cyclic weight streaming through a
#      tiered pool with a pageable (staged and not) and a pinned host tier,
#      on cuda:0 and on the SIM model of the H200's link, with the link
#      statistics (rate, copy time hidden, stall) of each case;
#   5. PyTorch training (scripts/gpu-torch.py, issue 17) with PyTorch's own
#      allocator, with its expandable segments, and with libdao through
#      dao.torch.use(): step time and peak reserved side by side (skipped
#      with a line where python3 has no PyTorch with CUDA; --no-torch skips).
# The final table puts the card and the SIM side by side. Exit status: 0 when
# every step ran and passed, 1 otherwise, 2 for bad arguments.
#
#   --build        configure and build BUILD_DIR first (needs cmake and nvcc)
#   --quick        small benchmark sizes (the fake-driver smoke test)
#   --timeout S    limit of each step in seconds, default 240
#   --no-torch     leave out step 5
#
# The driver is the machine's libcuda.so.1, or the library DAO_CUDA_LIBRARY
# names (the ctest smoke test gives the fake driver of tests/fake_cuda).
#
# Carry recipe (build here, run on a lent GPU machine without cmocka): build
# with tests, put the build and libcmocka.so.0 in a folder that git ignores,
# and name it in `carry`:
#   cmake -S . -B .gpu/build -DDAO_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Release
#   cmake --build .gpu/build -j2
#   cp -L "$(ldconfig -p | awk '/libcmocka.so.0 /{print $NF; exit}')" .gpu/build/tests/
#   cp -r ../shared/traces .gpu/traces
#   # on the device (carry [".gpu"]); the script puts the folders of libdao
#   # and libcmocka.so.0 under BUILD_DIR on LD_LIBRARY_PATH itself:
#   scripts/gpu-check.sh .gpu/build .gpu/traces
set -u

usage() { sed -n '2,49p' "$0" | sed 's/^# \{0,1\}//'; }

build=0 quick=0 torch=1 step_timeout=240 only="bert_base,resnet50,pangu_2.6B"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=1 ;;
    --quick) quick=1 ;;
    --no-torch) torch=0 ;;
    --timeout) step_timeout=${2:?--timeout needs seconds}; shift ;;
    --traces-only) only=${2:?--traces-only needs a list}; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "gpu-check.sh: unknown option $1" >&2; exit 2 ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [ ${#args[@]} -lt 1 ] || [ ${#args[@]} -gt 2 ]; then
  usage >&2
  exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
bdir=${args[0]}
traces=${args[1]:-$src/../shared/traces}
log=${OUT:+$OUT/gpu-check.log}
log=${log:-./gpu-check.log}
[ -z "${OUT:-}" ] || mkdir -p "$OUT" || exit 2
: >"$log" || exit 2

say() { echo "$*" | tee -a "$log"; }
rows=() # "check|result|card|sim"
row() { rows+=("$1|$2|$3|$4"); }
failed=0

# run NAME CMD...: under timeout, output into the log and into $step_out.
step_out=""
run() {
  local name=$1
  shift
  say "== $name: $*"
  step_out=$(timeout "$step_timeout" "$@" 2>&1)
  local rc=$?
  printf '%s\n' "$step_out" >>"$log"
  say "== $name: exit status $rc"
  return $rc
}
status_word() {
  case $1 in
    0) echo PASS ;;
    77) echo SKIPPED ;;
    124 | 137) echo "TIMEOUT (${step_timeout}s)" ;;
    *) echo "FAIL ($1)" ;;
  esac
}

if [ $build = 1 ]; then
  if command -v cmake >/dev/null && command -v nvcc >/dev/null; then
    run build-configure cmake -S "$src" -B "$bdir" -DDAO_BUILD_TESTS=ON \
      -DCMAKE_BUILD_TYPE=Release || failed=1
    run build cmake --build "$bdir" -j "$(nproc)" || failed=1
  else
    say "== build: skipped (cmake or nvcc missing); using $bdir as it is"
  fi
fi
bdir=$(cd "$bdir" 2>/dev/null && pwd) || { say "gpu-check.sh: no build dir ${args[0]}"; exit 2; }
# A carried build dir lies elsewhere than where it was built (its rpath is
# stale), and cmocka may be a copy beside the tests: the folders of libdao
# and libcmocka in the build dir go first on the library path.
libdirs=$(find "$bdir" -maxdepth 3 \( -name 'libdao.so*' -o -name 'libcmocka.so*' \) \
  -exec dirname {} \; | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="${libdirs}${LD_LIBRARY_PATH:-}"

# 1. The device.
if command -v nvidia-smi >/dev/null; then
  run nvidia-smi nvidia-smi -L
  row "device" "nvidia-smi" "$(printf '%s' "$step_out" | head -n 1)" ""
else
  row "device" "nvidia-smi" "(not installed)" ""
fi
dao_bin=$bdir/tools/dao
if [ -x "$dao_bin" ]; then
  run dao-info "$dao_bin" info
  rc=$?
  row "device" "dao info: $(status_word $rc)" \
    "$(printf '%s' "$step_out" | grep -i -m1 'cuda' | sed 's/^ *//' | cut -c1-100)" \
    "$(DAO_SIM_COSTS=h200 "$dao_bin" info 2>&1 | grep -i -m1 'sim' | sed 's/^ *//' | cut -c1-60)"
else
  row "device" "dao info: missing" "$dao_bin" ""
fi

# 2. The tests that touch the machine's driver.
tests_run() { # NAME BINARY ARGS... (env given by the caller)
  local name=$1 bin=$bdir/tests/$2
  shift 2
  if [ ! -x "$bin" ]; then
    row "test" "$name" "MISSING ($bin)" ""
    failed=1
    return
  fi
  run "$name" "$bin" "$@"
  local rc=$?
  [ $rc = 0 ] || failed=1
  row "test" "$name" "$(status_word $rc)" ""
}
# The environment of each as tests/CMakeLists.txt and tests/cuda.cmake give it.
DAO_CUDA_LIBRARY= tests_run "test_cuda_backend driver" test_cuda_backend driver
DAO_SIM_DEVICES=2x64MiB tests_run test_conformance test_conformance
DAO_SIM_DEVICES=2x64MiB tests_run test_allocator test_allocator
DAO_SIM_DEVICES=2x64MiB tests_run "test_memory defaults" test_memory defaults
DAO_SIM_DEVICES=64MiB,4MiB tests_run test_recycle test_recycle
DAO_SIM_DEVICES=2x64MiB tests_run test_place test_place
tests_run "test_whole_cuda driver" test_whole_cuda driver

# 3. bench_alloc: the card's rows, then the same strategies on SIM (h200).
if [ $quick = 1 ]; then alloc_size=(--steps 2000 --slots 100 --reps 1); else
  alloc_size=(--steps 100000 --reps 3)
fi
ba=$bdir/bench/bench_alloc
run bench_alloc-cuda "$ba" "${alloc_size[@]}" --only dao-caching-cuda,dao-caching-exact-cuda,dao-buddy-cuda
rc_card=$?
card_alloc=$step_out
DAO_SIM_COSTS=h200 run bench_alloc-sim "$ba" "${alloc_size[@]}" --only dao-caching-sim,dao-caching-exact-sim,dao-sim
rc_sim=$?
sim_alloc=$step_out
[ $rc_card = 0 ] && [ $rc_sim = 0 ] || failed=1
# ns/pair of a row (first table), driver ns/pair (the simulated driver time
# table), or the row's note when it did not run.
alloc_figure() { # OUTPUT LABEL
  printf '%s\n' "$1" | awk -v l="$2" '
    /^simulated driver time/ { drv = 1 }
    /^libdao memory/ { drv = 0 }
    index($0, l) == 1 {
      rest = substr($0, 27); n = split(rest, f, " ")
      if (!drv && !seen) { seen = 1; if (f[1] ~ /^[0-9.]+$/) ns = f[1]; else ns = rest }
      else if (drv && d == "" && f[1] ~ /^[0-9.]+$/) d = f[1]
    }
    END { if (ns == "") ns = "-"; printf "%s|%s", ns, (d == "" ? "-" : d) }'
}
for pair in "caching:libdao caching (cuda):libdao caching (sim)" \
  "caching fast_reuse=false:libdao caching exact (cuda):libdao caching exact (sim)" \
  "buddy:libdao buddy (cuda):libdao buddy (sim)"; do
  IFS=: read -r what card_label sim_label <<<"$pair"
  IFS='|' read -r card_ns _ <<<"$(alloc_figure "$card_alloc" "$card_label")"
  IFS='|' read -r sim_ns sim_drv <<<"$(alloc_figure "$sim_alloc" "$sim_label")"
  case $card_ns in [0-9]*) card_ns="$card_ns ns/pair" ;; esac
  case $sim_ns in [0-9]*) sim_ns="$sim_drv driver + $sim_ns cpu ns/pair" ;; esac
  row "bench_alloc" "$what: $(status_word $rc_card)/$(status_word $rc_sim)" "$card_ns" "$sim_ns"
done

# 4. bench_traces: one replay per trace on the card and on SIM (h200).
bt=$bdir/bench/bench_traces
run bench_traces-cuda "$bt" --place cuda:0 --traces "$traces" --only "$only"
rc_card=$?
card_traces=$step_out
DAO_SIM_COSTS=h200 run bench_traces-sim "$bt" --place sim:0 --traces "$traces" --only "$only"
rc_sim=$?
sim_traces=$step_out
[ $rc_card = 0 ] && [ $rc_sim = 0 ] || failed=1
# "ratio maps unmaps ns/op driver_ns/op" of a trace row, or "-".
trace_figures() { # OUTPUT NAME
  printf '%s\n' "$1" | awk -v n="$2" '
    $1 == n && $3 == "FAILED:" { print "FAILED"; found = 1; exit }
    $1 == n && NF == 10 { print $5, $6, $7, $8, $9; found = 1; exit }
    END { if (!found) print "-" }'
}
names=$(printf '%s\n%s\n' "$card_traces" "$sim_traces" |
  awk 'NF == 10 && $5 ~ /x$/ { print $1 } $3 == "FAILED:" { print $1 }' | sort -u)
if [ -z "$names" ]; then
  row "bench_traces" "$(status_word $rc_card)/$(status_word $rc_sim)" \
    "$(printf '%s' "$card_traces" | tail -n 1 | cut -c1-80)" \
    "$(printf '%s' "$sim_traces" | tail -n 1 | cut -c1-80)"
fi
for name in $names; do
  read -r c_ratio c_sys c_free c_ns _ <<<"$(trace_figures "$card_traces" "$name")"
  read -r s_ratio s_sys s_free s_ns s_drv <<<"$(trace_figures "$sim_traces" "$name")"
  card="-"
  sim="-"
  [ "${c_ratio:--}" = "-" ] || [ "$c_ratio" = FAILED ] || card="$c_ratio, $c_sys/$c_free sys, $c_ns ns/op"
  [ "$c_ratio" = FAILED ] && card="FAILED (see the log)"
  [ "${s_ratio:--}" = "-" ] || [ "$s_ratio" = FAILED ] ||
    sim="$s_ratio, $s_sys/$s_free sys, $s_drv driver + $s_ns cpu ns/op"
  [ "$s_ratio" = FAILED ] && sim="FAILED (see the log)"
  row "bench_traces" "$name" "$card" "$sim"
done

# 4b. Tiered pools at the link's limit (issue 21): cyclic weight streaming
# (16 weights, 3 passes, a budget of 4) on the card (pageable tier staged
# and not, pinned tier) and on the SIM model of the H200's link; the rows
# give each target line with the link statistics behind it.
if [ $quick = 1 ]; then tiered_size=(--weight-mib 2); else tiered_size=(--weight-mib 512); fi
tb=$bdir/bench/bench_tiered
run bench_tiered-cuda "$tb" --stream --device cuda "${tiered_size[@]}"
rc_card=$?
card_tiered=$step_out
DAO_SIM_COSTS=h200 run bench_tiered-sim "$tb" --stream --scale 8 \
  --weight-mib "$([ $quick = 1 ] && echo 2 || echo 64)"
rc_sim=$?
sim_tiered=$step_out
[ $rc_card = 0 ] && [ $rc_sim = 0 ] || failed=1
# "ok (figure)" or "MISS (figure)" of a target line (or "-").
tiered_target() { # OUTPUT PREFIX
  printf '%s\n' "$1" | awk -v p="$2" 'index($0, p) == 1 && match($0, /(ok|MISS) \(.*\)$/) {
      print substr($0, RSTART, RLENGTH); found = 1; exit }
    END { if (!found) print "-" }'
}
row "bench_tiered" "stream: $(status_word $rc_card)/$(status_word $rc_sim)" "" ""
for t in "pageable, transfer-bound:" "pageable, compute >= copies:" "pinned, transfer-bound:" \
  "pinned, compute >= copies:" "cyclic pattern:"; do
  row "bench_tiered" "$t" "$(tiered_target "$card_tiered" "$t")" \
    "$(tiered_target "$sim_tiered" "$t")"
done

# 5. PyTorch training: its allocator (default, expandable) against libdao's.
# Each mode in its own process: the allocator is chosen before CUDA starts.
if [ $torch = 1 ]; then
  for mode in "native:" "native:expandable_segments:True" "dao:"; do
    kind=${mode%%:*}
    conf=${mode#*:}
    PYTORCH_CUDA_ALLOC_CONF=$conf DAO_LIBRARY=$bdir/libdao.so.0 \
      run "torch-$kind${conf:+-expandable}" python3 "$src/scripts/gpu-torch.py" "$kind"
    rc=$?
    if [ $rc = 3 ]; then
      row "torch" "$kind${conf:+ expandable}: SKIPPED" "$(printf '%s' "$step_out" | tail -n 1 | cut -c1-80)" ""
      continue
    fi
    [ $rc = 0 ] || failed=1
    lines=$(printf '%s\n' "$step_out" | grep '^gpu-torch: .*\(step_ms=\|captured=\)' || true)
    if [ -z "$lines" ]; then
      row "torch" "$kind${conf:+ expandable}: $(status_word $rc)" "$(printf '%s' "$step_out" | tail -n 1 | cut -c1-80)" ""
    fi
    while read -r l; do
      [ -n "$l" ] || continue
      model=$(printf '%s' "$l" | awk '{print $2}')
      figs=$(printf '%s' "$l" | grep -o 'step_ms=[0-9.]*\|peak_reserved_gib=[0-9.]*\|captured=[a-z]*\|replay_matches=[A-Za-z]*' | tr '\n' ' ')
      row "torch" "$model $kind${conf:+ expandable}" "$figs" ""
    done <<<"$lines"
  done
fi

# The table.
{
  echo
  echo "gpu-check: libdao on $(hostname), build $bdir"
  printf '%-13s %-36s %-38s %s\n' "check" "what / result" "card (cuda:0)" "SIM (DAO_SIM_COSTS=h200)"
  for r in "${rows[@]}"; do
    IFS='|' read -r a b c d <<<"$r"
    printf '%-13s %-36s %-38s %s\n' "$a" "$b" "$c" "$d"
  done
  echo "(bench_alloc: median ns per free+alloc pair; bench_traces: peak reserved / max load,"
  echo " system allocations, ns per allocation or free by the wall clock on the card; on SIM"
  echo " the simulated driver time per operation, accounted not slept, + the CPU time)"
  echo "log: $log; overall: $([ $failed = 0 ] && echo PASS || echo FAIL)"
} | tee -a "$log"
exit $failed
