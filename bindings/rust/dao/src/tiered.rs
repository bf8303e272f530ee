//! Tiered pools: a device memory budget backed by a host tier, with a
//! kernel queue whose future accesses decide what to evict.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, MutexGuard};
use std::{fmt, slice};

use dao_sys as ffi;

use crate::error::{c_string, check, Error, Result, Status};
use crate::memory::{bytes_of, Pod};
use crate::place::Place;
use crate::stream::{abort_after_panic, panic_message, Stream};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scoring function of policy `callback`.
type ScoreFn = dyn Fn(&AccessInfo) -> f64 + Send + Sync;

/// Contexts of queued kernels, by address, with the function that drops one.
type PendingKernels = HashMap<usize, unsafe fn(*mut c_void)>;

/// State shared by a pool and its queued kernels.
#[derive(Default)]
struct Shared {
    /// Kernels queued and not yet run: their context and how to drop it.
    pending: Mutex<PendingKernels>,
    /// Why the first Rust kernel failed (an error or a panic).
    kernel_failure: Mutex<Option<String>>,
}

/// What a queued kernel owns.
struct KernelCtx<F> {
    f: F,
    shared: Arc<Shared>,
    input_bytes: Vec<usize>,
    output_bytes: Vec<usize>,
    host: bool,
}

unsafe fn drop_ctx<F>(ctx: *mut c_void) {
    // SAFETY: `ctx` is a KernelCtx<F> leaked by submit and not yet claimed.
    drop(unsafe { Box::from_raw(ctx.cast::<KernelCtx<F>>()) });
}

/// Pointers of a kernel argument list (NULL allowed when empty).
unsafe fn ptr_list<'a>(list: *const *mut c_void, count: usize) -> &'a [*mut c_void] {
    if count == 0 || list.is_null() {
        &[]
    } else {
        // SAFETY: libdao passes `count` pointers that live during the call.
        unsafe { slice::from_raw_parts(list, count) }
    }
}

