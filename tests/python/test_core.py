"""unittest suite of package dao's core on SIM devices (ctest: python_core).

What it asserts, class by class:
- RawLayer: every function the library exports is in _capi.FUNCTIONS and
  bound (none missing); every struct has the C size and field offsets (a C
  program compiled here prints them); status numbers and names match the
  library's dao_status_string.
- Loading: DAO_LIBRARY pointing nowhere gives LibraryNotFoundError whose
  message names what was tried and how to fix it; `import dao` itself
  never needs the library.
- Errors: each status maps to its class (and built-in base), with .status,
  .status_name and .message from dao_last_error().
- Places: constructors, parsing, str/repr/eq/hash, device counts, memory
  info, place-level alloc/free/used, errors for a missing device.
- Allocators: alloc/free/block/usable_size/trim/record_stream, context
  manager and busy destroy, info, stats keys shaped like
  torch.cuda.memory_stats and consistent with raw stats, peaks and resets,
  buddy's subset, snapshot JSON equal to the C document and consistent with
  the structured snapshot, memory_summary, bad input.
- Streams and events, copies and host functions in stream order.
- Recycle pools and collections: acquire/submit/take/release/retain,
  timeouts, close, stats, busy destroy, names.
- Tiered pools: kernels with Python functions, eviction under a budget,
  read back, kernel exceptions, score callbacks, stats.
- SIM: configure and profile (fresh processes), costs, op names.
"""

import ctypes
import gc
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import daotest
import dao
from dao import _capi

SIM0 = dao.Place.sim(0)
MiB = 1 << 20


class RawLayer(unittest.TestCase):
    def test_every_exported_function_is_bound(self):
        api = dao.library()
        self.assertEqual(api.missing, [], "functions of the headers the library lacks")
        nm = shutil.which("nm")
        if nm is None:
            self.skipTest("no nm")
        out = subprocess.run([nm, "-D", "--defined-only", api.path], capture_output=True,
                             text=True, check=True).stdout
        exported = {line.split()[-1] for line in out.splitlines()
                    if line.split() and line.split()[-1].startswith("dao_")
                    and " T " in line}
        interop = set(daotest.ENTRY_POINTS) | {"dao_pluggable_record_stream"}
        lacking = sorted(exported - set(_capi.FUNCTIONS) - interop)
        self.assertEqual(lacking, [], "exported by libdao but not in dao._capi")
        for name in _capi.FUNCTIONS:
            fn = getattr(api, name)
            self.assertEqual(tuple(fn.argtypes), tuple(_capi.FUNCTIONS[name][1]), name)
            self.assertIs(fn.restype, _capi.FUNCTIONS[name][0], name)

    def test_struct_layouts_match_c(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            self.skipTest("no C compiler")
        src = ["#define DAO_EXPERIMENTAL", "#include <dao.h>", "#include <stdio.h>",
               "#include <stddef.h>", "int main(void) {"]
        for s in _capi.STRUCTS:
            n = s.__name__
            src.append('printf("%s %%zu\\n", sizeof(%s));' % (n, n))
            for f, _ in s._fields_:
                src.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (n, f, n, f))
        src += ["return 0;", "}"]
        with tempfile.TemporaryDirectory() as tmp:
            c = os.path.join(tmp, "layout.c")
            exe = os.path.join(tmp, "layout")
            with open(c, "w") as fh:
                fh.write("\n".join(src))
            subprocess.run([cc, "-I", os.path.join(daotest.ROOT, "include"), c, "-o", exe],
                           check=True)
            lines = subprocess.run([exe], capture_output=True, text=True,
                                   check=True).stdout.split("\n")
        got = dict(line.split() for line in lines if line)
        for s in _capi.STRUCTS:
            n = s.__name__
            self.assertEqual(int(got[n]), ctypes.sizeof(s), "sizeof " + n)
            for f, _ in s._fields_:
                self.assertEqual(int(got[n + "." + f]), getattr(s, f).offset, n + "." + f)

    def test_status_names(self):
        api = dao.library()
        for value, name in _capi.STATUS_NAMES.items():
            self.assertEqual(getattr(_capi, name), value)
            self.assertNotEqual(api.dao_status_string(value), b"unknown status", name)
        self.assertEqual(api.dao_version_number(), _capi.DAO_VERSION_NUMBER)


