//! Allocator objects of every strategy on every place: allocation, data,
//! statistics equal to what the test counts, detailed statistics,
//! snapshots and their JSON, trim, stream-ordered reuse, and bad input.

mod common;

use common::{init, pattern, places_with_devices, MIB, SIM_CAPACITY};
use dao::{Allocator, BlockState, Place, StatMetric, StatPool, Status, Stream};

const STRATEGIES: [&str; 3] = ["buddy", "caching", "system"];

/// A small deterministic generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Random allocations and frees; the allocator's statistics must equal
/// what the test counted.
#[test]
fn stats_equal_what_the_test_counts() {
    let _g = init();
    for place in [Place::cpu(), Place::sim(0), Place::sim(1)] {
        for strategy in STRATEGIES {
            let a = Allocator::new(place, Some(strategy), "").unwrap();
            let mut rng = Rng(7);
            let mut live = Vec::new();
            let (mut allocs, mut frees) = (0u64, 0u64);
            for _ in 0..300 {
                if live.len() < 40 && (live.is_empty() || rng.next() % 3 != 0) {
                    let size = 1 + (rng.next() % (256 * 1024)) as usize;
                    live.push(a.alloc(size, None).unwrap());
                    allocs += 1;
                } else {
                    let i = (rng.next() as usize) % live.len();
                    live.swap_remove(i);
                    frees += 1;
                }
                if allocs % 37 == 0 {
                    let s = a.stats().unwrap();
                    assert_eq!(s.live_blocks, live.len() as u64);
                }
            }
            let s = a.stats().unwrap();
            let requested: usize = live.iter().map(|b| b.size()).sum();
            let usable: usize = live.iter().map(|b| b.usable_size().unwrap()).sum();
            let what = format!("{strategy} on {place}");
            assert_eq!(s.alloc_count, allocs, "{what}");
            assert_eq!(s.free_count, frees, "{what}");
            assert_eq!(s.live_blocks, live.len() as u64, "{what}");
            assert_eq!(s.requested_bytes, requested as u64, "{what}");
            assert_eq!(s.allocated_bytes, usable as u64, "{what}: block sizes");
            assert!(s.peak_allocated_bytes >= s.allocated_bytes);
            assert!(s.reserved_bytes >= s.allocated_bytes, "{what}");
            assert_eq!(s.failed_alloc_count, 0);
            // The detailed statistics agree with the summary.
            let allocated = a.stat(StatMetric::AllocatedBytes, StatPool::All).unwrap();
            assert_eq!(allocated.current, s.allocated_bytes as i64, "{what}");
            assert_eq!(
                allocated.allocated - allocated.freed,
                allocated.current,
                "{what}"
            );
            let req = a.stat(StatMetric::RequestedBytes, StatPool::All).unwrap();
            assert_eq!(req.current, requested as i64, "{what}");

            // Every block holds its own data.
            for (i, b) in live.iter_mut().enumerate() {
                let n = b.size() / 4;
                let p = b.as_mut_ptr().cast::<u32>();
                let data = pattern(n, i as u32);
                // SAFETY: host-accessible memory of at least n * 4 bytes.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, n) };
            }
            for (i, b) in live.iter().enumerate() {
                let n = b.size() / 4;
                // SAFETY: as above, written just before.
                let got = unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<u32>(), n) };
                assert!(
                    got == pattern(n, i as u32).as_slice(),
                    "{what}: block {i} changed"
                );
            }

            let peak = s.peak_allocated_bytes;
            drop(live);
            let s = a.stats().unwrap();
            assert_eq!(
                (s.live_blocks, s.allocated_bytes, s.requested_bytes),
                (0, 0, 0),
                "{what}"
            );
            assert_eq!(s.free_count, s.alloc_count);
            assert_eq!(s.peak_allocated_bytes, peak);
            a.reset_peak_stats().unwrap();
            assert_eq!(a.stats().unwrap().peak_allocated_bytes, 0, "{what}");
            a.reset_accumulated_stats().unwrap();
            let s = a.stats().unwrap();
            assert_eq!((s.alloc_count, s.free_count), (0, 0), "{what}");
            let allocated = a.stat(StatMetric::AllocatedBytes, StatPool::All).unwrap();
            assert_eq!((allocated.allocated, allocated.freed), (0, 0), "{what}");
            a.trim().unwrap();
            if strategy != "caching" {
                assert_eq!(a.stats().unwrap().reserved_bytes, 0, "{what}: trimmed");
            }
        }
    }
}

