//! Partitioned ("whole") memory: one table of fixed-size entries spread over
//! the places of a group of ranks (`dao/whole.h`).
//!
//! A [`Comm`] is one rank of a communicator; [`Comm::create_local`] makes one
//! handle per rank over places of this process, each meant to be driven by a
//! thread of its own. Collective calls ([`WholeMemory::new`], dropping a
//! [`WholeMemory`], [`WholeMemory::store`], [`WholeMemory::load`],
//! [`Comm::barrier`]) must be made by every rank in the same order; a rank
//! that never makes one leaves the others waiting, as with MPI.

use std::ffi::{c_int, c_void, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{self, NonNull};

use dao_sys as ffi;

use crate::error::{check, owned_string, Error, Result, Status};
use crate::memory::Pod;
use crate::place::{static_str, Place};

/// Most ranks of a communicator made by [`Comm::create_local`].
pub const COMM_LOCAL_MAX_RANKS: usize = ffi::DAO_COMM_LOCAL_MAX_RANKS as usize;

c_enum! {
    /// How the parts of a whole memory object are addressed (`dao_whole_type`).
    pub enum WholeType {
        /// One range of addresses over all parts (mapped).
        Continuous = ffi::DAO_WHOLE_CONTINUOUS,
        /// Every part addressable by every rank, as separate ranges (mapped).
        Chunked = ffi::DAO_WHOLE_CHUNKED,
        /// Each rank addresses only its own part; the rest through
        /// [`WholeMemory::gather`] and [`WholeMemory::scatter`].
        Distributed = ffi::DAO_WHOLE_DISTRIBUTED,
    }
}

impl WholeType {
    /// The three types of this version.
    pub const ALL: [WholeType; 3] = [
        WholeType::Continuous,
        WholeType::Chunked,
        WholeType::Distributed,
    ];

    /// "continuous", "chunked", "distributed" or "unknown"
    /// (`dao_whole_type_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: any value; a static string.
        static_str(unsafe { ffi::dao_whole_type_name(self.to_raw()) })
    }

    /// Whether every rank can address every part (continuous, chunked).
    pub fn is_mapped(self) -> bool {
        matches!(self, WholeType::Continuous | WholeType::Chunked)
    }
}

impl fmt::Display for WholeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

c_enum! {
    /// Where the parts of a whole memory object live (`dao_whole_location`).
    pub enum WholeLocation {
        /// On each rank's own place.
        Device = ffi::DAO_WHOLE_DEVICE,
        /// In host memory, whatever the ranks' places are.
        Host = ffi::DAO_WHOLE_HOST,
    }
}

impl WholeLocation {
    /// The two locations of this version.
    pub const ALL: [WholeLocation; 2] = [WholeLocation::Device, WholeLocation::Host];

    /// "device", "host" or "unknown" (`dao_whole_location_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: any value; a static string.
        static_str(unsafe { ffi::dao_whole_location_name(self.to_raw()) })
    }
}

