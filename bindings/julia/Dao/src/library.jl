# Finding and loading libdao, calling it without blocking the garbage
# collector, and the C function pointers that callbacks use.
#
# Everything here is decided in `__init__` (at load time, on the machine that
# runs the code), never while the package is precompiled.

"""
    Dao.libdao

Path of the libdao shared library this session loaded (`""` before the module
is initialised). Chosen by [`Dao.locate_libdao`](@ref).
"""
libdao = ""  # not `const`: `ccall((:f, libdao), ...)` reads it at run time (Julia ≥ 1.6)

const _LIBDAO_HANDLE = Ref{Ptr{Cvoid}}(C_NULL)

"""ABI major version this binding is written for (the `0` of `libdao.so.0`)."""
const LIBDAO_ABI_MAJOR = 0

"""Oldest `dao_version_number()` that has every function this binding wraps (0.1.0)."""
const LIBDAO_MIN_VERSION = 100

const _LIBRARY_NAMES = ("libdao.so.0", "libdao.so", "libdao.0.dylib", "libdao.dylib", "dao.dll",
                        "libdao.dll")

"""
    Dao.locate_libdao() -> String

The path of the libdao shared library to load, in this order:

1. `ENV["DAO_LIBRARY"]`: the full path of the library;
2. `ENV["DAO_LIB_DIR"]`: a directory holding `libdao.so.0` (or `libdao.so`);
3. the system library path: `libdao.so.0` as the dynamic loader finds it
   (`Libdl.find_library`, which honours `LD_LIBRARY_PATH` and `ldconfig`).

Throws an `ErrorException` that says what was tried when none is found.
"""
function locate_libdao()
    path = get(ENV, "DAO_LIBRARY", "")
    if !isempty(path)
        isfile(path) || error("Dao.jl: DAO_LIBRARY is set to \"$path\", which is not a file. " *
                              "Set it to the full path of libdao.so.0 (for example " *
                              "build/libdao.so.0 in a libdao build tree).")
        return abspath(path)
    end
    dir = get(ENV, "DAO_LIB_DIR", "")
    if !isempty(dir)
        for name in _LIBRARY_NAMES
            candidate = joinpath(dir, name)
            isfile(candidate) && return abspath(candidate)
        end
        error("Dao.jl: DAO_LIB_DIR is set to \"$dir\", but it holds none of " *
              join(_LIBRARY_NAMES, ", ") * ".")
    end
    name = Libdl.find_library(["libdao.so.0", "libdao"])
    if !isempty(name)
        found = Libdl.dlpath(name)
        return isempty(found) ? name : found
    end
    error("Dao.jl: libdao was not found. Install it (the libdao0 package, or " *
          "`cmake --install` of a build), or point Dao.jl at a build: set " *
          "DAO_LIBRARY=/path/to/libdao.so.0, or DAO_LIB_DIR=/path/to/dir, before `using Dao`.")
end

function _load_library()
    path = locate_libdao()
    handle = try
        Libdl.dlopen(path, Libdl.RTLD_NOW | Libdl.RTLD_GLOBAL)
    catch err
        error("Dao.jl: could not load libdao from \"$path\": " * sprint(showerror, err))
    end
    global libdao = path
    _LIBDAO_HANDLE[] = handle
    version = ccall((:dao_version_number, libdao), Cuint, ())
    if version ÷ 10000 != LIBDAO_ABI_MAJOR || version < LIBDAO_MIN_VERSION
        error("Dao.jl: \"$path\" is libdao $(unsafe_string(ccall((:dao_version_string, libdao), Ptr{UInt8}, ()))); " *
              "this binding needs libdao $(LIBDAO_ABI_MAJOR).x, at least " *
              "$(LIBDAO_MIN_VERSION ÷ 10000).$((LIBDAO_MIN_VERSION ÷ 100) % 100).$(LIBDAO_MIN_VERSION % 100).")
    end
    return nothing
end

# --- calls that may block ----------------------------------------------------
#
# A Julia thread that sits in a plain `ccall` cannot take part in a garbage
# collection, so every other thread that wants to collect waits for it. When
# the C call itself waits for a libdao thread that runs Julia code (a kernel
# on a tiered pool's executor, a host function in `mode=:thread`), that code
# may need to collect: both would wait for ever. `@gcsafe` marks the thread
# GC-safe for the duration of the call (as `@ccall gc_safe=true` does on Julia
# 1.12): the arguments are converted first, kept alive with `GC.@preserve`,
# and the C function touches no Julia object.
macro gcsafe(ex)
    (Meta.isexpr(ex, :call) && ex.args[1] === :ccall) ||
        throw(ArgumentError("@gcsafe expects ccall(...)"))
    length(ex.args) >= 4 || throw(ArgumentError("@gcsafe: malformed ccall"))
    fn, rettype, argtypes = ex.args[2], ex.args[3], ex.args[4]
    Meta.isexpr(argtypes, :tuple) ||
        throw(ArgumentError("@gcsafe: the argument types must be a literal tuple"))
    args = ex.args[5:end]
    length(args) == length(argtypes.args) ||
        throw(ArgumentError("@gcsafe: $(length(argtypes.args)) argument types but $(length(args)) arguments"))
    types = Any[esc(t) for t in argtypes.args]
    cvars = Any[gensym("cconv") for _ in args]
    uvars = Any[gensym("uconv") for _ in args]
    cconvs = Any[:($(cvars[i]) = Base.cconvert($(types[i]), $(esc(args[i])))) for i in eachindex(args)]
    uconvs = Any[:($(uvars[i]) = Base.unsafe_convert($(types[i]), $(cvars[i]))) for i in eachindex(args)]
    call = Expr(:call, :ccall, esc(fn), esc(rettype), Expr(:tuple, types...), uvars...)
    return quote
        $(cconvs...)
        GC.@preserve $(cvars...) begin
            $(uconvs...)
            local gc_state = ccall(:jl_gc_safe_enter, Int8, ())
            local ret = $call
            ccall(:jl_gc_safe_leave, Cvoid, (Int8,), gc_state)
            ret
        end
    end
