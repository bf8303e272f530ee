#!/usr/bin/env bash
# Builds libdao and runs the demo, on a fresh Debian 12 machine too:
#   1. installs the Debian packages it needs when they are missing;
#   2. configures into build/ and builds;
#   3. runs `dao info`, the places demo (examples/places_demo.c) and a short
#      run of the correlator pipeline on recycle pools
#      (examples/correlator_pipeline.c) with two simulated 64 MiB devices,
#      unless DAO_SIM_DEVICES is already set.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build

# --- 1. packages -------------------------------------------------------------
missing=()
need_cmd() { command -v "$1" > /dev/null 2>&1 || missing+=("$2"); }
need_cmd cmake cmake
need_cmd make make
need_cmd gcc gcc
need_cmd g++ g++
need_cmd pkg-config pkg-config
[ -e /usr/include/cmocka.h ] || missing+=(libcmocka-dev)
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

# --- 2. build ----------------------------------------------------------------
echo "== build ($build)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" -j "$(nproc)"

# --- 3. run ------------------------------------------------------------------
export DAO_SIM_DEVICES=${DAO_SIM_DEVICES:-2x64MiB}
echo
echo "== dao info   (DAO_SIM_DEVICES=$DAO_SIM_DEVICES)"
"$build/tools/dao" info
echo
echo "== places_demo"
"$build/examples/places_demo"
echo
echo "== correlator_pipeline 500   (recycle pools: fill -> flag+grid -> writer)"
"$build/examples/correlator_pipeline" 500
