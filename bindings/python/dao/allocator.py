"""Allocator objects (``dao.Allocator``), their statistics and snapshots."""

import ctypes
import json
import warnings

from . import _capi
from ._lib import check, load, text
from ._util import Closing, format_count, format_size
from .place import Place

# PyTorch's memory_stats() names of libdao's detailed statistics, and of its pools.
STAT_METRICS = (
    ("allocation", _capi.DAO_STAT_ALLOCATED_BLOCKS),
    ("allocated_bytes", _capi.DAO_STAT_ALLOCATED_BYTES),
    ("segment", _capi.DAO_STAT_RESERVED_SEGMENTS),
    ("reserved_bytes", _capi.DAO_STAT_RESERVED_BYTES),
    ("active", _capi.DAO_STAT_ACTIVE_BLOCKS),
    ("active_bytes", _capi.DAO_STAT_ACTIVE_BYTES),
    ("inactive_split", _capi.DAO_STAT_INACTIVE_SPLIT_BLOCKS),
    ("inactive_split_bytes", _capi.DAO_STAT_INACTIVE_SPLIT_BYTES),
    ("requested_bytes", _capi.DAO_STAT_REQUESTED_BYTES),
)
STAT_POOLS = (
    ("all", _capi.DAO_STAT_POOL_ALL),
    ("large_pool", _capi.DAO_STAT_POOL_LARGE),
    ("small_pool", _capi.DAO_STAT_POOL_SMALL),
)
STAT_FIELDS = ("current", "peak", "allocated", "freed")
# PyTorch's event counters, from dao_allocator_stats.
COUNTERS = (
    ("num_alloc_retries", "alloc_retry_count"),
    ("num_ooms", "failed_alloc_count"),
    ("num_device_alloc", "system_alloc_count"),
    ("num_device_free", "system_free_count"),
)
_BLOCK_STATES = {_capi.DAO_BLOCK_FREE: "free", _capi.DAO_BLOCK_ALLOCATED: "allocated",
                 _capi.DAO_BLOCK_PENDING_FREE: "pending_free"}
_POOL_NAMES = {_capi.DAO_STAT_POOL_ALL: "all", _capi.DAO_STAT_POOL_SMALL: "small",
               _capi.DAO_STAT_POOL_LARGE: "large"}


def _stream_handle(stream):
    if stream is None:
        return None
    h = getattr(stream, "handle", stream)
    if h is not None and not isinstance(h, int):
        raise TypeError("not a stream: %r (use a dao.Stream or None)" % (stream,))
    return h


class Block:
    """One allocation of an Allocator: ``address`` (int), ``size`` (bytes asked
    for), ``free()``. A context manager that frees it on exit; ``int(block)``
    is its address."""

    __slots__ = ("allocator", "address", "size")

    def __init__(self, allocator, address, size):
        self.allocator, self.address, self.size = allocator, address, size

    def __int__(self):
        return self.address

    __index__ = __int__

    def usable_size(self):
        """The block's usable size (at least ``size``)."""
        return self.allocator.usable_size(self.address)

    def free(self):
        """Give the block back (a second call does nothing)."""
        if self.address:
            addr, self.address = self.address, 0
            self.allocator.free(addr)

    def view(self):
        """A writable memoryview of the block (host-addressable places only:
        CPU, SIM, CUDA pinned and managed memory)."""
        if not self.address:
            raise ValueError("the block is freed (or empty)")
        return memoryview((ctypes.c_char * self.size).from_address(self.address)).cast("B")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        return "Block(address=0x%x, size=%d)" % (self.address, self.size)


