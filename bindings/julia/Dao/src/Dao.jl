"""
    Dao

Julia binding of libdao, memory for heterogeneous machines (CPU, CUDA
devices, pinned and managed memory, simulated devices).

Two layers:

- the C API as it is: `Dao.dao_alloc`, `Dao.dao_stream_create`, ... (all 112
  functions, by their C names), the `DAO_*` constants, and Julia structs with
  the C layouts (`Place`, `AllocatorStats`, ...);
- a Julia layer: [`Place`](@ref) values ([`cpu`](@ref), [`sim`](@ref),
  [`cuda`](@ref)), [`Block`](@ref)s of memory usable as arrays
  ([`HostArray`](@ref)), [`Allocator`](@ref)s with statistics and snapshots,
  [`Stream`](@ref)s and [`Event`](@ref)s, host functions with Julia callbacks,
  [`RecyclePool`](@ref)s and [`TieredPool`](@ref)s, partitioned memory
  ([`Comm`](@ref), [`WholeMemory`](@ref)). Handles free their C
  object in a finalizer; failures throw [`DaoError`](@ref).

The library is found at load time: `ENV["DAO_LIBRARY"]` (full path),
`ENV["DAO_LIB_DIR"]`, else `libdao.so.0` on the system library path.
"""
module Dao

using Libdl

export DaoError, CallbackError, Place, cpu, cuda, cuda_pinned, cuda_managed, sim,
       device_count, memory_info, host_visible, used, used_internal, sim_configure!,
       sim_profile, sim_profile!, sim_cost, sim_reset_costs!,
       Block, alloc, free, usable_size, array, unsafe_array, HostArray,
       Allocator, place_allocator, stats, trim!, record_stream!, snapshot, snapshot_json,
       Snapshot, segments, blocks,
       Stream, Event, synchronize, isidle, isdone, record!, wait_event, memcpy!,
       launch_host_func, destroy!,
       RecyclePool, Buffer, Collection, acquire, submit!, retain, release, add!,
       TieredPool, Tensor, write!, retire!, set_score_callback!, link_stats,
       Comm, WholeMemory, local_comms, nranks, rank_place, barrier, supported, partition,
       entries, entry_rank, local_part, rank_part, whole_array, gather, gather!, scatter!,
       gather_collective, gather_collective!, scatter_collective!,
       store, load!,
       interop_functions, pluggable_malloc, pluggable_free, pluggable_record_stream,
       cupy_malloc, cupy_free, interop_stats,
       trace_start, trace_stop, trace_flush, trace_mark, trace_stats, set_oom_callback!

include("library.jl")
include("capi.jl")
include("capi_support.jl")
include("errors.jl")
include("types.jl")
include("places.jl")
include("lifetime.jl")
include("streams.jl")
include("memory.jl")
include("allocator.jl")
include("interop.jl")
include("trace.jl")
include("recycle.jl")
include("tiered.jl")
include("whole.jl")

function __init__()
    _load_library()
    _init_callbacks()
    # Finalizers do nothing once Julia is exiting: the process gives
    # everything back, and libdao's threads must not call into a Julia
    # runtime that is shutting down.
    atexit(() -> (_EXITING[] = true))
    return nothing
end

end # module Dao
