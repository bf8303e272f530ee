#!/usr/bin/env bash
# Loads pages of `dao view` (issue 18) in headless Chromium and checks that
# each renders what it should and throws no JavaScript error: the page
# reports on <body> (data-ready="1" when drawn, data-errors with the count of
# errors caught by window.onerror, whose text goes to #errors, and counts of
# drawn bands, segments, blocks and table rows), read back with --dump-dom.
# A screenshot of each page is kept in ARTIFACTS (view-*.png).
#
# Exit status 77 (ctest SKIP) when Chromium is not installed or cannot start
# here, with the reason; scripts/test.sh installs Debian's chromium.
#
# Usage: run_view_browser_test.sh <path-to-dao> <tests/tool directory> <artifacts directory>
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 <path-to-dao> <tests/tool directory> <artifacts directory>" >&2
  exit 2
fi
dao=$1
here=$2
artifacts=$3
mkdir -p "$artifacts"
. "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh"

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" > /dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "SKIP: no Chromium here (Debian: apt-get install chromium; scripts/test.sh does it)"
  exit 77
fi
# --no-sandbox: test machines and containers often run as root, where
# Chromium's sandbox refuses to start.
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
  --disable-extensions --user-data-dir="$out/profile" --virtual-time-budget=20000)


# The inputs: a trace from a lifetime CSV (no segments: packed rows), one
# from a PyTorch snapshot pickle (segments, streams, stacks, an OOM), a dao
# snapshot JSON, and the shared ResNet-50 trace when it is there.
printf 'id,lower,upper,size\n0,0,4,100\n1,1,2,200\n2,2,4,300\n3,2,2,50\n4,4,5,1000\n' > "$out/life.csv"
python3 "$here/make_torch_snapshot.py" "$out/snap.pickle"
"$dao" convert "$out/life.csv" -o "$out/life.trace" > /dev/null
"$dao" convert "$out/snap.pickle" -o "$out/torch.trace" > /dev/null
pages=(life torch snapshot)
cat > "$out/snapshot.json" <<'JSON'
{"strategy":"caching","place":"sim:0","config":"","stats":{},
 "segments":[{"address":1048576,"size":2097152,"mapped_bytes":2097152,"pool":"large","stream":0,"expandable":false,"blocks":[
   {"address":1048576,"size":2048,"requested_size":2000,"state":"allocated","stream":0},
   {"address":1050624,"size":1024,"requested_size":1000,"state":"pending_free","stream":0},
   {"address":1051648,"size":2094080,"requested_size":0,"state":"free","stream":0}]},
  {"address":8388608,"size":1048576,"mapped_bytes":1048576,"pool":"small","stream":0,"expandable":false,"blocks":[
   {"address":8388608,"size":1024,"requested_size":1024,"state":"allocated","stream":0}]}]}
JSON
"$dao" view "$out/life.trace" -o "$out/life.html" > /dev/null
"$dao" view "$out/torch.trace" -o "$out/torch.html" > /dev/null 2>&1
"$dao" view "$out/snapshot.json" -o "$out/snapshot.html" > /dev/null
shared=$here/../../../shared/traces/somas/resnet50.csv
if [ -r "$shared" ]; then
  "$dao" convert "$shared" -o "$out/resnet50.trace" > /dev/null
  "$dao" view "$out/resnet50.trace" -o "$out/resnet50.html" > /dev/null
  pages+=(resnet50)
fi

attr() { # page, attribute: its value on <body>, or empty
  grep -o '<body[^>]*>' "$out/$1.dom" | head -n 1 | grep -o " $2=\"[^\"]*\"" | sed 's/.*="\(.*\)"/\1/'
}
# want <page> <attribute> <minimum>
want() {
  local v
  v=$(attr "$1" "$2")
  if [ -z "$v" ] || [ "$v" -lt "$3" ]; then fail "$1: $2 is '${v}', expected at least $3"; fi
}

for p in "${pages[@]}"; do
  status=0
  timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$out/$p.html" > "$out/$p.dom" 2> "$out/$p.err" || status=$?
  if [ "$status" -ne 0 ] || ! grep -q '<body' "$out/$p.dom"; then
    if [ "$p" = "${pages[0]}" ]; then
      echo "SKIP: $browser cannot run here (exit status $status):"
      tail -n 5 "$out/$p.err"
      exit 77
    fi
    fail "$p: $browser exit status $status"
    continue
  fi
  [ "$(attr "$p" data-ready)" = "1" ] || fail "$p: not drawn (data-ready is '$(attr "$p" data-ready)')"
  errors=$(attr "$p" data-errors)
  if [ "$errors" != "0" ]; then
    fail "$p: $errors JavaScript error(s): $(sed -n 's/.*<pre id="errors"[^>]*>\([^<]*\).*/\1/p' "$out/$p.dom" | head -c 600)"
  fi
  timeout 120 "$browser" "${flags[@]}" --window-size=1400,1100 --screenshot="$artifacts/view-$p.png" \
    "file://$out/$p.html" > /dev/null 2>&1 || fail "$p: no screenshot"
  [ -s "$artifacts/view-$p.png" ] || fail "$p: empty screenshot"
  cp "$out/$p.html" "$artifacts/view-$p.html"
done
# What each page must show.
want life data-bands 5
want life data-segments 1
want life data-blocks 1
want life data-rows 1
want torch data-bands 5
want torch data-segments 3   # segments live at the peak (mapped by the history and before it)
want torch data-blocks 3
want torch data-rows 3
grep -q 'out-of-memory event' "$out/torch.dom" || fail "torch: the OOM is not in the summary"
grep -q 'forward (model.py:42)' "$out/torch.dom" || fail "torch: no stack frame in the table"
want snapshot data-segments 2
want snapshot data-blocks 3   # free blocks are not drawn: allocated and pending
want snapshot data-rows 2
[ "$(attr snapshot data-bands)" = "0" ] || fail "snapshot: has a timeline"
grep -q '2 segments, 3.00 MiB reserved' "$out/snapshot.dom" || fail "snapshot: summary"
if [ -e "$out/resnet50.dom" ]; then
  want resnet50 data-bands 300
  want resnet50 data-rows 15
fi

if [ "$failures" -ne 0 ]; then
  echo "view browser test: $failures failure(s)" >&2
  exit 1
fi
echo "view browser test: OK (${pages[*]}; screenshots in $artifacts)"
