//! Simulated devices (SIM places): GPU-like memory on any machine.
//!
//! A SIM device is host memory with a hard capacity: asking past it gives
//! [`Status::OutOfMemory`] exactly as a full GPU
//! would, and its streams run on worker threads of their own. The devices
//! are set, in order of precedence, by [`configure`] before their first
//! use, by the environment variable `DAO_SIM_DEVICES` (`2x512MiB`,
//! `1GiB,256MiB`, `0` for none), or else one device of 1 GiB.
//!
//! A *cost profile* makes the devices stand in for a particular card: they
//! map memory in its granularity and account, for every driver call they
//! stand in for, the time that card's driver takes — accounted, never
//! slept. Profiles: `"none"` (the default: host pages, calls counted, no
//! time) and `"h200"` (an NVIDIA H200 with driver 580, measured), chosen by
//! [`set_profile`] before first use or by the environment variable
//! `DAO_SIM_COSTS`. [`cost`] reads what a device accounted for one
//! [`SimOp`], [`reset_costs`] zeroes it.

use std::ffi::c_int;
use std::fmt;
use std::mem;
use std::ptr;

use dao_sys as ffi;

use crate::error::{c_string, check, Error, Result, Status};
use crate::place::static_str;

/// Most simulated devices a process may have.
pub const MAX_DEVICES: usize = ffi::DAO_SIM_MAX_DEVICES as usize;

fn count_of(count: usize) -> Result<c_int> {
    c_int::try_from(count).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("{count} simulated devices: at most {MAX_DEVICES}"),
        )
    })
}

/// Sets the simulated devices, one per capacity in bytes
/// (`dao_sim_configure`); it overrides `DAO_SIM_DEVICES`.
///
/// Call it before the first use of a SIM place. Afterwards it succeeds if
/// the configuration is the same and changes nothing, and fails with
/// [`Status::InvalidState`] otherwise.
/// [`Status::InvalidArgument`] for more than [`MAX_DEVICES`] devices or a
/// capacity of 0.
///
/// ```
/// use dao::{Place, PlaceKind};
///
/// dao::sim::configure(&[64 << 20, 64 << 20])?;
/// assert_eq!(PlaceKind::Sim.device_count()?, 2);
/// assert_eq!(Place::sim(1).memory_info()?.total, 64 << 20);
/// // In use now: only the same configuration is accepted.
/// assert!(dao::sim::configure(&[64 << 20, 64 << 20]).is_ok());
/// assert_eq!(dao::sim::configure(&[1 << 30]).unwrap_err().status(), dao::Status::InvalidState);
/// # Ok::<(), dao::Error>(())
/// ```
pub fn configure(capacities: &[usize]) -> Result<()> {
    let count = count_of(capacities.len())?;
    // SAFETY: `count` capacities, copied by the library.
    check(unsafe { ffi::dao_sim_configure(count, capacities.as_ptr()) })
}

/// Sets `count` simulated devices of 1 GiB each (`dao_sim_configure` with
/// no capacities); as [`configure`] otherwise.
pub fn configure_default(count: usize) -> Result<()> {
    let count = count_of(count)?;
    // SAFETY: NULL capacities mean 1 GiB each.
    check(unsafe { ffi::dao_sim_configure(count, ptr::null()) })
}

/// Chooses the cost profile of the simulated devices, `"none"` or `"h200"`
/// (`dao_sim_set_profile`); it overrides `DAO_SIM_COSTS`.
///
/// Call it before the first use of a SIM place, like [`configure`].
/// Afterwards it succeeds for the profile in effect and changes nothing,
/// and fails with [`Status::InvalidState`] for another one.
/// [`Status::InvalidArgument`] for an unknown profile (the message lists
/// the profiles).
///
/// Each doc example runs in a process of its own, so this one can still
/// choose:
///
/// ```
/// use dao::sim::SimOp;
/// use dao::{Allocator, Place};
///
/// dao::sim::set_profile("h200")?;
/// assert_eq!(dao::sim::profile()?, "h200");
/// let system = Allocator::new(Place::sim(0), Some("system"), "")?;
/// let block = system.alloc(1 << 20, None)?;
/// let alloc = dao::sim::cost(0, SimOp::Alloc)?;
/// assert_eq!(alloc.count, 1);
/// assert!(alloc.ns > 0, "an H200 takes time to allocate: {alloc:?}");
/// drop(block);
/// // Chosen for good once a SIM place is in use.
/// let err = dao::sim::set_profile("none").unwrap_err();
/// assert_eq!(err.status(), dao::Status::InvalidState);
/// # Ok::<(), dao::Error>(())
/// ```
pub fn set_profile(profile: &str) -> Result<()> {
    let profile = c_string("SIM cost profile", profile)?;
    // SAFETY: a NUL-terminated string, read during the call.
    check(unsafe { ffi::dao_sim_set_profile(profile.as_ptr()) })
}

/// The cost profile in effect, `"none"` or `"h200"`
/// (`dao_sim_get_profile`).
///
/// It fixes the SIM configuration, as a first use does.
/// [`Status::InvalidArgument`] when `DAO_SIM_COSTS` or `DAO_SIM_DEVICES` is
/// malformed.
pub fn profile() -> Result<&'static str> {
    let mut name = ptr::null();
    // SAFETY: an out-pointer; the library stores a static string in it.
    check(unsafe { ffi::dao_sim_get_profile(&mut name) })?;
    Ok(static_str(name))
}