unsafe extern "C" fn kernel_trampoline<F>(
    user_data: *mut c_void,
    inputs: *const *mut c_void,
    input_count: usize,
    outputs: *const *mut c_void,
    output_count: usize,
    stream: ffi::dao_stream,
) -> ffi::dao_status
where
    F: FnOnce(&mut Kernel<'_>) -> Result<()>,
{
    let ctx_ptr = user_data.cast::<KernelCtx<F>>();
    // SAFETY: `user_data` is the KernelCtx<F> that submit leaked; claiming it
    // from `pending` makes this call its only owner (libdao runs a kernel
    // once, and the pool frees unclaimed contexts only after the executor
    // has stopped).
    let claimed = {
        let shared = unsafe { &(*ctx_ptr).shared };
        lock(&shared.pending).remove(&(ctx_ptr as usize)).is_some()
    };
    if !claimed {
        return ffi::DAO_ERR_INTERNAL;
    }
    // SAFETY: claimed above.
    let KernelCtx {
        f,
        shared,
        input_bytes,
        output_bytes,
        host,
    } = *unsafe { Box::from_raw(ctx_ptr) };
    // SAFETY: libdao passes live pointer lists and the live compute stream.
    let (inputs, outputs) = unsafe {
        (
            ptr_list(inputs, input_count),
            ptr_list(outputs, output_count),
        )
    };
    let stream = NonNull::new(stream).map(|s| unsafe { Stream::borrowed(s) });
    let mut kernel = Kernel {
        inputs,
        outputs,
        input_bytes: &input_bytes,
        output_bytes: &output_bytes,
        stream: stream.as_deref(),
        host,
    };
    let (code, why) = match catch_unwind(AssertUnwindSafe(|| f(&mut kernel))) {
        Ok(Ok(())) => return ffi::DAO_OK,
        Ok(Err(e)) => {
            // A failure must not read as success.
            let code = match e.status().code() {
                ffi::DAO_OK => ffi::DAO_ERR_INTERNAL,
                code => code,
            };
            (code, format!("the Rust kernel returned an error: {e}"))
        }
        Err(payload) => (
            ffi::DAO_ERR_INTERNAL,
            format!("the Rust kernel panicked: {}", panic_message(&*payload)),
        ),
    };
    lock(&shared.kernel_failure).get_or_insert(why);
    code
}

unsafe extern "C" fn score_trampoline(
    user_data: *mut c_void,
    info: *const ffi::dao_tensor_access_info,
) -> f64 {
    // SAFETY: `user_data` is a Box<ScoreFn> that the pool keeps until it is
    // destroyed; `info` lives during the call.
    let (score, info) = unsafe { (&*user_data.cast::<Box<ScoreFn>>(), &*info) };
    let info = AccessInfo {
        tensor: info.tensor as usize,
        bytes: info.bytes,
        now: info.now,
        last_use: info.last_use,
        next_use: (info.next_use != u64::MAX).then_some(info.next_use),
        queued_uses: info.queued_uses,
        dirty: info.dirty != 0,
    };
    match catch_unwind(AssertUnwindSafe(|| score(&info))) {
        Ok(value) => value,
        Err(payload) => abort_after_panic("a tiered-pool scoring function", payload),
    }
}

/// A tiered pool (`dao_tiered`): a device memory budget backed by a host
/// tier, and an executor thread that runs submitted kernels in order,
/// making their tensors resident first (evicting others to the host tier,
/// by a policy that knows the queued future accesses).
///
/// Config keys (`key=value,...`): `policy` (`belady` (default), `lru`,
/// `size_aware`, or `callback`: see [`TieredPool::set_score`]), `prefetch`
/// (kernels ahead whose inputs are fetched early; default 2),
/// `host_budget`, `link_bandwidth` (SIM only, e.g. `16GB/s`).
///
/// Dropping the pool waits for the queued kernels (or stops at once if it
/// failed) and frees every tensor; tensors borrow the pool, so none can
/// outlive it.
///
/// ```
/// use dao::{Place, TieredPool};
///
/// dao::sim::configure(&[64 << 20, 64 << 20])?;
/// // 1 MiB of device budget for 4 tensors of 512 KiB: some must be evicted.
/// let pool = TieredPool::new(Place::sim(0), Place::cpu(), 1 << 20, "policy=belady")?;
/// let n = (512 << 10) / 4;
/// let tensors: Vec<_> = (0..4u32)
///     .map(|i| pool.tensor_from_slice(&vec![i; n]))
///     .collect::<Result<_, _>>()?;
/// for t in &tensors {
///     // t += 100, in place, on the device.
///     pool.submit(&[t], &[t], |k| {
///         let (_, outputs) = k.cells::<u32>()?;
///         outputs[0].iter().for_each(|x| x.set(x.get() + 100));
///         Ok(())
///     })?;
/// }
/// pool.synchronize()?;
/// for (i, t) in tensors.iter().enumerate() {
///     assert!(t.read_vec::<u32>()?.iter().all(|&x| x == i as u32 + 100));
/// }
/// assert!(pool.stats()?.evictions > 0);
/// # Ok::<(), dao::Error>(())
/// ```
pub struct TieredPool {
    raw: NonNull<ffi::dao_tiered>,
    device: Place,
    shared: Arc<Shared>,
    /// Scoring functions handed to libdao, kept until it is destroyed. The
    /// outer box gives libdao a thin pointer that stays put.
    #[allow(clippy::vec_box)]
    scores: Mutex<Vec<Box<Box<ScoreFn>>>>,
}

// SAFETY: tiered.h: every pool and tensor function except dao_tiered_destroy
// is "safe to call from any thread"; destroy happens only in drop, which
// takes the pool by value (tensors borrow it). The Rust state is behind
// mutexes, and the closures it holds are Send (and Sync for scores).
unsafe impl Send for TieredPool {}
// SAFETY: as for Send.
unsafe impl Sync for TieredPool {}

impl TieredPool {
    /// Creates a pool (`dao_tiered_create`) on a device place (CUDA or SIM)
    /// with a host tier (CPU or CUDA pinned) and `device_budget` bytes of
    /// device memory, reserved now. The executor thread starts.
    pub fn new(
        device: Place,
        host: Place,
        device_budget: usize,
        config: &str,
    ) -> Result<TieredPool> {
        let config = c_string("config", config)?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid string (copied) and out-pointer.
        check(unsafe {
            ffi::dao_tiered_create(
                device.to_raw(),
                host.to_raw(),
                device_budget,
                config.as_ptr(),
                &mut raw,
            )
        })?;
        Ok(TieredPool {
            raw: NonNull::new(raw).expect("dao_tiered_create gave NULL"),
            device,
            shared: Arc::default(),
            scores: Mutex::new(Vec::new()),
        })
    }

    /// The C handle. It stays owned by `self`.
    pub fn as_raw(&self) -> *mut ffi::dao_tiered {
        self.raw.as_ptr()
    }

    /// The device place.
    pub fn device(&self) -> Place {
        self.device
    }

    /// Sets the scoring function of policy `callback`
    /// (`dao_tiered_set_score_callback`): the executor evicts the
    /// contiguous run of tensors with the highest total score. It runs on
    /// the executor thread and must not call into the pool; a panic in it
    /// aborts the process. Call it before the first submit
    /// ([`Status::InvalidState`] after, or for another policy).
    pub fn set_score<F>(&self, score: F) -> Result<()>
    where
        F: Fn(&AccessInfo) -> f64 + Send + Sync + 'static,
    {
        let boxed: Box<Box<ScoreFn>> = Box::new(Box::new(score));
        let data: *const Box<ScoreFn> = &*boxed;
        let mut scores = lock(&self.scores);
        // SAFETY: live pool; `data` stays valid until the pool is destroyed
        // (kept in `scores`, even if replaced by a later call).
        check(unsafe {
            ffi::dao_tiered_set_score_callback(
                self.as_raw(),
                Some(score_trampoline),
                data as *mut c_void,
            )
        })?;
        scores.push(boxed);
        Ok(())
    }

    /// Creates a tensor of `bytes` (`dao_tensor_create`); nothing is
    /// allocated until it is written or a kernel uses it. At most the
    /// device budget ([`Status::OutOfMemory`] otherwise).
    pub fn tensor(&self, bytes: usize) -> Result<Tensor<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: live pool, valid out-pointer.
        check(unsafe { ffi::dao_tensor_create(self.as_raw(), bytes, &mut raw) })?;
        Ok(Tensor {
            raw: NonNull::new(raw).expect("dao_tensor_create gave NULL"),
            bytes,
            _pool: PhantomData,
        })
    }

    /// A tensor of the size of `data`, written with it.
    pub fn tensor_from_slice<T: Pod>(&self, data: &[T]) -> Result<Tensor<'_>> {
        let t = self.tensor(mem::size_of_val(data))?;
        t.write(data)?;
        Ok(t)
    }

    /// Submits a kernel (`dao_kernel_submit`); returns at once. The executor
    /// runs kernels in submission order; before `kernel` runs, every tensor
    /// of `inputs` (read) and `outputs` (written) is resident in the device
    /// budget, and [`Kernel`] gives their device pointers. A tensor may be in
    /// both lists. All must belong to this pool and fit in the budget at
    /// once ([`Status::OutOfMemory`] otherwise).
    ///
    /// `kernel` runs on the executor thread, hence `Send + 'static`. If it
    /// returns an error or panics, the pool fails: later kernels are not
    /// run (and are dropped with the pool) and [`TieredPool::synchronize`]
    /// reports the failure, with the kernel's message.
    pub fn submit<F>(
        &self,
        inputs: &[&Tensor<'_>],
        outputs: &[&Tensor<'_>],
        kernel: F,
    ) -> Result<()>
    where
        F: FnOnce(&mut Kernel<'_>) -> Result<()> + Send + 'static,
    {
        let raw_in: Vec<*mut ffi::dao_tensor> = inputs.iter().map(|t| t.as_raw()).collect();
        let raw_out: Vec<*mut ffi::dao_tensor> = outputs.iter().map(|t| t.as_raw()).collect();
        let ctx = Box::into_raw(Box::new(KernelCtx {
            f: kernel,
            shared: Arc::clone(&self.shared),
            input_bytes: inputs.iter().map(|t| t.bytes).collect(),
            output_bytes: outputs.iter().map(|t| t.bytes).collect(),
            host: self.device.is_host_accessible(),
        }));
        // Registered before the submit: the executor may run it at once.
        lock(&self.shared.pending).insert(ctx as usize, drop_ctx::<F>);
        // SAFETY: live pool and tensors (borrowed); the trampoline matches
        // F and claims `ctx` when it runs.
        let code = unsafe {
            ffi::dao_kernel_submit(
                self.as_raw(),
                Some(kernel_trampoline::<F>),
                ctx.cast(),
                raw_in.as_ptr(),
                raw_in.len(),
                raw_out.as_ptr(),
                raw_out.len(),
            )
        };
        if code != ffi::DAO_OK {
            let err = Error::last(code);
            if lock(&self.shared.pending).remove(&(ctx as usize)).is_some() {
                // SAFETY: not queued, and unclaimed: still ours.
                unsafe { drop_ctx::<F>(ctx.cast()) };
            }
            return Err(err);
        }
        Ok(())
    }

    /// Waits until every submitted kernel has run (`dao_tiered_synchronize`).
    /// [`Status::InvalidState`] if the pool failed: a kernel returned an
    /// error or panicked (its message is appended), or the host tier was
    /// full.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live pool.
        check(unsafe { ffi::dao_tiered_synchronize(self.as_raw()) }).map_err(|e| {
            match lock(&self.shared.kernel_failure).as_ref() {
                Some(why) => Error::new(e.status(), format!("{}; {why}", e.message())),
                None => e,
            }
        })
    }

    /// Waits for the kernels submitted so far, moves every resident tensor
    /// to the host tier and gives the device budget back to the device
    /// place's allocator; a later kernel takes it again
    /// (`dao_tiered_trim`).
    pub fn trim(&self) -> Result<()> {
        // SAFETY: live pool.
        check(unsafe { ffi::dao_tiered_trim(self.as_raw()) })
    }

    /// The pool's statistics (`dao_tiered_get_stats`).
    pub fn stats(&self) -> Result<TieredStats> {
        let mut r = ffi::dao_tiered_stats {
            struct_size: mem::size_of::<ffi::dao_tiered_stats>(),
            ..Default::default()
        };
        // SAFETY: live pool; a sized struct of this version.
        check(unsafe { ffi::dao_tiered_get_stats(self.as_raw(), &mut r) })?;
        Ok(TieredStats {
            kernels_submitted: r.kernels_submitted,
            kernels_run: r.kernels_run,
            evictions: r.evictions,
            bytes_evicted: r.bytes_evicted,
            fetches: r.fetches,
            bytes_fetched: r.bytes_fetched,
            prefetches: r.prefetches,
            prefetches_in_time: r.prefetches_in_time,
            stall_ns: r.stall_ns,
            device_bytes: r.device_bytes,
            peak_device_bytes: r.peak_device_bytes,
            host_bytes: r.host_bytes,
            peak_host_bytes: r.peak_host_bytes,
            tensors_live: r.tensors_live,
            device_range_bytes: r.device_range_bytes,
            trims: r.trims,
            idle_trims: r.idle_trims,
        })
    }

    /// What the pool copied between its tiers and how long that took
    /// (`dao_tiered_get_link_stats`).
    pub fn link_stats(&self) -> Result<TieredLinkStats> {
        let mut r = ffi::dao_tiered_link_stats {
            struct_size: mem::size_of::<ffi::dao_tiered_link_stats>(),
            ..Default::default()
        };
        // SAFETY: live pool; a sized struct of this version.
        check(unsafe { ffi::dao_tiered_get_link_stats(self.as_raw(), &mut r) })?;
        Ok(TieredLinkStats {
            bytes_to_device: r.bytes_to_device,
            bytes_to_host: r.bytes_to_host,
            copies_to_device: r.copies_to_device,
            copies_to_host: r.copies_to_host,
            copy_ns_to_device: r.copy_ns_to_device,
            copy_ns_to_host: r.copy_ns_to_host,
            copy_ns: r.copy_ns,
            stall_ns: r.stall_ns,
            kernel_ns: r.kernel_ns,
            hidden_ns: r.hidden_ns,
            to_device_bytes_per_s: r.to_device_bytes_per_s,
            to_host_bytes_per_s: r.to_host_bytes_per_s,
            staged_bytes: r.staged_bytes,
            staging_bytes: r.staging_bytes,
            host_pageable: r.host_pageable != 0,
            staged: r.staged != 0,
        })
    }
}

impl Drop for TieredPool {
    fn drop(&mut self) {
        // SAFETY: live pool; no tensor borrows it any more. Destroy stops
        // the executor, so no kernel or score function runs after it.
        unsafe { ffi::dao_tiered_destroy(self.as_raw()) };
        let unrun: Vec<_> = lock(&self.shared.pending).drain().collect();
        for (ctx, drop_fn) in unrun {
            // SAFETY: a context that no kernel claimed: still ours.
            unsafe { drop_fn(ctx as *mut c_void) };
        }
    }
}

impl fmt::Debug for TieredPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TieredPool")
            .field("raw", &self.raw)
            .field("device", &self.device)
            .finish()
    }
}

