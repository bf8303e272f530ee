//! Allocations: raw blocks of any place ([`Allocation`]) and typed,
//! host-accessible buffers ([`Buffer`]), both freed on drop.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};
use std::{fmt, mem, slice};

use dao_sys as ffi;

use crate::allocator::Allocator;
use crate::error::{check, Error, Result, Status};
use crate::place::Place;
use crate::stream::Stream;

/// Plain old data: element types whose every bit pattern is a valid value,
/// with no padding and no pointers, so that memory written by libdao, by a
/// device or by another language can be read as them.
///
/// # Safety
/// Implement it only for `Copy` types without padding bytes, references,
/// pointers, or invalid bit patterns (so not `bool` or `char`).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive number: no padding, every bit pattern valid.
        unsafe impl Pod for $t {}
    )*};
}
pod!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
// SAFETY: an array of plain old data has no padding between its elements.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// Bytes of `len` elements of `T`, or an error that names the overflow.
pub(crate) fn bytes_of<T>(len: usize) -> Result<usize> {
    len.checked_mul(mem::size_of::<T>()).ok_or_else(|| {
        Error::new(
            Status::InvalidArgument,
            format!(
                "{len} elements of {} bytes overflow the address space",
                mem::size_of::<T>()
            ),
        )
    })
}

pub(crate) fn not_host_accessible(place: Place, what: &str) -> Error {
    Error::new(
        Status::Unsupported,
        format!(
            "{what}: the memory of {place} is not accessible from the host; use an Allocation \
             and copy with a stream"
        ),
    )
}

/// Who frees an allocation.
#[derive(Clone, Copy)]
pub(crate) enum Owner<'a> {
    /// The place's default allocator (`dao_free`).
    Place,
    /// An allocator object (`dao_allocator_free`).
    Allocator(&'a Allocator),
}

/// A block of memory on a place, freed when dropped.
///
/// It comes from [`Place::alloc`] (the place's default allocator, freed with
/// `dao_free`) or from [`Allocator::alloc`] (borrowing the allocator, which
/// therefore outlives it). It gives raw pointers only, since its memory may
/// be on a device the host cannot touch; for typed access to host-accessible
/// memory use a [`Buffer`], and to copy to or from device memory use
/// [`Stream::scope`] (or the unsafe [`memcpy_async`](crate::memcpy_async)).
///
/// Every pointer is aligned to at least 256 bytes. A size of 0 allocates
/// nothing and gives a null pointer.
pub struct Allocation<'a> {
    ptr: *mut u8,
    size: usize,
    place: Place,
    owner: Owner<'a>,
}

// SAFETY: an Allocation is a uniquely owned block; dao_free and
// dao_allocator_free are safe to call from any thread (memory.h, allocator.h:
// "Safe to call concurrently with any call on the same allocator except
// dao_allocator_destroy", which the borrow of the allocator rules out), and
// the Allocator it borrows is Sync.
unsafe impl Send for Allocation<'_> {}
// SAFETY: shared references give only the pointer and sizes, and
// usable_size, which allocator.h allows from any thread.
unsafe impl Sync for Allocation<'_> {}

impl<'a> Allocation<'a> {
    /// Takes ownership of a block.
    pub(crate) fn from_parts(
        ptr: *mut c_void,
        size: usize,
        place: Place,
        owner: Owner<'a>,
    ) -> Self {
        Allocation {
            ptr: ptr.cast(),
            size,
            place,
            owner,
        }
    }

    /// Address of the first byte (null for a size of 0).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// Mutable address of the first byte (null for a size of 0).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// Bytes asked for.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The place of the memory.
    pub fn place(&self) -> Place {
        self.place
    }

    /// Whether the host may touch the memory (see [`Place::is_host_accessible`]).
    pub fn is_host_accessible(&self) -> bool {
        self.place.is_host_accessible()
    }

