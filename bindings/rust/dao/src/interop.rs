//! The PyTorch / CuPy allocator entry points (`dao/interop.h`,
//! docs/interop.md). Frameworks call them by address ([`functions`]); the
//! thin wrappers below are for calling them from Rust. The C functions return
//! no status: a failure gives a null pointer (malloc) or nothing, with the
//! message in the thread's last error and counted in [`stats`].

use std::ffi::c_void;

use crate::error::{check, Result};
use dao_sys as ffi;

/// What the entry points hold and have done (`dao_interop_stats`).
pub type InteropStats = ffi::dao_interop_stats;

/// The addresses to hand to a framework.
#[derive(Clone, Copy, Debug)]
pub struct Functions {
    /// PyTorch `CUDAPluggableAllocator` malloc (`dao_pluggable_malloc`).
    pub pluggable_malloc: usize,
    /// PyTorch free (`dao_pluggable_free`).
    pub pluggable_free: usize,
    /// PyTorch `set_record_stream_fn` hook (`dao_pluggable_record_stream`).
    pub pluggable_record_stream: usize,
    /// CuPy `CFunctionAllocator` malloc (`dao_cupy_malloc`).
    pub cupy_malloc: usize,
    /// CuPy free (`dao_cupy_free`).
    pub cupy_free: usize,
}

/// The entry points' addresses.
pub fn functions() -> Functions {
    Functions {
        pluggable_malloc: ffi::dao_pluggable_malloc as *const () as usize,
        pluggable_free: ffi::dao_pluggable_free as *const () as usize,
        pluggable_record_stream: ffi::dao_pluggable_record_stream as *const () as usize,
        cupy_malloc: ffi::dao_cupy_malloc as *const () as usize,
        cupy_free: ffi::dao_cupy_free as *const () as usize,
    }
}

/// `dao_pluggable_malloc`: null for size 0 or on failure.
///
/// # Safety
/// `stream` is null or a live stream of the device (a `CUstream`, or a
/// `dao_stream` handle under `DAO_INTEROP_PLACE=sim`).
pub unsafe fn pluggable_malloc(size: isize, device: i32, stream: *mut c_void) -> *mut c_void {
    ffi::dao_pluggable_malloc(size, device, stream)
}

/// `dao_pluggable_free`: a bad pointer is reported, never an abort.
///
/// # Safety
/// `ptr` is not used after this call; no other thread frees it concurrently.
pub unsafe fn pluggable_free(ptr: *mut c_void, size: isize, device: i32, stream: *mut c_void) {
    ffi::dao_pluggable_free(ptr, size, device, stream)
}

/// `dao_pluggable_record_stream`.
///
/// # Safety
/// As [`pluggable_malloc`] for `stream`; `ptr` is not freed concurrently.
pub unsafe fn pluggable_record_stream(ptr: *mut c_void, stream: *mut c_void) {
    ffi::dao_pluggable_record_stream(ptr, stream)
}

/// `dao_cupy_malloc`: null for size 0 or on failure.
///
/// # Safety
/// `param` is null or points to a live `*mut c_void` slot holding a stream
/// as [`pluggable_malloc`] takes it.
pub unsafe fn cupy_malloc(param: *mut c_void, size: usize, device: i32) -> *mut c_void {
    ffi::dao_cupy_malloc(param, size, device)
}

/// `dao_cupy_free`.
///
/// # Safety
/// As [`pluggable_free`].
pub unsafe fn cupy_free(param: *mut c_void, ptr: *mut c_void, device: i32) {
    ffi::dao_cupy_free(param, ptr, device)
}

/// The stream cache and failure counts (`dao_interop_get_stats`).
pub fn stats() -> Result<InteropStats> {
    let mut s = InteropStats {
        struct_size: std::mem::size_of::<InteropStats>(),
        ..Default::default()
    };
    // SAFETY: a valid out-pointer with its size set.
    check(unsafe { ffi::dao_interop_get_stats(&mut s) })?;
    Ok(s)
}