/// Statistics of a tiered pool ([`TieredPool::stats`]).
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct TieredStats {
    /// Kernels submitted.
    pub kernels_submitted: u64,
    /// Kernels run.
    pub kernels_run: u64,
    /// Tensors copied device to host to make room.
    pub evictions: u64,
    /// Bytes copied device to host.
    pub bytes_evicted: u64,
    /// Tensors copied host to device.
    pub fetches: u64,
    /// Bytes copied host to device.
    pub bytes_fetched: u64,
    /// Fetches started ahead of their kernel.
    pub prefetches: u64,
    /// ... that had completed when it started.
    pub prefetches_in_time: u64,
    /// Time the executor waited for copies, in ns.
    pub stall_ns: u64,
    /// Bytes resident in the device budget now.
    pub device_bytes: u64,
    /// Peak of device_bytes.
    pub peak_device_bytes: u64,
    /// Bytes in the host tier now.
    pub host_bytes: u64,
    /// Peak of host_bytes.
    pub peak_host_bytes: u64,
    /// Tensors not yet freed.
    pub tensors_live: u64,
    /// Device memory the pool holds now: its budget's range, or 0 once given
    /// back ([`TieredPool::trim`], config `idle_trim`) until the next kernel.
    pub device_range_bytes: u64,
    /// Times the range was given back, by [`TieredPool::trim`] or `idle_trim`.
    pub trims: u64,
    /// ... of which by `idle_trim`.
    pub idle_trims: u64,
}

