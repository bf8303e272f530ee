# Partitioned ("whole") memory (whole.h): communicators and whole memory
# objects.
#
# A communicator made by `local_comms` has one `Comm` per rank, each meant to
# be driven by a thread of its own: the collective calls (`WholeMemory(...)`,
# `destroy!` of a `WholeMemory`, `barrier`, `store`, `load!`) block in C until
# every rank has made the same call, so each rank's calls must come from a
# different thread (`Threads.@spawn` with `julia -t N`, N >= ranks). Those
# calls are GC-safe. Gather, scatter and the queries involve only the calling
# rank and may be made from any thread.
#
# Indices: entry indices are 1-based here (Julia's), converted to libdao's
# 0-based ones; ranks are 0-based (as in C and MPI). `WholeRange` is the C
# struct as it is (0-based `first_entry`); `entries` gives the 1-based range.
#
# Finalizers. Destroying a whole memory object is collective, and a finalizer
# must never wait for other ranks: a `WholeMemory` finalizer destroys the
# object only on a 1-rank communicator. On more ranks, call `destroy!` on
# every rank (one thread each); one that is left to the GC is leaked, and so
# is its `Comm` (libdao refuses to destroy a handle whose objects exist). A
# `Comm` of `local_comms` is destroyed by its finalizer (not collective in
# process) once its whole memory objects are gone.

"""
    Comm

One rank's handle of a communicator (C `dao_comm`). Make the handles of an
in-process communicator with [`local_comms`](@ref). Query with
[`Dao.rank`](@ref), [`nranks`](@ref), [`rank_place`](@ref), `Dao.info`,
[`Dao.transport`](@ref); synchronize with [`barrier`](@ref). Destroyed by
`destroy!`/`close` (refused with `DAO_ERR_BUSY` while whole memory objects of
the handle exist) or by the GC.
"""
mutable struct Comm
    handle::Ptr{Cvoid}
    gc_destroys::Bool               # false: destroying may be collective (transports); never in a finalizer
    lock::ReentrantLock
    deps::Threads.Atomic{Int}       # live WholeMemory objects of this handle
end

"""
    WholeMemory

One rank's handle of a whole memory object (C `dao_whole`): `total_size`
bytes in entries of `entry_size` bytes, spread over the ranks of a
[`Comm`](@ref). Create with `WholeMemory(comm, total_size, entry_size; type,
location)` (collective). See [`gather`](@ref), [`scatter!`](@ref),
[`local_part`](@ref), [`partition`](@ref), [`entry_rank`](@ref),
[`store`](@ref), [`load!`](@ref).
"""
mutable struct WholeMemory
    handle::Ptr{Cvoid}
    comm::Comm
    type::Cint
    location::Cint
    entry_size::Int
    entry_count::Int
    rank::Int
    nranks::Int
    place::Place                    # where this rank's part lives
    lock::ReentrantLock
end

function _new_comm(handle::Ptr{Cvoid}, gc_destroys::Bool)
    c = Comm(handle, gc_destroys, ReentrantLock(), Threads.Atomic{Int}(0))
    finalizer(_finalize_comm, c)
    return c
end

"""
    local_comms(places) -> Vector{Comm}

Create a communicator over places of this process (`dao_comm_create_local`):
rank `i - 1` has `places[i]`; returns one [`Comm`](@ref) per rank. A place
may appear more than once. Drive each rank's collective calls from a thread
of its own. An empty vector, more than `DAO_COMM_LOCAL_MAX_RANKS` places or
a place of an unknown kind throw `DaoError(DAO_ERR_INVALID_ARGUMENT)`; a
place that does not exist `DaoError(DAO_ERR_NO_DEVICE)`.
"""
function local_comms(places::AbstractVector{Place})
    ps = collect(Place, places)
    n = length(ps)
    n <= typemax(Cint) || throw(ArgumentError("too many places: $n"))
    out = fill(Ptr{Cvoid}(C_NULL), max(n, 1))
    check(dao_comm_create_local(Cint(n), ps, out))
    return [_new_comm(out[i], true) for i in 1:n]
