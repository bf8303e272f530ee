"""Loading libdao.so.0 and binding the raw layer (_capi.FUNCTIONS) to it.

The library is looked for, in order:
1. the path in the environment variable DAO_LIBRARY, when it is set (and
   only there: a path that was asked for and fails is an error, never
   silently replaced by another library);
2. libdao.so.0 next to this package (a wheel or a copy that bundles it);
3. libdao.so.0 through the system's dynamic loader (LD_LIBRARY_PATH, the
   ld.so cache: what the Debian package libdao0 installs).
It is loaded on first use, not at import, so ``import dao`` always works
and the error says every place that was tried.
"""

import ctypes
import os
import threading

from . import _capi
from .errors import LibraryNotFoundError, UnsupportedError, make_error

SONAME = "libdao.so.0"
ENV = "DAO_LIBRARY"

_lock = threading.Lock()
_api = None


class Api:
    """The loaded library: one attribute per C function (with restype and
    argtypes set), plus ``cdll`` (the ctypes.CDLL), ``path`` (the file
    loaded) and ``missing`` (functions of the headers the library lacks;
    calling one raises UnsupportedError)."""

    def __init__(self, cdll, path):
        self.cdll = cdll
        self.path = path
        self.missing = []
        for name, (restype, argtypes) in _capi.FUNCTIONS.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                self.missing.append(name)
                setattr(self, name, _missing_function(name, path))
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)

    def symbol(self, name):
        """The address of an exported symbol, or None when the library lacks it."""
        try:
            return ctypes.cast(getattr(self.cdll, name), ctypes.c_void_p).value
        except AttributeError:
            return None


def _missing_function(name, path):
    def missing(*args):
        raise UnsupportedError(
            _capi.DAO_ERR_UNSUPPORTED,
            "%s is declared by this version of package dao but the library %s does not "
            "export it: the library is older than the package; install a libdao of version "
            "%s or later" % (name, path, _capi.DAO_VERSION_STRING))
    missing.__name__ = name
    return missing


def _candidates():
    env = os.environ.get(ENV)
    if env:
        return [("%s=%s" % (ENV, env), env)]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    return [("next to the package: %s" % here, here),
            ("the system loader: %s (LD_LIBRARY_PATH, ld.so.cache)" % SONAME, SONAME)]


def _real_path(cdll, fallback):
    """The file the loader opened, from /proc/self/maps (dladdr needs libdl)."""
    try:
        addr = ctypes.cast(cdll.dao_version_number, ctypes.c_void_p).value
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                if lo <= addr < hi:
                    return parts[5].strip()
    except (OSError, AttributeError, ValueError):
        pass
    return os.path.abspath(fallback) if os.path.sep in fallback else fallback


def load():
    """The loaded library (an Api), loading it on the first call."""
    global _api
    if _api is not None:
        return _api
    with _lock:
        if _api is None:
            tried = []
            for what, path in _candidates():
                if os.path.sep in path and not os.path.exists(path):
                    tried.append("%s: no such file" % what)
                    continue
                try:
                    cdll = ctypes.CDLL(path)
                except OSError as e:
                    tried.append("%s: %s" % (what, e))
                    continue
                _api = Api(cdll, _real_path(cdll, path))
                break
            else:
                raise LibraryNotFoundError(
                    _capi.DAO_ERR_NOT_FOUND,
                    "cannot load libdao (%s); tried:\n  %s\nInstall libdao0 (Debian: apt install "
                    "libdao0), or set %s to the path of libdao.so.0 (for a build tree: "
                    "DAO_LIBRARY=<build>/libdao.so.0)" % (SONAME, "\n  ".join(tried), ENV))
    return _api


def check(status):
    """Raise the dao.Error of a status other than DAO_OK, with the thread's message."""
    if status:
        raise make_error(status, load().dao_last_error().decode("utf-8", "replace"))


def text(ptr):
    """A C string (bytes or None) as str."""
    return None if ptr is None else ptr.decode("utf-8", "replace")