/// The link between a pool's tiers ([`TieredPool::link_stats`]).
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct TieredLinkStats {
    /// Bytes copied host to device: the fetches, and the data of
    /// [`Tensor::write`] that went straight to the device (the excess over
    /// [`TieredStats::bytes_fetched`]).
    pub bytes_to_device: u64,
    /// Bytes copied device to host.
    pub bytes_to_host: u64,
    /// Tensors copied host to device.
    pub copies_to_device: u64,
    /// Tensors copied device to host.
    pub copies_to_host: u64,
    /// Time a copy host to device was under way, in ns.
    pub copy_ns_to_device: u64,
    /// Time a copy device to host was under way, in ns.
    pub copy_ns_to_host: u64,
    /// Time any copy was under way, in ns.
    pub copy_ns: u64,
    /// Time the executor waited for data, in ns.
    pub stall_ns: u64,
    /// Time the executor spent in kernels, in ns.
    pub kernel_ns: u64,
    /// Copy time the executor did not wait for, in ns.
    pub hidden_ns: u64,
    /// Bytes per second host to device while copying.
    pub to_device_bytes_per_s: u64,
    /// Bytes per second device to host while copying.
    pub to_host_bytes_per_s: u64,
    /// Bytes copied through staging buffers.
    pub staged_bytes: u64,
    /// Bytes of pinned staging buffers held.
    pub staging_bytes: u64,
    /// The host tier is pageable memory.
    pub host_pageable: bool,
    /// Its copies go through staging buffers.
    pub staged: bool,
}

