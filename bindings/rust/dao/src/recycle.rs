//! Recycle pools: typed, shaped, reference-counted buffers for streaming
//! pipelines, handed from fill threads to operate threads.

use std::any::TypeId;
use std::collections::HashMap;
use std::ffi::c_int;
use std::marker::PhantomData;
use std::mem;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Mutex;
use std::time::Duration;
use std::{fmt, slice};

use dao_sys as ffi;

use crate::error::{c_string, check, Error, Result, Status};
use crate::memory::{Memory, MemoryMut, Pod};
use crate::place::Place;

/// Seconds for a blocking call: `None` waits for ever (-1), `Some(ZERO)`
/// tries once.
fn seconds(timeout: Option<Duration>) -> f64 {
    timeout.map_or(-1.0, |d| d.as_secs_f64())
}

fn ndim_of(shape: &[usize]) -> Result<c_int> {
    c_int::try_from(shape.len()).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("a shape of {} dimensions", shape.len()),
        )
    })
}

/// A pool of up to `max_buffers` buffers of `T` of one shape on one place
/// (`dao_recycle_pool`).
///
/// A fill thread [acquires](RecyclePool::acquire) a free buffer, fills it and
/// [submits](RecyclePool::submit) it; operate threads [take](RecyclePool::take)
/// buffers first in, first out, and drop them when done, which returns them
/// to the free list to be reused as they are: no copying and, once all
/// buffers exist, no allocation. A taken buffer may be [shared](RecycleBuffer::share)
/// with several readers.
///
/// Dropping the pool closes it, drops what is still queued and destroys it;
/// buffers borrow the pool, so none can outlive it.
///
/// ```
/// use std::time::Duration;
/// use dao::{Place, RecyclePool};
///
/// let pool = RecyclePool::<f32>::new(Place::cpu(), &[4, 256], 2, 0, "name=frames")?;
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         for i in 0..10 {
///             let mut b = pool.acquire(None).unwrap();
///             b.as_mut_slice().unwrap().fill(i as f32);
///             pool.submit(b).unwrap();
///         }
///     });
///     for i in 0..10 {
///         let b = pool.take(Some(Duration::from_secs(10))).unwrap();
///         assert_eq!(b.shape(), &[4, 256]);
///         assert_eq!(b.sequence().unwrap(), Some(i));
///         assert!(b.as_slice().unwrap().iter().all(|&x| x == i as f32));
///     }
/// });
/// let stats = pool.stats()?;
/// assert_eq!((stats.submitted, stats.taken), (10, 10));
/// assert!(stats.created <= 2);
/// # Ok::<(), dao::Error>(())
/// ```
pub struct RecyclePool<T: Pod> {
    raw: NonNull<ffi::dao_recycle_pool>,
    owned: bool,
    _t: PhantomData<T>,
}

// SAFETY: recycle.h: every pool function except dao_recycle_destroy is safe
// to call "from any number of threads at once"; destroy happens only in
// drop, which takes the pool by value (buffers borrow it).
unsafe impl<T: Pod> Send for RecyclePool<T> {}
// SAFETY: as for Send.
unsafe impl<T: Pod> Sync for RecyclePool<T> {}

impl<T: Pod> RecyclePool<T> {
    /// Creates a pool (`dao_recycle_create`) of buffers of `shape` elements
    /// of `T`, at most `max_buffers` of them, `preallocate` created now.
    /// Buffer memory comes from the place's default allocator.
    ///
    /// `config` is `key=value,...` or "": `name` (a label for messages and
    /// statistics) and `spin` (iterations a blocking call spins before it
    /// sleeps).
    pub fn new(
        place: Place,
        shape: &[usize],
        max_buffers: usize,
        preallocate: usize,
        config: &str,
    ) -> Result<RecyclePool<T>> {
        let config = c_string("config", config)?;
        let mut raw = ptr::null_mut();
        // SAFETY: `shape` holds ndim extents (copied); valid out-pointer.
        check(unsafe {
            ffi::dao_recycle_create(
                place.to_raw(),
                mem::size_of::<T>(),
                ndim_of(shape)?,
                shape.as_ptr(),
                max_buffers,
                preallocate,
                config.as_ptr(),
                &mut raw,
            )
        })?;
        Ok(RecyclePool {
            raw: NonNull::new(raw).expect("dao_recycle_create gave NULL"),
            owned: true,
            _t: PhantomData,
        })
    }

    /// The C handle. It stays owned by `self`.
    pub fn as_raw(&self) -> *mut ffi::dao_recycle_pool {
        self.raw.as_ptr()
    }

    /// A free buffer to fill (`dao_recycle_acquire`): from the free list,
    /// else a new one while fewer than `max_buffers` exist, else it waits
    /// until one is released. `timeout`: `None` waits for ever,
    /// `Some(Duration::ZERO)` tries once.
    ///
    /// Errors: [`Status::Timeout`], [`Status::Closed`],
    /// [`Status::OutOfMemory`] (a new buffer did not fit; the pool keeps
    /// working with those it has).
    pub fn acquire(&self, timeout: Option<Duration>) -> Result<RecycleBuffer<'_, T>> {
        let mut raw = ptr::null_mut();
        // SAFETY: live pool, valid out-pointer.
        check(unsafe { ffi::dao_recycle_acquire(self.as_raw(), seconds(timeout), &mut raw) })?;
        // SAFETY: the call gave us one reference to a free buffer: no one
        // else holds it.
        unsafe { RecycleBuffer::new(raw) }
    }

    /// Queues a filled buffer for [`take`](RecyclePool::take)
    /// (`dao_recycle_submit`); never blocks. The buffer's reference moves
    /// into the queue. Allowed on a closed pool. A buffer of another pool is
    /// refused ([`Status::InvalidArgument`]) and released.
    pub fn submit(&self, buffer: RecycleBuffer<'_, T>) -> Result<()> {
        let raw = buffer.view.raw;
        // SAFETY: live pool and buffer, whose reference we hold.
        let code = unsafe { ffi::dao_recycle_submit(self.as_raw(), raw.as_ptr()) };
        if code == ffi::DAO_OK {
            mem::forget(buffer); // the queue holds its reference now
            Ok(())
        } else {
            let err = Error::last(code);
            drop(buffer);
            Err(err)
        }
    }

    /// The next submitted buffer, first in first out (`dao_recycle_take`).
    /// `timeout` as for [`acquire`](RecyclePool::acquire). Errors:
    /// [`Status::Timeout`], and [`Status::Closed`] once the pool is closed
    /// and its queue empty.
    pub fn take(&self, timeout: Option<Duration>) -> Result<RecycleBuffer<'_, T>> {
        let mut raw = ptr::null_mut();
        // SAFETY: live pool, valid out-pointer.
        check(unsafe { ffi::dao_recycle_take(self.as_raw(), seconds(timeout), &mut raw) })?;
        // SAFETY: the queue's reference becomes ours. Buffers are submitted
        // only by `submit`, which gives up the only reference, so no one
        // else holds it.
        unsafe { RecycleBuffer::new(raw) }
    }

    /// Closes the pool (`dao_recycle_close`): wakes every waiter with
    /// [`Status::Closed`] and refuses new acquires; submits still work and
    /// queued buffers can still be taken. Closing twice is harmless.
    pub fn close(&self) -> Result<()> {
        // SAFETY: live pool.
        check(unsafe { ffi::dao_recycle_close(self.as_raw()) })
    }

    /// The pool's statistics (`dao_recycle_get_stats`).
    pub fn stats(&self) -> Result<RecycleStats> {
        let mut raw = ffi::dao_recycle_stats {
            struct_size: mem::size_of::<ffi::dao_recycle_stats>(),
            ..Default::default()
        };
        // SAFETY: live pool; a sized struct of this version.
        check(unsafe { ffi::dao_recycle_get_stats(self.as_raw(), &mut raw) })?;
        Ok(RecycleStats::from_raw(&raw))
    }
}

