//! Raw FFI declarations of libdao's public C API (`#include <dao.h>`).
//!
//! Every function that `libdao.so` exports is declared here with the types of
//! the C headers, one Rust item per C item and under the same name:
//!
//! - `typedef enum` types are `c_int` aliases with one constant per value
//!   (so values a newer library adds are plain numbers, never undefined
//!   behaviour);
//! - structs are `#[repr(C)]` with the fields of the header, in order;
//! - opaque handles are zero-sized `#[repr(C)]` types used behind pointers;
//! - callback types are `Option<unsafe extern "C" fn(..)>` (NULL is `None`).
//!
//! The declarations are written by hand from `include/dao/*.h` (with
//! `DAO_EXPERIMENTAL` defined: `dao_comm_transport` and its functions are
//! experimental; `dao_comm_create_mpi` of libdao-mpi is not declared). The crate's
//! tests check them against the headers with the system C compiler: every
//! struct's size, alignment and field offsets, every constant, and every
//! function's signature (assigned to a pointer of the type written here, with
//! `-Werror`), and that every `DAO_API` function is declared.
//!
//! The library is found by `build.rs`: from `DAO_LIB_DIR` when it is set, else
//! with `pkg-config --libs-only-L --libs-only-l dao`.
//!
//! This crate is `unsafe` to use; the `dao` crate is the safe binding. The
//! documentation of each function (ownership, thread safety, what each status
//! means) is in the C headers.
#![no_std]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_double, c_int, c_uint, c_void};
use core::marker::{PhantomData, PhantomPinned};

