"""Fake cupy.cuda.memory.CFunctionAllocator(param, malloc_func, free_func,
owner), with CuPy's C signatures:
    intptr_t malloc(intptr_t param, size_t size, int device_id)
    void free(intptr_t param, intptr_t ptr, int device_id)
"""

import ctypes

MALLOC_T = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
FREE_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)


class OutOfMemoryError(MemoryError):
    pass


class MemoryPointer:
    def __init__(self, allocator, ptr, size, device):
        self.allocator, self.ptr, self.size, self.device = allocator, ptr, size, device

    def free(self):
        if self.ptr:
            self.allocator._free(self.allocator.param, self.ptr, self.device)
            self.ptr = 0


class CFunctionAllocator:
    def __init__(self, param, malloc_func, free_func, owner):
        from . import CALLS
        CALLS.append(("CFunctionAllocator", param, malloc_func, free_func, owner))
        for name, v in (("param", param), ("malloc_func", malloc_func), ("free_func", free_func)):
            if not isinstance(v, int):
                raise TypeError("%s must be an int (intptr_t), not %r" % (name, type(v).__name__))
        self.param, self.owner = param, owner
        self._malloc = MALLOC_T(malloc_func)
        self._free = FREE_T(free_func)

    def malloc(self, size):
        ptr = self._malloc(self.param, size, 0)
        if not ptr and size:
            raise OutOfMemoryError(size)
        return MemoryPointer(self, ptr or 0, size, 0)
