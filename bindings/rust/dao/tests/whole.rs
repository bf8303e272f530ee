//! Partitioned (whole) memory over a local communicator of simulated
//! devices: one thread per rank (whole.h: each rank of
//! `dao_comm_create_local` is driven by a thread of its own, and collective
//! calls block until every rank has made them). Scatter and gather of every
//! type and location against a reference, pointers, the partition rule,
//! store and load, bad input.

mod common;

use std::thread;

use common::init;
use dao::{Comm, Place, Status, WholeLocation, WholeMemory, WholeType};

/// Runs `f` on every rank of a local communicator over `places`, each rank
/// on a thread of its own; the results in rank order.
fn on_ranks<R: Send>(places: &[Place], f: impl Fn(&Comm) -> R + Sync) -> Vec<R> {
    let comms = Comm::create_local(places).unwrap();
    assert_eq!(comms.len(), places.len());
    let f = &f;
    thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| s.spawn(move || f(&comm)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn two_sims() -> [Place; 2] {
    [Place::sim(0), Place::sim(1)]
}

/// A small deterministic generator (no crates from a registry).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// The value of entry `i` in the tests: three words.
fn entry(i: usize, seed: u32) -> [u32; 3] {
    let i = i as u32;
    [i, i.wrapping_mul(7919) ^ seed, !i]
}

#[test]
fn communicator_queries() {
    let _g = init();
    let places = two_sims();
    let infos = on_ranks(&places, |comm| {
        let rank = comm.rank().unwrap();
        assert_eq!(comm.size().unwrap(), 2);
        for (r, p) in places.iter().enumerate() {
            assert_eq!(comm.rank_place(r).unwrap(), *p);
        }
        let err = comm.rank_place(2).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument);
        assert!(!err.message().is_empty());
        comm.barrier().unwrap();
        let info = comm.info().unwrap();
        assert_eq!(info.rank, rank);
        assert_eq!(info.place, places[rank]);
        assert!(format!("{comm:?}").contains("rank"));
        comm.barrier().unwrap();
        info
    });
    for (r, info) in infos.iter().enumerate() {
        assert_eq!((info.rank, info.size), (r, 2));
        assert_eq!(info.transport, "in-process");
        assert!(info.shares_address_space && info.shares_host_memory);
    }
    // A destroy that reports its status.
    for comm in Comm::create_local(&[Place::cpu()]).unwrap() {
        comm.destroy().unwrap();
    }
}

#[test]
fn names() {
    let names: Vec<_> = WholeType::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["continuous", "chunked", "distributed"]);
    assert_eq!(WholeType::Unknown(9).name(), "unknown");
    assert_eq!(WholeLocation::Device.to_string(), "device");
    assert_eq!(WholeLocation::Host.name(), "host");
    assert_eq!(WholeLocation::Unknown(-1).name(), "unknown");
    assert_eq!(WholeType::from_raw(2), WholeType::Distributed);
    assert!(WholeType::Chunked.is_mapped() && !WholeType::Distributed.is_mapped());
}

