!> The C API of libdao as Fortran sees it: constants, bind(C) structs,
!> callback interfaces, and one bind(C) interface for each of the 106 exported
!> functions of include/dao.h (82, and the 24 of dao/whole.h: partitioned
!> memory, including its three DAO_EXPERIMENTAL transport functions), under
!> the C name.
!>
!> Module `dao` re-exports all of this, so a program needs only `use dao`.
!> This layer is the C API and nothing more: functions return a status, take
!> handles as type(c_ptr) and strings as NUL-terminated character arrays
!> (`"caching"//c_null_char`), and they do not touch dao_last_status() /
!> dao_last_message() of the Fortran layer (use dao_last_error() here).
!> Thread safety and ownership are those of the C functions (see the headers).
!>
!> Conventions of the translation:
!> - enums and status codes: integer(c_int) named constants with the C values;
!> - unsigned 64-bit fields (uint64_t, size_t) are integer(c_int64_t) /
!>   integer(c_size_t), signed in Fortran: UINT64_MAX reads as -1
!>   (DAO_UINT64_MAX);
!> - `T *out` parameters are passed by reference as intent(inout), not
!>   intent(out): C leaves them unchanged on failure, and intent(out) would
!>   let the compiler drop the value they held before the call. Those that C
!>   documents as "may be NULL" are OPTIONAL (absent passes NULL, TS 29113);
!> - `const char *` results are type(c_ptr): dao_string() makes a Fortran
!>   string of one.
!> - Fortran names ignore case, so C names that differ from a function's
!>   name only in case are renamed: the place kinds DAO_PLACE_CPU ...
!>   DAO_PLACE_SIM are DAO_PLACE_KIND_CPU ... DAO_PLACE_KIND_SIM (the
!>   functions dao_place_cpu() ... keep their names), and the macros
!>   DAO_VERSION_NUMBER / DAO_VERSION_STRING are DAO_MODULE_VERSION_NUMBER /
!>   DAO_MODULE_VERSION_STRING.
module dao_c
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_intptr_t, c_size_t, c_double, &
                                          c_char, c_ptr, c_funptr, c_null_ptr, &
                                          c_null_funptr
  implicit none
  private

  include "dao_version.inc"

  ! --- status.h: the numbers are part of the ABI ---
  integer(c_int), parameter, public :: DAO_OK = 0
  integer(c_int), parameter, public :: DAO_ERR_INVALID_ARGUMENT = 1
  integer(c_int), parameter, public :: DAO_ERR_OUT_OF_MEMORY = 2
  integer(c_int), parameter, public :: DAO_ERR_INVALID_POINTER = 3
  integer(c_int), parameter, public :: DAO_ERR_UNSUPPORTED = 4
  integer(c_int), parameter, public :: DAO_ERR_NO_DEVICE = 5
  integer(c_int), parameter, public :: DAO_ERR_TIMEOUT = 6
  integer(c_int), parameter, public :: DAO_ERR_CLOSED = 7
  integer(c_int), parameter, public :: DAO_ERR_BACKEND = 8
  integer(c_int), parameter, public :: DAO_ERR_INTERNAL = 9
  integer(c_int), parameter, public :: DAO_ERR_INVALID_STATE = 10
  integer(c_int), parameter, public :: DAO_ERR_BUSY = 11
  integer(c_int), parameter, public :: DAO_ERR_NOT_FOUND = 12
  !> One past the largest code of this version (not a status).
  integer(c_int), parameter, public :: DAO_STATUS_END_ = 13

  ! --- place.h ---
  integer(c_int), parameter, public :: DAO_PLACE_KIND_CPU = 0
  integer(c_int), parameter, public :: DAO_PLACE_KIND_CUDA = 1
  integer(c_int), parameter, public :: DAO_PLACE_KIND_CUDA_PINNED = 2
  integer(c_int), parameter, public :: DAO_PLACE_KIND_CUDA_MANAGED = 3
  integer(c_int), parameter, public :: DAO_PLACE_KIND_SIM = 4
  integer(c_int), parameter, public :: DAO_PLACE_KIND_COUNT = 5

  ! --- sim.h ---
  integer(c_int), parameter, public :: DAO_SIM_MAX_DEVICES = 64

  ! --- allocator.h ---
  integer(c_int), parameter, public :: DAO_STAT_ALLOCATED_BYTES = 0
  integer(c_int), parameter, public :: DAO_STAT_ALLOCATED_BLOCKS = 1
  integer(c_int), parameter, public :: DAO_STAT_RESERVED_BYTES = 2
  integer(c_int), parameter, public :: DAO_STAT_RESERVED_SEGMENTS = 3
  integer(c_int), parameter, public :: DAO_STAT_ACTIVE_BYTES = 4
  integer(c_int), parameter, public :: DAO_STAT_ACTIVE_BLOCKS = 5
  integer(c_int), parameter, public :: DAO_STAT_INACTIVE_SPLIT_BYTES = 6
  integer(c_int), parameter, public :: DAO_STAT_INACTIVE_SPLIT_BLOCKS = 7
  integer(c_int), parameter, public :: DAO_STAT_REQUESTED_BYTES = 8
  integer(c_int), parameter, public :: DAO_STAT_METRIC_COUNT = 9
  integer(c_int), parameter, public :: DAO_STAT_POOL_ALL = 0
  integer(c_int), parameter, public :: DAO_STAT_POOL_SMALL = 1
  integer(c_int), parameter, public :: DAO_STAT_POOL_LARGE = 2
  integer(c_int), parameter, public :: DAO_STAT_POOL_COUNT = 3
  integer(c_int), parameter, public :: DAO_BLOCK_FREE = 0
  integer(c_int), parameter, public :: DAO_BLOCK_ALLOCATED = 1
  integer(c_int), parameter, public :: DAO_BLOCK_PENDING_FREE = 2

  ! --- stream.h ---
  !> The default stream of any place (C: DAO_STREAM_DEFAULT, a NULL handle).
  type(c_ptr), parameter, public :: DAO_STREAM_DEFAULT = c_null_ptr

  ! --- recycle.h ---
  integer(c_int), parameter, public :: DAO_RECYCLE_MAX_DIMS = 8

  ! --- tiered.h ---
  integer(c_int), parameter, public :: DAO_TENSOR_UNINITIALIZED = 0
  integer(c_int), parameter, public :: DAO_TENSOR_ON_DEVICE = 1
  integer(c_int), parameter, public :: DAO_TENSOR_ON_HOST = 2
  integer(c_int), parameter, public :: DAO_TENSOR_IN_TRANSIT = 3

  ! --- whole.h ---
  integer(c_int), parameter, public :: DAO_COMM_LOCAL_MAX_RANKS = 1024
  integer(c_int), parameter, public :: DAO_WHOLE_CONTINUOUS = 0
  integer(c_int), parameter, public :: DAO_WHOLE_CHUNKED = 1
  integer(c_int), parameter, public :: DAO_WHOLE_DISTRIBUTED = 2
  integer(c_int), parameter, public :: DAO_WHOLE_DEVICE = 0
  integer(c_int), parameter, public :: DAO_WHOLE_HOST = 1

  !> UINT64_MAX as it reads in a signed 64-bit Fortran integer: the
  !> "no next use" of dao_tensor_access_info%next_use and the "not submitted"
  !> of dao_buffer_sequence().
  integer(c_int64_t), parameter, public :: DAO_UINT64_MAX = -1_c_int64_t

  !> A place: a kind (DAO_PLACE_*) and a device index (C: dao_place).
  type, bind(C), public :: dao_place
    integer(c_int) :: kind = DAO_PLACE_KIND_CPU
    integer(c_int) :: device = 0
  end type dao_place

  !> Statistics of an allocator (C: dao_allocator_stats). Set struct_size to
  !> c_sizeof(stats) before dao_allocator_get_stats(); the Fortran layer
  !> (dao_allocator%get_stats) does it for you.
  type, bind(C), public :: dao_allocator_stats
    integer(c_size_t) :: struct_size = 0
    integer(c_int64_t) :: allocated_bytes = 0
    integer(c_int64_t) :: peak_allocated_bytes = 0
    integer(c_int64_t) :: requested_bytes = 0
    integer(c_int64_t) :: reserved_bytes = 0
    integer(c_int64_t) :: peak_reserved_bytes = 0
    integer(c_int64_t) :: live_blocks = 0
    integer(c_int64_t) :: alloc_count = 0
    integer(c_int64_t) :: free_count = 0
    integer(c_int64_t) :: failed_alloc_count = 0
    integer(c_int64_t) :: system_alloc_count = 0
    integer(c_int64_t) :: system_free_count = 0
    integer(c_int64_t) :: largest_free_block = 0
    integer(c_int64_t) :: alloc_retry_count = 0
  end type dao_allocator_stats

  !> One detailed statistic (C: dao_stat).
  type, bind(C), public :: dao_stat
    integer(c_int64_t) :: current = 0
    integer(c_int64_t) :: peak = 0
    integer(c_int64_t) :: allocated = 0
    integer(c_int64_t) :: freed = 0
  end type dao_stat

  !> A segment of a snapshot (C: dao_segment_info; set struct_size).
  type, bind(C), public :: dao_segment_info
    integer(c_size_t) :: struct_size = 0
    integer(c_intptr_t) :: address = 0
    integer(c_size_t) :: size = 0
    integer(c_size_t) :: mapped_bytes = 0
    integer(c_int) :: pool = DAO_STAT_POOL_ALL
    type(c_ptr) :: stream = c_null_ptr
    integer(c_int) :: expandable = 0
    integer(c_size_t) :: block_count = 0
  end type dao_segment_info

  !> A block of a snapshot (C: dao_block_info; set struct_size).
  type, bind(C), public :: dao_block_info
    integer(c_size_t) :: struct_size = 0
    integer(c_intptr_t) :: address = 0
    integer(c_size_t) :: size = 0
    integer(c_size_t) :: requested_size = 0
    integer(c_int) :: state = DAO_BLOCK_FREE
    type(c_ptr) :: stream = c_null_ptr
  end type dao_block_info

  !> Statistics of a recycle pool (C: dao_recycle_stats; set struct_size).
  type, bind(C), public :: dao_recycle_stats
    integer(c_size_t) :: struct_size = 0
    integer(c_int64_t) :: created = 0
    integer(c_int64_t) :: free = 0
    integer(c_int64_t) :: queued = 0
    integer(c_int64_t) :: held = 0
    integer(c_int64_t) :: peak_free = 0
    integer(c_int64_t) :: peak_queued = 0
    integer(c_int64_t) :: peak_held = 0
    integer(c_int64_t) :: acquired = 0
    integer(c_int64_t) :: submitted = 0
    integer(c_int64_t) :: taken = 0
    integer(c_int64_t) :: acquire_waits = 0
    integer(c_int64_t) :: take_waits = 0
    integer(c_int64_t) :: acquire_wait_ns = 0
    integer(c_int64_t) :: take_wait_ns = 0
    integer(c_int64_t) :: timeouts = 0
  end type dao_recycle_stats

  !> What a scoring callback learns of one eviction candidate
  !> (C: dao_tensor_access_info; filled by libdao).
  type, bind(C), public :: dao_tensor_access_info
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: tensor = c_null_ptr
    integer(c_size_t) :: bytes = 0
    integer(c_int64_t) :: now = 0
    integer(c_int64_t) :: last_use = 0
    integer(c_int64_t) :: next_use = 0
    integer(c_int64_t) :: queued_uses = 0
    integer(c_int) :: dirty = 0
  end type dao_tensor_access_info

  !> Statistics of a tiered pool (C: dao_tiered_stats; set struct_size).
  type, bind(C), public :: dao_tiered_stats
    integer(c_size_t) :: struct_size = 0
    integer(c_int64_t) :: kernels_submitted = 0
    integer(c_int64_t) :: kernels_run = 0
    integer(c_int64_t) :: evictions = 0
    integer(c_int64_t) :: bytes_evicted = 0
    integer(c_int64_t) :: fetches = 0
    integer(c_int64_t) :: bytes_fetched = 0
    integer(c_int64_t) :: prefetches = 0
    integer(c_int64_t) :: prefetches_in_time = 0
    integer(c_int64_t) :: stall_ns = 0
    integer(c_int64_t) :: device_bytes = 0
    integer(c_int64_t) :: peak_device_bytes = 0
    integer(c_int64_t) :: host_bytes = 0
    integer(c_int64_t) :: peak_host_bytes = 0
    integer(c_int64_t) :: tensors_live = 0
  end type dao_tiered_stats

  !> What a whole memory object is made of (C: dao_whole_desc), for
  !> dao_whole_create(). Set struct_size to c_sizeof(desc); type is a
  !> DAO_WHOLE_CONTINUOUS/CHUNKED/DISTRIBUTED, location DAO_WHOLE_DEVICE/HOST.
  type, bind(C), public :: dao_whole_desc
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: type = DAO_WHOLE_CONTINUOUS
    integer(c_int) :: location = DAO_WHOLE_DEVICE
    integer(c_size_t) :: total_size = 0
    integer(c_size_t) :: entry_size = 0
  end type dao_whole_desc

  !> The entries and bytes one rank owns (C: dao_whole_range; set
  !> struct_size). Ranks and entry indices count from 0, as in C.
  type, bind(C), public :: dao_whole_range
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: rank = 0
    integer(c_size_t) :: first_entry = 0
    integer(c_size_t) :: entry_count = 0
    integer(c_size_t) :: byte_offset = 0
    integer(c_size_t) :: byte_size = 0
  end type dao_whole_range

  !> A whole memory object seen from one rank (C: dao_whole_info; set
  !> struct_size).
  type, bind(C), public :: dao_whole_info
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: type = DAO_WHOLE_CONTINUOUS
    integer(c_int) :: location = DAO_WHOLE_DEVICE
    integer(c_size_t) :: total_size = 0
    integer(c_size_t) :: entry_size = 0
    integer(c_size_t) :: entry_count = 0
    integer(c_int) :: rank = 0
    integer(c_int) :: size = 0
    type(dao_place) :: place
  end type dao_whole_info

  !> A communicator seen from one rank (C: dao_comm_info; set struct_size).
  !> transport is a static C string ("in-process" or "mpi"): dao_string().
  type, bind(C), public :: dao_comm_info
    integer(c_size_t) :: struct_size = 0
    integer(c_int) :: rank = 0
    integer(c_int) :: size = 0
    type(dao_place) :: place
    type(c_ptr) :: transport = c_null_ptr
    integer(c_int) :: shares_address_space = 0
    integer(c_int) :: shares_host_memory = 0
  end type dao_comm_info

  !> A communication library's operations (C: dao_comm_transport, declared
  !> behind DAO_EXPERIMENTAL: the layout may change without a SONAME bump),
  !> for dao_comm_create_transport(). Every operation is a c_funloc of a
  !> bind(C) procedure with the C signature of whole.h (or c_null_funptr
  !> where whole.h says optional). Only the bind(C) layer has it: the Fortran
  !> layer has no wrapper for transports.
  type, bind(C), public :: dao_comm_transport
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: self = c_null_ptr
    integer(c_int) :: rank = 0
    integer(c_int) :: size = 0
    type(c_ptr) :: name = c_null_ptr
    integer(c_int) :: shares_host_memory = 0
    type(c_funptr) :: last_error = c_null_funptr
    type(c_funptr) :: barrier = c_null_funptr
    type(c_funptr) :: allgather = c_null_funptr
    type(c_funptr) :: window_create = c_null_funptr
    type(c_funptr) :: window_allocate = c_null_funptr
    type(c_funptr) :: window_get = c_null_funptr
    type(c_funptr) :: window_put = c_null_funptr
    type(c_funptr) :: window_complete = c_null_funptr
    type(c_funptr) :: window_free = c_null_funptr
    type(c_funptr) :: shared_allocate = c_null_funptr
    type(c_funptr) :: shared_query = c_null_funptr
    type(c_funptr) :: shared_free = c_null_funptr
    type(c_funptr) :: destroy = c_null_funptr
    type(c_funptr) :: window_get_many = c_null_funptr
    type(c_funptr) :: window_put_many = c_null_funptr
  end type dao_comm_transport

  ! --- callbacks: write a bind(C) procedure with one of these interfaces
  !     and pass it (the Fortran layer) or c_funloc of it (this layer). ---
  public :: dao_host_fn, dao_kernel_fn, dao_score_fn
  abstract interface
    !> A host function run in stream order (C: dao_host_fn).
    subroutine dao_host_fn(user_data) bind(C)
      import :: c_ptr
      type(c_ptr), value :: user_data
    end subroutine dao_host_fn

    !> A kernel of a tiered pool (C: dao_kernel_fn). inputs and outputs
    !> point to input_count and output_count device pointers (void *const *);
    !> dao_kernel_arg() reads one. Return DAO_OK, or another status to fail
    !> the pool. Runs on the executor thread.
    function dao_kernel_fn(user_data, inputs, input_count, outputs, output_count, stream) &
        bind(C) result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: user_data
      type(c_ptr), value :: inputs
      integer(c_size_t), value :: input_count
      type(c_ptr), value :: outputs
      integer(c_size_t), value :: output_count
      type(c_ptr), value :: stream
      integer(c_int) :: status
    end function dao_kernel_fn

    !> Scores an eviction candidate (C: dao_score_fn), policy `callback`.
    !> Runs on the executor thread; must not call into the pool.
    function dao_score_fn(user_data, info) bind(C) result(score)
      import :: c_ptr, c_double, dao_tensor_access_info
      type(c_ptr), value :: user_data
      type(dao_tensor_access_info), intent(in) :: info
      real(c_double) :: score
    end function dao_score_fn
  end interface

  ! --- the 106 functions, by header ---
  ! version.h (2)
  public :: dao_version_number, dao_version_string
  ! status.h (2)
  public :: dao_status_string, dao_last_error
  ! place.h (9)
  public :: dao_place_cpu, dao_place_cuda, dao_place_cuda_pinned, dao_place_cuda_managed, &
            dao_place_sim, dao_place_device_count, dao_place_memory_info, dao_place_kind_name, &
            dao_place_backend_description
  ! memory.h (5)
  public :: dao_alloc, dao_free, dao_used, dao_place_allocator, dao_place_default_config
  ! sim.h (1)
  public :: dao_sim_configure
  ! stream.h (15)
  public :: dao_stream_create, dao_stream_wrap, dao_stream_native, dao_stream_place, &
            dao_stream_synchronize, dao_stream_query, dao_stream_wait_event, dao_stream_destroy, &
            dao_event_create, dao_event_record, dao_event_query, dao_event_synchronize, &
            dao_event_destroy, dao_memcpy_async, dao_launch_host_func
  ! allocator.h (18)
  public :: dao_allocator_create, dao_allocator_alloc, dao_allocator_free, &
            dao_allocator_usable_size, dao_allocator_trim, dao_allocator_get_stats, &
            dao_allocator_reset_peak_stats, dao_allocator_info, dao_allocator_get_stat, &
            dao_allocator_reset_accumulated_stats, dao_allocator_record_stream, &
            dao_allocator_snapshot, dao_snapshot_segment_count, dao_snapshot_segment, &
            dao_snapshot_block, dao_snapshot_destroy, dao_allocator_snapshot_json, &
            dao_allocator_destroy
  ! recycle.h (19)
  public :: dao_recycle_create, dao_recycle_acquire, dao_recycle_submit, dao_recycle_take, &
            dao_recycle_close, dao_recycle_get_stats, dao_recycle_destroy, dao_buffer_retain, &
            dao_buffer_release, dao_buffer_data, dao_buffer_shape, dao_buffer_size, &
            dao_buffer_place, dao_buffer_sequence, dao_collection_create, dao_collection_add, &
            dao_collection_find, dao_collection_close, dao_collection_destroy
  ! tiered.h (11)
  public :: dao_tiered_create, dao_tiered_set_score_callback, dao_tensor_create, &
            dao_tensor_write, dao_tensor_read, dao_tensor_get_state, dao_tensor_release, &
            dao_kernel_submit, dao_tiered_synchronize, dao_tiered_get_stats, dao_tiered_destroy
  ! whole.h (24; the last two, and struct dao_comm_transport, are DAO_EXPERIMENTAL)
  public :: dao_comm_create_local, dao_comm_destroy, dao_comm_rank, dao_comm_size, &
            dao_comm_rank_place, dao_comm_get_info, dao_comm_barrier, dao_whole_type_name, &
            dao_whole_location_name, dao_whole_supported, dao_whole_create, dao_whole_destroy, &
            dao_whole_get_info, dao_whole_get_partition, dao_whole_entry_rank, &
            dao_whole_get_local, dao_whole_get_rank_pointer, dao_whole_get_base, &
            dao_whole_gather, dao_whole_scatter, dao_whole_store, dao_whole_load, &
            dao_comm_create_transport, dao_comm_transport_error

  interface
    ! ---------------------------------------------------------------- version.h
    function dao_version_number() bind(C, name="dao_version_number") result(r)
      import :: c_int
      integer(c_int) :: r
    end function dao_version_number

    function dao_version_string() bind(C, name="dao_version_string") result(r)
      import :: c_ptr
      type(c_ptr) :: r
    end function dao_version_string

    ! ----------------------------------------------------------------- status.h
    function dao_status_string(status) bind(C, name="dao_status_string") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: status
      type(c_ptr) :: r
    end function dao_status_string

    function dao_last_error() bind(C, name="dao_last_error") result(r)
      import :: c_ptr
      type(c_ptr) :: r
    end function dao_last_error

    ! ------------------------------------------------------------------ place.h
    function dao_place_cpu() bind(C, name="dao_place_cpu") result(r)
      import :: dao_place
      type(dao_place) :: r
    end function dao_place_cpu

    function dao_place_cuda(device) bind(C, name="dao_place_cuda") result(r)
      import :: c_int, dao_place
      integer(c_int), value :: device
      type(dao_place) :: r
    end function dao_place_cuda

    function dao_place_cuda_pinned() bind(C, name="dao_place_cuda_pinned") result(r)
      import :: dao_place
      type(dao_place) :: r
    end function dao_place_cuda_pinned

    function dao_place_cuda_managed(device) bind(C, name="dao_place_cuda_managed") result(r)
      import :: c_int, dao_place
      integer(c_int), value :: device
      type(dao_place) :: r
    end function dao_place_cuda_managed

    function dao_place_sim(device) bind(C, name="dao_place_sim") result(r)
      import :: c_int, dao_place
      integer(c_int), value :: device
      type(dao_place) :: r
    end function dao_place_sim

    function dao_place_device_count(kind, count) bind(C, name="dao_place_device_count") result(r)
      import :: c_int
      integer(c_int), value :: kind
      integer(c_int), intent(inout) :: count
      integer(c_int) :: r
    end function dao_place_device_count

    function dao_place_memory_info(place, free_bytes, total_bytes) &
        bind(C, name="dao_place_memory_info") result(r)
      import :: c_int, c_size_t, dao_place
      type(dao_place), value :: place
      integer(c_size_t), intent(inout), optional :: free_bytes
      integer(c_size_t), intent(inout), optional :: total_bytes
      integer(c_int) :: r
    end function dao_place_memory_info

    function dao_place_kind_name(kind) bind(C, name="dao_place_kind_name") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: kind
      type(c_ptr) :: r
    end function dao_place_kind_name

    function dao_place_backend_description(kind) &
        bind(C, name="dao_place_backend_description") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: kind
      type(c_ptr) :: r
    end function dao_place_backend_description

    ! ----------------------------------------------------------------- memory.h
    function dao_alloc(place, size, ptr) bind(C, name="dao_alloc") result(r)
      import :: c_int, c_size_t, c_ptr, dao_place
      type(dao_place), value :: place
      integer(c_size_t), value :: size
      type(c_ptr), intent(inout) :: ptr
      integer(c_int) :: r
    end function dao_alloc

    function dao_free(place, ptr) bind(C, name="dao_free") result(r)
      import :: c_int, c_ptr, dao_place
      type(dao_place), value :: place
      type(c_ptr), value :: ptr
      integer(c_int) :: r
    end function dao_free

    function dao_used(place, bytes) bind(C, name="dao_used") result(r)
      import :: c_int, c_size_t, dao_place
      type(dao_place), value :: place
      integer(c_size_t), intent(inout) :: bytes
      integer(c_int) :: r
    end function dao_used

    function dao_place_allocator(place, out) bind(C, name="dao_place_allocator") result(r)
      import :: c_int, c_ptr, dao_place
      type(dao_place), value :: place
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_place_allocator

    function dao_place_default_config(kind, strategy, config) &
        bind(C, name="dao_place_default_config") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: kind
      type(c_ptr), intent(inout), optional :: strategy
      type(c_ptr), intent(inout), optional :: config
      integer(c_int) :: r
    end function dao_place_default_config

    ! -------------------------------------------------------------------- sim.h
    !> capacities: count sizes in bytes, or absent for 1 GiB each.
    function dao_sim_configure(count, capacities) bind(C, name="dao_sim_configure") result(r)
      import :: c_int, c_size_t
      integer(c_int), value :: count
      integer(c_size_t), dimension(*), intent(in), optional :: capacities
      integer(c_int) :: r
    end function dao_sim_configure

    ! ----------------------------------------------------------------- stream.h
    function dao_stream_create(place, out) bind(C, name="dao_stream_create") result(r)
      import :: c_int, c_ptr, dao_place
      type(dao_place), value :: place
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_stream_create

    function dao_stream_wrap(place, native, out) bind(C, name="dao_stream_wrap") result(r)
      import :: c_int, c_ptr, dao_place
      type(dao_place), value :: place
      type(c_ptr), value :: native
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_stream_wrap

    function dao_stream_native(stream, native) bind(C, name="dao_stream_native") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
      type(c_ptr), intent(inout) :: native
      integer(c_int) :: r
    end function dao_stream_native

    function dao_stream_place(stream, place) bind(C, name="dao_stream_place") result(r)
      import :: c_int, c_ptr, dao_place
      type(c_ptr), value :: stream
      type(dao_place), intent(inout) :: place
      integer(c_int) :: r
    end function dao_stream_place

    function dao_stream_synchronize(stream) bind(C, name="dao_stream_synchronize") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
      integer(c_int) :: r
    end function dao_stream_synchronize

    function dao_stream_query(stream, idle) bind(C, name="dao_stream_query") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
      integer(c_int), intent(inout) :: idle
      integer(c_int) :: r
    end function dao_stream_query

    function dao_stream_wait_event(stream, event) bind(C, name="dao_stream_wait_event") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
      type(c_ptr), value :: event
      integer(c_int) :: r
    end function dao_stream_wait_event

    function dao_stream_destroy(stream) bind(C, name="dao_stream_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: stream
      integer(c_int) :: r
    end function dao_stream_destroy

    function dao_event_create(place, out) bind(C, name="dao_event_create") result(r)
      import :: c_int, c_ptr, dao_place
      type(dao_place), value :: place
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_event_create

    function dao_event_record(event, stream) bind(C, name="dao_event_record") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: event
      type(c_ptr), value :: stream
      integer(c_int) :: r
    end function dao_event_record

    function dao_event_query(event, done) bind(C, name="dao_event_query") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: event
      integer(c_int), intent(inout) :: done
      integer(c_int) :: r
    end function dao_event_query

    function dao_event_synchronize(event) bind(C, name="dao_event_synchronize") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: event
      integer(c_int) :: r
    end function dao_event_synchronize

    function dao_event_destroy(event) bind(C, name="dao_event_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: event
      integer(c_int) :: r
    end function dao_event_destroy

    function dao_memcpy_async(dst, src, bytes, stream) bind(C, name="dao_memcpy_async") result(r)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: dst
      type(c_ptr), value :: src
      integer(c_size_t), value :: bytes
      type(c_ptr), value :: stream
      integer(c_int) :: r
    end function dao_memcpy_async

    !> fn: c_funloc of a procedure with interface dao_host_fn.
    function dao_launch_host_func(stream, fn, user_data) &
        bind(C, name="dao_launch_host_func") result(r)
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: stream
      type(c_funptr), value :: fn
      type(c_ptr), value :: user_data
      integer(c_int) :: r
    end function dao_launch_host_func

    ! -------------------------------------------------------------- allocator.h
    !> strategy, config: NUL-terminated; absent for NULL (the place's default
    !> strategy, the strategy's default config).
    function dao_allocator_create(place, strategy, config, out) &
        bind(C, name="dao_allocator_create") result(r)
      import :: c_int, c_char, c_ptr, dao_place
      type(dao_place), value :: place
      character(kind=c_char), dimension(*), intent(in), optional :: strategy
      character(kind=c_char), dimension(*), intent(in), optional :: config
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_allocator_create

    function dao_allocator_alloc(a, size, stream, ptr) bind(C, name="dao_allocator_alloc") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: a
      integer(c_size_t), value :: size
      type(c_ptr), value :: stream
      type(c_ptr), intent(inout) :: ptr
      integer(c_int) :: r
    end function dao_allocator_alloc

    function dao_allocator_free(a, ptr) bind(C, name="dao_allocator_free") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), value :: ptr
      integer(c_int) :: r
    end function dao_allocator_free

    function dao_allocator_usable_size(a, ptr, size) &
        bind(C, name="dao_allocator_usable_size") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), value :: ptr
      integer(c_size_t), intent(inout) :: size
      integer(c_int) :: r
    end function dao_allocator_usable_size

    function dao_allocator_trim(a, released) bind(C, name="dao_allocator_trim") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: a
      integer(c_size_t), intent(inout), optional :: released
      integer(c_int) :: r
    end function dao_allocator_trim

    function dao_allocator_get_stats(a, stats) bind(C, name="dao_allocator_get_stats") result(r)
      import :: c_int, c_ptr, dao_allocator_stats
      type(c_ptr), value :: a
      type(dao_allocator_stats), intent(inout) :: stats
      integer(c_int) :: r
    end function dao_allocator_get_stats

    function dao_allocator_reset_peak_stats(a) &
        bind(C, name="dao_allocator_reset_peak_stats") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int) :: r
    end function dao_allocator_reset_peak_stats

    function dao_allocator_info(a, place, strategy, config) &
        bind(C, name="dao_allocator_info") result(r)
      import :: c_int, c_ptr, dao_place
      type(c_ptr), value :: a
      type(dao_place), intent(inout), optional :: place
      type(c_ptr), intent(inout), optional :: strategy
      type(c_ptr), intent(inout), optional :: config
      integer(c_int) :: r
    end function dao_allocator_info

    function dao_allocator_get_stat(a, metric, pool, out) &
        bind(C, name="dao_allocator_get_stat") result(r)
      import :: c_int, c_ptr, dao_stat
      type(c_ptr), value :: a
      integer(c_int), value :: metric
      integer(c_int), value :: pool
      type(dao_stat), intent(inout) :: out
      integer(c_int) :: r
    end function dao_allocator_get_stat

    function dao_allocator_reset_accumulated_stats(a) &
        bind(C, name="dao_allocator_reset_accumulated_stats") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int) :: r
    end function dao_allocator_reset_accumulated_stats

    function dao_allocator_record_stream(a, ptr, stream) &
        bind(C, name="dao_allocator_record_stream") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), value :: ptr
      type(c_ptr), value :: stream
      integer(c_int) :: r
    end function dao_allocator_record_stream

    function dao_allocator_snapshot(a, out) bind(C, name="dao_allocator_snapshot") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_allocator_snapshot

    function dao_snapshot_segment_count(snapshot, count) &
        bind(C, name="dao_snapshot_segment_count") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: snapshot
      integer(c_size_t), intent(inout) :: count
      integer(c_int) :: r
    end function dao_snapshot_segment_count

    !> index: 0-based, as in C.
    function dao_snapshot_segment(snapshot, index, info) &
        bind(C, name="dao_snapshot_segment") result(r)
      import :: c_int, c_size_t, c_ptr, dao_segment_info
      type(c_ptr), value :: snapshot
      integer(c_size_t), value :: index
      type(dao_segment_info), intent(inout) :: info
      integer(c_int) :: r
    end function dao_snapshot_segment

    !> segment, index: 0-based, as in C.
    function dao_snapshot_block(snapshot, segment, index, info) &
        bind(C, name="dao_snapshot_block") result(r)
      import :: c_int, c_size_t, c_ptr, dao_block_info
      type(c_ptr), value :: snapshot
      integer(c_size_t), value :: segment
      integer(c_size_t), value :: index
      type(dao_block_info), intent(inout) :: info
      integer(c_int) :: r
    end function dao_snapshot_block

    function dao_snapshot_destroy(snapshot) bind(C, name="dao_snapshot_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: snapshot
      integer(c_int) :: r
    end function dao_snapshot_destroy

    !> buffer: capacity characters, or absent when capacity is 0.
    function dao_allocator_snapshot_json(a, buffer, capacity, length) &
        bind(C, name="dao_allocator_snapshot_json") result(r)
      import :: c_int, c_char, c_size_t, c_ptr
      type(c_ptr), value :: a
      character(kind=c_char), dimension(*), intent(inout), optional :: buffer
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(inout) :: length
      integer(c_int) :: r
    end function dao_allocator_snapshot_json

    function dao_allocator_destroy(a) bind(C, name="dao_allocator_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: a
      integer(c_int) :: r
    end function dao_allocator_destroy

    ! ---------------------------------------------------------------- recycle.h
    !> shape: ndim extents in the caller's order (libdao does not reorder).
    !> config: NUL-terminated, or absent for the defaults.
    function dao_recycle_create(place, element_size, ndim, shape, max_buffers, preallocate, &
                                config, out) bind(C, name="dao_recycle_create") result(r)
      import :: c_int, c_size_t, c_char, c_ptr, dao_place
      type(dao_place), value :: place
      integer(c_size_t), value :: element_size
      integer(c_int), value :: ndim
      integer(c_size_t), dimension(*), intent(in) :: shape
      integer(c_size_t), value :: max_buffers
      integer(c_size_t), value :: preallocate
      character(kind=c_char), dimension(*), intent(in), optional :: config
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_recycle_create

    function dao_recycle_acquire(pool, timeout, out) bind(C, name="dao_recycle_acquire") result(r)
      import :: c_int, c_double, c_ptr
      type(c_ptr), value :: pool
      real(c_double), value :: timeout
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_recycle_acquire

    function dao_recycle_submit(pool, buffer) bind(C, name="dao_recycle_submit") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: pool
      type(c_ptr), value :: buffer
      integer(c_int) :: r
    end function dao_recycle_submit

    function dao_recycle_take(pool, timeout, out) bind(C, name="dao_recycle_take") result(r)
      import :: c_int, c_double, c_ptr
      type(c_ptr), value :: pool
      real(c_double), value :: timeout
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_recycle_take

    function dao_recycle_close(pool) bind(C, name="dao_recycle_close") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: pool
      integer(c_int) :: r
    end function dao_recycle_close

    function dao_recycle_get_stats(pool, stats) bind(C, name="dao_recycle_get_stats") result(r)
      import :: c_int, c_ptr, dao_recycle_stats
      type(c_ptr), value :: pool
      type(dao_recycle_stats), intent(inout) :: stats
      integer(c_int) :: r
    end function dao_recycle_get_stats

    function dao_recycle_destroy(pool) bind(C, name="dao_recycle_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: pool
      integer(c_int) :: r
    end function dao_recycle_destroy

    function dao_buffer_retain(buffer) bind(C, name="dao_buffer_retain") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      integer(c_int) :: r
    end function dao_buffer_retain

    function dao_buffer_release(buffer) bind(C, name="dao_buffer_release") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      integer(c_int) :: r
    end function dao_buffer_release

    function dao_buffer_data(buffer, data) bind(C, name="dao_buffer_data") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      type(c_ptr), intent(inout) :: data
      integer(c_int) :: r
    end function dao_buffer_data

    !> shape receives a pointer to ndim size_t extents owned by the pool.
    function dao_buffer_shape(buffer, ndim, shape) bind(C, name="dao_buffer_shape") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: buffer
      integer(c_int), intent(inout), optional :: ndim
      type(c_ptr), intent(inout), optional :: shape
      integer(c_int) :: r
    end function dao_buffer_shape

    function dao_buffer_size(buffer, element_size, bytes) bind(C, name="dao_buffer_size") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: buffer
      integer(c_size_t), intent(inout), optional :: element_size
      integer(c_size_t), intent(inout), optional :: bytes
      integer(c_int) :: r
    end function dao_buffer_size

    function dao_buffer_place(buffer, place) bind(C, name="dao_buffer_place") result(r)
      import :: c_int, c_ptr, dao_place
      type(c_ptr), value :: buffer
      type(dao_place), intent(inout) :: place
      integer(c_int) :: r
    end function dao_buffer_place

    function dao_buffer_sequence(buffer, sequence) bind(C, name="dao_buffer_sequence") result(r)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: buffer
      integer(c_int64_t), intent(inout) :: sequence
      integer(c_int) :: r
    end function dao_buffer_sequence

    function dao_collection_create(out) bind(C, name="dao_collection_create") result(r)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_collection_create

    !> name: NUL-terminated. out: the borrowed pool; may be absent.
    function dao_collection_add(collection, name, place, element_size, ndim, shape, max_buffers, &
                                preallocate, config, out) &
        bind(C, name="dao_collection_add") result(r)
      import :: c_int, c_size_t, c_char, c_ptr, dao_place
      type(c_ptr), value :: collection
      character(kind=c_char), dimension(*), intent(in) :: name
      type(dao_place), value :: place
      integer(c_size_t), value :: element_size
      integer(c_int), value :: ndim
      integer(c_size_t), dimension(*), intent(in) :: shape
      integer(c_size_t), value :: max_buffers
      integer(c_size_t), value :: preallocate
      character(kind=c_char), dimension(*), intent(in), optional :: config
      type(c_ptr), intent(inout), optional :: out
      integer(c_int) :: r
    end function dao_collection_add

    function dao_collection_find(collection, name, out) &
        bind(C, name="dao_collection_find") result(r)
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: collection
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_collection_find

    function dao_collection_close(collection) bind(C, name="dao_collection_close") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: collection
      integer(c_int) :: r
    end function dao_collection_close

    function dao_collection_destroy(collection) bind(C, name="dao_collection_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: collection
      integer(c_int) :: r
    end function dao_collection_destroy

    ! ----------------------------------------------------------------- tiered.h
    !> config: NUL-terminated, or absent for the defaults.
    function dao_tiered_create(device, host, device_budget, config, out) &
        bind(C, name="dao_tiered_create") result(r)
      import :: c_int, c_size_t, c_char, c_ptr, dao_place
      type(dao_place), value :: device
      type(dao_place), value :: host
      integer(c_size_t), value :: device_budget
      character(kind=c_char), dimension(*), intent(in), optional :: config
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_tiered_create

    !> score: c_funloc of a procedure with interface dao_score_fn.
    function dao_tiered_set_score_callback(pool, score, user_data) &
        bind(C, name="dao_tiered_set_score_callback") result(r)
      import :: c_int, c_ptr, c_funptr
      type(c_ptr), value :: pool
      type(c_funptr), value :: score
      type(c_ptr), value :: user_data
      integer(c_int) :: r
    end function dao_tiered_set_score_callback

    function dao_tensor_create(pool, bytes, out) bind(C, name="dao_tensor_create") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: pool
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_tensor_create

    function dao_tensor_write(tensor, src, bytes) bind(C, name="dao_tensor_write") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: tensor
      type(c_ptr), value :: src
      integer(c_size_t), value :: bytes
      integer(c_int) :: r
    end function dao_tensor_write

    function dao_tensor_read(tensor, dst, bytes) bind(C, name="dao_tensor_read") result(r)
      import :: c_int, c_size_t, c_ptr
      type(c_ptr), value :: tensor
      type(c_ptr), value :: dst
      integer(c_size_t), value :: bytes
      integer(c_int) :: r
    end function dao_tensor_read

    !> state receives a DAO_TENSOR_* value.
    function dao_tensor_get_state(tensor, state) bind(C, name="dao_tensor_get_state") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: tensor
      integer(c_int), intent(inout) :: state
      integer(c_int) :: r
    end function dao_tensor_get_state

    function dao_tensor_release(tensor) bind(C, name="dao_tensor_release") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: tensor
      integer(c_int) :: r
    end function dao_tensor_release

    !> fn: c_funloc of a procedure with interface dao_kernel_fn. inputs and
    !> outputs: tensor handles; absent for NULL (with a count of 0).
    function dao_kernel_submit(pool, fn, user_data, inputs, input_count, outputs, output_count) &
        bind(C, name="dao_kernel_submit") result(r)
      import :: c_int, c_size_t, c_ptr, c_funptr
      type(c_ptr), value :: pool
      type(c_funptr), value :: fn
      type(c_ptr), value :: user_data
      type(c_ptr), dimension(*), intent(in), optional :: inputs
      integer(c_size_t), value :: input_count
      type(c_ptr), dimension(*), intent(in), optional :: outputs
      integer(c_size_t), value :: output_count
      integer(c_int) :: r
    end function dao_kernel_submit

    function dao_tiered_synchronize(pool) bind(C, name="dao_tiered_synchronize") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: pool
      integer(c_int) :: r
    end function dao_tiered_synchronize

    function dao_tiered_get_stats(pool, stats) bind(C, name="dao_tiered_get_stats") result(r)
      import :: c_int, c_ptr, dao_tiered_stats
      type(c_ptr), value :: pool
      type(dao_tiered_stats), intent(inout) :: stats
      integer(c_int) :: r
    end function dao_tiered_get_stats

    function dao_tiered_destroy(pool) bind(C, name="dao_tiered_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: pool
      integer(c_int) :: r
    end function dao_tiered_destroy

    ! ------------------------------------------------------------------ whole.h
    !> places: count places; comms receives count handles (unchanged on
    !> failure). Each rank's collective calls come from a thread of its own.
    function dao_comm_create_local(count, places, comms) &
        bind(C, name="dao_comm_create_local") result(r)
      import :: c_int, c_ptr, dao_place
      integer(c_int), value :: count
      type(dao_place), dimension(*), intent(in) :: places
      type(c_ptr), dimension(*), intent(inout) :: comms
      integer(c_int) :: r
    end function dao_comm_create_local

    function dao_comm_destroy(comm) bind(C, name="dao_comm_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: r
    end function dao_comm_destroy

    function dao_comm_rank(comm, rank) bind(C, name="dao_comm_rank") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), intent(inout) :: rank
      integer(c_int) :: r
    end function dao_comm_rank

    function dao_comm_size(comm, size) bind(C, name="dao_comm_size") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), intent(inout) :: size
      integer(c_int) :: r
    end function dao_comm_size

    function dao_comm_rank_place(comm, rank, place) bind(C, name="dao_comm_rank_place") result(r)
      import :: c_int, c_ptr, dao_place
      type(c_ptr), value :: comm
      integer(c_int), value :: rank
      type(dao_place), intent(inout) :: place
      integer(c_int) :: r
    end function dao_comm_rank_place

    function dao_comm_get_info(comm, info) bind(C, name="dao_comm_get_info") result(r)
      import :: c_int, c_ptr, dao_comm_info
      type(c_ptr), value :: comm
      type(dao_comm_info), intent(inout) :: info
      integer(c_int) :: r
    end function dao_comm_get_info

    !> Collective.
    function dao_comm_barrier(comm) bind(C, name="dao_comm_barrier") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: r
    end function dao_comm_barrier

    function dao_whole_type_name(whole_type) bind(C, name="dao_whole_type_name") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: whole_type
      type(c_ptr) :: r
    end function dao_whole_type_name

    function dao_whole_location_name(location) bind(C, name="dao_whole_location_name") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: location
      type(c_ptr) :: r
    end function dao_whole_location_name

    function dao_whole_supported(comm, whole_type, location) &
        bind(C, name="dao_whole_supported") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), value :: whole_type
      integer(c_int), value :: location
      integer(c_int) :: r
    end function dao_whole_supported

    !> Collective.
    function dao_whole_create(comm, desc, out) bind(C, name="dao_whole_create") result(r)
      import :: c_int, c_ptr, dao_whole_desc
      type(c_ptr), value :: comm
      type(dao_whole_desc), intent(in) :: desc
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_whole_create

    !> Collective.
    function dao_whole_destroy(whole) bind(C, name="dao_whole_destroy") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: whole
      integer(c_int) :: r
    end function dao_whole_destroy

    function dao_whole_get_info(whole, info) bind(C, name="dao_whole_get_info") result(r)
      import :: c_int, c_ptr, dao_whole_info
      type(c_ptr), value :: whole
      type(dao_whole_info), intent(inout) :: info
      integer(c_int) :: r
    end function dao_whole_get_info

    function dao_whole_get_partition(whole, rank, range) &
        bind(C, name="dao_whole_get_partition") result(r)
      import :: c_int, c_ptr, dao_whole_range
      type(c_ptr), value :: whole
      integer(c_int), value :: rank
      type(dao_whole_range), intent(inout) :: range
      integer(c_int) :: r
    end function dao_whole_get_partition

    function dao_whole_entry_rank(whole, index, rank) bind(C, name="dao_whole_entry_rank") &
        result(r)
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: whole
      integer(c_int64_t), value :: index
      integer(c_int), intent(inout) :: rank
      integer(c_int) :: r
    end function dao_whole_entry_rank

    !> range may be absent (NULL).
    function dao_whole_get_local(whole, ptr, range) bind(C, name="dao_whole_get_local") result(r)
      import :: c_int, c_ptr, dao_whole_range
      type(c_ptr), value :: whole
      type(c_ptr), intent(inout) :: ptr
      type(dao_whole_range), intent(inout), optional :: range
      integer(c_int) :: r
    end function dao_whole_get_local

    function dao_whole_get_rank_pointer(whole, rank, ptr) &
        bind(C, name="dao_whole_get_rank_pointer") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: whole
      integer(c_int), value :: rank
      type(c_ptr), intent(inout) :: ptr
      integer(c_int) :: r
    end function dao_whole_get_rank_pointer

    function dao_whole_get_base(whole, base) bind(C, name="dao_whole_get_base") result(r)
      import :: c_int, c_ptr
      type(c_ptr), value :: whole
      type(c_ptr), intent(inout) :: base
      integer(c_int) :: r
    end function dao_whole_get_base

    !> indices: count 0-based entry indices (absent for NULL, count 0); dst:
    !> count * entry_size bytes of host-accessible memory.
    function dao_whole_gather(whole, indices, count, dst) bind(C, name="dao_whole_gather") &
        result(r)
      import :: c_int, c_int64_t, c_size_t, c_ptr
      type(c_ptr), value :: whole
      integer(c_int64_t), dimension(*), intent(in), optional :: indices
      integer(c_size_t), value :: count
      type(c_ptr), value :: dst
      integer(c_int) :: r
    end function dao_whole_gather

    function dao_whole_scatter(whole, src, indices, count) bind(C, name="dao_whole_scatter") &
        result(r)
      import :: c_int, c_int64_t, c_size_t, c_ptr
      type(c_ptr), value :: whole
      type(c_ptr), value :: src
      integer(c_int64_t), dimension(*), intent(in), optional :: indices
      integer(c_size_t), value :: count
      integer(c_int) :: r
    end function dao_whole_scatter

    !> Collective. path: NUL-terminated.
    function dao_whole_store(whole, path) bind(C, name="dao_whole_store") result(r)
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: whole
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int) :: r
    end function dao_whole_store

    !> Collective. path: NUL-terminated.
    function dao_whole_load(whole, path) bind(C, name="dao_whole_load") result(r)
      import :: c_int, c_char, c_ptr
      type(c_ptr), value :: whole
      character(kind=c_char), dimension(*), intent(in) :: path
      integer(c_int) :: r
    end function dao_whole_load

    !> Experimental (DAO_EXPERIMENTAL in C): a communicator handle over a
    !> transport. Collective over the transport.
    function dao_comm_create_transport(transport, place, out) &
        bind(C, name="dao_comm_create_transport") result(r)
      import :: c_int, c_ptr, dao_comm_transport, dao_place
      type(dao_comm_transport), intent(in) :: transport
      type(dao_place), value :: place
      type(c_ptr), intent(inout) :: out
      integer(c_int) :: r
    end function dao_comm_create_transport

    !> Experimental: record a failure for dao_last_error(); returns status.
    !> message: NUL-terminated, or absent for NULL ("").
    function dao_comm_transport_error(status, message) &
        bind(C, name="dao_comm_transport_error") result(r)
      import :: c_int, c_char
      integer(c_int), value :: status
      character(kind=c_char), dimension(*), intent(in), optional :: message
      integer(c_int) :: r
    end function dao_comm_transport_error
  end interface
end module dao_c
