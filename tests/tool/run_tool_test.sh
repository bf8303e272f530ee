#!/usr/bin/env bash
# Checks the `dao` command-line tool: its output, its errors and its exit
# statuses (0 success, 1 a library call failed, 2 a bad command line).
#
# Usage: run_tool_test.sh <path-to-dao> <expected-version>
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 <path-to-dao> <expected-version>" >&2
  exit 2
fi
dao=$1
version=$2
. "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh"
empty() { [ ! -s "$out/$1" ] || fail "$1 is not empty: $(head -c 200 "$out/$1")"; }

# dao info: every kind, the version, the default allocator.
run info 0 -- info
for kind in cpu cuda cuda_pinned cuda_managed sim; do
  has info.out "^$kind: [0-9]+ devices?$"
done
has info.out "^libdao $version "
has info.out "^cpu: 1 device$"
has info.out "^sim: 1 device$"          # the built-in default: one SIM device of 1 GiB
has info.out "^  sim:0 +1\.0 GiB total"
has info.out "default: +strategy buddy \(built-in default\), config \(defaults\)"
has info.out "effective: min_block=256B,chunk_size="
has info.out "default: +strategy caching \(built-in default\), config \(defaults\)"
has info.out "effective: max_split_size=0,roundup_power2_divisions=0,.*expandable_segments=true"
has info.out "^  profile: +none \(built-in default\)$"   # SIM cost profile
empty info.err

# Simulated devices from the environment.
run sim3 0 DAO_SIM_DEVICES=3x1GiB -- info
has sim3.out "^sim: 3 devices$"
for d in 0 1 2; do has sim3.out "^  sim:$d +1\.0 GiB total, 1\.0 GiB free"; done
has sim3.out "DAO_SIM_DEVICES=3x1GiB"

# The SIM cost profile from the environment.
run costs 0 DAO_SIM_COSTS=h200 -- info
has costs.out "^  profile: +h200 \(DAO_SIM_COSTS\)$"
has costs.out "^sim: 1 device$"
empty costs.err

# A malformed environment: reported, no crash, the rest still shown.
run garbage 1 DAO_SIM_DEVICES=garbage -- info
has garbage.err "DAO_ERR_INVALID_ARGUMENT"
has garbage.err "DAO_SIM_DEVICES"
has garbage.out "^cpu: 1 device$"
has garbage.out "^sim: device count unknown"

run badconf 1 DAO_ALLOC_CONF_SIM=nope=1 -- info
run badcosts 1 DAO_SIM_COSTS=bogus -- info
has badcosts.err "DAO_ERR_INVALID_ARGUMENT.*DAO_SIM_COSTS"
has badcosts.out "^cpu: 1 device$"
has badcosts.out "^sim: device count unknown"
has badcosts.out "^  profile: +unknown"

has badconf.err "DAO_ERR_INVALID_ARGUMENT.*unknown key 'nope'"
has badconf.out "config nope=1 \(DAO_ALLOC_CONF_SIM\)"

run strategy 0 DAO_ALLOCATOR=system -- info
has strategy.out "strategy system \(DAO_ALLOCATOR\)"

# JSON output, checked by a JSON parser when there is one.
run json 0 DAO_SIM_DEVICES=2x64MiB DAO_SIM_COSTS=h200 -- info --json
has json.out '"kind": "sim"'
if command -v python3 > /dev/null; then
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert [k["kind"] for k in d["kinds"]] == ["cpu", "cuda", "cuda_pinned", "cuda_managed", "sim"], d
sim = d["kinds"][4]
assert sim["device_count"] == 2 and len(sim["devices"]) == 2, sim
assert sim["devices"][1]["total_bytes"] == 64 << 20, sim
assert sim["cost_profile"] == "h200", sim
assert all("cost_profile" not in k for k in d["kinds"][:4]), d' "$out/json.out" ||
    fail "dao info --json is not the expected JSON"
fi

# Help and version.
run help 0 -- --help
has help.out "^Usage: dao "
has help.out "info"
has help.out "DAO_SIM_COSTS"
empty help.err
run help_short 0 -- -h
has help_short.out "^Usage: dao "
run help_cmd 0 -- help
has help_cmd.out "^Usage: dao "
run help_info 0 -- help info
has help_info.out "^Usage: dao info"
run info_help 0 -- info --help
has info_help.out "^Usage: dao info"
run version 0 -- --version
has version.out "$version"

# Bad command lines: a message on stderr naming the argument, status 2.
run bogus 2 -- bogus
has bogus.err "unknown command 'bogus'"
has bogus.err "--help"
empty bogus.out
run bogus_opt 2 -- --bogus
has bogus_opt.err "unknown option '--bogus'"
run info_bogus 2 -- info --frobnicate
has info_bogus.err "'--frobnicate'"
run info_extra 2 -- info extra
has info_extra.err "'extra'"
run help_bogus 2 -- help bogus
has help_bogus.err "'bogus'"
run nothing 2 --
has nothing.err "^Usage: dao "

if [ "$failures" -ne 0 ]; then
  echo "tool test: $failures failure(s)" >&2
  exit 1
fi
echo "tool test: OK"
