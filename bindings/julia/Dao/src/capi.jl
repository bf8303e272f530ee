# The low-level layer: the C API as it is.
#
# Every exported libdao function has a Julia function of the same name that
# makes the `ccall` and returns what C returns (a `dao_status` as a `Cint`,
# pointers as `Ptr`), constants for every enum value, and a Julia `struct` for
# every public C struct with the same fields in the same order, so that its
# layout is the C layout. `bindings/julia/check.sh` checks all of this against
# the headers and the built library.
#
# Handles (`dao_allocator *`, `dao_stream`, ...) are `Ptr{Cvoid}`. Out-
# parameters are `Ptr{T}`: pass a `Ref{T}`. Strings are `Ptr{UInt8}`: pass a
# `String` (check it holds no NUL) or `C_NULL`. Calls that may wait for
# another thread are made GC-safe (`@gcsafe`); see library.jl.
#
# Thread safety is libdao's, as each header states per function.

# --- statuses (status.h) -----------------------------------------------------

const DAO_OK = Cint(0)
const DAO_ERR_INVALID_ARGUMENT = Cint(1)
const DAO_ERR_OUT_OF_MEMORY = Cint(2)
const DAO_ERR_INVALID_POINTER = Cint(3)
const DAO_ERR_UNSUPPORTED = Cint(4)
const DAO_ERR_NO_DEVICE = Cint(5)
const DAO_ERR_TIMEOUT = Cint(6)
const DAO_ERR_CLOSED = Cint(7)
const DAO_ERR_BACKEND = Cint(8)
const DAO_ERR_INTERNAL = Cint(9)
const DAO_ERR_INVALID_STATE = Cint(10)
const DAO_ERR_BUSY = Cint(11)
const DAO_ERR_NOT_FOUND = Cint(12)

const _STATUS_NAMES = Dict{Cint,String}(
    DAO_OK => "DAO_OK",
    DAO_ERR_INVALID_ARGUMENT => "DAO_ERR_INVALID_ARGUMENT",
    DAO_ERR_OUT_OF_MEMORY => "DAO_ERR_OUT_OF_MEMORY",
    DAO_ERR_INVALID_POINTER => "DAO_ERR_INVALID_POINTER",
    DAO_ERR_UNSUPPORTED => "DAO_ERR_UNSUPPORTED",
    DAO_ERR_NO_DEVICE => "DAO_ERR_NO_DEVICE",
    DAO_ERR_TIMEOUT => "DAO_ERR_TIMEOUT",
    DAO_ERR_CLOSED => "DAO_ERR_CLOSED",
    DAO_ERR_BACKEND => "DAO_ERR_BACKEND",
    DAO_ERR_INTERNAL => "DAO_ERR_INTERNAL",
    DAO_ERR_INVALID_STATE => "DAO_ERR_INVALID_STATE",
    DAO_ERR_BUSY => "DAO_ERR_BUSY",
    DAO_ERR_NOT_FOUND => "DAO_ERR_NOT_FOUND",
)

# --- places (place.h, sim.h) --------------------------------------------------

const DAO_PLACE_CPU = Cint(0)
const DAO_PLACE_CUDA = Cint(1)
const DAO_PLACE_CUDA_PINNED = Cint(2)
const DAO_PLACE_CUDA_MANAGED = Cint(3)
const DAO_PLACE_SIM = Cint(4)
const DAO_PLACE_KIND_COUNT = 5
const DAO_SIM_MAX_DEVICES = 64

"""
    Place(kind, device)

Where memory lives: a kind (`DAO_PLACE_CPU`, `DAO_PLACE_CUDA`,
`DAO_PLACE_CUDA_PINNED`, `DAO_PLACE_CUDA_MANAGED`, `DAO_PLACE_SIM`) and a
device index. The C `dao_place`, passed by value. Build one with
[`cpu`](@ref), [`sim`](@ref), [`cuda`](@ref), [`cuda_pinned`](@ref) or
[`cuda_managed`](@ref).
"""
struct Place
    # C layout: dao_place
    kind::Cint
    device::Cint
end

# --- allocators (allocator.h) --------------------------------------------------