/// Closes a pool and releases what is still queued, so that it can be
/// destroyed.
///
/// # Safety
/// `pool` is a live pool that no one else uses any more.
unsafe fn close_and_drain(pool: *mut ffi::dao_recycle_pool) {
    // SAFETY: the caller's contract; every buffer taken is released at once.
    unsafe {
        ffi::dao_recycle_close(pool);
        let mut buffer = ptr::null_mut();
        while ffi::dao_recycle_take(pool, 0.0, &mut buffer) == ffi::DAO_OK {
            ffi::dao_buffer_release(buffer);
        }
    }
}

impl<T: Pod> Drop for RecyclePool<T> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: live pool, taken by value: no buffer borrows it any
            // more. Destroy fails (Busy) only if a buffer was leaked: then
            // the pool leaks too.
            unsafe {
                close_and_drain(self.as_raw());
                ffi::dao_recycle_destroy(self.as_raw());
            }
        }
    }
}

impl<T: Pod> fmt::Debug for RecyclePool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecyclePool")
            .field("raw", &self.raw)
            .field("element", &std::any::type_name::<T>())
            .finish()
    }
}

/// Statistics of a recycle pool ([`RecyclePool::stats`]). created = free +
/// queued + held.
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct RecycleStats {
    /// Buffers created so far (at most max_buffers).
    pub created: u64,
    /// Buffers in the free list.
    pub free: u64,
    /// Buffers submitted and not yet taken.
    pub queued: u64,
    /// Buffers held by callers.
    pub held: u64,
    /// Peak of free.
    pub peak_free: u64,
    /// Peak of queued.
    pub peak_queued: u64,
    /// Peak of held.
    pub peak_held: u64,
    /// Successful acquires.
    pub acquired: u64,
    /// Successful submits.
    pub submitted: u64,
    /// Successful takes.
    pub taken: u64,
    /// Acquires that had to wait.
    pub acquire_waits: u64,
    /// Takes that had to wait.
    pub take_waits: u64,
    /// Total time acquires waited, in ns.
    pub acquire_wait_ns: u64,
    /// Total time takes waited, in ns.
    pub take_wait_ns: u64,
    /// Acquires and takes that timed out.
    pub timeouts: u64,
}