end

"""
    Dao.comm_from_transport(transport::CommTransport, place) -> Comm

EXPERIMENTAL: this rank's handle over a communication library's transport
(`dao_comm_create_transport`, collective through the transport). Unless
`transport.struct_size` is too small, libdao owns the transport from this
call on. The handle's destruction may be collective (as over MPI), so the GC
never destroys it: call `destroy!` on every rank.
"""
function comm_from_transport(transport::CommTransport, place::Place)
    t = Ref(transport)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_comm_create_transport(t, place, out))
    return _new_comm(out[], false)
end

"""
    Dao.transport_error(status, message) -> Cint

EXPERIMENTAL: record `message` for `dao_last_error()` on this thread and
return `status` (`dao_comm_transport_error`), for a transport library whose
entry point fails before it can hand libdao a transport.
"""
function transport_error(status::Integer, message::AbstractString)
    return dao_comm_transport_error(_cint(status), _cstr(message))
end

function _handle(c::Comm)
    c.handle == C_NULL && throw(ArgumentError("this Dao.Comm was destroyed"))
    return c.handle
end

"""    Dao.rank(c::Comm) -> Int  — this rank, 0 .. nranks(c) - 1 (`dao_comm_rank`)."""
function rank(c::Comm)
    r = Ref{Cint}(0)
    check(dao_comm_rank(_handle(c), r))
    return Int(r[])
end

"""    nranks(c::Comm) -> Int  — the number of ranks (`dao_comm_size`)."""
function nranks(c::Comm)
    r = Ref{Cint}(0)
    check(dao_comm_size(_handle(c), r))
    return Int(r[])
end

"""    rank_place(c::Comm, rank) -> Place  — the place of any rank (`dao_comm_rank_place`)."""
function rank_place(c::Comm, r::Integer)
    p = Ref(Place(Cint(0), Cint(0)))
    check(dao_comm_rank_place(_handle(c), _cint(r), p))
    return p[]
end

"""    Dao.info(c::Comm) -> CommInfo  (`dao_comm_get_info`)"""
function info(c::Comm)
    r = _sized(CommInfo)
    check(dao_comm_get_info(_handle(c), r))
    return r[]
end

"""    Dao.transport(c::Comm) -> String  — `"in-process"` or `"mpi"`."""
function transport(c::Comm)
    p = info(c).transport
    return p == C_NULL ? "" : unsafe_string(p)
end

"""
    barrier(c::Comm)

Collective: wait until every rank has called it; what each rank wrote into
whole memory before it is visible to every rank after it
(`dao_comm_barrier`).
"""
function barrier(c::Comm)
    check(dao_comm_barrier(_handle(c)))
    return nothing
end

"""
    destroy!(c::Comm), close(c::Comm)

Destroy this rank's handle (`dao_comm_destroy`). Throws
`DaoError(DAO_ERR_BUSY)` while whole memory objects of the handle exist.
"""
function destroy!(c::Comm)
    lock(c.lock) do
        if c.handle != C_NULL
            check(dao_comm_destroy(c.handle))
            c.handle = C_NULL
        end
    end
    return nothing
end
Base.close(c::Comm) = destroy!(c)

function _finalize_comm(c::Comm)
    (c.handle == C_NULL || !c.gc_destroys || _EXITING[]) && return nothing
    c.deps[] > 0 && return _retry_finalizer(_finalize_comm, c)
    _locked_or_retry(_finalize_comm, c, c.lock) do
        if c.handle != C_NULL && c.deps[] == 0
            # DAO_ERR_BUSY: objects made through the raw API still exist; leak.
            dao_comm_destroy(c.handle) == DAO_OK && (c.handle = C_NULL)
        end
    end
    return nothing
end

function _cint(x::Integer)
    typemin(Cint) <= x <= typemax(Cint) || throw(ArgumentError("$x does not fit a C int"))
    return Cint(x)
end

