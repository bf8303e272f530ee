# The handle objects of the high-level layer. Each one owns (or borrows) one C
# object; the ones that own it have a finalizer that destroys it.
#
# Owners and dependents. A block of memory needs its allocator (and the
# stream it was allocated on), a recycle buffer its pool, a tensor its tiered
# pool. A dependent holds a reference to its owner, so the owner's finalizer
# cannot run while the dependent is reachable; when both become garbage in
# the same collection, Julia may finalize them in any order, so an owner
# counts its live dependents (`deps`) and its finalizer waits (registers
# itself again) until the count is zero. `lock` orders the C calls that
# destroy an owner against those that free its dependents.

"""
    Stream

An ordered queue of work on a place (C `dao_stream`): copies
([`memcpy!`](@ref)) and host functions ([`launch_host_func`](@ref)). Create
with `Stream(place)`; destroy with `close` (or let the GC do it). `nothing`
stands for the default stream (work runs on the calling thread).
"""
mutable struct Stream
    handle::Ptr{Cvoid}
    place::Place
    owned::Bool                     # false: borrowed (a kernel's stream); never destroyed here
    lock::ReentrantLock
    deps::Threads.Atomic{Int}       # live blocks allocated on it or recorded on it
    pending::Threads.Atomic{Int}    # host functions in mode=:task not yet run
    roots::Vector{Any}              # what queued work uses: host function records, copy operands
    rootbase::Int                   # number of roots dropped so far (the index base of `roots`)
    sem::Ptr{Cvoid}                 # semaphore of mode=:task host functions (lazily made)
end

"""
    Event

A point in a stream (C `dao_event`). Create with `Event(place)`, mark with
[`record!`](@ref), wait with [`synchronize`](@ref) or [`wait_event`](@ref).
"""
mutable struct Event
    handle::Ptr{Cvoid}
    place::Place
end

"""
    Allocator

An allocator object (C `dao_allocator`): a strategy (`"buddy"`,
`"caching"`, `"system"`) on a place, configured by a `key=value,...` string.
Create with `Allocator(place; strategy, config)`; a place's default
allocator is [`place_allocator`](@ref) (borrowed: libdao owns it).
"""
mutable struct Allocator
    handle::Ptr{Cvoid}
    place::Place
    owned::Bool
    lock::ReentrantLock
    deps::Threads.Atomic{Int}       # live blocks
end

"""
    Block

A block of memory from [`alloc`](@ref): `ptr` (256-byte aligned, `C_NULL`
for 0 bytes), `bytes` asked for, its `place`. Freed by [`free`](@ref) or by
the GC. Use it as an array with [`array`](@ref) (safe: the array keeps the
block alive) or [`unsafe_array`](@ref) (a plain `Array`) where the place is
host-visible.
"""
mutable struct Block
    ptr::Ptr{Cvoid}
    bytes::Int
    place::Place
    allocator::Union{Nothing,Allocator}   # nothing: dao_alloc on the place
    streams::Vector{Stream}               # its stream and recorded streams: must outlive it
end

"""
    Snapshot

An immutable copy of a caching allocator's segments and blocks (C
`dao_snapshot`), from [`snapshot`](@ref). Read with [`segments`](@ref) and
[`blocks`](@ref).
"""
mutable struct Snapshot
    handle::Ptr{Cvoid}
end

"""
    Collection

A named set of recycle pools (C `dao_collection`). Add pools with
[`add!`](@ref), find them with `collection["name"]`.
"""
mutable struct Collection
    handle::Ptr{Cvoid}
    lock::ReentrantLock
    deps::Threads.Atomic{Int}       # live buffers of all its pools
    pools::Dict{String,Any}
end

"""
    RecyclePool{T,N}

A recycle pool (C `dao_recycle_pool`) of buffers of `N`-dimensional arrays
of `T` with one shape, on one place. See [`acquire`](@ref),
[`submit!`](@ref), `take!`, [`release`](@ref).
"""
mutable struct RecyclePool{T,N}
    handle::Ptr{Cvoid}
    place::Place
    dims::NTuple{N,Int}
    name::String
    collection::Union{Nothing,Collection}   # owner, for pools of a collection
    lock::ReentrantLock                     # the collection's, for pools of a collection
    deps::Threads.Atomic{Int}               # the collection's, for pools of a collection
end

"""
    Buffer{T,N}

One reference to a buffer of a [`RecyclePool`](@ref) (C `dao_buffer`). Use
its memory with [`array`](@ref); hand it on with [`submit!`](@ref), share it
with [`retain`](@ref), drop it with [`release`](@ref) (or let the GC do it).
"""
mutable struct Buffer{T,N}
    handle::Ptr{Cvoid}
    pool::RecyclePool{T,N}
end

mutable struct ScoreRecord
    f::Any
    error::Any
end

"""
    TieredPool

A tiered pool (C `dao_tiered`): a device memory budget backed by a host
tier, with a kernel queue run by an executor thread. See [`Tensor`](@ref),
[`submit!`](@ref), [`synchronize`](@ref).
"""
mutable struct TieredPool
    handle::Ptr{Cvoid}
    device::Place
    host::Place
    budget::Int
    lock::ReentrantLock
    deps::Threads.Atomic{Int}                 # live tensors
    roots::Vector{Any}                        # records of submitted kernels, in order
    nextseq::Int                              # sequence number of the next kernel record
    score::Union{Nothing,ScoreRecord}
end

"""
    Tensor{T,N}

A tensor of a [`TieredPool`](@ref) (C `dao_tensor`): `prod(dims)` elements of
`T`, column-major. The C side knows only its bytes; the element type and
shape are how Julia code sees it (in kernels and in `read`/`write!`).
"""
mutable struct Tensor{T,N}
    handle::Ptr{Cvoid}
    pool::TieredPool
    dims::NTuple{N,Int}
end

"""
    HostArray{T,N,O} <: DenseArray{T,N}

A column-major array over host-visible libdao memory that keeps its owner
(`O`: a [`Block`](@ref) or a [`Buffer`](@ref)) alive. Made by
[`array`](@ref). Freeing or releasing the owner explicitly while the array
is in use leaves the array dangling, as with any pointer.
"""
struct HostArray{T,N,O} <: DenseArray{T,N}
    owner::O
    ptr::Ptr{T}
    dims::NTuple{N,Int}
end
