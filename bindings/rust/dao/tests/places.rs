//! Places, place-level memory, status codes and versions, on every place of
//! this machine: CPU, the two simulated devices, and the CUDA kinds (which
//! must report no device when the machine has no GPU).

mod common;

use common::{init, pattern, places_with_devices, MIB, SIM_CAPACITY};
use dao::{Place, PlaceKind, Status};

#[test]
fn version_matches_the_headers() {
    let _g = init();
    let v = dao::version();
    let parts: Vec<u32> = v.split('.').map(|p| p.parse().expect("a number")).collect();
    assert_eq!(parts.len(), 3, "{v}");
    assert_eq!(
        parts[0] * 10000 + parts[1] * 100 + parts[2],
        dao::version_number()
    );
    assert_eq!(
        dao::version_number() / 10000,
        dao::HEADER_VERSION_NUMBER / 10000
    );
    assert_eq!(v, dao::ffi::DAO_VERSION_STRING);
}

#[test]
fn status_codes_round_trip() {
    let known = [
        (0, Status::Ok, "success"),
        (1, Status::InvalidArgument, "invalid argument"),
        (2, Status::OutOfMemory, "out of memory"),
        (3, Status::InvalidPointer, "invalid pointer"),
        (4, Status::Unsupported, "operation not supported"),
        (5, Status::NoDevice, "no such device"),
        (6, Status::Timeout, "timed out"),
        (7, Status::Closed, "closed"),
        (
            8,
            Status::Backend,
            "backend (driver or operating system) error",
        ),
        (9, Status::Internal, "internal error"),
        (
            10,
            Status::InvalidState,
            "operation not allowed in the current state",
        ),
        (11, Status::Busy, "resource still in use"),
        (12, Status::NotFound, "not found"),
    ];
    for (code, status, text) in known {
        assert_eq!(Status::from_code(code), status);
        assert_eq!(status.code(), code);
        assert_eq!(status.description(), text);
        assert_eq!(status.to_string(), text);
    }
    // Codes of a newer library are kept as numbers.
    assert_eq!(Status::from_code(13), Status::Unknown(13));
    assert_eq!(Status::Unknown(4242).code(), 4242);
    assert_eq!(Status::Unknown(4242).description(), "unknown status");
    let e = dao::Error::new(Status::Busy, "three blocks");
    assert_eq!(e.to_string(), "resource still in use: three blocks");
}

#[test]
fn kinds_have_names_counts_and_descriptions() {
    let _g = init();
    let names = ["cpu", "cuda", "cuda_pinned", "cuda_managed", "sim"];
    for (i, kind) in PlaceKind::ALL.iter().enumerate() {
        assert_eq!(kind.to_raw(), i as i32);
        assert_eq!(PlaceKind::from_raw(i as i32), *kind);
        assert_eq!(kind.name(), names[i]);
        assert!(!kind.backend_description().is_empty());
    }
    assert_eq!(PlaceKind::Cpu.device_count().unwrap(), 1);
    assert_eq!(PlaceKind::Sim.device_count().unwrap(), 2);
    assert_eq!(PlaceKind::Unknown(77).name(), "unknown");
    assert_eq!(
        PlaceKind::Unknown(77).backend_description(),
        "unknown place kind"
    );
    let err = PlaceKind::Unknown(77).device_count().unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(!err.message().is_empty());
    // Pinned memory exists exactly when a CUDA device does.
    let cuda = PlaceKind::Cuda.device_count().unwrap();
    assert_eq!(
        PlaceKind::CudaPinned.device_count().unwrap(),
        usize::from(cuda > 0)
    );
    assert_eq!(PlaceKind::CudaManaged.device_count().unwrap(), cuda);
}