/// What simulated device `device` accounted for `op` since its first use
/// or its last [`reset_costs`] (`dao_sim_get_cost`).
///
/// [`Status::NoDevice`] when there is no such SIM device;
/// [`Status::InvalidArgument`] for an operation the library does not know
/// ([`SimOp::Unknown`]).
///
/// ```
/// use dao::sim::SimOp;
/// use dao::Place;
///
/// dao::sim::set_profile("none")?; // the default: calls counted, no time
/// let system = dao::Allocator::new(Place::sim(0), Some("system"), "")?;
/// let block = system.alloc(4096, None)?;
/// let alloc = dao::sim::cost(0, SimOp::Alloc)?;
/// assert!(alloc.count >= 1 && alloc.bytes >= 4096);
/// assert_eq!(alloc.ns, 0);
/// drop(block);
/// assert_eq!(dao::sim::cost(0, SimOp::Free)?.count, 1);
/// dao::sim::reset_costs(0)?;
/// assert_eq!(dao::sim::cost(0, SimOp::Alloc)?, dao::SimCost::default());
/// # Ok::<(), dao::Error>(())
/// ```
pub fn cost(device: i32, op: SimOp) -> Result<SimCost> {
    let mut raw = ffi::dao_sim_cost {
        struct_size: mem::size_of::<ffi::dao_sim_cost>(),
        ..Default::default()
    };
    // SAFETY: a sized struct of this version, written during the call.
    check(unsafe { ffi::dao_sim_get_cost(device, op.to_raw(), &mut raw) })?;
    Ok(SimCost::from_raw(&raw))
}

/// Zeroes what simulated device `device` accounted, for every operation
/// (`dao_sim_reset_costs`). [`Status::NoDevice`] when there is no such SIM
/// device.
pub fn reset_costs(device: i32) -> Result<()> {
    // SAFETY: any device number is accepted.
    check(unsafe { ffi::dao_sim_reset_costs(device) })
}

c_enum! {
    /// A driver call whose simulated cost a SIM device accounts
    /// (`dao_sim_op`); see [`cost`].
    pub enum SimOp {
        /// A segment allocation (cuMemAlloc).
        Alloc = ffi::DAO_SIM_OP_ALLOC,
        /// A segment free (cuMemFree).
        Free = ffi::DAO_SIM_OP_FREE,
        /// A physical allocation of one granule (cuMemCreate).
        Create = ffi::DAO_SIM_OP_CREATE,
        /// Mapping one physical allocation (cuMemMap).
        Map = ffi::DAO_SIM_OP_MAP,
        /// Enabling access to a mapped range (cuMemSetAccess).
        SetAccess = ffi::DAO_SIM_OP_SET_ACCESS,
        /// Unmapping one physical allocation (cuMemUnmap).
        Unmap = ffi::DAO_SIM_OP_UNMAP,
        /// Releasing one physical allocation (cuMemRelease).
        Release = ffi::DAO_SIM_OP_RELEASE,
        /// Recording an event on a stream.
        EventRecord = ffi::DAO_SIM_OP_EVENT_RECORD,
        /// Querying an event or a stream.
        EventQuery = ffi::DAO_SIM_OP_EVENT_QUERY,
        /// Synchronizing a stream or an event.
        Synchronize = ffi::DAO_SIM_OP_SYNCHRONIZE,
        /// A host function queued on a stream.
        HostFunc = ffi::DAO_SIM_OP_HOST_FUNC,
        /// A copy from host memory to the device.
        CopyToDevice = ffi::DAO_SIM_OP_COPY_TO_DEVICE,
        /// A copy from the device to host memory.
        CopyToHost = ffi::DAO_SIM_OP_COPY_TO_HOST,
        /// A copy within device memory.
        CopyOnDevice = ffi::DAO_SIM_OP_COPY_ON_DEVICE,
    }
}

impl SimOp {
    /// The operations of this version, in the order of their C values.
    pub const ALL: [SimOp; ffi::DAO_SIM_OP_COUNT as usize] = [
        SimOp::Alloc,
        SimOp::Free,
        SimOp::Create,
        SimOp::Map,
        SimOp::SetAccess,
        SimOp::Unmap,
        SimOp::Release,
        SimOp::EventRecord,
        SimOp::EventQuery,
        SimOp::Synchronize,
        SimOp::HostFunc,
        SimOp::CopyToDevice,
        SimOp::CopyToHost,
        SimOp::CopyOnDevice,
    ];

    /// "alloc", "create", "copy_to_device", ..., or "unknown"
    /// (`dao_sim_op_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: any value; a static string.
        static_str(unsafe { ffi::dao_sim_op_name(self.to_raw()) })
    }
}

impl fmt::Display for SimOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one simulated device accounted for one operation ([`cost`]).
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq, Hash)]
pub struct SimCost {
    /// Calls since the device's first use or last reset.
    pub count: u64,
    /// Bytes they concerned (mapped, allocated, copied).
    pub bytes: u64,
    /// Simulated driver time they took, in nanoseconds (0 with the profile
    /// `"none"`).
    pub ns: u64,
}

impl SimCost {
    fn from_raw(r: &ffi::dao_sim_cost) -> SimCost {
        SimCost {
            count: r.count,
            bytes: r.bytes,
            ns: r.ns,
        }
    }
}