/// What a scoring function learns of one tensor that could be evicted
/// ([`TieredPool::set_score`]).
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct AccessInfo {
    /// The tensor, as [`Tensor::id`].
    pub tensor: usize,
    /// Its size.
    pub bytes: usize,
    /// Logical time of the kernel being prepared.
    pub now: u64,
    /// Logical time of its last use so far.
    pub last_use: u64,
    /// Its next queued use, if any.
    pub next_use: Option<u64>,
    /// Queued kernels that use it.
    pub queued_uses: u64,
    /// Whether the host tier has no current copy.
    pub dirty: bool,
}

c_enum! {
    /// Where a tensor's data is (`dao_tensor_state`).
    pub enum TensorState {
        /// Never written: no memory anywhere.
        Uninitialized = ffi::DAO_TENSOR_UNINITIALIZED,
        /// Resident in the device budget.
        OnDevice = ffi::DAO_TENSOR_ON_DEVICE,
        /// Evicted to (or written into) the host tier.
        OnHost = ffi::DAO_TENSOR_ON_HOST,
        /// Being copied between the tiers.
        InTransit = ffi::DAO_TENSOR_IN_TRANSIT,
    }
}

/// A tensor of a tiered pool (`dao_tensor`): a size, and data that lives on
/// the device or in the host tier as the executor decides. Dropping it
/// releases the handle (`dao_tensor_release`); its memory is freed once the
/// last queued kernel that uses it has run.
pub struct Tensor<'p> {
    raw: NonNull<ffi::dao_tensor>,
    bytes: usize,
    _pool: PhantomData<&'p TieredPool>,
}