const _WHOLE_TYPES = Dict(:continuous => DAO_WHOLE_CONTINUOUS, :chunked => DAO_WHOLE_CHUNKED,
                          :distributed => DAO_WHOLE_DISTRIBUTED)
const _WHOLE_LOCATIONS = Dict(:device => DAO_WHOLE_DEVICE, :host => DAO_WHOLE_HOST)
_whole_type(t::Integer) = _cint(t)
_whole_type(t::Symbol) = get(() -> throw(ArgumentError("unknown whole memory type :$t")),
                             _WHOLE_TYPES, t)
_whole_location(l::Integer) = _cint(l)
_whole_location(l::Symbol) = get(() -> throw(ArgumentError("unknown whole memory location :$l")),
                                 _WHOLE_LOCATIONS, l)

"""    Dao.whole_type_name(type) -> String  — `"continuous"`, `"chunked"`, `"distributed"` or `"unknown"`."""
whole_type_name(t::Union{Integer,Symbol}) = unsafe_string(dao_whole_type_name(_whole_type(t)))

"""    Dao.whole_location_name(location) -> String  — `"device"`, `"host"` or `"unknown"`."""
whole_location_name(l::Union{Integer,Symbol}) =
    unsafe_string(dao_whole_location_name(_whole_location(l)))

"""
    supported(c::Comm, type, location) -> Bool

Whether the communicator can build whole memory of a type (`:continuous`,
`:chunked`, `:distributed` or a `DAO_WHOLE_*` constant) on a location
(`:device`, `:host`) (`dao_whole_supported`). Unknown values throw
`DaoError(DAO_ERR_INVALID_ARGUMENT)`.
"""
function supported(c::Comm, type::Union{Integer,Symbol}, location::Union{Integer,Symbol})
    st = dao_whole_supported(_handle(c), _whole_type(type), _whole_location(location))
    st == DAO_ERR_UNSUPPORTED && return false
    check(st)
    return true
end

"""
    WholeMemory(comm, total_size, entry_size; type = :chunked, location = :device)

Collective (every rank, one thread each, the same arguments): create a whole
memory object of `total_size` bytes in entries of `entry_size` bytes
(`dao_whole_create`). `type` is `:continuous`, `:chunked` or `:distributed`
(or a `DAO_WHOLE_*` constant), `location` `:device` (each rank's place) or
`:host`. The contents start undefined. Bad arguments on any rank throw
`DaoError(DAO_ERR_INVALID_ARGUMENT)` on every rank; a type the communicator
cannot build there `DaoError(DAO_ERR_UNSUPPORTED)`.
"""
function WholeMemory(c::Comm, total_size::Integer, entry_size::Integer;
                     type::Union{Integer,Symbol} = :chunked,
                     location::Union{Integer,Symbol} = :device)
    (total_size >= 0 && entry_size >= 0) ||
        throw(ArgumentError("sizes must be >= 0, got $total_size and $entry_size"))
    desc = Ref(WholeDesc(Csize_t(sizeof(WholeDesc)), _whole_type(type), _whole_location(location),
                         Csize_t(total_size), Csize_t(entry_size)))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    lock(c.lock) do
        check(dao_whole_create(_handle(c), desc, out))
        Threads.atomic_add!(c.deps, 1)
    end
    i = _sized(WholeInfo)
    st = dao_whole_get_info(out[], i)
    st == DAO_OK || error("dao_whole_get_info failed on a new whole memory object")
    inf = i[]
    w = WholeMemory(out[], c, inf.type, inf.location, Int(inf.entry_size), Int(inf.entry_count),
                    Int(inf.rank), Int(inf.size), inf.place, ReentrantLock())
    finalizer(_finalize_whole, w)
    return w
end

function _handle(w::WholeMemory)
    w.handle == C_NULL && throw(ArgumentError("this Dao.WholeMemory was destroyed"))
    return w.handle
end

