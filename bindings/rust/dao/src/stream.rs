//! Streams and events: ordered, asynchronous work on a place.

use std::any::Any;
use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use dao_sys as ffi;

use crate::error::{check, Error, Result, Status};
use crate::memory::{Memory, MemoryMut};
use crate::place::{Place, PlaceKind};

/// The C handle of an optional stream (`None`: the default stream, NULL).
pub(crate) fn raw_stream(stream: Option<&Stream>) -> ffi::dao_stream {
    stream.map_or(ffi::DAO_STREAM_DEFAULT, Stream::as_raw)
}

/// Text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// Ends the process: a panic must not unwind into libdao, and there is no
/// caller to hand it to.
pub(crate) fn abort_after_panic(what: &str, payload: Box<dyn Any + Send>) -> ! {
    eprintln!(
        "dao: {what} panicked: {}; aborting, since a panic must not unwind into libdao",
        panic_message(&*payload)
    );
    std::process::abort()
}

/// Runs a boxed `F` once, from a libdao thread.
unsafe extern "C" fn host_trampoline<F: FnOnce()>(user_data: *mut c_void) {
    // SAFETY: `user_data` is the Box<F> leaked by `launch`, and libdao calls
    // a host function exactly once.
    let f = unsafe { Box::from_raw(user_data.cast::<F>()) };
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        abort_after_panic("a host function", payload);
    }
}

/// Queues `f` on `stream` (NULL: runs it now).
fn launch<F: FnOnce() + Send>(stream: ffi::dao_stream, f: F) -> Result<()> {
    let data = Box::into_raw(Box::new(f));
    // SAFETY: a live stream handle (or NULL); the trampoline matches F and
    // takes ownership of `data` when it runs.
    let code =
        unsafe { ffi::dao_launch_host_func(stream, Some(host_trampoline::<F>), data.cast()) };
    if code != ffi::DAO_OK {
        let err = Error::last(code);
        // SAFETY: not queued, so still ours.
        drop(unsafe { Box::from_raw(data) });
        return Err(err);
    }
    Ok(())
}

/// A stream: an ordered queue of work (copies and host functions) on a place
/// (`dao_stream`), destroyed on drop after its queued work has run.
///
/// On SIM devices each stream has a worker thread of its own, so work is
/// truly asynchronous; on CUDA places it is a `CUstream`; on the CPU each
/// operation runs at once on the calling thread. Where this crate takes an
/// `Option<&Stream>`, `None` is the default stream: the operation runs
/// synchronously before the call returns.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use dao::{Place, Stream};
///
/// dao::sim::configure(&[64 << 20, 64 << 20])?; // or DAO_SIM_DEVICES=2x64MiB
/// let stream = Stream::new(Place::sim(0))?;
/// let log = Arc::new(Mutex::new(Vec::new()));
/// for i in 0..3 {
///     let log = Arc::clone(&log);
///     stream.launch_host_func(move || log.lock().unwrap().push(i))?;
/// }
/// stream.synchronize()?;
/// assert_eq!(*log.lock().unwrap(), [0, 1, 2]);
///
/// // Copies that borrow memory: the scope waits for the stream at its end,
/// // and a destination stays borrowed until then.
/// let src = vec![7u32; 1024];
/// let mut device = Place::sim(0).alloc(4096)?;
/// let mut back = vec![0u32; 1024];
/// stream.scope(|s| s.copy(&mut device, &src))??;
/// stream.scope(|s| s.copy(&mut back, &device))??;
/// assert_eq!(back, src);
/// # Ok::<(), dao::Error>(())
/// ```
pub struct Stream {
    raw: NonNull<ffi::dao_stream_st>,
}

// SAFETY: stream.h: every stream function except dao_stream_destroy is "safe
// to call from any thread", and destroy happens only in drop/destroy, which
// take the stream by value.
unsafe impl Send for Stream {}
// SAFETY: as for Send: all &self methods are thread-safe in C.
unsafe impl Sync for Stream {}

