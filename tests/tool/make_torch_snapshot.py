#!/usr/bin/env python3
"""Writes a PyTorch memory snapshot pickle by hand, for the tests of
`dao convert --from torch-snapshot` (issue 18).

Debian's python3-torch is CPU-only (1.13) and cannot record CUDA memory
history, so this builds the structure that torch.cuda.memory._snapshot()
returns and torch.cuda.memory._dump_snapshot() pickles, with the standard
library's pickle: "segments" (with "blocks" and their "frames") and
"device_traces" (one list per device) holding every action (alloc,
free_requested, free_completed, segment_alloc, segment_free, segment_map,
segment_unmap, oom, snapshot) with "addr", "size", "stream", "frames"
(filename/line/name) and "time_us". It also holds what a reader must get
past: a block and a segment that predate the history, an action of a later
PyTorch, frames shared between entries (pickle memo references), two
devices whose entries interleave in time, and keys the converter ignores.

Usage: make_torch_snapshot.py OUTPUT [--protocol N] [--foreign]
  --protocol N  pickle protocol (default 4, as Python 3.8+ writes; 2 is
                what libtorch's C++ pickler writes; 5 adds framing as 4)
  --foreign     write a pickle that is not a snapshot ({"foo": 1})
"""
import argparse
import pickle

MiB = 1 << 20


def frame(name, filename, line):
    return {"filename": filename, "line": line, "name": name}


def snapshot():
    f_model = [frame("forward", "model.py", 42), frame("main", "train.py", 7)]
    f_opt = [frame("step", "torch/optim/adam.py", 133)]  # shared: memo refs
    seg0, seg1, seg_exp, seg_old = 0x7F0000000000, 0x7E0000000000, 0x7F1000000000, 0x7F2000000000
    side_stream = 0x55550000

    def e(action, addr, size, t, stream=0, frames=(), **extra):
        d = {"action": action, "addr": addr, "size": size, "stream": stream,
             "frames": list(frames) if not isinstance(frames, list) else frames,
             "time_us": t}
        d.update(extra)
        return d

    dev0 = [
        e("segment_alloc", seg0, 2 * MiB, 10),
        e("alloc", seg0, 512, 11, frames=f_model),
        e("alloc", seg0 + 512, MiB, 12, stream=side_stream, frames=f_opt),
        e("free_requested", seg0, 512, 14, frames=f_model),
        e("free_completed", seg0, 512, 15),
        # a block allocated before the history began
        e("free_requested", 0x7F00DEADBE00, 4096, 16, frames=f_opt),
        e("free_completed", 0x7F00DEADBE00, 4096, 17),
        e("segment_map", seg_exp, 2 * MiB, 18),
        {"action": "oom", "size": 8 << 30, "stream": 0, "device_free": MiB, "frames": [],
         "time_us": 19},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "frames": [], "time_us": 20},
        e("segment_unmap", seg_exp, 2 * MiB, 21),
        e("future_action", seg0, 1, 22),  # an action of a later PyTorch
        e("free_requested", seg0 + 512, MiB, 23, stream=side_stream),
        e("free_completed", seg0 + 512, MiB, 24, stream=side_stream),
        e("segment_free", seg0, 2 * MiB, 25),
    ]
    dev1 = [
        e("segment_alloc", seg1, 2 * MiB, 13),
        e("alloc", seg1, 256, 13, frames=f_model, compile_context="N/A"),
    ]
    segments = [
        {"device": 0, "address": seg_old, "total_size": 2 * MiB, "allocated_size": 1024,
         "active_size": 1024, "requested_size": 1000, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
         "blocks": [
             {"address": seg_old, "size": 1024, "requested_size": 1000,
              "state": "active_allocated", "frames": [frame("load", "data.py", 3)]},
             {"address": seg_old + 1024, "size": 2 * MiB - 1024, "requested_size": 0,
              "state": "inactive", "frames": []}]},
        {"device": 1, "address": seg1, "total_size": 2 * MiB, "allocated_size": 256,
         "active_size": 256, "requested_size": 256, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
         "blocks": [{"address": seg1, "size": 256, "requested_size": 256,
                     "state": "active_allocated", "frames": f_model}]},
    ]
    return {"segments": segments, "device_traces": [dev0, dev1],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None, "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0,
                                   "expandable_segments": True}}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output")
    p.add_argument("--protocol", type=int, default=4)
    p.add_argument("--foreign", action="store_true")
    a = p.parse_args()
    data = {"foo": 1} if a.foreign else snapshot()
    with open(a.output, "wb") as f:
        pickle.dump(data, f, protocol=a.protocol)


if __name__ == "__main__":
    main()
