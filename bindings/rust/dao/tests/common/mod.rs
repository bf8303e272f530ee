//! Shared set-up of the integration tests.
//!
//! Simulated devices: two of 64 MiB, as run-tests.sh sets with
//! `DAO_SIM_DEVICES=2x64MiB`. `init` also configures them through the API
//! before their first use, so the tests give the same answers when cargo runs
//! them without that variable.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

pub const MIB: usize = 1 << 20;
pub const SIM_CAPACITY: usize = 64 * MIB;

static SERIAL: Mutex<()> = Mutex::new(());

/// Configures the simulated devices and serialises the tests of one binary:
/// several check place-level counters (`dao_used`) that any concurrent
/// allocation on the place would change.
pub fn init() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    dao::sim::configure(&[SIM_CAPACITY, SIM_CAPACITY])
        .expect("simulated devices: 2 x 64 MiB (DAO_SIM_DEVICES=2x64MiB or unset)");
    guard
}

/// Every place of this machine that has a device, by kind.
pub fn places_with_devices() -> Vec<dao::Place> {
    let mut out = Vec::new();
    for kind in dao::PlaceKind::ALL {
        let count = kind.device_count().expect("device count");
        for d in 0..count {
            out.push(dao::Place::new(kind, d as i32));
        }
    }
    out
}

/// A pattern that depends on the position and a seed.
pub fn pattern(len: usize, seed: u32) -> Vec<u32> {
    (0..len as u32)
        .map(|i| i.wrapping_mul(2654435761).wrapping_add(seed))
        .collect()
}