const DAO_STAT_ALLOCATED_BYTES = Cint(0)
const DAO_STAT_ALLOCATED_BLOCKS = Cint(1)
const DAO_STAT_RESERVED_BYTES = Cint(2)
const DAO_STAT_RESERVED_SEGMENTS = Cint(3)
const DAO_STAT_ACTIVE_BYTES = Cint(4)
const DAO_STAT_ACTIVE_BLOCKS = Cint(5)
const DAO_STAT_INACTIVE_SPLIT_BYTES = Cint(6)
const DAO_STAT_INACTIVE_SPLIT_BLOCKS = Cint(7)
const DAO_STAT_REQUESTED_BYTES = Cint(8)
const DAO_STAT_METRIC_COUNT = 9

const DAO_STAT_POOL_ALL = Cint(0)
const DAO_STAT_POOL_SMALL = Cint(1)
const DAO_STAT_POOL_LARGE = Cint(2)
const DAO_STAT_POOL_COUNT = 3

const DAO_BLOCK_FREE = Cint(0)
const DAO_BLOCK_ALLOCATED = Cint(1)
const DAO_BLOCK_PENDING_FREE = Cint(2)

"""
    AllocatorStats

Statistics of an allocator (C `dao_allocator_stats`), as [`stats`](@ref)
returns them. The fields are those of the C struct; see allocator.h.
"""
struct AllocatorStats
    # C layout: dao_allocator_stats
    struct_size::Csize_t
    allocated_bytes::UInt64
    peak_allocated_bytes::UInt64
    requested_bytes::UInt64
    reserved_bytes::UInt64
    peak_reserved_bytes::UInt64
    live_blocks::UInt64
    alloc_count::UInt64
    free_count::UInt64
    failed_alloc_count::UInt64
    system_alloc_count::UInt64
    system_free_count::UInt64
    largest_free_block::UInt64
    alloc_retry_count::UInt64
end

"""
    Stat

One detailed statistic (C `dao_stat`): `current`, `peak`, and the
accumulated `allocated` (increases) and `freed` (decreases).
"""
struct Stat
    # C layout: dao_stat
    current::Int64
    peak::Int64
    allocated::Int64
    freed::Int64
end

"""
    SegmentInfo

A segment of an allocator [`Snapshot`](@ref) (C `dao_segment_info`).
`pool` is `DAO_STAT_POOL_SMALL` or `DAO_STAT_POOL_LARGE`; `expandable` is 1
for an expandable segment.
"""
struct SegmentInfo
    # C layout: dao_segment_info
    struct_size::Csize_t
    address::UInt
    size::Csize_t
    mapped_bytes::Csize_t
    pool::Cint
    stream::Ptr{Cvoid}
    expandable::Cint
    block_count::Csize_t
end

"""
    BlockInfo

A block of an allocator [`Snapshot`](@ref) (C `dao_block_info`). `state` is
`DAO_BLOCK_FREE`, `DAO_BLOCK_ALLOCATED` or `DAO_BLOCK_PENDING_FREE`.
"""
struct BlockInfo
    # C layout: dao_block_info
    struct_size::Csize_t
    address::UInt
    size::Csize_t
    requested_size::Csize_t
    state::Cint
    stream::Ptr{Cvoid}
end

# --- recycle pools (recycle.h) -------------------------------------------------

const DAO_RECYCLE_MAX_DIMS = 8

"""
    RecycleStats

Statistics of a recycle pool (C `dao_recycle_stats`); `created == free +
queued + held`. See recycle.h.
"""
struct RecycleStats
    # C layout: dao_recycle_stats
    struct_size::Csize_t
    created::UInt64
    free::UInt64
    queued::UInt64
    held::UInt64
    peak_free::UInt64
    peak_queued::UInt64
    peak_held::UInt64
    acquired::UInt64
    submitted::UInt64
    taken::UInt64
    acquire_waits::UInt64
    take_waits::UInt64
    acquire_wait_ns::UInt64
    take_wait_ns::UInt64
    timeouts::UInt64
end

# --- tiered pools (tiered.h) ----------------------------------------------------

const DAO_TENSOR_UNINITIALIZED = Cint(0)
const DAO_TENSOR_ON_DEVICE = Cint(1)
const DAO_TENSOR_ON_HOST = Cint(2)
const DAO_TENSOR_IN_TRANSIT = Cint(3)

