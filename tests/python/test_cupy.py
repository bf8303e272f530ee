"""dao.cupy against a fake cupy (ctest: python_cupy).

Asserted: use() builds cupy.cuda.memory.CFunctionAllocator(0, address of
dao_cupy_malloc, address of dao_cupy_free, owner) and hands its malloc to
cupy.cuda.set_allocator, in that order, once; allocations through the C
function pointers land in libdao's statistics and free again; an
out-of-memory request makes CuPy raise; pinned_use() installs a Python
allocator whose pointers are libdao memory (counted by dao.used on the
pinned place) and freed when collected; a libdao without the entry points
gives NotFoundError before CuPy is called.
"""

import gc
import os
import sys
import types
import unittest

import daotest

sys.path.insert(0, os.path.join(daotest.HERE, "fake_cupy"))

import cupy  # noqa: E402: the fake
import dao  # noqa: E402
import dao.cupy  # noqa: E402
from dao import _interop  # noqa: E402

MiB = 1 << 20


class CupyUse(unittest.TestCase):
    def setUp(self):
        os.environ["DAO_INTEROP_PLACE"] = "sim"
        daotest.use_entry_points_for_tests()
        cupy.cuda._reset()
        dao.cupy._state.update(allocator=None, config=None, pinned=None)

    def test_use(self):
        alloc = dao.cupy.use()
        calls = cupy.cuda.CALLS
        self.assertEqual([c[0] for c in calls], ["CFunctionAllocator", "set_allocator"])
        _, param, malloc_fn, free_fn, owner = calls[0]
        _, cdll = _interop._entry_library()
        self.assertEqual(param, 0)
        self.assertEqual(malloc_fn, _interop._address(cdll.dao_cupy_malloc))
        self.assertEqual(free_fn, _interop._address(cdll.dao_cupy_free))
        self.assertIsNotNone(owner)
        self.assertEqual(calls[1][1], alloc.malloc)
        self.assertIs(dao.cupy.use(), alloc)
        self.assertEqual(len(calls), 2)

        before = dao.cupy.memory_stats(0)["allocation.all.current"]
        mem = cupy.cuda.alloc(2 * MiB)
        self.assertTrue(mem.ptr)
        s = dao.cupy.memory_stats(0)
        self.assertEqual(s["allocation.all.current"], before + 1)
        self.assertIn("sim:0", dao.cupy.memory_summary())
        self.assertTrue(dao.cupy.snapshot()["segments"])
        mem.free()
        self.assertEqual(dao.cupy.memory_stats()["allocation.all.current"], before)
        self.assertGreaterEqual(dao.cupy.empty_cache(), 0)
        with self.assertRaises(MemoryError):
            cupy.cuda.alloc(1 << 40)

    def test_pinned(self):
        malloc = dao.cupy.pinned_use()
        self.assertEqual(cupy.cuda.CALLS, [("set_pinned_memory_allocator", malloc)])
        place = dao.cupy.pinned_place()
        before = place.used()
        p = cupy.cuda.alloc_pinned_memory(10000)
        self.assertIsInstance(p, cupy.cuda.PinnedMemoryPointer)
        self.assertTrue(p.ptr)
        self.assertEqual(p.size(), 10000)
        self.assertGreaterEqual(place.used(), before + 10000)
        del p
        gc.collect()
        self.assertEqual(place.used(), before)

    def test_missing_entry_points(self):
        saved = _interop._entry_library
        _interop._entry_library = lambda: (dao.library().path, types.SimpleNamespace())
        try:
            with self.assertRaises(dao.NotFoundError) as cm:
                dao.cupy.use()
        finally:
            _interop._entry_library = saved
        self.assertIn("dao_cupy_malloc", cm.exception.message)
        self.assertEqual(cupy.cuda.CALLS, [])


if __name__ == "__main__":
    unittest.main()