#[test]
fn constructors_give_the_c_values() {
    assert_eq!(Place::cpu(), Place::new(PlaceKind::Cpu, 0));
    assert_eq!(Place::cuda(3), Place::new(PlaceKind::Cuda, 3));
    assert_eq!(Place::cuda_pinned(), Place::new(PlaceKind::CudaPinned, 0));
    assert_eq!(
        Place::cuda_managed(1),
        Place::new(PlaceKind::CudaManaged, 1)
    );
    assert_eq!(
        Place::sim(1).to_raw(),
        dao::ffi::dao_place {
            kind: dao::ffi::DAO_PLACE_SIM,
            device: 1
        }
    );
    assert_eq!(Place::sim(1).to_string(), "sim:1");
    assert_eq!(Place::cuda_managed(2).to_string(), "cuda_managed:2");
    assert!(Place::cpu().is_host_accessible());
    assert!(Place::sim(0).is_host_accessible());
    assert!(Place::cuda_pinned().is_host_accessible());
    assert!(Place::cuda_managed(0).is_host_accessible());
    assert!(!Place::cuda(0).is_host_accessible());
    assert!(!Place::new(PlaceKind::Unknown(9), 0).is_host_accessible());
}

#[test]
fn simulated_devices_have_their_capacity() {
    let _g = init();
    for d in 0..2 {
        let info = Place::sim(d).memory_info().unwrap();
        assert_eq!(info.total, SIM_CAPACITY);
        assert!(info.free <= info.total);
    }
    let err = Place::sim(2).memory_info().unwrap_err();
    assert_eq!(err.status(), Status::NoDevice);
    assert!(err.message().contains("sim"), "{err}");
    // The configuration is fixed once in use: the same one is accepted,
    // another is refused and changes nothing.
    dao::sim::configure(&[SIM_CAPACITY, SIM_CAPACITY]).unwrap();
    let err = dao::sim::configure(&[MIB]).unwrap_err();
    assert_eq!(err.status(), Status::InvalidState);
    assert!(!err.message().is_empty());
    assert_eq!(
        dao::sim::configure_default(2).unwrap_err().status(),
        Status::InvalidState
    );
    assert_eq!(
        dao::sim::configure(&vec![MIB; dao::sim::MAX_DEVICES + 1])
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    assert_eq!(
        dao::sim::configure(&[0, MIB]).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(PlaceKind::Sim.device_count().unwrap(), 2);
}

#[test]
fn simulated_devices_count_their_costs() {
    use dao::sim::{self, SimCost, SimOp};
    let _g = init();
    // The tests run with the default profile, "none": calls are counted,
    // no time is charged. Once the devices are in use it is fixed.
    assert_eq!(sim::profile().unwrap(), "none");
    sim::set_profile("none").unwrap();
    let err = sim::set_profile("h200").unwrap_err();
    assert_eq!(err.status(), Status::InvalidState);
    assert!(!err.message().is_empty());
    let err = sim::set_profile("tpu7").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("tpu7"), "{err}");
    assert!(err.message().contains("h200"), "lists the profiles: {err}");
    assert_eq!(
        sim::set_profile("").unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        sim::set_profile("no\0ne").unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(sim::profile().unwrap(), "none");

    assert_eq!(SimOp::ALL.len(), dao::ffi::DAO_SIM_OP_COUNT as usize);
    for (i, op) in SimOp::ALL.iter().enumerate() {
        assert_eq!(op.to_raw(), i as i32);
        assert_eq!(SimOp::from_raw(i as i32), *op);
        assert_ne!(op.name(), "unknown");
    }
    assert_eq!(SimOp::Alloc.name(), "alloc");
    assert_eq!(SimOp::CopyToDevice.to_string(), "copy_to_device");
    assert_eq!(SimOp::from_raw(14), SimOp::Unknown(14));
    assert_eq!(SimOp::Unknown(14).name(), "unknown");

    sim::reset_costs(0).unwrap();
    for op in SimOp::ALL {
        assert_eq!(sim::cost(0, op).unwrap(), SimCost::default(), "{op}");
    }
    // A system allocator takes every block from the device: one segment
    // allocation of the block's bytes, then one free.
    let system = dao::Allocator::new(Place::sim(0), Some("system"), "").unwrap();
    let block = system.alloc(MIB, None).unwrap();
    let alloc = sim::cost(0, SimOp::Alloc).unwrap();
    assert_eq!(alloc.count, 1);
    assert!(alloc.bytes >= MIB as u64, "{alloc:?}");
    assert_eq!(alloc.ns, 0, "profile none charges no time");
    drop(block);
    let free = sim::cost(0, SimOp::Free).unwrap();
    assert_eq!((free.count, free.ns), (1, 0));
    sim::cost(1, SimOp::Alloc).unwrap();
    sim::reset_costs(0).unwrap();
    assert_eq!(sim::cost(0, SimOp::Alloc).unwrap(), SimCost::default());

    // Bad input: a missing device, an operation the library does not know.
    for device in [2, -1, 64] {
        let err = sim::cost(device, SimOp::Alloc).unwrap_err();
        assert_eq!(err.status(), Status::NoDevice, "{err}");
        assert!(!err.message().is_empty());
        assert_eq!(
            sim::reset_costs(device).unwrap_err().status(),
            Status::NoDevice
        );
    }
    for op in [SimOp::Unknown(14), SimOp::Unknown(-1)] {
        let err = sim::cost(0, op).unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument, "{err}");
        assert!(err.message().contains("operation"), "{err}");
    }
}

#[test]
fn cpu_memory_info_is_the_machine() {
    let _g = init();
    let info = Place::cpu().memory_info().unwrap();
    assert!(info.total > 0 && info.free <= info.total);
    assert_eq!(
        Place::new(PlaceKind::Cpu, 1)
            .memory_info()
            .unwrap_err()
            .status(),
        Status::NoDevice
    );
    assert_eq!(
        Place::new(PlaceKind::Cpu, -1)
            .memory_info()
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
}

/// On every place with a device: dao_alloc, write and read back where the
/// host may touch the memory, dao_used before, during and after.
#[test]
fn every_place_allocates_and_counts() {
    let _g = init();
    let places = places_with_devices();
    assert!(places.contains(&Place::cpu()));
    assert!(places.contains(&Place::sim(0)) && places.contains(&Place::sim(1)));
    for place in places {
        let before = place.used().unwrap();
        let sizes = [4096usize, MIB, 3 * MIB + 1];
        let blocks: Vec<_> = sizes.iter().map(|&s| place.alloc(s).unwrap()).collect();
        for (b, &s) in blocks.iter().zip(&sizes) {
            assert_eq!(b.size(), s);
            assert_eq!(b.place(), place);
            assert_eq!(b.as_ptr() as usize % 256, 0, "{place}: 256-byte alignment");
            assert!(b.usable_size().unwrap() >= s);
        }
        let during = place.used().unwrap();
        assert!(
            during >= before + sizes.iter().sum::<usize>(),
            "{place}: {before} -> {during}"
        );
        drop(blocks);
        assert_eq!(place.used().unwrap(), before, "{place}: everything freed");

        if place.is_host_accessible() {
            let data = pattern(100_000, place.device() as u32);
            let mut buf = place.buffer_from_slice(&data).unwrap();
            assert_eq!(&buf[..], &data[..]);
            buf[7] = 7;
            assert_eq!(buf[7], 7);
            let zeroed = place.buffer_zeroed::<f64>(1000).unwrap();
            assert!(zeroed.iter().all(|&x| x == 0.0));
            assert_eq!(zeroed.place(), place);
        }
    }
}

#[test]
fn zero_bytes_allocate_nothing() {
    let _g = init();
    let before = Place::cpu().used().unwrap();
    let empty = Place::cpu().alloc(0).unwrap();
    assert!(empty.as_ptr().is_null() && empty.is_empty());
    assert_eq!(empty.usable_size().unwrap(), 0);
    assert_eq!(Place::cpu().used().unwrap(), before);
    let none = Place::sim(0).buffer_zeroed::<u32>(0).unwrap();
    assert!(none.is_empty());
    assert_eq!(&none[..], &[] as &[u32]);
}

/// CUDA places: on a machine without a GPU every one of them reports
/// NoDevice with the reason; with one, they allocate.
#[test]
fn cuda_places_report_no_device_or_work() {
    let _g = init();
    let cuda = PlaceKind::Cuda.device_count().unwrap();
    for place in [Place::cuda(0), Place::cuda_pinned(), Place::cuda_managed(0)] {
        if cuda == 0 {
            let err = place.alloc(MIB).unwrap_err();
            assert_eq!(err.status(), Status::NoDevice, "{place}");
            assert!(!err.message().is_empty(), "{place}: the message says why");
            assert_eq!(place.used().unwrap_err().status(), Status::NoDevice);
            assert_eq!(place.memory_info().unwrap_err().status(), Status::NoDevice);
            assert_eq!(
                dao::Stream::new(place).unwrap_err().status(),
                Status::NoDevice
            );
        } else {
            let block = place.alloc(MIB).unwrap();
            assert_eq!(block.as_ptr() as usize % 256, 0);
        }
    }
    // A device past the last one is never there.
    let err = Place::cuda(cuda as i32).alloc(MIB).unwrap_err();
    assert_eq!(err.status(), Status::NoDevice);
    // Device memory has no host view, whether or not the device exists.
    let err = Place::cuda(0).buffer_zeroed::<u8>(16).unwrap_err();
    assert_eq!(err.status(), Status::Unsupported);
    assert!(err.message().contains("cuda:0"), "{err}");
}

#[test]
fn bad_places_and_sizes_are_refused() {
    let _g = init();
    let unknown = Place::new(PlaceKind::Unknown(99), 0);
    let err = unknown.alloc(16).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(!err.message().is_empty());
    assert_eq!(
        Place::sim(-1).alloc(16).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        Place::sim(5).alloc(16).unwrap_err().status(),
        Status::NoDevice
    );
    // More than the device holds: the message tells the size.
    let err = Place::sim(1).alloc(SIM_CAPACITY + 1).unwrap_err();
    assert_eq!(err.status(), Status::OutOfMemory);
    assert!(err.message().contains("capacity"), "{err}");
    // An element count whose byte size overflows is refused before C.
    let err = Place::cpu()
        .buffer_zeroed::<u64>(usize::MAX / 2)
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("overflow"), "{err}");
    // Too large for the machine, asked of C.
    assert_eq!(
        Place::cpu().alloc(usize::MAX - 4096).unwrap_err().status(),
        Status::OutOfMemory
    );
}

#[test]
fn default_configs_come_from_the_environment() {
    let _g = init();
    if std::env::var_os("DAO_ALLOCATOR").is_some()
        || std::env::var_os("DAO_ALLOCATOR_CPU").is_some()
        || std::env::var_os("DAO_ALLOCATOR_SIM").is_some()
    {
        eprintln!("skipped: DAO_ALLOCATOR* is set");
        return;
    }
    assert_eq!(PlaceKind::Cpu.default_config().unwrap().strategy, "buddy");
    assert_eq!(PlaceKind::Sim.default_config().unwrap().strategy, "caching");
    let info = dao::Allocator::for_place(Place::sim(0))
        .unwrap()
        .info()
        .unwrap();
    assert_eq!(info.strategy, "caching");
    assert_eq!(info.place, Place::sim(0));
    assert_eq!(
        PlaceKind::Unknown(50)
            .default_config()
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
}

#[test]
fn errors_carry_the_message_of_their_own_thread() {
    let _g = init();
    let here = Place::sim(9).alloc(1).unwrap_err();
    let there = std::thread::spawn(|| Place::new(PlaceKind::Unknown(42), 0).alloc(1).unwrap_err())
        .join()
        .unwrap();
    assert_eq!(here.status(), Status::NoDevice);
    assert_eq!(there.status(), Status::InvalidArgument);
    assert_ne!(here.message(), there.message());
    assert!(here.message().contains('9'), "{here}");
    // A success leaves the message as it was, as errno does; the Error keeps
    // its own copy either way.
    let _ = Place::cpu().used().unwrap();
    assert!(here.message().contains('9'));
}
