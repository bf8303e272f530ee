# Recycle pools, their buffers, and collections of pools (recycle.h).
#
# Shapes are Julia's: the `dims` given to a pool are passed to C in the same
# order and read column-major (first index fastest), as the Fortran binding
# does. A C program sharing such a pool and indexing row-major must reverse
# them (see `cshape`).
#
# Each `Buffer` object holds one C reference. `acquire` and `take!` give a new
# one; `submit!` moves it into the pool's queue (the object is then spent);
# `retain` makes a second object with a reference of its own; `release` (or
# the GC) drops it. A pool cannot be destroyed while buffers are out.
#
# Blocking. `acquire` and `take!` wait in C (GC-safe) up to `timeout` seconds
# (negative: for ever). Meanwhile this Julia thread runs nothing else: the
# buffer they wait for must come from another thread (start Julia with
# `-t N`, use `Threads.@spawn`), or use `timeout = 0` and poll.

function _recycle_config(name, spin, config)
    parts = String[]
    name === nothing || push!(parts, "name=" * String(name))
    spin === nothing || push!(parts, "spin=" * string(Int(spin)))
    (config === nothing || isempty(config)) || push!(parts, String(config))
    return isempty(parts) ? nothing : join(parts, ",")
end

function _shape(dims::Dims)
    all(d -> d >= 0, dims) || throw(ArgumentError("negative dimension in $dims"))
    return Csize_t[d for d in dims]
end

"""
    RecyclePool{T}(place, dims...; max_buffers, preallocate = 0, name = nothing,
                   spin = nothing, config = nothing)

A pool of up to `max_buffers` buffers, each an array of `T` with dimensions
`dims` (column-major), on a place (`dao_recycle_create`). Buffers are created
when needed (`preallocate` of them at once) and then recycled. `name` labels
the pool in messages; `spin` is how long blocking calls spin before they
sleep; `config` adds raw `key=value` pairs.
"""
function RecyclePool{T}(place::Place, dims::Dims{N}; max_buffers::Integer,
                        preallocate::Integer = 0,
                        name::Union{Nothing,AbstractString} = nothing,
                        spin::Union{Nothing,Integer} = nothing,
                        config::Union{Nothing,AbstractString} = nothing) where {T,N}
    _check_eltype(T)
    shape = _shape(dims)
    cfg = _recycle_config(name, spin, config)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_recycle_create(place, sizeof(T), N, shape, max_buffers, preallocate,
                             _cstr_or_null(cfg), out))
    p = RecyclePool{T,N}(out[], place, dims, name === nothing ? "" : String(name), nothing,
                         ReentrantLock(), Threads.Atomic{Int}(0))
    finalizer(_finalize_recycle, p)
    return p
end
RecyclePool{T}(place::Place, dims::Integer...; kwargs...) where {T} =
    RecyclePool{T}(place, map(Int, dims); kwargs...)

function _handle(p::RecyclePool)
    p.handle == C_NULL && throw(ArgumentError("this Dao.RecyclePool was destroyed"))
    return p.handle
end

function _handle(b::Buffer)
    b.handle == C_NULL &&
        throw(ArgumentError("this Dao.Buffer holds no reference any more (submitted or released)"))
    return b.handle
end

function _new_buffer(p::RecyclePool{T,N}, h::Ptr{Cvoid}) where {T,N}
    Threads.atomic_add!(p.deps, 1)
    b = Buffer{T,N}(h, p)
    finalizer(_finalize_buffer, b)
    return b
end

"""
    acquire(pool; timeout = -1) -> Buffer

A free buffer to fill (`dao_recycle_acquire`): from the free list, else a
new one while fewer than `max_buffers` exist, else wait up to `timeout`
seconds (0: try once; negative: for ever). Throws `DaoError` with
`DAO_ERR_TIMEOUT`, `DAO_ERR_CLOSED` or `DAO_ERR_OUT_OF_MEMORY`.
"""
function acquire(p::RecyclePool; timeout::Real = -1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_recycle_acquire(_handle(p), timeout, out))
    return _new_buffer(p, out[])
