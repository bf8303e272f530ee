//! Tiered pools: a program whose tensors are several times the device
//! budget gives the results of a plain host computation under every policy
//! (including a Rust scoring closure); kernels that fail or panic; closures
//! of kernels that never run are dropped with the pool; bad input.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};

use common::{init, MIB};
use dao::{Error, Place, PlaceKind, Status, TensorState, TieredPool};

const KIB: usize = 1 << 10;

/// out[i] = seed + sum of in_j[i] (wrapping), the same on host and device.
fn step(seed: u32, inputs: &[Vec<u32>]) -> Vec<u32> {
    let n = inputs[0].len();
    (0..n)
        .map(|i| {
            inputs
                .iter()
                .fold(seed.wrapping_add(i as u32), |acc, v| acc.wrapping_add(v[i]))
        })
        .collect()
}

/// 12 tensors of 256 KiB (3 MiB) through a 1 MiB budget.
fn run_program(config: &str, score: bool) -> dao::TieredStats {
    let pool = TieredPool::new(Place::sim(0), Place::cpu(), MIB, config).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    if score {
        let c = Arc::clone(&calls);
        pool.set_score(move |info| {
            c.fetch_add(1, Ordering::Relaxed);
            assert!(info.bytes > 0 && info.tensor != 0);
            match info.next_use {
                None => 1e30,
                Some(next) => (next - info.now) as f64,
            }
        })
        .unwrap();
    }
    let n = 256 * KIB / 4;
    let mut model: Vec<Vec<u32>> = (0..12).map(|t| common::pattern(n, t)).collect();
    let tensors: Vec<_> = model
        .iter()
        .map(|v| pool.tensor_from_slice(v).unwrap())
        .collect();
    for k in 0..60u32 {
        let a = (k as usize * 5) % 12;
        let b = (k as usize * 7 + 3) % 12;
        let out = (k as usize * 11 + 1) % 12;
        let ins: Vec<usize> = if a == b { vec![a] } else { vec![a, b] };
        let expected = step(
            k,
            &ins.iter().map(|&i| model[i].clone()).collect::<Vec<_>>(),
        );
        model[out] = expected;
        let in_refs: Vec<_> = ins.iter().map(|&i| &tensors[i]).collect();
        pool.submit(&in_refs, &[&tensors[out]], move |kernel| {
            assert_eq!(kernel.input_count(), ins.len());
            assert_eq!(kernel.output_bytes(0), 256 * KIB);
            assert!(kernel.is_host_accessible());
            assert!(kernel.stream().is_some());
            let (inputs, outputs) = kernel.cells::<u32>()?;
            // Computed first, then written: an output may be an input.
            let inputs: Vec<Vec<u32>> = inputs
                .iter()
                .map(|v| v.iter().map(|c| c.get()).collect())
                .collect();
            for (cell, value) in outputs[0].iter().zip(step(k, &inputs)) {
                cell.set(value);
            }
            Ok(())
        })
        .unwrap();
    }
    pool.synchronize().unwrap();
    for (t, v) in tensors.iter().zip(&model) {
        assert!(
            t.read_vec::<u32>().unwrap() == *v,
            "{config}: a tensor differs from the model"
        );
    }
    let st = pool.stats().unwrap();
    let link = pool.link_stats().unwrap();
    // To the device: the fetches, and the writes that went straight there
    // (at most one per tensor, each of 256 KiB; how many depends on how far
    // the submits had got when each write ran).
    assert!(link.bytes_to_device >= st.bytes_fetched && link.copies_to_device >= st.fetches);
    let writes = link.copies_to_device - st.fetches;
    assert_eq!(link.bytes_to_device - st.bytes_fetched, writes * (256 * KIB) as u64);
    assert!(writes <= 12, "{config}: {writes} writes to the device");
    assert_eq!(link.bytes_to_host, st.bytes_evicted);
    assert_eq!(link.stall_ns, st.stall_ns);
    assert!(link.host_pageable, "a CPU host tier is pageable");
    pool.trim().unwrap();
    let trimmed = pool.stats().unwrap();
    assert_eq!(trimmed.device_bytes, 0, "trimmed: nothing on the device");
    assert_eq!(trimmed.device_range_bytes, 0, "trimmed: the range given back");
    assert_eq!((trimmed.trims, trimmed.idle_trims), (1, 0));
    // Retired: no data until written again (dao_tensor_retire).
    tensors[0].retire().unwrap();
    assert!(tensors[0].read_vec::<u32>().is_err(), "{config}: a retired tensor holds no data");
    tensors[0].write(&model[0]).unwrap();
    assert!(tensors[0].read_vec::<u32>().unwrap() == model[0], "{config}: written again");
    assert_eq!((st.kernels_submitted, st.kernels_run), (60, 60));
    assert_eq!(st.tensors_live, 12);
    assert!(st.peak_device_bytes <= MIB as u64);
    if score {
        assert!(
            calls.load(Ordering::Relaxed) > 0,
            "the scoring closure was asked"
        );
    }
    st
}

