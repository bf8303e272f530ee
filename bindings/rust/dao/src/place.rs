//! Places: where memory lives, and what this machine has of each kind.

use std::ffi::{c_char, CStr};
use std::fmt;

use dao_sys as ffi;

use crate::error::{check, owned_string, Result};

/// A kind of place (`dao_place_kind`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub enum PlaceKind {
    /// Host memory from the operating system. One device, 0.
    Cpu,
    /// Memory of CUDA device n (through the CUDA driver, loaded at run time).
    Cuda,
    /// Page-locked host memory registered with the CUDA driver. Device 0.
    CudaPinned,
    /// CUDA managed (unified) memory associated with device n.
    CudaManaged,
    /// A simulated device: host memory with a hard capacity (see [`crate::sim`]).
    Sim,
    /// A kind this binding does not know (from a newer library).
    Unknown(i32),
}

impl PlaceKind {
    /// Every kind of this version, in the order of their C values.
    pub const ALL: [PlaceKind; 5] = [
        PlaceKind::Cpu,
        PlaceKind::Cuda,
        PlaceKind::CudaPinned,
        PlaceKind::CudaManaged,
        PlaceKind::Sim,
    ];

    /// The kind of a C value.
    pub fn from_raw(kind: ffi::dao_place_kind) -> PlaceKind {
        match kind {
            ffi::DAO_PLACE_CPU => PlaceKind::Cpu,
            ffi::DAO_PLACE_CUDA => PlaceKind::Cuda,
            ffi::DAO_PLACE_CUDA_PINNED => PlaceKind::CudaPinned,
            ffi::DAO_PLACE_CUDA_MANAGED => PlaceKind::CudaManaged,
            ffi::DAO_PLACE_SIM => PlaceKind::Sim,
            other => PlaceKind::Unknown(other),
        }
    }

    /// The C value of the kind.
    pub fn to_raw(self) -> ffi::dao_place_kind {
        match self {
            PlaceKind::Cpu => ffi::DAO_PLACE_CPU,
            PlaceKind::Cuda => ffi::DAO_PLACE_CUDA,
            PlaceKind::CudaPinned => ffi::DAO_PLACE_CUDA_PINNED,
            PlaceKind::CudaManaged => ffi::DAO_PLACE_CUDA_MANAGED,
            PlaceKind::Sim => ffi::DAO_PLACE_SIM,
            PlaceKind::Unknown(v) => v,
        }
    }

    /// Lower-case name: "cpu", "cuda", "cuda_pinned", "cuda_managed", "sim",
    /// or "unknown" (`dao_place_kind_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: any value is accepted; the result is a static string.
        static_str(unsafe { ffi::dao_place_kind_name(self.to_raw()) })
    }

    /// Number of devices of this kind on this machine
    /// (`dao_place_device_count`): 1 for CPU; 0 for the CUDA kinds without a
    /// driver or GPU ([`PlaceKind::backend_description`] says why); the
    /// configured count for SIM. The first call initialises the backend.
    pub fn device_count(self) -> Result<usize> {
        let mut count = 0;
        // SAFETY: `count` is a valid out-pointer.
        check(unsafe { ffi::dao_place_device_count(self.to_raw(), &mut count) })?;
        Ok(count.max(0) as usize)
    }

    /// One line describing the backend of this kind, and why it has no
    /// devices when it has none (`dao_place_backend_description`).
    pub fn backend_description(self) -> &'static str {
        // SAFETY: any value is accepted; the string lives until the process
        // ends.
        static_str(unsafe { ffi::dao_place_backend_description(self.to_raw()) })
    }

    /// Strategy and config of the default allocators of this kind, from the
    /// environment, without creating anything (`dao_place_default_config`).
    pub fn default_config(self) -> Result<DefaultConfig> {
        let mut strategy: *const c_char = std::ptr::null();
        let mut config: *const c_char = std::ptr::null();
        // SAFETY: valid out-pointers; the strings live until the process ends.
        check(unsafe { ffi::dao_place_default_config(self.to_raw(), &mut strategy, &mut config) })?;
        // SAFETY: written by the call: NUL-terminated strings.
        Ok(DefaultConfig {
            strategy: unsafe { owned_string(strategy) },
            config: unsafe { owned_string(config) },
        })
    }

    /// Whether the host may read and write memory of this kind directly:
    /// CPU, SIM, CUDA pinned and CUDA managed memory (not CUDA device
    /// memory, and not a kind this binding does not know).
    pub fn is_host_accessible(self) -> bool {
        matches!(
            self,
            PlaceKind::Cpu | PlaceKind::Sim | PlaceKind::CudaPinned | PlaceKind::CudaManaged
        )
    }
}

impl fmt::Display for PlaceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlaceKind::Unknown(v) => write!(f, "unknown({v})"),
            known => f.write_str(known.name()),
        }
    }
}

