# The memory history (dao/trace.h, docs/recording.md): every allocator's
# events recorded to a JSON Lines file that `dao replay`, `dao plan` and
# `dao view` read, and the out-of-memory observer.

"""
    trace_start(path; options="")

`dao_trace_start`: records every allocator of the process to `path` from now
on; `options` as `"stacks=true,flush_ms=50"`.
"""
trace_start(path::AbstractString; options::AbstractString="") =
    check(dao_trace_start(path, options))

"""    trace_stop()  — `dao_trace_stop`: writes an `end` record and closes the file."""
trace_stop() = check(dao_trace_stop())

"""    trace_flush()  — `dao_trace_flush`: writes what was recorded so far."""
trace_flush() = check(dao_trace_flush())

"""    trace_mark(text)  — `dao_trace_mark`: a note in the history."""
trace_mark(text::AbstractString) = check(dao_trace_mark(text))

"""    trace_stats() -> TraceStats  — `dao_trace_get_stats`."""
function trace_stats()
    r = _sized(TraceStats)
    check(dao_trace_get_stats(r))
    return r[]
end

"""
    set_oom_callback!(a::Allocator, fn::Ptr{Cvoid}=C_NULL, user_data::Ptr{Cvoid}=C_NULL)

`dao_allocator_set_oom_callback`: `fn` is a C function pointer
(`@cfunction`) of type `dao_oom_callback`, called on the thread whose
allocation failed (which may be a thread Julia does not know: give a C
function, or one that only touches plain memory); `C_NULL` removes it.
`user_data` must stay valid while it is set.
"""
set_oom_callback!(a::Allocator, fn::Ptr{Cvoid}=C_NULL, user_data::Ptr{Cvoid}=C_NULL) =
    check(dao_allocator_set_oom_callback(_handle(a), fn, user_data))
