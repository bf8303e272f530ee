#!/usr/bin/env python3
"""Checks a trace written by `dao convert` (docs/trace-format.md, version 1)
for the tests of issue 18: the header, every line a JSON object with k and
t, t non-decreasing, ids defined before use, every free of a live
allocation; then the checks of one input, named by the second argument.

Usage: check_trace.py TRACE csv|ops|torch
"""
import json
import sys

path, what = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
assert lines[-1] == "", "the trace must end with a newline"
header = json.loads(lines[0])
recs = [json.loads(x) for x in lines[1:-1]]
assert header["format"] == "dao-trace" and header["version"] == 1, header
assert header["clock"] == "logical" and header["pid"] == 0, header
ts = [r["t"] for r in recs]
assert ts == sorted(ts), "t must not decrease"
allocators, streams, stacks, live = set(), {0}, set(), {}
kinds = {}
for r in recs:
    k = r["k"]
    kinds[k] = kinds.get(k, 0) + 1
    if k == "allocator":
        allocators.add(r["id"])
    elif k == "stream":
        streams.add(r["id"])
    elif k == "stack":
        stacks.add(r["id"])
        assert all(isinstance(f, str) for f in r["frames"]), r
    if "a" in r:
        assert r["a"] in allocators, ("allocator used before its record", r)
    if "s" in r:
        assert r["s"] in streams, ("stream used before its record", r)
    if "st" in r:
        assert r["st"] in stacks, ("stack used before its record", r)
    if k == "alloc":
        assert (r["a"], r["ptr"]) not in live, ("allocated twice", r)
        live[(r["a"], r["ptr"])] = r
    elif k == "free":
        assert (r["a"], r["ptr"]) in live, ("free of nothing live", r)
        del live[(r["a"], r["ptr"])]
assert recs[-1]["k"] == "end" and recs[-1]["records"] == len(recs), recs[-1]

if what == "csv":
    # tests/tool rows: see run_convert_view_test.sh
    assert header["source"] == "lifetime-csv"
    assert kinds == {"allocator": 1, "alloc": 5, "free": 5, "end": 1}, kinds
    ev = [(r["k"], r["ptr"] // 256 - 1) for r in recs if r["k"] in ("alloc", "free")]
    # rows: 0:[0,4) 1:[1,2) 2:[2,4) 3:[2,2) 4:[4,5): at time 2 the free of
    # row 1 first, then the allocations, then the free of the empty row 3
    assert ev == [("alloc", 0), ("alloc", 1), ("free", 1), ("alloc", 2), ("alloc", 3),
                  ("free", 3), ("free", 0), ("free", 2), ("alloc", 4), ("free", 4)], ev
    sizes = {r["ptr"] // 256 - 1: r["size"] for r in recs if r["k"] == "alloc"}
    assert sizes == {0: 100, 1: 200, 2: 300, 3: 50, 4: 1000}, sizes
elif what == "ops":
    assert header["source"] == "ops-jsonl"
    assert kinds == {"allocator": 1, "alloc": 3, "free": 2, "end": 1}, kinds
    al = [(r["ptr"], r["size"]) for r in recs if r["k"] == "alloc"]
    assert al == [(256, 4), (512, 64), (768, 128)], al
elif what == "torch":
    assert header["source"] == "torch-snapshot"
    assert kinds == {"allocator": 2, "stream": 1, "stack": 3, "alloc": 5, "free": 3,
                     "free_done": 3, "map": 4, "unmap": 2, "oom": 1, "mark": 1, "end": 1}, kinds
    places = [r["place"] for r in recs if r["k"] == "allocator"]
    assert places == ["cuda:0", "cuda:1"], places
    frames = sorted(tuple(r["frames"]) for r in recs if r["k"] == "stack")
    assert frames == [("forward (model.py:42)", "main (train.py:7)"), ("load (data.py:3)",),
                      ("step (torch/optim/adam.py:133)",)], frames
    stream = [r for r in recs if r["k"] == "stream"][0]
    assert stream["handle"] == 0x55550000 and stream["place"] == "cuda:0", stream
    # before the history: the block freed without an allocation, the
    # snapshot's segment and its allocated block the history never names
    first = [r for r in recs if r["k"] in ("alloc", "map")][:3]
    assert [(r["k"], r.get("ptr", r.get("addr"))) for r in first] == [
        ("alloc", 0x7F00DEADBE00), ("map", 0x7F2000000000), ("alloc", 0x7F2000000000)], first
    assert first[2]["req"] == 1000 and first[2]["size"] == 1024, first[2]
    oom = [r for r in recs if r["k"] == "oom"][0]
    assert oom["size"] == 8 << 30 and oom["free"] == 1 << 20 and oom["a"] == 0, oom
    # the devices merged in time: device 1's allocation (13 us) before
    # device 0's first free (14 us)
    order = [(r["k"], r["a"]) for r in recs if r["k"] in ("alloc", "free")]
    assert order.index(("alloc", 1)) < order.index(("free", 0)), order
    side = [r for r in recs if r["k"] == "alloc" and r["size"] == 1 << 20][0]
    assert side["s"] == stream["id"], side
    assert [r["text"] for r in recs if r["k"] == "mark"] == ["snapshot"]
    assert not live.get((0, 0x7F0000000000)), "the history's blocks are freed"
else:
    sys.exit("unknown check " + what)
print("check_trace: %s OK (%d records)" % (what, len(recs)))
