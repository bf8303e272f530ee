"""dao.torch against a fake torch.cuda.memory (ctest: python_torch).

Debian's python3-torch (CPU-only 1.13) has no pluggable allocators, so
tests/python/fake_torch stands in for PyTorch 2.x's torch.cuda.memory and
records every call. The entry points come from libdao, and
DAO_INTEROP_PLACE=sim makes them (and the statistics) serve SIM devices. Asserted:
- use() calls CUDAPluggableAllocator(<absolute path of the library>,
  "dao_pluggable_malloc", "dao_pluggable_free") and then
  change_current_allocator(that allocator), in that order, once; a second
  use() returns the same allocator and calls nothing; another config then
  raises InvalidStateError;
- allocations through PyTorch's path (the C function pointers PyTorch
  holds) land in libdao: memory_stats() counts them with torch's keys,
  snapshot() shows them, memory_summary() is a table, empty_cache() trims;
  a failed allocation returns NULL (PyTorch raises its OOM);
- use() after the first CUDA allocation raises InvalidStateError saying
  it came too late and what to do; the PyTorch error is its cause;
- use(config=...) in a fresh process sets DAO_ALLOC_CONF_<KIND> before
  libdao's first use, and too late when libdao already read it;
- a libdao without the entry points gives NotFoundError naming them and
  the library, before PyTorch is called;
- a PyTorch without CUDAPluggableAllocator gives UnsupportedError;
- the signatures of the fake are PyTorch's (so the test checks the names).
"""

import os
import sys
import types
import unittest

import daotest

sys.path.insert(0, os.path.join(daotest.HERE, "fake_torch"))

import torch  # noqa: E402: the fake
import dao  # noqa: E402
import dao.torch  # noqa: E402
from dao import _interop  # noqa: E402

MiB = 1 << 20


