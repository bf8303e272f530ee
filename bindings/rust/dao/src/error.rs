//! Status codes and the error type.

use std::ffi::{CStr, CString};
use std::fmt;

use dao_sys as ffi;

/// A libdao status code (`dao_status`).
///
/// The numbers are those of the C header and never change. A code this
/// version of the binding does not know (from a newer library) is kept as
/// [`Status::Unknown`] with its number.
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum Status {
    /// `DAO_OK` (0): success.
    Ok,
    /// `DAO_ERR_INVALID_ARGUMENT` (1): an argument is NULL, out of range or
    /// malformed (for example a config string with an unknown key).
    InvalidArgument,
    /// `DAO_ERR_OUT_OF_MEMORY` (2): no room for the request.
    OutOfMemory,
    /// `DAO_ERR_INVALID_POINTER` (3): a pointer that is not live here.
    InvalidPointer,
    /// `DAO_ERR_UNSUPPORTED` (4): not for this place, strategy or build.
    Unsupported,
    /// `DAO_ERR_NO_DEVICE` (5): the device does not exist on this machine.
    NoDevice,
    /// `DAO_ERR_TIMEOUT` (6): a blocking call ran out of time.
    Timeout,
    /// `DAO_ERR_CLOSED` (7): the object was closed.
    Closed,
    /// `DAO_ERR_BACKEND` (8): the driver or the operating system failed.
    Backend,
    /// `DAO_ERR_INTERNAL` (9): a bug in libdao.
    Internal,
    /// `DAO_ERR_INVALID_STATE` (10): not allowed in the current state.
    InvalidState,
    /// `DAO_ERR_BUSY` (11): the object is still in use.
    Busy,
    /// `DAO_ERR_NOT_FOUND` (12): a name or key that does not exist.
    NotFound,
    /// A code this binding does not know, as a plain number.
    Unknown(i32),
}

impl Status {
    /// The status of a C code.
    pub fn from_code(code: i32) -> Status {
        match code {
            ffi::DAO_OK => Status::Ok,
            ffi::DAO_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            ffi::DAO_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            ffi::DAO_ERR_INVALID_POINTER => Status::InvalidPointer,
            ffi::DAO_ERR_UNSUPPORTED => Status::Unsupported,
            ffi::DAO_ERR_NO_DEVICE => Status::NoDevice,
            ffi::DAO_ERR_TIMEOUT => Status::Timeout,
            ffi::DAO_ERR_CLOSED => Status::Closed,
            ffi::DAO_ERR_BACKEND => Status::Backend,
            ffi::DAO_ERR_INTERNAL => Status::Internal,
            ffi::DAO_ERR_INVALID_STATE => Status::InvalidState,
            ffi::DAO_ERR_BUSY => Status::Busy,
            ffi::DAO_ERR_NOT_FOUND => Status::NotFound,
            other => Status::Unknown(other),
        }
    }

    /// The C code of the status.
    pub fn code(self) -> i32 {
        match self {
            Status::Ok => ffi::DAO_OK,
            Status::InvalidArgument => ffi::DAO_ERR_INVALID_ARGUMENT,
            Status::OutOfMemory => ffi::DAO_ERR_OUT_OF_MEMORY,
            Status::InvalidPointer => ffi::DAO_ERR_INVALID_POINTER,
            Status::Unsupported => ffi::DAO_ERR_UNSUPPORTED,
            Status::NoDevice => ffi::DAO_ERR_NO_DEVICE,
            Status::Timeout => ffi::DAO_ERR_TIMEOUT,
            Status::Closed => ffi::DAO_ERR_CLOSED,
            Status::Backend => ffi::DAO_ERR_BACKEND,
            Status::Internal => ffi::DAO_ERR_INTERNAL,
            Status::InvalidState => ffi::DAO_ERR_INVALID_STATE,
            Status::Busy => ffi::DAO_ERR_BUSY,
            Status::NotFound => ffi::DAO_ERR_NOT_FOUND,
            Status::Unknown(code) => code,
        }
    }

    /// The library's short English name of the status (`dao_status_string`),
    /// such as "out of memory"; "unknown status" for a code it does not know.
    pub fn description(self) -> &'static str {
        // SAFETY: dao_status_string accepts any value and returns a static,
        // NUL-terminated string that is never freed.
        let text = unsafe { CStr::from_ptr(ffi::dao_status_string(self.code())) };
        text.to_str().unwrap_or("(status name is not UTF-8)")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// A failed libdao call: its [`Status`] and the message that explains it.
///
/// For a failure of the C library the message is `dao_last_error()`, copied
/// on the failing thread right after the call. The binding also makes errors
/// of its own for input it refuses before calling C (a string with a NUL
/// byte, a size that overflows, a place whose memory the host cannot touch),
/// with a status of the same meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    /// An error with a status and a message of your own, for example for a
    /// tiered-pool kernel to report why it failed.
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// The error of a failed C call: `code` with `dao_last_error()`.
    /// Call it on the failing thread, before any other libdao call.
    pub(crate) fn last(code: ffi::dao_status) -> Error {
        // SAFETY: dao_last_error never returns NULL; the string stays valid
        // until the next failing call on this thread, and is copied here.
        let message = unsafe { CStr::from_ptr(ffi::dao_last_error()) }
            .to_string_lossy()
            .into_owned();
        Error {
            status: Status::from_code(code),
            message,
        }
    }

    /// The status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The message (may be empty).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.status)
        } else {
            write!(f, "{}: {}", self.status, self.message)
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for Status {
    fn from(e: Error) -> Status {
        e.status
    }
}

/// The result of a fallible call of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Ok(())` for `DAO_OK`, else the error with the thread's last message.
#[inline]
pub(crate) fn check(code: ffi::dao_status) -> Result<()> {
    if code == ffi::DAO_OK {
        Ok(())
    } else {
        Err(Error::last(code))
    }
}

/// A C string of `text`, refusing interior NUL bytes as libdao would refuse
/// a malformed argument.
pub(crate) fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("{what} {text:?} contains a NUL byte"),
        )
    })
}

/// A static or long-lived C string as a Rust string.
///
/// # Safety
/// `ptr` is NULL or a valid NUL-terminated string.
pub(crate) unsafe fn owned_string(ptr: *const std::ffi::c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        CStr::from_ptr(ptr).to_string_lossy().into_owned()
    }
}
