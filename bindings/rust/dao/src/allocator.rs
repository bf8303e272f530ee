//! Allocator objects: a strategy on a place, configured by a string; their
//! statistics and snapshots.

use std::ffi::c_char;
use std::fmt;
use std::mem;
use std::ptr::{self, NonNull};

use dao_sys as ffi;

use crate::error::{c_string, check, owned_string, Error, Result};
use crate::memory::{bytes_of, not_host_accessible, Allocation, Buffer, Owner, Pod};
use crate::place::Place;
use crate::stream::{raw_stream, Stream};

/// An allocator: a strategy ("buddy", "caching", "system") on a place
/// (`dao_allocator`).
///
/// Made by [`Allocator::new`] (owned: destroyed on drop, after every
/// [`Allocation`] it handed out, since they borrow it) or by
/// [`Allocator::for_place`] (a place's default allocator, which lives until
/// the process ends; dropping the handle does nothing).
///
/// ```
/// use dao::{Allocator, Place};
///
/// let a = Allocator::new(Place::cpu(), Some("buddy"), "chunk_size=1MiB,max_pool=4MiB")?;
/// let blocks: Vec<_> = (0..3).map(|_| a.alloc(1000, None)).collect::<Result<_, _>>()?;
/// let stats = a.stats()?;
/// assert_eq!(stats.live_blocks, 3);
/// assert_eq!(stats.requested_bytes, 3000);
/// assert!(stats.allocated_bytes >= 3000);
/// drop(blocks);
/// assert_eq!(a.stats()?.live_blocks, 0);
///
/// // Past max_pool: an error with the status and the library's message.
/// let err = a.alloc(8 << 20, None).unwrap_err();
/// assert_eq!(err.status(), dao::Status::OutOfMemory);
/// println!("{err}");
/// # Ok::<(), dao::Error>(())
/// ```
pub struct Allocator {
    raw: NonNull<ffi::dao_allocator>,
    place: Place,
    owned: bool,
}

// SAFETY: allocator.h: every call on an allocator is "safe to call
// concurrently with any call on the same allocator except
// dao_allocator_destroy", and destroy happens only in drop/destroy, which
// take the allocator by value (no other reference can exist then).
unsafe impl Send for Allocator {}
// SAFETY: as for Send: all &self methods are thread-safe in C.
unsafe impl Sync for Allocator {}

impl Allocator {
    /// Creates an allocator (`dao_allocator_create`).
    ///
    /// `strategy` is "buddy", "caching" or "system", or `None` for the
    /// place's default (`DAO_ALLOCATOR`); `config` is `key=value,...` for the
    /// strategy, or "" for its defaults. Unknown keys and malformed values
    /// are errors ([`Status::InvalidArgument`](crate::Status::InvalidArgument)
    /// with a message that names them).
    pub fn new(place: Place, strategy: Option<&str>, config: &str) -> Result<Allocator> {
        let strategy = strategy.map(|s| c_string("strategy", s)).transpose()?;
        let config = c_string("config", config)?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid strings (copied by the library) and out-pointer.
        check(unsafe {
            ffi::dao_allocator_create(
                place.to_raw(),
                strategy.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
                config.as_ptr(),
                &mut raw,
            )
        })?;
        Ok(Allocator {
            raw: NonNull::new(raw).expect("dao_allocator_create gave NULL"),
            place,
            owned: true,
        })
    }