#[test]
fn every_strategy_on_every_place() {
    let _g = init();
    for place in places_with_devices() {
        for strategy in STRATEGIES {
            let a = Allocator::new(place, Some(strategy), "").unwrap();
            let info = a.info().unwrap();
            assert_eq!(info.place, place);
            assert_eq!(info.strategy, strategy);
            assert_eq!(a.place(), place);
            assert!(a.is_owned());
            // The effective config is accepted as it is.
            Allocator::new(place, Some(strategy), &info.config).unwrap();
            let block = a.alloc(MIB + 3, None).unwrap();
            assert_eq!(block.as_ptr() as usize % 256, 0);
            assert_eq!(block.place(), place);
            if place.is_host_accessible() {
                let mut v = a.buffer_zeroed::<u16>(1000, None).unwrap();
                assert!(v.iter().all(|&x| x == 0));
                v.iter_mut().enumerate().for_each(|(i, x)| *x = i as u16);
                assert_eq!(v[999], 999);
            } else {
                let err = a.buffer_zeroed::<u16>(1000, None).unwrap_err();
                assert_eq!(err.status(), Status::Unsupported);
            }
            assert_eq!(a.stats().unwrap().live_blocks, 1, "only the block is live");
        }
    }
}

#[test]
fn bad_configs_are_refused_with_a_message() {
    let _g = init();
    let err = Allocator::new(Place::cpu(), Some("fastest"), "").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("fastest"), "{err}");
    let err = Allocator::new(Place::cpu(), Some("buddy"), "chunk_sise=1MiB").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("chunk_sise"), "{err}");
    let err = Allocator::new(Place::cpu(), Some("buddy"), "chunk_size=lots").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    let err =
        Allocator::new(Place::cpu(), Some("buddy"), "min_block=256,min_block=512").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    let err = Allocator::new(Place::cpu(), Some("system"), "max_pool=1MiB").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    // Interior NUL bytes are refused before C sees a shortened string.
    let err = Allocator::new(Place::cpu(), Some("buddy\0x"), "").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("NUL"));
    let err = Allocator::new(Place::cpu(), None, "max_pool=1MiB\0").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert_eq!(
        Allocator::new(Place::sim(7), Some("buddy"), "")
            .unwrap_err()
            .status(),
        Status::NoDevice
    );
    // The default strategy of a place.
    let a = Allocator::new(Place::sim(0), None, "").unwrap();
    assert!(STRATEGIES.contains(&a.info().unwrap().strategy.as_str()));
}

#[test]
fn a_capped_pool_runs_out_and_counts_it() {
    let _g = init();
    let a = Allocator::new(Place::cpu(), Some("buddy"), "chunk_size=1MiB,max_pool=4MiB").unwrap();
    let blocks: Vec<_> = (0..4).map(|_| a.alloc(MIB, None).unwrap()).collect();
    let err = a.alloc(MIB, None).unwrap_err();
    assert_eq!(err.status(), Status::OutOfMemory);
    assert!(!err.message().is_empty());
    let s = a.stats().unwrap();
    assert_eq!(s.failed_alloc_count, 1);
    assert_eq!(s.reserved_bytes, 4 * MIB as u64);
    assert_eq!(s.allocated_bytes, 4 * MIB as u64);
    drop(blocks);
    assert_eq!(a.trim().unwrap(), 4 * MIB);
    assert_eq!(a.stats().unwrap().reserved_bytes, 0);
    // Past the device's capacity on SIM, for every strategy.
    for strategy in STRATEGIES {
        let a = Allocator::new(Place::sim(1), Some(strategy), "").unwrap();
        let err = a.alloc(2 * SIM_CAPACITY, None).unwrap_err();
        assert_eq!(err.status(), Status::OutOfMemory, "{strategy}");
        assert!(err.message().contains("capacity"), "{strategy}: {err}");
    }
}

