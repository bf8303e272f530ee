"""Python functions that C calls later (host functions, kernels).

One CFUNCTYPE object per C callback type lives here for the life of the
process; each call carries a key as its ``user_data`` that finds the Python
function in a table, and the entry is dropped once the function ran. So no
ctypes callback object can be collected while C may still call it.
"""

import itertools
import threading
import traceback

_lock = threading.Lock()
_next = itertools.count(1)
_pending = {}


def add(fn):
    """Keep ``fn`` until ``take`` and return its key."""
    with _lock:
        key = next(_next)
        _pending[key] = fn
    return key


def take(key):
    """The function of a key, dropped from the table."""
    with _lock:
        return _pending.pop(key, None)


def drop(key):
    """Forget a key whose call will never come (the C call failed)."""
    take(key)


def report(what):
    """Print the exception of a Python callback that C called (it cannot
    propagate through C)."""
    traceback.print_exc()
