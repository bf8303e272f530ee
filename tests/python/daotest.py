"""Shared by the unittest suites of package dao (tests/python/test_*.py).

ctest runs them with PYTHONPATH=bindings/python, DAO_LIBRARY=<build>/libdao.so.0,
DAO_SIM_DEVICES=2x256MiB and DAO_INTEROP_PLACE=sim; by hand:

    DAO_LIBRARY=build/libdao.so.0 DAO_SIM_DEVICES=2x256MiB DAO_INTEROP_PLACE=sim \
      PYTHONPATH=bindings/python python3 -m unittest discover -s tests/python -v
"""

import ctypes
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGE_DIR = os.path.join(ROOT, "bindings", "python")
if PACKAGE_DIR not in sys.path:
    sys.path.insert(0, PACKAGE_DIR)

import dao  # noqa: E402
import dao._interop  # noqa: E402

ENTRY_POINTS = ("dao_pluggable_malloc", "dao_pluggable_free", "dao_cupy_malloc", "dao_cupy_free")


def library_has_entry_points():
    api = dao.library()
    return all(api.symbol(n) for n in ENTRY_POINTS)


def use_entry_points_for_tests():
    """The path of the library that serves the entry points of interop.h:
    the libdao under test (ctest sets DAO_INTEROP_PLACE=sim, so they serve
    the SIM devices)."""
    if not library_has_entry_points():
        raise RuntimeError("the libdao under test (%s) lacks the interop entry points %s"
                           % (dao.library().path, ", ".join(ENTRY_POINTS)))
    return dao.library().path


def run_python(code, env=None, fakes=()):
    """Run `code` in a fresh python3 (a process whose libdao has not read its
    environment yet); returns the CompletedProcess."""
    e = dict(os.environ)
    paths = [os.path.join(HERE, f) for f in fakes] + [HERE, PACKAGE_DIR]
    e["PYTHONPATH"] = os.pathsep.join(paths + [e.get("PYTHONPATH", "")])
    e.update(env or {})
    for k, v in list(e.items()):
        if v is None:
            del e[k]
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                          timeout=120)