    /// The allocator handle that owns the block: the allocator object, or
    /// the place's default allocator.
    fn allocator_handle(&self) -> Result<*mut ffi::dao_allocator> {
        match self.owner {
            Owner::Allocator(a) => Ok(a.as_raw()),
            Owner::Place => {
                let mut raw = ptr::null_mut();
                // SAFETY: valid out-pointer; the handle lives until the
                // process ends.
                check(unsafe { ffi::dao_place_allocator(self.place.to_raw(), &mut raw) })?;
                Ok(raw)
            }
        }
    }

    /// Usable size of the block: at least [`Allocation::size`]
    /// (`dao_allocator_usable_size`). 0 for an empty allocation, which has no
    /// block.
    pub fn usable_size(&self) -> Result<usize> {
        if self.ptr.is_null() {
            return Ok(0);
        }
        let a = self.allocator_handle()?;
        let mut size = 0usize;
        // SAFETY: `a` is alive (borrowed or a place default) and `ptr` is
        // one of its live blocks.
        check(unsafe { ffi::dao_allocator_usable_size(a, self.ptr.cast(), &mut size) })?;
        Ok(size)
    }

    /// Marks the block as used on another stream as well, as PyTorch's
    /// `recordStream` (`dao_allocator_record_stream`): on drop, a
    /// stream-ordered ("caching") allocator reuses the block only after the
    /// work queued on `stream` up to then has run. Other strategies give
    /// [`Status::Unsupported`].
    ///
    /// The stream must stay alive until the block has been freed: it is
    /// borrowed for the allocation's whole lifetime `'a` (`&mut self` keeps
    /// `'a` from being shortened to fit a shorter-lived stream):
    ///
    /// ```compile_fail
    /// # fn f() -> dao::Result<()> {
    /// use dao::{Allocator, Place, Stream};
    /// let a = Allocator::new(Place::cpu(), Some("caching"), "")?;
    /// let mut block = a.alloc(4096, None)?;
    /// {
    ///     let other = Stream::new(Place::cpu())?;
    ///     block.record_stream(&other)?; // error: `other` does not live long enough
    /// }
    /// drop(block);
    /// # Ok(()) }
    /// ```
    pub fn record_stream(&mut self, stream: &'a Stream) -> Result<()> {
        let a = self.allocator_handle()?;
        // SAFETY: `a` and `stream` are alive; `ptr` is a block of `a` (or
        // NULL, which the library refuses with a status).
        check(unsafe { ffi::dao_allocator_record_stream(a, self.ptr.cast(), stream.as_raw()) })
    }
}

impl Drop for Allocation<'_> {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        // SAFETY: the block is live and owned by this value; the owner is
        // alive (a place default, or borrowed for 'a). A failure cannot
        // happen for a live block and is ignored, as a drop cannot report it.
        unsafe {
            match self.owner {
                Owner::Place => ffi::dao_free(self.place.to_raw(), self.ptr.cast()),
                Owner::Allocator(a) => ffi::dao_allocator_free(a.as_raw(), self.ptr.cast()),
            };
        }
    }
}

impl fmt::Debug for Allocation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allocation")
            .field("ptr", &self.ptr)
            .field("size", &self.size)
            .field("place", &self.place)
            .finish()
    }
}

/// A typed array in host-accessible memory of a place, freed when dropped;
/// it dereferences to `[T]`.
///
/// Made by [`Place::buffer_zeroed`], [`Place::buffer_from_slice`],
/// [`Allocator::buffer_zeroed`] and [`Allocator::buffer_from_slice`] on CPU,
/// SIM, CUDA pinned and CUDA managed places; they refuse CUDA device memory
/// with [`Status::Unsupported`] (use an [`Allocation`] there). Its contents
/// are always initialised.
///
/// ```
/// use dao::{Allocator, Place};
///
/// let a = Allocator::new(Place::cpu(), Some("buddy"), "chunk_size=1MiB")?;
/// let mut v = a.buffer_from_slice(&[1.0f64, 2.0, 3.0], None)?;
/// v[1] *= 10.0;
/// assert_eq!(&v[..], &[1.0, 20.0, 3.0]);
/// assert_eq!(v.as_ptr() as usize % 256, 0);
/// assert_eq!(a.stats()?.live_blocks, 1);
/// drop(v);
/// assert_eq!(a.stats()?.live_blocks, 0);
/// # Ok::<(), dao::Error>(())
/// ```
pub struct Buffer<'a, T: Pod> {
    mem: Allocation<'a>,
    len: usize,
    _t: PhantomData<T>,
}

