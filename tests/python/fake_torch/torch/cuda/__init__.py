"""Fake torch.cuda: is_initialized(), current_device(), and _allocate(size)
which stands for the first CUDA tensor (it initializes the allocator)."""

from . import memory  # noqa: F401

_initialized = False
_device = 0


def is_initialized():
    return _initialized


def current_device():
    return _device


def _allocate(size, device=0, stream=0):
    """What a CUDA tensor does: initialize, then call the current allocator."""
    global _initialized
    _initialized = True
    memory._initialized = True
    return memory._current.alloc(size, device, stream)


def _free(ptr, size, device=0, stream=0):
    memory._current.free(ptr, size, device, stream)


def _reset():
    """Back to a fresh process (for the next test)."""
    global _initialized
    _initialized = False
    memory._reset()