impl RecycleStats {
    fn from_raw(r: &ffi::dao_recycle_stats) -> RecycleStats {
        RecycleStats {
            created: r.created,
            free: r.free,
            queued: r.queued,
            held: r.held,
            peak_free: r.peak_free,
            peak_queued: r.peak_queued,
            peak_held: r.peak_held,
            acquired: r.acquired,
            submitted: r.submitted,
            taken: r.taken,
            acquire_waits: r.acquire_waits,
            take_waits: r.take_waits,
            acquire_wait_ns: r.acquire_wait_ns,
            take_wait_ns: r.take_wait_ns,
            timeouts: r.timeouts,
        }
    }
}

/// What every buffer handle knows of its buffer (fixed for its life).
struct BufferView<'p, T> {
    raw: NonNull<ffi::dao_buffer>,
    data: *mut T,
    len: usize,
    shape: &'p [usize],
    place: Place,
}

impl<'p, T: Pod> BufferView<'p, T> {
    /// Reads the buffer's data pointer, shape and size, and checks that its
    /// elements are `T`s.
    ///
    /// # Safety
    /// `raw` is a buffer we hold one reference to, of a pool alive for 'p.
    unsafe fn new(raw: *mut ffi::dao_buffer) -> Result<Self> {
        let raw = NonNull::new(raw).expect("libdao gave a NULL buffer");
        let view = (|| {
            let mut data = ptr::null_mut();
            let (mut ndim, mut shape) = (0 as c_int, ptr::null());
            let (mut element_size, mut bytes) = (0usize, 0usize);
            let mut place = Place::cpu().to_raw();
            // SAFETY: a held buffer; valid out-pointers. The shape belongs
            // to the pool, alive for 'p.
            unsafe {
                check(ffi::dao_buffer_data(raw.as_ptr(), &mut data))?;
                check(ffi::dao_buffer_shape(raw.as_ptr(), &mut ndim, &mut shape))?;
                check(ffi::dao_buffer_size(
                    raw.as_ptr(),
                    &mut element_size,
                    &mut bytes,
                ))?;
                check(ffi::dao_buffer_place(raw.as_ptr(), &mut place))?;
            }
            if element_size != mem::size_of::<T>() {
                return Err(Error::new(
                    Status::InvalidArgument,
                    format!(
                        "the pool's elements have {element_size} bytes, not the {} of {}",
                        mem::size_of::<T>(),
                        std::any::type_name::<T>()
                    ),
                ));
            }
            let shape = if ndim <= 0 || shape.is_null() {
                &[][..]
            } else {
                // SAFETY: `ndim` extents owned by the pool, alive for 'p.
                unsafe { slice::from_raw_parts(shape, ndim as usize) }
            };
            Ok(BufferView {
                raw,
                data: data.cast::<T>(),
                len: bytes / mem::size_of::<T>().max(1),
                shape,
                place: Place::from_raw(place),
            })
        })();
        if view.is_err() {
            // SAFETY: give back the reference we were handed.
            unsafe { ffi::dao_buffer_release(raw.as_ptr()) };
        }
        view
    }

