#!/usr/bin/env bash
# Builds what the demo runs, and runs it, on a fresh Debian 12 machine too:
#   1. installs the Debian packages it needs when they are missing (cmake,
#      make, gcc, g++; no test framework);
#   2. configures into build/ (or DAO_DEMO_BUILD) without tests, benchmarks
#      or bindings, and builds only the library, the `dao` tool and the two
#      example programs it runs;
#   3. runs `dao info` (every place of the machine), the places demo
#      (examples/places_demo.c), a short run of the correlator pipeline on
#      recycle pools (examples/correlator_pipeline.c) with two simulated
#      64 MiB devices (unless DAO_SIM_DEVICES is already set), and
#      `dao convert` + `dao plan` on a shared trace of a real PyTorch
#      training step (bench/traces/ops/mlp_adam_5steps.jsonl, a copy of
#      ../shared/traces/ops/; no PyTorch needed): the smallest card it fits.
# Each step prints how long it took. scripts/test.sh builds and runs
# everything else (every test, with cmocka).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DAO_DEMO_BUILD:-$root/build}
start=$SECONDS
step() { printf '\n== %s   [%ds]\n' "$*" "$((SECONDS - start))"; }

# --- 1. packages -------------------------------------------------------------
missing=()
need_cmd() { command -v "$1" > /dev/null 2>&1 || missing+=("$2"); }
need_cmd cmake cmake
need_cmd make make
need_cmd gcc gcc
need_cmd g++ g++
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo > /dev/null 2>&1; then
      echo "demo.sh: missing ${missing[*]}, and not root and no sudo to install them" >&2
      exit 1
    fi
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- 2. build: the library, the tool and the two examples, nothing else ------
step "build ($build): libdao, dao, places_demo, correlator_pipeline"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDAO_BUILD_TESTS=OFF \
  -DDAO_BUILD_BENCH=OFF -DDAO_BUILD_BINDINGS=OFF -DDAO_BUILD_TOOLS=ON \
  -DDAO_BUILD_EXAMPLES=ON -DDAO_WITH_MPI=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target dao_tool places_demo correlator_pipeline

# --- 3. run ------------------------------------------------------------------
export DAO_SIM_DEVICES=${DAO_SIM_DEVICES:-2x64MiB}
step "dao info   (DAO_SIM_DEVICES=$DAO_SIM_DEVICES)"
"$build/tools/dao" info
step "places_demo"
"$build/examples/places_demo"
step "correlator_pipeline 500   (recycle pools: fill -> flag+grid -> writer)"
"$build/examples/correlator_pipeline" 500
trace=$root/bench/traces/ops/mlp_adam_5steps.jsonl
step "dao plan: the smallest card for a PyTorch training step ($(basename "$trace"))"
"$build/tools/dao" convert "$trace" -o "$build/demo-mlp.trace"
"$build/tools/dao" plan "$build/demo-mlp.trace" --strategy caching --config fast_reuse=false \
  --strategy buddy
step "done"
