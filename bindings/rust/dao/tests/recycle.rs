//! Recycle pools and collections: a fill thread and operate threads pass
//! typed, shaped buffers round; statistics equal what the test counts;
//! sharing, timeouts, closing, dropping with work queued; bad input.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use common::{init, MIB};
use dao::{Collection, Place, PlaceKind, RecyclePool, Status};

const TRY: Option<Duration> = Some(Duration::ZERO);
const LONG: Option<Duration> = Some(Duration::from_secs(30));

#[test]
fn round_trip_through_threads_on_every_host_place() {
    let _g = init();
    for place in [Place::cpu(), Place::sim(0), Place::sim(1)] {
        let shape = [3usize, 5, 7];
        let pool = RecyclePool::<u32>::new(place, &shape, 3, 1, "name=round_trip").unwrap();
        const N: u32 = 200;
        let sum = AtomicU64::new(0);
        thread::scope(|s| {
            s.spawn(|| {
                for i in 0..N {
                    let mut b = pool.acquire(LONG).unwrap();
                    assert_eq!(b.sequence().unwrap(), None, "not submitted yet");
                    for (j, x) in b.as_mut_slice().unwrap().iter_mut().enumerate() {
                        *x = i * 1000 + j as u32;
                    }
                    pool.submit(b).unwrap();
                }
            });
            // Two operate threads take in order of submission.
            for _ in 0..2 {
                s.spawn(|| {
                    let mut last = None;
                    for _ in 0..N / 2 {
                        let b = pool.take(LONG).unwrap();
                        let seq = b.sequence().unwrap().expect("submitted");
                        assert!(last.map_or(true, |l| seq > l), "FIFO per taker");
                        last = Some(seq);
                        assert_eq!(b.shape(), &shape);
                        assert_eq!(b.len(), 105);
                        assert_eq!(b.byte_len(), 420);
                        assert_eq!(b.place(), place);
                        assert_eq!(b.as_ptr() as usize % 256, 0);
                        let data = b.as_slice().unwrap();
                        let i = data[0] / 1000;
                        assert!(data
                            .iter()
                            .enumerate()
                            .all(|(j, &x)| x == i * 1000 + j as u32));
                        sum.fetch_add(u64::from(i), Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(sum.load(Ordering::Relaxed), u64::from(N * (N - 1) / 2));
        let st = pool.stats().unwrap();
        assert_eq!(
            (st.acquired, st.submitted, st.taken),
            (200, 200, 200),
            "{place}"
        );
        assert!(st.created >= 1 && st.created <= 3);
        assert_eq!(st.created, st.free + st.queued + st.held);
        assert_eq!((st.queued, st.held), (0, 0));
        assert!(st.peak_held <= 3);
    }
}

#[test]
fn stats_equal_what_the_test_counts() {
    let _g = init();
    let pool = RecyclePool::<f64>::new(Place::cpu(), &[64], 4, 2, "").unwrap();
    let st = pool.stats().unwrap();
    assert_eq!(
        (st.created, st.free, st.held, st.queued),
        (2, 2, 0, 0),
        "preallocated"
    );
    let a = pool.acquire(TRY).unwrap();
    let b = pool.acquire(TRY).unwrap();
    let c = pool.acquire(TRY).unwrap();
    let st = pool.stats().unwrap();
    assert_eq!((st.created, st.free, st.held), (3, 0, 3));
    pool.submit(a).unwrap();
    pool.submit(b).unwrap();
    let st = pool.stats().unwrap();
    assert_eq!((st.queued, st.held, st.submitted), (2, 1, 2));
    let first = pool.take(TRY).unwrap();
    assert_eq!(first.sequence().unwrap(), Some(0));
    drop(first);
    drop(c);
    let st = pool.stats().unwrap();
    assert_eq!((st.created, st.free, st.queued, st.held), (3, 2, 1, 0));
    assert_eq!((st.acquired, st.taken, st.timeouts), (3, 1, 0));
    assert_eq!(st.peak_held, 3);
}

#[test]
fn buffers_are_reused_as_they_are() {
    let _g = init();
    let pool = RecyclePool::<u8>::new(Place::sim(0), &[4096], 2, 0, "").unwrap();
    let mut seen = HashSet::new();
    for i in 0..20u8 {
        let mut b = pool.acquire(TRY).unwrap();
        seen.insert(b.as_ptr() as usize);
        b.as_mut_slice().unwrap()[0] = i;
        pool.submit(b).unwrap();
        let t = pool.take(TRY).unwrap();
        assert_eq!(t.as_slice().unwrap()[0], i);
    }
    assert_eq!(seen.len(), 1, "one buffer served every round");
    assert_eq!(pool.stats().unwrap().created, 1);
}

#[test]
fn shared_buffers_return_with_the_last_reference() {
    let _g = init();
    let pool = RecyclePool::<i32>::new(Place::cpu(), &[2, 2], 1, 0, "").unwrap();
    let mut b = pool.acquire(TRY).unwrap();
    b.as_mut_slice().unwrap().copy_from_slice(&[1, 2, 3, 4]);
    pool.submit(b).unwrap();
    let shared = pool.take(TRY).unwrap().share();
    let readers: Vec<_> = (0..3).map(|_| shared.clone()).collect();
    drop(shared);
    let sums: Vec<i32> = thread::scope(|s| {
        let handles: Vec<_> = readers
            .iter()
            .map(|r| s.spawn(move || r.as_slice().unwrap().iter().sum::<i32>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(sums, [10, 10, 10]);
    // The only buffer is still held by the readers.
    assert_eq!(pool.acquire(TRY).unwrap_err().status(), Status::Timeout);
    let extra = readers[0].retain().unwrap();
    drop(readers);
    assert_eq!(pool.acquire(TRY).unwrap_err().status(), Status::Timeout);
    drop(extra);
    let again = pool.acquire(TRY).unwrap();
    assert_eq!(again.as_slice().unwrap(), &[1, 2, 3, 4], "reused as it is");
    assert_eq!(pool.stats().unwrap().timeouts, 2);
}

#[test]
fn a_waiting_acquire_gets_a_released_buffer() {
    let _g = init();
    let pool = RecyclePool::<u64>::new(Place::cpu(), &[8], 1, 0, "spin=0").unwrap();
    let held = pool.acquire(TRY).unwrap();
    let err = pool.acquire(Some(Duration::from_millis(10))).unwrap_err();
    assert_eq!(err.status(), Status::Timeout);
    assert!(!err.message().is_empty());
    thread::scope(|s| {
        let waiter = s.spawn(|| pool.acquire(None).map(|b| b.as_ptr() as usize));
        thread::sleep(Duration::from_millis(20));
        let address = held.as_ptr() as usize;
        drop(held);
        assert_eq!(waiter.join().unwrap().unwrap(), address);
    });
}

#[test]
fn closing_wakes_waiters_and_drains() {
    let _g = init();
    let pool = RecyclePool::<u16>::new(Place::sim(1), &[10], 2, 0, "").unwrap();
    let b = pool.acquire(TRY).unwrap();
    pool.submit(b).unwrap();
    let held = pool.acquire(TRY).unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| pool.acquire(None).map(|_| ()).unwrap_err().status());
        thread::sleep(Duration::from_millis(20));
        pool.close().unwrap();
        assert_eq!(waiter.join().unwrap(), Status::Closed);
    });
    pool.close().unwrap(); // twice is harmless
    assert_eq!(pool.acquire(TRY).unwrap_err().status(), Status::Closed);
    // Work in flight may still be submitted and drained.
    pool.submit(held).unwrap();
    assert!(pool.take(TRY).is_ok());
    assert!(pool.take(TRY).is_ok());
    assert_eq!(pool.take(LONG).unwrap_err().status(), Status::Closed);
}

#[test]
fn dropping_a_pool_with_queued_buffers_frees_everything() {
    let _g = init();
    let place = Place::cpu();
    let before = place.used_internal().unwrap();
    {
        let pool = RecyclePool::<u8>::new(place, &[MIB], 4, 4, "").unwrap();
        assert!(place.used_internal().unwrap() >= before + 4 * MIB);
        for _ in 0..3 {
            let b = pool.acquire(TRY).unwrap();
            pool.submit(b).unwrap();
        }
        assert_eq!(pool.stats().unwrap().queued, 3);
    }
    assert_eq!(
        place.used_internal().unwrap(),
        before,
        "the pool's buffers went back to the place"
    );
}

#[test]
fn bad_pools_are_refused() {
    let _g = init();
    let cpu = Place::cpu();
    for (shape, max, pre) in [
        (&[][..], 2, 0),
        (&[4, 0][..], 2, 0),
        (&[1; 9][..], 2, 0),
        (&[4][..], 0, 0),
        (&[4][..], 2, 3),
        (&[usize::MAX, 4][..], 2, 0),
    ] {
        let err = RecyclePool::<u32>::new(cpu, shape, max, pre, "").unwrap_err();
        assert_eq!(
            err.status(),
            Status::InvalidArgument,
            "{shape:?} {max} {pre}"
        );
        assert!(!err.message().is_empty());
    }
    let err = RecyclePool::<u32>::new(cpu, &[4], 2, 0, "colour=blue").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("colour"), "{err}");
    assert_eq!(
        RecyclePool::<u32>::new(Place::sim(3), &[4], 2, 0, "")
            .unwrap_err()
            .status(),
        Status::NoDevice
    );
    // Preallocated buffers that do not fit on the device: nothing is kept.
    let err = RecyclePool::<u8>::new(Place::sim(1), &[48 * MIB], 2, 2, "").unwrap_err();
    assert_eq!(err.status(), Status::OutOfMemory);
    // More buffers than the device holds: acquire says so at once.
    let pool = RecyclePool::<u8>::new(Place::sim(1), &[40 * MIB], 2, 0, "").unwrap();
    let first = pool.acquire(TRY).unwrap();
    assert_eq!(
        pool.acquire(LONG).unwrap_err().status(),
        Status::OutOfMemory
    );
    drop(first);
    if PlaceKind::Cuda.device_count().unwrap() == 0 {
        let err = RecyclePool::<f32>::new(Place::cuda(0), &[4], 2, 0, "").unwrap_err();
        assert_eq!(err.status(), Status::NoDevice);
    }
    // A buffer of another pool is refused, and released.
    let a = RecyclePool::<u32>::new(cpu, &[4], 1, 0, "").unwrap();
    let b = RecyclePool::<u32>::new(cpu, &[4], 1, 0, "").unwrap();
    let from_a = a.acquire(TRY).unwrap();
    assert_eq!(
        b.submit(from_a).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert!(
        a.acquire(TRY).is_ok(),
        "the refused buffer went back to its pool"
    );
}

#[test]
fn collections_find_pools_by_name_and_type() {
    let _g = init();
    let pools = Collection::new().unwrap();
    {
        let raw = pools
            .add::<u16>("raw", Place::cpu(), &[16], 2, 0, "")
            .unwrap();
        let cooked = pools
            .add::<f32>("cooked", Place::sim(0), &[4, 4], 2, 1, "")
            .unwrap();
        let b = raw.acquire(TRY).unwrap();
        raw.submit(b).unwrap();
        assert_eq!(cooked.stats().unwrap().created, 1);
    }
    let raw = pools.find::<u16>("raw").unwrap();
    assert_eq!(raw.stats().unwrap().queued, 1);
    let t = raw.take(TRY).unwrap();
    assert_eq!(t.len(), 16);
    raw.submit(t).unwrap(); // left queued: dropping the collection drains it
    let err = pools.find::<u16>("baked").unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    assert!(
        err.message().contains("raw") && err.message().contains("cooked"),
        "{err}"
    );
    let err = pools.find::<u32>("cooked").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("f32"), "{err}");
    let err = pools
        .add::<u8>("raw", Place::cpu(), &[1], 1, 0, "")
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "a name already used");
    let err = pools
        .add::<u8>("", Place::cpu(), &[1], 1, 0, "")
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "an empty name");
    pools.close().unwrap();
    assert_eq!(raw.acquire(TRY).unwrap_err().status(), Status::Closed);
    drop(raw);
    drop(pools);
}