"""
    TensorAccessInfo

What a scoring callback ([`set_score_callback!`](@ref)) learns of one tensor
that could be evicted (C `dao_tensor_access_info`). `next_use ==
typemax(UInt64)` means no queued kernel uses it again; `dirty == 1` means the
host tier has no current copy.
"""
struct TensorAccessInfo
    # C layout: dao_tensor_access_info
    struct_size::Csize_t
    tensor::Ptr{Cvoid}
    bytes::Csize_t
    now::UInt64
    last_use::UInt64
    next_use::UInt64
    queued_uses::UInt64
    dirty::Cint
end

"""
    TieredStats

Statistics of a tiered pool (C `dao_tiered_stats`). See tiered.h.
"""
struct TieredStats
    # C layout: dao_tiered_stats
    struct_size::Csize_t
    kernels_submitted::UInt64
    kernels_run::UInt64
    evictions::UInt64
    bytes_evicted::UInt64
    fetches::UInt64
    bytes_fetched::UInt64
    prefetches::UInt64
    prefetches_in_time::UInt64
    stall_ns::UInt64
    device_bytes::UInt64
    peak_device_bytes::UInt64
    host_bytes::UInt64
    peak_host_bytes::UInt64
    tensors_live::UInt64
end

# --- partitioned memory (whole.h) ---------------------------------------------

const DAO_COMM_LOCAL_MAX_RANKS = 1024

const DAO_WHOLE_CONTINUOUS = Cint(0)
const DAO_WHOLE_CHUNKED = Cint(1)
const DAO_WHOLE_DISTRIBUTED = Cint(2)

const DAO_WHOLE_DEVICE = Cint(0)
const DAO_WHOLE_HOST = Cint(1)

"""
    WholeDesc

What a whole memory object is made of (C `dao_whole_desc`), for
`dao_whole_create`: `type` (`DAO_WHOLE_CONTINUOUS`, `DAO_WHOLE_CHUNKED`,
`DAO_WHOLE_DISTRIBUTED`), `location` (`DAO_WHOLE_DEVICE`, `DAO_WHOLE_HOST`),
`total_size` and `entry_size` in bytes.
"""
struct WholeDesc
    # C layout: dao_whole_desc
    struct_size::Csize_t
    type::Cint
    location::Cint
    total_size::Csize_t
    entry_size::Csize_t
end

"""
    WholeRange

The entries and bytes one rank owns (C `dao_whole_range`), as
[`partition`](@ref) returns it. `first_entry` is libdao's 0-based index.
"""
struct WholeRange
    # C layout: dao_whole_range
    struct_size::Csize_t
    rank::Cint
    first_entry::Csize_t
    entry_count::Csize_t
    byte_offset::Csize_t
    byte_size::Csize_t
end

"""
    WholeInfo

What a whole memory object is, seen from one rank (C `dao_whole_info`), as
`Dao.info(w::WholeMemory)` returns it.
"""
struct WholeInfo
    # C layout: dao_whole_info
    struct_size::Csize_t
    type::Cint
    location::Cint
    total_size::Csize_t
    entry_size::Csize_t
    entry_count::Csize_t
    rank::Cint
    size::Cint
    place::Place
end

"""
    CommInfo

What a communicator is, seen from one rank (C `dao_comm_info`), as
`Dao.info(c::Comm)` returns it. `transport` is a static C string
(`unsafe_string` it, or use [`Dao.transport`](@ref)).
"""
struct CommInfo
    # C layout: dao_comm_info
    struct_size::Csize_t
    rank::Cint
    size::Cint
    place::Place
    transport::Ptr{UInt8}
    shares_address_space::Cint
    shares_host_memory::Cint
end

"""
    CommTransport

EXPERIMENTAL (C `dao_comm_transport`, under `DAO_EXPERIMENTAL`; its layout
may change without a SONAME bump). A communication library's operations for
`dao_comm_create_transport`: the operations are C function pointers
(`@cfunction`), held here as `Ptr{Cvoid}`. See whole.h for each one.
"""
struct CommTransport
    # C layout: dao_comm_transport
    struct_size::Csize_t
    self::Ptr{Cvoid}
    rank::Cint
    size::Cint
    name::Ptr{UInt8}
    shares_host_memory::Cint
    last_error::Ptr{Cvoid}
    barrier::Ptr{Cvoid}
    allgather::Ptr{Cvoid}
    window_create::Ptr{Cvoid}
    window_allocate::Ptr{Cvoid}
    window_get::Ptr{Cvoid}
    window_put::Ptr{Cvoid}
    window_complete::Ptr{Cvoid}
    window_free::Ptr{Cvoid}
    shared_allocate::Ptr{Cvoid}
    shared_query::Ptr{Cvoid}
    shared_free::Ptr{Cvoid}
    destroy::Ptr{Cvoid}
    window_get_many::Ptr{Cvoid}
    window_put_many::Ptr{Cvoid}