impl<'a, T: Pod> Buffer<'a, T> {
    /// Zero-filled buffer over a fresh allocation of `len` elements.
    pub(crate) fn zeroed(mem: Allocation<'a>, len: usize) -> Buffer<'a, T> {
        debug_assert!(mem.is_host_accessible() && mem.size == len * mem::size_of::<T>());
        if !mem.ptr.is_null() {
            // SAFETY: `size` host-accessible bytes owned by `mem`.
            unsafe { ptr::write_bytes(mem.ptr, 0, mem.size) };
        }
        Buffer {
            mem,
            len,
            _t: PhantomData,
        }
    }

    /// Buffer over a fresh allocation, filled with a copy of `data`.
    pub(crate) fn copied(mem: Allocation<'a>, data: &[T]) -> Buffer<'a, T> {
        debug_assert!(mem.is_host_accessible() && mem.size == mem::size_of_val(data));
        if !mem.ptr.is_null() {
            // SAFETY: the allocation holds `data.len()` elements, is aligned
            // to 256 bytes and cannot overlap `data`, which is borrowed.
            unsafe { ptr::copy_nonoverlapping(data.as_ptr(), mem.ptr.cast::<T>(), data.len()) };
        }
        Buffer {
            mem,
            len: data.len(),
            _t: PhantomData,
        }
    }

    /// The allocation under the buffer.
    pub fn allocation(&self) -> &Allocation<'a> {
        &self.mem
    }

    /// Gives up the typed view and keeps the allocation.
    pub fn into_allocation(self) -> Allocation<'a> {
        self.mem
    }

    /// The place of the memory.
    pub fn place(&self) -> Place {
        self.mem.place
    }

    fn data(&self) -> *mut T {
        if self.mem.ptr.is_null() {
            NonNull::dangling().as_ptr()
        } else {
            self.mem.ptr.cast()
        }
    }
}

impl<T: Pod> Deref for Buffer<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialised elements of host-accessible memory,
        // aligned to 256 bytes (or dangling for none), owned by self.
        unsafe { slice::from_raw_parts(self.data(), self.len) }
    }
}

impl<T: Pod> DerefMut for Buffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in deref, and `&mut self` makes the access unique.
        unsafe { slice::from_raw_parts_mut(self.data(), self.len) }
    }
}

impl<T: Pod + fmt::Debug> fmt::Debug for Buffer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("place", &self.mem.place)
            .field("data", &&self[..])
            .finish()
    }
}

impl Place {
    /// Allocates `size` bytes from this place's default allocator
    /// (`dao_alloc`), freed with `dao_free` on drop.
    ///
    /// ```
    /// use dao::Place;
    ///
    /// let cpu = Place::cpu();
    /// let before = cpu.used()?;
    /// let block = cpu.alloc(1 << 20)?;
    /// assert_eq!(block.as_ptr() as usize % 256, 0);
    /// assert!(cpu.used()? >= before + (1 << 20));
    /// drop(block);
    /// assert_eq!(cpu.used()?, before);
    /// # Ok::<(), dao::Error>(())
    /// ```
    pub fn alloc(self, size: usize) -> Result<Allocation<'static>> {
        let mut ptr = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_alloc(self.to_raw(), size, &mut ptr) })?;
        Ok(Allocation::from_parts(ptr, size, self, Owner::Place))
    }

    /// A zero-filled buffer of `len` elements from this place's default
    /// allocator. [`Status::Unsupported`] for memory the host cannot touch.
    pub fn buffer_zeroed<T: Pod>(self, len: usize) -> Result<Buffer<'static, T>> {
        if !self.is_host_accessible() {
            return Err(not_host_accessible(self, "Place::buffer_zeroed"));
        }
        Ok(Buffer::zeroed(self.alloc(bytes_of::<T>(len)?)?, len))
    }

    /// A buffer holding a copy of `data`, from this place's default
    /// allocator. [`Status::Unsupported`] for memory the host cannot touch.
    pub fn buffer_from_slice<T: Pod>(self, data: &[T]) -> Result<Buffer<'static, T>> {
        if !self.is_host_accessible() {
            return Err(not_host_accessible(self, "Place::buffer_from_slice"));
        }
        Ok(Buffer::copied(self.alloc(mem::size_of_val(data))?, data))
    }
}

