//! Streams and events: host functions run in order, on the place's own
//! threads (SIM) or at once (CPU); events order streams; copies in scopes;
//! bad input. No check depends on timing: work that must still be pending
//! waits on a gate that the test opens.

mod common;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;

use common::{init, pattern, MIB};
use dao::{Event, Place, PlaceKind, Status, Stream};

/// A host function that blocks its stream until the test opens the gate.
fn gate(stream: &Stream) -> Sender<()> {
    let (open, wait): (Sender<()>, Receiver<()>) = channel();
    stream
        .launch_host_func(move || {
            wait.recv().ok();
        })
        .unwrap();
    open
}

#[test]
fn host_functions_run_in_order_on_sim_streams() {
    let _g = init();
    let streams = [
        Stream::new(Place::sim(0)).unwrap(),
        Stream::new(Place::sim(1)).unwrap(),
    ];
    let logs: Vec<Arc<Mutex<Vec<usize>>>> = (0..2).map(|_| Arc::default()).collect();
    let test_thread = thread::current().id();
    let threads = Arc::new(Mutex::new(Vec::new()));
    for i in 0..500 {
        for (s, log) in streams.iter().zip(&logs) {
            let (log, threads) = (Arc::clone(log), Arc::clone(&threads));
            s.launch_host_func(move || {
                log.lock().unwrap().push(i);
                threads.lock().unwrap().push(thread::current().id());
            })
            .unwrap();
        }
    }
    for s in &streams {
        s.synchronize().unwrap();
        assert!(s.is_idle().unwrap());
    }
    for log in &logs {
        assert_eq!(*log.lock().unwrap(), (0..500).collect::<Vec<_>>());
    }
    // SIM streams run their work on worker threads, not the caller's.
    assert!(threads.lock().unwrap().iter().all(|t| *t != test_thread));
}

#[test]
fn cpu_streams_run_work_at_once() {
    let _g = init();
    let s = Stream::new(Place::cpu()).unwrap();
    assert_eq!(s.place().unwrap(), Place::cpu());
    let ran = Arc::new(Mutex::new(None));
    let r = Arc::clone(&ran);
    s.launch_host_func(move || *r.lock().unwrap() = Some(thread::current().id()))
        .unwrap();
    assert_eq!(
        *ran.lock().unwrap(),
        Some(thread::current().id()),
        "ran before launch returned"
    );
    assert!(s.is_idle().unwrap());
}

#[test]
fn a_blocked_stream_is_busy_until_released() {
    let _g = init();
    let s = Stream::new(Place::sim(0)).unwrap();
    let open = gate(&s);
    let after = Arc::new(Mutex::new(false));
    let a = Arc::clone(&after);
    s.launch_host_func(move || *a.lock().unwrap() = true)
        .unwrap();
    let event = Event::new(Place::sim(0)).unwrap();
    assert!(
        event.is_complete().unwrap(),
        "a new event counts as completed"
    );
    event.record(Some(&s)).unwrap();
    assert!(!s.is_idle().unwrap());
    assert!(!event.is_complete().unwrap());
    assert!(!*after.lock().unwrap());
    open.send(()).unwrap();
    event.synchronize().unwrap();
    assert!(event.is_complete().unwrap());
    assert!(*after.lock().unwrap(), "work before the event ran");
    s.synchronize().unwrap();
    assert!(s.is_idle().unwrap());
}

#[test]
fn events_order_one_stream_after_another() {
    let _g = init();
    let producer = Stream::new(Place::sim(0)).unwrap();
    let consumer = Stream::new(Place::sim(1)).unwrap(); // another SIM device may wait too
    let log = Arc::new(Mutex::new(Vec::new()));
    let open = gate(&producer);
    let l = Arc::clone(&log);
    producer
        .launch_host_func(move || l.lock().unwrap().push("produce"))
        .unwrap();
    let ready = Event::new(Place::sim(0)).unwrap();
    ready.record(Some(&producer)).unwrap();
    consumer.wait_event(&ready).unwrap();
    let l = Arc::clone(&log);
    consumer
        .launch_host_func(move || l.lock().unwrap().push("consume"))
        .unwrap();
    assert!(
        !consumer.is_idle().unwrap(),
        "the consumer waits for the producer's event"
    );
    open.send(()).unwrap();
    consumer.synchronize().unwrap();
    assert_eq!(*log.lock().unwrap(), ["produce", "consume"]);
    // An event is recorded only on a stream of its own place.
    let err = ready.record(Some(&consumer)).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(
        err.message().contains("sim:1") || err.message().contains("sim"),
        "{err}"
    );
    // A CPU stream cannot wait on a SIM event.
    let cpu = Stream::new(Place::cpu()).unwrap();
    assert_eq!(
        cpu.wait_event(&ready).unwrap_err().status(),
        Status::InvalidArgument
    );
    // Recorded on the default stream, it completes at once.
    ready.record(None).unwrap();
    assert!(ready.is_complete().unwrap());
}

