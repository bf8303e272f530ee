"""What dao.torch and dao.cupy share: the entry points of include/dao/interop.h
(looked up in the loaded libdao when first needed, so that a library without
them fails only there, with a clear dao.Error), the config of the default
allocators they use, and statistics of those allocators."""

import ctypes
import os
import sys

from . import _capi
from ._lib import check, load
from .allocator import Allocator
from .errors import InvalidStateError, NotFoundError
from .place import Place, default_config

INTEROP_PLACE_ENV = "DAO_INTEROP_PLACE"


def sim_mode():
    """Whether DAO_INTEROP_PLACE=sim makes the entry points serve SIM devices
    (for tests and what-if runs only)."""
    return os.environ.get(INTEROP_PLACE_ENV, "").strip().lower() == "sim"


def kind():
    """The place kind the entry points serve: CUDA, or SIM under DAO_INTEROP_PLACE=sim."""
    return _capi.DAO_PLACE_SIM if sim_mode() else _capi.DAO_PLACE_CUDA


def kind_name():
    return "SIM" if sim_mode() else "CUDA"


def place(device):
    """The place of device ``device`` of the entry points."""
    return Place(kind(), device)


def _entry_library():
    """(path, ctypes.CDLL) of the library that exports the entry points: libdao."""
    api = load()
    return api.path, api.cdll


def entry_points(names, who):
    """(path, cdll, {name: address}) of entry points; dao.NotFoundError when
    the library lacks one."""
    path, cdll = _entry_library()
    addrs, missing = {}, []
    for name in names:
        try:
            addrs[name] = _address(getattr(cdll, name))
        except AttributeError:
            missing.append(name)
    if missing:
        raise NotFoundError(
            _capi.DAO_ERR_NOT_FOUND,
            "%s needs %s, which the loaded libdao (%s) does not export: that library predates "
            "the PyTorch and CuPy entry points (include/dao/interop.h). Install a libdao that "
            "has them, or point DAO_LIBRARY at one" % (who, ", ".join(missing), path))
    return path, cdll, addrs


def optional_symbol(name):
    """The address of an entry point, or None when the library lacks it."""
    _, cdll = _entry_library()
    try:
        return _address(getattr(cdll, name))
    except AttributeError:
        return None


def _address(fn):
    import ctypes
    return ctypes.cast(fn, ctypes.c_void_p).value


def configure(config, strategy, who):
    """Set DAO_ALLOC_CONF_<KIND> (and DAO_ALLOCATOR_<KIND>) for the default
    allocators the entry points use, then check the library will use them:
    it reads the environment once, at the first use of any place, so a
    config set after that would be ignored; that is an error here."""
    suffix = "SIM" if sim_mode() else "CUDA"
    wanted = {}
    if config is not None:
        wanted["DAO_ALLOC_CONF_" + suffix] = config
    if strategy is not None:
        wanted["DAO_ALLOCATOR_" + suffix] = strategy
    if not wanted:
        return
    before = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    got_strategy, got_config = default_config(kind())
    if (config is not None and got_config != config) or \
            (strategy is not None and got_strategy != strategy):
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        raise InvalidStateError(
            _capi.DAO_ERR_INVALID_STATE,
            "%s(config=%r) came too late: libdao already read its environment (at the first "
            "use of any place, here or by another module) and its %s default allocators use "
            "strategy %r with config %r. Call %s before anything else uses libdao, or set %s "
            "in the environment before Python starts"
            % (who, config if config is not None else strategy, kind_name(), got_strategy,
               got_config, who, " and ".join("%s=%s" % kv for kv in wanted.items())))


def default_device():
    """The framework's current device when it is loaded, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                return int(torch.cuda.current_device())
        except Exception:  # noqa: BLE001: a framework without CUDA
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            return int(cupy.cuda.runtime.getDevice())
        except Exception:  # noqa: BLE001
            pass
    return 0


def device_index(device):
    """An int device from None, an int, "cuda:1" or an object with ``.index``/``.id``."""
    if device is None:
        return default_device()
    if isinstance(device, int):
        return device
    for attr in ("index", "id"):
        v = getattr(device, attr, None)
        if isinstance(v, int):
            return v
    s = str(device)
    if ":" in s:
        return int(s.rsplit(":", 1)[1])
    if s in ("cuda", "sim"):
        return default_device()
    raise ValueError("not a device: %r" % (device,))


def allocator(device):
    """The default allocator that the entry points use for ``device``."""
    return Allocator.default(place(device_index(device)))


# The statistics of the allocator behind the framework's entry points, the
# same for dao.torch and dao.cupy (each re-exports them).
def memory_stats(device=None):
    """Statistics of libdao's allocator for a device (None: the current one),
    shaped like ``torch.cuda.memory_stats()``."""
    return allocator(device).stats()


def memory_summary(device=None):
    """A readable table of ``memory_stats(device)``, like PyTorch's."""
    from .allocator import memory_summary as summary
    a = allocator(device)
    return summary(a.stats(), "%s (%s)" % (a.place, a.strategy))


def snapshot(device=None):
    """The allocator's segments, blocks, statistics and config (libdao's JSON, parsed)."""
    return allocator(device).snapshot()


def empty_cache(device=None):
    """Give libdao's cached memory of a device back to the driver, as
    ``torch.cuda.empty_cache()`` would; returns the bytes released."""
    return allocator(device).trim()


def entry_point_stats():
    """What the C entry points (dao_pluggable_*, dao_cupy_*) hold and have
    done, from dao_interop_get_stats(): a dict of kind (the place kind they
    serve, "cuda" or "sim"), cached_streams, idle_streams, streams_wrapped,
    streams_evicted, streams_retired, failed_mallocs and failed_frees."""
    s = _capi.dao_interop_stats()
    s.struct_size = ctypes.sizeof(s)
    lib = load()
    check(lib.dao_interop_get_stats(ctypes.byref(s)))
    out = {name: getattr(s, name) for name, _ in s._fields_ if name not in ("struct_size", "kind")}
    out["kind"] = lib.dao_place_kind_name(s.kind).decode()
    return out
