"""A fake `cupy` for the tests of dao.cupy (tests/python/test_cupy.py): the
part of CuPy that dao.cupy touches, recording calls in cupy.cuda.CALLS."""

__version__ = "13.0.0+fake"

from . import cuda  # noqa: E402,F401