/// Memory that a stream copy may read ([`StreamScope::copy`](crate::StreamScope::copy)).
///
/// # Safety
/// `copy_ptr` must be valid for reading `copy_len` bytes for as long as the
/// value is borrowed, and `is_host_accessible` must be false for memory the
/// host cannot touch.
pub unsafe trait Memory {
    /// Address of the first byte.
    fn copy_ptr(&self) -> *const c_void;
    /// Bytes.
    fn copy_len(&self) -> usize;
    /// Whether the host may touch the memory.
    fn is_host_memory(&self) -> bool;
}

/// Memory that a stream copy may write.
///
/// # Safety
/// As [`Memory`], and `copy_ptr_mut` must be valid for writing `copy_len`
/// bytes while the value is borrowed mutably.
pub unsafe trait MemoryMut: Memory {
    /// Mutable address of the first byte.
    fn copy_ptr_mut(&mut self) -> *mut c_void;
}

// SAFETY: a slice is host memory of its length.
unsafe impl<T: Pod> Memory for [T] {
    fn copy_ptr(&self) -> *const c_void {
        self.as_ptr().cast()
    }
    fn copy_len(&self) -> usize {
        mem::size_of_val(self)
    }
    fn is_host_memory(&self) -> bool {
        true
    }
}
// SAFETY: as above, written through a unique borrow.
unsafe impl<T: Pod> MemoryMut for [T] {
    fn copy_ptr_mut(&mut self) -> *mut c_void {
        self.as_mut_ptr().cast()
    }
}
// SAFETY: a vector's elements are host memory of its length.
unsafe impl<T: Pod> Memory for Vec<T> {
    fn copy_ptr(&self) -> *const c_void {
        self.as_ptr().cast()
    }
    fn copy_len(&self) -> usize {
        mem::size_of_val(&self[..])
    }
    fn is_host_memory(&self) -> bool {
        true
    }
}
// SAFETY: as above, written through a unique borrow.
unsafe impl<T: Pod> MemoryMut for Vec<T> {
    fn copy_ptr_mut(&mut self) -> *mut c_void {
        self.as_mut_ptr().cast()
    }
}
// SAFETY: the block is owned by the allocation and has `size` bytes; its
// place says whether the host can touch it.
unsafe impl Memory for Allocation<'_> {
    fn copy_ptr(&self) -> *const c_void {
        self.ptr.cast()
    }
    fn copy_len(&self) -> usize {
        self.size
    }
    fn is_host_memory(&self) -> bool {
        self.is_host_accessible()
    }
}
// SAFETY: as above, written through a unique borrow.
unsafe impl MemoryMut for Allocation<'_> {
    fn copy_ptr_mut(&mut self) -> *mut c_void {
        self.ptr.cast()
    }
}
// SAFETY: a buffer is host-accessible memory of `len` elements.
unsafe impl<T: Pod> Memory for Buffer<'_, T> {
    fn copy_ptr(&self) -> *const c_void {
        self.data().cast()
    }
    fn copy_len(&self) -> usize {
        mem::size_of_val(&self[..])
    }
    fn is_host_memory(&self) -> bool {
        true
    }
}
// SAFETY: as above, written through a unique borrow.
unsafe impl<T: Pod> MemoryMut for Buffer<'_, T> {
    fn copy_ptr_mut(&mut self) -> *mut c_void {
        self.data().cast()
    }
}