    /// The default allocator of a place, created if needed
    /// (`dao_place_allocator`). It belongs to libdao and lives until the
    /// process ends; dropping this handle does not destroy it.
    pub fn for_place(place: Place) -> Result<Allocator> {
        let mut raw = ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { ffi::dao_place_allocator(place.to_raw(), &mut raw) })?;
        Ok(Allocator {
            raw: NonNull::new(raw).expect("dao_place_allocator gave NULL"),
            place,
            owned: false,
        })
    }

    /// The C handle, for calls this crate does not wrap. It stays owned by
    /// `self`.
    pub fn as_raw(&self) -> *mut ffi::dao_allocator {
        self.raw.as_ptr()
    }

    /// Whether dropping this handle destroys the allocator (false for a
    /// place's default allocator).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Allocates `size` bytes, aligned to at least 256 bytes
    /// (`dao_allocator_alloc`); freed when the [`Allocation`] drops.
    ///
    /// `stream` is the stream the memory will be used on (`None`: the
    /// default stream). "caching" is stream-ordered: the block belongs to the
    /// stream and, once freed, is reused only for requests on it, after the
    /// work queued before the free. The stream must outlive the block, which
    /// the lifetime `'a` ensures. "buddy" and "system" give memory back at
    /// once: finish the work on it before dropping the allocation.
    pub fn alloc<'a>(&'a self, size: usize, stream: Option<&'a Stream>) -> Result<Allocation<'a>> {
        let mut ptr = ptr::null_mut();
        // SAFETY: live allocator and stream; valid out-pointer.
        check(unsafe {
            ffi::dao_allocator_alloc(self.as_raw(), size, raw_stream(stream), &mut ptr)
        })?;
        Ok(Allocation::from_parts(
            ptr,
            size,
            self.place,
            Owner::Allocator(self),
        ))
    }

    /// The allocator's place.
    pub fn place(&self) -> Place {
        self.place
    }

    /// A zero-filled buffer of `len` elements ([`Allocator::alloc`] with a
    /// typed, host-accessible view). [`Status::Unsupported`](crate::Status::Unsupported)
    /// for a place whose memory the host cannot touch.
    pub fn buffer_zeroed<'a, T: Pod>(
        &'a self,
        len: usize,
        stream: Option<&'a Stream>,
    ) -> Result<Buffer<'a, T>> {
        let place = self.place;
        if !place.is_host_accessible() {
            return Err(not_host_accessible(place, "Allocator::buffer_zeroed"));
        }
        Ok(Buffer::zeroed(
            self.alloc(bytes_of::<T>(len)?, stream)?,
            len,
        ))
    }

    /// A buffer holding a copy of `data` ([`Allocator::alloc`] with a typed,
    /// host-accessible view). [`Status::Unsupported`](crate::Status::Unsupported)
    /// for a place whose memory the host cannot touch.
    pub fn buffer_from_slice<'a, T: Pod>(
        &'a self,
        data: &[T],
        stream: Option<&'a Stream>,
    ) -> Result<Buffer<'a, T>> {
        let place = self.place;
        if !place.is_host_accessible() {
            return Err(not_host_accessible(place, "Allocator::buffer_from_slice"));
        }
        Ok(Buffer::copied(
            self.alloc(mem::size_of_val(data), stream)?,
            data,
        ))
    }

    /// Hands cached memory back to the system (`dao_allocator_trim`); gives
    /// the bytes released.
    pub fn trim(&self) -> Result<usize> {
        let mut released = 0usize;
        // SAFETY: live allocator, valid out-pointer.
        check(unsafe { ffi::dao_allocator_trim(self.as_raw(), &mut released) })?;
        Ok(released)
    }

    /// The statistics, one consistent snapshot (`dao_allocator_get_stats`).
    pub fn stats(&self) -> Result<AllocatorStats> {
        let mut raw = ffi::dao_allocator_stats {
            struct_size: mem::size_of::<ffi::dao_allocator_stats>(),
            ..Default::default()
        };
        // SAFETY: live allocator; `raw` is a sized struct of this version.
        check(unsafe { ffi::dao_allocator_get_stats(self.as_raw(), &mut raw) })?;
        Ok(AllocatorStats::from_raw(&raw))
    }

    /// Sets every peak statistic to its current value
    /// (`dao_allocator_reset_peak_stats`).
    pub fn reset_peak_stats(&self) -> Result<()> {
        // SAFETY: live allocator.
        check(unsafe { ffi::dao_allocator_reset_peak_stats(self.as_raw()) })
    }

    /// Sets the accumulated parts of the detailed statistics and the
    /// counters of [`AllocatorStats`] to zero
    /// (`dao_allocator_reset_accumulated_stats`).
    pub fn reset_accumulated_stats(&self) -> Result<()> {
        // SAFETY: live allocator.
        check(unsafe { ffi::dao_allocator_reset_accumulated_stats(self.as_raw()) })
    }

    /// Place, strategy and effective configuration (`dao_allocator_info`).
    pub fn info(&self) -> Result<AllocatorInfo> {
        let mut place = Place::cpu().to_raw();
        let mut strategy: *const c_char = ptr::null();
        let mut config: *const c_char = ptr::null();
        // SAFETY: live allocator, valid out-pointers; the strings live as
        // long as the allocator and are copied at once.
        check(unsafe {
            ffi::dao_allocator_info(self.as_raw(), &mut place, &mut strategy, &mut config)
        })?;
        Ok(AllocatorInfo {
            place: Place::from_raw(place),
            // SAFETY: NUL-terminated strings written by the call.
            strategy: unsafe { owned_string(strategy) },
            config: unsafe { owned_string(config) },
        })
    }

    /// One detailed statistic (`dao_allocator_get_stat`). "caching" keeps
    /// every metric of every pool; "buddy" and "system" keep
    /// [`StatPool::All`] of the allocated, reserved and requested metrics and
    /// give [`Status::Unsupported`](crate::Status::Unsupported) for others.
    pub fn stat(&self, metric: StatMetric, pool: StatPool) -> Result<Stat> {
        let mut raw = ffi::dao_stat::default();
        // SAFETY: live allocator, valid out-pointer.
        check(unsafe {
            ffi::dao_allocator_get_stat(self.as_raw(), metric.to_raw(), pool.to_raw(), &mut raw)
        })?;
        Ok(Stat {
            current: raw.current,
            peak: raw.peak,
            allocated: raw.allocated,
            freed: raw.freed,
        })
    }

    /// A snapshot of every segment and block (`dao_allocator_snapshot`;
    /// "caching" only, else [`Status::Unsupported`](crate::Status::Unsupported)).
    pub fn snapshot(&self) -> Result<Snapshot> {
        let mut raw = ptr::null_mut();
        // SAFETY: live allocator, valid out-pointer.
        check(unsafe { ffi::dao_allocator_snapshot(self.as_raw(), &mut raw) })?;
        Ok(Snapshot {
            raw: NonNull::new(raw).expect("dao_allocator_snapshot gave NULL"),
        })
    }

    /// Segments, blocks, statistics and config as a JSON document
    /// (`dao_allocator_snapshot_json`; "caching" only).
    pub fn snapshot_json(&self) -> Result<String> {
        let mut length = 0usize;
        // SAFETY: live allocator; a NULL buffer of capacity 0 asks for the
        // length.
        check(unsafe {
            ffi::dao_allocator_snapshot_json(self.as_raw(), ptr::null_mut(), 0, &mut length)
        })?;
        loop {
            // Room for the NUL, and some to spare: the allocator may change
            // between two calls.
            let mut buf = vec![0u8; length + 1 + length / 8];
            let capacity = buf.len();
            // SAFETY: `buf` has `capacity` writable bytes.
            check(unsafe {
                ffi::dao_allocator_snapshot_json(
                    self.as_raw(),
                    buf.as_mut_ptr().cast(),
                    capacity,
                    &mut length,
                )
            })?;
            if length < capacity {
                buf.truncate(length);
                return String::from_utf8(buf).map_err(|e| {
                    Error::new(
                        crate::Status::Internal,
                        format!("snapshot JSON is not UTF-8: {e}"),
                    )
                });
            }
        }
    }

    /// Destroys the allocator now and reports failure
    /// (`dao_allocator_destroy`); dropping it does the same silently.
    /// A place's default allocator cannot be destroyed
    /// ([`Status::InvalidArgument`](crate::Status::InvalidArgument)), and an
    /// allocator with live blocks (from a leaked [`Allocation`]) is refused
    /// with [`Status::Busy`](crate::Status::Busy); the handle is then
    /// forgotten, not destroyed.
    pub fn destroy(self) -> Result<()> {
        let raw = self.as_raw();
        mem::forget(self);
        // SAFETY: the handle is live and no reference to it remains (self
        // was taken by value and every Allocation borrows it).
        check(unsafe { ffi::dao_allocator_destroy(raw) })
    }
}

