//! Simulated devices (SIM places): GPU-like memory on any machine.
//!
//! A SIM device is host memory with a hard capacity: asking past it gives
//! [`Status::OutOfMemory`] exactly as a full GPU
//! would, and its streams run on worker threads of their own. The devices
//! are set, in order of precedence, by [`configure`] before their first
//! use, by the environment variable `DAO_SIM_DEVICES` (`2x512MiB`,
//! `1GiB,256MiB`, `0` for none), or else one device of 1 GiB.

use std::ffi::c_int;
use std::ptr;

use dao_sys as ffi;

use crate::error::{check, Error, Result, Status};

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