// SAFETY: tiered.h: the tensor functions are "safe to call from any
// thread"; release happens only in drop.
unsafe impl Send for Tensor<'_> {}
// SAFETY: as for Send.
unsafe impl Sync for Tensor<'_> {}

impl Tensor<'_> {
    /// The C handle. It stays owned by `self`.
    pub fn as_raw(&self) -> *mut ffi::dao_tensor {
        self.raw.as_ptr()
    }

    /// The address of the handle: what [`AccessInfo::tensor`] holds for it.
    pub fn id(&self) -> usize {
        self.raw.as_ptr() as usize
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Copies `data` into the tensor in kernel order: after every kernel
    /// already submitted that uses it, before any submitted later
    /// (`dao_tensor_write`). `data` must have exactly the tensor's size.
    pub fn write<T: Pod>(&self, data: &[T]) -> Result<()> {
        // SAFETY: live tensor; `data` is read before the call returns.
        check(unsafe {
            ffi::dao_tensor_write(self.as_raw(), data.as_ptr().cast(), mem::size_of_val(data))
        })
    }

    /// Copies the tensor into `out`, after every kernel submitted so far
    /// that writes it has run (`dao_tensor_read`). `out` must have exactly
    /// the tensor's size. [`Status::InvalidState`] if it was never written.
    pub fn read<T: Pod>(&self, out: &mut [T]) -> Result<()> {
        // SAFETY: live tensor; `out` is written before the call returns,
        // with bytes of a Pod type.
        check(unsafe {
            ffi::dao_tensor_read(
                self.as_raw(),
                out.as_mut_ptr().cast(),
                mem::size_of_val(out),
            )
        })
    }

    /// The tensor's data as a vector of `T` ([`Tensor::read`]); its size
    /// must be a multiple of `T`'s.
    pub fn read_vec<T: Pod>(&self) -> Result<Vec<T>> {
        let size = mem::size_of::<T>().max(1);
        if self.bytes % size != 0 {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "a tensor of {} bytes is not a whole number of {}",
                    self.bytes,
                    std::any::type_name::<T>()
                ),
            ));
        }
        let len = self.bytes / size;
        bytes_of::<T>(len)?;
        let mut out = Vec::<T>::with_capacity(len);
        // SAFETY: live tensor; the capacity holds `self.bytes` bytes, which
        // the call writes in full (its size is the tensor's) before set_len
        // makes them visible, as values of a Pod type.
        check(unsafe { ffi::dao_tensor_read(self.as_raw(), out.as_mut_ptr().cast(), self.bytes) })?;
        // SAFETY: the elements were written above.
        unsafe { out.set_len(len) };
        Ok(out)
    }

    /// Where its data is now (a snapshot that may change at once;
    /// `dao_tensor_get_state`).
    pub fn state(&self) -> Result<TensorState> {
        let mut state = 0;
        // SAFETY: live tensor, valid out-pointer.
        check(unsafe { ffi::dao_tensor_get_state(self.as_raw(), &mut state) })?;
        Ok(TensorState::from_raw(state))
    }

    /// Says that no use after those already submitted needs its data, and
    /// keeps the handle (`dao_tensor_retire`): once the queued uses have
    /// run, evicting it copies nothing back. [`Tensor::read`] fails with
    /// [`Status::InvalidState`] until a write or a kernel output gives it
    /// new data.
    pub fn retire(&self) -> Result<()> {
        // SAFETY: live tensor.
        check(unsafe { ffi::dao_tensor_retire(self.as_raw()) })
    }
}

