# Streams, events, asynchronous copies and host functions (stream.h).
#
# Host functions and threads. On a SIM stream libdao runs host functions on
# the stream's worker thread; on a CUDA stream, on a driver thread; on a CPU
# stream and on the default stream (`nothing`), on the calling thread before
# `dao_launch_host_func` returns. Julia code may run on a thread that Julia
# did not start only from Julia 1.9 on (the thread is "adopted"), and even
# then it must not wait for Julia's thread 1 (I/O, `println`, `sleep`, task
# switches, locks held by tasks) while thread 1 waits for it. Two modes:
#
# - `mode = :task` (the default): libdao's thread runs no Julia code at all.
#   It calls libuv's `uv_async_send` (wake Julia's event loop) and then waits
#   on a semaphore; Julia's event loop (run by thread 1) wakes a task that
#   runs the function on the thread that launched it, then posts the
#   semaphore, and the stream goes on. Stream order holds (later work waits
#   for the function), and the function may do anything a task may (print,
#   allocate, throw). It runs once thread 1 runs its event loop and the
#   launching thread is free, that is when they are idle or yield; the
#   high-level calls here that wait for stream work (`synchronize`, `close`,
#   ...) yield until it has run.
# - `mode = :thread`: the function runs directly on libdao's thread (Julia ≥
#   1.9). Lower latency and independent of thread 1, but the function must be
#   thread-safe and must not do I/O, yield, wait, or take locks that thread 1
#   may hold (`free`, `release`, `close`, `destroy!` of this package take
#   one). The blocking calls of this binding are GC-safe, so it may
#   allocate.
#
# In both modes an exception thrown by the function is caught (none may
# cross into C) and rethrown, as a `CallbackError`, by the next
# `synchronize(stream)` or `close(stream)`; on CPU streams and the default
# stream, by `launch_host_func` itself. A host function must not call stream
# or event functions on its own stream (libdao: that would deadlock).

mutable struct HostFuncRecord
    f::Any
    error::Any                      # CapturedException, or nothing
    done::Threads.Atomic{Int}
    cancelled::Threads.Atomic{Int}
end
HostFuncRecord(f) = HostFuncRecord(f, nothing, Threads.Atomic{Int}(0), Threads.Atomic{Int}(0))

# Called by libdao (through `_HOST_TRAMPOLINE`) for host functions in
# mode=:thread, and for every host function on CPU and default streams.
function _host_trampoline(user_data::Ptr{Cvoid})::Cvoid
    rec = unsafe_pointer_to_objref(user_data)::HostFuncRecord
    try
        rec.f()
    catch err
        rec.error = CapturedException(err, catch_backtrace())
    end
    rec.done[] = 1
    return nothing
end

_new_stream(handle::Ptr{Cvoid}, place::Place, owned::Bool) =
    Stream(handle, place, owned, ReentrantLock(), Threads.Atomic{Int}(0), Threads.Atomic{Int}(0),
           Any[], 0, C_NULL)

# Roots are dropped in the order they were added, once the work that uses them
# has run: `_root_mark(s)` before waiting, `_finish_roots!(s, mark)` after.
_root_mark(s::Stream) = lock(() -> s.rootbase + length(s.roots), s.lock)

"""
    Stream(place)

Create a stream on a place (`dao_stream_create`): SIM streams run their work
on a worker thread of their own, CUDA streams are `CUstream`s, CPU streams run
each operation at once on the calling thread.
"""
function Stream(place::Place)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_stream_create(place, out))
    s = _new_stream(out[], place, true)
    finalizer(_finalize_stream, s)
    return s
end

"""
    wrap_stream(place, native::Ptr{Cvoid}) -> Stream

Adopt a caller's `CUstream` on a CUDA place (`dao_stream_wrap`). Closing the
`Stream` frees only the wrapper; keep the native stream alive until then.
CPU and SIM places have no native streams (`DAO_ERR_UNSUPPORTED`).
"""
function wrap_stream(place::Place, native::Ptr{Cvoid})
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_stream_wrap(place, native, out))
    s = _new_stream(out[], place, true)
    finalizer(_finalize_stream, s)
    return s
end

"""
    borrow_stream(handle::Ptr{Cvoid}) -> Stream

A `Stream` for a `dao_stream` handle that someone else owns (for example the
`stream` a kernel receives). It is never destroyed from Julia.
"""
function borrow_stream(handle::Ptr{Cvoid})
    place = Ref{Place}(Place(DAO_PLACE_CPU, 0))
    check(dao_stream_place(handle, place))
    return _new_stream(handle, place[], false)
end