#[test]
fn scopes_copy_to_and_from_device_memory() {
    let _g = init();
    for place in [Place::sim(0), Place::sim(1), Place::cpu()] {
        let s = Stream::new(place).unwrap();
        let data = pattern(MIB / 4, 3);
        let mut device = place.alloc(MIB).unwrap();
        let mut back = vec![0u32; MIB / 4];
        s.scope(|sc| sc.copy(&mut device, &data)).unwrap().unwrap();
        s.scope(|sc| sc.copy(&mut back, &device)).unwrap().unwrap();
        assert!(back == data, "{place}: round trip");
        // Device to device, and into a typed buffer.
        let mut other = place.alloc(MIB).unwrap();
        let mut typed = place.buffer_zeroed::<u32>(MIB / 4).unwrap();
        s.scope(|sc| -> dao::Result<()> {
            sc.copy(&mut other, &device)?;
            Ok(())
        })
        .unwrap()
        .unwrap();
        s.scope(|sc| sc.copy(&mut typed, &other)).unwrap().unwrap();
        assert!(typed[..] == data[..], "{place}: device to device");
    }
}

#[test]
fn scopes_let_host_functions_borrow() {
    let _g = init();
    let s = Stream::new(Place::sim(0)).unwrap();
    let mut total = 0u64;
    let mut seen = Vec::new();
    let input = pattern(1000, 1);
    s.scope(|sc| {
        let open = gate(sc.stream());
        sc.launch(|| total = input.iter().map(|&x| u64::from(x)).sum())
            .unwrap();
        sc.launch(|| seen.push(input.len())).unwrap();
        open.send(()).unwrap();
    })
    .unwrap();
    assert_eq!(total, input.iter().map(|&x| u64::from(x)).sum());
    assert_eq!(seen, [1000]);
}

#[test]
fn scopes_wait_for_the_stream_even_when_they_panic() {
    let _g = init();
    let s = Stream::new(Place::sim(0)).unwrap();
    let mut written = false;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        s.scope(|sc| {
            let open = gate(sc.stream());
            sc.launch(|| written = true).unwrap();
            open.send(()).unwrap();
            panic!("after queueing");
        })
    }));
    assert!(result.is_err());
    assert!(written, "the queued work ran before the scope unwound");
    assert!(s.is_idle().unwrap());
}

#[test]
fn copies_refuse_bad_input() {
    let _g = init();
    let s = Stream::new(Place::sim(0)).unwrap();
    let small = vec![0u8; 16];
    let mut smaller = vec![0u8; 8];
    let err = s
        .scope(|sc| sc.copy(&mut smaller, &small))
        .unwrap()
        .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    // Overlapping ranges, through the raw call: libdao refuses them.
    let mut buf = vec![0u8; 64];
    let p = buf.as_mut_ptr();
    // SAFETY: both ranges lie in `buf`; the call refuses them before use.
    let err = unsafe { dao::memcpy_async(p.cast(), p.add(8).cast(), 32, Some(&s)) }.unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("overlap"), "{err}");
    // SAFETY: as above, with NULL.
    let err = unsafe { dao::memcpy_async(std::ptr::null_mut(), p.cast(), 4, None) }.unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    // A raw copy on the default stream is done at once.
    let src = [1u8, 2, 3, 4];
    // SAFETY: valid, disjoint host ranges of 4 bytes.
    unsafe { dao::memcpy_async(p.cast(), src.as_ptr().cast(), 4, None) }.unwrap();
    assert_eq!(&buf[..4], &src);
}

#[test]
fn a_host_function_cannot_wait_for_its_own_stream() {
    let _g = init();
    let s = Arc::new(Stream::new(Place::sim(0)).unwrap());
    let (tx, rx) = channel();
    let inner = Arc::clone(&s);
    s.launch_host_func(move || {
        tx.send(inner.synchronize().map_err(|e| e.status()))
            .unwrap();
    })
    .unwrap();
    assert_eq!(rx.recv().unwrap(), Err(Status::InvalidState));
    s.synchronize().unwrap();
}