impl Drop for Allocator {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: as in destroy. A failure (Busy after a leaked
            // Allocation) leaves the allocator alive: a leak, not a fault.
            unsafe { ffi::dao_allocator_destroy(self.as_raw()) };
        }
    }
}

impl fmt::Debug for Allocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Allocator")
            .field("raw", &self.raw)
            .field("place", &self.place)
            .field("owned", &self.owned)
            .finish()
    }
}

/// Place, strategy and effective configuration of an allocator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatorInfo {
    /// Its place.
    pub place: Place,
    /// Its strategy name.
    pub strategy: String,
    /// Every config key with its effective value, as [`Allocator::new`]
    /// accepts it.
    pub config: String,
}

/// Statistics of an allocator ([`Allocator::stats`]).
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Bytes in live blocks (block sizes).
    pub allocated_bytes: u64,
    /// Peak of allocated_bytes.
    pub peak_allocated_bytes: u64,
    /// Sum of the sizes asked for by live allocations.
    pub requested_bytes: u64,
    /// Bytes held from the system resource.
    pub reserved_bytes: u64,
    /// Peak of reserved_bytes.
    pub peak_reserved_bytes: u64,
    /// Number of live allocations.
    pub live_blocks: u64,
    /// Successful allocations since creation (or the last reset).
    pub alloc_count: u64,
    /// Successful frees since creation (or the last reset).
    pub free_count: u64,
    /// Allocations that failed for lack of memory.
    pub failed_alloc_count: u64,
    /// Allocations made from the system resource.
    pub system_alloc_count: u64,
    /// Frees made to the system resource.
    pub system_free_count: u64,
    /// Largest request servable without growing.
    pub largest_free_block: u64,
    /// Allocations that succeeded only after cached memory was released.
    pub alloc_retry_count: u64,
}