impl Drop for Tensor<'_> {
    fn drop(&mut self) {
        // SAFETY: live tensor, not used afterwards.
        unsafe { ffi::dao_tensor_release(self.as_raw()) };
    }
}

impl fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("raw", &self.raw)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// A running kernel's view of its tensors ([`TieredPool::submit`]): device
/// pointers in the order they were submitted, their sizes, and the compute
/// stream.
///
/// On a SIM device the memory is host memory, and [`Kernel::slices`] and
/// [`Kernel::cells`] give typed views; on a CUDA device use the pointers
/// with device code queued on [`Kernel::stream`] (libdao waits for it
/// before the tensors move).
pub struct Kernel<'k> {
    inputs: &'k [*mut c_void],
    outputs: &'k [*mut c_void],
    input_bytes: &'k [usize],
    output_bytes: &'k [usize],
    stream: Option<&'k Stream>,
    host: bool,
}

impl<'k> Kernel<'k> {
    /// Number of inputs.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Number of outputs.
    pub fn output_count(&self) -> usize {
        self.outputs.len()
    }

    /// Device pointer of input `i`.
    pub fn input_ptr(&self, i: usize) -> *mut c_void {
        self.inputs[i]
    }

    /// Device pointer of output `i`.
    pub fn output_ptr(&self, i: usize) -> *mut c_void {
        self.outputs[i]
    }

    /// Bytes of input `i`.
    pub fn input_bytes(&self, i: usize) -> usize {
        self.input_bytes[i]
    }

    /// Bytes of output `i`.
    pub fn output_bytes(&self, i: usize) -> usize {
        self.output_bytes[i]
    }

