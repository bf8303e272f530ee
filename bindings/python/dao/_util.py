"""Small helpers shared by the modules of package dao."""

import ctypes
import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40,
          "tb": 1 << 40, "tib": 1 << 40}


def parse_size(value):
    """An int, or a string such as "512MiB" or "1 GiB" (suffixes as libdao's
    config strings: powers of 1024), as a number of bytes."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("not a size: %r (use bytes, or a number with B, KiB, MiB, GiB, TiB)"
                         % (value,))
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def format_size(n):
    """Bytes as PyTorch's memory_summary writes them: at most 4 digits and a unit."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 * 10 or unit == "TiB":
            return "%d %s" % (n, unit)
        n //= 1024
    return "%d TiB" % n


def format_count(n):
    """A count as PyTorch's memory_summary writes it: 1000s as K, M."""
    for unit in ("", "K", "M", "G"):
        if abs(n) < 1000 * 10 or unit == "G":
            return "%d%s" % (n, unit) if unit else "%d" % n
        n //= 1000
    return str(n)


def address_of(obj, writable=False):
    """(address, keep-alive) of an int address, an object with ``address``
    (Block, Buffer), bytes (read-only), or a writable buffer (bytearray,
    memoryview, array, ctypes array)."""
    if obj is None:
        return 0, None
    if isinstance(obj, int):
        return obj, None
    addr = getattr(obj, "address", None)
    if isinstance(addr, int):
        return addr, obj
    if isinstance(obj, bytes):
        if writable:
            raise TypeError("cannot write into bytes; pass a bytearray or a memoryview")
        buf = ctypes.create_string_buffer(obj, len(obj))
        return ctypes.addressof(buf), buf
    view = memoryview(obj)
    if view.readonly:
        if writable:
            raise TypeError("cannot write into a read-only buffer")
        buf = ctypes.create_string_buffer(view.tobytes(), view.nbytes)
        return ctypes.addressof(buf), buf
    arr = (ctypes.c_char * view.nbytes).from_buffer(view.cast("B") if view.format != "B" else view)
    return ctypes.addressof(arr), (arr, view)


class Closing:
    """``with`` support for the handle classes: leaving the block calls
    ``close()``; ``destroy()`` is another name for it."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def destroy(self):
        """The same as ``close()``."""
        self.close()
