"""Streams and events (``dao.Stream``, ``dao.Event``), stream-ordered copies
and host functions. On SIM devices a stream is a work queue run by a libdao
thread; on CUDA places it is a CUstream."""

import ctypes

from . import _callbacks, _capi
from ._lib import check, load
from ._util import Closing, address_of
from .place import Place


class Stream(Closing):
    """A stream of a place: ``dao.Stream("sim:0")``. A context manager that
    destroys it (after its work has run) on exit."""

    def __init__(self, place):
        self._lib = load()
        self._place = Place.coerce(place)
        out = ctypes.c_void_p()
        check(self._lib.dao_stream_create(self._place._c(), ctypes.byref(out)))
        self.handle = out.value
        self._keep = []

    @classmethod
    def wrap(cls, place, native):
        """Adopt a native stream (a CUstream address on CUDA places); closing
        frees only the wrapper."""
        self = cls.__new__(cls)
        self._lib = load()
        self._place = Place.coerce(place)
        out = ctypes.c_void_p()
        check(self._lib.dao_stream_wrap(self._place._c(), native or None, ctypes.byref(out)))
        self.handle = out.value
        self._keep = []
        return self

    def _h(self):
        if self.handle is None:
            raise ValueError("the stream is closed")
        return self.handle

    @property
    def place(self):
        """The stream's place, as the library reports it."""
        p = _capi.dao_place()
        check(self._lib.dao_stream_place(self._h(), ctypes.byref(p)))
        return Place.coerce(p)

    @property
    def native(self):
        """The native handle (a CUstream address on CUDA places), else 0."""
        n = ctypes.c_void_p()
        check(self._lib.dao_stream_native(self._h(), ctypes.byref(n)))
        return n.value or 0

    def synchronize(self):
        """Wait until the work queued so far has run."""
        check(self._lib.dao_stream_synchronize(self._h()))
        self._keep.clear()

    def query(self):
        """Whether all queued work has run, without waiting."""
        idle = ctypes.c_int()
        check(self._lib.dao_stream_query(self._h(), ctypes.byref(idle)))
        return bool(idle.value)

    def wait_event(self, event):
        """Make later work on this stream wait for ``event``."""
        check(self._lib.dao_stream_wait_event(self._h(), event._h()))

    def record_event(self, event=None):
        """Record an event (a new one when None) at the end of the stream; returns it."""
        if event is None:
            event = Event(self._place)
        event.record(self)
        return event

    def memcpy(self, dst, src, nbytes):
        """``dao_memcpy_async`` on this stream (see ``memcpy_async``)."""
        memcpy_async(dst, src, nbytes, self)

    def launch_host_func(self, fn):
        """Run ``fn()`` in stream order (see ``launch_host_func``)."""
        launch_host_func(self, fn)

    def close(self):
        """Destroy the stream after its queued work has run (a second call does nothing)."""
        if self.handle is not None:
            check(self._lib.dao_stream_destroy(self.handle))
            self.handle = None
            self._keep.clear()


    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self._lib.dao_stream_destroy(self.handle)
            self.handle = None

    def __repr__(self):
        return "Stream(%r%s)" % (str(self._place), "" if self.handle else ", closed")


class Event(Closing):
    """An event of a place; a new event counts as completed."""

    def __init__(self, place):
        self._lib = load()
        out = ctypes.c_void_p()
        check(self._lib.dao_event_create(Place.coerce(place)._c(), ctypes.byref(out)))
        self.handle = out.value

    def _h(self):
        if self.handle is None:
            raise ValueError("the event is closed")
        return self.handle

    def record(self, stream=None):
        """Record at the end of ``stream`` (None: completes at once)."""
        check(self._lib.dao_event_record(self._h(), None if stream is None else stream._h()))

    def query(self):
        """Whether the event has completed, without waiting."""
        done = ctypes.c_int()
        check(self._lib.dao_event_query(self._h(), ctypes.byref(done)))
        return bool(done.value)

    def synchronize(self):
        """Wait until the event has completed."""
        check(self._lib.dao_event_synchronize(self._h()))

    def close(self):
        """Destroy the event (a second call does nothing)."""
        if self.handle is not None:
            check(self._lib.dao_event_destroy(self.handle))
            self.handle = None


    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self._lib.dao_event_destroy(self.handle)
            self.handle = None


def memcpy_async(dst, src, nbytes, stream=None):
    """Copy ``nbytes`` from ``src`` to ``dst`` in stream order (``stream``
    None: now). Each of dst and src is an int address, a Block or Buffer, or
    (host memory) a bytearray / memoryview (bytes for src). A Python buffer
    is kept alive by the stream until its next synchronize or close; an
    address must stay valid until the copy has run."""
    d, keep_d = address_of(dst, writable=True)
    s, keep_s = address_of(src)
    h = None if stream is None else stream._h()
    check(load().dao_memcpy_async(d or None, s or None, nbytes, h))
    if stream is not None:
        stream._keep.extend(k for k in (keep_d, keep_s) if k is not None)


@_capi.dao_host_fn
def _host_trampoline(user_data):
    fn = _callbacks.take(user_data)
    if fn is not None:
        try:
            fn()
        except BaseException:  # noqa: B036: nothing may cross the C boundary
            _callbacks.report("host function")


def launch_host_func(stream, fn):
    """Run ``fn()`` once the work queued before it on ``stream`` has run
    (None: now, on this thread). On SIM streams it runs on a libdao thread;
    an exception it raises is printed (it cannot reach the caller)."""
    key = _callbacks.add(fn)
    status = load().dao_launch_host_func(None if stream is None else stream._h(),
                                         _host_trampoline, key)
    if status:
        _callbacks.drop(key)
        check(status)