class Loading(unittest.TestCase):
    def test_missing_library_message(self):
        r = daotest.run_python(
            "import dao\n"
            "try:\n    dao.Allocator('cpu')\n"
            "except dao.LibraryNotFoundError as e:\n"
            "    assert e.status == dao._capi.DAO_ERR_NOT_FOUND\n"
            "    assert isinstance(e, dao.Error) and isinstance(e, OSError)\n"
            "    print(e.message)\n",
            env={"DAO_LIBRARY": "/nonexistent/libdao.so.0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("DAO_LIBRARY=/nonexistent/libdao.so.0: no such file", r.stdout)
        self.assertIn("apt install libdao0", r.stdout)

    def test_library_from_env(self):
        self.assertEqual(os.path.realpath(dao.library().path),
                         os.path.realpath(os.environ["DAO_LIBRARY"]))
        self.assertEqual(dao.library_version(), _capi.DAO_VERSION_STRING)
        self.assertEqual(dao.version(), dao.__version__)


class Errors(unittest.TestCase):
    def test_status_classes(self):
        cases = [
            (lambda: dao.Allocator(SIM0, "no-such-strategy"), dao.InvalidArgumentError,
             ValueError, "no-such-strategy"),
            (lambda: dao.Allocator(SIM0, "caching", "bogus_key=1"), dao.InvalidArgumentError,
             ValueError, "bogus_key"),
            (lambda: dao.Allocator("sim:9"), dao.NoDeviceError, dao.Error, "sim device 9"),
            (lambda: SIM0.alloc(1 << 40), dao.OutOfMemoryError, MemoryError, ""),
            (lambda: SIM0.free(0x12345600), dao.InvalidPointerError, ValueError, ""),
        ]
        for fn, cls, base, text in cases:
            with self.assertRaises(cls) as cm:
                fn()
            e = cm.exception
            self.assertIsInstance(e, base)
            self.assertIsInstance(e, dao.Error)
            self.assertEqual(e.status, getattr(_capi, e.status_name))
            self.assertIn(text, e.message)
            self.assertIn(e.message, str(e))

    def test_every_status_has_a_class(self):
        for value, name in _capi.STATUS_NAMES.items():
            if value == _capi.DAO_OK:
                continue
            cls = dao.errors.error_class(value)
            self.assertIsNot(cls, dao.Error, name)
            e = dao.errors.make_error(value, "m")
            self.assertEqual((e.status, e.status_name, e.message), (value, name, "m"))
        self.assertIs(dao.errors.error_class(999), dao.Error)
        self.assertEqual(dao.errors.make_error(999, "x").status_name, "status 999")
        self.assertTrue(issubclass(dao.TimeoutError, TimeoutError))


class Places(unittest.TestCase):
    def test_constructors_and_strings(self):
        self.assertEqual(str(dao.Place.cpu()), "cpu")
        self.assertEqual(str(dao.Place.sim(1)), "sim:1")
        self.assertEqual(str(dao.Place.cuda(2)), "cuda:2")
        self.assertEqual(str(dao.Place.cuda_pinned()), "cuda_pinned")
        self.assertEqual(str(dao.Place.cuda_managed(0)), "cuda_managed:0")
        self.assertEqual(dao.Place.parse("sim:1"), dao.Place.sim(1))
        self.assertEqual(dao.Place("cuda:3"), dao.Place.cuda(3))
        self.assertEqual(dao.Place("sim", 1), dao.Place.sim(1))
        self.assertEqual(dao.Place.parse("pinned"), dao.Place.cuda_pinned())
        self.assertEqual(dao.Place.sim(0), "sim:0")
        self.assertEqual(repr(dao.Place.sim(0)), "Place('sim:0')")
        self.assertEqual(len({dao.Place.sim(0), dao.Place("sim:0"), dao.Place.cpu()}), 2)
        self.assertEqual(dao.Place.coerce(("sim", 1)), dao.Place.sim(1))
        for bad in ("gpu:0", "sim:x", ""):
            with self.assertRaises(ValueError):
                dao.Place.parse(bad)
        with self.assertRaises(TypeError):
            dao.Place.coerce(3.5)
        with self.assertRaises(AttributeError):
            dao.Place.cpu().device = 1

    def test_machine(self):
        self.assertEqual(dao.device_count("cpu"), 1)
        self.assertEqual(dao.device_count("sim"), 2)
        self.assertEqual(dao.sim.device_count(), 2)
        self.assertEqual(dao.device_count("cuda"), 0)
        self.assertTrue(dao.backend_description("cuda"))
        self.assertEqual(dao.place.kind_name("sim"), "sim")
        free, total = SIM0.memory_info()
        self.assertEqual(total, 256 * MiB)
        self.assertLessEqual(free, total)
        self.assertTrue(SIM0.exists())
        self.assertFalse(dao.Place.sim(2).exists())
        with self.assertRaises(dao.NoDeviceError):
            dao.Place.sim(5).memory_info()
        with self.assertRaises(ValueError):
            dao.device_count("gpu")

    def test_place_level_memory(self):
        place = dao.Place.sim(1)
        before = place.used()
        p = dao.alloc(place, 4096)
        self.assertEqual(p % 256, 0)
        self.assertEqual(dao.used(place), before + 4096)
        dao.free(place, p)
        self.assertEqual(place.used(), before)
        self.assertEqual(place.alloc(0), 0)
        place.free(0)
        self.assertGreaterEqual(place.used_internal(), 0)
        self.assertEqual(dao.default_config("sim")[0], "caching")


class Allocators(unittest.TestCase):
    def test_alloc_free_block(self):
        with dao.Allocator(SIM0, "caching") as a:
            p = a.alloc(1000)
            self.assertIsInstance(p, int)
            self.assertEqual(p % 256, 0)
            self.assertGreaterEqual(a.usable_size(p), 1000)
            a.free(p)
            self.assertEqual(a.alloc(0), 0)
            a.free(0)
            with a.block(3 * MiB) as b:
                self.assertEqual(b.size, 3 * MiB)
                self.assertEqual(int(b), b.address)
                self.assertGreaterEqual(b.usable_size(), b.size)
                v = b.view()
                v[0], v[-1] = 7, 9
                self.assertEqual((v[0], v[-1]), (7, 9))
                v.release()
            b.free()  # twice: nothing
            blk = a.block(512)
            a.free(blk)
            self.assertEqual(blk.address, 0)
            with self.assertRaises(dao.InvalidPointerError):
                a.free(0x5000)
            with self.assertRaises(dao.InvalidPointerError):
                a.usable_size(0x5000)
            self.assertGreater(a.trim(), 0)
            self.assertEqual(a.empty_cache(), 0)
        self.assertIsNone(a.handle)
        a.close()
        with self.assertRaises(ValueError):
            a.usable_size(1)

    def test_busy_destroy_and_info(self):
        a = dao.Allocator("sim:0", "buddy", "chunk_size=1MiB")
        p = a.alloc(100)
        with self.assertRaises(dao.BusyError) as cm:
            a.close()
        self.assertIn("live", cm.exception.message)
        self.assertEqual(a.strategy, "buddy")
        self.assertIn("chunk_size=1MiB", a.config)
        self.assertEqual(a.place, SIM0)
        a.free(p)
        a.close()
        self.assertIn("closed", repr(a))

    def test_stats_shaped_like_torch(self):
        with dao.Allocator(SIM0, "caching") as a:
            small, large = a.alloc(1000), a.alloc(3 * MiB)
            s = a.stats()
            self.assertEqual(list(s), sorted(s))
            for metric in ("allocation", "allocated_bytes", "segment", "reserved_bytes", "active",
                           "active_bytes", "inactive_split", "inactive_split_bytes",
                           "requested_bytes"):
                for pool in ("all", "large_pool", "small_pool"):
                    for f in ("current", "peak", "allocated", "freed"):
                        self.assertIn("%s.%s.%s" % (metric, pool, f), s)
            for k in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"):
                self.assertIn(k, s)
            self.assertEqual(len(s), 9 * 3 * 4 + 4)
            raw = a.raw_stats()
            self.assertEqual(s["allocated_bytes.all.current"], raw["allocated_bytes"])
            self.assertEqual(s["reserved_bytes.all.current"], raw["reserved_bytes"])
            self.assertEqual(s["allocation.all.current"], 2)
            self.assertEqual(s["allocation.small_pool.current"], 1)
            self.assertEqual(s["allocation.large_pool.current"], 1)
            self.assertEqual(s["requested_bytes.all.current"], 1000 + 3 * MiB)
            self.assertEqual(s["num_device_alloc"], raw["system_alloc_count"])
            a.free(large)
            s2 = a.memory_stats()
            self.assertEqual(s2["allocated_bytes.all.peak"], s["allocated_bytes.all.current"])
            self.assertEqual(s2["allocation.all.freed"], 1)
            a.reset_peak_stats()
            self.assertEqual(a.stats()["allocated_bytes.all.peak"],
                             a.stats()["allocated_bytes.all.current"])
            a.reset_accumulated_stats()
            self.assertEqual(a.stats()["allocation.all.freed"], 0)
            with self.assertRaises(dao.InvalidArgumentError):
                a.stat(99)
            a.free(small)
            with self.assertRaises(dao.OutOfMemoryError):
                a.alloc(1 << 40)
            self.assertEqual(a.stats()["num_ooms"], 1)

    def test_buddy_keeps_the_all_pool(self):
        with dao.Allocator(SIM0, "buddy") as a:
            p = a.alloc(4096)
            s = a.stats()
            self.assertIn("allocated_bytes.all.current", s)
            self.assertNotIn("allocated_bytes.small_pool.current", s)
            self.assertNotIn("inactive_split_bytes.all.current", s)
            self.assertIsNone(a.stat(_capi.DAO_STAT_INACTIVE_SPLIT_BYTES))
            self.assertIn("Allocated memory", a.memory_summary())
            with self.assertRaises(dao.UnsupportedError):
                a.snapshot_json()
            a.free(p)

    def test_snapshot_json_and_segments(self):
        with dao.Allocator(SIM0, "caching", "expandable_segments=false") as a:
            p, q = a.alloc(1000), a.alloc(5 * MiB)
            text = a.snapshot_json()
            doc = json.loads(text)
            self.assertEqual(a.snapshot(), doc)
            self.assertEqual(doc["strategy"], "caching")
            self.assertEqual(doc["place"], "sim:0")
            self.assertEqual(doc["config"], a.config)
            self.assertEqual(doc["stats"]["allocated_bytes.all"]["current"],
                             a.stats()["allocated_bytes.all.current"])
            # the same document the C library writes, byte for byte
            api = dao.library()
            n = ctypes.c_size_t()
            buf = ctypes.create_string_buffer(len(text) + 1)
            api.dao_allocator_snapshot_json(a.handle, buf, len(buf), ctypes.byref(n))
            self.assertEqual(buf.value.decode(), text)
            segs = a.segments()
            self.assertEqual(len(segs), len(doc["segments"]))
            for mine, theirs in zip(segs, doc["segments"]):
                for k in ("address", "size", "mapped_bytes", "pool", "expandable"):
                    self.assertEqual(mine[k], theirs[k], k)
                self.assertEqual([b["address"] for b in mine["blocks"]],
                                 [b["address"] for b in theirs["blocks"]])
                self.assertEqual([b["state"] for b in mine["blocks"]],
                                 [b["state"] for b in theirs["blocks"]])
            live = [b for s in segs for b in s["blocks"] if b["state"] == "allocated"]
            self.assertEqual(sorted(b["address"] for b in live), sorted([p, q]))
            self.assertEqual(sorted(b["requested_size"] for b in live), [1000, 5 * MiB])
            a.free(p)
            a.free(q)

    def test_memory_summary(self):
        with dao.Allocator(SIM0, "caching") as a:
            p = a.alloc(2 * MiB)
            text = a.memory_summary()
            lines = text.splitlines()
            self.assertEqual(len({len(line) for line in lines}), 1, "a table of one width")
            self.assertIn("sim:0 (caching)", text)
            self.assertIn("Allocated memory", text)
            self.assertIn("2048 KiB", text)
            self.assertIn("num_alloc_retries: 0", text)
            a.free(p)

    def test_default_allocator_is_borrowed(self):
        d = SIM0.allocator()
        self.assertEqual(d.strategy, "caching")
        p = d.alloc(256)
        d.free(p)
        d.close()  # does not destroy the place default
        self.assertEqual(dao.Allocator.default(SIM0).handle, SIM0.allocator().handle)

    def test_record_stream(self):
        with dao.Allocator(SIM0, "caching") as a, dao.Stream(SIM0) as s:
            p = a.alloc(4096)
            a.record_stream(p, s)
            a.free(p)
            s.synchronize()
        with dao.Allocator(SIM0, "buddy") as b, dao.Stream(SIM0) as s:
            p = b.alloc(4096)
            with self.assertRaises(dao.UnsupportedError):
                b.record_stream(p, s)
            b.free(p)

    def test_collected_with_live_blocks_warns(self):
        a = dao.Allocator(SIM0, "system")
        a.alloc(256)
        with self.assertWarns(ResourceWarning):
            del a
            gc.collect()


class Streams(unittest.TestCase):
    def test_copy_and_host_functions_in_order(self):
        order = []
        with dao.Stream("sim:0") as s, dao.Allocator(SIM0, "caching") as a:
            self.assertEqual(s.place, SIM0)
            self.assertEqual(s.native, 0)
            dev = a.block(4096)
            src = bytearray(b"x" * 4096)
            back = bytearray(4096)
            s.launch_host_func(lambda: order.append(1))
            dao.memcpy_async(dev, src, 4096, s)
            s.memcpy(back, dev, 4096)
            s.launch_host_func(lambda: order.append(2))
            ev = s.record_event()
            ev.synchronize()
            self.assertTrue(ev.query())
            s.synchronize()
            self.assertTrue(s.query())
            self.assertEqual(bytes(back), bytes(src))
            self.assertEqual(order, [1, 2])
            ev.close()
            dev.free()

    def test_events_and_waits(self):
        s1, s2 = dao.Stream(SIM0), dao.Stream(dao.Place.sim(1))
        gate = threading.Event()
        seen = []
        s1.launch_host_func(lambda: gate.wait(10))
        e = dao.Event(SIM0)
        e.record(s1)
        self.assertFalse(e.query())
        s2.wait_event(e)
        s2.launch_host_func(lambda: seen.append("after"))
        gate.set()
        s2.synchronize()
        self.assertEqual(seen, ["after"])
        e.record()  # None: completes at once
        self.assertTrue(e.query())
        e.close()
        e.close()
        s1.close()
        s2.close()
        with self.assertRaises(ValueError):
            s1.synchronize()

    def test_default_stream_and_errors(self):
        ran = []
        dao.launch_host_func(None, lambda: ran.append(1))
        self.assertEqual(ran, [1])
        dst = bytearray(3)
        dao.memcpy_async(dst, b"abc", 3)
        self.assertEqual(bytes(dst), b"abc")
        with self.assertRaises(TypeError):
            dao.memcpy_async(b"abc", bytearray(3), 3)
        with self.assertRaises(dao.UnsupportedError):
            dao.Stream.wrap(SIM0, 0x1234)
        with self.assertRaises(dao.NoDeviceError):
            dao.Stream("sim:7")


class Trace(unittest.TestCase):
    def test_record_and_oom_callback(self):
        import json
        import os
        import tempfile
        path = os.path.join(tempfile.mkdtemp(), "history.dao")
        a = dao.Allocator(SIM0, "caching")
        seen = []

        def on_oom(size):
            seen.append(size)
            with self.assertRaises(dao.InvalidStateError):
                a.alloc(256)  # the same allocator, inside its callback

        dao.trace.set_oom_callback(a, on_oom)
        dao.trace.start(path, "flush_ms=10")
        self.assertTrue(dao.trace.stats()["active"])
        b = a.alloc(4096)
        dao.trace.mark("python")
        with self.assertRaises(dao.OutOfMemoryError):
            a.alloc(1 << 40)
        self.assertEqual(seen, [1 << 40])
        a.free(b)
        dao.trace.stop()
        dao.trace.set_oom_callback(a, None)
        lines = list(dao.trace.read(path))
        self.assertEqual(lines[0]["format"], "dao-trace")
        self.assertEqual(lines[0]["encoding"], "binary")
        kinds = [line.get("k") for line in lines[1:]]
        for k in ("allocator", "alloc", "free", "mark", "oom", "end"):
            self.assertIn(k, kinds)
        alloc = next(line for line in lines if line.get("k") == "alloc")
        free = next(line for line in lines if line.get("k") == "free")
        self.assertEqual(alloc["ptr"], free["ptr"])
        self.assertEqual(alloc["req"], 4096)
        self.assertGreaterEqual(alloc["size"], 4096)
        with self.assertRaises(dao.InvalidStateError):
            dao.trace.stop()

        # The text encoding: the same records, one JSON object a line.
        text = os.path.join(os.path.dirname(path), "history.jsonl")
        dao.trace.start(text, "format=jsonl")
        a.free(a.alloc(512))
        dao.trace.stop()
        with open(text) as f:
            lines = [json.loads(line) for line in f]
        self.assertNotIn("encoding", lines[0])
        self.assertEqual([line["k"] for line in lines[1:]],
                         [line.get("k") for line in dao.trace.read(text)][1:])
        self.assertIn("alloc", [line.get("k") for line in lines])
        with self.assertRaises(dao.InvalidArgumentError):
            dao.trace.start(text, "format=xml")

        # read() on bad files: a foreign file and a foreign frame raise, a
        # frame cut short (a killed recorder) ends the records quietly.
        bad = os.path.join(os.path.dirname(path), "bad.dao")
        with open(bad, "w") as f:
            f.write('{"format":"something-else"}\n')
        with self.assertRaises(ValueError):
            list(dao.trace.read(bad))
        with open(path, "rb") as f:
            data = f.read()
        first_frame = data.index(b"\n") + 1
        with open(bad, "wb") as f:
            f.write(data[:first_frame] + b"X\0\0\0" + data[first_frame + 4:])
        with self.assertRaises(ValueError):
            list(dao.trace.read(bad))
        with open(bad, "wb") as f:
            f.write(data[:-5])
        cut = list(dao.trace.read(bad))
        self.assertGreater(len(cut), 1)
        self.assertLess(len(cut), len(list(dao.trace.read(path))))


class Recycle(unittest.TestCase):
    def test_pipeline(self):
        with dao.RecyclePool(SIM0, 4, (2, 8), max_buffers=2, preallocate=1,
                             config="name=frames") as pool:
            b = pool.acquire()
            self.assertEqual(b.shape, (2, 8))
            self.assertEqual(b.element_size, 4)
            self.assertEqual(b.nbytes, 64)
            self.assertEqual(b.place, SIM0)
            b.view()[:5] = b"hello"
            pool.submit(b)
            self.assertIsNone(b.handle)
            with self.assertRaises(ValueError):
                b.address
            got = pool.take(timeout=1)
            self.assertEqual(bytes(got.view()[:5]), b"hello")
            self.assertEqual(got.sequence, 0)
            extra = got.retain()
            got.release()
            got.release()
            extra.release()
            s = pool.stats()
            self.assertEqual((s["submitted"], s["taken"], s["held"]), (1, 1, 0))
            with self.assertRaises(dao.TimeoutError):
                pool.take(timeout=0)
            held = [pool.acquire(0), pool.acquire(0)]
            with self.assertRaises(dao.TimeoutError):
                pool.acquire(timeout=0.01)
            with self.assertRaises(dao.BusyError):
                pool.destroy()
            for h in held:
                h.release()
            pool.close()
            with self.assertRaises(dao.ClosedError):
                pool.acquire()
        self.assertIsNone(pool.handle)

    def test_threads(self):
        n = 50
        with dao.RecyclePool("cpu", 8, (1,), max_buffers=3) as pool:
            def produce():
                for i in range(n):
                    b = pool.acquire()
                    b.view()[:8] = i.to_bytes(8, "little")
                    pool.submit(b)
            t = threading.Thread(target=produce)
            t.start()
            got = []
            for _ in range(n):
                with pool.take(timeout=10) as b:
                    got.append(int.from_bytes(bytes(b.view()[:8]), "little"))
            t.join()
            self.assertEqual(got, list(range(n)))

    def test_collection(self):
        with dao.Collection() as c:
            p = c.add("frames", SIM0, 1, (16,), 2)
            self.assertEqual(c["frames"].handle, p.handle)
            with self.assertRaises(dao.NotFoundError) as cm:
                c.find("nothing")
            self.assertIn("frames", cm.exception.message)
            with self.assertRaises(dao.InvalidArgumentError):
                c.add("frames", SIM0, 1, (16,), 2)
            b = p.acquire()
            with self.assertRaises(dao.BusyError):
                c.destroy()
            b.release()
        with self.assertRaises(dao.InvalidArgumentError):
            dao.RecyclePool(SIM0, 0, (1,), 1)


class Tiered(unittest.TestCase):
    def test_kernels_and_eviction(self):
        n = 1 * MiB
        with dao.TieredPool(SIM0, "cpu", 2 * n, "policy=belady") as pool:
            ts = [pool.tensor(n) for _ in range(4)]
            for i, t in enumerate(ts):
                t.write(bytes([i]) * n)
            seen = []

            def add_one(inputs, outputs, stream):
                src = (ctypes.c_char * n).from_address(inputs[0])
                dst = (ctypes.c_char * n).from_address(outputs[0])
                seen.append((inputs[0] != 0, stream))
                ctypes.memmove(dst, bytes(b + 1 for b in src.raw[:1]) * n, n)

            for i in range(3):
                pool.submit(add_one, [ts[i]], [ts[i + 1]])
            pool.synchronize()
            self.assertEqual(len(seen), 3)
            self.assertTrue(all(ok for ok, _ in seen))
            self.assertEqual(ts[3].read()[:4], bytes([3]) * 4)
            out = bytearray(n)
            self.assertIs(ts[1].read(out), out)
            self.assertIn(ts[0].state, ("device", "host"))
            st = pool.stats()
            self.assertEqual(st["kernels_run"], 3)
            self.assertLessEqual(st["peak_device_bytes"], 2 * n)
            self.assertGreater(st["evictions"] + st["bytes_evicted"], 0)
            link = pool.link_stats()
            # To the device: the fetches, and the writes that went straight
            # there (at most one per tensor, of n bytes each; how many
            # depends on how far the submits had got when each write ran).
            writes = link["copies_to_device"] - st["fetches"]
            self.assertIn(writes, range(5))
            self.assertEqual(link["bytes_to_device"] - st["bytes_fetched"], writes * n)
            self.assertEqual(link["bytes_to_host"], st["bytes_evicted"])
            self.assertEqual((link["host_pageable"], link["staged"]), (1, 1))
            self.assertGreater(link["staging_bytes"], 0)
            pool.trim()
            self.assertEqual(pool.stats()["device_bytes"], 0)
            self.assertEqual(pool.stats()["device_range_bytes"], 0)
            self.assertEqual((pool.stats()["trims"], pool.stats()["idle_trims"]), (1, 0))
            self.assertEqual(ts[3].read()[:4], bytes([3]) * 4)
            # Retired: no data until written again (dao_tensor_retire).
            ts[3].retire()
            with self.assertRaises(dao.InvalidStateError):
                ts[3].read()
            ts[3].write(bytes([9]) * n)
            self.assertEqual(ts[3].read()[:4], bytes([9]) * 4)
            for t in ts:
                t.release()
            with self.assertRaises(ValueError):
                ts[0].state
            with self.assertRaises(dao.OutOfMemoryError):
                pool.tensor(3 * n)

    def test_kernel_exception_fails_the_pool(self):
        pool = dao.TieredPool(SIM0, "cpu", MiB)
        t = pool.tensor(1024)

        def broken(inputs, outputs, stream):
            raise RuntimeError("kernel broke")

        pool.submit(broken, [], [t])
        with self.assertRaises(dao.InvalidStateError) as cm:
            pool.synchronize()
        self.assertIsInstance(cm.exception.__cause__, RuntimeError)
        pool.destroy()
        pool.destroy()

    def test_score_callback(self):
        calls = []
        with dao.TieredPool(SIM0, "cpu", 2 * MiB, "policy=callback,prefetch=0") as pool:
            pool.set_score(lambda info: calls.append(info) or float(info["bytes"]))
            ts = [pool.tensor(MiB) for _ in range(3)]
            for t in ts:
                pool.submit(lambda i, o, s: None, [], [t])
            pool.synchronize()
            self.assertTrue(calls)
            self.assertEqual(set(calls[0]), {"bytes", "now", "last_use", "next_use",
                                             "queued_uses", "dirty"})
        with dao.TieredPool(SIM0, "cpu", MiB) as pool:
            with self.assertRaises(dao.InvalidStateError):
                pool.set_score(lambda info: 0.0)
        with self.assertRaises(dao.InvalidArgumentError):
            dao.TieredPool("cpu", "cpu", MiB)


class Sim(unittest.TestCase):
    def test_configure_and_profile_in_a_fresh_process(self):
        r = daotest.run_python(
            "import dao\n"
            "dao.sim.configure(['64MiB', 32 << 20])\n"
            "dao.sim.set_profile('h200')\n"
            "assert dao.sim.profile() == 'h200'\n"
            "assert dao.device_count('sim') == 2\n"
            "assert dao.Place.sim(1).memory_info()[1] == 32 << 20\n"
            "a = dao.Allocator('sim:0'); p = a.alloc(1 << 20); a.free(p); a.trim()\n"
            "c = dao.sim.costs(0)\n"
            "assert c['map']['count'] > 0 and c['map']['ns'] > 0, c\n"
            "dao.sim.reset_costs(0)\n"
            "assert dao.sim.cost(0, dao._capi.DAO_SIM_OP_MAP)['count'] == 0\n"
            "try:\n    dao.sim.configure(3)\nexcept dao.InvalidStateError as e:\n"
            "    print('late:', e.message)\n"
            "dao.sim.configure(['64MiB', '32MiB'])\n",
            env={"DAO_SIM_DEVICES": None, "DAO_SIM_COSTS": None})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("late:", r.stdout)

    def test_names_and_errors(self):
        self.assertEqual(dao.sim.op_name(_capi.DAO_SIM_OP_ALLOC), "alloc")
        self.assertEqual(dao.sim.op_name(999), "unknown")
        self.assertEqual(dao.sim.profile(), "none")
        with self.assertRaises(dao.InvalidArgumentError):
            dao.sim.set_profile("h100-unknown")
        with self.assertRaises(dao.NoDeviceError):
            dao.sim.cost(9, 0)
        with self.assertRaises(ValueError):
            dao.sim.configure(["12 parsecs"])
        self.assertEqual(dao._util.parse_size("1 GiB"), 1 << 30)


if __name__ == "__main__":
    unittest.main()
