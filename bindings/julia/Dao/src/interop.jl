# The PyTorch / CuPy allocator entry points (dao/interop.h, docs/interop.md).
# Frameworks call them by address (interop_functions()); the wrappers below
# are for calling them from Julia, and for the statistics. The C functions
# return no status: a failure gives C_NULL (malloc) or nothing, with the
# message in last_error() and counted in interop_stats().

"""
    interop_functions() -> NamedTuple

The addresses to hand to a framework: `pluggable_malloc`, `pluggable_free`,
`pluggable_record_stream` (PyTorch's `CUDAPluggableAllocator` ABI),
`cupy_malloc`, `cupy_free` (CuPy's `CFunctionAllocator` ABI).
"""
function interop_functions()
    lib = Libdl.dlopen(libdao)
    sym(name) = Libdl.dlsym(lib, name)
    return (pluggable_malloc=sym(:dao_pluggable_malloc), pluggable_free=sym(:dao_pluggable_free),
            pluggable_record_stream=sym(:dao_pluggable_record_stream),
            cupy_malloc=sym(:dao_cupy_malloc), cupy_free=sym(:dao_cupy_free))
end

"""
    pluggable_malloc(size, device, stream=C_NULL) -> Ptr{Cvoid}

`dao_pluggable_malloc`: `size` bytes on device `device` (`cuda:n`, or `sim:n`
under `DAO_INTEROP_PLACE=sim`) in the order of `stream` (a native handle; a
`dao_stream` handle under `DAO_INTEROP_PLACE=sim`). `C_NULL` for size 0, or
on failure with the message in [`last_error`](@ref).
"""
function pluggable_malloc(size::Integer, device::Integer, stream::Ptr{Cvoid}=C_NULL)
    return dao_pluggable_malloc(size, device, stream)
end

"""    pluggable_free(ptr, size, device, stream=C_NULL)  — `dao_pluggable_free`."""
function pluggable_free(ptr::Ptr{Cvoid}, size::Integer, device::Integer,
                        stream::Ptr{Cvoid}=C_NULL)
    return dao_pluggable_free(ptr, size, device, stream)
end

"""    pluggable_record_stream(ptr, stream)  — `dao_pluggable_record_stream`."""
function pluggable_record_stream(ptr::Ptr{Cvoid}, stream::Ptr{Cvoid})
    return dao_pluggable_record_stream(ptr, stream)
end

"""
    cupy_malloc(param, size, device) -> Ptr{Cvoid}

`dao_cupy_malloc`: `param` is `C_NULL` (legacy default stream) or points to a
`Ptr{Cvoid}` slot holding the stream.
"""
function cupy_malloc(param::Ptr{Cvoid}, size::Integer, device::Integer)
    return dao_cupy_malloc(param, size, device)
end

"""    cupy_free(param, ptr, device)  — `dao_cupy_free`."""
function cupy_free(param::Ptr{Cvoid}, ptr::Ptr{Cvoid}, device::Integer)
    return dao_cupy_free(param, ptr, device)
end

"""
    interop_stats() -> InteropStats

The stream cache and failure counts of the entry points
(`dao_interop_get_stats`).
"""
function interop_stats()
    r = _sized(InteropStats)
    check(dao_interop_get_stats(r))
    return r[]
end