end

"""
    submit!(pool, buffer)
    submit!(buffer)

Queue a filled buffer for the readers (`dao_recycle_submit`). The buffer
object's reference moves into the queue: the object cannot be used
afterwards (`retain` first to keep using the buffer).
"""
function submit!(p::RecyclePool, b::Buffer)
    bh = _handle(b)
    o = b.pool
    lock(o.lock) do
        check(dao_recycle_submit(_handle(p), bh))
        b.handle = C_NULL
        Threads.atomic_sub!(o.deps, 1)
    end
    return nothing
end
submit!(b::Buffer) = submit!(b.pool, b)

"""
    take!(pool; timeout = -1) -> Buffer

The next submitted buffer, first in first out (`dao_recycle_take`). Throws
`DaoError` with `DAO_ERR_TIMEOUT`, or `DAO_ERR_CLOSED` once the pool is closed
and its queue is empty.
"""
function Base.take!(p::RecyclePool; timeout::Real = -1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_recycle_take(_handle(p), timeout, out))
    return _new_buffer(p, out[])
end

"""
    retain(buffer) -> Buffer

Another reference to the same buffer, as a new object (`dao_buffer_retain`),
for another holder. Each object is released on its own.
"""
function retain(b::Buffer)
    h = _handle(b)
    check(dao_buffer_retain(h))
    return _new_buffer(b.pool, h)
end

"""
    release(buffer)

Drop the object's reference (`dao_buffer_release`); the last one returns the
buffer to the free list. Releasing twice does nothing.
"""
function release(b::Buffer)
    b.handle == C_NULL && return nothing
    o = b.pool
    lock(o.lock) do
        if b.handle != C_NULL
            check(dao_buffer_release(b.handle))
            b.handle = C_NULL
            Threads.atomic_sub!(o.deps, 1)
        end
    end
    return nothing
end

function _finalize_buffer(b::Buffer)
    (b.handle == C_NULL || _EXITING[]) && return nothing
    p = b.pool
    _locked_or_retry(_finalize_buffer, b, p.lock) do
        if b.handle != C_NULL && p.handle != C_NULL
            dao_buffer_release(b.handle)
            b.handle = C_NULL
            Threads.atomic_sub!(p.deps, 1)
        end
    end
    return nothing
end

"""    data_pointer(buffer) -> Ptr{Cvoid}  — the buffer's memory (`dao_buffer_data`)."""
function data_pointer(b::Buffer)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_buffer_data(_handle(b), out))
    return out[]
end

"""
    shape(buffer) -> Tuple

The extents libdao stores for the buffer (`dao_buffer_shape`), in the order
the pool was created with: Julia's order for pools made here.
"""
function shape(b::Buffer)
    ndim = Ref{Cint}(0)
    extents = Ref{Ptr{Csize_t}}(C_NULL)
    check(dao_buffer_shape(_handle(b), ndim, extents))
    return ntuple(i -> Int(unsafe_load(extents[], i)), Int(ndim[]))
end

"""
    cshape(pool_or_buffer) -> Tuple

The extents in row-major (C) order: `reverse(dims)`. A C program indexing a
pool made here as `a[i0][i1]...` uses these.
"""
cshape(p::RecyclePool) = reverse(p.dims)
cshape(b::Buffer) = reverse(shape(b))

"""
    buffer_size(buffer) -> (element_size = Int, bytes = Int)

Element size and total bytes of a buffer (`dao_buffer_size`).
"""
function buffer_size(b::Buffer)
    element_size = Ref{Csize_t}(0)
    bytes = Ref{Csize_t}(0)
    check(dao_buffer_size(_handle(b), element_size, bytes))
    return (element_size = Int(element_size[]), bytes = Int(bytes[]))
end
Base.sizeof(b::Buffer) = buffer_size(b).bytes

"""    place(buffer) -> Place  (`dao_buffer_place`)"""
function place(b::Buffer)
    out = Ref{Place}(Place(DAO_PLACE_CPU, 0))
    check(dao_buffer_place(_handle(b), out))
    return out[]