end

# A size-tagged struct ready for a C call: every field zero, `struct_size` set.
_zero_field(::Type{T}) where {T} = T <: Ptr ? T(C_NULL) : T === Place ? Place(Cint(0), Cint(0)) : zero(T)
function _sized(::Type{T}) where {T}
    zeros = map(_zero_field, fieldtypes(T))
    return Ref{T}(T(Csize_t(sizeof(T)), Base.tail(zeros)...))
end

# =============================================================================
# The 106 functions, in the order of the headers.
# =============================================================================

# --- version.h ---
dao_version_number() = ccall((:dao_version_number, libdao), Cuint, ())
dao_version_string() = ccall((:dao_version_string, libdao), Ptr{UInt8}, ())

# --- status.h ---
dao_status_string(status) = ccall((:dao_status_string, libdao), Ptr{UInt8}, (Cint,), status)
dao_last_error() = ccall((:dao_last_error, libdao), Ptr{UInt8}, ())

# --- place.h ---
dao_place_cpu() = ccall((:dao_place_cpu, libdao), Place, ())
dao_place_cuda(device) = ccall((:dao_place_cuda, libdao), Place, (Cint,), device)
dao_place_cuda_pinned() = ccall((:dao_place_cuda_pinned, libdao), Place, ())
dao_place_cuda_managed(device) = ccall((:dao_place_cuda_managed, libdao), Place, (Cint,), device)
dao_place_sim(device) = ccall((:dao_place_sim, libdao), Place, (Cint,), device)
dao_place_device_count(kind, count) =
    @gcsafe ccall((:dao_place_device_count, libdao), Cint, (Cint, Ptr{Cint}), kind, count)
dao_place_memory_info(place, free_bytes, total_bytes) =
    @gcsafe ccall((:dao_place_memory_info, libdao), Cint, (Place, Ptr{Csize_t}, Ptr{Csize_t}),
                  place, free_bytes, total_bytes)
dao_place_kind_name(kind) = ccall((:dao_place_kind_name, libdao), Ptr{UInt8}, (Cint,), kind)
dao_place_backend_description(kind) =
    @gcsafe ccall((:dao_place_backend_description, libdao), Ptr{UInt8}, (Cint,), kind)

# --- memory.h ---
dao_alloc(place, size, ptr) =
    @gcsafe ccall((:dao_alloc, libdao), Cint, (Place, Csize_t, Ptr{Ptr{Cvoid}}), place, size, ptr)
dao_free(place, ptr) =
    @gcsafe ccall((:dao_free, libdao), Cint, (Place, Ptr{Cvoid}), place, ptr)
dao_used(place, bytes) =
    @gcsafe ccall((:dao_used, libdao), Cint, (Place, Ptr{Csize_t}), place, bytes)
dao_place_allocator(place, out) =
    @gcsafe ccall((:dao_place_allocator, libdao), Cint, (Place, Ptr{Ptr{Cvoid}}), place, out)
dao_place_default_config(kind, strategy, config) =
    @gcsafe ccall((:dao_place_default_config, libdao), Cint,
                  (Cint, Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}), kind, strategy, config)

# --- sim.h ---
dao_sim_configure(count, capacities) =
    @gcsafe ccall((:dao_sim_configure, libdao), Cint, (Cint, Ptr{Csize_t}), count, capacities)

# --- allocator.h ---
dao_allocator_create(place, strategy, config, out) =
    @gcsafe ccall((:dao_allocator_create, libdao), Cint,
                  (Place, Ptr{UInt8}, Ptr{UInt8}, Ptr{Ptr{Cvoid}}), place, strategy, config, out)
