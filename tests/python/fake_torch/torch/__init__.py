"""A fake `torch` for the tests of dao.torch (tests/python/test_torch.py).

Debian's python3-torch is CPU-only 1.13, without CUDAPluggableAllocator, so
dao.torch.use() is tested against this stand-in of the part of PyTorch 2.x
it touches: torch.cuda.memory.CUDAPluggableAllocator(path, alloc_fn_name,
free_fn_name) and change_current_allocator(allocator), with their checks.
Every call is recorded in torch.cuda.memory.CALLS.
"""

__version__ = "2.11.0+fake"

from . import cuda  # noqa: E402,F401
