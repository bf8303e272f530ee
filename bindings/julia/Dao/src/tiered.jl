# Tiered pools: tensors, kernels and scoring functions (tiered.h).
#
# Kernels and threads. libdao calls a kernel on the pool's executor thread,
# which Julia did not start: the kernel's Julia code runs there directly
# (Julia ≥ 1.9 adopts the thread). The executor waits for the kernel, and
# the tensors' memory is valid only during the call. So a kernel:
# - may compute on its arrays and allocate (the waiting calls of this binding
#   are GC-safe, so a collection the kernel triggers can proceed);
# - must not do I/O (`println`), `sleep`, `wait`, `yield`, or take a lock that
#   a task on another thread may hold (`free`, `release`, `close` and
#   `destroy!` of this package take one): those may need Julia's thread 1,
#   which may be waiting for the kernel (in `synchronize(pool)`, `read`,
#   `close`);
# - must not keep its arrays (or pointers) after it returns;
# - must not call into its own pool (submit, read, write, release, ...).
# An exception thrown by a kernel is caught: the kernel then counts as
# failed (it returns `DAO_ERR_BACKEND` to libdao), the pool enters its failed
# state, and the next `synchronize(pool)` throws a `CallbackError` carrying
# both the exception and libdao's message.
#
# A scoring function (policy `callback`) also runs on the executor thread,
# with the pool's lock held by libdao: the same rules, and it must be quick.
# Its exceptions are caught (the candidate scores 0.0) and reported by the
# next `synchronize(pool)`.

mutable struct KernelRecord
    seq::Int                # order of submission (TieredPool.nextseq)
    f::Any
    inputs::Vector{Any}     # the Tensor objects, for their element types and shapes
    outputs::Vector{Any}
    host_visible::Bool      # SIM device: pass arrays; CUDA device: pass pointers
    pass_stream::Bool
    error::Any
    done::Threads.Atomic{Int}
end

_kernel_arg(t::Tensor{T,N}, p::Ptr{Cvoid}, host_visible::Bool) where {T,N} =
    host_visible ? unsafe_wrap(Array, Ptr{T}(p), t.dims; own = false) : Ptr{T}(p)

# Called by libdao on the executor thread (through `_KERNEL_TRAMPOLINE`).
function _kernel_trampoline(user_data::Ptr{Cvoid}, inputs::Ptr{Ptr{Cvoid}}, input_count::Csize_t,
                            outputs::Ptr{Ptr{Cvoid}}, output_count::Csize_t,
                            stream::Ptr{Cvoid})::Cint
    rec = unsafe_pointer_to_objref(user_data)::KernelRecord
    status = DAO_OK
    try
        ins = Any[_kernel_arg(rec.inputs[i], unsafe_load(inputs, i), rec.host_visible)
                  for i in 1:Int(input_count)]
        outs = Any[_kernel_arg(rec.outputs[i], unsafe_load(outputs, i), rec.host_visible)
                   for i in 1:Int(output_count)]
        r = rec.pass_stream ? rec.f(ins, outs, stream) : rec.f(ins, outs)
        if r isa Integer && !(r isa Bool)
            status = Cint(r)
        end
    catch err
        rec.error = CapturedException(err, catch_backtrace())
        status = DAO_ERR_BACKEND
    end
    rec.done[] = 1
    return status
end

# Called by libdao on the executor thread (through `_SCORE_TRAMPOLINE`).
function _score_trampoline(user_data::Ptr{Cvoid}, info::Ptr{TensorAccessInfo})::Cdouble
    rec = unsafe_pointer_to_objref(user_data)::ScoreRecord
    try
        return Float64(rec.f(unsafe_load(info)))
    catch err
        rec.error === nothing && (rec.error = CapturedException(err, catch_backtrace()))
        return 0.0
    end
end

function _tiered_config(config, policy, prefetch, host_budget, link_bandwidth)
    parts = String[]
    policy === nothing || push!(parts, "policy=" * string(policy))
    prefetch === nothing || push!(parts, "prefetch=" * string(prefetch))
    host_budget === nothing || push!(parts, "host_budget=" * string(host_budget))
    link_bandwidth === nothing || push!(parts, "link_bandwidth=" * string(link_bandwidth))
    (config === nothing || isempty(config)) || push!(parts, String(config))
    return isempty(parts) ? nothing : join(parts, ",")