#[test]
fn place_default_allocators_are_borrowed() {
    let _g = init();
    let a = Allocator::for_place(Place::cpu()).unwrap();
    assert!(!a.is_owned());
    let before = a.stats().unwrap().live_blocks;
    let block = Place::cpu().alloc(1000).unwrap();
    assert_eq!(a.stats().unwrap().live_blocks, before + 1);
    assert!(block.usable_size().unwrap() >= 1000);
    drop(block);
    // The library refuses to destroy a place default, and says so.
    let err = a.destroy().unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(!err.message().is_empty());
    // ... and it still works.
    let again = Allocator::for_place(Place::cpu()).unwrap();
    drop(again.alloc(10, None).unwrap());
}

#[test]
fn explicit_destroy_reports_success() {
    let _g = init();
    let a = Allocator::new(Place::sim(0), Some("caching"), "").unwrap();
    drop(a.alloc(100, None).unwrap());
    a.destroy().unwrap();
}

#[test]
fn detailed_stats_by_strategy() {
    let _g = init();
    let buddy = Allocator::new(Place::cpu(), Some("buddy"), "").unwrap();
    let _b = buddy.alloc(1000, None).unwrap();
    assert_eq!(
        buddy
            .stat(StatMetric::AllocatedBlocks, StatPool::All)
            .unwrap()
            .current,
        1
    );
    // Without pending frees, active is allocated.
    assert_eq!(
        buddy.stat(StatMetric::ActiveBytes, StatPool::All).unwrap(),
        buddy
            .stat(StatMetric::AllocatedBytes, StatPool::All)
            .unwrap()
    );
    assert_eq!(
        buddy
            .stat(StatMetric::InactiveSplitBytes, StatPool::All)
            .unwrap_err()
            .status(),
        Status::Unsupported
    );
    assert_eq!(
        buddy
            .stat(StatMetric::InactiveSplitBlocks, StatPool::All)
            .unwrap_err()
            .status(),
        Status::Unsupported
    );
    assert_eq!(
        buddy
            .stat(StatMetric::AllocatedBytes, StatPool::Small)
            .unwrap_err()
            .status(),
        Status::Unsupported
    );
    assert_eq!(buddy.snapshot().unwrap_err().status(), Status::Unsupported);
    assert_eq!(
        buddy.snapshot_json().unwrap_err().status(),
        Status::Unsupported
    );
    assert_eq!(
        buddy
            .stat(StatMetric::Unknown(99), StatPool::All)
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    assert_eq!(
        buddy
            .stat(StatMetric::AllocatedBytes, StatPool::Unknown(5))
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );

    let caching = Allocator::new(Place::sim(0), Some("caching"), "").unwrap();
    let small = caching.alloc(1000, None).unwrap();
    let large = caching.alloc(3 * MIB, None).unwrap();
    let blocks = |pool| {
        caching
            .stat(StatMetric::AllocatedBlocks, pool)
            .unwrap()
            .current
    };
    assert_eq!(blocks(StatPool::All), 2);
    assert_eq!(blocks(StatPool::Small), 1);
    assert_eq!(blocks(StatPool::Large), 1);
    let active = caching
        .stat(StatMetric::ActiveBytes, StatPool::All)
        .unwrap();
    assert!(active.current as usize >= small.size() + large.size());
    drop(small);
    assert_eq!(blocks(StatPool::Small), 0);
    assert_eq!(
        caching
            .stat(StatMetric::AllocatedBlocks, StatPool::Small)
            .unwrap()
            .peak,
        1
    );
    for metric in 0..9 {
        for pool in 0..3 {
            let m = StatMetric::from_raw(metric);
            assert!(!matches!(m, StatMetric::Unknown(_)));
            caching.stat(m, StatPool::from_raw(pool)).unwrap();
        }
    }
}

#[test]
fn snapshots_show_every_live_block() {
    let _g = init();
    let a = Allocator::new(Place::sim(0), Some("caching"), "").unwrap();
    let stream = Stream::new(Place::sim(0)).unwrap();
    let sizes = [512usize, 4000, 100_000, 2 * MIB, 5 * MIB + 7];
    let on_default: Vec<_> = sizes.iter().map(|&s| a.alloc(s, None).unwrap()).collect();
    let on_stream: Vec<_> = sizes
        .iter()
        .map(|&s| a.alloc(s, Some(&stream)).unwrap())
        .collect();
    let freed = a.alloc(8192, None).unwrap();
    drop(freed);

    let snap = a.snapshot().unwrap();
    let segments: Vec<_> = snap.segments().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(segments.len(), snap.segment_count().unwrap());
    assert!(!segments.is_empty());
    let mut allocated = Vec::new();
    let mut states = [0usize; 3];
    for seg in &segments {
        assert!(seg.mapped_bytes <= seg.size);
        assert!(matches!(seg.pool, StatPool::Small | StatPool::Large));
        let blocks: Vec<_> = snap.blocks(seg).collect::<Result<_, _>>().unwrap();
        assert_eq!(blocks.len(), seg.block_count);
        let mut next = seg.address;
        for b in &blocks {
            assert_eq!(
                b.stream, seg.stream,
                "a block belongs to its segment's stream"
            );
            assert!(b.address >= next, "blocks in address order");
            next = b.address + b.size;
            match b.state {
                BlockState::Free => states[0] += 1,
                BlockState::Allocated => {
                    states[1] += 1;
                    allocated.push((b.address, b.requested_size, b.stream));
                }
                BlockState::PendingFree => states[2] += 1,
                BlockState::Unknown(v) => panic!("unknown block state {v}"),
            }
        }
    }
    assert!(states[0] >= 1, "the freed block is cached");
    let mut expected: Vec<_> = on_default
        .iter()
        .map(|b| (b.as_ptr() as usize, b.size(), 0usize))
        .chain(
            on_stream
                .iter()
                .map(|b| (b.as_ptr() as usize, b.size(), stream.id())),
        )
        .collect();
    allocated.sort();
    expected.sort();
    assert_eq!(allocated, expected);

    // Out of range.
    assert_eq!(
        snap.segment(segments.len()).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        snap.block(0, segments[0].block_count).unwrap_err().status(),
        Status::InvalidArgument
    );

    // The JSON document names every live block.
    let json = a.snapshot_json().unwrap();
    assert!(json.starts_with('{') && json.ends_with('}'));
    assert!(json.contains("\"strategy\":\"caching\""), "{json}");
    for (address, requested, _) in &expected {
        assert!(
            json.contains(&format!("\"address\":{address},")),
            "{address} in the JSON"
        );
        assert!(json.contains(&format!("\"requested_size\":{requested},")));
    }
    let blocks_in_json = json.matches("\"requested_size\"").count();
    assert_eq!(
        blocks_in_json,
        segments.iter().map(|s| s.block_count).sum::<usize>()
    );

    // The snapshot is a copy: it does not change with the allocator.
    drop(on_default);
    assert_eq!(snap.segments().unwrap().count(), segments.len());
    drop(on_stream);
    drop(snap);
    stream.synchronize().unwrap();
}

#[test]
fn caching_reuses_blocks_per_stream_and_records_streams() {
    let _g = init();
    let a = Allocator::new(Place::sim(0), Some("caching"), "").unwrap();
    let s1 = Stream::new(Place::sim(0)).unwrap();
    let s2 = Stream::new(Place::sim(0)).unwrap();
    let first = a.alloc(64 * 1024, Some(&s1)).unwrap();
    let address = first.as_ptr() as usize;
    drop(first);
    // The same size on the same stream gets the cached block back.
    let mut again = a.alloc(64 * 1024, Some(&s1)).unwrap();
    assert_eq!(again.as_ptr() as usize, address);
    // Used on s2 as well: freed, it waits for s2's work.
    again.record_stream(&s2).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    s2.launch_host_func(move || {
        rx.recv().ok();
    })
    .unwrap();
    drop(again);
    let pending = a
        .stat(StatMetric::ActiveBlocks, StatPool::All)
        .unwrap()
        .current;
    assert_eq!(pending, 1, "still active while s2's work is pending");
    tx.send(()).unwrap();
    s2.synchronize().unwrap();
    // A stream of another place is refused.
    let other = Stream::new(Place::sim(1)).unwrap();
    assert_eq!(
        a.alloc(10, Some(&other)).unwrap_err().status(),
        Status::InvalidArgument
    );
    // buddy and system are not stream-ordered.
    let buddy = Allocator::new(Place::sim(0), Some("buddy"), "").unwrap();
    let mut b = buddy.alloc(100, Some(&s1)).unwrap();
    assert_eq!(
        b.record_stream(&s2).unwrap_err().status(),
        Status::Unsupported
    );
}