    fn slice(&self) -> Option<&[T]> {
        // SAFETY: `len` elements of host-accessible memory aligned to at
        // least 256 bytes, held (so not reused) while self lives.
        self.place
            .is_host_accessible()
            .then(|| unsafe { slice::from_raw_parts(self.data_or_dangling(), self.len) })
    }

    fn data_or_dangling(&self) -> *mut T {
        if self.data.is_null() {
            NonNull::dangling().as_ptr()
        } else {
            self.data
        }
    }

    fn sequence(&self) -> Result<Option<u64>> {
        let mut sequence = 0u64;
        // SAFETY: a held buffer, valid out-pointer.
        check(unsafe { ffi::dao_buffer_sequence(self.raw.as_ptr(), &mut sequence) })?;
        Ok((sequence != u64::MAX).then_some(sequence))
    }

    fn release(&self) {
        // SAFETY: drops the one reference this handle holds.
        unsafe { ffi::dao_buffer_release(self.raw.as_ptr()) };
    }
}

macro_rules! buffer_getters {
    () => {
        /// Address of the first element (the same for the buffer's whole
        /// life); memory the host cannot touch on a CUDA device.
        pub fn as_ptr(&self) -> *const T {
            self.view.data
        }

        /// Number of elements (the product of the shape).
        pub fn len(&self) -> usize {
            self.view.len
        }

        /// Whether the buffer has no elements.
        pub fn is_empty(&self) -> bool {
            self.view.len == 0
        }

        /// The shape, in the order given to the pool.
        pub fn shape(&self) -> &'p [usize] {
            self.view.shape
        }

        /// Bytes of the buffer.
        pub fn byte_len(&self) -> usize {
            self.view.len * mem::size_of::<T>()
        }

        /// The place of the buffer.
        pub fn place(&self) -> Place {
            self.view.place
        }

        /// The elements, where the host may touch them (not on a CUDA device).
        pub fn as_slice(&self) -> Option<&[T]> {
            self.view.slice()
        }

        /// The buffer's position in the pool's order of submission (0 for
        /// the first submit), or `None` if it was not submitted since it was
        /// acquired (`dao_buffer_sequence`).
        pub fn sequence(&self) -> Result<Option<u64>> {
            self.view.sequence()
        }

        /// The C handle (one reference, held by `self`).
        pub fn as_raw(&self) -> *mut ffi::dao_buffer {
            self.view.raw.as_ptr()
        }
    };
}