#[test]
fn programs_larger_than_the_budget_under_every_policy() {
    let _g = init();
    for (config, score) in [
        ("policy=belady", false),
        ("policy=lru", false),
        ("policy=size_aware", false),
        ("policy=callback", true),
        ("policy=belady,prefetch=0", false),
    ] {
        let st = run_program(config, score);
        assert!(
            st.evictions > 0 && st.fetches > 0,
            "{config}: 3 MiB through 1 MiB"
        );
        assert!(st.bytes_evicted > 0 && st.bytes_fetched > 0);
        assert!(st.prefetches_in_time <= st.prefetches);
        if config.contains("prefetch=0") {
            assert_eq!(st.prefetches, 0);
        }
    }
}

#[test]
fn slices_for_kernels_without_aliasing() {
    let _g = init();
    let pool = TieredPool::new(Place::sim(1), Place::cpu(), 4 * MIB, "").unwrap();
    let a = pool.tensor_from_slice(&[1.5f64; 1000]).unwrap();
    let b = pool.tensor_from_slice(&[2.0f64; 1000]).unwrap();
    let c = pool.tensor(8000).unwrap();
    assert_eq!(c.state().unwrap(), TensorState::Uninitialized);
    assert_eq!(c.bytes(), 8000);
    pool.submit(&[&a, &b], &[&c], |k| {
        let (ins, mut outs) = k.slices::<f64>()?;
        for i in 0..outs[0].len() {
            outs[0][i] = ins[0][i] * ins[1][i];
        }
        Ok(())
    })
    .unwrap();
    // In place: slices are refused (cells serve such kernels).
    pool.submit(&[&c], &[&c], |k| {
        let err = k.slices::<f64>().unwrap_err();
        assert_eq!(err.status(), Status::InvalidArgument);
        Ok(())
    })
    .unwrap();
    pool.synchronize().unwrap();
    assert!(c.read_vec::<f64>().unwrap().iter().all(|&x| x == 3.0));
    assert_ne!(c.state().unwrap(), TensorState::Uninitialized);
    let mut out = vec![0f64; 1000];
    a.read(&mut out).unwrap();
    assert!(out.iter().all(|&x| x == 1.5));
}

#[test]
fn a_failing_kernel_fails_the_pool_with_its_message() {
    let _g = init();
    let pool = TieredPool::new(Place::sim(0), Place::cpu(), MIB, "").unwrap();
    let t = pool.tensor_from_slice(&[0u8; 4096]).unwrap();
    pool.submit(&[], &[&t], |_| {
        Err(Error::new(Status::OutOfMemory, "scratch space ran out"))
    })
    .unwrap();
    let err = pool.synchronize().unwrap_err();
    assert_eq!(err.status(), Status::InvalidState);
    assert!(err.message().contains("out of memory"), "{err}");
    assert!(err.message().contains("scratch space ran out"), "{err}");
    // Failed: new work is refused.
    assert_eq!(pool.tensor(16).unwrap_err().status(), Status::InvalidState);
    assert_eq!(
        pool.submit(&[], &[&t], |_| Ok(())).unwrap_err().status(),
        Status::InvalidState
    );
}