end

"""
    sequence(buffer) -> UInt64

The buffer's position in its pool's order of submission (0 for the first
submit), or `typemax(UInt64)` when it was not submitted since it was
acquired (`dao_buffer_sequence`).
"""
function sequence(b::Buffer)
    out = Ref{UInt64}(0)
    check(dao_buffer_sequence(_handle(b), out))
    return out[]
end

"""
    array(buffer) -> HostArray{T,N}

The buffer's memory as a column-major array with the pool's dims (host-visible
places only). The array keeps the buffer object alive; after `release` or
`submit!` of that object it must not be used.
"""
function array(b::Buffer{T,N}) where {T,N}
    p = b.pool
    ptr = data_pointer(b)
    _check_wrap(T, p.place, ptr, sizeof(T) * prod(p.dims), p.dims)
    return HostArray{T,N,Buffer{T,N}}(b, Ptr{T}(ptr), p.dims)
end

"""
    unsafe_array(buffer) -> Array{T,N}

A plain `Array` over the buffer's memory; valid only while the buffer object
holds its reference (keep it referenced).
"""
function unsafe_array(b::Buffer{T,N}) where {T,N}
    p = b.pool
    ptr = data_pointer(b)
    _check_wrap(T, p.place, ptr, sizeof(T) * prod(p.dims), p.dims)
    return unsafe_wrap(Array, Ptr{T}(ptr), p.dims; own = false)
end

"""
    close(pool)

Close a pool (`dao_recycle_close`): waiters wake with `DAO_ERR_CLOSED`, new
acquires are refused; submits still work and queued buffers can still be
taken. Closing twice is harmless. (To free the pool, see [`destroy!`](@ref).)
"""
function Base.close(p::RecyclePool)
    check(dao_recycle_close(_handle(p)))
    return nothing
end

"""    stats(pool) -> RecycleStats  (`dao_recycle_get_stats`)"""
function stats(p::RecyclePool)
    r = _sized(RecycleStats)
    check(dao_recycle_get_stats(_handle(p), r))
    return r[]
end

"""
    destroy!(pool)

Destroy a pool and free its buffers' memory (`dao_recycle_destroy`). Throws
`DaoError(DAO_ERR_BUSY)` while buffers are out (held or queued), and
`DaoError(DAO_ERR_INVALID_ARGUMENT)` for a pool of a collection.
"""
function destroy!(p::RecyclePool)
    p.handle == C_NULL && return nothing
    lock(p.lock) do
        if p.handle != C_NULL
            check(dao_recycle_destroy(p.handle))
            p.handle = C_NULL
        end
    end
    return nothing
end

# Close a pool nobody else can reach and drop the references its queue holds.
function _drain(h::Ptr{Cvoid})
    dao_recycle_close(h)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    while dao_recycle_take(h, 0.0, out) == DAO_OK
        dao_buffer_release(out[])
    end
    return nothing
end

function _finalize_recycle(p::RecyclePool)
    (p.handle == C_NULL || p.collection !== nothing || _EXITING[]) && return nothing
    p.deps[] > 0 && return _retry_finalizer(_finalize_recycle, p)
    _locked_or_retry(_finalize_recycle, p, p.lock) do
        if p.handle != C_NULL && p.deps[] == 0
            _drain(p.handle)
            dao_recycle_destroy(p.handle) == DAO_OK && (p.handle = C_NULL)
        end
    end
    return nothing
end

function Base.show(io::IO, p::RecyclePool{T,N}) where {T,N}
    print(io, "Dao.RecyclePool{", T, ",", N, "}(")
    isempty(p.name) || print(io, repr(p.name), ", ")
    print(io, join(p.dims, "×"), " on ", p.place)
    p.handle == C_NULL && print(io, ", destroyed")
    print(io, ")")
end