end

# --- C function pointers for callbacks ---------------------------------------
#
# `@cfunction` pointers are made in `__init__`, in the running session (a
# pointer cached in a precompile image would be stale). The libuv and
# semaphore functions serve host functions in `mode=:task`: libdao's worker
# thread calls them directly, so no Julia code runs on that thread.

const _HOST_TRAMPOLINE = Ref{Ptr{Cvoid}}(C_NULL)
const _KERNEL_TRAMPOLINE = Ref{Ptr{Cvoid}}(C_NULL)
const _SCORE_TRAMPOLINE = Ref{Ptr{Cvoid}}(C_NULL)
const _UV_ASYNC_SEND = Ref{Ptr{Cvoid}}(C_NULL)

# Semaphore family: 0 none found, 1 libuv (uv_sem_*: retries on EINTR, any
# OS), 2 POSIX (sem_*).
const _SEM_KIND = Ref{Int}(0)
const _SEM_INIT = Ref{Ptr{Cvoid}}(C_NULL)
const _SEM_WAIT = Ref{Ptr{Cvoid}}(C_NULL)
const _SEM_POST = Ref{Ptr{Cvoid}}(C_NULL)
const _SEM_DESTROY = Ref{Ptr{Cvoid}}(C_NULL)

"""Bytes allocated for one semaphore (more than `uv_sem_t` or `sem_t` needs anywhere)."""
const _SEM_BYTES = 256

function _resolve_semaphores()
    try
        _SEM_INIT[] = cglobal(:uv_sem_init)
        _SEM_WAIT[] = cglobal(:uv_sem_wait)
        _SEM_POST[] = cglobal(:uv_sem_post)
        _SEM_DESTROY[] = cglobal(:uv_sem_destroy)
        _SEM_KIND[] = 1
        return
    catch
    end
    try
        _SEM_INIT[] = cglobal(:sem_init)
        _SEM_WAIT[] = cglobal(:sem_wait)
        _SEM_POST[] = cglobal(:sem_post)
        _SEM_DESTROY[] = cglobal(:sem_destroy)
        _SEM_KIND[] = 2
        return
    catch
    end
    _SEM_KIND[] = 0
    return
end

function _init_callbacks()
    _HOST_TRAMPOLINE[] = @cfunction(_host_trampoline, Cvoid, (Ptr{Cvoid},))
    _KERNEL_TRAMPOLINE[] = @cfunction(_kernel_trampoline, Cint,
                                      (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, Csize_t, Ptr{Ptr{Cvoid}},
                                       Csize_t, Ptr{Cvoid}))
    _SCORE_TRAMPOLINE[] = @cfunction(_score_trampoline, Cdouble,
                                     (Ptr{Cvoid}, Ptr{TensorAccessInfo}))
    _UV_ASYNC_SEND[] = try
        cglobal(:uv_async_send)
    catch
        C_NULL
    end
    _resolve_semaphores()
    return nothing
end

# Semaphores for host functions in mode=:task. A POSIX sem_wait may return
# early on a signal; uv_sem_wait (preferred) retries.
function _sem_new()
    _SEM_KIND[] == 0 &&
        error("Dao.jl: host functions in mode=:task need uv_sem_* or sem_*, and neither was " *
              "found in this process; use mode=:thread")
    p = Libc.malloc(_SEM_BYTES)
    p == C_NULL && throw(OutOfMemoryError())
    rc = if _SEM_KIND[] == 1
        ccall(_SEM_INIT[], Cint, (Ptr{Cvoid}, Cuint), p, 0)
    else
        ccall(_SEM_INIT[], Cint, (Ptr{Cvoid}, Cint, Cuint), p, 0, 0)
    end
    if rc != 0
        Libc.free(p)
        error("Dao.jl: could not create a semaphore (error $rc)")
    end
    return p
end

function _sem_post(p::Ptr{Cvoid})
    if _SEM_KIND[] == 1
        ccall(_SEM_POST[], Cvoid, (Ptr{Cvoid},), p)
    else
        ccall(_SEM_POST[], Cint, (Ptr{Cvoid},), p)
    end
    return nothing
end

function _sem_free(p::Ptr{Cvoid})
    p == C_NULL && return nothing
    if _SEM_KIND[] == 1
        ccall(_SEM_DESTROY[], Cvoid, (Ptr{Cvoid},), p)
    else
        ccall(_SEM_DESTROY[], Cint, (Ptr{Cvoid},), p)
    end
    Libc.free(p)
    return nothing
end