/// Declares an opaque C struct: zero-sized, not constructible, `!Send`,
/// `!Sync` and `!Unpin`, usable only behind a pointer.
macro_rules! opaque {
    ($(#[$doc:meta] $name:ident),* $(,)?) => {$(
        #[$doc]
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

// ---------------------------------------------------------------- version.h

/// Major version of the headers these declarations were written from.
pub const DAO_VERSION_MAJOR: c_uint = 0;
/// Minor version of the headers.
pub const DAO_VERSION_MINOR: c_uint = 1;
/// Patch version of the headers.
pub const DAO_VERSION_PATCH: c_uint = 0;
/// `MAJOR*10000 + MINOR*100 + PATCH`; compare with `dao_version_number()`.
pub const DAO_VERSION_NUMBER: c_uint =
    DAO_VERSION_MAJOR * 10000 + DAO_VERSION_MINOR * 100 + DAO_VERSION_PATCH;
/// The version as a string, "MAJOR.MINOR.PATCH".
pub const DAO_VERSION_STRING: &str = "0.1.0";

// ----------------------------------------------------------------- status.h

/// `dao_status`: result of a libdao call; `DAO_OK` (0) is success.
pub type dao_status = c_int;
/// Success.
pub const DAO_OK: dao_status = 0;
/// An argument is NULL, out of range, or malformed.
pub const DAO_ERR_INVALID_ARGUMENT: dao_status = 1;
/// No room for the request.
pub const DAO_ERR_OUT_OF_MEMORY: dao_status = 2;
/// A pointer that is not live in this allocator or place.
pub const DAO_ERR_INVALID_POINTER: dao_status = 3;
/// The operation does not exist for this place, strategy or build.
pub const DAO_ERR_UNSUPPORTED: dao_status = 4;
/// The place names a device that does not exist on this machine.
pub const DAO_ERR_NO_DEVICE: dao_status = 5;
/// A blocking call ran out of time.
pub const DAO_ERR_TIMEOUT: dao_status = 6;
/// The object was closed.
pub const DAO_ERR_CLOSED: dao_status = 7;
/// The driver or the operating system reported an error.
pub const DAO_ERR_BACKEND: dao_status = 8;
/// A bug in libdao.
pub const DAO_ERR_INTERNAL: dao_status = 9;
/// The call is not allowed in the current state.
pub const DAO_ERR_INVALID_STATE: dao_status = 10;
/// The object is still in use.
pub const DAO_ERR_BUSY: dao_status = 11;
/// A name or key that was looked up does not exist.
pub const DAO_ERR_NOT_FOUND: dao_status = 12;
/// One past the largest code of this version (not a status).
pub const DAO_STATUS_END_: dao_status = 13;

// ------------------------------------------------------------------ place.h

/// `dao_place_kind`: kinds of place.
pub type dao_place_kind = c_int;
/// Host memory from the operating system.
pub const DAO_PLACE_CPU: dao_place_kind = 0;
/// Memory of a CUDA device.
pub const DAO_PLACE_CUDA: dao_place_kind = 1;
/// Page-locked host memory registered with the CUDA driver.
pub const DAO_PLACE_CUDA_PINNED: dao_place_kind = 2;
/// CUDA managed (unified) memory.
pub const DAO_PLACE_CUDA_MANAGED: dao_place_kind = 3;
/// A simulated device.
pub const DAO_PLACE_SIM: dao_place_kind = 4;
/// Number of place kinds of this version.
pub const DAO_PLACE_KIND_COUNT: c_int = 5;

/// `dao_place`: a kind and a device index, passed by value.
#[repr(C)]
#[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
pub struct dao_place {
    /// What kind of memory.
    pub kind: dao_place_kind,
    /// Device index; 0 for CPU and CUDA_PINNED.
    pub device: c_int,
}

// ----------------------------------------------------------------- stream.h

opaque!(
    /// Opaque stream object; `dao_stream` points to it.
    dao_stream_st,
    /// Opaque event object; `dao_event` points to it.
    dao_event_st,
);

/// `dao_stream`: opaque stream handle; NULL is the default (synchronous) stream.
pub type dao_stream = *mut dao_stream_st;
/// `dao_event`: opaque event handle.
pub type dao_event = *mut dao_event_st;
/// `DAO_STREAM_DEFAULT`: the default stream of any place.
pub const DAO_STREAM_DEFAULT: dao_stream = core::ptr::null_mut();
/// `dao_host_fn`: a host function run in stream order.
pub type dao_host_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

// -------------------------------------------------------------- allocator.h

opaque!(
    /// Opaque allocator handle.
    dao_allocator,
    /// Opaque, immutable copy of an allocator's segments and blocks.
    dao_snapshot,
);

/// `dao_allocator_stats`: statistics of an allocator (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct dao_allocator_stats {
    /// In: `size_of::<dao_allocator_stats>()`.
    pub struct_size: usize,
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
    /// Successful allocations since creation.
    pub alloc_count: u64,
    /// Successful frees since creation.
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

/// `dao_stat_metric`: what a detailed statistic counts.
pub type dao_stat_metric = c_int;
/// Bytes of allocated blocks.
pub const DAO_STAT_ALLOCATED_BYTES: dao_stat_metric = 0;
/// Number of allocated blocks.
pub const DAO_STAT_ALLOCATED_BLOCKS: dao_stat_metric = 1;
/// Bytes held from the system.
pub const DAO_STAT_RESERVED_BYTES: dao_stat_metric = 2;
/// System allocations held.
pub const DAO_STAT_RESERVED_SEGMENTS: dao_stat_metric = 3;
/// Bytes of active blocks.
pub const DAO_STAT_ACTIVE_BYTES: dao_stat_metric = 4;
/// Number of active blocks.
pub const DAO_STAT_ACTIVE_BLOCKS: dao_stat_metric = 5;
/// Free bytes in partly used segments.
pub const DAO_STAT_INACTIVE_SPLIT_BYTES: dao_stat_metric = 6;
/// Free blocks in partly used segments.
pub const DAO_STAT_INACTIVE_SPLIT_BLOCKS: dao_stat_metric = 7;
/// Bytes asked for by allocated blocks.
pub const DAO_STAT_REQUESTED_BYTES: dao_stat_metric = 8;
/// Number of `dao_stat_metric` values of this version.
pub const DAO_STAT_METRIC_COUNT: c_int = 9;

/// `dao_stat_pool`: which blocks a statistic covers.
pub type dao_stat_pool = c_int;
/// Every block.
pub const DAO_STAT_POOL_ALL: dao_stat_pool = 0;
/// Blocks of the small pool (requests <= 1 MiB).
pub const DAO_STAT_POOL_SMALL: dao_stat_pool = 1;
/// Blocks of the large pool.
pub const DAO_STAT_POOL_LARGE: dao_stat_pool = 2;
/// Number of `dao_stat_pool` values of this version.
pub const DAO_STAT_POOL_COUNT: c_int = 3;

/// `dao_stat`: one statistic.
#[repr(C)]
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct dao_stat {
    /// Value now.
    pub current: i64,
    /// Largest value since creation or the last reset.
    pub peak: i64,
    /// Sum of all increases.
    pub allocated: i64,
    /// Sum of all decreases.
    pub freed: i64,
}

/// `dao_block_state`: state of a block in a snapshot.
pub type dao_block_state = c_int;
/// Cached, reusable on its stream.
pub const DAO_BLOCK_FREE: dao_block_state = 0;
/// Held by a caller.
pub const DAO_BLOCK_ALLOCATED: dao_block_state = 1;
/// Freed, waiting for other streams' work.
pub const DAO_BLOCK_PENDING_FREE: dao_block_state = 2;

/// `dao_segment_info`: a segment in a snapshot (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dao_segment_info {
    /// In: `size_of::<dao_segment_info>()`.
    pub struct_size: usize,
    /// First byte (`uintptr_t`).
    pub address: usize,
    /// Bytes of addresses the segment spans.
    pub size: usize,
    /// Bytes backed by memory.
    pub mapped_bytes: usize,
    /// `DAO_STAT_POOL_SMALL` or `DAO_STAT_POOL_LARGE`.
    pub pool: dao_stat_pool,
    /// Stream its blocks belong to.
    pub stream: dao_stream,
    /// 1 for an expandable segment.
    pub expandable: c_int,
    /// Blocks in it, in address order.
    pub block_count: usize,
}

/// `dao_block_info`: a block in a snapshot (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dao_block_info {
    /// In: `size_of::<dao_block_info>()`.
    pub struct_size: usize,
    /// First byte (`uintptr_t`).
    pub address: usize,
    /// Block size.
    pub size: usize,
    /// Size asked for (0 unless allocated).
    pub requested_size: usize,
    /// Its state.
    pub state: dao_block_state,
    /// Stream it belongs to.
    pub stream: dao_stream,
}

// ------------------------------------------------------------------- sim.h

/// Most simulated devices a process may have.
pub const DAO_SIM_MAX_DEVICES: c_int = 64;

// --------------------------------------------------------------- recycle.h

/// Most dimensions a buffer shape may have.
pub const DAO_RECYCLE_MAX_DIMS: c_int = 8;

opaque!(
    /// Opaque recycle pool handle.
    dao_recycle_pool,
    /// Opaque handle to one buffer of a pool (one reference to it).
    dao_buffer,
    /// Opaque handle to a named set of pools.
    dao_collection,
);

/// `dao_recycle_stats`: statistics of a recycle pool (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct dao_recycle_stats {
    /// In: `size_of::<dao_recycle_stats>()`.
    pub struct_size: usize,
    /// Buffers created so far.
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

// ---------------------------------------------------------------- tiered.h

opaque!(
    /// Opaque tiered pool handle.
    dao_tiered,
    /// Opaque tensor handle.
    dao_tensor,
);

/// `dao_tensor_state`: where a tensor's data is.
pub type dao_tensor_state = c_int;
/// Never written: no memory anywhere.
pub const DAO_TENSOR_UNINITIALIZED: dao_tensor_state = 0;
/// Resident in the device budget.
pub const DAO_TENSOR_ON_DEVICE: dao_tensor_state = 1;
/// Evicted to (or written into) the host tier.
pub const DAO_TENSOR_ON_HOST: dao_tensor_state = 2;
/// Being copied between the tiers.
pub const DAO_TENSOR_IN_TRANSIT: dao_tensor_state = 3;

/// `dao_kernel_fn`: a kernel run by a tiered pool's executor thread.
pub type dao_kernel_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        inputs: *const *mut c_void,
        input_count: usize,
        outputs: *const *mut c_void,
        output_count: usize,
        stream: dao_stream,
    ) -> dao_status,