impl Stream {
    /// Creates a stream on a place (`dao_stream_create`).
    pub fn new(place: Place) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_stream_create(place.to_raw(), &mut raw) })?;
        Ok(Stream {
            raw: NonNull::new(raw).expect("dao_stream_create gave NULL"),
        })
    }

    /// Adopts a native stream (a `CUstream` / `cudaStream_t` on a CUDA
    /// place; `dao_stream_wrap`). Dropping the `Stream` waits for its work
    /// and frees only the wrapper. Other places give
    /// [`Status::Unsupported`].
    ///
    /// # Safety
    /// `native` must be a stream of the place's device (or NULL for CUDA's
    /// legacy default stream) and stay alive until the `Stream` is dropped.
    pub unsafe fn wrap(place: Place, native: *mut c_void) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer; the caller vouches for `native`.
        check(unsafe { ffi::dao_stream_wrap(place.to_raw(), native, &mut raw) })?;
        Ok(Stream {
            raw: NonNull::new(raw).expect("dao_stream_wrap gave NULL"),
        })
    }

    /// A borrowed view of a handle that libdao owns (a tiered pool's
    /// compute stream); never destroyed by this crate.
    ///
    /// # Safety
    /// `raw` must be a live stream for as long as the view is used.
    pub(crate) unsafe fn borrowed(raw: NonNull<ffi::dao_stream_st>) -> ManuallyDrop<Stream> {
        ManuallyDrop::new(Stream { raw })
    }

    /// The C handle. It stays owned by `self`.
    pub fn as_raw(&self) -> ffi::dao_stream {
        self.raw.as_ptr()
    }

    /// The address of the handle: what [`SegmentInfo::stream`](crate::SegmentInfo::stream)
    /// and [`BlockInfo::stream`](crate::BlockInfo::stream) hold for blocks of
    /// this stream.
    pub fn id(&self) -> usize {
        self.raw.as_ptr() as usize
    }

    /// The native handle (`CUstream` on CUDA, NULL elsewhere;
    /// `dao_stream_native`).
    pub fn native(&self) -> Result<*mut c_void> {
        let mut native = ptr::null_mut();
        // SAFETY: live stream, valid out-pointer.
        check(unsafe { ffi::dao_stream_native(self.as_raw(), &mut native) })?;
        Ok(native)
    }

    /// The place of the stream (`dao_stream_place`).
    pub fn place(&self) -> Result<Place> {
        let mut place = Place::cpu().to_raw();
        // SAFETY: live stream, valid out-pointer.
        check(unsafe { ffi::dao_stream_place(self.as_raw(), &mut place) })?;
        Ok(Place::from_raw(place))
    }

    /// Waits until the work queued before the call has run
    /// (`dao_stream_synchronize`). From a host function running on this
    /// stream it fails with [`Status::InvalidState`] instead of waiting for
    /// itself.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live stream.
        check(unsafe { ffi::dao_stream_synchronize(self.as_raw()) })
    }

    /// Whether all queued work has run, without waiting (`dao_stream_query`).
    pub fn is_idle(&self) -> Result<bool> {
        let mut idle = 0;
        // SAFETY: live stream, valid out-pointer.
        check(unsafe { ffi::dao_stream_query(self.as_raw(), &mut idle) })?;
        Ok(idle != 0)
    }

    /// Makes later work on this stream wait until `event` has completed (its
    /// last record before this call; `dao_stream_wait_event`). The event must
    /// be of the stream's place, or of any SIM device for a SIM stream.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        // SAFETY: live stream and event.
        check(unsafe { ffi::dao_stream_wait_event(self.as_raw(), event.as_raw()) })
    }

    /// Runs `f` in stream order (`dao_launch_host_func`): once all earlier
    /// work has run, and later work waits for it to return.
    ///
    /// `f` runs on a libdao or driver thread, hence `Send`; it is boxed and
    /// kept until then, hence `'static` (to borrow data instead, use
    /// [`Stream::scope`]). It must not synchronize or destroy this stream
    /// (libdao refuses with [`Status::InvalidState`] rather than deadlock).
    /// A panic in `f` cannot unwind into libdao: it aborts the process with
    /// the panic message.
    pub fn launch_host_func<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        launch(self.as_raw(), f)
    }

    /// Runs `f` with a [`StreamScope`] that queues copies and host functions
    /// which may borrow data of the caller, then waits for the stream before
    /// it returns (also when `f` panics), so that nothing borrowed is used
    /// after the scope. Gives `f`'s result, or the error of that final wait.
    pub fn scope<'env, F, R>(&self, f: F) -> Result<R>
    where
        F: for<'scope> FnOnce(&'scope StreamScope<'scope, 'env>) -> R,
    {
        struct WaitOnUnwind<'a>(&'a Stream);
        impl Drop for WaitOnUnwind<'_> {
            fn drop(&mut self) {
                self.0.finish_scope().ok();
            }
        }
        let scope = StreamScope {
            stream: self,
            _scope: PhantomData,
            _env: PhantomData,
        };
        let guard = WaitOnUnwind(self);
        let result = f(&scope);
        std::mem::forget(guard);
        self.finish_scope()?;
        Ok(result)
    }

    /// Waits for the work of a scope. If the stream cannot be waited for
    /// because this is one of its own host functions, queued work may still
    /// borrow the scope's data: the process aborts rather than let it
    /// dangle.
    fn finish_scope(&self) -> Result<()> {
        match self.synchronize() {
            Err(e) if e.status() == Status::InvalidState => {
                eprintln!(
                    "dao: Stream::scope cannot wait for its stream ({e}); aborting, since queued \
                     work still borrows the scope's data"
                );
                std::process::abort()
            }
            other => other,
        }
    }

    /// Destroys the stream after its queued work has run, and reports
    /// failure (`dao_stream_destroy`); dropping does the same silently. On
    /// failure the handle is forgotten, not destroyed.
    pub fn destroy(self) -> Result<()> {
        let raw = self.as_raw();
        std::mem::forget(self);
        // SAFETY: live stream, taken by value: no other reference remains.
        check(unsafe { ffi::dao_stream_destroy(raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: live stream, no other reference remains. It fails only
        // when dropped from one of its own host functions: then it leaks.
        unsafe { ffi::dao_stream_destroy(self.as_raw()) };
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream").field("raw", &self.raw).finish()
    }
}

/// Queues work on a stream that may borrow data for `'scope`
/// ([`Stream::scope`]); the scope waits for the stream before it ends.
pub struct StreamScope<'scope, 'env: 'scope> {
    stream: &'scope Stream,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> StreamScope<'scope, 'env> {
    /// The stream.
    pub fn stream(&self) -> &'scope Stream {
        self.stream
    }

    /// Queues a copy of all of `src` into the start of `dst`
    /// (`dao_memcpy_async`). Both stay borrowed until the scope ends.
    ///
    /// A copy larger than `dst` is refused with
    /// [`Status::InvalidArgument`]; so is a copy between overlapping
    /// ranges (by libdao). On CPU and SIM streams both sides must be memory
    /// the host can touch ([`Status::Unsupported`] otherwise); on CUDA
    /// streams the driver takes any memory it knows.
    pub fn copy<D, S>(&'scope self, dst: &'scope mut D, src: &'scope S) -> Result<()>
    where
        D: MemoryMut + ?Sized,
        S: Memory + ?Sized,
    {
        let bytes = src.copy_len();
        if bytes > dst.copy_len() {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "StreamScope::copy: {bytes} bytes do not fit in {} bytes",
                    dst.copy_len()
                ),
            ));
        }
        if bytes == 0 {
            return Ok(());
        }
        let place = self.stream.place()?;
        let driver_copies = matches!(
            place.kind(),
            PlaceKind::Cuda | PlaceKind::CudaPinned | PlaceKind::CudaManaged
        );
        let host_copy = src.is_host_memory() && dst.is_host_memory();
        if !(driver_copies || host_copy) {
            return Err(Error::new(
                Status::Unsupported,
                format!(
                    "StreamScope::copy: a stream of {place} copies with memcpy, so both sides \
                     must be memory the host can touch"
                ),
            ));
        }
        // SAFETY: both ranges are valid for `bytes` (Memory contract) and
        // stay borrowed until the scope has waited for the stream.
        check(unsafe {
            ffi::dao_memcpy_async(
                dst.copy_ptr_mut(),
                src.copy_ptr(),
                bytes,
                self.stream.as_raw(),
            )
        })
    }

    /// Queues `f` in stream order, like [`Stream::launch_host_func`], but
    /// `f` may borrow data for `'scope`.
    pub fn launch<F: FnOnce() + Send + 'scope>(&'scope self, f: F) -> Result<()> {
        launch(self.stream.as_raw(), f)
    }
}