impl fmt::Display for WholeLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A communicator seen from one rank (`dao_comm_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommInfo {
    /// This rank, `0 .. size`.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
    /// This rank's place.
    pub place: Place,
    /// "in-process" or "mpi".
    pub transport: String,
    /// All ranks are in this process.
    pub shares_address_space: bool,
    /// All ranks can map each other's host memory.
    pub shares_host_memory: bool,
}

/// The entries and bytes one rank owns (`dao_whole_range`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub struct WholeRange {
    /// The rank.
    pub rank: usize,
    /// Index of its first entry.
    pub first_entry: usize,
    /// Number of entries (0 when it owns none).
    pub entry_count: usize,
    /// `first_entry * entry_size`.
    pub byte_offset: usize,
    /// `entry_count * entry_size`.
    pub byte_size: usize,
}

impl WholeRange {
    fn from_raw(r: &ffi::dao_whole_range) -> WholeRange {
        WholeRange {
            rank: r.rank as usize,
            first_entry: r.first_entry,
            entry_count: r.entry_count,
            byte_offset: r.byte_offset,
            byte_size: r.byte_size,
        }
    }

    /// The entry indices of the range.
    pub fn entries(&self) -> std::ops::Range<usize> {
        self.first_entry..self.first_entry + self.entry_count
    }
}

fn raw_range() -> ffi::dao_whole_range {
    ffi::dao_whole_range {
        struct_size: mem::size_of::<ffi::dao_whole_range>(),
        ..Default::default()
    }
}

/// A whole memory object seen from one rank (`dao_whole_info`).
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct WholeInfo {
    /// As created.
    pub kind: WholeType,
    /// As created.
    pub location: WholeLocation,
    /// Bytes of the whole object.
    pub total_size: usize,
    /// Bytes of one entry.
    pub entry_size: usize,
    /// `total_size / entry_size`.
    pub entry_count: usize,
    /// This rank.
    pub rank: usize,
    /// Ranks of the communicator.
    pub size: usize,
    /// Where this rank's part lives.
    pub place: Place,
}

fn rank_arg(rank: usize) -> Result<c_int> {
    c_int::try_from(rank).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("rank {rank} is out of range"),
        )
    })
}

/// One rank of a communicator (`dao_comm`), destroyed on drop.
///
/// Each rank's handle is meant to be used by one thread: `Comm` is `Send`
/// (move each handle into the thread that drives its rank) but not `Sync`,
/// since collective calls on one handle must not run concurrently.
pub struct Comm {
    raw: NonNull<ffi::dao_comm>,
    // !Sync: collective calls on one handle must not overlap.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

// SAFETY: whole.h: a handle may be used from any thread (the queries are
// "safe to call from any thread"; each rank is "driven by a thread of its
// own"), only not concurrently for collective calls, which !Sync excludes.
unsafe impl Send for Comm {}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank().ok())
            .field("size", &self.size().ok())
            .finish()
    }
}

impl Comm {
    /// A communicator over places of this process, rank `i` on `places[i]`
    /// (`dao_comm_create_local`): one handle per rank, in rank order. A
    /// place may appear more than once.
    ///
    /// [`Status::InvalidArgument`] for no places or more than
    /// [`COMM_LOCAL_MAX_RANKS`], [`Status::NoDevice`] for a place this
    /// machine does not have.
    pub fn create_local(places: &[Place]) -> Result<Vec<Comm>> {
        let count = c_int::try_from(places.len()).map_err(|_| {
            Error::new(
                Status::InvalidArgument,
                format!("{} ranks: at most {COMM_LOCAL_MAX_RANKS}", places.len()),
            )
        })?;
        let raw_places: Vec<ffi::dao_place> = places.iter().map(|p| p.to_raw()).collect();
        let mut comms: Vec<*mut ffi::dao_comm> = vec![ptr::null_mut(); places.len()];
        // SAFETY: `count` places and room for `count` handles.
        check(unsafe {
            ffi::dao_comm_create_local(count, raw_places.as_ptr(), comms.as_mut_ptr())
        })?;
        Ok(comms
            .into_iter()
            .map(|c| Comm {
                raw: NonNull::new(c).expect("dao_comm_create_local gave a NULL handle"),
                _not_sync: PhantomData,
            })
            .collect())
    }

    /// This rank's handle of a communicator over a transport
    /// (`dao_comm_create_transport`, experimental: the layout of
    /// `dao_comm_transport` may change without a SONAME bump).
    /// Collective over the transport's ranks.
    ///
    /// # Safety
    /// `transport` must be a valid `dao_comm_transport` whose operations
    /// behave as whole.h says, with `self_` valid for them until libdao
    /// calls `destroy`. Unless its `struct_size` is too small, libdao owns
    /// the transport from this call on (also when the call fails).
    pub unsafe fn from_transport(
        transport: &ffi::dao_comm_transport,
        place: Place,
    ) -> Result<Comm> {
        let mut out = ptr::null_mut();
        check(ffi::dao_comm_create_transport(
            transport,
            place.to_raw(),
            &mut out,
        ))?;
        Ok(Comm {
            raw: NonNull::new(out).expect("dao_comm_create_transport gave a NULL handle"),
            _not_sync: PhantomData,
        })
    }

    /// The raw handle, for calls through [`ffi`](crate::ffi).
    pub fn as_raw(&self) -> *mut ffi::dao_comm {
        self.raw.as_ptr()
    }

    /// This rank, `0 .. size` (`dao_comm_rank`).
    pub fn rank(&self) -> Result<usize> {
        let mut rank = 0;
        // SAFETY: a live handle, an out-parameter.
        check(unsafe { ffi::dao_comm_rank(self.raw.as_ptr(), &mut rank) })?;
        Ok(rank as usize)
    }

    /// Number of ranks (`dao_comm_size`).
    pub fn size(&self) -> Result<usize> {
        let mut size = 0;
        // SAFETY: a live handle, an out-parameter.
        check(unsafe { ffi::dao_comm_size(self.raw.as_ptr(), &mut size) })?;
        Ok(size as usize)
    }

    /// The place of any rank (`dao_comm_rank_place`);
    /// [`Status::InvalidArgument`] for a rank out of range.
    pub fn rank_place(&self, rank: usize) -> Result<Place> {
        let rank = rank_arg(rank)?;
        let mut place = Place::cpu().to_raw();
        // SAFETY: a live handle, an out-parameter.
        check(unsafe { ffi::dao_comm_rank_place(self.raw.as_ptr(), rank, &mut place) })?;
        Ok(Place::from_raw(place))
    }

    /// What the communicator is, seen from this rank (`dao_comm_get_info`).
    pub fn info(&self) -> Result<CommInfo> {
        let mut info = ffi::dao_comm_info {
            struct_size: mem::size_of::<ffi::dao_comm_info>(),
            rank: 0,
            size: 0,
            place: Place::cpu().to_raw(),
            transport: ptr::null(),
            shares_address_space: 0,
            shares_host_memory: 0,
        };
        // SAFETY: a live handle, a size-tagged out-parameter.
        check(unsafe { ffi::dao_comm_get_info(self.raw.as_ptr(), &mut info) })?;
        Ok(CommInfo {
            rank: info.rank as usize,
            size: info.size as usize,
            place: Place::from_raw(info.place),
            // SAFETY: a static string or NULL.
            transport: unsafe { owned_string(info.transport) },
            shares_address_space: info.shares_address_space != 0,
            shares_host_memory: info.shares_host_memory != 0,
        })
    }

    /// Waits for every rank, and makes what each rank wrote before it
    /// visible to every rank after it (`dao_comm_barrier`). Collective.
    pub fn barrier(&self) -> Result<()> {
        // SAFETY: a live handle; collective calls on it do not overlap (!Sync).
        check(unsafe { ffi::dao_comm_barrier(self.raw.as_ptr()) })
    }

    /// `Ok` when this communicator can build whole memory of `kind` on
    /// `location` (`dao_whole_supported`); else [`Status::Unsupported`]
    /// with a message that says why and what would work. Not collective.
    pub fn supported(&self, kind: WholeType, location: WholeLocation) -> Result<()> {
        // SAFETY: a live handle; any values.
        check(unsafe {
            ffi::dao_whole_supported(self.raw.as_ptr(), kind.to_raw(), location.to_raw())
        })
    }

    /// Destroys the handle (`dao_comm_destroy`), reporting a failure that
    /// drop would ignore.
    pub fn destroy(self) -> Result<()> {
        let raw = self.raw.as_ptr();
        mem::forget(self);
        // SAFETY: a live handle, given up here; no WholeMemory borrows it.
        check(unsafe { ffi::dao_comm_destroy(raw) })
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        // SAFETY: a live handle; whole memory objects borrow the Comm, so
        // none is left.
        unsafe { ffi::dao_comm_destroy(self.raw.as_ptr()) };
    }
}

/// Records a failure for `dao_last_error` as a transport library would
/// before it can hand libdao a transport (`dao_comm_transport_error`,
/// experimental), and gives it back as an [`Error`].
///
/// ```
/// use dao::Status;
/// let e = dao::transport_error(Status::Backend, "MPI is not initialised")?;
/// assert_eq!((e.status(), e.message()), (Status::Backend, "MPI is not initialised"));
/// # Ok::<(), dao::Error>(())
/// ```
pub fn transport_error(status: Status, message: &str) -> Result<Error> {
    let text = crate::error::c_string("message", message)?;
    // SAFETY: a valid string, copied by the library.
    let code = unsafe { ffi::dao_comm_transport_error(status.code(), text.as_ptr()) };
    Ok(Error::last(code))
}

fn path_arg(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("path {} contains a NUL byte", path.display()),
        )
    })
}

