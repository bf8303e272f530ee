# Places, the library version, and the simulated devices and their costs.

"""
    version() -> VersionNumber

Version of the libdao library loaded at run time (`dao_version_string`).
"""
version() = VersionNumber(unsafe_string(dao_version_string()))

"""
    version_number() -> Int

`MAJOR*10000 + MINOR*100 + PATCH` of the loaded library (`dao_version_number`).
"""
version_number() = Int(dao_version_number())

"""    cpu() -> Place  — host memory from the operating system (`dao_place_cpu`)."""
cpu() = dao_place_cpu()

"""    cuda(device = 0) -> Place  — memory of CUDA device `device` (`dao_place_cuda`)."""
cuda(device::Integer = 0) = dao_place_cuda(device)

"""    cuda_pinned() -> Place  — page-locked host memory (`dao_place_cuda_pinned`)."""
cuda_pinned() = dao_place_cuda_pinned()

"""    cuda_managed(device = 0) -> Place  — CUDA managed memory (`dao_place_cuda_managed`)."""
cuda_managed(device::Integer = 0) = dao_place_cuda_managed(device)

"""    sim(device = 0) -> Place  — simulated device `device` (`dao_place_sim`)."""
sim(device::Integer = 0) = dao_place_sim(device)

"""
    kind_name(kind) -> String

`"cpu"`, `"cuda"`, `"cuda_pinned"`, `"cuda_managed"`, `"sim"`, or
`"unknown"` (`dao_place_kind_name`). Also `kind_name(place)`.
"""
kind_name(kind::Integer) = unsafe_string(dao_place_kind_name(kind))
kind_name(p::Place) = kind_name(p.kind)

"""
    host_visible(place) -> Bool

Whether the CPU can read and write memory of `place` directly: CPU,
CUDA pinned, CUDA managed and SIM memory are; CUDA device memory is not.
"""
host_visible(p::Place) = p.kind == DAO_PLACE_CPU || p.kind == DAO_PLACE_CUDA_PINNED ||
                         p.kind == DAO_PLACE_CUDA_MANAGED || p.kind == DAO_PLACE_SIM

function Base.show(io::IO, p::Place)
    name = p.kind in (DAO_PLACE_CPU, DAO_PLACE_CUDA, DAO_PLACE_CUDA_PINNED,
                      DAO_PLACE_CUDA_MANAGED, DAO_PLACE_SIM) ? kind_name(p.kind) :
           "kind$(Int(p.kind))"
    if p.kind == DAO_PLACE_CPU || p.kind == DAO_PLACE_CUDA_PINNED
        p.device == 0 ? print(io, name) : print(io, name, ":", p.device)
    else
        print(io, name, ":", p.device)
    end
end

"""
    device_count(kind) -> Int

Devices of a kind on this machine (`dao_place_device_count`): 1 for
`DAO_PLACE_CPU`; 0 for CUDA kinds without a driver or GPU (see
[`backend_description`](@ref)); the configured number for `DAO_PLACE_SIM`.
"""
function device_count(kind::Integer)
    n = Ref{Cint}(0)
    check(dao_place_device_count(kind, n))
    return Int(n[])
end

"""
    memory_info(place) -> (free = bytes, total = bytes)

Free and total bytes of a place as its backend reports them
(`dao_place_memory_info`).
"""
function memory_info(place::Place)
    free_bytes = Ref{Csize_t}(0)
    total_bytes = Ref{Csize_t}(0)
    check(dao_place_memory_info(place, free_bytes, total_bytes))
    return (free = Int(free_bytes[]), total = Int(total_bytes[]))
end

"""
    backend_description(kind) -> String

One line on the backend serving a kind, and why it has no devices when it
has none (`dao_place_backend_description`).
"""
backend_description(kind::Integer) = unsafe_string(dao_place_backend_description(kind))

"""
    default_config(kind) -> (strategy = String, config = String)

Strategy and config the default allocators of a kind use, from the
environment (`dao_place_default_config`).
"""
function default_config(kind::Integer)
    strategy = Ref{Ptr{UInt8}}(C_NULL)
    config = Ref{Ptr{UInt8}}(C_NULL)
    check(dao_place_default_config(kind, strategy, config))
    return (strategy = unsafe_string(strategy[]), config = unsafe_string(config[]))
end

"""
    used(place) -> Int

Bytes handed out on a place by [`alloc`](@ref)`(place, n)`, counted in block
sizes (`dao_used`).
"""
function used(place::Place)
    bytes = Ref{Csize_t}(0)
    check(dao_used(place, bytes))
    return Int(bytes[])
end

"""
    used_internal(place) -> Int

Bytes the library holds on a place for itself (recycle pools, tiered pools,
partitioned memory), counted apart from [`used`](@ref) (`dao_used_internal`).
"""
function used_internal(place::Place)
    bytes = Ref{Csize_t}(0)
    check(dao_used_internal(place, bytes))
    return Int(bytes[])
end

