# Shared by the tests of the `dao` tool (tests/tool/run_*_test.sh), sourced
# after `dao` is set to the tool's path: a scratch folder $out removed at
# exit, failure counting, and running the tool with its output kept.
#
#   run NAME STATUS [VAR=value ...] -- ARGS...   (the form with `--`)
#   run NAME STATUS ARGS...                      (no variables)
# runs `dao ARGS` with none of libdao's environment variables but VAR=value,
# keeps stdout and stderr in $out/NAME.out and $out/NAME.err, and counts a
# failure (showing both) when the exit status is not STATUS.
#   has FILE PATTERN       $out/FILE matches the extended regex PATTERN

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

run() {
  local name=$1 want=$2 status=0
  shift 2
  local env=()
  local arg
  for arg in "$@"; do
    if [ "$arg" = "--" ]; then
      while [ "$1" != "--" ]; do env+=("$1"); shift; done
      shift
      break
    fi
  done
  env -u DAO_SIM_DEVICES -u DAO_SIM_COSTS -u DAO_ALLOCATOR -u DAO_ALLOC_CONF -u DAO_ALLOCATOR_SIM \
    -u DAO_ALLOC_CONF_SIM -u DAO_ALLOCATOR_CPU -u DAO_ALLOC_CONF_CPU -u DAO_TRACE \
    -u DAO_TRACE_OPTIONS "${env[@]}" "$dao" "$@" > "$out/$name.out" 2> "$out/$name.err" ||
    status=$?
  if [ "$status" -ne "$want" ]; then
    fail "dao $* (${env[*]}): exit status $status, expected $want"
    sed 's/^/  stdout: /' "$out/$name.out" >&2
    sed 's/^/  stderr: /' "$out/$name.err" >&2
  fi
}

has() { grep -qE -- "$2" "$out/$1" || fail "$1 does not match '$2': $(head -c 300 "$out/$1")"; }