_handle(::Nothing) = C_NULL
function _handle(s::Stream)
    s.handle == C_NULL && throw(ArgumentError("this Dao.Stream was destroyed"))
    return s.handle
end

"""    native(stream) -> Ptr{Cvoid}  — the `CUstream` of a CUDA stream, `C_NULL` elsewhere."""
function native(s::Stream)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_stream_native(_handle(s), out))
    return out[]
end

"""    place(stream) -> Place  — the place of a stream (`dao_stream_place`)."""
function place(s::Stream)
    out = Ref{Place}(Place(DAO_PLACE_CPU, 0))
    check(dao_stream_place(_handle(s), out))
    return out[]
end

"""
    isidle(stream) -> Bool

Whether all work queued on a stream has run, without waiting
(`dao_stream_query`). The default stream (`nothing`) is always idle.
"""
function isidle(s::Union{Stream,Nothing})
    idle = Ref{Cint}(0)
    check(dao_stream_query(_handle(s), idle))
    return idle[] != 0
end

# Everything queued on `s` by this binding before now can finish without
# Julia code that waits for this thread.
_stream_can_block(s::Stream) = s.pending[] == 0 && (_TASK_PENDING[] == 0 || isidle(s))

"""
    synchronize(stream)

Wait until all work queued on a stream has run (`dao_stream_synchronize`),
yielding to other tasks first while host functions in mode=:task are pending.
Rethrows, as a [`CallbackError`](@ref), what the stream's host functions
threw. `synchronize(nothing)` is a no-op (the default stream is synchronous).
"""
function synchronize(s::Stream)
    h = _handle(s)
    _pump_until(() -> _stream_can_block(s))
    mark = _root_mark(s)
    check(dao_stream_synchronize(h))
    _finish_roots!(s, mark)
    return nothing
end
synchronize(::Nothing) = (check(dao_stream_synchronize(C_NULL)); nothing)

# The roots added before `mark` belong to work that has run: drop them,
# report the errors of their host functions.
function _finish_roots!(s::Stream, mark::Int)
    errors = Any[]
    lock(s.lock) do
        k = clamp(mark - s.rootbase, 0, length(s.roots))
        for i in 1:k
            r = s.roots[i]
            if r isa HostFuncRecord && r.error !== nothing
                push!(errors, r.error)
            end
        end
        deleteat!(s.roots, 1:k)
        s.rootbase += k
    end
    isempty(errors) || throw(CallbackError(nothing, errors))
    return nothing
end

"""
    close(stream)
    destroy!(stream)

Wait for the stream's queued work and destroy it (`dao_stream_destroy`).
Refused (`ArgumentError`) while blocks allocated on the stream are live, and
for borrowed streams. Closing twice is a no-op.
"""
function destroy!(s::Stream)
    s.handle == C_NULL && return nothing
    s.owned || throw(ArgumentError("this Dao.Stream is borrowed; its owner destroys it"))
    n = s.deps[]
    n == 0 || throw(ArgumentError("$n live block(s) use this stream (allocated on it or " *
                                  "recorded with it); free them first: a block's stream must " *
                                  "outlive it"))
    _pump_until(() -> _stream_can_block(s))
    lock(s.lock) do
        if s.handle != C_NULL
            check(dao_stream_destroy(s.handle))
            s.handle = C_NULL
            _sem_free(s.sem)
            s.sem = C_NULL
        end
    end
    _finish_roots!(s, typemax(Int) ÷ 2)
    return nothing
end
Base.close(s::Stream) = destroy!(s)
Base.isopen(s::Stream) = s.handle != C_NULL

# (A borrowed stream is never destroyed here; the semaphore it may have got
# for host functions in mode=:task is then left to the process.)
function _finalize_stream(s::Stream)
    (s.handle == C_NULL || !s.owned || _EXITING[]) && return nothing
    # Blocks still use it, or destroying it could wait for a task-mode host
    # function that needs this very thread: try again at a later collection.
    (s.deps[] > 0 || s.pending[] > 0 || _TASK_PENDING[] > 0) &&
        return _retry_finalizer(_finalize_stream, s)
    _locked_or_retry(_finalize_stream, s, s.lock) do
        if s.handle != C_NULL
            dao_stream_destroy(s.handle)
            s.handle = C_NULL
            _sem_free(s.sem)
            s.sem = C_NULL
        end
    end
    return nothing
end

function Base.show(io::IO, s::Stream)
    print(io, "Dao.Stream(", s.place)
    s.handle == C_NULL ? print(io, ", destroyed") : print(io, ", ", s.handle)
    s.owned || print(io, ", borrowed")
    print(io, ")")
end

# --- host functions -------------------------------------------------------------