end

"""
    TieredPool(device, host, device_budget; policy = nothing, prefetch = nothing,
               host_budget = nothing, link_bandwidth = nothing, config = nothing)

A tiered pool (`dao_tiered_create`): `device_budget` bytes of a device place
(SIM or CUDA), reserved now, backed by a host tier on `host` (CPU or CUDA
pinned). Options become config keys: `policy` (`"belady"`, `"lru"`,
`"size_aware"`, `"callback"`), `prefetch` (kernels ahead), `host_budget`
(bytes or a size string), `link_bandwidth` (SIM only, e.g. `"16GB/s"`);
`config` adds raw `key=value` pairs. The executor thread starts at once.
"""
function TieredPool(device::Place, host::Place, device_budget::Integer;
                    policy = nothing, prefetch = nothing, host_budget = nothing,
                    link_bandwidth = nothing,
                    config::Union{Nothing,AbstractString} = nothing)
    cfg = _tiered_config(config, policy, prefetch, host_budget, link_bandwidth)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_tiered_create(device, host, device_budget, _cstr_or_null(cfg), out))
    p = TieredPool(out[], device, host, Int(device_budget), ReentrantLock(),
                   Threads.Atomic{Int}(0), Any[], 0, nothing)
    finalizer(_finalize_tiered, p)
    return p
end

function _handle(p::TieredPool)
    p.handle == C_NULL && throw(ArgumentError("this Dao.TieredPool was destroyed"))
    return p.handle
end

"""
    set_score_callback!(f, pool)

Set the scoring function of a pool created with `policy = "callback"`
(`dao_tiered_set_score_callback`), before the first submit. `f(info::
TensorAccessInfo)` returns a number; the executor evicts the contiguous run
of blocks with the highest total score. It runs on the executor thread with
the pool locked: see the rules at the top of tiered.jl.
"""
function set_score_callback!(f, p::TieredPool)
    h = _handle(p)
    rec = ScoreRecord(f, nothing)
    old = p.score
    p.score = rec  # rooted before libdao can call it
    st = GC.@preserve rec dao_tiered_set_score_callback(h, _SCORE_TRAMPOLINE[],
                                                        pointer_from_objref(rec))
    if st != DAO_OK
        err = _dao_error(st)
        p.score = old
        throw(err)
    end
    return p
end

"""
    Tensor{T}(pool, dims...)
    Tensor(pool, nbytes)

A tensor of `prod(dims)` elements of `T` in a tiered pool
(`dao_tensor_create`); nothing is allocated until it is written or a kernel
uses it. Released by [`release`](@ref) or by the GC.
"""
function Tensor{T}(p::TieredPool, dims::Dims{N}) where {T,N}
    _check_eltype(T)
    all(d -> d >= 0, dims) || throw(ArgumentError("negative dimension in $dims"))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_tensor_create(_handle(p), sizeof(T) * prod(dims), out))
    Threads.atomic_add!(p.deps, 1)
    t = Tensor{T,N}(out[], p, dims)
    finalizer(_finalize_tensor, t)
    return t
end
Tensor{T}(p::TieredPool, dims::Integer...) where {T} = Tensor{T}(p, map(Int, dims))
Tensor(p::TieredPool, nbytes::Integer) = Tensor{UInt8}(p, (Int(nbytes),))

function _handle(t::Tensor)
    t.handle == C_NULL && throw(ArgumentError("this Dao.Tensor was released"))
    t.pool.handle == C_NULL && throw(ArgumentError("the tiered pool of this Dao.Tensor was destroyed"))
    return t.handle
end

Base.size(t::Tensor) = t.dims
Base.eltype(::Type{<:Tensor{T}}) where {T} = T
Base.sizeof(t::Tensor{T}) where {T} = sizeof(T) * prod(t.dims)

# Host memory to copy from or to: an Array or HostArray of plain data.
_dense(a::Union{Array,HostArray}) = a
_dense(a::AbstractArray) = collect(a)

