# Allocator objects, their statistics, snapshots and JSON (allocator.h,
# memory.h).

_new_allocator(handle::Ptr{Cvoid}, place::Place, owned::Bool) =
    Allocator(handle, place, owned, ReentrantLock(), Threads.Atomic{Int}(0))

"""
    Allocator(place; strategy = nothing, config = nothing)

Create an allocator of a strategy (`"buddy"`, `"caching"`, `"system"`, or
`nothing` for the place's default) on a place, configured by a
`"key=value,..."` string (`dao_allocator_create`). Unknown strategies, unknown
keys and malformed values throw `DaoError(DAO_ERR_INVALID_ARGUMENT)`.
Destroyed by [`destroy!`](@ref)/`close` (refused with `DAO_ERR_BUSY` while
blocks are live) or by the GC once it and all its blocks are unreachable.
"""
function Allocator(place::Place; strategy::Union{Nothing,AbstractString} = nothing,
                   config::Union{Nothing,AbstractString} = nothing)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_allocator_create(place, _cstr_or_null(strategy), _cstr_or_null(config), out))
    a = _new_allocator(out[], place, true)
    finalizer(_finalize_allocator, a)
    return a
end

"""
    place_allocator(place) -> Allocator

The default allocator of a place (`dao_place_allocator`), created on first
use. It belongs to libdao: destroying it is refused.
"""
function place_allocator(place::Place)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_place_allocator(place, out))
    return _new_allocator(out[], place, false)
end

function _handle(a::Allocator)
    a.handle == C_NULL && throw(ArgumentError("this Dao.Allocator was destroyed"))
    return a.handle
end

function alloc(a::Allocator, bytes::Integer; stream::Union{Stream,Nothing} = nothing)
    bytes >= 0 || throw(ArgumentError("nbytes must be >= 0, got $bytes"))
    h = _handle(a)
    sh = _handle(stream)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_allocator_alloc(h, bytes, sh, out))
    if out[] == C_NULL  # 0 bytes: nothing to free
        return Block(C_NULL, Int(bytes), a.place, nothing, Stream[])
    end
    Threads.atomic_add!(a.deps, 1)
    streams = Stream[]
    if stream !== nothing
        Threads.atomic_add!(stream.deps, 1)
        push!(streams, stream)
    end
    m = Block(out[], Int(bytes), a.place, a, streams)
    finalizer(_finalize_block, m)
    return m
end

"""
    record_stream!(m::Block, stream)

Mark a block of a `"caching"` allocator as used on another stream
(`dao_allocator_record_stream`, PyTorch's `recordStream`): once freed, it is
reused only after the work queued on `stream` up to the free has run. The
stream is kept alive (and cannot be closed) until the block is freed.
"""
function record_stream!(m::Block, s::Stream)
    a = m.allocator === nothing ? place_allocator(m.place) : m.allocator
    m.ptr == C_NULL && throw(ArgumentError("record_stream! of a freed or 0-byte Dao.Block"))
    check(dao_allocator_record_stream(_handle(a), m.ptr, _handle(s)))
    if !any(x -> x === s, m.streams)
        Threads.atomic_add!(s.deps, 1)
        push!(m.streams, s)
    end
    return m
end

"""
    trim!(a::Allocator) -> Int

Hand cached memory back to the system (`dao_allocator_trim`); returns the
bytes given back.
"""
function trim!(a::Allocator)
    h = _handle(a)
    _wait_task_hostfuncs()  # trimming may wait for stream work
    released = Ref{Csize_t}(0)
    check(dao_allocator_trim(h, released))
    return Int(released[])
end

"""
    stats(a::Allocator) -> AllocatorStats

The allocator's statistics (`dao_allocator_get_stats`), one consistent
snapshot. See [`AllocatorStats`](@ref).
"""
function stats(a::Allocator)
    r = _sized(AllocatorStats)
    check(dao_allocator_get_stats(_handle(a), r))
    return r[]
end

"""    reset_peak_stats!(a)  — set every peak statistic to its current value."""
function reset_peak_stats!(a::Allocator)
    check(dao_allocator_reset_peak_stats(_handle(a)))
    return a
end

"""    reset_accumulated_stats!(a)  — zero the accumulated statistics and counters."""
function reset_accumulated_stats!(a::Allocator)
    check(dao_allocator_reset_accumulated_stats(_handle(a)))
    return a
end

