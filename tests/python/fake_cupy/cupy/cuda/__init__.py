"""Fake cupy.cuda: set_allocator, set_pinned_memory_allocator,
PinnedMemoryPointer, runtime.getDevice, and alloc(size) which allocates
through the current allocator as cupy.ndarray does."""

from . import memory  # noqa: F401

CALLS = []
_allocator = None
_pinned_allocator = None


class runtime:  # noqa: N801: a module in CuPy
    @staticmethod
    def getDevice():  # noqa: N802
        return 0


def set_allocator(allocator=None):
    global _allocator
    CALLS.append(("set_allocator", allocator))
    if allocator is not None and not callable(allocator):
        raise TypeError("set_allocator takes a callable (size) -> MemoryPointer")
    _allocator = allocator


def set_pinned_memory_allocator(allocator=None):
    global _pinned_allocator
    CALLS.append(("set_pinned_memory_allocator", allocator))
    if allocator is not None and not callable(allocator):
        raise TypeError("set_pinned_memory_allocator takes a callable")
    _pinned_allocator = allocator


def alloc(size):
    return _allocator(size)


def alloc_pinned_memory(size):
    p = _pinned_allocator(size)
    if not isinstance(p, PinnedMemoryPointer):
        raise TypeError("a pinned memory allocator must return a PinnedMemoryPointer")
    return p


class PinnedMemoryPointer:
    """As CuPy's: holds ``mem`` (anything with ``ptr``) and points at mem.ptr + offset."""

    def __init__(self, mem, offset):
        self.mem = mem
        self.ptr = mem.ptr + offset

    def size(self):
        return self.mem.size - (self.ptr - self.mem.ptr)


def _reset():
    global _allocator, _pinned_allocator
    _allocator = _pinned_allocator = None
    CALLS.clear()