"""
    destroy!(w::WholeMemory), close(w::WholeMemory)

Collective: every rank destroys its handle of the object
(`dao_whole_destroy`); returns once no rank uses it.
"""
function destroy!(w::WholeMemory)
    lock(w.lock) do
        if w.handle != C_NULL
            check(dao_whole_destroy(w.handle))
            w.handle = C_NULL
            Threads.atomic_sub!(w.comm.deps, 1)
        end
    end
    return nothing
end
Base.close(w::WholeMemory) = destroy!(w)

# Only a 1-rank object is destroyed here: on more ranks, destroying waits for
# the other ranks, which a finalizer must never do (see the file comment).
function _finalize_whole(w::WholeMemory)
    (w.handle == C_NULL || w.nranks != 1 || _EXITING[]) && return nothing
    _locked_or_retry(_finalize_whole, w, w.lock) do
        if w.handle != C_NULL && dao_whole_destroy(w.handle) == DAO_OK
            w.handle = C_NULL
            Threads.atomic_sub!(w.comm.deps, 1)
        end
    end
    return nothing
end

"""    Dao.info(w::WholeMemory) -> WholeInfo  (`dao_whole_get_info`)"""
function info(w::WholeMemory)
    r = _sized(WholeInfo)
    check(dao_whole_get_info(_handle(w), r))
    return r[]
end

"""    Dao.rank(w::WholeMemory), nranks(w::WholeMemory)  — as of its communicator."""
rank(w::WholeMemory) = w.rank
nranks(w::WholeMemory) = w.nranks
"""    entry_count(w::WholeMemory) -> Int"""
entry_count(w::WholeMemory) = w.entry_count
"""    entry_size(w::WholeMemory) -> Int  — bytes of one entry."""
entry_size(w::WholeMemory) = w.entry_size

"""
    partition(w::WholeMemory, rank = Dao.rank(w)) -> WholeRange

The entries and bytes a rank owns (`dao_whole_get_partition`), as C gives
them (`first_entry` 0-based). `entries(w, rank)` gives the 1-based range.
A rank out of range throws `DaoError(DAO_ERR_INVALID_ARGUMENT)`.
"""
function partition(w::WholeMemory, r::Integer = w.rank)
    out = _sized(WholeRange)
    check(dao_whole_get_partition(_handle(w), _cint(r), out))
    return out[]
end

"""    entries(w::WholeMemory, rank = Dao.rank(w)) -> UnitRange{Int}  — 1-based entry indices a rank owns."""
function entries(w::WholeMemory, r::Integer = w.rank)
    p = partition(w, r)
    return Int(p.first_entry) + 1 : Int(p.first_entry + p.entry_count)
end

"""
    entry_rank(w::WholeMemory, i) -> Int

The rank that owns entry `i` (1-based) (`dao_whole_entry_rank`). An index out
of range throws `DaoError(DAO_ERR_INVALID_ARGUMENT)`.
"""
function entry_rank(w::WholeMemory, i::Integer)
    r = Ref{Cint}(0)
    check(dao_whole_entry_rank(_handle(w), Int64(i) - 1, r))
    return Int(r[])
end

_host_visible(w::WholeMemory) = w.location == DAO_WHOLE_HOST || host_visible(w.place)

function _wrap(::Type{T}, w::WholeMemory, ptr::Ptr{Cvoid}, bytes::Integer) where {T}
    _check_eltype(T)
    _host_visible(w) ||
        throw(ArgumentError("the memory of this whole memory object on $(w.place) is not host-visible"))
    bytes % sizeof(T) == 0 ||
        throw(ArgumentError("$bytes bytes are not a whole number of $T ($(sizeof(T)) bytes)"))
    n = Int(bytes ÷ sizeof(T))
    (ptr == C_NULL && n > 0) && throw(ArgumentError("no memory"))
    return HostArray{T,1,WholeMemory}(w, Ptr{T}(ptr), (n,))
end