"""
    write!(tensor, src::AbstractArray)

Copy `src` into a tensor, in kernel order (`dao_tensor_write`): after every
kernel already submitted that uses the tensor, before any submitted later.
`src` may be reused at once. Its size in bytes must equal the tensor's.
"""
function write!(t::Tensor, src::AbstractArray)
    h = _handle(t)
    s = _dense(src)
    _check_eltype(eltype(s))
    GC.@preserve s check(dao_tensor_write(h, _voidptr(s), length(s) * sizeof(eltype(s))))
    return t
end

"""
    read!(tensor, dst::AbstractArray) -> dst
    read(tensor) -> Array{T,N}

Copy a tensor into host memory after every kernel submitted so far that
writes it has run (`dao_tensor_read`; waits for them). A tensor that was
never written throws `DaoError(DAO_ERR_INVALID_STATE)`.
"""
function Base.read!(t::Tensor, dst::Union{Array,HostArray})
    h = _handle(t)
    _check_eltype(eltype(dst))
    GC.@preserve dst check(dao_tensor_read(h, _voidptr(dst), length(dst) * sizeof(eltype(dst))))
    return dst
end
Base.read(t::Tensor{T,N}) where {T,N} = read!(t, Array{T,N}(undef, t.dims))

"""
    state(tensor) -> Cint

Where the tensor's data is now (`dao_tensor_get_state`):
`DAO_TENSOR_UNINITIALIZED`, `DAO_TENSOR_ON_DEVICE`, `DAO_TENSOR_ON_HOST` or
`DAO_TENSOR_IN_TRANSIT`. A snapshot: it may change at once.
"""
function state(t::Tensor)
    out = Ref{Cint}(DAO_TENSOR_UNINITIALIZED)
    check(dao_tensor_get_state(_handle(t), out))
    return out[]
end

"""
    retire!(tensor)

Say that no use after those already submitted needs the tensor's data, and
keep the handle (`dao_tensor_retire`): once the queued uses have run,
evicting it copies nothing back; `read!` fails until a write or a kernel
output gives it new data.
"""
function retire!(t::Tensor)
    check(dao_tensor_retire(_handle(t)))
    return nothing
end

"""
    release(tensor)

Drop the tensor (`dao_tensor_release`): its memory is freed once the last
queued kernel that uses it has run. Releasing twice does nothing.
"""
function release(t::Tensor)
    t.handle == C_NULL && return nothing
    p = t.pool
    lock(p.lock) do
        if t.handle != C_NULL
            p.handle == C_NULL || check(dao_tensor_release(t.handle))
            t.handle = C_NULL
            Threads.atomic_sub!(p.deps, 1)
        end
    end
    return nothing
end

function _finalize_tensor(t::Tensor)
    (t.handle == C_NULL || _EXITING[]) && return nothing
    p = t.pool
    _locked_or_retry(_finalize_tensor, t, p.lock) do
        if t.handle != C_NULL
            p.handle == C_NULL || dao_tensor_release(t.handle)
            t.handle = C_NULL
            Threads.atomic_sub!(p.deps, 1)
        end
    end
    return nothing
end

"""
    submit!(f, pool, inputs, outputs; pass_stream = false)

Submit a kernel (`dao_kernel_submit`); returns at once. The executor makes
every tensor resident in the device budget, then calls
`f(ins, outs)` (or `f(ins, outs, stream::Ptr{Cvoid})` with `pass_stream`),
where `ins` and `outs` hold, in the order given, an `Array{T,N}` over each
tensor's device memory (SIM devices) or a `Ptr{T}` to it (CUDA devices).
`f` may return a status (an `Integer`; non-zero fails the pool) or anything
else (success). It runs on the executor thread: see the rules at the top of
tiered.jl. A tensor may appear in both lists.
"""
function submit!(f, p::TieredPool, inputs::AbstractVector, outputs::AbstractVector;
                 pass_stream::Bool = false)
    h = _handle(p)
    ins = Ptr{Cvoid}[_handle(t::Tensor) for t in inputs]
    outs = Ptr{Cvoid}[_handle(t::Tensor) for t in outputs]
    rec = KernelRecord(0, f, collect(Any, inputs), collect(Any, outputs), host_visible(p.device),
                       pass_stream, nothing, Threads.Atomic{Int}(0))
    lock(p.lock) do
        rec.seq = p.nextseq
        p.nextseq += 1
        # Kernels that ran without error need no record any more (libdao no
        # longer looks at it); the others wait for synchronize(pool).
        if length(p.roots) >= 256 && rec.seq % 256 == 0
            filter!(r -> r.done[] == 0 || r.error !== nothing, p.roots)
        end
        push!(p.roots, rec)
    end
    st = GC.@preserve rec ins outs dao_kernel_submit(h, _KERNEL_TRAMPOLINE[],
                                                     pointer_from_objref(rec), ins, length(ins),
                                                     outs, length(outs))
    st == DAO_OK || throw(_dao_error(st))  # (the record goes at the next synchronize)
    return nothing
