"""Places: where memory lives (``dao.Place``), and place-level calls."""

import ctypes

from . import _capi
from ._lib import check, load, text

_KIND_NAMES = {
    _capi.DAO_PLACE_CPU: "cpu",
    _capi.DAO_PLACE_CUDA: "cuda",
    _capi.DAO_PLACE_CUDA_PINNED: "cuda_pinned",
    _capi.DAO_PLACE_CUDA_MANAGED: "cuda_managed",
    _capi.DAO_PLACE_SIM: "sim",
}
_KINDS = {name: kind for kind, name in _KIND_NAMES.items()}
_KINDS["pinned"] = _capi.DAO_PLACE_CUDA_PINNED
_KINDS["managed"] = _capi.DAO_PLACE_CUDA_MANAGED
# Kinds with one place only (device 0).
_SINGLE = (_capi.DAO_PLACE_CPU, _capi.DAO_PLACE_CUDA_PINNED)


def kind_of(kind):
    """A kind number from a number or a name ("cpu", "cuda", "cuda_pinned",
    "cuda_managed", "sim"; "pinned" and "managed" also)."""
    if isinstance(kind, int):
        return kind
    try:
        return _KINDS[str(kind).strip().lower()]
    except KeyError:
        raise ValueError("unknown place kind %r: use one of %s"
                         % (kind, ", ".join(sorted(_KIND_NAMES.values())))) from None


class Place:
    """A place: a kind and a device index, a small immutable value.

    ``Place.cpu()``, ``Place.cuda(0)``, ``Place.cuda_pinned()``,
    ``Place.cuda_managed(0)``, ``Place.sim(0)``, or ``Place("sim:0")``
    (``Place.parse``). ``str(place)`` gives that string back. A place may
    name a device that does not exist; calls that use it raise
    ``dao.NoDeviceError``.
    """

    __slots__ = ("kind", "device")

    def __init__(self, kind, device=None):
        if isinstance(kind, Place):
            kind, device = kind.kind, kind.device if device is None else device
        elif isinstance(kind, str) and device is None and ":" in kind:
            p = Place.parse(kind)
            kind, device = p.kind, p.device
        kind = kind_of(kind)
        device = 0 if device is None else int(device)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "device", device)

    def __setattr__(self, name, value):
        raise AttributeError("a Place is immutable")

    @classmethod
    def cpu(cls):
        """The host."""
        return cls(_capi.DAO_PLACE_CPU, 0)

    @classmethod
    def cuda(cls, device=0):
        """Memory of CUDA device ``device``."""
        return cls(_capi.DAO_PLACE_CUDA, device)

    @classmethod
    def cuda_pinned(cls):
        """Page-locked host memory registered with the CUDA driver."""
        return cls(_capi.DAO_PLACE_CUDA_PINNED, 0)

    @classmethod
    def cuda_managed(cls, device=0):
        """CUDA managed memory associated with device ``device``."""
        return cls(_capi.DAO_PLACE_CUDA_MANAGED, device)

    @classmethod
    def sim(cls, device=0):
        """Simulated device ``device`` (see dao.sim)."""
        return cls(_capi.DAO_PLACE_SIM, device)

    @classmethod
    def parse(cls, text_):
        """``"cpu"``, ``"cuda:1"``, ``"sim:0"``, ``"cuda_pinned"``, ``"cuda"``
        (device 0), or a Place (returned as it is)."""
        if isinstance(text_, Place):
            return text_
        s = str(text_).strip()
        kind, sep, dev = s.partition(":")
        if sep:
            try:
                device = int(dev)
            except ValueError:
                raise ValueError("bad place %r: the device after ':' must be a number" % s) \
                    from None
        else:
            device = 0
        return cls(kind_of(kind), device)

    @classmethod
    def coerce(cls, value):
        """A Place from a Place, a string, a (kind, device) pair or a C dao_place."""
        if isinstance(value, Place):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, _capi.dao_place):
            return cls(value.kind, value.device)
        if isinstance(value, tuple) and len(value) == 2:
            return cls(value[0], value[1])
        raise TypeError("not a place: %r (use dao.Place or a string such as 'sim:0')" % (value,))

    @property
    def kind_name(self):
        """"cpu", "cuda", "cuda_pinned", "cuda_managed" or "sim"."""
        return _KIND_NAMES.get(self.kind, "kind%d" % self.kind)

    def _c(self):
        return _capi.dao_place(self.kind, self.device)

    def __str__(self):
        if self.kind in _SINGLE and self.device == 0:
            return self.kind_name
        return "%s:%d" % (self.kind_name, self.device)

    def __repr__(self):
        return "Place(%r)" % str(self)

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Place.parse(other)
            except ValueError:
                return False
        return isinstance(other, Place) and (self.kind, self.device) == (other.kind, other.device)

    def __hash__(self):
        return hash((self.kind, self.device))

    # -- what the machine has ---------------------------------------------------------

    def memory_info(self):
        """(free, total) bytes of the place, as its backend reports them."""
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        check(load().dao_place_memory_info(self._c(), ctypes.byref(free), ctypes.byref(total)))
        return free.value, total.value

    def exists(self):
        """Whether the place's device exists on this machine."""
        return 0 <= self.device < device_count(self.kind)

    # -- the place default allocator ----------------------------------------------------

    def alloc(self, size):
        """``dao_alloc``: ``size`` bytes from the place's default allocator, as an
        int address (0 for size 0). Free it with ``free``."""
        ptr = ctypes.c_void_p()
        check(load().dao_alloc(self._c(), size, ctypes.byref(ptr)))
        return ptr.value or 0

    def free(self, ptr):
        """``dao_free`` of an address from ``alloc`` on this place (0 does nothing)."""
        check(load().dao_free(self._c(), ptr or None))

    def used(self):
        """Bytes handed out on the place by ``alloc`` (block sizes)."""
        n = ctypes.c_size_t()
        check(load().dao_used(self._c(), ctypes.byref(n)))
        return n.value

    def used_internal(self):
        """Bytes the library holds on the place for recycle and tiered pools."""
        n = ctypes.c_size_t()
        check(load().dao_used_internal(self._c(), ctypes.byref(n)))
        return n.value

    def allocator(self):
        """The place's default allocator (a borrowed ``dao.Allocator`` that
        lives as long as the process; closing it does nothing)."""
        from .allocator import Allocator
        return Allocator._borrowed(self)


def device_count(kind):
    """Number of devices of a kind ("cpu", "cuda", "sim", ... or a number)."""
    n = ctypes.c_int()
    check(load().dao_place_device_count(kind_of(kind), ctypes.byref(n)))
    return n.value


def kind_name(kind):
    """The library's name of a kind number."""
    return text(load().dao_place_kind_name(kind_of(kind)))


def backend_description(kind):
    """One line on the backend that serves a kind, and why it has no devices."""
    return text(load().dao_place_backend_description(kind_of(kind)))


def default_config(kind):
    """(strategy, config) the default allocators of a kind use, from the
    environment (read once, at the first use of any place)."""
    strategy, config = ctypes.c_char_p(), ctypes.c_char_p()
    check(load().dao_place_default_config(kind_of(kind), ctypes.byref(strategy),
                                          ctypes.byref(config)))
    return text(strategy.value), text(config.value) or ""