>;

/// `dao_tensor_access_info`: what a scoring callback learns of a tensor.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dao_tensor_access_info {
    /// `size_of::<dao_tensor_access_info>()`.
    pub struct_size: usize,
    /// The tensor.
    pub tensor: *const dao_tensor,
    /// Its size.
    pub bytes: usize,
    /// Logical time of the kernel being prepared.
    pub now: u64,
    /// Logical time of its last use so far.
    pub last_use: u64,
    /// Next queued use, or `u64::MAX` if none.
    pub next_use: u64,
    /// Queued kernels that use it.
    pub queued_uses: u64,
    /// 1 if the host tier has no current copy.
    pub dirty: c_int,
}

/// `dao_score_fn`: scores a candidate for eviction (policy `callback`).
pub type dao_score_fn = Option<
    unsafe extern "C" fn(user_data: *mut c_void, info: *const dao_tensor_access_info) -> c_double,
>;

/// `dao_tiered_stats`: statistics of a tiered pool (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone, Default, PartialEq, Eq)]
pub struct dao_tiered_stats {
    /// In: `size_of::<dao_tiered_stats>()`.
    pub struct_size: usize,
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
    /// Time the executor waited for copies.
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
}

// ------------------------------------------------------------------ whole.h

opaque!(
    /// Opaque handle to one rank of a communicator.
    dao_comm,
    /// Opaque handle to one rank's view of a whole memory object.
    dao_whole,
);