function Base.show(io::IO, b::Buffer{T,N}) where {T,N}
    print(io, "Dao.Buffer{", T, ",", N, "}(")
    b.handle == C_NULL ? print(io, "no reference") : print(io, join(b.pool.dims, "×"), " on ", b.pool.place)
    print(io, ")")
end

# --- collections -------------------------------------------------------------------------

"""
    Collection()

An empty collection of named pools (`dao_collection_create`). The collection
owns its pools: destroy the collection, not the pools.
"""
function Collection()
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_collection_create(out))
    c = Collection(out[], ReentrantLock(), Threads.Atomic{Int}(0), Dict{String,Any}())
    finalizer(_finalize_collection, c)
    return c
end

function _handle(c::Collection)
    c.handle == C_NULL && throw(ArgumentError("this Dao.Collection was destroyed"))
    return c.handle
end

"""
    add!(collection, name, T, place, dims...; max_buffers, preallocate = 0,
         spin = nothing, config = nothing) -> RecyclePool{T}

Create a pool under a new name in a collection (`dao_collection_add`); as
[`RecyclePool`](@ref) otherwise.
"""
function add!(c::Collection, name::AbstractString, ::Type{T}, place::Place, dims::Dims{N};
              max_buffers::Integer, preallocate::Integer = 0,
              spin::Union{Nothing,Integer} = nothing,
              config::Union{Nothing,AbstractString} = nothing) where {T,N}
    _check_eltype(T)
    shape = _shape(dims)
    key = _cstr(name)
    cfg = _recycle_config(nothing, spin, config)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_collection_add(_handle(c), key, place, sizeof(T), N, shape, max_buffers,
                             preallocate, _cstr_or_null(cfg), out))
    p = RecyclePool{T,N}(out[], place, dims, key, c, c.lock, c.deps)
    lock(() -> (c.pools[key] = p), c.lock)
    return p
end
add!(c::Collection, name::AbstractString, ::Type{T}, place::Place, dims::Integer...;
     kwargs...) where {T} = add!(c, name, T, place, map(Int, dims); kwargs...)

"""
    collection[name] -> RecyclePool

Look a pool up by name (`dao_collection_find`); an unknown name throws
`DaoError(DAO_ERR_NOT_FOUND)` whose message lists the names there are.
"""
function Base.getindex(c::Collection, name::AbstractString)
    key = _cstr(name)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_collection_find(_handle(c), key, out))
    p = lock(() -> get(c.pools, key, nothing), c.lock)
    (p === nothing || p.handle != out[]) &&
        error("Dao.jl: the pool \"$key\" of this collection was not made by Dao.add!")
    return p
end

"""    close(collection)  — close every pool of a collection (`dao_collection_close`)."""
function Base.close(c::Collection)
    check(dao_collection_close(_handle(c)))
    return nothing
end

"""
    destroy!(collection)

Destroy a collection and all its pools (`dao_collection_destroy`); throws
`DaoError(DAO_ERR_BUSY)` while any pool has buffers out.
"""
function destroy!(c::Collection)
    c.handle == C_NULL && return nothing
    lock(c.lock) do
        if c.handle != C_NULL
            check(dao_collection_destroy(c.handle))
            c.handle = C_NULL
            for p in values(c.pools)
                p.handle = C_NULL
            end
        end
    end
    return nothing
end

function _finalize_collection(c::Collection)
    (c.handle == C_NULL || _EXITING[]) && return nothing
    c.deps[] > 0 && return _retry_finalizer(_finalize_collection, c)
    _locked_or_retry(_finalize_collection, c, c.lock) do
        if c.handle != C_NULL && c.deps[] == 0
            for p in values(c.pools)
                p.handle == C_NULL || _drain(p.handle)
            end
            if dao_collection_destroy(c.handle) == DAO_OK
                c.handle = C_NULL
                for p in values(c.pools)
                    p.handle = C_NULL
                end
            end
        end
    end
    return nothing
end

Base.show(io::IO, c::Collection) =
    print(io, "Dao.Collection(", join(sort!(collect(keys(c.pools))), ", "),
          c.handle == C_NULL ? "; destroyed)" : ")")
