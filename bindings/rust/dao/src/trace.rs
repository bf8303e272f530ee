//! The memory history (`dao/trace.h`, docs/recording.md): recording every
//! allocator's events to a JSON Lines file that `dao replay`, `dao plan`
//! and `dao view` read, and the out-of-memory observer.

use std::ffi::c_void;

use crate::error::{c_string, check, Result};
use crate::Allocator;
use dao_sys as ffi;

/// What the recording has done (`dao_trace_stats`).
pub type TraceStats = ffi::dao_trace_stats;

/// Starts recording every allocator of the process to `path`
/// (`dao_trace_start`); `options` as `"stacks=true,flush_ms=50"`, "" for
/// the defaults.
pub fn start(path: &str, options: &str) -> Result<()> {
    let path = c_string("path", path)?;
    let options = c_string("options", options)?;
    // SAFETY: two NUL-terminated strings, copied by the library.
    check(unsafe { ffi::dao_trace_start(path.as_ptr(), options.as_ptr()) })
}

/// Stops the recording, writing an `end` record (`dao_trace_stop`).
pub fn stop() -> Result<()> {
    // SAFETY: no arguments.
    check(unsafe { ffi::dao_trace_stop() })
}

/// Writes what was recorded so far (`dao_trace_flush`).
pub fn flush() -> Result<()> {
    // SAFETY: no arguments.
    check(unsafe { ffi::dao_trace_flush() })
}

/// A note in the history (`dao_trace_mark`); nothing when not recording.
pub fn mark(text: &str) -> Result<()> {
    let text = c_string("text", text)?;
    // SAFETY: a NUL-terminated string, copied by the library.
    check(unsafe { ffi::dao_trace_mark(text.as_ptr()) })
}

/// The recording's counts (`dao_trace_get_stats`).
pub fn stats() -> Result<TraceStats> {
    let mut s = TraceStats {
        struct_size: std::mem::size_of::<TraceStats>(),
        ..Default::default()
    };
    // SAFETY: a valid out-pointer with its size set.
    check(unsafe { ffi::dao_trace_get_stats(&mut s) })?;
    Ok(s)
}

/// Sets (or with `None` removes) the allocator's out-of-memory callback
/// (`dao_allocator_set_oom_callback`). It runs on the thread whose
/// allocation failed; allocating from the same allocator there gives
/// `Status::InvalidState`.
///
/// # Safety
/// `callback` must not unwind, and `user_data` must stay valid while the
/// callback is set (it is passed to it as is, from any thread that
/// allocates).
pub unsafe fn set_oom_callback(
    allocator: &Allocator,
    callback: ffi::dao_oom_callback,
    user_data: *mut c_void,
) -> Result<()> {
    check(ffi::dao_allocator_set_oom_callback(
        allocator.as_raw(),
        callback,
        user_data,
    ))
}