/// Most ranks a communicator made by `dao_comm_create_local` may have.
pub const DAO_COMM_LOCAL_MAX_RANKS: c_int = 1024;

/// `dao_whole_type`: how the parts of a whole memory object are addressed.
pub type dao_whole_type = c_int;
/// One range of addresses over all parts (mapped).
pub const DAO_WHOLE_CONTINUOUS: dao_whole_type = 0;
/// Every part addressable by every rank, as separate ranges (mapped).
pub const DAO_WHOLE_CHUNKED: dao_whole_type = 1;
/// Each rank addresses only its own part; the rest by one-sided communication.
pub const DAO_WHOLE_DISTRIBUTED: dao_whole_type = 2;

/// `dao_whole_location`: where the parts of a whole memory object live.
pub type dao_whole_location = c_int;
/// On each rank's own place.
pub const DAO_WHOLE_DEVICE: dao_whole_location = 0;
/// In host memory (the CPU place).
pub const DAO_WHOLE_HOST: dao_whole_location = 1;

/// `dao_whole_desc`: what a whole memory object is made of.
#[repr(C)]
#[derive(Debug, Copy, Clone, Default)]
pub struct dao_whole_desc {
    /// In: `size_of::<dao_whole_desc>()`.
    pub struct_size: usize,
    /// Continuous, chunked or distributed.
    pub type_: dao_whole_type,
    /// Device (each rank's place) or host.
    pub location: dao_whole_location,
    /// Bytes of the whole object (> 0).
    pub total_size: usize,
    /// Bytes of one entry (> 0); divides `total_size`.
    pub entry_size: usize,
}

/// `dao_whole_range`: the entries and bytes one rank owns (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone, Default)]
pub struct dao_whole_range {
    /// In: `size_of::<dao_whole_range>()`.
    pub struct_size: usize,
    /// The rank this range belongs to.
    pub rank: c_int,
    /// Index of its first entry.
    pub first_entry: usize,
    /// Number of entries (0 when it owns none).
    pub entry_count: usize,
    /// `first_entry * entry_size`.
    pub byte_offset: usize,
    /// `entry_count * entry_size`.
    pub byte_size: usize,
}

/// `dao_whole_info`: a whole memory object seen from one rank (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dao_whole_info {
    /// In: `size_of::<dao_whole_info>()`.
    pub struct_size: usize,
    /// As created.
    pub type_: dao_whole_type,
    /// As created.
    pub location: dao_whole_location,
    /// Bytes of the whole object.
    pub total_size: usize,
    /// Bytes of one entry.
    pub entry_size: usize,
    /// `total_size / entry_size`.
    pub entry_count: usize,
    /// This rank.
    pub rank: c_int,
    /// Ranks of the communicator.
    pub size: c_int,
    /// Where this rank's part lives.
    pub place: dao_place,
}

/// `dao_comm_info`: a communicator seen from one rank (size-tagged).
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dao_comm_info {
    /// In: `size_of::<dao_comm_info>()`.
    pub struct_size: usize,
    /// This rank, 0 .. size - 1.
    pub rank: c_int,
    /// Number of ranks.
    pub size: c_int,
    /// This rank's place.
    pub place: dao_place,
    /// "in-process" or "mpi"; a static string.
    pub transport: *const c_char,
    /// 1 when all ranks are in this process.
    pub shares_address_space: c_int,
    /// 1 when all ranks can map each other's host memory.
    pub shares_host_memory: c_int,
}