/// A buffer of a recycle pool held by one owner, who may write it
/// ([`RecyclePool::acquire`], [`RecyclePool::take`]). Dropping it releases
/// it to the free list (`dao_buffer_release`).
pub struct RecycleBuffer<'p, T: Pod> {
    view: BufferView<'p, T>,
    _pool: PhantomData<&'p RecyclePool<T>>,
}

// SAFETY: recycle.h: buffer functions are safe from any thread while a
// reference is held, and this handle is the only reference (see
// RecyclePool::take); T is Send and Sync (Pod).
unsafe impl<T: Pod> Send for RecycleBuffer<'_, T> {}
// SAFETY: &self gives only shared access to the elements (T: Sync) and
// thread-safe getters.
unsafe impl<T: Pod> Sync for RecycleBuffer<'_, T> {}

impl<'p, T: Pod> RecycleBuffer<'p, T> {
    /// # Safety
    /// As [`BufferView::new`], and no one else holds the buffer.
    unsafe fn new(raw: *mut ffi::dao_buffer) -> Result<Self> {
        // SAFETY: the caller's contract.
        Ok(RecycleBuffer {
            view: unsafe { BufferView::new(raw)? },
            _pool: PhantomData,
        })
    }

    buffer_getters!();

    /// Mutable address of the first element.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.view.data
    }

    /// The elements, writable, where the host may touch them.
    pub fn as_mut_slice(&mut self) -> Option<&mut [T]> {
        let len = self.view.len;
        let data = self.view.data_or_dangling();
        // SAFETY: as `as_slice`, and this handle is the only reference.
        self.view
            .place
            .is_host_accessible()
            .then(|| unsafe { slice::from_raw_parts_mut(data, len) })
    }

    /// Turns the buffer into a read-only handle that can be cloned for
    /// several readers (each clone is a reference: `dao_buffer_retain`). The
    /// buffer returns to the free list when the last one drops.
    pub fn share(self) -> SharedBuffer<'p, T> {
        let this = mem::ManuallyDrop::new(self);
        // SAFETY: moves the view out of a value that is never dropped.
        SharedBuffer {
            view: unsafe { ptr::read(&this.view) },
            _pool: PhantomData,
        }
    }
}

impl<T: Pod> Drop for RecycleBuffer<'_, T> {
    fn drop(&mut self) {
        self.view.release();
    }
}

impl<T: Pod> fmt::Debug for RecycleBuffer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecycleBuffer")
            .field("raw", &self.view.raw)
            .field("shape", &self.view.shape)
            .field("place", &self.view.place)
            .finish()
    }
}

/// One reference to a buffer that several readers may hold
/// ([`RecycleBuffer::share`]); read-only. Cloning adds a reference
/// (`dao_buffer_retain`), dropping releases one.
pub struct SharedBuffer<'p, T: Pod> {
    view: BufferView<'p, T>,
    _pool: PhantomData<&'p RecyclePool<T>>,
}

// SAFETY: recycle.h: retain, release and the getters are safe from any
// thread while a reference is held; the elements are only read (T: Sync).
unsafe impl<T: Pod> Send for SharedBuffer<'_, T> {}
// SAFETY: as for Send.
unsafe impl<T: Pod> Sync for SharedBuffer<'_, T> {}

impl<'p, T: Pod> SharedBuffer<'p, T> {
    buffer_getters!();

    /// Another reference to the buffer (`dao_buffer_retain`); fails only
    /// past 2^32-1 references ([`Status::InvalidState`]).
    pub fn retain(&self) -> Result<SharedBuffer<'p, T>> {
        // SAFETY: a held buffer.
        check(unsafe { ffi::dao_buffer_retain(self.view.raw.as_ptr()) })?;
        Ok(SharedBuffer {
            view: self.view,
            _pool: PhantomData,
        })
    }
}