    /// The compute stream (borrowed from the pool).
    pub fn stream(&self) -> Option<&'k Stream> {
        self.stream
    }

    /// Whether the host may touch the tensors' memory (a SIM device).
    pub fn is_host_accessible(&self) -> bool {
        self.host
    }

    fn check_view<T>(&self, ptr: *mut c_void, bytes: usize, what: &str) -> Result<usize> {
        let size = mem::size_of::<T>();
        if !self.host {
            return Err(Error::new(
                Status::Unsupported,
                "Kernel: the tensors are in device memory the host cannot touch; use the pointers",
            ));
        }
        if size == 0
            || bytes % size != 0
            || ptr.is_null()
            || (ptr as usize) % mem::align_of::<T>() != 0
        {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "Kernel: {what} ({bytes} bytes) is not an array of {}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        Ok(bytes / size)
    }

    /// Typed views of the tensors, as slices: inputs shared, outputs
    /// mutable. [`Status::InvalidArgument`] if an output is also an input or
    /// another output (use [`Kernel::cells`] for in-place kernels) or a
    /// tensor is not a whole array of `T`; [`Status::Unsupported`] on a
    /// device the host cannot touch.
    #[allow(clippy::type_complexity)]
    pub fn slices<T: Pod>(&mut self) -> Result<(Vec<&[T]>, Vec<&mut [T]>)> {
        for (i, &o) in self.outputs.iter().enumerate() {
            let aliased = self.inputs.contains(&o) || self.outputs[..i].contains(&o);
            if aliased {
                return Err(Error::new(
                    Status::InvalidArgument,
                    format!("Kernel::slices: output {i} is also an input or an earlier output; use Kernel::cells"),
                ));
            }
        }
        let mut ins = Vec::with_capacity(self.inputs.len());
        for (i, (&p, &b)) in self.inputs.iter().zip(self.input_bytes).enumerate() {
            let len = self.check_view::<T>(p, b, &format!("input {i}"))?;
            // SAFETY: resident host memory of the tensor, not written through
            // any output view (checked above) during the kernel.
            ins.push(unsafe { slice::from_raw_parts(p as *const T, len) });
        }
        let mut outs = Vec::with_capacity(self.outputs.len());
        for (i, (&p, &b)) in self.outputs.iter().zip(self.output_bytes).enumerate() {
            let len = self.check_view::<T>(p, b, &format!("output {i}"))?;
            // SAFETY: resident host memory, aliased by no other view
            // (checked above), for the kernel's duration (&mut self).
            outs.push(unsafe { slice::from_raw_parts_mut(p as *mut T, len) });
        }
        Ok((ins, outs))
    }

    /// Typed views of the tensors as slices of [`Cell`]s, which may alias:
    /// for kernels that read and write the same tensor. Write only outputs:
    /// the pool treats inputs as read, so what a kernel writes into a tensor
    /// that is only an input may be lost when it moves.
    /// [`Status::InvalidArgument`] if a tensor is not a whole array of `T`;
    /// [`Status::Unsupported`] on a device the host cannot touch.
    #[allow(clippy::type_complexity)]
    pub fn cells<T: Pod>(&self) -> Result<(Vec<&[Cell<T>]>, Vec<&[Cell<T>]>)> {
        let view = |list: &[*mut c_void], bytes: &[usize], what: &str| -> Result<Vec<&[Cell<T>]>> {
            list.iter()
                .zip(bytes)
                .enumerate()
                .map(|(i, (&p, &b))| {
                    let len = self.check_view::<T>(p, b, &format!("{what} {i}"))?;
                    // SAFETY: resident host memory for the kernel's duration;
                    // Cell<T> has T's layout and allows aliased writes on
                    // this (the executor) thread, and &[Cell<T>] is !Send.
                    Ok(unsafe { slice::from_raw_parts(p as *const Cell<T>, len) })
                })
                .collect()
        };
        Ok((
            view(self.inputs, self.input_bytes, "input")?,
            view(self.outputs, self.output_bytes, "output")?,
        ))
    }
}

impl fmt::Debug for Kernel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("input_bytes", &self.input_bytes)
            .field("output_bytes", &self.output_bytes)
            .finish()
    }
}
