"""The memory history (dao/trace.h, docs/recording.md): every allocator's
events recorded to a file (docs/trace-format.md) that ``dao replay``,
``dao plan`` and ``dao view`` read, and ``read()`` here;
``DAO_TRACE=path`` does the same without code.

    import dao
    dao.trace.start("history.dao", "stacks=true")
    ...
    dao.trace.mark("epoch 3")
    dao.trace.stop()
    for record in dao.trace.read("history.dao"):
        ...
"""

import ctypes
import json
import struct

from . import _capi
from ._lib import check, load


def start(path, options=""):
    """Record every allocator of the process to ``path`` (``%p``: the pid)."""
    check(load().dao_trace_start(str(path).encode(), options.encode()))


def stop():
    """Stop the recording: an ``end`` record, the file closed."""
    check(load().dao_trace_stop())


def flush():
    """Write what was recorded so far."""
    check(load().dao_trace_flush())


def mark(text):
    """A note in the history (nothing when no recording runs)."""
    check(load().dao_trace_mark(text.encode()))


def stats():
    """The recording's counts: a dict of active, records, lost, pending and
    bytes_written."""
    s = _capi.dao_trace_stats()
    s.struct_size = ctypes.sizeof(s)
    check(load().dao_trace_get_stats(ctypes.byref(s)))
    return {"active": bool(s.active), "records": s.records, "lost": s.lost,
            "pending": s.pending, "bytes_written": s.bytes_written}


# The C callbacks of set_oom_callback, kept alive while set (by handle).
_oom_callbacks = {}


def set_oom_callback(allocator, fn):
    """Call ``fn(size)`` each time an allocation from ``allocator`` fails for
    lack of memory, on the thread that asked, before OutOfMemoryError is
    raised there (``dao_allocator_set_oom_callback``). Inside it, allocating
    from the same allocator raises InvalidStateError; snapshots, statistics,
    frees and ``dao.trace.stop()`` work. ``None`` removes it."""
    lib = load()
    handle = allocator._handle
    if fn is None:
        check(lib.dao_allocator_set_oom_callback(handle, _capi.dao_oom_callback(), None))
        _oom_callbacks.pop(handle, None)
        return

    def call(_allocator, size, _stream, _user):
        try:
            fn(size)
        except Exception:  # pylint: disable=broad-except
            pass  # nothing may cross back into C

    c_fn = _capi.dao_oom_callback(call)
    check(lib.dao_allocator_set_oom_callback(handle, c_fn, None))
    _oom_callbacks[handle] = c_fn


# The binary encoding's 48-byte record: t, ptr, size, req, allocator,
# stream, stack id + 1, kind | tid << 8 (little-endian).
_RECORD = struct.Struct("<QQQQIIII")
_KINDS = {0: "alloc", 1: "free", 2: "free_done", 3: "use", 4: "map", 5: "unmap", 7: "trim"}


def _binary_record(fields):
    t, ptr, size, req, a, s, st, word = fields
    kind = _KINDS.get(word & 0xFF)
    if kind is None:
        return None  # a kind this reader does not know: skipped
    rec = {"k": kind, "t": t, "a": a}
    if kind in ("map", "unmap"):
        rec.update(addr=ptr, size=size)
    elif kind == "trim":
        rec["released"] = size
    else:
        rec.update(ptr=ptr, s=s, tid=word >> 8)
        if kind == "alloc":
            rec.update(size=size, req=req)
        if st != 0:
            rec["st"] = st - 1
    return rec


def read(path):
    """The records of a trace file, in file order, as dicts with the keys of
    the JSON Lines encoding (docs/trace-format.md), the header first; both
    encodings. A cut-short last line or frame (a killed recorder) ends the
    iteration; anything else malformed raises ValueError."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"\n")
    if end < 0:
        return
    header = json.loads(data[:end])
    if header.get("format") != "dao-trace":
        raise ValueError(f"{path}: not a dao trace")
    yield header
    pos = end + 1
    if header.get("encoding", "jsonl") == "jsonl":
        while True:
            end = data.find(b"\n", pos)
            if end < 0:
                return
            if end > pos:
                yield json.loads(data[pos:end])
            pos = end + 1
    while pos + 8 <= len(data):
        tag = data[pos:pos + 4]
        (length,) = struct.unpack_from("<I", data, pos + 4)
        body = pos + 8
        if body + length > len(data):
            return  # cut short
        if tag == b"R\0\0\0":
            if length % _RECORD.size:
                raise ValueError(f"{path}: byte {pos}: a record frame of {length} bytes")
            for fields in _RECORD.iter_unpack(data[body:body + length]):
                rec = _binary_record(fields)
                if rec is not None:
                    yield rec
        elif tag == b"J\0\0\0":
            for line in data[body:body + length].splitlines():
                if line:
                    yield json.loads(line)
        else:
            raise ValueError(f"{path}: byte {pos}: not a frame of the binary encoding")
        pos = body + length