/// One rank's view of a whole memory object (`dao_whole`), destroyed on
/// drop — collectively, so every rank must drop its object (or call
/// [`destroy`](WholeMemory::destroy)) in the same order.
///
/// It borrows its rank's [`Comm`] and, like it, is used by that rank's
/// thread. The memory may be written by other ranks at any time, so it is
/// offered as raw pointers ([`local`](WholeMemory::local),
/// [`rank_ptr`](WholeMemory::rank_ptr), [`base`](WholeMemory::base)) and
/// through copies ([`gather`](WholeMemory::gather),
/// [`scatter`](WholeMemory::scatter)).
pub struct WholeMemory<'c> {
    raw: NonNull<ffi::dao_whole>,
    entry_size: usize,
    _comm: PhantomData<&'c Comm>,
}

impl fmt::Debug for WholeMemory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WholeMemory")
            .field("info", &self.info().ok())
            .finish()
    }
}

impl<'c> WholeMemory<'c> {
    /// Creates a whole memory object of `total_size` bytes in entries of
    /// `entry_size` bytes (`dao_whole_create`). Collective: every rank
    /// passes the same values. The contents start undefined.
    ///
    /// On every rank: [`Status::InvalidArgument`] for a zero size, an entry
    /// size that does not divide the total, or ranks that disagree;
    /// [`Status::Unsupported`] when [`Comm::supported`] says no;
    /// [`Status::OutOfMemory`] when a rank's part does not fit.
    pub fn new(
        comm: &'c Comm,
        kind: WholeType,
        location: WholeLocation,
        total_size: usize,
        entry_size: usize,
    ) -> Result<WholeMemory<'c>> {
        let desc = ffi::dao_whole_desc {
            struct_size: mem::size_of::<ffi::dao_whole_desc>(),
            type_: kind.to_raw(),
            location: location.to_raw(),
            total_size,
            entry_size,
        };
        let mut out = ptr::null_mut();
        // SAFETY: a live handle, a size-tagged description, an out-parameter.
        check(unsafe { ffi::dao_whole_create(comm.raw.as_ptr(), &desc, &mut out) })?;
        Ok(WholeMemory {
            raw: NonNull::new(out).expect("dao_whole_create gave a NULL handle"),
            entry_size,
            _comm: PhantomData,
        })
    }

    /// The raw handle, for calls through [`ffi`](crate::ffi).
    pub fn as_raw(&self) -> *mut ffi::dao_whole {
        self.raw.as_ptr()
    }

    /// Bytes of one entry.
    pub fn entry_size(&self) -> usize {
        self.entry_size
    }

    /// What the object is, seen from this rank (`dao_whole_get_info`).
    pub fn info(&self) -> Result<WholeInfo> {
        let mut info = ffi::dao_whole_info {
            struct_size: mem::size_of::<ffi::dao_whole_info>(),
            type_: 0,
            location: 0,
            total_size: 0,
            entry_size: 0,
            entry_count: 0,
            rank: 0,
            size: 0,
            place: Place::cpu().to_raw(),
        };
        // SAFETY: a live handle, a size-tagged out-parameter.
        check(unsafe { ffi::dao_whole_get_info(self.raw.as_ptr(), &mut info) })?;
        Ok(WholeInfo {
            kind: WholeType::from_raw(info.type_),
            location: WholeLocation::from_raw(info.location),
            total_size: info.total_size,
            entry_size: info.entry_size,
            entry_count: info.entry_count,
            rank: info.rank as usize,
            size: info.size as usize,
            place: Place::from_raw(info.place),
        })
    }

    /// The entries and bytes any rank owns (`dao_whole_get_partition`);
    /// [`Status::InvalidArgument`] for a rank out of range.
    pub fn partition(&self, rank: usize) -> Result<WholeRange> {
        let rank = rank_arg(rank)?;
        let mut range = raw_range();
        // SAFETY: a live handle, a size-tagged out-parameter.
        check(unsafe { ffi::dao_whole_get_partition(self.raw.as_ptr(), rank, &mut range) })?;
        Ok(WholeRange::from_raw(&range))
    }

    /// The rank that owns entry `index` (`dao_whole_entry_rank`);
    /// [`Status::InvalidArgument`] for an index out of range.
    pub fn entry_rank(&self, index: i64) -> Result<usize> {
        let mut rank = 0;
        // SAFETY: a live handle, an out-parameter.
        check(unsafe { ffi::dao_whole_entry_rank(self.raw.as_ptr(), index, &mut rank) })?;
        Ok(rank as usize)
    }

    /// This rank's own part: the address of its first byte (host-accessible
    /// memory, except on a CUDA device, where it is a device address for
    /// kernels and driver copies; valid while `self` lives; NULL when the
    /// rank owns no entries, except for continuous objects) and its range
    /// (`dao_whole_get_local`).
    pub fn local(&self) -> Result<(*mut u8, WholeRange)> {
        let mut p = ptr::null_mut();
        let mut range = raw_range();
        // SAFETY: a live handle, out-parameters.
        check(unsafe { ffi::dao_whole_get_local(self.raw.as_ptr(), &mut p, &mut range) })?;
        Ok((p.cast(), WholeRange::from_raw(&range)))
    }

    /// The address of any rank's part of a mapped object
    /// (`dao_whole_get_rank_pointer`), valid while `self` lives;
    /// [`Status::Unsupported`] for another rank of a distributed object.
    pub fn rank_ptr(&self, rank: usize) -> Result<*mut u8> {
        let rank = rank_arg(rank)?;
        let mut p = ptr::null_mut();
        // SAFETY: a live handle, an out-parameter.
        check(unsafe { ffi::dao_whole_get_rank_pointer(self.raw.as_ptr(), rank, &mut p) })?;
        Ok(p.cast())
    }

    /// The address of entry 0 of a continuous object, entry `i` being at
    /// `base + i * entry_size` (`dao_whole_get_base`);
    /// [`Status::Unsupported`] for other types.
    pub fn base(&self) -> Result<*mut u8> {
        let mut p = ptr::null_mut();
        // SAFETY: a live handle, an out-parameter.
        check(unsafe { ffi::dao_whole_get_base(self.raw.as_ptr(), &mut p) })?;
        Ok(p.cast())
    }

    fn check_len<T>(&self, indices: usize, elements: usize, what: &str) -> Result<()> {
        let want = indices.checked_mul(self.entry_size);
        let have = elements.checked_mul(mem::size_of::<T>());
        if want.is_none() || want != have {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "{what} of {elements} elements of {} bytes for {indices} entries of {} bytes",
                    mem::size_of::<T>(),
                    self.entry_size
                ),
            ));
        }
        Ok(())
    }

    /// Copies entries `indices[i]` into `dst`, entry after entry
    /// (`dao_whole_gather`); `dst` holds exactly `indices.len() *
    /// entry_size` bytes. Not collective. [`Status::InvalidArgument`] for an
    /// index out of range (then nothing was copied) or a `dst` of another
    /// size.
    pub fn gather<T: Pod>(&self, indices: &[i64], dst: &mut [T]) -> Result<()> {
        self.check_len::<T>(indices.len(), dst.len(), "a destination")?;
        // SAFETY: a live handle; `dst` holds the bytes of every entry, and
        // any bytes are valid values of a Pod type.
        check(unsafe {
            ffi::dao_whole_gather(
                self.raw.as_ptr(),
                indices.as_ptr(),
                indices.len(),
                dst.as_mut_ptr().cast::<c_void>(),
            )
        })
    }

    /// Copies `src`, entry after entry, into entries `indices[i]`
    /// (`dao_whole_scatter`); `src` holds exactly `indices.len() *
    /// entry_size` bytes. Not collective: other ranks see the values after
    /// the next collective call (for example [`Comm::barrier`]).
    pub fn scatter<T: Pod>(&self, src: &[T], indices: &[i64]) -> Result<()> {
        self.check_len::<T>(indices.len(), src.len(), "a source")?;
        // SAFETY: a live handle; `src` holds the bytes of every entry.
        check(unsafe {
            ffi::dao_whole_scatter(
                self.raw.as_ptr(),
                src.as_ptr().cast::<c_void>(),
                indices.as_ptr(),
                indices.len(),
            )
        })
    }

    /// [`WholeMemory::gather`] called by every rank together, each with its
    /// own indices (possibly none) (`dao_whole_gather_collective`): on
    /// distributed memory the ranks exchange with two-sided collectives
    /// (MPI_Alltoall of counts, MPI_Alltoallv of indices and entries), the
    /// fast path when all ranks gather at once. Collective: any rank's bad
    /// argument fails every rank with [`Status::InvalidArgument`], and
    /// nothing is copied. A `dst` of the wrong size still takes part (as a
    /// NULL buffer, which fails every rank), so that no rank waits for ever.
    pub fn gather_collective<T: Pod>(&self, indices: &[i64], dst: &mut [T]) -> Result<()> {
        let size_ok = self.check_len::<T>(indices.len(), dst.len(), "a destination");
        let out = if size_ok.is_ok() {
            dst.as_mut_ptr().cast::<c_void>()
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: a live handle; `out` holds the bytes of every entry (or is
        // NULL, which libdao refuses on every rank), and any bytes are valid
        // values of a Pod type.
        let status = check(unsafe {
            ffi::dao_whole_gather_collective(
                self.raw.as_ptr(),
                indices.as_ptr(),
                indices.len(),
                out,
            )
        });
        size_ok.and(status)
    }

    /// [`WholeMemory::scatter`] called by every rank together
    /// (`dao_whole_scatter_collective`); see
    /// [`WholeMemory::gather_collective`]. Every rank sees the values after
    /// the next collective call.
    pub fn scatter_collective<T: Pod>(&self, src: &[T], indices: &[i64]) -> Result<()> {
        let size_ok = self.check_len::<T>(indices.len(), src.len(), "a source");
        let input = if size_ok.is_ok() {
            src.as_ptr().cast::<c_void>()
        } else {
            std::ptr::null()
        };
        // SAFETY: a live handle; `input` holds the bytes of every entry (or
        // is NULL, which libdao refuses on every rank).
        let status = check(unsafe {
            ffi::dao_whole_scatter_collective(
                self.raw.as_ptr(),
                input,
                indices.as_ptr(),
                indices.len(),
            )
        });
        size_ok.and(status)
    }

    /// Writes the object to a file, entries in index order
    /// (`dao_whole_store`). Collective, with the same path on every rank.
    pub fn store(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_arg(path.as_ref())?;
        // SAFETY: a live handle, a valid string.
        check(unsafe { ffi::dao_whole_store(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// Reads the object from a file of exactly its total size
    /// (`dao_whole_load`). Collective. [`Status::NotFound`] for no such
    /// file, [`Status::InvalidArgument`] for a file of another size.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_arg(path.as_ref())?;
        // SAFETY: a live handle, a valid string.
        check(unsafe { ffi::dao_whole_load(self.raw.as_ptr(), path.as_ptr()) })
    }

    /// Destroys the object (`dao_whole_destroy`), reporting a failure that
    /// drop would ignore. Collective.
    pub fn destroy(self) -> Result<()> {
        let raw = self.raw.as_ptr();
        mem::forget(self);
        // SAFETY: a live handle, given up here.
        check(unsafe { ffi::dao_whole_destroy(raw) })
    }
}

impl Drop for WholeMemory<'_> {
    fn drop(&mut self) {
        // SAFETY: a live handle, given up here. Collective.
        unsafe { ffi::dao_whole_destroy(self.raw.as_ptr()) };
    }
}