/// What the default allocators of a kind use ([`PlaceKind::default_config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultConfig {
    /// Strategy name ("buddy", "caching", "system").
    pub strategy: String,
    /// Config string ("" for the strategy's defaults).
    pub config: String,
}

/// Free and total bytes of a place ([`Place::memory_info`]).
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Bytes free.
    pub free: usize,
    /// Bytes in all.
    pub total: usize,
}

/// A place: a kind of memory and a device index (`dao_place`).
///
/// A small `Copy` value. It may name a device that does not exist; calls
/// that use it then fail with [`Status::NoDevice`](crate::Status::NoDevice).
///
/// ```
/// use dao::{Place, PlaceKind, Status};
///
/// let cpu = Place::cpu();
/// assert_eq!(cpu.kind(), PlaceKind::Cpu);
/// assert!(cpu.is_host_accessible());
/// assert_eq!(cpu.to_string(), "cpu:0");
///
/// // A CUDA device that this machine may not have: the error says why.
/// if PlaceKind::Cuda.device_count()? == 0 {
///     let err = Place::cuda(0).used().unwrap_err();
///     assert_eq!(err.status(), Status::NoDevice);
///     assert!(!err.message().is_empty());
/// }
/// # Ok::<(), dao::Error>(())
/// ```
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Place {
    raw: ffi::dao_place,
}

impl Place {
    /// The host place (`dao_place_cpu`).
    pub fn cpu() -> Place {
        // SAFETY: touches no state.
        Place {
            raw: unsafe { ffi::dao_place_cpu() },
        }
    }

    /// Memory of CUDA device `device` (`dao_place_cuda`; not checked here).
    pub fn cuda(device: i32) -> Place {
        // SAFETY: touches no state.
        Place {
            raw: unsafe { ffi::dao_place_cuda(device) },
        }
    }

    /// Page-locked host memory registered with CUDA (`dao_place_cuda_pinned`).
    pub fn cuda_pinned() -> Place {
        // SAFETY: touches no state.
        Place {
            raw: unsafe { ffi::dao_place_cuda_pinned() },
        }
    }

    /// Managed memory associated with CUDA device `device`
    /// (`dao_place_cuda_managed`).
    pub fn cuda_managed(device: i32) -> Place {
        // SAFETY: touches no state.
        Place {
            raw: unsafe { ffi::dao_place_cuda_managed(device) },
        }
    }

    /// Simulated device `device` (`dao_place_sim`; not checked here).
    pub fn sim(device: i32) -> Place {
        // SAFETY: touches no state.
        Place {
            raw: unsafe { ffi::dao_place_sim(device) },
        }
    }

    /// Any kind and device index, checked only when used.
    pub fn new(kind: PlaceKind, device: i32) -> Place {
        Place {
            raw: ffi::dao_place {
                kind: kind.to_raw(),
                device,
            },
        }
    }

    /// The place of a C `dao_place`.
    pub fn from_raw(raw: ffi::dao_place) -> Place {
        Place { raw }
    }

    /// The C `dao_place`.
    pub fn to_raw(self) -> ffi::dao_place {
        self.raw
    }

    /// The kind.
    pub fn kind(self) -> PlaceKind {
        PlaceKind::from_raw(self.raw.kind)
    }

    /// The device index.
    pub fn device(self) -> i32 {
        self.raw.device
    }

    /// Whether the host may touch this place's memory directly
    /// ([`PlaceKind::is_host_accessible`]).
    pub fn is_host_accessible(self) -> bool {
        self.kind().is_host_accessible()
    }

    /// Free and total bytes as the backend reports them
    /// (`dao_place_memory_info`).
    pub fn memory_info(self) -> Result<MemoryInfo> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        check(unsafe { ffi::dao_place_memory_info(self.raw, &mut free, &mut total) })?;
        Ok(MemoryInfo { free, total })
    }

    /// Bytes handed out on this place by [`Place::alloc`] and the place-level
    /// buffers, counted in block sizes (`dao_used`).
    pub fn used(self) -> Result<usize> {
        let mut bytes = 0usize;
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_used(self.raw, &mut bytes) })?;
        Ok(bytes)
    }

    /// Bytes the library holds on this place for itself (recycle pools,
    /// tiered pools, partitioned memory), counted apart from
    /// [`Place::used`] (`dao_used_internal`).
    pub fn used_internal(self) -> Result<usize> {
        let mut bytes = 0usize;
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_used_internal(self.raw, &mut bytes) })?;
        Ok(bytes)
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind(), self.device())
    }
}

impl fmt::Debug for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Place({self})")
    }
}

pub(crate) fn static_str(ptr: *const c_char) -> &'static str {
    if ptr.is_null() {
        return "";
    }
    // SAFETY: the callers pass strings that libdao documents as static (or
    // living until the process ends) and NUL-terminated.
    unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .unwrap_or("(not UTF-8)")
}
