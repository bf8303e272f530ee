"""libdao as CuPy's device memory allocator.

    import dao.cupy
    dao.cupy.use()

``use`` sets ``cupy.cuda.set_allocator`` to a
``cupy.cuda.memory.CFunctionAllocator`` over libdao's entry points
``dao_cupy_malloc`` and ``dao_cupy_free``: CuPy calls the C functions
directly. ``pinned_use`` makes libdao's pinned host memory CuPy's pinned
memory allocator; CuPy takes only a Python function for that one, so each
pinned allocation runs a few Python lines. Statistics as in dao.torch.
"""

import ctypes

from . import _capi, _interop
from ._lib import check, load
from .errors import InvalidStateError
from .place import Place

MALLOC_FN = "dao_cupy_malloc"
FREE_FN = "dao_cupy_free"

_state = {"allocator": None, "config": None, "pinned": None}


def use(config=None, strategy=None):
    """Make libdao CuPy's device memory allocator (``cupy.cuda.set_allocator``).
    ``config`` and ``strategy`` as in dao.torch.use(). Returns the
    CFunctionAllocator."""
    if _state["allocator"] is not None:
        if (config, strategy) != _state["config"]:
            raise InvalidStateError(
                _capi.DAO_ERR_INVALID_STATE,
                "dao.cupy.use() was already called with %r" % (_state["config"],))
        return _state["allocator"]
    import cupy  # noqa: F811: the framework, not this module
    _, cdll, addrs = _interop.entry_points((MALLOC_FN, FREE_FN), "dao.cupy.use()")
    _interop.configure(config, strategy, "dao.cupy.use()")
    # param 0: the entry points allocate on the legacy default stream's order
    # (include/dao/interop.h); cdll is the owner that CuPy keeps alive.
    allocator = cupy.cuda.memory.CFunctionAllocator(0, addrs[MALLOC_FN], addrs[FREE_FN], cdll)
    cupy.cuda.set_allocator(allocator.malloc)
    _state["allocator"] = allocator
    _state["config"] = (config, strategy)
    return allocator


class PinnedMemory:
    """Pinned host memory from libdao, as CuPy's PinnedMemoryPointer wants it
    (``ptr``, ``size``); freed when collected."""

    __slots__ = ("ptr", "size", "place", "_free", "__weakref__")

    def __init__(self, size, place):
        self.size, self.place = size, place
        out = ctypes.c_void_p()
        lib = load()
        check(lib.dao_alloc(place._c(), size, ctypes.byref(out)))
        self.ptr = out.value or 0
        self._free = lib.dao_free

    def __int__(self):
        return self.ptr

    def __del__(self):
        if getattr(self, "ptr", 0):
            self._free(self.place._c(), self.ptr)
            self.ptr = 0


def pinned_place():
    """The place of pinned memory: CUDA pinned, or the CPU under DAO_INTEROP_PLACE=sim."""
    return Place.cpu() if _interop.sim_mode() else Place.cuda_pinned()


def pinned_use():
    """Make libdao's pinned host memory (place ``cuda_pinned``, its default
    allocator) CuPy's pinned memory allocator
    (``cupy.cuda.set_pinned_memory_allocator``)."""
    import cupy  # noqa: F811
    where = pinned_place()
    pointer = cupy.cuda.PinnedMemoryPointer

    def malloc(size):
        return pointer(PinnedMemory(size, where), 0)

    cupy.cuda.set_pinned_memory_allocator(malloc)
    _state["pinned"] = malloc
    return malloc


# Statistics, summary, snapshot and trim: the same for every framework.
memory_stats = _interop.memory_stats
memory_summary = _interop.memory_summary
snapshot = _interop.snapshot
empty_cache = _interop.empty_cache
entry_point_stats = _interop.entry_point_stats