impl AllocatorStats {
    fn from_raw(r: &ffi::dao_allocator_stats) -> AllocatorStats {
        AllocatorStats {
            allocated_bytes: r.allocated_bytes,
            peak_allocated_bytes: r.peak_allocated_bytes,
            requested_bytes: r.requested_bytes,
            reserved_bytes: r.reserved_bytes,
            peak_reserved_bytes: r.peak_reserved_bytes,
            live_blocks: r.live_blocks,
            alloc_count: r.alloc_count,
            free_count: r.free_count,
            failed_alloc_count: r.failed_alloc_count,
            system_alloc_count: r.system_alloc_count,
            system_free_count: r.system_free_count,
            largest_free_block: r.largest_free_block,
            alloc_retry_count: r.alloc_retry_count,
        }
    }
}

c_enum! {
    /// What a detailed statistic counts (`dao_stat_metric`), as in PyTorch's
    /// caching allocator.
    pub enum StatMetric {
        /// Bytes of allocated blocks.
        AllocatedBytes = ffi::DAO_STAT_ALLOCATED_BYTES,
        /// Number of allocated blocks.
        AllocatedBlocks = ffi::DAO_STAT_ALLOCATED_BLOCKS,
        /// Bytes held from the system.
        ReservedBytes = ffi::DAO_STAT_RESERVED_BYTES,
        /// System allocations held.
        ReservedSegments = ffi::DAO_STAT_RESERVED_SEGMENTS,
        /// Bytes of active blocks (allocated, or freed and waiting for other
        /// streams' work).
        ActiveBytes = ffi::DAO_STAT_ACTIVE_BYTES,
        /// Number of active blocks.
        ActiveBlocks = ffi::DAO_STAT_ACTIVE_BLOCKS,
        /// Free bytes in partly used segments.
        InactiveSplitBytes = ffi::DAO_STAT_INACTIVE_SPLIT_BYTES,
        /// Free blocks in partly used segments.
        InactiveSplitBlocks = ffi::DAO_STAT_INACTIVE_SPLIT_BLOCKS,
        /// Bytes asked for by allocated blocks.
        RequestedBytes = ffi::DAO_STAT_REQUESTED_BYTES,
    }
}

