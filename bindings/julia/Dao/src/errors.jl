# Statuses and errors: every failed libdao call becomes a `DaoError` carrying
# the status and the message of `dao_last_error()`, copied at once.

"""
    DaoError(status, message)

A libdao call failed. `status` is the `dao_status` code as a `Cint` (codes
this binding does not know stay plain numbers); `message` is what
`dao_last_error()` said right after the failing call, on the same thread.

```julia
try
    Dao.Allocator(cpu(); strategy = "nope")
catch e
    e isa DaoError && e.status == Dao.DAO_ERR_INVALID_ARGUMENT  # true
end
```
"""
struct DaoError <: Exception
    status::Cint
    message::String
end

"""
    status_name(status) -> String

The C name of a status code, such as `"DAO_ERR_OUT_OF_MEMORY"`; `"status N"`
for a code this binding does not know.
"""
status_name(status::Integer) = get(_STATUS_NAMES, status, "status $(Int(status))")

"""
    status_string(status) -> String

libdao's short English text for a status (`dao_status_string`), such as
`"out of memory"`; `"unknown status"` for codes the library does not know.
"""
status_string(status::Integer) = unsafe_string(dao_status_string(Cint(status)))

"""
    last_error() -> String

The message of the last failed libdao call on this thread (`dao_last_error`).
The high-level functions already put it into the `DaoError` they throw.
"""
last_error() = unsafe_string(dao_last_error())

function Base.showerror(io::IO, e::DaoError)
    print(io, "DaoError: ", status_name(e.status), " (", status_string(e.status), ")")
    isempty(e.message) || print(io, ": ", e.message)
end

# The message is copied with finalizers held off on this thread: a finalizer
# that runs a failing libdao call would replace the thread-local message
# (and free the string being copied).
@noinline function _dao_error(status::Cint)
    GC.enable_finalizers(false)
    message = try
        p = dao_last_error()
        p == C_NULL ? "" : unsafe_string(p)
    finally
        GC.enable_finalizers(true)
    end
    return DaoError(status, message)
end

"""
    Dao.check(status)

Throw a [`DaoError`](@ref) when `status` is not `DAO_OK`. Call it right after
the C call that returned `status`, on the same thread.
"""
@inline check(status::Cint) = status == DAO_OK ? nothing : throw(_dao_error(status))

"""
    CallbackError(error, exceptions)

Julia code that libdao called back failed: a host function
([`launch_host_func`](@ref)), a tiered-pool kernel ([`submit!`](@ref)) or a
scoring function ([`set_score_callback!`](@ref)). `exceptions` holds each
captured exception with its backtrace (`CapturedException`); `error` is the
`DaoError` the C call reported as a consequence (a kernel that throws makes
the pool fail), or `nothing`.
"""
struct CallbackError <: Exception
    error::Union{Nothing,DaoError}
    exceptions::Vector{Any}
end

function Base.showerror(io::IO, e::CallbackError)
    print(io, "CallbackError: ", length(e.exceptions), " Julia callback(s) threw")
    if e.error !== nothing
        print(io, "; libdao reported: ")
        showerror(io, e.error)
    end
    for (i, ex) in enumerate(e.exceptions)
        print(io, "\n  [", i, "] ")
        showerror(io, ex)
    end
end
