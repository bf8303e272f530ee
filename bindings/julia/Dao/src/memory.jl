# Blocks of memory (memory.h, allocator.h) and arrays over them.
#
# Arrays are column-major, as Julia's own: element [i, j] of a HostArray with
# dims (m, n) is at byte offset ((j-1)*m + (i-1)) * sizeof(T). A C program
# that indexes the same memory row-major sees the dimensions reversed.

"""
    alloc(place, nbytes) -> Block

Allocate `nbytes` on a place with its default allocator (`dao_alloc`), aligned
to at least 256 bytes. 0 bytes give a `Block` with `ptr == C_NULL`. The block
is freed by [`free`](@ref), or by the GC once unreachable.

    alloc(allocator, nbytes; stream = nothing) -> Block

Allocate from an [`Allocator`](@ref) (`dao_allocator_alloc`), for use on
`stream` (`"caching"` is stream-ordered: the block belongs to that stream).
"""
function alloc(place::Place, bytes::Integer)
    bytes >= 0 || throw(ArgumentError("nbytes must be >= 0, got $bytes"))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_alloc(place, bytes, out))
    m = Block(out[], Int(bytes), place, nothing, Stream[])
    m.ptr == C_NULL || finalizer(_finalize_block, m)
    return m
end

function _drop_streams!(m::Block)
    for s in m.streams
        Threads.atomic_sub!(s.deps, 1)
    end
    empty!(m.streams)
    return nothing
end

"""
    free(m::Block)

Give a block back (`dao_free`, or `dao_allocator_free` for blocks of an
[`Allocator`](@ref)). Freeing twice, or a 0-byte block, does nothing.
Arrays made over the block must not be used afterwards.
"""
function free(m::Block)
    m.ptr == C_NULL && return nothing
    a = m.allocator
    freed = false
    if a === nothing
        check(dao_free(m.place, m.ptr))
        m.ptr = C_NULL
        freed = true
    else
        freed = lock(a.lock) do
            m.ptr == C_NULL && return false
            check(dao_allocator_free(_handle(a), m.ptr))
            m.ptr = C_NULL
            Threads.atomic_sub!(a.deps, 1)
            return true
        end
    end
    freed && _drop_streams!(m)
    return nothing
end

function _finalize_block(m::Block)
    (m.ptr == C_NULL || _EXITING[]) && return nothing
    a = m.allocator
    if a === nothing
        dao_free(m.place, m.ptr)  # safe from any thread; a failure cannot be reported here
        m.ptr = C_NULL
        _drop_streams!(m)
        return nothing
    end
    _locked_or_retry(_finalize_block, m, a.lock) do
        if m.ptr != C_NULL && a.handle != C_NULL
            dao_allocator_free(a.handle, m.ptr)
            m.ptr = C_NULL
            Threads.atomic_sub!(a.deps, 1)
            _drop_streams!(m)
        end
    end
    return nothing
end

"""    place(m::Block) -> Place"""
place(m::Block) = m.place
Base.pointer(m::Block) = m.ptr
Base.sizeof(m::Block) = m.bytes
isfreed(m::Block) = m.ptr == C_NULL && m.bytes > 0

function Base.show(io::IO, m::Block)
    print(io, "Dao.Block(", m.bytes, " bytes on ", m.place)
    if isfreed(m)
        print(io, ", freed")
    elseif m.ptr != C_NULL
        print(io, " at ", m.ptr)
    end
    m.allocator === nothing || print(io, ", from an allocator")
    print(io, ")")
end

"""
    usable_size(m::Block) -> Int

Usable size of a live block, at least what was asked for
(`dao_allocator_usable_size`).
"""
function usable_size(m::Block)
    m.ptr == C_NULL && throw(ArgumentError("usable_size of a freed or 0-byte Dao.Block"))
    a = m.allocator === nothing ? place_allocator(m.place) : m.allocator
    out = Ref{Csize_t}(0)
    check(dao_allocator_usable_size(_handle(a), m.ptr, out))
    return Int(out[])
end

# --- arrays over libdao memory -------------------------------------------------------

function _check_wrap(::Type{T}, place::Place, ptr::Ptr, bytes::Int, dims::Dims) where {T}
    _check_eltype(T)
    host_visible(place) ||
        throw(ArgumentError("memory on $place is not host-visible; copy it to host memory " *
                            "with memcpy! first"))
    all(d -> d >= 0, dims) || throw(ArgumentError("negative dimension in $dims"))
    need = sizeof(T) * prod(dims)
    need <= bytes || throw(ArgumentError("$T$dims needs $need bytes but the memory has $bytes"))
    (ptr == C_NULL && need > 0) && throw(ArgumentError("the memory was freed or released"))
    return nothing