c_enum! {
    /// Which blocks a statistic covers (`dao_stat_pool`).
    pub enum StatPool {
        /// Every block.
        All = ffi::DAO_STAT_POOL_ALL,
        /// Blocks of the small pool (requests up to 1 MiB).
        Small = ffi::DAO_STAT_POOL_SMALL,
        /// Blocks of the large pool.
        Large = ffi::DAO_STAT_POOL_LARGE,
    }
}

c_enum! {
    /// State of a block in a snapshot (`dao_block_state`).
    pub enum BlockState {
        /// Cached, reusable on its stream.
        Free = ffi::DAO_BLOCK_FREE,
        /// Held by a caller.
        Allocated = ffi::DAO_BLOCK_ALLOCATED,
        /// Freed, waiting for other streams' work.
        PendingFree = ffi::DAO_BLOCK_PENDING_FREE,
    }
}

/// One detailed statistic ([`Allocator::stat`]).
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct Stat {
    /// Value now.
    pub current: i64,
    /// Largest value since creation or the last peak reset.
    pub peak: i64,
    /// Sum of all increases.
    pub allocated: i64,
    /// Sum of all decreases.
    pub freed: i64,
}

/// An immutable copy of an allocator's segments and blocks
/// ([`Allocator::snapshot`]), destroyed on drop.
///
/// ```
/// use dao::{Allocator, BlockState, Place};
///
/// let a = Allocator::new(Place::cpu(), Some("caching"), "")?;
/// let block = a.alloc(4096, None)?;
/// let snap = a.snapshot()?;
/// let mut allocated = 0;
/// for segment in snap.segments()? {
///     let segment = segment?;
///     for b in snap.blocks(&segment) {
///         let b = b?;
///         if b.state == BlockState::Allocated {
///             assert_eq!(b.address, block.as_ptr() as usize);
///             assert_eq!(b.requested_size, 4096);
///             allocated += 1;
///         }
///     }
/// }
/// assert_eq!(allocated, 1);
/// assert!(a.snapshot_json()?.starts_with('{'));
/// # Ok::<(), dao::Error>(())
/// ```
pub struct Snapshot {
    raw: NonNull<ffi::dao_snapshot>,
}

// SAFETY: allocator.h: a snapshot never changes and its functions are "safe
// from any thread"; destroy happens only in drop.
unsafe impl Send for Snapshot {}
// SAFETY: as for Send.
unsafe impl Sync for Snapshot {}

impl Snapshot {
    /// Number of segments (`dao_snapshot_segment_count`).
    pub fn segment_count(&self) -> Result<usize> {
        let mut count = 0usize;
        // SAFETY: live snapshot, valid out-pointer.
        check(unsafe { ffi::dao_snapshot_segment_count(self.raw.as_ptr(), &mut count) })?;
        Ok(count)
    }

    /// Segment `index`, in address order (`dao_snapshot_segment`).
    pub fn segment(&self, index: usize) -> Result<SegmentInfo> {
        let mut raw = ffi::dao_segment_info {
            struct_size: mem::size_of::<ffi::dao_segment_info>(),
            address: 0,
            size: 0,
            mapped_bytes: 0,
            pool: 0,
            stream: ptr::null_mut(),
            expandable: 0,
            block_count: 0,
        };
        // SAFETY: live snapshot; `raw` is a sized struct of this version.
        check(unsafe { ffi::dao_snapshot_segment(self.raw.as_ptr(), index, &mut raw) })?;
        Ok(SegmentInfo {
            index,
            address: raw.address,
            size: raw.size,
            mapped_bytes: raw.mapped_bytes,
            pool: StatPool::from_raw(raw.pool),
            stream: raw.stream as usize,
            expandable: raw.expandable != 0,
            block_count: raw.block_count,
        })
    }