dao_allocator_alloc(a, size, stream, ptr) =
    @gcsafe ccall((:dao_allocator_alloc, libdao), Cint,
                  (Ptr{Cvoid}, Csize_t, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), a, size, stream, ptr)
dao_allocator_free(a, ptr) =
    @gcsafe ccall((:dao_allocator_free, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), a, ptr)
dao_allocator_usable_size(a, ptr, size) =
    @gcsafe ccall((:dao_allocator_usable_size, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Csize_t}), a, ptr, size)
dao_allocator_trim(a, released) =
    @gcsafe ccall((:dao_allocator_trim, libdao), Cint, (Ptr{Cvoid}, Ptr{Csize_t}), a, released)
dao_allocator_get_stats(a, stats) =
    @gcsafe ccall((:dao_allocator_get_stats, libdao), Cint, (Ptr{Cvoid}, Ptr{AllocatorStats}),
                  a, stats)
dao_allocator_reset_peak_stats(a) =
    @gcsafe ccall((:dao_allocator_reset_peak_stats, libdao), Cint, (Ptr{Cvoid},), a)
dao_allocator_info(a, place, strategy, config) =
    @gcsafe ccall((:dao_allocator_info, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{Place}, Ptr{Ptr{UInt8}}, Ptr{Ptr{UInt8}}), a, place, strategy,
                  config)
dao_allocator_get_stat(a, metric, pool, out) =
    @gcsafe ccall((:dao_allocator_get_stat, libdao), Cint, (Ptr{Cvoid}, Cint, Cint, Ptr{Stat}),
                  a, metric, pool, out)
dao_allocator_reset_accumulated_stats(a) =
    @gcsafe ccall((:dao_allocator_reset_accumulated_stats, libdao), Cint, (Ptr{Cvoid},), a)
dao_allocator_record_stream(a, ptr, stream) =
    @gcsafe ccall((:dao_allocator_record_stream, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), a, ptr, stream)
dao_allocator_snapshot(a, out) =
    @gcsafe ccall((:dao_allocator_snapshot, libdao), Cint, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), a, out)
dao_snapshot_segment_count(snapshot, count) =
    @gcsafe ccall((:dao_snapshot_segment_count, libdao), Cint, (Ptr{Cvoid}, Ptr{Csize_t}),
                  snapshot, count)
dao_snapshot_segment(snapshot, index, info) =
    @gcsafe ccall((:dao_snapshot_segment, libdao), Cint, (Ptr{Cvoid}, Csize_t, Ptr{SegmentInfo}),
                  snapshot, index, info)
dao_snapshot_block(snapshot, segment, index, info) =
    @gcsafe ccall((:dao_snapshot_block, libdao), Cint,
                  (Ptr{Cvoid}, Csize_t, Csize_t, Ptr{BlockInfo}), snapshot, segment, index, info)
dao_snapshot_destroy(snapshot) =
    @gcsafe ccall((:dao_snapshot_destroy, libdao), Cint, (Ptr{Cvoid},), snapshot)
dao_allocator_snapshot_json(a, buffer, capacity, length) =
    @gcsafe ccall((:dao_allocator_snapshot_json, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, Ptr{Csize_t}), a, buffer, capacity, length)
dao_allocator_destroy(a) =
    @gcsafe ccall((:dao_allocator_destroy, libdao), Cint, (Ptr{Cvoid},), a)

# --- stream.h ---
dao_stream_create(place, out) =
    @gcsafe ccall((:dao_stream_create, libdao), Cint, (Place, Ptr{Ptr{Cvoid}}), place, out)
dao_stream_wrap(place, native, out) =
    @gcsafe ccall((:dao_stream_wrap, libdao), Cint, (Place, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}),
                  place, native, out)
dao_stream_native(stream, native) =
    @gcsafe ccall((:dao_stream_native, libdao), Cint, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), stream, native)
dao_stream_place(stream, place) =
    @gcsafe ccall((:dao_stream_place, libdao), Cint, (Ptr{Cvoid}, Ptr{Place}), stream, place)
dao_stream_synchronize(stream) =
    @gcsafe ccall((:dao_stream_synchronize, libdao), Cint, (Ptr{Cvoid},), stream)
dao_stream_query(stream, idle) =
    @gcsafe ccall((:dao_stream_query, libdao), Cint, (Ptr{Cvoid}, Ptr{Cint}), stream, idle)