impl fmt::Debug for StreamScope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamScope")
            .field("stream", self.stream)
            .finish()
    }
}

/// Copies `bytes` from `src` to `dst` in stream order (`dao_memcpy_async`);
/// with `None` (the default stream) the copy is a plain memcpy done before
/// the call returns.
///
/// # Safety
/// Both ranges must be valid for `bytes` and must stay valid (and `dst`
/// untouched by anything else) until the copy has run. On CPU and SIM
/// streams and on the default stream both must be memory the host can
/// touch. Prefer [`StreamScope::copy`], which checks all this.
pub unsafe fn memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    stream: Option<&Stream>,
) -> Result<()> {
    // SAFETY: the caller's contract.
    check(unsafe { ffi::dao_memcpy_async(dst, src, bytes, raw_stream(stream)) })
}

/// An event: a point in a stream's work (`dao_event`), destroyed on drop.
/// A new event counts as completed.
///
/// ```
/// use dao::{Event, Place, Stream};
///
/// dao::sim::configure(&[64 << 20, 64 << 20])?;
/// let (a, b) = (Stream::new(Place::sim(0))?, Stream::new(Place::sim(0))?);
/// let done = Event::new(Place::sim(0))?;
/// a.launch_host_func(|| std::thread::sleep(std::time::Duration::from_millis(20)))?;
/// done.record(Some(&a))?;
/// b.wait_event(&done)?; // b's later work runs after a's sleep
/// done.synchronize()?;
/// assert!(done.is_complete()?);
/// # Ok::<(), dao::Error>(())
/// ```
pub struct Event {
    raw: NonNull<ffi::dao_event_st>,
}