    /// Block `index` of segment `segment`, in address order
    /// (`dao_snapshot_block`).
    pub fn block(&self, segment: usize, index: usize) -> Result<BlockInfo> {
        let mut raw = ffi::dao_block_info {
            struct_size: mem::size_of::<ffi::dao_block_info>(),
            address: 0,
            size: 0,
            requested_size: 0,
            state: 0,
            stream: ptr::null_mut(),
        };
        // SAFETY: live snapshot; `raw` is a sized struct of this version.
        check(unsafe { ffi::dao_snapshot_block(self.raw.as_ptr(), segment, index, &mut raw) })?;
        Ok(BlockInfo {
            address: raw.address,
            size: raw.size,
            requested_size: raw.requested_size,
            state: BlockState::from_raw(raw.state),
            stream: raw.stream as usize,
        })
    }

    /// The segments, in address order.
    pub fn segments(&self) -> Result<Segments<'_>> {
        Ok(Segments {
            snapshot: self,
            next: 0,
            count: self.segment_count()?,
        })
    }

    /// The blocks of a segment, in address order.
    pub fn blocks(&self, segment: &SegmentInfo) -> Blocks<'_> {
        Blocks {
            snapshot: self,
            segment: segment.index,
            next: 0,
            count: segment.block_count,
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        // SAFETY: live snapshot, no reference remains.
        unsafe { ffi::dao_snapshot_destroy(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot").field("raw", &self.raw).finish()
    }
}

/// A segment of a snapshot: one system allocation, or one expandable
/// segment (reserved addresses of which `mapped_bytes` are backed).
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Its index in the snapshot.
    pub index: usize,
    /// First byte.
    pub address: usize,
    /// Bytes of addresses the segment spans.
    pub size: usize,
    /// Bytes backed by memory (= size unless expandable).
    pub mapped_bytes: usize,
    /// [`StatPool::Small`] or [`StatPool::Large`].
    pub pool: StatPool,
    /// The stream its blocks belong to, as [`Stream::id`] (0: the default
    /// stream).
    pub stream: usize,
    /// Whether it is an expandable segment.
    pub expandable: bool,
    /// Blocks in it.
    pub block_count: usize,
}

/// A block of a snapshot.
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// First byte.
    pub address: usize,
    /// Block size.
    pub size: usize,
    /// Size asked for (0 unless allocated).
    pub requested_size: usize,
    /// Its state.
    pub state: BlockState,
    /// The stream it belongs to, as [`Stream::id`] (0: the default stream).
    pub stream: usize,
}

/// Iterator over the segments of a snapshot ([`Snapshot::segments`]).
#[derive(Debug)]
pub struct Segments<'s> {
    snapshot: &'s Snapshot,
    next: usize,
    count: usize,
}

impl Iterator for Segments<'_> {
    type Item = Result<SegmentInfo>;
    fn next(&mut self) -> Option<Self::Item> {
        (self.next < self.count).then(|| {
            self.next += 1;
            self.snapshot.segment(self.next - 1)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.count - self.next, Some(self.count - self.next))
    }
}

impl ExactSizeIterator for Segments<'_> {}

/// Iterator over the blocks of a segment ([`Snapshot::blocks`]).
#[derive(Debug)]
pub struct Blocks<'s> {
    snapshot: &'s Snapshot,
    segment: usize,
    next: usize,
    count: usize,
}

impl Iterator for Blocks<'_> {
    type Item = Result<BlockInfo>;
    fn next(&mut self) -> Option<Self::Item> {
        (self.next < self.count).then(|| {
            self.next += 1;
            self.snapshot.block(self.segment, self.next - 1)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.count - self.next, Some(self.count - self.next))
    }
}

impl ExactSizeIterator for Blocks<'_> {}
