"""Recycle pools: typed, shaped, reference-counted buffers for streaming
pipelines (``dao.RecyclePool``, ``dao.Buffer``, ``dao.Collection``)."""

import ctypes

from . import _capi
from ._lib import check, load
from .place import Place

FOREVER = -1.0


def _shape_array(shape):
    shape = tuple(int(s) for s in shape)
    return len(shape), (ctypes.c_size_t * max(len(shape), 1))(*shape)


class Buffer:
    """One reference to a buffer of a pool: ``address``, ``shape``,
    ``element_size``, ``nbytes``, ``sequence``, ``view()``. ``release()``
    drops the reference (also on exit from ``with``, and when the object is
    collected); ``retain()`` gives another one; ``pool.submit(buffer)``
    moves it into the pool's queue."""

    __slots__ = ("pool", "handle", "__weakref__")

    def __init__(self, pool, handle):
        self.pool, self.handle = pool, handle

    def _h(self):
        if self.handle is None:
            raise ValueError("this buffer reference was released or submitted")
        return self.handle

    @property
    def address(self):
        data = ctypes.c_void_p()
        check(self.pool._lib.dao_buffer_data(self._h(), ctypes.byref(data)))
        return data.value or 0

    @property
    def shape(self):
        ndim, shape = ctypes.c_int(), ctypes.POINTER(ctypes.c_size_t)()
        check(self.pool._lib.dao_buffer_shape(self._h(), ctypes.byref(ndim), ctypes.byref(shape)))
        return tuple(shape[i] for i in range(ndim.value))

    def _size(self):
        elem, nbytes = ctypes.c_size_t(), ctypes.c_size_t()
        check(self.pool._lib.dao_buffer_size(self._h(), ctypes.byref(elem), ctypes.byref(nbytes)))
        return elem.value, nbytes.value

    @property
    def element_size(self):
        return self._size()[0]

    @property
    def nbytes(self):
        return self._size()[1]

    @property
    def place(self):
        p = _capi.dao_place()
        check(self.pool._lib.dao_buffer_place(self._h(), ctypes.byref(p)))
        return Place.coerce(p)

    @property
    def sequence(self):
        """Submission number of the buffer's last submit."""
        s = ctypes.c_uint64()
        check(self.pool._lib.dao_buffer_sequence(self._h(), ctypes.byref(s)))
        return s.value

    def view(self):
        """A writable memoryview of the buffer's bytes (host-addressable places)."""
        n = self.nbytes
        return memoryview((ctypes.c_char * n).from_address(self.address)).cast("B")

    def retain(self):
        """Another reference to the same buffer (released on its own)."""
        check(self.pool._lib.dao_buffer_retain(self._h()))
        return Buffer(self.pool, self.handle)

    def release(self):
        """Drop this reference (a second call does nothing)."""
        if self.handle is not None:
            h, self.handle = self.handle, None
            check(self.pool._lib.dao_buffer_release(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self.pool._lib.dao_buffer_release(self.handle)
            self.handle = None


class RecyclePool:
    """Up to ``max_buffers`` buffers of one element size and shape on a place.

    ``acquire()`` a free buffer, fill it, ``submit()`` it; another thread
    ``take()``s it, works on it and releases it. Timeouts are in seconds
    (0 tries once, negative waits for ever). A context manager that closes
    and destroys the pool on exit."""

    def __init__(self, place, element_size, shape, max_buffers, preallocate=0, config=None):
        self._lib = load()
        ndim, arr = _shape_array(shape)
        out = ctypes.c_void_p()
        check(self._lib.dao_recycle_create(Place.coerce(place)._c(), element_size, ndim, arr,
                                           max_buffers, preallocate,
                                           None if config is None else config.encode(),
                                           ctypes.byref(out)))
        self.handle = out.value
        self._owner = None

    @classmethod
    def _borrowed(cls, handle, owner):
        self = cls.__new__(cls)
        self._lib = load()
        self.handle = handle
        self._owner = owner  # the collection: keeps it alive, and owns the pool
        return self

    def _h(self):
        if self.handle is None:
            raise ValueError("the pool is destroyed")
        return self.handle

    def acquire(self, timeout=FOREVER):
        """A free buffer to fill, with one reference for the caller."""
        out = ctypes.c_void_p()
        check(self._lib.dao_recycle_acquire(self._h(), float(timeout), ctypes.byref(out)))
        return Buffer(self, out.value)

    def submit(self, buffer):
        """Move the caller's reference into the queue (``buffer`` is used up)."""
        check(self._lib.dao_recycle_submit(self._h(), buffer._h()))
        buffer.handle = None

    def take(self, timeout=FOREVER):
        """The next submitted buffer (first in, first out)."""
        out = ctypes.c_void_p()
        check(self._lib.dao_recycle_take(self._h(), float(timeout), ctypes.byref(out)))
        return Buffer(self, out.value)

    def close(self):
        """Wake every waiter and refuse new acquires (dao.ClosedError)."""
        check(self._lib.dao_recycle_close(self._h()))

    def stats(self):
        """``dao_recycle_stats`` as a dict."""
        s = _capi.dao_recycle_stats()
        s.struct_size = ctypes.sizeof(s)
        check(self._lib.dao_recycle_get_stats(self._h(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in s._fields_ if name != "struct_size"}

    def destroy(self):
        """Destroy the pool (refused with dao.BusyError while buffers are out).
        A pool of a Collection is destroyed with its collection."""
        if self.handle is not None and self._owner is None:
            check(self._lib.dao_recycle_destroy(self.handle))
        self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.handle is not None and self._owner is None:
            self.close()
            self.destroy()

    def __del__(self):
        if getattr(self, "handle", None) is not None and self._owner is None:
            self._lib.dao_recycle_destroy(self.handle)
            self.handle = None


class Collection:
    """A named set of pools, destroyed together."""

    def __init__(self):
        self._lib = load()
        out = ctypes.c_void_p()
        check(self._lib.dao_collection_create(ctypes.byref(out)))
        self.handle = out.value

    def _h(self):
        if self.handle is None:
            raise ValueError("the collection is destroyed")
        return self.handle

    def add(self, name, place, element_size, shape, max_buffers, preallocate=0, config=None):
        """Create a pool under ``name`` (owned by the collection)."""
        ndim, arr = _shape_array(shape)
        out = ctypes.c_void_p()
        check(self._lib.dao_collection_add(self._h(), name.encode(), Place.coerce(place)._c(),
                                           element_size, ndim, arr, max_buffers, preallocate,
                                           None if config is None else config.encode(),
                                           ctypes.byref(out)))
        return RecyclePool._borrowed(out.value, self)

    def find(self, name):
        """The pool of a name (dao.NotFoundError lists the names there are)."""
        out = ctypes.c_void_p()
        check(self._lib.dao_collection_find(self._h(), name.encode(), ctypes.byref(out)))
        return RecyclePool._borrowed(out.value, self)

    __getitem__ = find

    def close(self):
        """Close every pool of the collection."""
        check(self._lib.dao_collection_close(self._h()))

    def destroy(self):
        """Destroy the collection and its pools (dao.BusyError while buffers are out)."""
        if self.handle is not None:
            check(self._lib.dao_collection_destroy(self.handle))
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            self.close()
            self.destroy()

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self._lib.dao_collection_destroy(self.handle)
            self.handle = None