/// `dao_comm_transport` (experimental, `DAO_EXPERIMENTAL` in C): a
/// communication library's operations, for `dao_comm_create_transport`.
/// The layout may change without a SONAME bump.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dao_comm_transport {
    /// `size_of::<dao_comm_transport>()`.
    pub struct_size: usize,
    /// Passed to every operation.
    pub self_: *mut c_void,
    /// This rank, 0 .. size - 1.
    pub rank: c_int,
    /// Number of ranks (>= 1).
    pub size: c_int,
    /// Static name, e.g. "mpi".
    pub name: *const c_char,
    /// 1 when `shared_allocate` works.
    pub shares_host_memory: c_int,
    /// Message of the last failed operation on the calling thread.
    pub last_error: Option<unsafe extern "C" fn(self_: *mut c_void) -> *const c_char>,
    /// Collective barrier that also makes earlier writes visible.
    pub barrier: Option<unsafe extern "C" fn(self_: *mut c_void) -> dao_status>,
    /// Collective all-gather of `bytes` per rank.
    pub allgather: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            send: *const c_void,
            bytes: usize,
            recv: *mut c_void,
        ) -> dao_status,
    >,
    /// Collective: expose local memory for one-sided access.
    pub window_create: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            local: *mut c_void,
            bytes: usize,
            window: *mut *mut c_void,
        ) -> dao_status,
    >,
    /// Collective, optional: allocate and expose host memory.
    pub window_allocate: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            bytes: usize,
            local: *mut *mut c_void,
            window: *mut *mut c_void,
        ) -> dao_status,
    >,
    /// Start a one-sided read.
    pub window_get: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            window: *mut c_void,
            target: c_int,
            offset: usize,
            dst: *mut c_void,
            bytes: usize,
        ) -> dao_status,
    >,
    /// Start a one-sided write.
    pub window_put: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            window: *mut c_void,
            target: c_int,
            offset: usize,
            src: *const c_void,
            bytes: usize,
        ) -> dao_status,
    >,
    /// Complete every get and put this rank started on the window.
    pub window_complete:
        Option<unsafe extern "C" fn(self_: *mut c_void, window: *mut c_void) -> dao_status>,
    /// Collective: free a window.
    pub window_free:
        Option<unsafe extern "C" fn(self_: *mut c_void, window: *mut c_void) -> dao_status>,
    /// Collective, optional: allocate host memory every rank can map.
    pub shared_allocate: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            bytes: usize,
            contiguous: c_int,
            segment: *mut *mut c_void,
            local: *mut *mut c_void,
        ) -> dao_status,
    >,
    /// Address in this process of a rank's part of a segment.
    pub shared_query: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            segment: *mut c_void,
            rank: c_int,
            ptr: *mut *mut c_void,
        ) -> dao_status,
    >,
    /// Collective: free a shared segment.
    pub shared_free:
        Option<unsafe extern "C" fn(self_: *mut c_void, segment: *mut c_void) -> dao_status>,
    /// Release the transport; called once, by `dao_comm_destroy`.
    pub destroy: Option<unsafe extern "C" fn(self_: *mut c_void)>,
    /// Optional: start reading several pieces of a window.
    pub window_get_many: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            window: *mut c_void,
            target: c_int,
            count: usize,
            target_offsets: *const usize,
            lengths: *const usize,
            dst: *mut c_void,
            dst_offsets: *const usize,
        ) -> dao_status,
    >,
    /// Optional: start writing several pieces of a window.
    pub window_put_many: Option<
        unsafe extern "C" fn(
            self_: *mut c_void,
            window: *mut c_void,
            target: c_int,
            count: usize,
            target_offsets: *const usize,
            lengths: *const usize,
            src: *const c_void,
            src_offsets: *const usize,
        ) -> dao_status,
    >,
}

// -------------------------------------------------------------- functions

