"""Tiered pools: a device memory budget backed by a host tier, with a kernel
queue whose future accesses decide what to evict (``dao.TieredPool``).

Kernels are Python functions here, called on the pool's executor thread
with the device addresses of their tensors: ``kernel(inputs, outputs,
stream)`` (lists of ints, and the compute stream's handle). An exception
in a kernel fails the pool (``synchronize`` raises dao.InvalidStateError
with the exception as its ``__cause__``)."""

import ctypes
import threading

from . import _callbacks, _capi
from ._lib import check, load
from ._util import address_of
from .place import Place

_STATES = {_capi.DAO_TENSOR_UNINITIALIZED: "uninitialized", _capi.DAO_TENSOR_ON_DEVICE: "device",
           _capi.DAO_TENSOR_ON_HOST: "host", _capi.DAO_TENSOR_IN_TRANSIT: "in_transit"}


@_capi.dao_kernel_fn
def _kernel_trampoline(user_data, inputs, input_count, outputs, output_count, stream):
    entry = _callbacks.take(user_data)
    if entry is None:
        return _capi.DAO_ERR_INTERNAL
    pool, fn = entry
    try:
        fn([inputs[i] or 0 for i in range(input_count)],
           [outputs[i] or 0 for i in range(output_count)], stream or 0)
        return _capi.DAO_OK
    except BaseException as e:  # noqa: B036: nothing may cross the C boundary
        with pool._errors_lock:
            pool._errors.append(e)
        return _capi.DAO_ERR_INTERNAL


class Tensor:
    """A tensor of a tiered pool: ``nbytes``, ``write(data)``, ``read()``,
    ``state``, ``retire()``, ``release()``."""

    __slots__ = ("pool", "handle", "nbytes")

    def __init__(self, pool, handle, nbytes):
        self.pool, self.handle, self.nbytes = pool, handle, nbytes

    def _h(self):
        if self.handle is None:
            raise ValueError("the tensor is released")
        return self.handle

    def write(self, data):
        """Copy ``nbytes`` of host data (bytes-like) into the tensor, in kernel order."""
        addr, keep = address_of(data)
        check(self.pool._lib.dao_tensor_write(self._h(), addr, self.nbytes))
        del keep

    def read(self, out=None):
        """The tensor's bytes once the kernels that write it have run (into
        ``out``, a writable buffer, when given)."""
        target = bytearray(self.nbytes) if out is None else out
        addr, keep = address_of(target, writable=True)
        check(self.pool._lib.dao_tensor_read(self._h(), addr, self.nbytes))
        del keep
        return bytes(target) if out is None else out

    @property
    def state(self):
        """"uninitialized", "device", "host" or "in_transit"."""
        s = ctypes.c_int()
        check(self.pool._lib.dao_tensor_get_state(self._h(), ctypes.byref(s)))
        return _STATES.get(s.value, s.value)

    def retire(self):
        """No use after those already submitted needs the data; the handle
        stays (``dao_tensor_retire``): once the queued uses have run,
        evicting it copies nothing back, and ``read()`` fails until a write
        or a kernel output gives it new data."""
        check(self.pool._lib.dao_tensor_retire(self._h()))

    def release(self):
        """Drop the handle; the memory goes once no queued kernel uses it."""
        if self.handle is not None:
            check(self.pool._lib.dao_tensor_release(self.handle))
            self.handle = None


class TieredPool:
    """``dao.TieredPool("sim:0", "cpu", 64 << 20, "policy=belady")``: kernels
    on tensors that together need not fit in ``device_budget``. A context
    manager that destroys the pool (after its kernels) on exit."""

    def __init__(self, device, host, device_budget, config=None):
        self._lib = load()
        self._errors = []
        self._errors_lock = threading.Lock()
        self._score = None
        out = ctypes.c_void_p()
        check(self._lib.dao_tiered_create(Place.coerce(device)._c(), Place.coerce(host)._c(),
                                          device_budget,
                                          None if config is None else config.encode(),
                                          ctypes.byref(out)))
        self.handle = out.value

    def _h(self):
        if self.handle is None:
            raise ValueError("the pool is destroyed")
        return self.handle

    def tensor(self, nbytes):
        """A new tensor of ``nbytes`` (nothing allocated until written or used)."""
        out = ctypes.c_void_p()
        check(self._lib.dao_tensor_create(self._h(), nbytes, ctypes.byref(out)))
        return Tensor(self, out.value, nbytes)

    def submit(self, kernel, inputs=(), outputs=()):
        """Queue ``kernel(input_addresses, output_addresses, stream)``; returns at once."""
        ins = (ctypes.c_void_p * max(len(inputs), 1))(*[t._h() for t in inputs])
        outs = (ctypes.c_void_p * max(len(outputs), 1))(*[t._h() for t in outputs])
        key = _callbacks.add((self, kernel))
        status = self._lib.dao_kernel_submit(self._h(), _kernel_trampoline, key,
                                             ins if inputs else None, len(inputs),
                                             outs if outputs else None, len(outputs))
        if status:
            _callbacks.drop(key)
            check(status)

    def set_score(self, score):
        """The scoring function of policy ``callback``: ``score(info)`` with a
        dict (bytes, now, last_use, next_use, queued_uses, dirty) returns a
        float; the run of blocks with the highest total is evicted. It runs
        with the pool's lock held: it must not call the pool."""
        def trampoline(user_data, info):
            i = info.contents
            try:
                return float(score({"bytes": i.bytes, "now": i.now, "last_use": i.last_use,
                                    "next_use": i.next_use, "queued_uses": i.queued_uses,
                                    "dirty": bool(i.dirty)}))
            except BaseException:  # noqa: B036
                _callbacks.report("score function")
                return 0.0
        fn = _capi.dao_score_fn(trampoline)
        check(self._lib.dao_tiered_set_score_callback(self._h(), fn, None))
        self._score = fn  # C keeps the pointer for the pool's life

    def synchronize(self):
        """Wait for every submitted kernel. A failed pool raises
        dao.InvalidStateError, caused by the kernel's exception."""
        status = self._lib.dao_tiered_synchronize(self._h())
        if status:
            with self._errors_lock:
                cause = self._errors[0] if self._errors else None
            try:
                check(status)
            except Exception as e:
                raise e from cause

    def stats(self):
        """``dao_tiered_stats`` as a dict."""
        s = _capi.dao_tiered_stats()
        s.struct_size = ctypes.sizeof(s)
        check(self._lib.dao_tiered_get_stats(self._h(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in s._fields_ if name != "struct_size"}

    def trim(self):
        """Wait for the kernels so far, move every resident tensor to the host
        tier and give the device budget back to the device place's allocator
        (a later kernel takes it again)."""
        check(self._lib.dao_tiered_trim(self._h()))

    def link_stats(self):
        """``dao_tiered_link_stats`` as a dict: bytes and copy time each way,
        rates, the executor's stall and the fraction of copy time hidden."""
        s = _capi.dao_tiered_link_stats()
        s.struct_size = ctypes.sizeof(s)
        check(self._lib.dao_tiered_get_link_stats(self._h(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in s._fields_ if name != "struct_size"}

    def destroy(self):
        """Run the queued kernels, then free every tensor and the budget."""
        if self.handle is not None:
            check(self._lib.dao_tiered_destroy(self.handle))
            self.handle = None

    close = destroy

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __del__(self):
        if getattr(self, "handle", None) is not None:
            self._lib.dao_tiered_destroy(self.handle)
            self.handle = None