"""
    local_part(T, w::WholeMemory) -> HostArray{T,1}

This rank's own part (`dao_whole_get_local`) as a vector of `T` over its
memory (host-visible: CPU, SIM, CUDA pinned or managed places, or
`location = :host`); empty when the rank owns no entries. The array keeps
`w` alive; it dangles once `w` is destroyed. Others see what is written
after the next collective call ([`barrier`](@ref)).
"""
function local_part(::Type{T}, w::WholeMemory) where {T}
    ptr = Ref{Ptr{Cvoid}}(C_NULL)
    r = _sized(WholeRange)
    check(dao_whole_get_local(_handle(w), ptr, r))
    return _wrap(T, w, r[].entry_count == 0 ? Ptr{Cvoid}(C_NULL) : ptr[], r[].byte_size)
end
local_part(w::WholeMemory) = local_part(UInt8, w)

"""
    rank_part(T, w::WholeMemory, rank) -> HostArray{T,1}

Any rank's part of a mapped (continuous or chunked) object
(`dao_whole_get_rank_pointer`), as [`local_part`](@ref) gives this rank's.
On a distributed object, another rank's part throws
`DaoError(DAO_ERR_UNSUPPORTED)`.
"""
function rank_part(::Type{T}, w::WholeMemory, r::Integer) where {T}
    ptr = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_whole_get_rank_pointer(_handle(w), _cint(r), ptr))
    p = partition(w, r)
    return _wrap(T, w, p.entry_count == 0 ? Ptr{Cvoid}(C_NULL) : ptr[], p.byte_size)
end

"""
    whole_array(T, w::WholeMemory) -> HostArray{T,1}

All of a continuous object as one vector (`dao_whole_get_base`), whichever
rank owns each entry. Chunked and distributed objects throw
`DaoError(DAO_ERR_UNSUPPORTED)`.
"""
function whole_array(::Type{T}, w::WholeMemory) where {T}
    base = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_whole_get_base(_handle(w), base))
    return _wrap(T, w, base[], w.entry_size * w.entry_count)
end

function _indices(idx::AbstractVector{<:Integer})
    out = Vector{Int64}(undef, length(idx))
    for (k, i) in enumerate(idx)
        out[k] = Int64(i) - 1
    end
    return out
end

function _check_buffer(w::WholeMemory, buf::Vector{T}, n::Int) where {T}
    _check_eltype(T)
    sizeof(buf) == n * w.entry_size ||
        throw(ArgumentError("$n entries of $(w.entry_size) bytes need $(n * w.entry_size) " *
                            "bytes; the vector has $(sizeof(buf))"))
    return nothing
end

"""
    gather!(dst::Vector{T}, w::WholeMemory, indices) -> dst

Copy entries `indices` (1-based, any order, repeats allowed) into `dst`,
entry `indices[k]` to bytes `(k - 1) * entry_size ...` of `dst`
(`dao_whole_gather`; one-sided). `dst` must hold exactly
`length(indices) * entry_size` bytes. An index out of range throws
`DaoError(DAO_ERR_INVALID_ARGUMENT)` (libdao's message gives the 0-based
value) and copies nothing.
"""
function gather!(dst::Vector{T}, w::WholeMemory, indices::AbstractVector{<:Integer}) where {T}
    idx = _indices(indices)
    _check_buffer(w, dst, length(idx))
    check(dao_whole_gather(_handle(w), idx, Csize_t(length(idx)), dst))
    return dst
end

"""
    gather(T, w::WholeMemory, indices) -> Vector{T}

As [`gather!`](@ref) into a new vector; `entry_size` must be a multiple of
`sizeof(T)` (each entry is `entry_size ÷ sizeof(T)` elements).
"""
function gather(::Type{T}, w::WholeMemory, indices::AbstractVector{<:Integer}) where {T}
    _check_eltype(T)
    w.entry_size % sizeof(T) == 0 ||
        throw(ArgumentError("entries of $(w.entry_size) bytes are not a whole number of $T"))
    dst = Vector{T}(undef, length(indices) * (w.entry_size ÷ sizeof(T)))
    return gather!(dst, w, indices)
end