end

"""
    array(T, m::Block, dims...) -> HostArray{T}
    array(T, m::Block) -> HostArray{T,1}   # as many elements as fit
    array(m::Block) -> HostArray{UInt8,1}

A column-major array of `T` over a block of host-visible memory (CPU,
pinned, managed or SIM; not CUDA device memory). The array keeps the block
alive; freeing the block explicitly while the array is in use leaves it
dangling.
"""
function array(::Type{T}, m::Block, dims::Dims{N}) where {T,N}
    _check_wrap(T, m.place, m.ptr, m.bytes, dims)
    return HostArray{T,N,Block}(m, Ptr{T}(m.ptr), dims)
end
array(::Type{T}, m::Block, dims::Integer...) where {T} = array(T, m, map(Int, dims))
function array(::Type{T}, m::Block) where {T}
    _check_eltype(T)
    return array(T, m, (m.bytes ÷ sizeof(T),))
end
array(m::Block) = array(UInt8, m, (m.bytes,))

"""
    unsafe_array(T, m::Block, dims...) -> Array{T}

A plain `Array` over the block (`unsafe_wrap(Array, ...; own = false)`). The
array does not keep the block alive: keep `m` referenced (or `GC.@preserve
m`) and unfreed as long as the array is used.
"""
function unsafe_array(::Type{T}, m::Block, dims::Dims{N}) where {T,N}
    _check_wrap(T, m.place, m.ptr, m.bytes, dims)
    return unsafe_wrap(Array, Ptr{T}(m.ptr), dims; own = false)
end
unsafe_array(::Type{T}, m::Block, dims::Integer...) where {T} = unsafe_array(T, m, map(Int, dims))

"""
    HostArray{T}(undef, place, dims...)
    HostArray{T}(undef, allocator, dims...; stream = nothing)

Allocate a column-major array of `T` in host-visible libdao memory.
"""
function HostArray{T}(::UndefInitializer, place::Place, dims::Dims{N}) where {T,N}
    _check_eltype(T)
    host_visible(place) || throw(ArgumentError("memory on $place is not host-visible"))
    all(d -> d >= 0, dims) || throw(ArgumentError("negative dimension in $dims"))
    return array(T, alloc(place, sizeof(T) * prod(dims)), dims)
end
HostArray{T}(::UndefInitializer, place::Place, dims::Integer...) where {T} =
    HostArray{T}(undef, place, map(Int, dims))
function HostArray{T}(::UndefInitializer, a::Allocator, dims::Dims{N};
                      stream::Union{Stream,Nothing} = nothing) where {T,N}
    _check_eltype(T)
    host_visible(a.place) || throw(ArgumentError("memory on $(a.place) is not host-visible"))
    all(d -> d >= 0, dims) || throw(ArgumentError("negative dimension in $dims"))
    return array(T, alloc(a, sizeof(T) * prod(dims); stream = stream), dims)
end
HostArray{T}(::UndefInitializer, a::Allocator, dims::Integer...;
             stream::Union{Stream,Nothing} = nothing) where {T} =
    HostArray{T}(undef, a, map(Int, dims); stream = stream)

Base.size(A::HostArray) = A.dims
Base.IndexStyle(::Type{<:HostArray}) = IndexLinear()
@inline function Base.getindex(A::HostArray{T}, i::Int) where {T}
    @boundscheck checkbounds(A, i)
    return GC.@preserve A unsafe_load(A.ptr, i)
end
@inline function Base.setindex!(A::HostArray{T}, v, i::Int) where {T}
    @boundscheck checkbounds(A, i)
    GC.@preserve A unsafe_store!(A.ptr, convert(T, v), i)
    return A
end
Base.pointer(A::HostArray) = A.ptr
Base.pointer(A::HostArray{T}, i::Integer) where {T} = A.ptr + (i - 1) * sizeof(T)
Base.unsafe_convert(::Type{Ptr{T}}, A::HostArray{T}) where {T} = A.ptr
Base.elsize(::Type{<:HostArray{T}}) where {T} = sizeof(T)
Base.sizeof(A::HostArray{T}) where {T} = length(A) * sizeof(T)
Base.similar(::HostArray, ::Type{S}, dims::Dims) where {S} = Array{S}(undef, dims)

"""    owner(A::HostArray)  — the `Block` or `Buffer` whose memory `A` covers."""
owner(A::HostArray) = A.owner