"""
    info(a::Allocator) -> (place = Place, strategy = String, config = String)

Place, strategy and effective configuration of an allocator
(`dao_allocator_info`); `config` lists every key with its value, in a form
`Allocator(...; config)` accepts.
"""
function info(a::Allocator)
    place = Ref{Place}(Place(DAO_PLACE_CPU, 0))
    strategy = Ref{Ptr{UInt8}}(C_NULL)
    config = Ref{Ptr{UInt8}}(C_NULL)
    check(dao_allocator_info(_handle(a), place, strategy, config))
    return (place = place[], strategy = unsafe_string(strategy[]), config = unsafe_string(config[]))
end

const _METRICS = Dict{Symbol,Cint}(
    :allocated_bytes => DAO_STAT_ALLOCATED_BYTES, :allocated_blocks => DAO_STAT_ALLOCATED_BLOCKS,
    :reserved_bytes => DAO_STAT_RESERVED_BYTES, :reserved_segments => DAO_STAT_RESERVED_SEGMENTS,
    :active_bytes => DAO_STAT_ACTIVE_BYTES, :active_blocks => DAO_STAT_ACTIVE_BLOCKS,
    :inactive_split_bytes => DAO_STAT_INACTIVE_SPLIT_BYTES,
    :inactive_split_blocks => DAO_STAT_INACTIVE_SPLIT_BLOCKS,
    :requested_bytes => DAO_STAT_REQUESTED_BYTES)
const _STAT_POOLS = Dict{Symbol,Cint}(:all => DAO_STAT_POOL_ALL, :small => DAO_STAT_POOL_SMALL,
                                      :large => DAO_STAT_POOL_LARGE)
_metric(m::Integer) = m
_metric(m::Symbol) = haskey(_METRICS, m) ? _METRICS[m] :
    throw(ArgumentError("unknown metric :$m; known: $(join(sort!(collect(keys(_METRICS))), ", "))"))
_statpool(p::Integer) = p
_statpool(p::Symbol) = haskey(_STAT_POOLS, p) ? _STAT_POOLS[p] :
    throw(ArgumentError("unknown pool :$p; known: all, small, large"))

"""
    stat(a::Allocator, metric, pool = :all) -> Stat

One detailed statistic (`dao_allocator_get_stat`). `metric` is a
`DAO_STAT_*` constant or a Symbol (`:allocated_bytes`, `:allocated_blocks`,
`:reserved_bytes`, `:reserved_segments`, `:active_bytes`, `:active_blocks`,
`:inactive_split_bytes`, `:inactive_split_blocks`, `:requested_bytes`);
`pool` is `DAO_STAT_POOL_*` or `:all`, `:small`, `:large`. Statistics a
strategy does not keep throw `DaoError(DAO_ERR_UNSUPPORTED)`.
"""
function stat(a::Allocator, metric::Union{Integer,Symbol}, pool::Union{Integer,Symbol} = :all)
    out = Ref{Stat}(Stat(0, 0, 0, 0))
    check(dao_allocator_get_stat(_handle(a), _metric(metric), _statpool(pool), out))
    return out[]
end

"""
    snapshot_json(a::Allocator) -> String

The allocator's segments, blocks, statistics and config as a JSON document
(`dao_allocator_snapshot_json`). Strategies that keep no segments throw
`DaoError(DAO_ERR_UNSUPPORTED)`.
"""
function snapshot_json(a::Allocator)
    h = _handle(a)
    len = Ref{Csize_t}(0)
    check(dao_allocator_snapshot_json(h, C_NULL, 0, len))
    while true
        buf = Vector{UInt8}(undef, Int(len[]) + 1)
        check(dao_allocator_snapshot_json(h, buf, length(buf), len))
        len[] < length(buf) && return String(buf[1:Int(len[])])
        # the allocator changed between the two calls: try again with the new length
    end
end

"""
    destroy!(a::Allocator)
    close(a::Allocator)

Destroy an allocator and give its memory back (`dao_allocator_destroy`).
Throws `DaoError(DAO_ERR_BUSY)` while blocks are live and
`DaoError(DAO_ERR_INVALID_ARGUMENT)` for a place's default allocator.
"""
function destroy!(a::Allocator)
    a.handle == C_NULL && return nothing
    _wait_task_hostfuncs()  # destroying may wait for stream work
    lock(a.lock) do
        if a.handle != C_NULL
            check(dao_allocator_destroy(a.handle))
            a.handle = C_NULL
        end
    end
    return nothing