#[test]
fn scatter_then_gather_on_every_type_and_location() {
    let _g = init();
    const N: usize = 1001; // entries of 12 bytes: not a power of two
    const ES: usize = 12;
    for kind in WholeType::ALL {
        for location in WholeLocation::ALL {
            let seed = (kind.to_raw() * 10 + location.to_raw()) as u32;
            on_ranks(&two_sims(), |comm| {
                let rank = comm.rank().unwrap();
                // In-process communicators build every type on SIM and host.
                comm.supported(kind, location).unwrap();
                let w = WholeMemory::new(comm, kind, location, N * ES, ES).unwrap();
                let info = w.info().unwrap();
                assert_eq!((info.kind, info.location), (kind, location));
                assert_eq!(
                    (info.total_size, info.entry_size, info.entry_count),
                    (N * ES, ES, N)
                );
                assert_eq!((info.rank, info.size), (rank, 2));
                let want_place = match location {
                    WholeLocation::Host => Place::cpu(),
                    _ => Place::sim(rank as i32),
                };
                assert_eq!(info.place, want_place);

                // Each rank writes every other entry, across both parts.
                let mine: Vec<i64> = (rank as i64..N as i64).step_by(2).collect();
                let values: Vec<[u32; 3]> = mine.iter().map(|&i| entry(i as usize, seed)).collect();
                w.scatter(&values, &mine).unwrap();
                comm.barrier().unwrap();

                // Random indices, repeats allowed, from both parts.
                let mut rng = Lcg(seed as u64 * 31 + rank as u64);
                let idx: Vec<i64> = (0..777).map(|_| rng.next(N as u64) as i64).collect();
                let mut got = vec![[0u32; 3]; idx.len()];
                w.gather(&idx, &mut got).unwrap();
                for (k, &i) in idx.iter().enumerate() {
                    assert_eq!(
                        got[k],
                        entry(i as usize, seed),
                        "{kind} {location} entry {i}"
                    );
                }
                // The same bytes as u8 (any Pod type of the right length).
                let mut bytes = vec![0u8; 2 * ES];
                w.gather(&[0, N as i64 - 1], &mut bytes).unwrap();
                assert_eq!(&bytes[..4], &0u32.to_ne_bytes());
                // Nothing to copy.
                w.gather::<u8>(&[], &mut []).unwrap();
                w.scatter::<u8>(&[], &[]).unwrap();
                // Every rank together, rank 1 with fewer indices.
                let n = idx.len() - rank as usize * 100;
                let mut together = vec![[0u32; 3]; n];
                w.gather_collective(&idx[..n], &mut together).unwrap();
                assert_eq!(&together[..], &got[..n]);
                w.scatter_collective(&together, &idx[..n]).unwrap();
                // One rank's bad index fails both.
                let bad = if rank == 0 { N as i64 } else { 0 };
                let e = w.gather_collective(&[bad], &mut together[..1]).unwrap_err();
                assert_eq!(e.status(), Status::InvalidArgument);
                comm.barrier().unwrap();

                // The local part through its pointer.
                let (ptr, range) = w.local().unwrap();
                assert_eq!(range, w.partition(rank).unwrap());
                assert!(!ptr.is_null());
                let first = unsafe { ptr.cast::<[u32; 3]>().read_unaligned() };
                assert_eq!(first, entry(range.first_entry, seed));

                // Other ranks' parts: mapped types only.
                let other = 1 - rank;
                let orange = w.partition(other).unwrap();
                match w.rank_ptr(other) {
                    Ok(p) => {
                        assert!(kind.is_mapped());
                        let v = unsafe { p.cast::<[u32; 3]>().read_unaligned() };
                        assert_eq!(v, entry(orange.first_entry, seed));
                    }
                    Err(e) => {
                        assert_eq!(kind, WholeType::Distributed);
                        assert_eq!(e.status(), Status::Unsupported, "{e}");
                    }
                }
                assert_eq!(w.rank_ptr(rank).unwrap(), ptr);
                match w.base() {
                    Ok(base) => {
                        assert_eq!(kind, WholeType::Continuous);
                        let last =
                            unsafe { base.add((N - 1) * ES).cast::<[u32; 3]>().read_unaligned() };
                        assert_eq!(last, entry(N - 1, seed));
                        assert_eq!(unsafe { base.add(range.byte_offset) }, ptr);
                    }
                    Err(e) => {
                        assert_ne!(kind, WholeType::Continuous);
                        assert_eq!(e.status(), Status::Unsupported, "{e}");
                        assert!(!e.message().is_empty());
                    }
                }
                // Everyone has read before anyone writes the next object.
                comm.barrier().unwrap();
                assert!(format!("{w:?}").contains("entry_size"));
                w.destroy().unwrap();
            });
        }
    }
}

#[test]
fn partition_edge_cases() {
    let _g = init();
    let four = [Place::sim(0), Place::sim(1), Place::cpu(), Place::sim(0)];
    // (entries, expected counts per rank)
    let cases: [(usize, [usize; 4]); 4] = [
        (15, [4, 4, 4, 3]),
        (3, [1, 1, 1, 0]),
        (1, [1, 0, 0, 0]),
        (8, [2, 2, 2, 2]),
    ];
    on_ranks(&four, |comm| {
        let rank = comm.rank().unwrap();
        for (n, counts) in cases {
            for kind in WholeType::ALL {
                let es = 24;
                let w = WholeMemory::new(comm, kind, WholeLocation::Device, n * es, es).unwrap();
                let mut first = 0;
                for (r, &count) in counts.iter().enumerate() {
                    let p = w.partition(r).unwrap();
                    assert_eq!(p.rank, r);
                    assert_eq!(
                        (p.first_entry, p.entry_count),
                        (first, count),
                        "{n} on rank {r}"
                    );
                    assert_eq!((p.byte_offset, p.byte_size), (first * es, count * es));
                    for i in p.entries() {
                        assert_eq!(w.entry_rank(i as i64).unwrap(), r);
                    }
                    first += count;
                }
                assert_eq!(first, n);
                assert_eq!(
                    w.partition(4).unwrap_err().status(),
                    Status::InvalidArgument
                );
                for bad in [-1, n as i64, i64::MAX] {
                    let e = w.entry_rank(bad).unwrap_err();
                    assert_eq!(e.status(), Status::InvalidArgument);
                    assert!(!e.message().is_empty());
                }
                let (ptr, range) = w.local().unwrap();
                assert_eq!(range.entry_count, counts[rank]);
                if counts[rank] == 0 && kind != WholeType::Continuous {
                    assert!(ptr.is_null(), "{kind}: a rank without entries has no part");
                }
                drop(w); // collective, on every rank in the same order
            }
        }
    });
}