extern "C" {
    // version.h
    pub fn dao_version_number() -> c_uint;
    pub fn dao_version_string() -> *const c_char;

    // status.h
    pub fn dao_status_string(status: dao_status) -> *const c_char;
    pub fn dao_last_error() -> *const c_char;

    // place.h
    pub fn dao_place_cpu() -> dao_place;
    pub fn dao_place_cuda(device: c_int) -> dao_place;
    pub fn dao_place_cuda_pinned() -> dao_place;
    pub fn dao_place_cuda_managed(device: c_int) -> dao_place;
    pub fn dao_place_sim(device: c_int) -> dao_place;
    pub fn dao_place_device_count(kind: dao_place_kind, count: *mut c_int) -> dao_status;
    pub fn dao_place_memory_info(
        place: dao_place,
        free_bytes: *mut usize,
        total_bytes: *mut usize,
    ) -> dao_status;
    pub fn dao_place_kind_name(kind: dao_place_kind) -> *const c_char;
    pub fn dao_place_backend_description(kind: dao_place_kind) -> *const c_char;

    // memory.h
    pub fn dao_alloc(place: dao_place, size: usize, ptr: *mut *mut c_void) -> dao_status;
    pub fn dao_free(place: dao_place, ptr: *mut c_void) -> dao_status;
    pub fn dao_used(place: dao_place, bytes: *mut usize) -> dao_status;
    pub fn dao_place_allocator(place: dao_place, out: *mut *mut dao_allocator) -> dao_status;
    pub fn dao_place_default_config(
        kind: dao_place_kind,
        strategy: *mut *const c_char,
        config: *mut *const c_char,
    ) -> dao_status;

    // sim.h
    pub fn dao_sim_configure(count: c_int, capacities: *const usize) -> dao_status;

    // stream.h
    pub fn dao_stream_create(place: dao_place, out: *mut dao_stream) -> dao_status;
    pub fn dao_stream_wrap(
        place: dao_place,
        native: *mut c_void,
        out: *mut dao_stream,
    ) -> dao_status;
    pub fn dao_stream_native(stream: dao_stream, native: *mut *mut c_void) -> dao_status;
    pub fn dao_stream_place(stream: dao_stream, place: *mut dao_place) -> dao_status;
    pub fn dao_stream_synchronize(stream: dao_stream) -> dao_status;
    pub fn dao_stream_query(stream: dao_stream, idle: *mut c_int) -> dao_status;
    pub fn dao_stream_wait_event(stream: dao_stream, event: dao_event) -> dao_status;
    pub fn dao_stream_destroy(stream: dao_stream) -> dao_status;
    pub fn dao_event_create(place: dao_place, out: *mut dao_event) -> dao_status;
    pub fn dao_event_record(event: dao_event, stream: dao_stream) -> dao_status;
    pub fn dao_event_query(event: dao_event, done: *mut c_int) -> dao_status;
    pub fn dao_event_synchronize(event: dao_event) -> dao_status;
    pub fn dao_event_destroy(event: dao_event) -> dao_status;
    pub fn dao_memcpy_async(
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        stream: dao_stream,
    ) -> dao_status;
    pub fn dao_launch_host_func(
        stream: dao_stream,
        fn_: dao_host_fn,
        user_data: *mut c_void,
    ) -> dao_status;

    // allocator.h
    pub fn dao_allocator_create(
        place: dao_place,
        strategy: *const c_char,
        config: *const c_char,
        out: *mut *mut dao_allocator,
    ) -> dao_status;
    pub fn dao_allocator_alloc(
        a: *mut dao_allocator,
        size: usize,
        stream: dao_stream,
        ptr: *mut *mut c_void,
    ) -> dao_status;
    pub fn dao_allocator_free(a: *mut dao_allocator, ptr: *mut c_void) -> dao_status;
    pub fn dao_allocator_usable_size(
        a: *mut dao_allocator,
        ptr: *const c_void,
        size: *mut usize,
    ) -> dao_status;
    pub fn dao_allocator_trim(a: *mut dao_allocator, released: *mut usize) -> dao_status;
    pub fn dao_allocator_get_stats(
        a: *mut dao_allocator,
        stats: *mut dao_allocator_stats,
    ) -> dao_status;
    pub fn dao_allocator_reset_peak_stats(a: *mut dao_allocator) -> dao_status;
    pub fn dao_allocator_info(
        a: *mut dao_allocator,
        place: *mut dao_place,
        strategy: *mut *const c_char,
        config: *mut *const c_char,
    ) -> dao_status;
    pub fn dao_allocator_get_stat(
        a: *mut dao_allocator,
        metric: dao_stat_metric,
        pool: dao_stat_pool,
        out: *mut dao_stat,
    ) -> dao_status;
    pub fn dao_allocator_reset_accumulated_stats(a: *mut dao_allocator) -> dao_status;
    pub fn dao_allocator_record_stream(
        a: *mut dao_allocator,
        ptr: *mut c_void,
        stream: dao_stream,
    ) -> dao_status;
    pub fn dao_allocator_snapshot(a: *mut dao_allocator, out: *mut *mut dao_snapshot)
        -> dao_status;
    pub fn dao_snapshot_segment_count(
        snapshot: *const dao_snapshot,
        count: *mut usize,
    ) -> dao_status;
    pub fn dao_snapshot_segment(
        snapshot: *const dao_snapshot,
        index: usize,
        info: *mut dao_segment_info,
    ) -> dao_status;
    pub fn dao_snapshot_block(
        snapshot: *const dao_snapshot,
        segment: usize,
        index: usize,
        info: *mut dao_block_info,
    ) -> dao_status;
    pub fn dao_snapshot_destroy(snapshot: *mut dao_snapshot) -> dao_status;
    pub fn dao_allocator_snapshot_json(
        a: *mut dao_allocator,
        buffer: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> dao_status;
    pub fn dao_allocator_destroy(a: *mut dao_allocator) -> dao_status;

    // recycle.h
    pub fn dao_recycle_create(
        place: dao_place,
        element_size: usize,
        ndim: c_int,
        shape: *const usize,
        max_buffers: usize,
        preallocate: usize,
        config: *const c_char,
        out: *mut *mut dao_recycle_pool,
    ) -> dao_status;
    pub fn dao_recycle_acquire(
        pool: *mut dao_recycle_pool,
        timeout: c_double,
        out: *mut *mut dao_buffer,
    ) -> dao_status;
    pub fn dao_recycle_submit(pool: *mut dao_recycle_pool, buffer: *mut dao_buffer) -> dao_status;
    pub fn dao_recycle_take(
        pool: *mut dao_recycle_pool,
        timeout: c_double,
        out: *mut *mut dao_buffer,
    ) -> dao_status;
    pub fn dao_recycle_close(pool: *mut dao_recycle_pool) -> dao_status;
    pub fn dao_recycle_get_stats(
        pool: *mut dao_recycle_pool,
        stats: *mut dao_recycle_stats,
    ) -> dao_status;
    pub fn dao_recycle_destroy(pool: *mut dao_recycle_pool) -> dao_status;
    pub fn dao_buffer_retain(buffer: *mut dao_buffer) -> dao_status;
    pub fn dao_buffer_release(buffer: *mut dao_buffer) -> dao_status;
    pub fn dao_buffer_data(buffer: *const dao_buffer, data: *mut *mut c_void) -> dao_status;
    pub fn dao_buffer_shape(
        buffer: *const dao_buffer,
        ndim: *mut c_int,
        shape: *mut *const usize,
    ) -> dao_status;
    pub fn dao_buffer_size(
        buffer: *const dao_buffer,
        element_size: *mut usize,
        bytes: *mut usize,
    ) -> dao_status;
    pub fn dao_buffer_place(buffer: *const dao_buffer, place: *mut dao_place) -> dao_status;
    pub fn dao_buffer_sequence(buffer: *const dao_buffer, sequence: *mut u64) -> dao_status;
    pub fn dao_collection_create(out: *mut *mut dao_collection) -> dao_status;
    pub fn dao_collection_add(
        collection: *mut dao_collection,
        name: *const c_char,
        place: dao_place,
        element_size: usize,
        ndim: c_int,
        shape: *const usize,
        max_buffers: usize,
        preallocate: usize,
        config: *const c_char,
        out: *mut *mut dao_recycle_pool,
    ) -> dao_status;
    pub fn dao_collection_find(
        collection: *mut dao_collection,
        name: *const c_char,
        out: *mut *mut dao_recycle_pool,
    ) -> dao_status;
    pub fn dao_collection_close(collection: *mut dao_collection) -> dao_status;
    pub fn dao_collection_destroy(collection: *mut dao_collection) -> dao_status;

    // tiered.h
    pub fn dao_tiered_create(
        device: dao_place,
        host: dao_place,
        device_budget: usize,
        config: *const c_char,
        out: *mut *mut dao_tiered,
    ) -> dao_status;
    pub fn dao_tiered_set_score_callback(
        pool: *mut dao_tiered,
        score: dao_score_fn,
        user_data: *mut c_void,
    ) -> dao_status;
    pub fn dao_tensor_create(
        pool: *mut dao_tiered,
        bytes: usize,
        out: *mut *mut dao_tensor,
    ) -> dao_status;
    pub fn dao_tensor_write(
        tensor: *mut dao_tensor,
        src: *const c_void,
        bytes: usize,
    ) -> dao_status;
    pub fn dao_tensor_read(tensor: *mut dao_tensor, dst: *mut c_void, bytes: usize) -> dao_status;
    pub fn dao_tensor_get_state(
        tensor: *const dao_tensor,
        state: *mut dao_tensor_state,
    ) -> dao_status;
    pub fn dao_tensor_release(tensor: *mut dao_tensor) -> dao_status;
    pub fn dao_kernel_submit(
        pool: *mut dao_tiered,
        fn_: dao_kernel_fn,
        user_data: *mut c_void,
        inputs: *const *mut dao_tensor,
        input_count: usize,
        outputs: *const *mut dao_tensor,
        output_count: usize,
    ) -> dao_status;
    pub fn dao_tiered_synchronize(pool: *mut dao_tiered) -> dao_status;
    pub fn dao_tiered_get_stats(pool: *mut dao_tiered, stats: *mut dao_tiered_stats) -> dao_status;
    pub fn dao_tiered_destroy(pool: *mut dao_tiered) -> dao_status;

    // whole.h
    pub fn dao_comm_create_local(
        count: c_int,
        places: *const dao_place,
        comms: *mut *mut dao_comm,
    ) -> dao_status;
    pub fn dao_comm_destroy(comm: *mut dao_comm) -> dao_status;
    pub fn dao_comm_rank(comm: *const dao_comm, rank: *mut c_int) -> dao_status;
    pub fn dao_comm_size(comm: *const dao_comm, size: *mut c_int) -> dao_status;
    pub fn dao_comm_rank_place(
        comm: *const dao_comm,
        rank: c_int,
        place: *mut dao_place,
    ) -> dao_status;
    pub fn dao_comm_get_info(comm: *const dao_comm, info: *mut dao_comm_info) -> dao_status;
    pub fn dao_comm_barrier(comm: *mut dao_comm) -> dao_status;
    pub fn dao_whole_type_name(type_: dao_whole_type) -> *const c_char;
    pub fn dao_whole_location_name(location: dao_whole_location) -> *const c_char;
    pub fn dao_whole_supported(
        comm: *const dao_comm,
        type_: dao_whole_type,
        location: dao_whole_location,
    ) -> dao_status;
    pub fn dao_whole_create(
        comm: *mut dao_comm,
        desc: *const dao_whole_desc,
        out: *mut *mut dao_whole,
    ) -> dao_status;
    pub fn dao_whole_destroy(whole: *mut dao_whole) -> dao_status;
    pub fn dao_whole_get_info(whole: *const dao_whole, info: *mut dao_whole_info) -> dao_status;
    pub fn dao_whole_get_partition(
        whole: *const dao_whole,
        rank: c_int,
        range: *mut dao_whole_range,
    ) -> dao_status;
    pub fn dao_whole_entry_rank(
        whole: *const dao_whole,
        index: i64,
        rank: *mut c_int,
    ) -> dao_status;
    pub fn dao_whole_get_local(
        whole: *const dao_whole,
        ptr: *mut *mut c_void,
        range: *mut dao_whole_range,
    ) -> dao_status;
    pub fn dao_whole_get_rank_pointer(
        whole: *const dao_whole,
        rank: c_int,
        ptr: *mut *mut c_void,
    ) -> dao_status;
    pub fn dao_whole_get_base(whole: *const dao_whole, base: *mut *mut c_void) -> dao_status;
    pub fn dao_whole_gather(
        whole: *mut dao_whole,
        indices: *const i64,
        count: usize,
        dst: *mut c_void,
    ) -> dao_status;
    pub fn dao_whole_scatter(
        whole: *mut dao_whole,
        src: *const c_void,
        indices: *const i64,
        count: usize,
    ) -> dao_status;
    pub fn dao_whole_store(whole: *mut dao_whole, path: *const c_char) -> dao_status;
    pub fn dao_whole_load(whole: *mut dao_whole, path: *const c_char) -> dao_status;
    // whole.h, DAO_EXPERIMENTAL
    pub fn dao_comm_create_transport(
        transport: *const dao_comm_transport,
        place: dao_place,
        out: *mut *mut dao_comm,
    ) -> dao_status;
    pub fn dao_comm_transport_error(status: dao_status, message: *const c_char) -> dao_status;
}