end
Base.close(a::Allocator) = destroy!(a)
Base.isopen(a::Allocator) = a.handle != C_NULL

function _finalize_allocator(a::Allocator)
    (a.handle == C_NULL || !a.owned || _EXITING[]) && return nothing
    (a.deps[] > 0 || _TASK_PENDING[] > 0) && return _retry_finalizer(_finalize_allocator, a)
    _locked_or_retry(_finalize_allocator, a, a.lock) do
        if a.handle != C_NULL && a.deps[] == 0
            # DAO_ERR_BUSY here means blocks made through the raw API are still
            # live: the allocator is then left alone (leaked), never torn down.
            dao_allocator_destroy(a.handle) == DAO_OK && (a.handle = C_NULL)
        end
    end
    return nothing
end

function Base.show(io::IO, a::Allocator)
    print(io, "Dao.Allocator(")
    if a.handle == C_NULL
        print(io, a.place, ", destroyed)")
        return
    end
    strategy = try
        info(a).strategy
    catch
        "?"
    end
    print(io, strategy, " on ", a.place)
    a.owned || print(io, ", place default")
    print(io, ")")
end

function Base.show(io::IO, ::MIME"text/plain",
                   s::Union{AllocatorStats,RecycleStats,TieredStats,TieredLinkStats,SimCost})
    println(io, typeof(s), ":")
    names = fieldnames(typeof(s))
    width = maximum(length ∘ string, names)
    for (i, name) in enumerate(names)
        print(io, "  ", rpad(string(name), width), " = ", getfield(s, name))  # print: decimal
        i < length(names) && println(io)
    end
end

# --- snapshots ------------------------------------------------------------------------

"""
    snapshot(a::Allocator) -> Snapshot

An immutable copy of every segment and block of a `"caching"` allocator
(`dao_allocator_snapshot`). Other strategies throw
`DaoError(DAO_ERR_UNSUPPORTED)`.
"""
function snapshot(a::Allocator)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_allocator_snapshot(_handle(a), out))
    s = Snapshot(out[])
    finalizer(_finalize_snapshot, s)
    return s
end

function _handle(s::Snapshot)
    s.handle == C_NULL && throw(ArgumentError("this Dao.Snapshot was destroyed"))
    return s.handle
end

"""    segment_count(s::Snapshot) -> Int  (`dao_snapshot_segment_count`)"""
function segment_count(s::Snapshot)
    n = Ref{Csize_t}(0)
    check(dao_snapshot_segment_count(_handle(s), n))
    return Int(n[])
end

"""    segment(s::Snapshot, i) -> SegmentInfo  — segment `i` (1-based, address order)."""
function segment(s::Snapshot, i::Integer)
    r = _sized(SegmentInfo)
    check(dao_snapshot_segment(_handle(s), i - 1, r))
    return r[]
end

"""    block(s::Snapshot, i, j) -> BlockInfo  — block `j` of segment `i` (1-based)."""
function block(s::Snapshot, i::Integer, j::Integer)
    r = _sized(BlockInfo)
    check(dao_snapshot_block(_handle(s), i - 1, j - 1, r))
    return r[]
end

"""    segments(s::Snapshot) -> Vector{SegmentInfo}"""
segments(s::Snapshot) = SegmentInfo[segment(s, i) for i in 1:segment_count(s)]

"""    blocks(s::Snapshot, i) -> Vector{BlockInfo}  — the blocks of segment `i`."""
blocks(s::Snapshot, i::Integer) = BlockInfo[block(s, i, j) for j in 1:Int(segment(s, i).block_count)]

"""    close(s::Snapshot), destroy!(s::Snapshot)  (`dao_snapshot_destroy`)"""
function destroy!(s::Snapshot)
    s.handle == C_NULL && return nothing
    check(dao_snapshot_destroy(s.handle))
    s.handle = C_NULL
    return nothing
end
Base.close(s::Snapshot) = destroy!(s)

function _finalize_snapshot(s::Snapshot)
    (s.handle == C_NULL || _EXITING[]) && return nothing
    dao_snapshot_destroy(s.handle)
    s.handle = C_NULL
    return nothing
end

Base.show(io::IO, s::Snapshot) =
    s.handle == C_NULL ? print(io, "Dao.Snapshot(destroyed)") :
    print(io, "Dao.Snapshot(", segment_count(s), " segment(s))")