dao_stream_wait_event(stream, event) =
    @gcsafe ccall((:dao_stream_wait_event, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), stream, event)
dao_stream_destroy(stream) =
    @gcsafe ccall((:dao_stream_destroy, libdao), Cint, (Ptr{Cvoid},), stream)
dao_event_create(place, out) =
    @gcsafe ccall((:dao_event_create, libdao), Cint, (Place, Ptr{Ptr{Cvoid}}), place, out)
dao_event_record(event, stream) =
    @gcsafe ccall((:dao_event_record, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), event, stream)
dao_event_query(event, done) =
    @gcsafe ccall((:dao_event_query, libdao), Cint, (Ptr{Cvoid}, Ptr{Cint}), event, done)
dao_event_synchronize(event) =
    @gcsafe ccall((:dao_event_synchronize, libdao), Cint, (Ptr{Cvoid},), event)
dao_event_destroy(event) =
    @gcsafe ccall((:dao_event_destroy, libdao), Cint, (Ptr{Cvoid},), event)
dao_memcpy_async(dst, src, bytes, stream) =
    @gcsafe ccall((:dao_memcpy_async, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Csize_t, Ptr{Cvoid}),
                  dst, src, bytes, stream)
# On the default stream and on CPU streams the host function runs on the
# calling thread inside this call: a Julia callback then runs normally (the
# callback's C entry point leaves the GC-safe state by itself).
dao_launch_host_func(stream, fn, user_data) =
    @gcsafe ccall((:dao_launch_host_func, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}),
                  stream, fn, user_data)

# --- recycle.h ---
dao_recycle_create(place, element_size, ndim, shape, max_buffers, preallocate, config, out) =
    @gcsafe ccall((:dao_recycle_create, libdao), Cint,
                  (Place, Csize_t, Cint, Ptr{Csize_t}, Csize_t, Csize_t, Ptr{UInt8}, Ptr{Ptr{Cvoid}}),
                  place, element_size, ndim, shape, max_buffers, preallocate, config, out)
dao_recycle_acquire(pool, timeout, out) =
    @gcsafe ccall((:dao_recycle_acquire, libdao), Cint, (Ptr{Cvoid}, Cdouble, Ptr{Ptr{Cvoid}}),
                  pool, timeout, out)
dao_recycle_submit(pool, buffer) =
    @gcsafe ccall((:dao_recycle_submit, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), pool, buffer)
dao_recycle_take(pool, timeout, out) =
    @gcsafe ccall((:dao_recycle_take, libdao), Cint, (Ptr{Cvoid}, Cdouble, Ptr{Ptr{Cvoid}}),
                  pool, timeout, out)
dao_recycle_close(pool) =
    @gcsafe ccall((:dao_recycle_close, libdao), Cint, (Ptr{Cvoid},), pool)
dao_recycle_get_stats(pool, stats) =
    @gcsafe ccall((:dao_recycle_get_stats, libdao), Cint, (Ptr{Cvoid}, Ptr{RecycleStats}),
                  pool, stats)
dao_recycle_destroy(pool) =
    @gcsafe ccall((:dao_recycle_destroy, libdao), Cint, (Ptr{Cvoid},), pool)
dao_buffer_retain(buffer) =
    @gcsafe ccall((:dao_buffer_retain, libdao), Cint, (Ptr{Cvoid},), buffer)
dao_buffer_release(buffer) =
    @gcsafe ccall((:dao_buffer_release, libdao), Cint, (Ptr{Cvoid},), buffer)
dao_buffer_data(buffer, data) =
    @gcsafe ccall((:dao_buffer_data, libdao), Cint, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), buffer, data)
dao_buffer_shape(buffer, ndim, shape) =
    @gcsafe ccall((:dao_buffer_shape, libdao), Cint, (Ptr{Cvoid}, Ptr{Cint}, Ptr{Ptr{Csize_t}}),
                  buffer, ndim, shape)
dao_buffer_size(buffer, element_size, bytes) =
    @gcsafe ccall((:dao_buffer_size, libdao), Cint, (Ptr{Cvoid}, Ptr{Csize_t}, Ptr{Csize_t}),
                  buffer, element_size, bytes)