"""
    launch_host_func(f, stream; mode = :task)

Run `f()` in stream order, like `cuLaunchHostFunc` (`dao_launch_host_func`):
after all earlier work on the stream, and before later work starts. `stream`
is a [`Stream`](@ref) or `nothing` (the default stream: `f` runs before this
returns). See the notes on `mode` (`:task` or `:thread`) at the top of
streams.jl and in the README: in short, `:task` runs `f` as an ordinary Julia
task and is safe for any code; `:thread` runs it on libdao's worker thread
and allows only thread-safe code that does no I/O and never waits. On CPU
streams and the default stream `f` runs on the calling thread in both modes.
Exceptions from `f` are rethrown by the next `synchronize(stream)`.
"""
function launch_host_func(f, s::Union{Stream,Nothing}; mode::Symbol = :task)
    (mode === :task || mode === :thread) ||
        throw(ArgumentError("mode must be :task or :thread, not :$mode"))
    if s === nothing || s.place.kind == DAO_PLACE_CPU || mode === :thread
        return _launch_direct(f, s)
    end
    return _launch_task(f, s)
end

function _launch_direct(f, s::Union{Stream,Nothing})
    h = _handle(s)
    rec = HostFuncRecord(f)
    inline = s === nothing || s.place.kind == DAO_PLACE_CPU
    inline || lock(() -> push!(s.roots, rec), s.lock)
    st = GC.@preserve rec dao_launch_host_func(h, _HOST_TRAMPOLINE[], pointer_from_objref(rec))
    st == DAO_OK || throw(_dao_error(st))  # (a record left in the roots goes at the next synchronize)
    if inline && rec.error !== nothing
        throw(CallbackError(nothing, Any[rec.error]))
    end
    return nothing
end

function _launch_task(f, s::Stream)
    h = _handle(s)
    _UV_ASYNC_SEND[] == C_NULL &&
        error("Dao.jl: uv_async_send was not found in this process; use mode=:thread")
    sem = lock(s.lock) do
        s.sem == C_NULL && (s.sem = _sem_new())
        s.sem
    end
    rec = HostFuncRecord(f)
    # The condition's task is tied to this thread and runs only once this task
    # yields, so `cancelled` below is set before it can look.
    cond = Base.AsyncCondition(c -> _run_task_hostfunc(rec, s, c))
    Threads.atomic_add!(s.pending, 1)
    Threads.atomic_add!(_TASK_PENDING, 1)
    lock(s.lock) do
        push!(s.roots, rec)
        push!(s.roots, cond)  # (its waiting task keeps it alive too)
    end
    # libdao's thread calls uv_async_send(cond) and then waits on the
    # semaphore: plain C functions, no Julia code on that thread. (They
    # return int or void where libdao expects void(void *); the return value
    # is ignored, which every C calling convention Julia runs on allows.)
    st = dao_launch_host_func(h, _UV_ASYNC_SEND[], Base.unsafe_convert(Ptr{Cvoid}, cond))
    if st != DAO_OK
        err = _dao_error(st)
        rec.cancelled[] = 1
        close(cond)  # never signalled: its task ends without calling back
        _hostfunc_finished(rec, s)
        throw(err)
    end
    st = dao_launch_host_func(h, _SEM_WAIT[], sem)
    if st != DAO_OK
        err = _dao_error(st)
        rec.cancelled[] = 1  # the signal still comes; the task then only cleans up
        throw(err)
    end
    return nothing
end

function _run_task_hostfunc(rec::HostFuncRecord, s::Stream, cond)
    try
        if rec.cancelled[] == 0
            try
                rec.f()
            catch err
                rec.error = CapturedException(err, catch_backtrace())
            end
            _sem_post(s.sem)  # the stream's worker goes on with later work
        end
    finally
        _hostfunc_finished(rec, s)
        close(cond)
    end
    return nothing
end

function _hostfunc_finished(rec::HostFuncRecord, s::Stream)
    if Threads.atomic_cas!(rec.done, 0, 1) == 0
        Threads.atomic_sub!(s.pending, 1)
        Threads.atomic_sub!(_TASK_PENDING, 1)
    end
    return nothing
end

# --- events -----------------------------------------------------------------------

"""
    Event(place)

Create an event on a place (`dao_event_create`); a new event counts as
completed.
"""
function Event(place::Place)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(dao_event_create(place, out))
    e = Event(out[], place)
    finalizer(_finalize_event, e)
    return e
end

function _handle(e::Event)
    e.handle == C_NULL && throw(ArgumentError("this Dao.Event was destroyed"))
    return e.handle
end