"""
    sim_configure!(capacities)
    sim_configure!(count)

Set the number and capacities (bytes) of the simulated devices before the
first use of a SIM place (`dao_sim_configure`); `sim_configure!(n)` gives `n`
devices of 1 GiB. Overrides `DAO_SIM_DEVICES`. Calling it again with the same
configuration succeeds; a different one after first use throws
`DaoError(DAO_ERR_INVALID_STATE)`.
"""
function sim_configure!(capacities::AbstractVector{<:Integer})
    caps = Csize_t[c for c in capacities]
    check(dao_sim_configure(length(caps), caps))
    return nothing
end
function sim_configure!(count::Integer)
    check(dao_sim_configure(count, C_NULL))
    return nothing
end

"""
    sim_profile!(name)

Choose the cost profile of the simulated devices before the first use of a
SIM place (`dao_sim_set_profile`): `"none"` (the default: host pages, calls
counted, no time) or `"h200"` (an NVIDIA H200: its granularity, and the time
its driver takes for each call, accounted as simulated time, never slept).
Overrides `DAO_SIM_COSTS`. Choosing the profile in effect again succeeds;
another one after first use throws `DaoError(DAO_ERR_INVALID_STATE)`, an
unknown one `DaoError(DAO_ERR_INVALID_ARGUMENT)` (the message lists the
profiles).
"""
function sim_profile!(name::AbstractString)
    check(dao_sim_set_profile(_cstr(name)))
    return nothing
end

"""
    sim_profile() -> String

The cost profile in effect, `"none"` or `"h200"` (`dao_sim_get_profile`).
Fixes the SIM configuration, as a first use does.
"""
function sim_profile()
    name = Ref{Ptr{UInt8}}(C_NULL)
    check(dao_sim_get_profile(name))
    return unsafe_string(name[])
end

# The operations a SIM device accounts, by the names of `dao_sim_op_name`.
const _SIM_OPS = Dict(
    :alloc => DAO_SIM_OP_ALLOC, :free => DAO_SIM_OP_FREE, :create => DAO_SIM_OP_CREATE,
    :map => DAO_SIM_OP_MAP, :set_access => DAO_SIM_OP_SET_ACCESS, :unmap => DAO_SIM_OP_UNMAP,
    :release => DAO_SIM_OP_RELEASE, :event_record => DAO_SIM_OP_EVENT_RECORD,
    :event_query => DAO_SIM_OP_EVENT_QUERY, :synchronize => DAO_SIM_OP_SYNCHRONIZE,
    :host_func => DAO_SIM_OP_HOST_FUNC, :copy_to_device => DAO_SIM_OP_COPY_TO_DEVICE,
    :copy_to_host => DAO_SIM_OP_COPY_TO_HOST, :copy_on_device => DAO_SIM_OP_COPY_ON_DEVICE)
_sim_op(op::Integer) = _cint(op)  # _cint: whole.jl
_sim_op(op::Symbol) = get(() -> throw(ArgumentError("unknown SIM operation :$op")), _SIM_OPS, op)

"""
    sim_cost(device, op) -> SimCost

What simulated device `device` accounted for operation `op` since its first
use or last [`sim_reset_costs!`](@ref) (`dao_sim_get_cost`): fields `count`
(calls), `bytes` (bytes they concerned) and `ns` (simulated driver time; 0
with the profile `"none"`). `op` is a symbol (`:alloc`, `:free`, `:create`,
`:map`, `:set_access`, `:unmap`, `:release`, `:event_record`,
`:event_query`, `:synchronize`, `:host_func`, `:copy_to_device`,
`:copy_to_host`, `:copy_on_device`) or a `DAO_SIM_OP_*` number. Throws
`DaoError(DAO_ERR_NO_DEVICE)` for a missing SIM device,
`DaoError(DAO_ERR_INVALID_ARGUMENT)` for an operation number the library
does not know, and `ArgumentError` for an unknown symbol.
"""
function sim_cost(device::Integer, op::Union{Integer,Symbol})
    r = _sized(SimCost)
    check(dao_sim_get_cost(device, _sim_op(op), r))
    return r[]
end

"""
    sim_reset_costs!(device)

Zero what simulated device `device` accounted, for every operation
(`dao_sim_reset_costs`). Throws `DaoError(DAO_ERR_NO_DEVICE)` for a missing
SIM device.
"""
function sim_reset_costs!(device::Integer)
    check(dao_sim_reset_costs(device))
    return nothing
end

"""    Dao.sim_op_name(op) -> String  — `"alloc"`, `"copy_to_device"`, ... or `"unknown"` (`dao_sim_op_name`)."""
sim_op_name(op::Union{Integer,Symbol}) = unsafe_string(dao_sim_op_name(_sim_op(op)))

# Strings handed to C: no NUL inside; `nothing` becomes NULL.
function _cstr(s::AbstractString)
    str = String(s)
    occursin('\0', str) && throw(ArgumentError("a string passed to libdao contains a NUL character"))
    return str
end
_cstr_or_null(::Nothing) = C_NULL
_cstr_or_null(s::AbstractString) = _cstr(s)

# The element types libdao memory can hold as Julia arrays.
function _check_eltype(::Type{T}) where {T}
    isbitstype(T) && sizeof(T) > 0 ||
        throw(ArgumentError("element type $T is not a plain-data (isbits) type with a size"))
    return nothing
end
