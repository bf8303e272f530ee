"""libdao for Python: memory for heterogeneous machines, through ctypes.

    import dao
    with dao.Allocator("sim:0", "caching") as a:
        p = a.alloc(1 << 20)
        print(a.stats()["allocated_bytes.all.current"])
        a.free(p)

Places (``dao.Place``), allocators with PyTorch-shaped statistics and JSON
snapshots (``dao.Allocator``), streams and events, recycle pools, tiered
pools, simulated devices (``dao.sim``), errors as ``dao.Error``. PyTorch and
CuPy on libdao: ``dao.torch.use()``, ``dao.cupy.use()``. The raw C API is
``dao._capi`` (generated from the headers); ``dao.library()`` the loaded
library. The library libdao.so.0 is found through DAO_LIBRARY, next to the
package, or the system loader (see ``dao._lib``).
"""

from . import _capi
from ._lib import load as library
from .allocator import Allocator, Block
from .errors import (BackendError, BusyError, ClosedError, Error, InternalError,
                     InvalidArgumentError, InvalidPointerError, InvalidStateError,
                     LibraryNotFoundError, NoDeviceError, NotFoundError, OutOfMemoryError,
                     TimeoutError, UnsupportedError)
from .place import Place, backend_description, default_config, device_count
from .recycle import Buffer, Collection, RecyclePool
from .stream import Event, Stream, launch_host_func, memcpy_async
from .tiered import Tensor, TieredPool
from . import sim
from . import trace

__version__ = _capi.DAO_VERSION_STRING

__all__ = [
    "Allocator", "BackendError", "Block", "Buffer", "BusyError", "ClosedError", "Collection",
    "Error", "Event", "InternalError", "InvalidArgumentError", "InvalidPointerError",
    "InvalidStateError", "LibraryNotFoundError", "NoDeviceError", "NotFoundError",
    "OutOfMemoryError", "Place", "RecyclePool", "Stream", "Tensor", "TieredPool",
    "TimeoutError", "UnsupportedError", "alloc", "backend_description", "default_config",
    "device_count", "free", "launch_host_func", "library", "library_version", "memcpy_async",
    "sim", "trace", "used", "version",
]


def version():
    """The version of package dao (that of the headers it was generated from)."""
    return __version__


def library_version():
    """The version string of the loaded libdao."""
    return library().dao_version_string().decode()


def alloc(place, size):
    """``dao_alloc``: ``size`` bytes on a place's default allocator, as an int address."""
    return Place.coerce(place).alloc(size)


def free(place, ptr):
    """``dao_free`` of an address from ``dao.alloc`` on the same place."""
    Place.coerce(place).free(ptr)


def used(place):
    """``dao_used``: bytes handed out on a place by ``dao.alloc``."""
    return Place.coerce(place).used()
