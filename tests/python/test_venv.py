"""The package builds and installs into a fresh virtual environment without
network, and works there (ctest: python_venv).

Asserted: `python3 -m venv` makes an environment (with pip where the
interpreter has ensurepip, as Debian's python3-venv does; else
--without-pip and the host's `pip --python`), `pip install --no-index
<copy of bindings/python>` succeeds with nothing downloaded (the build
backend is in the tree), and the environment's python, with no
PYTHONPATH, imports dao from its site-packages and allocates, reads
statistics and a snapshot on a SIM device of the build tree's libdao
(DAO_LIBRARY). Skipped, with the reason, where the interpreter has no
venv module.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import daotest

CHECK = r"""
import json, os, dao
assert os.path.realpath(dao.__file__).startswith(os.path.realpath(os.environ["VENV"])), dao.__file__
with dao.Allocator("sim:0", "caching") as a:
    p = a.alloc(1 << 20)
    s = a.stats()
    assert s["allocated_bytes.all.current"] == 1 << 20, s
    assert json.loads(a.snapshot_json())["place"] == "sim:0"
    a.free(p)
print("dao", dao.version(), "from", dao.__file__)
"""


def _has(module):
    return subprocess.run([sys.executable, "-c", "import " + module],
                          capture_output=True).returncode == 0


class Venv(unittest.TestCase):
    def test_install_offline_and_use(self):
        if not _has("venv"):
            self.skipTest("%s has no venv module (Debian: apt install python3-venv)"
                          % sys.executable)
        with tempfile.TemporaryDirectory(prefix="dao-venv-") as tmp:
            src = os.path.join(tmp, "src")
            shutil.copytree(daotest.PACKAGE_DIR, src,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            venv = os.path.join(tmp, "venv")
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
            env["PIP_NO_INDEX"] = "1"
            env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
            with_pip = _has("ensurepip")
            cmd = [sys.executable, "-m", "venv", venv] + ([] if with_pip else ["--without-pip"])
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if r.returncode and with_pip:  # ensurepip present but its wheels are not
                with_pip = False
                shutil.rmtree(venv, ignore_errors=True)
                r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv],
                                   capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            python = os.path.join(venv, "bin", "python")
            if with_pip:
                pip = [python, "-m", "pip"]
            elif _has("pip"):
                pip = [sys.executable, "-m", "pip", "--python", python]
            else:
                self.skipTest("no pip for the environment (Debian: apt install python3-pip)")
            r = subprocess.run(pip + ["install", "--no-index", src], capture_output=True,
                               text=True, env=env, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("Successfully installed dao-", r.stdout)
            env["VENV"] = venv
            r = subprocess.run([python, "-c", CHECK], capture_output=True, text=True, env=env,
                               cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("dao %s from %s" % (daotest.dao.version(), venv), r.stdout)


if __name__ == "__main__":
    unittest.main()