end

# Drop the records of the kernels submitted before `mark` (all have run, or
# were discarded by a failed pool) and collect the errors of the callbacks.
function _take_callback_errors!(p::TieredPool, mark::Int)
    errors = Any[]
    lock(p.lock) do
        for r in p.roots
            (r.seq < mark && r.error !== nothing) && push!(errors, r.error)
        end
        filter!(r -> r.seq >= mark, p.roots)
        s = p.score
        if s !== nothing && s.error !== nothing
            push!(errors, s.error)
            s.error = nothing
        end
    end
    return errors
end

"""
    synchronize(pool::TieredPool)

Wait until every submitted kernel has run (`dao_tiered_synchronize`). A
failed pool throws `DaoError(DAO_ERR_INVALID_STATE)` (the message says which
kernel and why), or a [`CallbackError`](@ref) when Julia kernels or the
scoring function threw.
"""
function synchronize(p::TieredPool)
    h = _handle(p)
    mark = lock(() -> p.nextseq, p.lock)
    st = dao_tiered_synchronize(h)
    err = st == DAO_OK ? nothing : _dao_error(st)
    errors = _take_callback_errors!(p, mark)
    isempty(errors) || throw(CallbackError(err, errors))
    err === nothing || throw(err)
    return nothing
end

"""    stats(pool::TieredPool) -> TieredStats  (`dao_tiered_get_stats`)"""
function stats(p::TieredPool)
    r = _sized(TieredStats)
    check(dao_tiered_get_stats(_handle(p), r))
    return r[]
end

"""
    trim!(pool::TieredPool)

Wait for the kernels submitted so far, move every resident tensor to the
host tier and give the device budget back to the device place's allocator;
a later kernel takes it again (`dao_tiered_trim`).
"""
function trim!(p::TieredPool)
    check(dao_tiered_trim(_handle(p)))
    return nothing
end

"""    link_stats(pool::TieredPool) -> TieredLinkStats  (`dao_tiered_get_link_stats`)"""
function link_stats(p::TieredPool)
    r = _sized(TieredLinkStats)
    check(dao_tiered_get_link_stats(_handle(p), r))
    return r[]
end

"""
    destroy!(pool::TieredPool)
    close(pool::TieredPool)

Stop the executor after the queued kernels (at once if the pool failed),
free every tensor and the device budget (`dao_tiered_destroy`). Tensor
objects of the pool become unusable.
"""
function destroy!(p::TieredPool)
    h = lock(p.lock) do
        h0 = p.handle
        p.handle = C_NULL  # tensors released from now on leave the C side alone
        h0
    end
    h == C_NULL && return nothing
    check(dao_tiered_destroy(h))
    lock(() -> empty!(p.roots), p.lock)
    return nothing
end
Base.close(p::TieredPool) = destroy!(p)
Base.isopen(p::TieredPool) = p.handle != C_NULL

function _finalize_tiered(p::TieredPool)
    (p.handle == C_NULL || _EXITING[]) && return nothing
    p.deps[] > 0 && return _retry_finalizer(_finalize_tiered, p)
    h = C_NULL
    took = _locked_or_retry(_finalize_tiered, p, p.lock) do
        h = p.handle
        p.handle = C_NULL
    end
    took && h != C_NULL && dao_tiered_destroy(h)
    return nothing
end

Base.show(io::IO, p::TieredPool) =
    print(io, "Dao.TieredPool(", p.budget, " bytes of ", p.device, " over ", p.host,
          p.handle == C_NULL ? ", destroyed)" : ")")

function Base.show(io::IO, t::Tensor{T,N}) where {T,N}
    print(io, "Dao.Tensor{", T, ",", N, "}(", join(t.dims, "×"))
    t.handle == C_NULL && print(io, ", released")
    print(io, ")")
end