dao_buffer_place(buffer, place) =
    @gcsafe ccall((:dao_buffer_place, libdao), Cint, (Ptr{Cvoid}, Ptr{Place}), buffer, place)
dao_buffer_sequence(buffer, sequence) =
    @gcsafe ccall((:dao_buffer_sequence, libdao), Cint, (Ptr{Cvoid}, Ptr{UInt64}), buffer, sequence)
dao_collection_create(out) =
    @gcsafe ccall((:dao_collection_create, libdao), Cint, (Ptr{Ptr{Cvoid}},), out)
dao_collection_add(collection, name, place, element_size, ndim, shape, max_buffers, preallocate,
                   config, out) =
    @gcsafe ccall((:dao_collection_add, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{UInt8}, Place, Csize_t, Cint, Ptr{Csize_t}, Csize_t, Csize_t,
                   Ptr{UInt8}, Ptr{Ptr{Cvoid}}),
                  collection, name, place, element_size, ndim, shape, max_buffers, preallocate,
                  config, out)
dao_collection_find(collection, name, out) =
    @gcsafe ccall((:dao_collection_find, libdao), Cint, (Ptr{Cvoid}, Ptr{UInt8}, Ptr{Ptr{Cvoid}}),
                  collection, name, out)
dao_collection_close(collection) =
    @gcsafe ccall((:dao_collection_close, libdao), Cint, (Ptr{Cvoid},), collection)
dao_collection_destroy(collection) =
    @gcsafe ccall((:dao_collection_destroy, libdao), Cint, (Ptr{Cvoid},), collection)

# --- tiered.h ---
dao_tiered_create(device, host, device_budget, config, out) =
    @gcsafe ccall((:dao_tiered_create, libdao), Cint,
                  (Place, Place, Csize_t, Ptr{UInt8}, Ptr{Ptr{Cvoid}}),
                  device, host, device_budget, config, out)
dao_tiered_set_score_callback(pool, score, user_data) =
    @gcsafe ccall((:dao_tiered_set_score_callback, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}), pool, score, user_data)
dao_tensor_create(pool, bytes, out) =
    @gcsafe ccall((:dao_tensor_create, libdao), Cint, (Ptr{Cvoid}, Csize_t, Ptr{Ptr{Cvoid}}),
                  pool, bytes, out)
dao_tensor_write(tensor, src, bytes) =
    @gcsafe ccall((:dao_tensor_write, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Csize_t),
                  tensor, src, bytes)
dao_tensor_read(tensor, dst, bytes) =
    @gcsafe ccall((:dao_tensor_read, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Csize_t),
                  tensor, dst, bytes)
dao_tensor_get_state(tensor, state) =
    @gcsafe ccall((:dao_tensor_get_state, libdao), Cint, (Ptr{Cvoid}, Ptr{Cint}), tensor, state)
dao_tensor_release(tensor) =
    @gcsafe ccall((:dao_tensor_release, libdao), Cint, (Ptr{Cvoid},), tensor)
dao_kernel_submit(pool, fn, user_data, inputs, input_count, outputs, output_count) =
    @gcsafe ccall((:dao_kernel_submit, libdao), Cint,
                  (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, Csize_t, Ptr{Ptr{Cvoid}},
                   Csize_t),
                  pool, fn, user_data, inputs, input_count, outputs, output_count)
dao_tiered_synchronize(pool) =
    @gcsafe ccall((:dao_tiered_synchronize, libdao), Cint, (Ptr{Cvoid},), pool)
dao_tiered_get_stats(pool, stats) =
    @gcsafe ccall((:dao_tiered_get_stats, libdao), Cint, (Ptr{Cvoid}, Ptr{TieredStats}), pool, stats)
dao_tiered_destroy(pool) =
    @gcsafe ccall((:dao_tiered_destroy, libdao), Cint, (Ptr{Cvoid},), pool)

# --- whole.h ---
# Collective calls (create, destroy, barrier, store, load) wait for the other
# ranks, and so are GC-safe; so are gather and scatter (copies).
dao_comm_create_local(count, places, comms) =
    @gcsafe ccall((:dao_comm_create_local, libdao), Cint, (Cint, Ptr{Place}, Ptr{Ptr{Cvoid}}),
                  count, places, comms)
dao_comm_destroy(comm) =
    @gcsafe ccall((:dao_comm_destroy, libdao), Cint, (Ptr{Cvoid},), comm)