class TorchUse(unittest.TestCase):
    def setUp(self):
        os.environ["DAO_INTEROP_PLACE"] = "sim"
        self.path = daotest.use_entry_points_for_tests()
        torch.cuda._reset()
        dao.torch._state.update(allocator=None, config=None)

    def test_fake_has_pytorch_signatures(self):
        sig = torch.cuda.memory.SIGNATURES
        self.assertEqual(sig["CUDAPluggableAllocator"],
                         "(self, path_to_so_file: str, alloc_fn_name: str, free_fn_name: str)")
        self.assertEqual(sig["change_current_allocator"],
                         "(allocator: torch.cuda.memory._CUDAAllocator) -> None")

    def test_use_calls_pytorch_in_order(self):
        alloc = dao.torch.use()
        calls = torch.cuda.memory.CALLS
        self.assertEqual([c[0] for c in calls],
                         ["CUDAPluggableAllocator", "change_current_allocator"])
        self.assertEqual(calls[0][1:], (self.path, "dao_pluggable_malloc", "dao_pluggable_free"))
        self.assertTrue(os.path.isabs(calls[0][1]))
        self.assertIs(calls[1][1], alloc)
        self.assertTrue(dao.torch.in_use())
        self.assertIs(dao.torch.use(), alloc)
        self.assertEqual(len(calls), 2, "a second use() calls nothing")
        with self.assertRaises(dao.InvalidStateError):
            dao.torch.use(config="max_split_size=64MiB")

    def test_allocations_reach_libdao(self):
        dao.torch.use()
        device = 1
        before = dao.torch.memory_stats(device)
        p = torch.cuda._allocate(3 * MiB, device)
        q = torch.cuda._allocate(1000, device)
        self.assertTrue(p and q)
        s = dao.torch.memory_stats(device)
        self.assertEqual(s["allocation.all.current"], before["allocation.all.current"] + 2)
        self.assertEqual(s["requested_bytes.all.current"] - before["requested_bytes.all.current"],
                         3 * MiB + 1000)
        self.assertEqual(dao.torch.max_memory_allocated(device), s["allocated_bytes.all.peak"])
        self.assertGreaterEqual(dao.torch.max_memory_reserved("cuda:1"),
                                s["reserved_bytes.all.current"])
        live = [b["address"] for seg in dao.torch.snapshot(device)["segments"]
                for b in seg["blocks"] if b["state"] == "allocated"]
        self.assertIn(p, live)
        self.assertIn("sim:1", dao.torch.memory_summary(types.SimpleNamespace(index=1)))
        torch.cuda._free(p, 3 * MiB, device)
        torch.cuda._free(q, 1000, device)
        self.assertEqual(dao.torch.memory_stats(device)["allocation.all.current"],
                         before["allocation.all.current"])
        self.assertGreater(dao.torch.empty_cache(device), 0)
        dao.torch.reset_peak_memory_stats(device)
        failed = dao.torch.entry_point_stats()["failed_mallocs"]
        self.assertEqual(torch.cuda._allocate(1 << 40, device), 0, "OOM gives NULL")
        e = dao.torch.entry_point_stats()
        self.assertEqual(e["kind"], "sim")
        self.assertEqual(e["failed_mallocs"], failed + 1, "the entry points count the failure")

    def test_too_late(self):
        torch.cuda._allocate(1024)  # PyTorch's own allocator served a tensor
        with self.assertRaises(dao.InvalidStateError) as cm:
            dao.torch.use()
        e = cm.exception
        self.assertIn("too late", e.message)
        self.assertIn("right after `import torch`", e.message)
        self.assertIsInstance(e.__cause__, RuntimeError)
        self.assertFalse(dao.torch.in_use())

    def test_missing_entry_points(self):
        saved = _interop._entry_library
        _interop._entry_library = lambda: (dao.library().path, types.SimpleNamespace())
        try:
            with self.assertRaises(dao.NotFoundError) as cm:
                dao.torch.use()
        finally:
            _interop._entry_library = saved
        self.assertIn("dao_pluggable_malloc", cm.exception.message)
        self.assertIn(dao.library().path, cm.exception.message)
        self.assertEqual(torch.cuda.memory.CALLS, [], "PyTorch was not called")

    def test_old_pytorch(self):
        saved = torch.cuda.memory.CUDAPluggableAllocator
        del torch.cuda.memory.CUDAPluggableAllocator
        try:
            with self.assertRaises(dao.UnsupportedError) as cm:
                dao.torch.use()
            self.assertIn("PyTorch 2.0", cm.exception.message)
        finally:
            torch.cuda.memory.CUDAPluggableAllocator = saved

    def test_record_stream_hook(self):
        class Obj:
            got = None

            def set_record_stream_fn(self, addr):
                Obj.got = addr

        alloc = types.SimpleNamespace(allocator=lambda: Obj())
        with self.assertWarns(RuntimeWarning) if not _interop.optional_symbol(
                dao.torch.RECORD_STREAM_FN) else _nothing():
            registered = dao.torch._register_record_stream(alloc)
        self.assertEqual(registered, Obj.got is not None)
        plain = types.SimpleNamespace(allocator=lambda: object())
        self.assertFalse(dao.torch._register_record_stream(plain))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


SETUP = ("import daotest, dao, dao.torch, torch\n"
         "daotest.use_entry_points_for_tests()\n")


class TorchConfig(unittest.TestCase):
    def test_config_before_first_use(self):
        r = daotest.run_python(
            SETUP + "dao.torch.use(config='max_split_size=64MiB,garbage_collection_threshold=0.8')\n"
            "print(dao.default_config('sim'))\n"
            "print(dao.torch.snapshot(0)['config'])\n",
            env={"DAO_INTEROP_PLACE": "sim", "DAO_ALLOC_CONF_SIM": None}, fakes=["fake_torch"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("('caching', 'max_split_size=64MiB,garbage_collection_threshold=0.8')",
                      r.stdout)
        self.assertIn("garbage_collection_threshold=0.8", r.stdout)

    def test_config_too_late(self):
        r = daotest.run_python(
            SETUP + "dao.Place.sim(0).used()\n"
            "try:\n    dao.torch.use(config='max_split_size=64MiB')\n"
            "except dao.InvalidStateError as e:\n    print(e.message)\n"
            "import os; assert 'DAO_ALLOC_CONF_SIM' not in os.environ\n"
            "assert torch.cuda.memory.CALLS == []\n",
            env={"DAO_INTEROP_PLACE": "sim", "DAO_ALLOC_CONF_SIM": None}, fakes=["fake_torch"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("came too late", r.stdout)
        self.assertIn("DAO_ALLOC_CONF_SIM=max_split_size=64MiB", r.stdout)


if __name__ == "__main__":
    unittest.main()
