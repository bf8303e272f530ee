"""libdao as PyTorch's CUDA allocator: two lines.

    import dao.torch
    dao.torch.use()            # before the first CUDA tensor

``use`` hands PyTorch libdao's entry points ``dao_pluggable_malloc`` and
``dao_pluggable_free`` through ``torch.cuda.memory.CUDAPluggableAllocator``
and ``torch.cuda.memory.change_current_allocator`` (PyTorch >= 2.0): PyTorch
then calls the C functions directly, so Python adds nothing per allocation.
Device ``n`` is served by the default allocator of ``cuda:n`` (strategy
``caching`` unless DAO_ALLOCATOR_CUDA says otherwise); ``config`` becomes
DAO_ALLOC_CONF_CUDA. ``memory_stats()``, ``memory_summary()``,
``snapshot()`` and ``empty_cache()`` read and trim that allocator: with a
pluggable allocator, ``torch.cuda.memory_stats()`` reports nothing useful
and ``torch.cuda.empty_cache()`` does nothing (see docs/python.md).
"""

import warnings

from . import _interop
from .errors import InvalidStateError, UnsupportedError
from . import _capi

ALLOC_FN = "dao_pluggable_malloc"
FREE_FN = "dao_pluggable_free"
# The record-stream hook of include/dao/interop.h, registered where the
# installed PyTorch's pluggable allocator object accepts one.
RECORD_STREAM_FN = "dao_pluggable_record_stream"

_state = {"allocator": None, "config": None}


def use(config=None, strategy=None):
    """Make libdao PyTorch's CUDA allocator. Call it before the first CUDA
    allocation (best: right after ``import torch``). ``config`` is a libdao
    config string for the caching strategy (``"max_split_size=64MiB,
    garbage_collection_threshold=0.8"``), ``strategy`` another strategy. A
    second call with the same arguments does nothing. Returns PyTorch's
    allocator object.

    Raises dao.InvalidStateError when it is too late (PyTorch already
    allocated CUDA memory, or libdao already read its environment),
    dao.NotFoundError when the loaded libdao lacks the entry points, and
    dao.UnsupportedError when PyTorch has no pluggable allocators."""
    if _state["allocator"] is not None:
        if (config, strategy) != _state["config"]:
            raise InvalidStateError(
                _capi.DAO_ERR_INVALID_STATE,
                "dao.torch.use() was already called with %r; libdao cannot be configured "
                "twice in one process" % (_state["config"],))
        return _state["allocator"]
    import torch  # noqa: F811: the framework, not this module
    memory = getattr(getattr(torch, "cuda", None), "memory", None)
    if memory is None or not hasattr(memory, "CUDAPluggableAllocator") or \
            not hasattr(memory, "change_current_allocator"):
        raise UnsupportedError(
            _capi.DAO_ERR_UNSUPPORTED,
            "PyTorch %s has no torch.cuda.memory.CUDAPluggableAllocator / "
            "change_current_allocator: dao.torch.use() needs PyTorch 2.0 or later built with "
            "CUDA" % getattr(torch, "__version__", "?"))
    path, _, _ = _interop.entry_points((ALLOC_FN, FREE_FN), "dao.torch.use()")
    _interop.configure(config, strategy, "dao.torch.use()")
    allocator = memory.CUDAPluggableAllocator(path, ALLOC_FN, FREE_FN)
    _register_record_stream(allocator)
    try:
        memory.change_current_allocator(allocator)
    except RuntimeError as e:
        raise InvalidStateError(
            _capi.DAO_ERR_INVALID_STATE,
            "dao.torch.use() came too late: PyTorch's CUDA allocator is already in use (a CUDA "
            "tensor was created, or torch.cuda was initialized, before this call), and PyTorch "
            "cannot swap an initialized allocator. Call dao.torch.use() right after `import "
            "torch`, before any CUDA work. PyTorch said: %s" % e) from e
    _state["allocator"] = allocator
    _state["config"] = (config, strategy)
    return allocator


def _register_record_stream(allocator):
    """Hand PyTorch the record-stream hook where its allocator object takes
    one (PyTorch's Python API has none so far: Tensor.record_stream is then
    not seen by libdao; see docs/python.md)."""
    obj = getattr(allocator, "allocator", None)
    obj = obj() if callable(obj) else getattr(allocator, "_allocator", None)
    setter = getattr(obj, "set_record_stream_fn", None)
    if setter is None:
        return False
    addr = _interop.optional_symbol(RECORD_STREAM_FN)
    if addr is None:
        warnings.warn("the loaded libdao has no %s: Tensor.record_stream() will not reach libdao "
                      "(synchronize streams before freeing tensors used on several streams)"
                      % RECORD_STREAM_FN, RuntimeWarning, stacklevel=3)
        return False
    setter(addr)
    return True


def in_use():
    """Whether ``use()`` made libdao PyTorch's allocator in this process."""
    return _state["allocator"] is not None


# Statistics, summary, snapshot and trim: the same for every framework.
memory_stats = _interop.memory_stats
memory_summary = _interop.memory_summary
snapshot = _interop.snapshot
empty_cache = _interop.empty_cache
entry_point_stats = _interop.entry_point_stats


def reset_peak_memory_stats(device=None):
    """Set every peak statistic to its current value."""
    _interop.allocator(device).reset_peak_stats()


def max_memory_reserved(device=None):
    """Peak reserved bytes (``torch.cuda.max_memory_reserved``)."""
    return memory_stats(device)["reserved_bytes.all.peak"]


def max_memory_allocated(device=None):
    """Peak allocated bytes (``torch.cuda.max_memory_allocated``)."""
    return memory_stats(device)["allocated_bytes.all.peak"]
