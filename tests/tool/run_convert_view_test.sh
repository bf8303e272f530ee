#!/usr/bin/env bash
# Checks `dao convert` and `dao view` (issue 18) on small files made here:
# a lifetime CSV, an ops JSONL trace, PyTorch snapshot pickles built by
# make_torch_snapshot.py (protocols 2, 4 and 5) and a dao snapshot JSON;
# the traces written are checked record by record (check_trace.py); every
# subcommand's bad-input rows (exit status 2 and a message); the pickle
# reader against every truncation and garbled copies of a pickle (exit 0 or
# 2, never a crash; the sanitizer build runs this too).
#
# Usage: run_convert_view_test.sh <path-to-dao> <tests/tool directory>
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 <path-to-dao> <tests/tool directory>" >&2
  exit 2
fi
dao=$1
here=$2
. "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh"
check() { python3 "$here/check_trace.py" "$@" > /dev/null || fail "check_trace.py $*"; }

# --- inputs -----------------------------------------------------------------
printf 'id,lower,upper,size\n0,0,4,100\n1,1,2,200\n2,2,4,300\n3,2,2,50\n4,4,5,1000\n' > "$out/life.csv"
cat > "$out/ops.jsonl" <<'JSONL'
{"ev": "alloc", "seq": 0, "sid": 0, "bytes": 4, "pre": false}
{"ev": "op", "seq": 0, "op": "aten.zeros.default", "in": [], "out": [[0, 4]]}
{"ev": "alloc", "seq": 1, "sid": 1, "bytes": 64, "pre": true}
{"ev": "free", "seq": 2, "sid": 0}
{"ev": "alloc", "seq": 3, "sid": 2, "bytes": 128, "pre": false}
{"ev": "free", "seq": 4, "sid": 2}
JSONL
for p in 2 4 5; do python3 "$here/make_torch_snapshot.py" "$out/snap$p.pickle" --protocol "$p"; done
python3 "$here/make_torch_snapshot.py" "$out/foreign.pickle" --foreign
cat > "$out/snapshot.json" <<'JSON'
{"strategy":"caching","place":"sim:0","config":"","stats":{"allocated_bytes.all":{"current":3072,"peak":3072,"allocated":3072,"freed":0}},
 "segments":[{"address":1048576,"size":2097152,"mapped_bytes":2097152,"pool":"large","stream":0,"expandable":false,"blocks":[
   {"address":1048576,"size":2048,"requested_size":2000,"state":"allocated","stream":0},
   {"address":1050624,"size":1024,"requested_size":1000,"state":"pending_free","stream":0},
   {"address":1051648,"size":2094080,"requested_size":0,"state":"free","stream":0}]},
  {"address":8388608,"size":1048576,"mapped_bytes":1048576,"pool":"small","stream":0,"expandable":false,"blocks":[
   {"address":8388608,"size":1024,"requested_size":1024,"state":"allocated","stream":0}]}]}
JSON

# --- dao convert: each format, guessed and named ------------------------------
run csv 0 convert "$out/life.csv" -o "$out/life.trace"
has csv.out "lifetime-csv"
has csv.out "max load: +1000 B \(1000 bytes"
check "$out/life.trace" csv
run csv_json 0 convert --from lifetime-csv "$out/life.csv" --output "$out/life2.trace" --json
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["from"] == "lifetime-csv" and d["allocations"] == 5 and d["frees"] == 5, d
assert d["max_live_bytes"] == 1000 and d["input_records"] == 5, d' "$out/csv_json.out" ||
  fail "convert --json (csv)"
cmp -s "$out/life.trace" "$out/life2.trace" || fail "the same CSV converted twice differs"

run ops 0 convert "$out/ops.jsonl" -o "$out/ops.trace"
has ops.out "ops-jsonl"
check "$out/ops.trace" ops

for p in 2 4 5; do
  run torch$p 0 convert "$out/snap$p.pickle" -o "$out/snap$p.trace"
  has torch$p.out "torch-snapshot"
  has torch$p.out "before the history: 3 "
  has torch$p.out "skipped: +1 records of unknown kinds"
  check "$out/snap$p.trace" torch