impl<T: Pod> Clone for SharedBuffer<'_, T> {
    /// As [`SharedBuffer::retain`].
    ///
    /// # Panics
    /// Past 2^32-1 references to one buffer.
    fn clone(&self) -> Self {
        self.retain().expect("dao_buffer_retain")
    }
}

impl<T: Pod> Drop for SharedBuffer<'_, T> {
    fn drop(&mut self) {
        self.view.release();
    }
}

impl<T: Pod> fmt::Debug for SharedBuffer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBuffer")
            .field("raw", &self.view.raw)
            .field("shape", &self.view.shape)
            .field("place", &self.view.place)
            .finish()
    }
}

impl<T> Clone for BufferView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for BufferView<'_, T> {}

// SAFETY: the buffer's data is held by the handle; its place says whether
// the host can touch it.
unsafe impl<T: Pod> Memory for RecycleBuffer<'_, T> {
    fn copy_ptr(&self) -> *const std::ffi::c_void {
        self.view.data.cast()
    }
    fn copy_len(&self) -> usize {
        self.byte_len()
    }
    fn is_host_memory(&self) -> bool {
        self.view.place.is_host_accessible()
    }
}
// SAFETY: as above; the only reference, borrowed mutably.
unsafe impl<T: Pod> MemoryMut for RecycleBuffer<'_, T> {
    fn copy_ptr_mut(&mut self) -> *mut std::ffi::c_void {
        self.view.data.cast()
    }
}
// SAFETY: as for RecycleBuffer (read only).
unsafe impl<T: Pod> Memory for SharedBuffer<'_, T> {
    fn copy_ptr(&self) -> *const std::ffi::c_void {
        self.view.data.cast()
    }
    fn copy_len(&self) -> usize {
        self.byte_len()
    }
    fn is_host_memory(&self) -> bool {
        self.view.place.is_host_accessible()
    }
}