// SAFETY: stream.h: every event function except dao_event_destroy is "safe
// to call from any thread", and destroy happens only in drop.
unsafe impl Send for Event {}
// SAFETY: as for Send.
unsafe impl Sync for Event {}

impl Event {
    /// Creates an event on a place (`dao_event_create`).
    pub fn new(place: Place) -> Result<Event> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_event_create(place.to_raw(), &mut raw) })?;
        Ok(Event {
            raw: NonNull::new(raw).expect("dao_event_create gave NULL"),
        })
    }

    /// The C handle. It stays owned by `self`.
    pub fn as_raw(&self) -> ffi::dao_event {
        self.raw.as_ptr()
    }

    /// Records the event at the current end of `stream`, a stream of the
    /// event's place (`dao_event_record`); with `None` it completes at once.
    pub fn record(&self, stream: Option<&Stream>) -> Result<()> {
        // SAFETY: live event and stream.
        check(unsafe { ffi::dao_event_record(self.as_raw(), raw_stream(stream)) })
    }

    /// Whether the event has completed, without waiting (`dao_event_query`).
    pub fn is_complete(&self) -> Result<bool> {
        let mut done = 0;
        // SAFETY: live event, valid out-pointer.
        check(unsafe { ffi::dao_event_query(self.as_raw(), &mut done) })?;
        Ok(done != 0)
    }

    /// Waits until the event has completed (`dao_event_synchronize`).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: live event.
        check(unsafe { ffi::dao_event_synchronize(self.as_raw()) })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: live event, no other reference remains.
        unsafe { ffi::dao_event_destroy(self.as_raw()) };
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("raw", &self.raw).finish()
    }
}
