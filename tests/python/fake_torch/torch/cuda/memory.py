"""Fake torch.cuda.memory: CUDAPluggableAllocator and change_current_allocator
as PyTorch 2.x has them (torch/cuda/memory.py), recording every call in CALLS.

CUDAPluggableAllocator loads the file with ctypes and looks both functions
up, as PyTorch does; the recorded allocator can then be called with the C
signatures PyTorch uses:
    void *alloc(ssize_t size, int device, cudaStream_t stream)
    void free(void *ptr, ssize_t size, int device, cudaStream_t stream)
change_current_allocator raises RuntimeError once the current allocator is
initialized (after the first CUDA tensor), as PyTorch does.
"""

import ctypes
import inspect
import os

CALLS = []
ALLOC_T = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
FREE_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)


class _CUDAAllocator:
    def __init__(self, allocator):
        self._allocator = allocator

    def allocator(self):
        return self._allocator


class _NativeAllocator:
    """PyTorch's own caching allocator, in this fake: it hands out nothing real."""

    def alloc(self, size, device, stream):
        return 0x1000

    def free(self, ptr, size, device, stream):
        pass


class _CustomAllocator:
    """What torch._C._cuda_customAllocator(alloc_fn, free_fn) makes."""

    def __init__(self, alloc_fn, free_fn):
        if not isinstance(alloc_fn, int) or not isinstance(free_fn, int):
            raise TypeError("_cuda_customAllocator takes two function addresses (int)")
        self.alloc_fn, self.free_fn = alloc_fn, free_fn
        self._alloc = ALLOC_T(alloc_fn)
        self._free = FREE_T(free_fn)

    def alloc(self, size, device, stream):
        return self._alloc(size, device, stream) or 0

    def free(self, ptr, size, device, stream):
        self._free(ptr, size, device, stream)


class CUDAPluggableAllocator(_CUDAAllocator):
    def __init__(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str):
        CALLS.append(("CUDAPluggableAllocator", path_to_so_file, alloc_fn_name, free_fn_name))
        for name, value in (("path_to_so_file", path_to_so_file), ("alloc_fn_name", alloc_fn_name),
                            ("free_fn_name", free_fn_name)):
            if not isinstance(value, str):
                raise TypeError("%s must be a str, not %r" % (name, type(value).__name__))
        if not os.path.isabs(path_to_so_file):
            raise AssertionError("the fake wants an absolute path, got %r" % path_to_so_file)
        allocator = ctypes.CDLL(path_to_so_file)
        alloc_fn = ctypes.cast(getattr(allocator, alloc_fn_name), ctypes.c_void_p).value
        free_fn = ctypes.cast(getattr(allocator, free_fn_name), ctypes.c_void_p).value
        assert alloc_fn is not None and free_fn is not None
        self._allocator = _CustomAllocator(alloc_fn, free_fn)


_current = _NativeAllocator()
_initialized = False


def change_current_allocator(allocator: _CUDAAllocator) -> None:
    CALLS.append(("change_current_allocator", allocator))
    global _current
    if not isinstance(allocator, _CUDAAllocator):
        raise TypeError("change_current_allocator takes a torch.cuda.memory._CUDAAllocator")
    if _initialized:
        raise RuntimeError("Can't swap an already initialized allocator")
    _current = allocator.allocator()


def _get_current_allocator():
    return _CUDAAllocator(_current)


def _reset():
    global _current, _initialized
    _current = _NativeAllocator()
    _initialized = False
    CALLS.clear()


SIGNATURES = {
    "CUDAPluggableAllocator": str(inspect.signature(CUDAPluggableAllocator.__init__)),
    "change_current_allocator": str(inspect.signature(change_current_allocator)),
}