#[test]
fn stream_handles_answer() {
    let _g = init();
    for place in [Place::cpu(), Place::sim(0), Place::sim(1)] {
        let s = Stream::new(place).unwrap();
        assert_eq!(s.place().unwrap(), place);
        assert!(s.native().unwrap().is_null(), "no native stream on {place}");
        assert_ne!(s.id(), 0);
        assert_eq!(s.id(), s.as_raw() as usize);
        // SAFETY: a NULL native stream; refused on these places anyway.
        let err = unsafe { Stream::wrap(place, std::ptr::null_mut()) }.unwrap_err();
        assert_eq!(err.status(), Status::Unsupported);
        s.destroy().unwrap();
    }
    assert_eq!(
        Stream::new(Place::sim(4)).unwrap_err().status(),
        Status::NoDevice
    );
    assert_eq!(
        Event::new(Place::sim(4)).unwrap_err().status(),
        Status::NoDevice
    );
    assert_eq!(
        Stream::new(Place::new(PlaceKind::Unknown(12), 0))
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    if PlaceKind::Cuda.device_count().unwrap() == 0 {
        let err = Event::new(Place::cuda(0)).unwrap_err();
        assert_eq!(err.status(), Status::NoDevice);
        // SAFETY: NULL is CUDA's legacy default stream; there is no device.
        let err = unsafe { Stream::wrap(Place::cuda(0), std::ptr::null_mut()) }.unwrap_err();
        assert_eq!(err.status(), Status::NoDevice);
    }
}

#[test]
fn streams_and_events_work_from_many_threads() {
    let _g = init();
    let s = Arc::new(Stream::new(Place::sim(0)).unwrap());
    let count = Arc::new(Mutex::new(0usize));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (s, count) = (Arc::clone(&s), Arc::clone(&count));
            thread::spawn(move || {
                let e = Event::new(Place::sim(0)).unwrap();
                for _ in 0..100 {
                    let c = Arc::clone(&count);
                    s.launch_host_func(move || *c.lock().unwrap() += 1).unwrap();
                }
                e.record(Some(&s)).unwrap();
                e.synchronize().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(*count.lock().unwrap(), 400);
}

/// CUDA streams, where the machine has CUDA devices (run-tests.sh also runs
/// the tests with libdao's fake CUDA driver, which has two).
#[test]
fn cuda_streams_copy_and_wrap() {
    let _g = init();
    let count = PlaceKind::Cuda.device_count().unwrap();
    if count == 0 {
        eprintln!("no CUDA device: {}", PlaceKind::Cuda.backend_description());
        return;
    }
    for d in 0..count as i32 {
        let place = Place::cuda(d);
        let s = Stream::new(place).unwrap();
        assert_eq!(s.place().unwrap(), place);
        let native = s.native().unwrap();
        assert!(!native.is_null(), "a CUstream");
        let data = pattern(MIB / 4, d as u32);
        let mut device = place.alloc(MIB).unwrap();
        assert!(!device.is_host_accessible());
        let mut back = vec![0u32; MIB / 4];
        s.scope(|sc| sc.copy(&mut device, &data)).unwrap().unwrap();
        let done = Event::new(place).unwrap();
        done.record(Some(&s)).unwrap();
        {
            // SAFETY: `native` belongs to `s`, which outlives the wrapper.
            let wrapped = unsafe { Stream::wrap(place, native) }.unwrap();
            assert_eq!(wrapped.native().unwrap(), native);
            wrapped.wait_event(&done).unwrap();
            wrapped
                .scope(|sc| sc.copy(&mut back, &device))
                .unwrap()
                .unwrap();
        }
        assert!(back == data, "cuda:{d}: round trip");
        // A SIM stream copies with memcpy: device memory is refused.
        let sim = Stream::new(Place::sim(0)).unwrap();
        let err = sim
            .scope(|sc| sc.copy(&mut back, &device))
            .unwrap()
            .unwrap_err();
        assert_eq!(err.status(), Status::Unsupported);
        // A caching allocator on the device, stream-ordered.
        let a = dao::Allocator::new(place, Some("caching"), "").unwrap();
        let first = a.alloc(4096, Some(&s)).unwrap();
        let address = first.as_ptr() as usize;
        drop(first);
        assert_eq!(a.alloc(4096, Some(&s)).unwrap().as_ptr() as usize, address);
        s.synchronize().unwrap();
    }
}
