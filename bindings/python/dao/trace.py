"""The memory history (dao/trace.h, docs/recording.md): every allocator's
events recorded to a JSON Lines file that ``dao replay``, ``dao plan`` and
``dao view`` read; ``DAO_TRACE=path`` does the same without code.

    import dao
    dao.trace.start("history.jsonl", "stacks=true")
    ...
    dao.trace.mark("epoch 3")
    dao.trace.stop()
"""

import ctypes

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