dao_comm_rank(comm, rank) =
    ccall((:dao_comm_rank, libdao), Cint, (Ptr{Cvoid}, Ptr{Cint}), comm, rank)
dao_comm_size(comm, size) =
    ccall((:dao_comm_size, libdao), Cint, (Ptr{Cvoid}, Ptr{Cint}), comm, size)
dao_comm_rank_place(comm, rank, place) =
    ccall((:dao_comm_rank_place, libdao), Cint, (Ptr{Cvoid}, Cint, Ptr{Place}), comm, rank, place)
dao_comm_get_info(comm, info) =
    ccall((:dao_comm_get_info, libdao), Cint, (Ptr{Cvoid}, Ptr{CommInfo}), comm, info)
dao_comm_barrier(comm) =
    @gcsafe ccall((:dao_comm_barrier, libdao), Cint, (Ptr{Cvoid},), comm)
dao_whole_type_name(type) =
    ccall((:dao_whole_type_name, libdao), Ptr{UInt8}, (Cint,), type)
dao_whole_location_name(location) =
    ccall((:dao_whole_location_name, libdao), Ptr{UInt8}, (Cint,), location)
dao_whole_supported(comm, type, location) =
    ccall((:dao_whole_supported, libdao), Cint, (Ptr{Cvoid}, Cint, Cint), comm, type, location)
dao_whole_create(comm, desc, out) =
    @gcsafe ccall((:dao_whole_create, libdao), Cint, (Ptr{Cvoid}, Ptr{WholeDesc}, Ptr{Ptr{Cvoid}}),
                  comm, desc, out)
dao_whole_destroy(whole) =
    @gcsafe ccall((:dao_whole_destroy, libdao), Cint, (Ptr{Cvoid},), whole)
dao_whole_get_info(whole, info) =
    ccall((:dao_whole_get_info, libdao), Cint, (Ptr{Cvoid}, Ptr{WholeInfo}), whole, info)
dao_whole_get_partition(whole, rank, range) =
    ccall((:dao_whole_get_partition, libdao), Cint, (Ptr{Cvoid}, Cint, Ptr{WholeRange}),
          whole, rank, range)
dao_whole_entry_rank(whole, index, rank) =
    ccall((:dao_whole_entry_rank, libdao), Cint, (Ptr{Cvoid}, Int64, Ptr{Cint}), whole, index, rank)
dao_whole_get_local(whole, ptr, range) =
    ccall((:dao_whole_get_local, libdao), Cint, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, Ptr{WholeRange}),
          whole, ptr, range)
dao_whole_get_rank_pointer(whole, rank, ptr) =
    ccall((:dao_whole_get_rank_pointer, libdao), Cint, (Ptr{Cvoid}, Cint, Ptr{Ptr{Cvoid}}),
          whole, rank, ptr)
dao_whole_get_base(whole, base) =
    ccall((:dao_whole_get_base, libdao), Cint, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}), whole, base)
dao_whole_gather(whole, indices, count, dst) =
    @gcsafe ccall((:dao_whole_gather, libdao), Cint, (Ptr{Cvoid}, Ptr{Int64}, Csize_t, Ptr{Cvoid}),
                  whole, indices, count, dst)
dao_whole_scatter(whole, src, indices, count) =
    @gcsafe ccall((:dao_whole_scatter, libdao), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Int64}, Csize_t),
                  whole, src, indices, count)
dao_whole_store(whole, path) =
    @gcsafe ccall((:dao_whole_store, libdao), Cint, (Ptr{Cvoid}, Ptr{UInt8}), whole, path)
dao_whole_load(whole, path) =
    @gcsafe ccall((:dao_whole_load, libdao), Cint, (Ptr{Cvoid}, Ptr{UInt8}), whole, path)

# Experimental (DAO_EXPERIMENTAL in whole.h): transports.
dao_comm_create_transport(transport, place, out) =
    @gcsafe ccall((:dao_comm_create_transport, libdao), Cint,
                  (Ptr{CommTransport}, Place, Ptr{Ptr{Cvoid}}), transport, place, out)
dao_comm_transport_error(status, message) =
    ccall((:dao_comm_transport_error, libdao), Cint, (Cint, Ptr{UInt8}), status, message)