"""
    scatter!(w::WholeMemory, indices, src::Vector) -> w

Copy `src` into entries `indices` (1-based): bytes `(k - 1) * entry_size ...`
of `src` to entry `indices[k]` (`dao_whole_scatter`; one-sided). Other ranks
see the new values after the next collective call ([`barrier`](@ref)).
"""
function scatter!(w::WholeMemory, indices::AbstractVector{<:Integer}, src::Vector{T}) where {T}
    idx = _indices(indices)
    _check_buffer(w, src, length(idx))
    check(dao_whole_scatter(_handle(w), src, idx, Csize_t(length(idx))))
    return w
end

# The collective calls take part even when this rank's buffer is wrong (as
# a NULL buffer, which fails every rank alike), so that no rank is left
# waiting; then this rank throws its own reason.
function _collective_buffer_error(w::WholeMemory, buf::Vector, n::Int)
    try
        _check_buffer(w, buf, n)
        return nothing
    catch e
        e isa ArgumentError || rethrow()
        return e
    end
end

"""
    gather_collective!(dst::Vector{T}, w::WholeMemory, indices) -> dst

[`gather!`](@ref) called by every rank together, each with its own indices
(possibly none): on distributed memory the ranks exchange with two-sided
collectives (`dao_whole_gather_collective`: MPI_Alltoall of counts,
MPI_Alltoallv of indices and entries), the fast path when all ranks gather
at once. Collective: any rank's bad argument fails every rank with a
`DaoError` (`DAO_ERR_INVALID_ARGUMENT`), and nothing is copied.
"""
function gather_collective!(dst::Vector{T}, w::WholeMemory,
                            indices::AbstractVector{<:Integer}) where {T}
    idx = _indices(indices)
    bad = _collective_buffer_error(w, dst, length(idx))
    if bad !== nothing
        dao_whole_gather_collective(_handle(w), idx, Csize_t(length(idx)), C_NULL)
        throw(bad)
    end
    check(dao_whole_gather_collective(_handle(w), idx, Csize_t(length(idx)), dst))
    return dst
end

"""
    gather_collective(T, w::WholeMemory, indices) -> Vector{T}

As [`gather_collective!`](@ref) into a new vector.
"""
function gather_collective(::Type{T}, w::WholeMemory, indices::AbstractVector{<:Integer}) where {T}
    _check_eltype(T)
    w.entry_size % sizeof(T) == 0 ||
        throw(ArgumentError("entries of $(w.entry_size) bytes are not a whole number of $T"))
    dst = Vector{T}(undef, length(indices) * (w.entry_size ÷ sizeof(T)))
    return gather_collective!(dst, w, indices)
end

"""
    scatter_collective!(w::WholeMemory, indices, src::Vector) -> w

[`scatter!`](@ref) called by every rank together
(`dao_whole_scatter_collective`); see [`gather_collective!`](@ref). Every
rank sees the new values after the next collective call.
"""
function scatter_collective!(w::WholeMemory, indices::AbstractVector{<:Integer},
                             src::Vector{T}) where {T}
    idx = _indices(indices)
    bad = _collective_buffer_error(w, src, length(idx))
    if bad !== nothing
        dao_whole_scatter_collective(_handle(w), C_NULL, idx, Csize_t(length(idx)))
        throw(bad)
    end
    check(dao_whole_scatter_collective(_handle(w), src, idx, Csize_t(length(idx))))
    return w
end

"""
    store(w::WholeMemory, path)

Collective: write the whole object to a file, entries in index order
(`dao_whole_store`).
"""
function store(w::WholeMemory, path::AbstractString)
    check(dao_whole_store(_handle(w), _cstr(path)))
    return nothing
end

"""
    load!(w::WholeMemory, path) -> w

Collective: read the whole object from a file of exactly its total size
(`dao_whole_load`). A missing file throws `DaoError(DAO_ERR_NOT_FOUND)`; one
of another size `DaoError(DAO_ERR_INVALID_ARGUMENT)`.
"""
function load!(w::WholeMemory, path::AbstractString)
    check(dao_whole_load(_handle(w), _cstr(path)))
    return w
end