/// A named set of recycle pools, which it owns (`dao_collection`).
///
/// ```
/// use dao::{Collection, Place};
///
/// let pools = Collection::new()?;
/// pools.add::<u16>("raw", Place::cpu(), &[1024], 4, 1, "")?;
/// let raw = pools.find::<u16>("raw")?;
/// let b = raw.acquire(None)?;
/// assert_eq!(b.len(), 1024);
/// drop(b);
/// let err = pools.find::<u16>("cooked").unwrap_err();
/// assert_eq!(err.status(), dao::Status::NotFound);
/// # Ok::<(), dao::Error>(())
/// ```
pub struct Collection {
    raw: NonNull<ffi::dao_collection>,
    /// Element type of each pool added through this handle.
    types: Mutex<HashMap<String, (TypeId, &'static str)>>,
}

// SAFETY: recycle.h: the collection functions except dao_collection_destroy
// are "safe to call from any thread"; destroy happens only in drop. The type
// table is behind a mutex.
unsafe impl Send for Collection {}
// SAFETY: as for Send.
unsafe impl Sync for Collection {}

impl Collection {
    /// An empty collection (`dao_collection_create`).
    pub fn new() -> Result<Collection> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_collection_create(&mut raw) })?;
        Ok(Collection {
            raw: NonNull::new(raw).expect("dao_collection_create gave NULL"),
            types: Mutex::new(HashMap::new()),
        })
    }

    /// The C handle. It stays owned by `self`.
    pub fn as_raw(&self) -> *mut ffi::dao_collection {
        self.raw.as_ptr()
    }

    /// Creates a pool under a new name (`dao_collection_add`); arguments as
    /// for [`RecyclePool::new`]. The collection owns it.
    pub fn add<T: Pod>(
        &self,
        name: &str,
        place: Place,
        shape: &[usize],
        max_buffers: usize,
        preallocate: usize,
        config: &str,
    ) -> Result<PoolRef<'_, T>> {
        let c_name = c_string("name", name)?;
        let config = c_string("config", config)?;
        let mut types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        let mut raw = ptr::null_mut();
        // SAFETY: live collection; strings and shape are copied; valid
        // out-pointer.
        check(unsafe {
            ffi::dao_collection_add(
                self.as_raw(),
                c_name.as_ptr(),
                place.to_raw(),
                mem::size_of::<T>(),
                ndim_of(shape)?,
                shape.as_ptr(),
                max_buffers,
                preallocate,
                config.as_ptr(),
                &mut raw,
            )
        })?;
        types.insert(
            name.to_string(),
            (TypeId::of::<T>(), std::any::type_name::<T>()),
        );
        Ok(PoolRef::new(raw))
    }

    /// The pool of a name (`dao_collection_find`):
    /// [`Status::NotFound`] (the message lists the names there are), or
    /// [`Status::InvalidArgument`] when its elements are not `T`s.
    pub fn find<T: Pod>(&self, name: &str) -> Result<PoolRef<'_, T>> {
        let c_name = c_string("name", name)?;
        let mut raw = ptr::null_mut();
        // SAFETY: live collection, valid string and out-pointer.
        check(unsafe { ffi::dao_collection_find(self.as_raw(), c_name.as_ptr(), &mut raw) })?;
        let types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        match types.get(name) {
            Some((id, _)) if *id == TypeId::of::<T>() => Ok(PoolRef::new(raw)),
            Some((_, type_name)) => Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "pool {name:?} holds elements of {type_name}, not {}",
                    std::any::type_name::<T>()
                ),
            )),
            None => Err(Error::new(
                Status::InvalidArgument,
                format!("pool {name:?} was not added through this Collection"),
            )),
        }
    }

    /// Closes every pool (`dao_collection_close`).
    pub fn close(&self) -> Result<()> {
        // SAFETY: live collection.
        check(unsafe { ffi::dao_collection_close(self.as_raw()) })
    }
}

impl Drop for Collection {
    fn drop(&mut self) {
        self.close().ok();
        let names: Vec<String> = self
            .types
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        for name in names {
            if let Ok(c_name) = c_string("name", &name) {
                let mut raw = ptr::null_mut();
                // SAFETY: live collection, valid string and out-pointer; the
                // pool is no longer borrowed by anyone.
                unsafe {
                    if ffi::dao_collection_find(self.as_raw(), c_name.as_ptr(), &mut raw)
                        == ffi::DAO_OK
                    {
                        close_and_drain(raw);
                    }
                }
            }
        }
        // SAFETY: live collection; no pool handle borrows it any more. It
        // fails (Busy) only if a buffer was leaked: then it leaks too.
        unsafe { ffi::dao_collection_destroy(self.as_raw()) };
    }
}

impl fmt::Debug for Collection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let types = self.types.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Collection")
            .field("raw", &self.raw)
            .field("pools", &types.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A pool that a [`Collection`] owns, borrowed from it; dereferences to
/// [`RecyclePool`]. Dropping it does not destroy the pool.
pub struct PoolRef<'c, T: Pod> {
    pool: RecyclePool<T>,
    _collection: PhantomData<&'c Collection>,
}

impl<T: Pod> PoolRef<'_, T> {
    fn new(raw: *mut ffi::dao_recycle_pool) -> Self {
        PoolRef {
            pool: RecyclePool {
                raw: NonNull::new(raw).expect("libdao gave a NULL pool"),
                owned: false,
                _t: PhantomData,
            },
            _collection: PhantomData,
        }
    }
}

impl<T: Pod> Deref for PoolRef<'_, T> {
    type Target = RecyclePool<T>;
    fn deref(&self) -> &RecyclePool<T> {
        &self.pool
    }
}

impl<T: Pod> fmt::Debug for PoolRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pool.fmt(f)
    }
}