class Allocator(Closing):
    """An allocator of a strategy on a place, configured by a string.

    ``dao.Allocator("sim:0", "caching", "max_split_size=64MiB")``; strategy None
    is the place's default, config None or "" the strategy's defaults (see
    allocator.h). ``alloc(size)`` gives an int address, ``block(size)`` a
    ``Block``; ``free(address)``. A context manager: ``close()`` on exit
    destroys it (refused with ``dao.BusyError`` while blocks are live).
    """

    def __init__(self, place, strategy=None, config=None):
        self._lib = load()
        self._place = Place.coerce(place)
        out = ctypes.c_void_p()
        check(self._lib.dao_allocator_create(
            self._place._c(), None if strategy is None else strategy.encode(),
            None if config is None else config.encode(), ctypes.byref(out)))
        self._handle = out.value
        self._owned = True
        self._bind()

    @classmethod
    def _borrowed(cls, place):
        self = cls.__new__(cls)
        self._lib = load()
        self._place = Place.coerce(place)
        out = ctypes.c_void_p()
        check(self._lib.dao_place_allocator(self._place._c(), ctypes.byref(out)))
        self._handle = out.value
        self._owned = False
        self._bind()
        return self

    @classmethod
    def default(cls, place):
        """The default allocator of a place (borrowed: closing it does nothing)."""
        return cls._borrowed(place)

    def _bind(self):
        # The hot path: bound C functions and a ready handle argument.
        self._c_alloc = self._lib.dao_allocator_alloc
        self._c_free = self._lib.dao_allocator_free
        self._last_error = self._lib.dao_last_error

    @property
    def handle(self):
        """The C handle (dao_allocator *) as an int; None once closed."""
        return self._handle

    def _h(self):
        if self._handle is None:
            raise ValueError("the allocator is closed")
        return self._handle

    # -- allocation --------------------------------------------------------------

    def alloc(self, size, stream=None):
        """``size`` bytes, aligned to at least 256, as an int address (0 for
        size 0); on ``stream`` (a dao.Stream; None: the default stream)."""
        ptr = ctypes.c_void_p()
        status = self._c_alloc(self._handle, size, _stream_handle(stream) if stream else None,
                               ctypes.byref(ptr))
        if status:
            self._h()
            check(status)
        return ptr.value or 0

    def free(self, ptr):
        """Free an address (or a Block) from ``alloc`` on this allocator; 0 does nothing."""
        if isinstance(ptr, Block):
            ptr.free()
            return
        status = self._c_free(self._handle, ptr or None)
        if status:
            self._h()
            check(status)

    def block(self, size, stream=None):
        """Like ``alloc``, as a ``Block`` (a context manager that frees it)."""
        return Block(self, self.alloc(size, stream), size)

    def usable_size(self, ptr):
        """Usable size of a live block (at least what was asked for)."""
        n = ctypes.c_size_t()
        check(self._lib.dao_allocator_usable_size(self._h(), int(ptr), ctypes.byref(n)))
        return n.value

    def record_stream(self, ptr, stream):
        """Mark a block as used on another stream too (PyTorch's ``record_stream``)."""
        check(self._lib.dao_allocator_record_stream(self._h(), int(ptr), _stream_handle(stream)))

    def trim(self):
        """Give cached memory back to the place; returns the bytes given back."""
        n = ctypes.c_size_t()
        check(self._lib.dao_allocator_trim(self._h(), ctypes.byref(n)))
        return n.value

    empty_cache = trim

    # -- what it is -------------------------------------------------------------

    def _info(self):
        place, strategy, config = _capi.dao_place(), ctypes.c_char_p(), ctypes.c_char_p()
        check(self._lib.dao_allocator_info(self._h(), ctypes.byref(place), ctypes.byref(strategy),
                                           ctypes.byref(config)))
        return Place.coerce(place), text(strategy.value), text(config.value) or ""

    @property
    def place(self):
        return self._place

    @property
    def strategy(self):
        """The strategy's name ("caching", "buddy", "system", "limit")."""
        return self._info()[1]

    @property
    def config(self):
        """Every config key with its effective value."""
        return self._info()[2]

    # -- statistics ---------------------------------------------------------------

    def raw_stats(self):
        """``dao_allocator_stats`` as a dict of its fields (struct_size left out)."""
        s = _capi.dao_allocator_stats()
        s.struct_size = ctypes.sizeof(s)
        check(self._lib.dao_allocator_get_stats(self._h(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in s._fields_ if name != "struct_size"}

    def stat(self, metric, pool=_capi.DAO_STAT_POOL_ALL):
        """One detailed statistic (a DAO_STAT_* metric and pool) as a dict of
        current, peak, allocated and freed; None when the strategy does not
        keep it."""
        out = _capi.dao_stat()
        status = self._lib.dao_allocator_get_stat(self._h(), metric, pool, ctypes.byref(out))
        if status == _capi.DAO_ERR_UNSUPPORTED:
            return None
        check(status)
        return {f: getattr(out, f) for f in STAT_FIELDS}

    def stats(self):
        """The statistics as a flat dict shaped like ``torch.cuda.memory_stats()``:
        ``"allocated_bytes.all.current"``, ``"reserved_bytes.large_pool.peak"``,
        ``"num_alloc_retries"``, ... sorted by key. Statistics the strategy does
        not keep are left out (buddy and system keep the ``all`` pool only)."""
        out = {}
        for name, metric in STAT_METRICS:
            for pool_name, pool in STAT_POOLS:
                st = self.stat(metric, pool)
                if st is None:
                    continue
                for f in STAT_FIELDS:
                    out["%s.%s.%s" % (name, pool_name, f)] = st[f]
        raw = self.raw_stats()
        for key, field in COUNTERS:
            out[key] = raw[field]
        return dict(sorted(out.items()))

    memory_stats = stats

    def reset_peak_stats(self):
        """Set every peak to its current value."""
        check(self._lib.dao_allocator_reset_peak_stats(self._h()))

    def reset_accumulated_stats(self):
        """Zero the accumulated parts (allocated, freed) and the counters."""
        check(self._lib.dao_allocator_reset_accumulated_stats(self._h()))

    # -- snapshots ------------------------------------------------------------------

    def snapshot_json(self):
        """The C library's JSON document of segments, blocks, statistics and
        config (``dao_allocator_snapshot_json``), as a str."""
        length = ctypes.c_size_t()
        check(self._lib.dao_allocator_snapshot_json(self._h(), None, 0, ctypes.byref(length)))
        while True:
            cap = length.value + 1
            buf = ctypes.create_string_buffer(cap)
            check(self._lib.dao_allocator_snapshot_json(self._h(), buf, cap, ctypes.byref(length)))
            if length.value < cap:
                return buf.value.decode("utf-8")

    def snapshot(self):
        """``snapshot_json()`` parsed: a dict with strategy, place, config, stats
        and segments (each with its blocks)."""
        return json.loads(self.snapshot_json())

    def segments(self):
        """The segments and blocks through the structured snapshot API
        (``dao_allocator_snapshot`` ...), as a list of dicts with the fields
        of dao_segment_info and a list "blocks" of dao_block_info dicts."""
        lib = self._lib
        snap = ctypes.c_void_p()
        check(lib.dao_allocator_snapshot(self._h(), ctypes.byref(snap)))
        try:
            count = ctypes.c_size_t()
            check(lib.dao_snapshot_segment_count(snap, ctypes.byref(count)))
            out = []
            for i in range(count.value):
                seg = _capi.dao_segment_info()
                seg.struct_size = ctypes.sizeof(seg)
                check(lib.dao_snapshot_segment(snap, i, ctypes.byref(seg)))
                d = {"address": seg.address, "size": seg.size, "mapped_bytes": seg.mapped_bytes,
                     "pool": _POOL_NAMES.get(seg.pool, seg.pool), "stream": seg.stream or 0,
                     "expandable": bool(seg.expandable), "blocks": []}
                for j in range(seg.block_count):
                    b = _capi.dao_block_info()
                    b.struct_size = ctypes.sizeof(b)
                    check(lib.dao_snapshot_block(snap, i, j, ctypes.byref(b)))
                    d["blocks"].append({"address": b.address, "size": b.size,
                                        "requested_size": b.requested_size,
                                        "state": _BLOCK_STATES.get(b.state, b.state),
                                        "stream": b.stream or 0})
                out.append(d)
            return out
        finally:
            check(lib.dao_snapshot_destroy(snap))

    def memory_summary(self):
        """A readable table of the statistics, like ``torch.cuda.memory_summary()``."""
        return memory_summary(self.stats(), "%s (%s)" % (self.place, self.strategy))

    # -- lifetime --------------------------------------------------------------------

    def close(self):
        """Destroy the allocator (refused with dao.BusyError while blocks are
        live). A borrowed place default is left alone. A second call does
        nothing."""
        if self._handle is None:
            return
        if self._owned:
            check(self._lib.dao_allocator_destroy(self._handle))
        self._handle = None


    def __del__(self):
        if getattr(self, "_handle", None) is not None and self._owned:
            if self._lib.dao_allocator_destroy(self._handle):
                warnings.warn("dao.Allocator on %s collected with live blocks: its memory is "
                              "kept until the process ends (free the blocks, then close())"
                              % self._place, ResourceWarning, stacklevel=2)
            self._handle = None

    def __repr__(self):
        state = "closed" if self._handle is None else ("default" if not self._owned else "")
        return "Allocator(%r%s)" % (str(self._place), ", " + state if state else "")


_SUMMARY_ROWS = (
    ("Allocated memory", "allocated_bytes", True),
    ("Active memory", "active_bytes", True),
    ("Requested memory", "requested_bytes", True),
    ("Reserved memory", "reserved_bytes", True),
    ("Non-releasable memory", "inactive_split_bytes", True),
    ("Allocations", "allocation", False),
    ("Active allocs", "active", False),
    ("Reserved segments", "segment", False),
    ("Non-releasable allocs", "inactive_split", False),
)


def memory_summary(stats, title):
    """The table of ``Allocator.memory_summary`` for a stats dict."""
    width = 79
    rule = "|" + "-" * (width - 2) + "|"
    head = "|" + "=" * (width - 2) + "|"
    lines = [head, "|" + (" libdao memory summary, %s " % title).center(width - 2) + "|", rule,
             "| %-24s| %-10s | %-10s | %-10s | %-10s |"
             % ("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed")]
    for label, key, is_bytes in _SUMMARY_ROWS:
        if "%s.all.current" % key not in stats:
            continue
        lines.append(rule)
        fmt = format_size if is_bytes else format_count
        for pool, text_ in (("all", label), ("large_pool", "      from large pool"),
                            ("small_pool", "      from small pool")):
            if "%s.%s.current" % (key, pool) not in stats:
                continue
            cells = [fmt(stats["%s.%s.%s" % (key, pool, f)]) for f in STAT_FIELDS]
            lines.append("| %-24s| %10s | %10s | %10s | %10s |" % ((text_,) + tuple(cells)))
    lines.append(rule)
    counters = ", ".join("%s: %d" % (k, stats[k]) for k, _ in COUNTERS if k in stats)
    lines.append("| %-*s|" % (width - 3, counters))
    lines.append(head)
    return "\n".join(lines) + "\n"