done
cmp -s "$out/snap2.trace" "$out/snap5.trace" || fail "protocols 2 and 5 give different traces"
run torch_json 0 convert --json --from torch-snapshot "$out/snap4.pickle" -o "$out/snap4b.trace"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["devices"] == 2 and d["preexisting"] == 3 and d["stacks"] == 3 and d["skipped"] == 1, d' \
  "$out/torch_json.out" || fail "convert --json (torch)"
run torch_stdout 0 convert "$out/snap4.pickle" -o -
has torch_stdout.out '^\{"format":"dao-trace","version":1'

# --- dao view: traces of each source and a snapshot ------------------------------
for t in life ops snap4; do
  run view_$t 0 view "$out/$t.trace" -o "$out/$t.html"
  has view_$t.out "wrote .*$t.html"
  grep -q 'data-ready' "$out/$t.html" || fail "$t.html has no page"
  grep -q '<script id="dao-data" type="application/json">{"kind":"trace"' "$out/$t.html" ||
    fail "$t.html has no embedded trace"
  if grep -qiE '<script[^>]+src=|<link[^>]+href=|https?://' "$out/$t.html"; then
    fail "$t.html refers to something outside itself"
  fi
done
run view_json 0 view "$out/life.trace" -o "$out/life.html" --json
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "trace" and d["events"] == 10 and d["allocations"] == 5, d
assert d["peak_bytes"] == 1000 and d["page_bytes"] > 1000, d' "$out/view_json.out" || fail "view --json"
# A converted PyTorch trace: each free_done follows its free; none of them is
# a "free of nothing live" (the reader once counted every one).
run view_torch_json 0 view "$out/snap4.trace" -o "$out/snap4b.html" --json
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["unmatched_frees"] == 0, d' "$out/view_torch_json.out" || fail "view --json (torch)"
run view_snapshot 0 view "$out/snapshot.json" -o "$out/snapshot.html"
grep -q '"kind":"snapshot"' "$out/snapshot.html" || fail "snapshot.html has no embedded snapshot"
# "</script>" inside the data must not end the script element
printf '{"segments":[{"address":1,"size":2,"pool":"</script><b>x","blocks":[]}]}' > "$out/script.json"
run view_script 0 view "$out/script.json" -o "$out/script.html"
if grep -q '</script><b>' "$out/script.html"; then fail "view embeds '</script>' raw"; fi

# --- help ------------------------------------------------------------------------
for c in convert view; do
  run help_$c 0 $c --help
  has help_$c.out "^Usage: dao $c "
  run helpcmd_$c 0 help $c
  has helpcmd_$c.out "^Usage: dao $c "
done
run help_top 0 --help
has help_top.out "convert INPUT -o TRACE"
has help_top.out "view TRACE\|SNAPSHOT.json"