#[test]
fn a_panicking_kernel_fails_the_pool() {
    let _g = init();
    let pool = TieredPool::new(Place::sim(0), Place::cpu(), MIB, "").unwrap();
    let t = pool.tensor(64).unwrap();
    // Keep the expected panic out of the test log; others still print.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains("kernel bug 42") {
            hook(info);
        }
    }));
    pool.submit(&[], &[&t], |_| panic!("kernel bug 42"))
        .unwrap();
    let err = pool.synchronize().unwrap_err();
    assert_eq!(err.status(), Status::InvalidState);
    assert!(err.message().contains("kernel bug 42"), "{err}");
}

/// Counts drops of the values it is cloned into.
struct DropCounter(Arc<AtomicUsize>);
impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn closures_of_kernels_that_never_run_are_dropped() {
    let _g = init();
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    {
        let pool = TieredPool::new(Place::sim(0), Place::cpu(), MIB, "").unwrap();
        let t = pool.tensor(64).unwrap();
        let (open, wait) = channel::<()>();
        let wait = Mutex::new(wait);
        // The first kernel waits for the test, then fails: the rest never run.
        pool.submit(&[], &[&t], move |_| {
            wait.lock().unwrap().recv().ok();
            Err(Error::new(Status::Internal, "stop"))
        })
        .unwrap();
        for _ in 0..5 {
            let (counter, ran) = (DropCounter(Arc::clone(&drops)), Arc::clone(&ran));
            pool.submit(&[&t], &[&t], move |_| {
                let _keep = &counter;
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(drops.load(Ordering::SeqCst), 0, "queued closures are alive");
        open.send(()).unwrap();
        assert_eq!(
            pool.synchronize().unwrap_err().status(),
            Status::InvalidState
        );
        drop(t);
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        5,
        "every unrun closure was dropped with the pool"
    );
}

#[test]
fn submits_from_many_threads() {
    let _g = init();
    let pool = TieredPool::new(Place::sim(1), Place::cpu(), MIB, "").unwrap();
    let t = pool.tensor_from_slice(&[0u64]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    pool.submit(&[&t], &[&t], |k| {
                        let (_, out) = k.cells::<u64>()?;
                        out[0][0].set(out[0][0].get() + 1);
                        Ok(())
                    })
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(t.read_vec::<u64>().unwrap(), [200]);
}

#[test]
fn bad_tiered_input_is_refused() {
    let _g = init();
    let cpu = Place::cpu();
    assert_eq!(
        TieredPool::new(cpu, cpu, MIB, "").unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        TieredPool::new(Place::sim(0), Place::sim(1), MIB, "")
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    assert_eq!(
        TieredPool::new(Place::sim(0), cpu, 0, "")
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    let err = TieredPool::new(Place::sim(0), cpu, MIB, "policy=random").unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("random"), "{err}");
    assert_eq!(
        TieredPool::new(Place::sim(0), cpu, 1 << 40, "")
            .unwrap_err()
            .status(),
        Status::OutOfMemory
    );
    assert_eq!(
        TieredPool::new(Place::sim(8), cpu, MIB, "")
            .unwrap_err()
            .status(),
        Status::NoDevice
    );
    if PlaceKind::Cuda.device_count().unwrap() == 0 {
        assert_eq!(
            TieredPool::new(Place::cuda(0), cpu, MIB, "")
                .unwrap_err()
                .status(),
            Status::NoDevice
        );
    }

    let pool = TieredPool::new(Place::sim(0), cpu, MIB, "prefetch=1").unwrap();
    assert_eq!(pool.device(), Place::sim(0));
    assert_eq!(
        pool.tensor(0).unwrap_err().status(),
        Status::InvalidArgument
    );
    assert_eq!(
        pool.tensor(2 * MIB).unwrap_err().status(),
        Status::OutOfMemory
    );
    let t = pool.tensor(1024).unwrap();
    assert_eq!(
        t.write(&[0u8; 1000]).unwrap_err().status(),
        Status::InvalidArgument
    );
    let err = t.read_vec::<u8>().unwrap_err();
    assert_eq!(err.status(), Status::InvalidState, "never written");
    assert!(!err.message().is_empty());
    assert_eq!(
        t.read_vec::<[u8; 3]>().unwrap_err().status(),
        Status::InvalidArgument
    );
    // Not the callback policy.
    assert_eq!(
        pool.set_score(|_| 0.0).unwrap_err().status(),
        Status::InvalidState
    );
    // Tensors of another pool, and more than the budget at once.
    let other = TieredPool::new(Place::sim(1), cpu, MIB, "").unwrap();
    let foreign = other.tensor(64).unwrap();
    assert_eq!(
        pool.submit(&[&foreign], &[&t], |_| Ok(()))
            .unwrap_err()
            .status(),
        Status::InvalidArgument
    );
    let big: Vec<_> = (0..3).map(|_| pool.tensor(MIB / 2).unwrap()).collect();
    let refs: Vec<_> = big.iter().collect();
    let err = pool.submit(&refs, &[], |_| Ok(())).unwrap_err();
    assert_eq!(err.status(), Status::OutOfMemory);
    assert!(!err.message().is_empty());
    // The callback policy needs a scoring function before the first submit.
    let cb = TieredPool::new(Place::sim(1), cpu, MIB, "policy=callback").unwrap();
    let u = cb.tensor(64).unwrap();
    assert_eq!(
        cb.submit(&[], &[&u], |_| Ok(())).unwrap_err().status(),
        Status::InvalidState
    );
    cb.set_score(|info| info.bytes as f64).unwrap();
    cb.submit(&[], &[&u], |_| Ok(())).unwrap();
    assert_eq!(
        cb.set_score(|_| 1.0).unwrap_err().status(),
        Status::InvalidState,
        "after a submit"
    );
    cb.synchronize().unwrap();
    // Typed views of a tensor whose size is not a whole number of elements.
    let odd = cb.tensor(6).unwrap();
    cb.submit(&[], &[&odd], |k| {
        assert_eq!(
            k.cells::<u32>().unwrap_err().status(),
            Status::InvalidArgument
        );
        Ok(())
    })
    .unwrap();
    cb.synchronize().unwrap();
}

#[test]
fn released_tensors_are_freed_after_their_last_use() {
    let _g = init();
    let pool = TieredPool::new(Place::sim(0), Place::cpu(), MIB, "").unwrap();
    let (open, wait) = channel::<()>();
    let wait = Mutex::new(wait);
    {
        let t = pool.tensor_from_slice(&[5u32; 1024]).unwrap();
        let u = pool.tensor(4096).unwrap();
        pool.submit(&[&t], &[&u], move |k| {
            wait.lock().unwrap().recv().ok();
            let (i, mut o) = k.slices::<u32>()?;
            o[0].copy_from_slice(i[0]);
            Ok(())
        })
        .unwrap();
        // Released while the kernel still needs them.
    }
    assert_eq!(pool.stats().unwrap().tensors_live, 2);
    open.send(()).unwrap();
    pool.synchronize().unwrap();
    let st = pool.stats().unwrap();
    assert_eq!((st.tensors_live, st.device_bytes, st.host_bytes), (0, 0, 0));
}

/// A tiered pool on a CUDA device, where the machine has one (run-tests.sh
/// also runs the tests with libdao's fake CUDA driver): the kernel gets
/// device pointers and the compute stream, and copies on it.
#[test]
fn cuda_kernels_work_on_device_pointers() {
    let _g = init();
    if PlaceKind::Cuda.device_count().unwrap() == 0 {
        assert_eq!(
            TieredPool::new(Place::cuda(0), Place::cpu(), MIB, "")
                .unwrap_err()
                .status(),
            Status::NoDevice
        );
        return;
    }
    let pool = TieredPool::new(Place::cuda(0), Place::cpu(), MIB, "").unwrap();
    let data = common::pattern(4096, 9);
    let a = pool.tensor_from_slice(&data).unwrap();
    let b = pool.tensor(a.bytes()).unwrap();
    pool.submit(&[&a], &[&b], |k| {
        assert!(!k.is_host_accessible());
        assert_eq!(k.cells::<u32>().unwrap_err().status(), Status::Unsupported);
        let stream = k.stream().expect("a compute stream");
        assert_eq!(stream.place()?, Place::cuda(0));
        // SAFETY: two resident device tensors of this size; libdao waits for
        // the compute stream before they move.
        unsafe {
            dao::memcpy_async(
                k.output_ptr(0),
                k.input_ptr(0),
                k.input_bytes(0),
                Some(stream),
            )
        }
    })
    .unwrap();
    pool.synchronize().unwrap();
    assert_eq!(b.read_vec::<u32>().unwrap(), data);
}
