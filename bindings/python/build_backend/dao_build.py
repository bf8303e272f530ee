"""A PEP 517 build backend for package dao, standard library only.

pip runs it in place of setuptools (pyproject.toml: build-backend =
"dao_build", backend-path = ["build_backend"], requires = []), so that
`pip install bindings/python` needs no network. It writes a pure-Python
wheel (py3-none-any) of the directory dao/ and an sdist of this folder.
The version comes from dao/_capi.py (DAO_VERSION_STRING, generated from
include/dao/version.h), so it follows the library's.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "dao"
SUMMARY = ("libdao for Python: memory for heterogeneous machines (CPU, CUDA, simulated "
           "devices), and libdao as PyTorch's and CuPy's allocator")
REQUIRES_PYTHON = ">=3.9"
# A fixed timestamp, so that two builds of one tree give the same wheel.
EPOCH = (2020, 1, 1, 0, 0, 0)


def _version():
    with open(os.path.join(HERE, "dao", "_capi.py"), encoding="utf-8") as f:
        m = re.search(r'^DAO_VERSION_STRING = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("dao/_capi.py has no DAO_VERSION_STRING: run scripts/gen-bindings.py")
    return m.group(1)


def _metadata():
    readme = os.path.join(HERE, "README.md")
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + _version(),
             "Summary: " + SUMMARY, "Requires-Python: " + REQUIRES_PYTHON,
             "Description-Content-Type: text/markdown", "", ""]
    text = "\n".join(lines)
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            text += f.read()
    return text


def _dist_info():
    return "%s-%s.dist-info" % (NAME, _version())


def _package_files():
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(root, f)
            out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(directory, files):
    dist = _dist_info()
    wheel = "%s-%s-py3-none-any.whl" % (NAME, _version())
    record = []
    with zipfile.ZipFile(os.path.join(directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        def add(name, data):
            info = zipfile.ZipInfo(name, EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append(_record_line(name, data))
        for name, data in files:
            add(name, data)
        add(dist + "/METADATA", _metadata().encode())
        add(dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: dao_build\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n").encode())
        record.append(dist + "/RECORD,,")
        info = zipfile.ZipInfo(dist + "/RECORD", EPOCH)
        info.external_attr = 0o644 << 16
        z.writestr(info, "\n".join(record) + "\n")
    return wheel


# --- PEP 517 -------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist = _dist_info()
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    with open(os.path.join(metadata_directory, dist, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return dist


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = []
    for name, full in _package_files():
        with open(full, "rb") as f:
            files.append((name, f.read()))
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a .pth file that puts this folder on sys.path."""
    return _write_wheel(wheel_directory, [("%s.pth" % NAME, (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        entries = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
                   ("README.md", os.path.join(HERE, "README.md")),
                   ("build_backend/dao_build.py", os.path.abspath(__file__))]
        entries += _package_files()
        for rel, full in entries:
            if os.path.exists(full):
                info = t.gettarinfo(full, base + "/" + rel)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 1577836800, 0, 0, "", ""
                with open(full, "rb") as f:
                    t.addfile(info, f)
        data = _metadata().encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size, info.mtime = len(data), 1577836800
        t.addfile(info, io.BytesIO(data))
    return name
