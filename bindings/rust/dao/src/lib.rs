//! Safe Rust binding of libdao: memory for heterogeneous machines.
//!
//! libdao allocates memory on *places* — the host ([`Place::cpu`]), CUDA
//! devices ([`Place::cuda`]), CUDA pinned and managed memory, and simulated
//! devices ([`Place::sim`], host memory with a hard capacity, so that GPU
//! workloads run and are tested on any machine) — with strategies chosen by
//! a config string, and builds pools for pipelines on top.
//!
//! | C area | Rust |
//! |---|---|
//! | status, last error | [`Status`], [`Error`], [`Result`] |
//! | version | [`version`], [`version_number`], [`HEADER_VERSION_NUMBER`] |
//! | places | [`Place`], [`PlaceKind`] |
//! | memory (`dao_alloc`) | [`Place::alloc`], [`Place::buffer_zeroed`], [`Allocation`], [`Buffer`] |
//! | simulated devices | [`sim::configure`], [`sim::set_profile`], [`sim::cost`], [`SimOp`], [`SimCost`] |
//! | streams and events | [`Stream`], [`StreamScope`], [`Event`], [`memcpy_async`] |
//! | allocators | [`Allocator`], [`AllocatorStats`], [`Stat`], [`Snapshot`] |
//! | recycle pools | [`RecyclePool`], [`RecycleBuffer`], [`SharedBuffer`], [`Collection`] |
//! | tiered pools | [`TieredPool`], [`Tensor`], [`Kernel`] |
//! | partitioned memory (`whole.h`) | [`Comm`], [`WholeMemory`], [`WholeType`], [`WholeLocation`] |
//!
//! # Conventions
//!
//! - Every fallible call gives a [`Result`]; an [`Error`] holds the
//!   [`Status`] of the C call and the message of `dao_last_error()`, copied
//!   on the failing thread right after the call. Status codes this binding
//!   does not know are kept as [`Status::Unknown`].
//! - Handles are owning types that free their C object on drop. What a C
//!   object hands out borrows it ([`Allocation`] borrows its [`Allocator`],
//!   [`Tensor`] its [`TieredPool`], [`RecycleBuffer`] its [`RecyclePool`]),
//!   so nothing outlives what it came from.
//! - Memory the host may touch (CPU, SIM, CUDA pinned and managed) is
//!   available as slices ([`Buffer`] dereferences to `[T]`); CUDA device
//!   memory only as raw pointers, copied with a [`Stream`].
//! - `Send` and `Sync` are implemented only where the C headers promise that
//!   the calls are thread-safe; each `unsafe impl` says why.
//! - Closures handed to libdao (host functions, kernels, scoring functions)
//!   are boxed and run on libdao's threads, hence `Send + 'static`; a panic
//!   in one never unwinds into C (see each function for what happens).
//!
//! # Example
//!
//! ```
//! use dao::{Allocator, Place, PlaceKind, Status, Stream};
//!
//! dao::sim::configure(&[64 << 20, 64 << 20])?; // or DAO_SIM_DEVICES=2x64MiB
//!
//! // A place the machine may not have answers with a status and a reason.
//! if PlaceKind::Cuda.device_count()? == 0 {
//!     let err = Place::cuda(0).alloc(1 << 20).unwrap_err();
//!     assert_eq!(err.status(), Status::NoDevice);
//! }
//!
//! // A caching allocator on a simulated device, used on a stream.
//! let sim = Place::sim(0);
//! let a = Allocator::new(sim, Some("caching"), "")?;
//! let stream = Stream::new(sim)?;
//! let mut v = a.buffer_from_slice(&[1u64, 2, 3, 4], Some(&stream))?;
//! v.iter_mut().for_each(|x| *x *= 10);
//! let mut back = vec![0u64; 4];
//! stream.scope(|s| s.copy(&mut back, &v))??;
//! assert_eq!(back, [10, 20, 30, 40]);
//! assert_eq!(a.stats()?.live_blocks, 1);
//!
//! // Too much for the device: the message tells the size and the capacity.
//! let err = a.alloc(1 << 30, Some(&stream)).unwrap_err();
//! assert_eq!(err.status(), Status::OutOfMemory);
//! assert!(err.message().contains("capacity"), "{err}");
//! # Ok::<(), dao::Error>(())
//! ```
//!
//! # Linking
//!
//! `dao-sys` finds libdao with `DAO_LIB_DIR` (a directory holding
//! `libdao.so`) or the `pkg-config` program. At run time the loader must find
//! `libdao.so.0` (installed, or `LD_LIBRARY_PATH`).
#![deny(missing_docs)]
#![warn(missing_debug_implementations)]

/// An enum over a C enum's values, with `Unknown(i32)` for values this
/// binding does not know.
macro_rules! c_enum {
    ($(#[$m:meta])* pub enum $name:ident { $($(#[$vm:meta])* $variant:ident = $value:path),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $variant,)*
            /// A value this binding does not know (from a newer library),
            /// as a plain number. Passed to C as it is.
            Unknown(i32),
        }

        impl $name {
            /// The value of a C number.
            pub fn from_raw(value: i32) -> Self {
                match value {
                    $($value => $name::$variant,)*
                    other => $name::Unknown(other),
                }
            }

            /// The C number.
            pub fn to_raw(self) -> i32 {
                match self {
                    $($name::$variant => $value,)*
                    $name::Unknown(value) => value,
                }
            }
        }
    };
}

mod allocator;
mod error;
pub mod interop;
mod memory;
mod place;
mod recycle;
pub mod sim;
mod stream;
mod tiered;
pub mod trace;
mod whole;

pub use dao_sys as ffi;

pub use allocator::{
    Allocator, AllocatorInfo, AllocatorStats, BlockInfo, BlockState, Blocks, SegmentInfo, Segments,
    Snapshot, Stat, StatMetric, StatPool,
};
pub use error::{Error, Result, Status};
pub use memory::{Allocation, Buffer, Memory, MemoryMut, Pod};
pub use place::{DefaultConfig, MemoryInfo, Place, PlaceKind};
pub use recycle::{Collection, PoolRef, RecycleBuffer, RecyclePool, RecycleStats, SharedBuffer};
pub use sim::{SimCost, SimOp};
pub use stream::{memcpy_async, Event, Stream, StreamScope};
pub use tiered::{
    AccessInfo, Kernel, Tensor, TensorState, TieredLinkStats, TieredPool, TieredStats,
};
pub use whole::{
    transport_error, Comm, CommInfo, WholeInfo, WholeLocation, WholeMemory, WholeRange, WholeType,
    COMM_LOCAL_MAX_RANKS,
};

/// Version of the headers this binding was written for:
/// `MAJOR*10000 + MINOR*100 + PATCH`.
pub const HEADER_VERSION_NUMBER: u32 = ffi::DAO_VERSION_NUMBER;

/// Version of the library loaded at run time, `MAJOR*10000 + MINOR*100 +
/// PATCH` (`dao_version_number`); compare with [`HEADER_VERSION_NUMBER`].
pub fn version_number() -> u32 {
    // SAFETY: no arguments, no state.
    unsafe { ffi::dao_version_number() }
}

/// Version string of the library loaded at run time, "MAJOR.MINOR.PATCH"
/// (`dao_version_string`).
///
/// ```
/// let v = dao::version();
/// assert_eq!(v.split('.').count(), 3);
/// assert_eq!(dao::version_number() / 10000, dao::HEADER_VERSION_NUMBER / 10000);
/// ```
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string, never freed.
    place::static_str(unsafe { ffi::dao_version_string() })
}

/// The examples of README.md, run as doc tests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