"""
    record!(event, stream = nothing)

Record `event` at the current end of `stream` (`dao_event_record`); with
`nothing` it completes at once.
"""
function record!(e::Event, s::Union{Stream,Nothing} = nothing)
    check(dao_event_record(_handle(e), _handle(s)))
    return e
end

"""    isdone(event) -> Bool  — whether an event has completed (`dao_event_query`)."""
function isdone(e::Event)
    done = Ref{Cint}(0)
    check(dao_event_query(_handle(e), done))
    return done[] != 0
end

"""
    synchronize(event)

Wait until an event has completed (`dao_event_synchronize`), yielding first
while host functions in mode=:task are pending.
"""
function synchronize(e::Event)
    h = _handle(e)
    _pump_until(() -> _TASK_PENDING[] == 0 || isdone(e))
    check(dao_event_synchronize(h))
    return nothing
end

"""
    wait_event(stream, event)

Make later work on `stream` wait until `event` has completed
(`dao_stream_wait_event`); with `stream = nothing`, wait on this thread.
"""
function wait_event(s::Union{Stream,Nothing}, e::Event)
    eh = _handle(e)
    s === nothing && _pump_until(() -> _TASK_PENDING[] == 0 || isdone(e))
    check(dao_stream_wait_event(_handle(s), eh))
    return nothing
end

"""    close(event), destroy!(event)  — destroy an event (`dao_event_destroy`)."""
function destroy!(e::Event)
    e.handle == C_NULL && return nothing
    check(dao_event_destroy(e.handle))
    e.handle = C_NULL
    return nothing
end
Base.close(e::Event) = destroy!(e)

function _finalize_event(e::Event)
    (e.handle == C_NULL || _EXITING[]) && return nothing
    dao_event_destroy(e.handle)
    e.handle = C_NULL
    return nothing
end

Base.show(io::IO, e::Event) =
    print(io, "Dao.Event(", e.place, e.handle == C_NULL ? ", destroyed)" : ")")

# --- copies -------------------------------------------------------------------------

_voidptr(p::Ptr) = Ptr{Cvoid}(p)
function _voidptr(m::Block)
    (m.ptr == C_NULL && m.bytes > 0) && throw(ArgumentError("this Dao.Block was freed"))
    return m.ptr
end
_voidptr(a::HostArray) = Ptr{Cvoid}(a.ptr)
function _voidptr(a::Array{T}) where {T}
    _check_eltype(T)
    return Ptr{Cvoid}(pointer(a))
end
_voidptr(x) = throw(ArgumentError("cannot copy to or from a $(typeof(x)): pass a Dao.Block, " *
                                  "a Dao.HostArray, an Array of plain data or a Ptr"))

_nbytes(m::Block) = m.bytes
_nbytes(a::HostArray{T}) where {T} = length(a) * sizeof(T)
_nbytes(a::Array{T}) where {T} = (_check_eltype(T); length(a) * sizeof(T))
_nbytes(::Ptr) = typemax(Int)
_nbytes(x) = _voidptr(x)  # throws the ArgumentError above

"""
    memcpy!(dst, src, nbytes; stream = nothing)
    memcpy!(dst, src; stream = nothing)

Copy `nbytes` (default: the smaller size) from `src` to `dst` in stream order
(`dao_memcpy_async`). `dst` and `src` are [`Block`](@ref)s,
[`HostArray`](@ref)s, `Array`s of plain data, or pointers. With a stream,
the copy runs later: `dst` and `src` are kept alive until the next
`synchronize(stream)`, and must not be freed before then. On SIM and CPU
places both must be host-addressable.
"""
function memcpy!(dst, src, nbytes::Integer; stream::Union{Stream,Nothing} = nothing)
    nbytes >= 0 || throw(ArgumentError("nbytes must be >= 0, got $nbytes"))
    nbytes <= _nbytes(dst) || throw(ArgumentError("$nbytes bytes do not fit in the destination " *
                                                  "($(_nbytes(dst)) bytes)"))
    nbytes <= _nbytes(src) || throw(ArgumentError("the source has only $(_nbytes(src)) bytes, " *
                                                  "not $nbytes"))
    h = _handle(stream)
    GC.@preserve dst src begin
        pd = _voidptr(dst)
        ps = _voidptr(src)
        if stream !== nothing
            lock(stream.lock) do
                push!(stream.roots, dst)
                push!(stream.roots, src)
            end
        end
        check(dao_memcpy_async(pd, ps, nbytes, h))
    end
    return dst
end
memcpy!(dst, src; stream::Union{Stream,Nothing} = nothing) =
    memcpy!(dst, src, min(_nbytes(dst), _nbytes(src)); stream = stream)