#[test]
fn store_and_load_across_types() {
    let _g = init();
    let dir = std::env::temp_dir().join(format!("dao-rust-whole-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("table.bin");
    let small = dir.join("small.bin");
    std::fs::write(&small, [0u8; 5]).unwrap();
    const N: usize = 300;
    const ES: usize = 12;
    on_ranks(&two_sims(), |comm| {
        let rank = comm.rank().unwrap();
        let all: Vec<i64> = (0..N as i64).collect();
        {
            let w = WholeMemory::new(
                comm,
                WholeType::Distributed,
                WholeLocation::Device,
                N * ES,
                ES,
            )
            .unwrap();
            if rank == 0 {
                let values: Vec<[u32; 3]> = (0..N).map(|i| entry(i, 5)).collect();
                w.scatter(&values, &all).unwrap();
            }
            w.store(&file).unwrap();
        }
        let expected: Vec<u8> = (0..N)
            .flat_map(|i| entry(i, 5))
            .flat_map(u32::to_ne_bytes)
            .collect();
        if rank == 0 {
            assert_eq!(std::fs::read(&file).unwrap(), expected);
        }
        let w =
            WholeMemory::new(comm, WholeType::Continuous, WholeLocation::Host, N * ES, ES).unwrap();
        w.load(&file).unwrap();
        let mut got = vec![0u8; N * ES];
        w.gather(&all, &mut got).unwrap();
        assert_eq!(got, expected);

        let e = w.load(dir.join("missing.bin")).unwrap_err();
        assert_eq!(e.status(), Status::NotFound, "{e}");
        let e = w.load(&small).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument, "{e}");
        assert!(!e.message().is_empty());
        // A NUL byte never reaches C (and is refused on every rank alike).
        let e = w.store("bad\0path").unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        comm.barrier().unwrap();
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_gives_status_and_message() {
    let _g = init();
    let e = Comm::create_local(&[]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(!e.message().is_empty());
    let e = Comm::create_local(&[Place::sim(0), Place::sim(7)]).unwrap_err();
    assert_eq!(e.status(), Status::NoDevice);
    assert!(!e.message().is_empty(), "{e}");

    on_ranks(&two_sims(), |comm| {
        let rank = comm.rank().unwrap();
        let make = |total, es| {
            WholeMemory::new(comm, WholeType::Chunked, WholeLocation::Device, total, es)
        };
        for (total, es) in [(0, 4), (100, 0), (100, 7)] {
            let e = make(total, es).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument, "{total} {es}");
            assert!(!e.message().is_empty());
        }
        // Ranks that disagree: every rank gets the error, no one waits.
        let e = make(64 * (rank + 1), 8).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(!e.message().is_empty());
        // More than a SIM device holds.
        let e = make(256 << 20, 8).unwrap_err();
        assert_eq!(e.status(), Status::OutOfMemory, "{e}");
        let e =
            WholeMemory::new(comm, WholeType::Unknown(7), WholeLocation::Host, 64, 8).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            comm.supported(WholeType::Chunked, WholeLocation::Unknown(5))
                .unwrap_err()
                .status(),
            Status::InvalidArgument
        );

        let w = make(80, 8).unwrap();
        let mut dst = [0u64; 2];
        let e = w.gather(&[1, 10], &mut dst).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("10"), "{e}");
        let e = w.scatter(&[1u64, 2], &[0, -3]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(!e.message().is_empty());
        // Buffers of the wrong length are refused by the binding.
        let e = w.gather(&[1, 2, 3], &mut dst).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        let e = w.scatter(&[1u32; 3], &[0]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        comm.barrier().unwrap();
    });
}

#[test]
fn transport_hooks_refuse_bad_input() {
    let _g = init();
    let e = dao::transport_error(Status::Backend, "MPI is not initialised").unwrap();
    assert_eq!(e.status(), Status::Backend);
    assert_eq!(e.message(), "MPI is not initialised");
    assert_eq!(
        dao::transport_error(Status::Backend, "a\0b")
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    // A transport whose struct_size is too small: refused, and (per whole.h)
    // not taken over by libdao, so nothing of it is called.
    let transport = dao::ffi::dao_comm_transport {
        struct_size: 0,
        self_: std::ptr::null_mut(),
        rank: 0,
        size: 1,
        name: std::ptr::null(),
        shares_host_memory: 0,
        last_error: None,
        barrier: None,
        allgather: None,
        window_create: None,
        window_allocate: None,
        window_get: None,
        window_put: None,
        window_complete: None,
        window_free: None,
        shared_allocate: None,
        shared_query: None,
        shared_free: None,
        destroy: None,
        window_get_many: None,
        window_put_many: None,
        alltoall: None,
        alltoallv: None,
        exchange_limit: 0,
    };
    let e = unsafe { Comm::from_transport(&transport, Place::cpu()) }.unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(!e.message().is_empty());
}
