"""Errors of package dao: every failed libdao call raises a dao.Error.

``Error.status`` is the C status number (``dao._capi.DAO_ERR_*``),
``Error.status_name`` its C name, ``Error.message`` the library's message
(``dao_last_error()``), which says what failed and what to do. One subclass
per status, each also a subclass of the closest built-in exception where
one fits (``OutOfMemoryError`` is a ``MemoryError``, ``InvalidArgumentError``
a ``ValueError``, ``TimeoutError`` the built-in ``TimeoutError``), so
``except MemoryError`` works as a Python programmer expects. A status this
version does not know raises a plain ``Error``.
"""

import builtins

from . import _capi


class Error(Exception):
    """A libdao call failed: ``status`` (int), ``status_name`` and ``message``."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = _capi.STATUS_NAMES.get(self.status, "status %d" % self.status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message) if message else self.status_name)


class InvalidArgumentError(Error, ValueError):
    """DAO_ERR_INVALID_ARGUMENT: a bad argument, handle or config; nothing changed."""


class OutOfMemoryError(Error, MemoryError):
    """DAO_ERR_OUT_OF_MEMORY: the place, a cap or the system has no room."""


class InvalidPointerError(Error, ValueError):
    """DAO_ERR_INVALID_POINTER: not a live pointer of this allocator or place."""


class UnsupportedError(Error):
    """DAO_ERR_UNSUPPORTED: not for this place, strategy or build."""


class NoDeviceError(Error):
    """DAO_ERR_NO_DEVICE: the place names a device this machine lacks."""


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 (the C name)
    """DAO_ERR_TIMEOUT: a blocking call ran out of time."""


class ClosedError(Error):
    """DAO_ERR_CLOSED: the object was closed."""


class BackendError(Error, OSError):
    """DAO_ERR_BACKEND: the driver or the operating system failed."""


class InternalError(Error):
    """DAO_ERR_INTERNAL: a bug in libdao; please report it with the message."""


class InvalidStateError(Error):
    """DAO_ERR_INVALID_STATE: not allowed now (for example too late)."""


class BusyError(Error):
    """DAO_ERR_BUSY: the object is still in use; nothing changed."""


class NotFoundError(Error, LookupError):
    """DAO_ERR_NOT_FOUND: a name or symbol that was looked up does not exist."""


class LibraryNotFoundError(NotFoundError, OSError):
    """libdao.so.0 could not be loaded; the message lists every place tried."""


_BY_STATUS = {
    _capi.DAO_ERR_INVALID_ARGUMENT: InvalidArgumentError,
    _capi.DAO_ERR_OUT_OF_MEMORY: OutOfMemoryError,
    _capi.DAO_ERR_INVALID_POINTER: InvalidPointerError,
    _capi.DAO_ERR_UNSUPPORTED: UnsupportedError,
    _capi.DAO_ERR_NO_DEVICE: NoDeviceError,
    _capi.DAO_ERR_TIMEOUT: TimeoutError,
    _capi.DAO_ERR_CLOSED: ClosedError,
    _capi.DAO_ERR_BACKEND: BackendError,
    _capi.DAO_ERR_INTERNAL: InternalError,
    _capi.DAO_ERR_INVALID_STATE: InvalidStateError,
    _capi.DAO_ERR_BUSY: BusyError,
    _capi.DAO_ERR_NOT_FOUND: NotFoundError,
}


def error_class(status):
    """The exception class of a status (Error for one this version does not know)."""
    return _BY_STATUS.get(int(status), Error)


def make_error(status, message):
    """An exception object for a status and message."""
    return error_class(status)(status, message)