# --- bad input: exit status 2 and a message naming the problem -----------------------
bad() { # name, stderr pattern, args...
  local name=$1 pattern=$2
  shift 2
  run "$name" 2 "$@"
  has "$name.err" "$pattern"
}
: > "$out/empty"
printf 'hello, world\n' > "$out/text.txt"
printf 'id,lower,upper,size\n0,0,4,100\n1,x,2,200\n' > "$out/badrow.csv"
printf 'id,lower,upper,size\n0,5,4,100\n' > "$out/backwards.csv"
printf '{"ev": "alloc", "sid": 0, "bytes": 4}\n{"ev": "alloc", "sid"\n{"ev": "free", "sid": 0}\n' > "$out/broken.jsonl"
head -c 300 "$out/snap4.pickle" > "$out/truncated.pickle"
printf '{"format":"dao-trace","version":2}\n' > "$out/v2.trace"
head -n 3 "$out/life.trace" > "$out/cut.trace"
printf '{"k":"alloc","t":9,"a":0,"ptr":256,"size":1' >> "$out/cut.trace"
{ head -n 3 "$out/life.trace"; echo 'garbage'; tail -n 2 "$out/life.trace"; } > "$out/garbage.trace"
bad c_missing "cannot open" convert "$out/nope.csv" -o "$out/x.trace"
bad c_empty "empty file" convert "$out/empty" -o "$out/x.trace"
bad c_foreign "unknown format" convert "$out/text.txt" -o "$out/x.trace"
bad c_badrow "line 3: expected four non-negative integers" convert "$out/badrow.csv" -o "$out/x.trace"
bad c_backwards "upper 4 is before lower 5" convert "$out/backwards.csv" -o "$out/x.trace"
bad c_jsonl "line 2: " convert "$out/broken.jsonl" -o "$out/x.trace"
bad c_truncated "truncated" convert "$out/truncated.pickle" -o "$out/x.trace"
bad c_notsnap "not a PyTorch memory snapshot" convert "$out/foreign.pickle" -o "$out/x.trace"
bad c_wrongfrom "not a readable pickle" convert --from torch-snapshot "$out/life.csv" -o "$out/x.trace"
bad c_option "unknown option '--frobnicate'" convert --frobnicate "$out/life.csv" -o "$out/x.trace"
bad c_format "unknown format 'xml'" convert --from xml "$out/life.csv" -o "$out/x.trace"
bad c_noout "missing '-o TRACE'" convert "$out/life.csv"
bad c_noin "missing 'INPUT'" convert -o "$out/x.trace"
bad c_extra "unexpected argument 'more'" convert "$out/life.csv" more -o "$out/x.trace"
bad c_novalue "missing value after '-o'" convert "$out/life.csv" -o
[ ! -e "$out/x.trace" ] || fail "a failed convert left a trace behind"
bad v_missing "cannot open" view "$out/nope.trace"
bad v_empty "empty file" view "$out/empty" -o "$out/x.html"
bad v_foreign "neither a dao trace nor a dao snapshot" view "$out/text.txt" -o "$out/x.html"
bad v_csv "neither a dao trace nor a dao snapshot" view "$out/life.csv" -o "$out/x.html"
bad v_json "not a readable snapshot" view "$out/ops.jsonl" -o "$out/x.html"
printf '{"strategy":"caching","stats":{}}' > "$out/nosegs.json"
bad v_nosegs "no \"segments\" list" view "$out/nosegs.json" -o "$out/x.html"
bad v_version "version" view "$out/v2.trace" -o "$out/x.html"
bad v_garbage "trace:4: " view "$out/garbage.trace" -o "$out/x.html"
bad v_pickle "neither a dao trace nor a dao snapshot" view "$out/snap4.pickle" -o "$out/x.html"
bad v_option "unknown option '--bogus'" view --bogus "$out/life.trace"
bad v_noin "missing 'TRACE\|SNAPSHOT.json'" view -o "$out/x.html"
bad v_extra "unexpected argument" view "$out/life.trace" "$out/ops.trace"
[ ! -e "$out/x.html" ] || fail "a failed view left a page behind"
# A trace cut short in its last line: read up to it, reported, not an error.
run v_cut 0 view "$out/cut.trace" -o "$out/cut.html"
has v_cut.err "incomplete"

# --- the pickle reader against hostile input: every truncation, garbled copies ---------
python3 - "$out/snap2.pickle" "$out/snap4.pickle" "$out/fuzz" <<'PY'
import os, random, sys
random.seed(18)
os.makedirs(sys.argv[3])
n = 0
for src in sys.argv[1:3]:
    data = open(src, "rb").read()
    for cut in range(0, len(data), 3 if len(data) > 1500 else 1):
        open(os.path.join(sys.argv[3], "t%05d" % n), "wb").write(data[:cut]); n += 1
    for _ in range(150):
        b = bytearray(data)
        for _ in range(random.randint(1, 8)):
            i = random.randrange(2, len(b))
            b[i] = random.choice([random.randrange(256), 0xff, 0x00, 0x80, ord("("), ord("."), ord("h"), ord("j")])
        open(os.path.join(sys.argv[3], "g%05d" % n), "wb").write(bytes(b)); n += 1
PY
crashes=0
count=0
for f in "$out"/fuzz/*; do
  status=0
  "$dao" convert --from torch-snapshot "$f" -o "$out/fuzz.trace" > /dev/null 2> "$out/fuzz.err" || status=$?
  count=$((count + 1))
  if [ "$status" -ne 0 ] && [ "$status" -ne 2 ]; then
    crashes=$((crashes + 1))
    [ "$crashes" -le 3 ] && fail "convert of $(basename "$f") exited $status: $(head -c 300 "$out/fuzz.err")"
  fi
done
[ "$crashes" -eq 0 ] || fail "$crashes of $count hostile pickles crashed the reader"

if [ "$failures" -ne 0 ]; then
  echo "convert/view test: $failures failure(s)" >&2
  exit 1
fi
echo "convert/view test: OK ($count hostile pickles refused or read without a crash)"
