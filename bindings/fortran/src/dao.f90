!> libdao for Fortran: `use dao`.
!>
!> Two layers in one module:
!> - the C API (module dao_c, re-exported here): the 112 functions under their
!>   C names, bind(C) structs, DAO_* constants;
!> - the Fortran layer below: handle types with type-bound procedures
!>   (dao_allocator, dao_stream, dao_event, dao_snapshot, dao_recycle_pool,
!>   dao_buffer, dao_collection, dao_tiered, dao_tensor, dao_comm,
!>   dao_whole), arrays of every
!>   intrinsic numeric kind and rank 1-7 as Fortran pointers
!>   (dao_allocate / dao_deallocate / dao_buffer_array), Fortran strings.
!>
!> Errors in the Fortran layer. Every routine that can fail takes an optional
!> `status` (intent(out), integer(c_int)); DAO_OK is success. A failure never
!> stops the program, with or without `status`: it changes nothing (as in C),
!> leaves out-arguments null or zero, and is recorded for the calling thread,
!> so that `dao_last_status()` and `dao_last_message()` tell what happened in
!> the last call of this layer on the thread (DAO_OK and "" after a success).
!> `call dao_set_verbose(.true.)` also prints every failure that has no
!> `status` argument to catch it, on error_unit.
!>
!> Handles. Each handle type holds one type(c_ptr) component, `handle`,
!> null until a create (or acquire, take, find...) fills it and null again
!> after destroy (or release, submit...). A routine that fills a handle refuses
!> (DAO_ERR_INVALID_STATE) a variable that already holds one, so that nothing
!> is lost by accident; set `x = dao_allocator()` (or the type of x) to forget
!> a borrowed handle. There are no final procedures: handles are copied by
!> assignment, a destroy can fail (DAO_ERR_BUSY while memory is live) and must
!> be able to say so, and the C API destroys objects only when asked. Call
!> `destroy` explicitly.
!>
!> Sizes in bytes are integer(int64) (C size_t); element sizes, buffer counts
!> and indices are default integers; array shapes (dao_allocate, recycle
!> pools) may be default or int64 integers. Indices of the Fortran layer
!> (snapshot segments and blocks, kernel arguments) start at 1; ranks and
!> entry indices of partitioned memory (dao_comm, dao_whole) start at 0, as
!> in C and MPI, since every rank shares them.
!>
!> Thread safety is that of the C functions (see the C headers); the state
!> of this layer is thread-safe too: the last status and message are
!> per thread and the registry of dao_allocate arrays has a lock.
!> dao_set_verbose is meant to be called once, before threads start.
module dao
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_size_t, c_double, c_char, c_ptr, &
                                          c_null_ptr, c_null_char, c_loc, c_funloc, &
                                          c_f_pointer, c_associated, c_sizeof
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64, error_unit
  use dao_c
  use dao_support
  implicit none
  private :: c_int, c_int64_t, c_size_t, c_double, c_char, c_ptr, c_null_ptr, &
             c_null_char, c_loc, c_funloc, c_f_pointer, c_associated, c_sizeof
  private :: int32, int64, real32, real64, error_unit

  ! ------------------------------------------------------------ handle types

  !> An allocator: a strategy ("buddy", "caching", "system") on a place.
  type :: dao_allocator
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => allocator_create
    procedure :: from_place => allocator_from_place
    procedure :: alloc => allocator_alloc
    procedure :: free => allocator_free
    procedure :: usable_size => allocator_usable_size
    procedure :: trim => allocator_trim
    procedure :: get_stats => allocator_get_stats
    procedure :: get_stat => allocator_get_stat
    procedure :: reset_peak_stats => allocator_reset_peak_stats
    procedure :: reset_accumulated_stats => allocator_reset_accumulated_stats
    procedure :: info => allocator_info
    procedure :: record_stream => allocator_record_stream
    procedure :: snapshot => allocator_snapshot
    procedure :: snapshot_json => allocator_snapshot_json
    procedure :: destroy => allocator_destroy
  end type dao_allocator

  !> A stream: ordered, asynchronous work on a place. A variable that holds
  !> no stream (handle null) is the default stream: synchronous.
  type :: dao_stream
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => stream_create
    procedure :: wrap => stream_wrap
    procedure :: native => stream_native
    procedure :: place => stream_place
    procedure :: synchronize => stream_synchronize
    procedure :: is_idle => stream_is_idle
    procedure :: wait_event => stream_wait_event
    procedure :: copy => stream_copy
    procedure :: launch_host_func => stream_launch_host_func
    procedure :: destroy => stream_destroy
  end type dao_stream

  !> An event: a point in a stream.
  type :: dao_event
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => event_create
    procedure :: record => event_record
    procedure :: is_done => event_is_done
    procedure :: synchronize => event_synchronize
    procedure :: destroy => event_destroy
  end type dao_event

  !> An immutable copy of an allocator's segments and blocks.
  type :: dao_snapshot
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: segment_count => snapshot_segment_count
    procedure :: segment => snapshot_segment
    procedure :: block => snapshot_block
    procedure :: destroy => snapshot_destroy
  end type dao_snapshot

  !> A recycle pool of typed, shaped, reference-counted buffers.
  type :: dao_recycle_pool
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure, private :: recycle_create_s64
    procedure, private :: recycle_create_s32
    generic :: create => recycle_create_s64, recycle_create_s32
    procedure :: acquire => recycle_acquire
    procedure :: submit => recycle_submit
    procedure :: take => recycle_take
    procedure :: close => recycle_close
    procedure :: get_stats => recycle_get_stats
    procedure :: destroy => recycle_destroy
  end type dao_recycle_pool

  !> One reference to a buffer of a recycle pool.
  type :: dao_buffer
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: retain => buffer_retain
    procedure :: release => buffer_release
    procedure :: data => buffer_data
    procedure :: shape => buffer_shape
    procedure :: element_size => buffer_element_size
    procedure :: bytes => buffer_bytes
    procedure :: place => buffer_place
    procedure :: sequence => buffer_sequence
  end type dao_buffer

  !> A named set of recycle pools.
  type :: dao_collection
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => collection_create
    procedure, private :: collection_add_s64
    procedure, private :: collection_add_s32
    generic :: add => collection_add_s64, collection_add_s32
    procedure :: find => collection_find
    procedure :: close => collection_close
    procedure :: destroy => collection_destroy
  end type dao_collection

  !> A tiered pool: a device budget backed by a host tier, with a kernel queue.
  type :: dao_tiered
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => tiered_create
    procedure :: set_score_callback => tiered_set_score_callback
    procedure :: submit => tiered_submit
    procedure :: synchronize => tiered_synchronize
    procedure :: get_stats => tiered_get_stats
    procedure :: get_link_stats => tiered_get_link_stats
    procedure :: trim => tiered_trim
    procedure :: destroy => tiered_destroy
  end type dao_tiered

  !> A tensor of a tiered pool.
  type :: dao_tensor
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => tensor_create
    procedure, private :: tensor_write_bytes
    procedure, private :: tensor_write_int32, tensor_write_int64, tensor_write_real32, &
                          tensor_write_real64, tensor_write_complex32, tensor_write_complex64
    generic :: write => tensor_write_bytes, tensor_write_int32, tensor_write_int64, &
                        tensor_write_real32, tensor_write_real64, tensor_write_complex32, &
                        tensor_write_complex64
    procedure, private :: tensor_read_bytes
    procedure, private :: tensor_read_int32, tensor_read_int64, tensor_read_real32, &
                          tensor_read_real64, tensor_read_complex32, tensor_read_complex64
    generic :: read => tensor_read_bytes, tensor_read_int32, tensor_read_int64, &
                       tensor_read_real32, tensor_read_real64, tensor_read_complex32, &
                       tensor_read_complex64
    procedure :: state => tensor_state
    procedure :: retire => tensor_retire
    procedure :: release => tensor_release
  end type dao_tensor

  !> One rank's handle of a communicator (C: dao_comm, dao/whole.h). Made
  !> for every rank at once by dao_comm_local(); ranks count from 0, as in
  !> C and MPI. Collective calls (barrier, dao_whole%create / destroy /
  !> store / load) must be made by every rank, each from a thread of its
  !> own for an in-process communicator.
  type :: dao_comm
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: destroy => comm_destroy
    procedure :: rank => comm_rank
    procedure :: size => comm_size
    procedure :: rank_place => comm_rank_place
    procedure :: info => comm_info
    procedure :: barrier => comm_barrier
    procedure :: supported => comm_supported
  end type dao_comm

  !> One rank's handle of a whole memory object (C: dao_whole): a table of
  !> fixed-size entries partitioned over the ranks of a dao_comm. Entry
  !> indices count from 0, as in C (they are the same on every rank).
  type :: dao_whole
    type(c_ptr) :: handle = c_null_ptr
  contains
    procedure :: create => whole_create
    procedure :: destroy => whole_destroy
    procedure :: info => whole_info
    procedure :: partition => whole_partition
    procedure :: entry_rank => whole_entry_rank
    procedure :: local => whole_local
    procedure :: rank_pointer => whole_rank_pointer
    procedure :: base => whole_base
    procedure :: gather => whole_gather
    procedure :: scatter => whole_scatter
    procedure :: gather_collective => whole_gather_collective
    procedure :: scatter_collective => whole_scatter_collective
    procedure :: store => whole_store
    procedure :: load => whole_load
  end type dao_whole

  ! ------------------------------------------------------- generic routines

  include "dao_arrays_spec.inc"

  !> Places compare equal when kind and device are equal.
  interface operator(==)
    module procedure place_equal
  end interface operator(==)
  interface operator(/=)
    module procedure place_not_equal
  end interface operator(/=)
  private :: place_equal, place_not_equal

  ! --------------------------------------------------------------- internals

  private :: c_strlen, daof_set_last, daof_set_last_from_c, daof_last_status, &
             daof_last_message, daof_registry_add, daof_registry_remove, daof_registry_count

  !> Where a zero-size dao_allocate array points: it takes no memory from
  !> any place, and `associated()` is true for it, as for a Fortran allocate.
  complex(real64), target, save, private :: zero_size_target(1) = (0.0_real64, 0.0_real64)

  logical, save, private :: verbose = .false.

  private :: record, record_ok, record_failure, deliver, finish, fail, c_string, &
             chars_to_string, bad_size, holds_handle, array_allocate, array_deallocate, &
             buffer_view, to_size_t_shape, timeout_seconds
  private :: allocator_create, allocator_from_place, allocator_alloc, allocator_free, &
             allocator_usable_size, allocator_trim, allocator_get_stats, allocator_get_stat, &
             allocator_reset_peak_stats, allocator_reset_accumulated_stats, allocator_info, &
             allocator_record_stream, allocator_snapshot, allocator_snapshot_json, &
             allocator_destroy
  private :: stream_create, stream_wrap, stream_native, stream_place, stream_synchronize, &
             stream_is_idle, stream_wait_event, stream_copy, stream_launch_host_func, &
             stream_destroy
  private :: event_create, event_record, event_is_done, event_synchronize, event_destroy
  private :: snapshot_segment_count, snapshot_segment, snapshot_block, snapshot_destroy
  private :: recycle_create_s64, recycle_create_s32, recycle_acquire, recycle_submit, &
             recycle_take, recycle_close, recycle_get_stats, recycle_destroy
  private :: buffer_retain, buffer_release, buffer_data, buffer_shape, buffer_element_size, &
             buffer_bytes, buffer_place, buffer_sequence
  private :: collection_create, collection_add_s64, collection_add_s32, collection_find, &
             collection_close, collection_destroy
  private :: tiered_create, tiered_set_score_callback, tiered_submit, tiered_synchronize, &
             tiered_get_stats, tiered_get_link_stats, tiered_trim, tiered_destroy
  private :: tensor_create, tensor_write_bytes, tensor_read_bytes, tensor_state, tensor_retire, &
             tensor_release
  private :: comm_destroy, comm_rank, comm_size, comm_rank_place, comm_info, comm_barrier, &
             comm_supported
  private :: whole_create, whole_destroy, whole_info, whole_partition, whole_entry_rank, &
             whole_local, whole_rank_pointer, whole_base, whole_gather, whole_scatter, &
             whole_gather_collective, whole_scatter_collective, &
             whole_store, whole_load, whole_buffer_ok

contains

  ! ================================================= status of the last call

  !> Status of the last call of the Fortran layer on this thread (DAO_OK if
  !> it succeeded or none was made). Calls of the C layer do not change it.
  function dao_last_status() result(status)
    integer(c_int) :: status
    status = daof_last_status()
  end function dao_last_status

  !> Message of the last call of the Fortran layer on this thread: what went
  !> wrong, or "" if it succeeded.
  function dao_last_message() result(message)
    character(len=:), allocatable :: message
    call to_string(daof_last_message(), message)
  end function dao_last_message

  !> Print every failure that the caller gave no `status` argument for, with
  !> its message, on error_unit (default: off). Call it before starting
  !> threads.
  subroutine dao_set_verbose(on)
    logical, intent(in) :: on
    verbose = on
  end subroutine dao_set_verbose

  ! Records the outcome of a C call: DAO_OK, or a failure with the message
  ! the C call left in dao_last_error().
  subroutine record(st)
    integer(c_int), intent(in) :: st
    if (st == DAO_OK) then
      call daof_set_last(DAO_OK, c_null_char, 0_c_size_t)
    else
      call daof_set_last_from_c(st)
    end if
  end subroutine record

  subroutine record_ok(st)
    integer(c_int), intent(out) :: st
    st = DAO_OK
    call record(st)
  end subroutine record_ok

  ! Records a failure found by the Fortran layer itself.
  subroutine record_failure(st, message)
    integer(c_int), intent(in) :: st
    character(len=*), intent(in) :: message
    call daof_set_last(st, message, len(message, kind=c_size_t))
  end subroutine record_failure

  ! Hands a recorded status to the caller: into `status` when present, else
  ! (failures, when verbose) onto error_unit.
  subroutine deliver(st, status)
    integer(c_int), intent(in) :: st
    integer(c_int), intent(out), optional :: status
    if (present(status)) then
      status = st
    else if (st /= DAO_OK .and. verbose) then
      write (error_unit, '(4a)') 'libdao: ', dao_status_name(st), ': ', dao_last_message()
    end if
  end subroutine deliver

  ! record + deliver for the status of a C call.
  subroutine finish(st, status)
    integer(c_int), intent(in) :: st
    integer(c_int), intent(out), optional :: status
    call record(st)
    call deliver(st, status)
  end subroutine finish

  ! A failure found by the Fortran layer: record + deliver.
  subroutine fail(st, message, status)
    integer(c_int), intent(in) :: st
    character(len=*), intent(in) :: message
    integer(c_int), intent(out), optional :: status
    call record_failure(st, message)
    call deliver(st, status)
  end subroutine fail

  ! .true. (and the failure delivered) when a size is negative.
  function bad_size(value, what, status) result(bad)
    integer(int64), intent(in) :: value
    character(len=*), intent(in) :: what
    integer(c_int), intent(out), optional :: status
    logical :: bad
    character(len=24) :: text
    bad = value < 0
    if (bad) then
      write (text, '(i0)') value
      call fail(DAO_ERR_INVALID_ARGUMENT, what // ' must not be negative (got ' // &
                trim(text) // ')', status)
    end if
  end function bad_size

  ! .true. (and the failure delivered) when a handle variable to be filled
  ! already holds a handle.
  function holds_handle(handle, what, status) result(holds)
    type(c_ptr), intent(in) :: handle
    character(len=*), intent(in) :: what
    integer(c_int), intent(out), optional :: status
    logical :: holds
    holds = c_associated(handle)
    if (holds) then
      call fail(DAO_ERR_INVALID_STATE, what // ': the variable already holds a handle; ' // &
                'destroy or release it first (or assign a new, empty one to forget it)', status)
    end if
  end function holds_handle

  ! ========================================================= strings, status

  !> A Fortran copy of a NUL-terminated C string ("" for a null pointer).
  function dao_string(cstring) result(string)
    type(c_ptr), intent(in) :: cstring
    character(len=:), allocatable :: string
    call to_string(cstring, string)
  end function dao_string

  ! `string` = the C string (empty for NULL), filled in place: gfortran 12
  ! keeps the length of a deferred-length temporary (`x = f()` with a
  ! deferred-length result) in a static variable, so two threads doing that
  ! at once overrun each other's strings; an allocatable dummy argument
  ! carries its length with it.
  subroutine to_string(cstring, string)
    type(c_ptr), intent(in) :: cstring
    character(len=:), allocatable, intent(out) :: string
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: length, i
    if (.not. c_associated(cstring)) then
      allocate (character(len=0) :: string)
      return
    end if
    length = c_strlen(cstring)
    call c_f_pointer(cstring, chars, [length])
    allocate (character(len=length) :: string)
    do i = 1, length
      string(i:i) = chars(i)
    end do
  end subroutine to_string

  ! `string` = the first `length` characters, filled in place (see to_string).
  subroutine chars_to_string(chars, length, string)
    character(kind=c_char), intent(in) :: chars(*)
    integer(c_size_t), intent(in) :: length
    character(len=:), allocatable, intent(out) :: string
    integer(c_size_t) :: i
    allocate (character(len=length) :: string)
    do i = 1, length
      string(i:i) = chars(i)
    end do
  end subroutine chars_to_string

  ! A NUL-terminated copy of a Fortran string, without its trailing blanks.
  function c_string(string) result(cs)
    character(len=*), intent(in) :: string
    character(kind=c_char, len=:), allocatable :: cs
    cs = trim(string) // c_null_char
  end function c_string

  !> Short English name of a status ("out of memory"); "unknown status" for
  !> a number this version does not know.
  function dao_status_name(status) result(name)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: name
    call to_string(dao_status_string(status), name)
  end function dao_status_name

  !> Version of the library loaded at run time, "MAJOR.MINOR.PATCH" (compare
  !> with DAO_VERSION_STRING, the version this module was built with).
  function dao_version() result(version)
    character(len=:), allocatable :: version
    call to_string(dao_version_string(), version)
  end function dao_version

  ! ================================================================== places

  elemental function place_equal(a, b) result(equal)
    type(dao_place), intent(in) :: a, b
    logical :: equal
    equal = a%kind == b%kind .and. a%device == b%device
  end function place_equal

  elemental function place_not_equal(a, b) result(differ)
    type(dao_place), intent(in) :: a, b
    logical :: differ
    differ = .not. place_equal(a, b)
  end function place_not_equal

  !> Lower-case name of a place kind ("cpu", "cuda", "cuda_pinned",
  !> "cuda_managed", "sim"; "unknown" for other values).
  function dao_kind_name(kind) result(name)
    integer(c_int), intent(in) :: kind
    character(len=:), allocatable :: name
    call to_string(dao_place_kind_name(kind), name)
  end function dao_kind_name

  !> A place as text: "cpu", "sim:1", "cuda:0", ...
  function dao_place_name(place) result(name)
    type(dao_place), intent(in) :: place
    character(len=:), allocatable :: name
    character(len=12) :: device
    write (device, '(i0)') place%device
    select case (place%kind)
    case (DAO_PLACE_KIND_CPU, DAO_PLACE_KIND_CUDA_PINNED)
      name = dao_kind_name(place%kind)
      if (place%device /= 0) name = name // ':' // trim(device)
    case default
      name = dao_kind_name(place%kind) // ':' // trim(device)
    end select
  end function dao_place_name

  !> One line on the backend that serves a place kind, and why it has no
  !> devices when it has none.
  function dao_backend_description(kind) result(text)
    integer(c_int), intent(in) :: kind
    character(len=:), allocatable :: text
    call to_string(dao_place_backend_description(kind), text)
  end function dao_backend_description

  !> Number of devices of a place kind on this machine (0 on failure).
  function dao_device_count(kind, status) result(count)
    integer(c_int), intent(in) :: kind
    integer(c_int), intent(out), optional :: status
    integer :: count
    integer(c_int) :: n, st
    n = 0
    st = dao_place_device_count(kind, n)
    count = 0
    if (st == DAO_OK) count = n
    call finish(st, status)
  end function dao_device_count

  !> Free and total bytes of a place, as its backend reports them.
  subroutine dao_memory_info(place, free_bytes, total_bytes, status)
    type(dao_place), intent(in) :: place
    integer(int64), intent(out), optional :: free_bytes, total_bytes
    integer(c_int), intent(out), optional :: status
    integer(c_size_t) :: f, t
    integer(c_int) :: st
    f = 0
    t = 0
    st = dao_place_memory_info(place, f, t)
    if (present(free_bytes)) free_bytes = f
    if (present(total_bytes)) total_bytes = t
    call finish(st, status)
  end subroutine dao_memory_info

  !> Bytes currently handed out on a place by dao_alloc() and dao_allocate
  !> (block sizes), 0 on failure.
  function dao_used_bytes(place, status) result(bytes)
    type(dao_place), intent(in) :: place
    integer(c_int), intent(out), optional :: status
    integer(int64) :: bytes
    integer(c_size_t) :: b
    integer(c_int) :: st
    b = 0
    st = dao_used(place, b)
    bytes = b
    call finish(st, status)
  end function dao_used_bytes

  !> Bytes the library holds on a place for itself (recycle pools, tiered
  !> pools, partitioned memory), counted apart from dao_used_bytes; 0 on
  !> failure.
  function dao_used_internal_bytes(place, status) result(bytes)
    type(dao_place), intent(in) :: place
    integer(c_int), intent(out), optional :: status
    integer(int64) :: bytes
    integer(c_size_t) :: b
    integer(c_int) :: st
    b = 0
    st = dao_used_internal(place, b)
    bytes = b
    call finish(st, status)
  end function dao_used_internal_bytes

  !> Strategy and config that the default allocators of a place kind use.
  subroutine dao_default_config(kind, strategy, config, status)
    integer(c_int), intent(in) :: kind
    character(len=:), allocatable, intent(out), optional :: strategy, config
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: s, c
    integer(c_int) :: st
    s = c_null_ptr
    c = c_null_ptr
    st = dao_place_default_config(kind, s, c)
    if (present(strategy)) call to_string(s, strategy)
    if (present(config)) call to_string(c, config)
    call finish(st, status)
  end subroutine dao_default_config

  !> Set the simulated devices: one per capacity, in bytes (an empty array
  !> for none). Call before the first use of a SIM place (see sim.h).
  subroutine dao_configure_sim(capacities, status)
    integer(int64), intent(in) :: capacities(:)
    integer(c_int), intent(out), optional :: status
    integer(c_size_t), allocatable :: caps(:)
    integer :: i
    do i = 1, size(capacities)
      if (bad_size(capacities(i), 'dao_configure_sim: a capacity', status)) return
    end do
    allocate (caps(size(capacities)))
    caps = int(capacities, c_size_t)
    call finish(dao_sim_configure(int(size(caps), c_int), caps), status)
  end subroutine dao_configure_sim

  !> Choose the cost profile of the simulated devices: "none" (host pages,
  !> no costs) or "h200" (the granularity and driver times of an H200).
  !> Call before the first use of a SIM place, like dao_configure_sim; it
  !> overrides DAO_SIM_COSTS. DAO_ERR_INVALID_ARGUMENT for an unknown
  !> profile, DAO_ERR_INVALID_STATE when SIM devices are already in use with
  !> another one (the profile in effect is accepted and changes nothing).
  subroutine dao_set_sim_profile(profile, status)
    character(len=*), intent(in) :: profile
    integer(c_int), intent(out), optional :: status
    call finish(dao_sim_set_profile(c_string(profile)), status)
  end subroutine dao_set_sim_profile

  !> The cost profile in effect ("none", "h200"); "" on failure (a malformed
  !> DAO_SIM_COSTS or DAO_SIM_DEVICES). Fixes the SIM configuration, as a
  !> first use does.
  subroutine dao_get_sim_profile(profile, status)
    character(len=:), allocatable, intent(out) :: profile
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: p
    integer(c_int) :: st
    p = c_null_ptr
    st = dao_sim_get_profile(p)
    if (st /= DAO_OK) p = c_null_ptr
    call to_string(p, profile)
    call finish(st, status)
  end subroutine dao_get_sim_profile

  !> What SIM device `device` accounted for operation `op` (DAO_SIM_OP_ALLOC
  !> ... DAO_SIM_OP_COPY_ON_DEVICE) since its first use or last reset: the
  !> number of calls, the bytes they concerned and the simulated driver time
  !> in nanoseconds (cost%count, cost%bytes, cost%ns; ns stays 0 with the
  !> profile "none"). cost%struct_size is set for you. DAO_ERR_NO_DEVICE for
  !> a missing device, DAO_ERR_INVALID_ARGUMENT for an unknown operation; the
  !> three values are 0 then.
  subroutine dao_get_sim_cost(device, op, cost, status)
    integer(c_int), intent(in) :: device, op
    type(dao_sim_cost), intent(out) :: cost
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    cost%struct_size = c_sizeof(cost)
    st = dao_sim_get_cost(device, op, cost)
    if (st /= DAO_OK) then
      cost%count = 0
      cost%bytes = 0
      cost%ns = 0
    end if
    call finish(st, status)
  end subroutine dao_get_sim_cost

  !> Zero what SIM device `device` accounted, for every operation.
  !> DAO_ERR_NO_DEVICE for a missing device.
  subroutine dao_reset_sim_costs(device, status)
    integer(c_int), intent(in) :: device
    integer(c_int), intent(out), optional :: status
    call finish(dao_sim_reset_costs(device), status)
  end subroutine dao_reset_sim_costs

  !> Name of a SIM operation ("alloc", "create", "copy_to_device", ...;
  !> "unknown" for other values).
  function dao_sim_operation_name(op) result(name)
    integer(c_int), intent(in) :: op
    character(len=:), allocatable :: name
    call to_string(dao_sim_op_name(op), name)
  end function dao_sim_operation_name

  ! ======================================================= arrays (generics)

  !> Number of arrays from dao_allocate that are not deallocated yet (on all
  !> threads); zero-size arrays take no memory and do not count.
  function dao_array_count() result(count)
    integer(int64) :: count
    count = daof_registry_count()
  end function dao_array_count

  ! Behind every dao_allocate specific: checks the shape, allocates
  ! element_size * product(shape) bytes on the place and records the array.
  subroutine array_allocate(shape, rank, element_size, place, ptr, st)
    integer(int64), intent(in) :: shape(:)
    integer, intent(in) :: rank
    integer(int64), intent(in) :: element_size
    type(dao_place), intent(in) :: place
    type(c_ptr), intent(out) :: ptr
    integer(c_int), intent(out) :: st
    integer(int64) :: bytes
    integer(c_int) :: st2
    integer :: d
    character(len=64) :: text
    ptr = c_null_ptr
    if (size(shape) /= rank) then
      write (text, '(a, i0, a, i0)') 'a rank-', rank, ' array needs as many extents, got ', &
        size(shape)
      st = DAO_ERR_INVALID_ARGUMENT
      call record_failure(st, 'dao_allocate: ' // trim(text))
      return
    end if
    bytes = element_size
    do d = 1, rank
      if (shape(d) < 0) then
        write (text, '(a, i0, a, i0)') 'extent ', d, ' is negative: ', shape(d)
        st = DAO_ERR_INVALID_ARGUMENT
        call record_failure(st, 'dao_allocate: ' // trim(text))
        return
      end if
    end do
    do d = 1, rank
      if (shape(d) == 0) then
        bytes = 0
        exit
      end if
      if (bytes > huge(bytes) / shape(d)) then
        st = DAO_ERR_INVALID_ARGUMENT
        call record_failure(st, 'dao_allocate: the size in bytes of the shape overflows')
        return
      end if
      bytes = bytes * shape(d)
    end do
    ! dao_alloc with 0 bytes checks the place and gives NULL, as in C.
    st = dao_alloc(place, int(bytes, c_size_t), ptr)
    if (st /= DAO_OK) then
      call record(st)
      ptr = c_null_ptr
      return
    end if
    if (bytes == 0) then
      ptr = c_loc(zero_size_target)
      call record(st)
      return
    end if
    st = daof_registry_add(ptr, int(bytes, c_size_t), place)
    if (st /= DAO_OK) then
      st2 = dao_free(place, ptr)
      ptr = c_null_ptr
      st = DAO_ERR_OUT_OF_MEMORY
      call record_failure(st, 'dao_allocate: no memory to record the array')
      return
    end if
    call record(st)
  end subroutine array_allocate

  ! Behind every dao_deallocate specific: finds the place of the array that
  ! starts at ptr and has `bytes`, and frees it there.
  subroutine array_deallocate(ptr, bytes, st)
    type(c_ptr), intent(in) :: ptr
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out) :: st
    type(dao_place) :: place
    integer(c_size_t) :: recorded
    character(len=96) :: text
    recorded = 0
    st = daof_registry_remove(ptr, int(bytes, c_size_t), place, recorded)
    select case (st)
    case (DAO_OK)
      st = dao_free(place, ptr)
      call record(st)
    case (DAO_ERR_INVALID_ARGUMENT)
      write (text, '(a, i0, a, i0, a)') 'the array covers ', bytes, ' bytes of an array of ', &
        recorded, ' from dao_allocate'
      st = DAO_ERR_INVALID_POINTER
      call record_failure(st, 'dao_deallocate: ' // trim(text) // &
                          '; pass the whole array. Nothing was freed.')
    case default
      st = DAO_ERR_INVALID_POINTER
      call record_failure(st, 'dao_deallocate: the array is not one that dao_allocate gave, ' // &
                          'or it was deallocated already. Nothing was freed.')
    end select
  end subroutine array_deallocate

  ! Behind every dao_buffer_array specific: data pointer and extents of a
  ! buffer seen as a Fortran array of `rank` elements of `element_size` bytes.
  subroutine buffer_view(buffer, rank, element_size, c_order, ptr, extents, st)
    type(dao_buffer), intent(in) :: buffer
    integer, intent(in) :: rank
    integer(int64), intent(in) :: element_size
    logical, intent(in), optional :: c_order
    type(c_ptr), intent(out) :: ptr
    integer(int64), intent(out) :: extents(rank)
    integer(c_int), intent(out) :: st
    integer(c_int) :: ndim
    type(c_ptr) :: shape_ptr
    integer(c_size_t), pointer :: c_shape(:)
    integer(c_size_t) :: es
    character(len=96) :: text
    ptr = c_null_ptr
    extents = 0
    ndim = 0
    shape_ptr = c_null_ptr
    es = 0
    st = dao_buffer_shape(buffer%handle, ndim, shape_ptr)
    if (st == DAO_OK) st = dao_buffer_size(buffer%handle, es)
    if (st == DAO_OK) st = dao_buffer_data(buffer%handle, ptr)
    if (st /= DAO_OK) then
      call record(st)
      ptr = c_null_ptr
      return
    end if
    if (ndim /= rank) then
      write (text, '(a, i0, a, i0, a)') 'the buffer has ', ndim, ' dimensions, the array ', &
        rank
      st = DAO_ERR_INVALID_ARGUMENT
      call record_failure(st, 'dao_buffer_array: ' // trim(text))
      ptr = c_null_ptr
      return
    end if
    if (es /= element_size) then
      write (text, '(a, i0, a, i0, a)') 'the buffer has elements of ', es, &
        ' bytes, the array ', element_size, ' bytes'
      st = DAO_ERR_INVALID_ARGUMENT
      call record_failure(st, 'dao_buffer_array: ' // trim(text))
      ptr = c_null_ptr
      return
    end if
    call c_f_pointer(shape_ptr, c_shape, [ndim])
    extents = int(c_shape, int64)
    if (present(c_order)) then
      if (c_order) extents = extents(rank:1:-1)
    end if
    call record(st)
  end subroutine buffer_view

  ! ============================================================== allocator

  !> Create an allocator of a strategy ("buddy", "caching", "system"; absent
  !> for the place's default) with a config ("key=value,..."; absent or ""
  !> for the defaults) on a place.
  subroutine allocator_create(self, place, strategy, config, status)
    class(dao_allocator), intent(inout) :: self
    type(dao_place), intent(in) :: place
    character(len=*), intent(in), optional :: strategy, config
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_allocator%create', status)) return
    h = c_null_ptr
    if (present(strategy) .and. present(config)) then
      st = dao_allocator_create(place, c_string(strategy), c_string(config), h)
    else if (present(strategy)) then
      st = dao_allocator_create(place, strategy=c_string(strategy), out=h)
    else if (present(config)) then
      st = dao_allocator_create(place, config=c_string(config), out=h)
    else
      st = dao_allocator_create(place, out=h)
    end if
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine allocator_create

  !> Borrow the default allocator of a place (dao_alloc's). It belongs to
  !> libdao: do not destroy it (destroy refuses).
  subroutine allocator_from_place(self, place, status)
    class(dao_allocator), intent(inout) :: self
    type(dao_place), intent(in) :: place
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_allocator%from_place', status)) return
    h = c_null_ptr
    st = dao_place_allocator(place, h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine allocator_from_place

  !> Allocate bytes (256-byte aligned; 0 gives a null pointer) for use on a
  !> stream (absent: the default stream).
  subroutine allocator_alloc(self, ptr, bytes, stream, status)
    class(dao_allocator), intent(in) :: self
    type(c_ptr), intent(out) :: ptr
    integer(int64), intent(in) :: bytes
    type(dao_stream), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: s
    ptr = c_null_ptr
    if (bad_size(bytes, 'dao_allocator%alloc: bytes', status)) return
    s = c_null_ptr
    if (present(stream)) s = stream%handle
    call finish(dao_allocator_alloc(self%handle, int(bytes, c_size_t), s, ptr), status)
  end subroutine allocator_alloc

  !> Free a pointer this allocator handed out (a null pointer does nothing).
  subroutine allocator_free(self, ptr, status)
    class(dao_allocator), intent(in) :: self
    type(c_ptr), intent(in) :: ptr
    integer(c_int), intent(out), optional :: status
    call finish(dao_allocator_free(self%handle, ptr), status)
  end subroutine allocator_free

  !> Usable size in bytes of a live block (0 on failure).
  function allocator_usable_size(self, ptr, status) result(bytes)
    class(dao_allocator), intent(in) :: self
    type(c_ptr), intent(in) :: ptr
    integer(c_int), intent(out), optional :: status
    integer(int64) :: bytes
    integer(c_size_t) :: n
    integer(c_int) :: st
    n = 0
    st = dao_allocator_usable_size(self%handle, ptr, n)
    bytes = n
    call finish(st, status)
  end function allocator_usable_size

  !> Hand cached memory back to the system; `released` receives the bytes.
  subroutine allocator_trim(self, released, status)
    class(dao_allocator), intent(in) :: self
    integer(int64), intent(out), optional :: released
    integer(c_int), intent(out), optional :: status
    integer(c_size_t) :: n
    integer(c_int) :: st
    n = 0
    st = dao_allocator_trim(self%handle, n)
    if (present(released)) released = n
    call finish(st, status)
  end subroutine allocator_trim

  !> Read the statistics (struct_size is set here).
  subroutine allocator_get_stats(self, stats, status)
    class(dao_allocator), intent(in) :: self
    type(dao_allocator_stats), intent(out) :: stats
    integer(c_int), intent(out), optional :: status
    stats%struct_size = c_sizeof(stats)
    call finish(dao_allocator_get_stats(self%handle, stats), status)
  end subroutine allocator_get_stats

  !> Read one detailed statistic (DAO_STAT_* metric, DAO_STAT_POOL_* pool).
  subroutine allocator_get_stat(self, metric, pool, stat, status)
    class(dao_allocator), intent(in) :: self
    integer(c_int), intent(in) :: metric, pool
    type(dao_stat), intent(out) :: stat
    integer(c_int), intent(out), optional :: status
    call finish(dao_allocator_get_stat(self%handle, metric, pool, stat), status)
  end subroutine allocator_get_stat

  subroutine allocator_reset_peak_stats(self, status)
    class(dao_allocator), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_allocator_reset_peak_stats(self%handle), status)
  end subroutine allocator_reset_peak_stats

  subroutine allocator_reset_accumulated_stats(self, status)
    class(dao_allocator), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_allocator_reset_accumulated_stats(self%handle), status)
  end subroutine allocator_reset_accumulated_stats

  !> Place, strategy and effective config of the allocator.
  subroutine allocator_info(self, place, strategy, config, status)
    class(dao_allocator), intent(in) :: self
    type(dao_place), intent(out), optional :: place
    character(len=:), allocatable, intent(out), optional :: strategy, config
    integer(c_int), intent(out), optional :: status
    type(dao_place) :: p
    type(c_ptr) :: s, c
    integer(c_int) :: st
    s = c_null_ptr
    c = c_null_ptr
    st = dao_allocator_info(self%handle, p, s, c)
    if (present(place)) place = p
    if (present(strategy)) call to_string(s, strategy)
    if (present(config)) call to_string(c, config)
    call finish(st, status)
  end subroutine allocator_info

  !> Mark a block as used on another stream too ("caching").
  subroutine allocator_record_stream(self, ptr, stream, status)
    class(dao_allocator), intent(in) :: self
    type(c_ptr), intent(in) :: ptr
    type(dao_stream), intent(in) :: stream
    integer(c_int), intent(out), optional :: status
    call finish(dao_allocator_record_stream(self%handle, ptr, stream%handle), status)
  end subroutine allocator_record_stream

  !> Take a snapshot of the segments and blocks ("caching").
  subroutine allocator_snapshot(self, snapshot, status)
    class(dao_allocator), intent(in) :: self
    type(dao_snapshot), intent(inout) :: snapshot
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(snapshot%handle, 'dao_allocator%snapshot', status)) return
    h = c_null_ptr
    st = dao_allocator_snapshot(self%handle, h)
    if (st == DAO_OK) snapshot%handle = h
    call finish(st, status)
  end subroutine allocator_snapshot

  !> The segments, blocks, statistics and config as a JSON document.
  subroutine allocator_snapshot_json(self, json, status)
    class(dao_allocator), intent(in) :: self
    character(len=:), allocatable, intent(out) :: json
    integer(c_int), intent(out), optional :: status
    character(kind=c_char), allocatable :: buffer(:)
    integer(c_size_t) :: length, capacity
    integer(c_int) :: st
    length = 0
    json = ''
    st = dao_allocator_snapshot_json(self%handle, capacity=0_c_size_t, length=length)
    ! The allocator may change between two calls: loop until it fits.
    do while (st == DAO_OK)
      capacity = length + 1
      allocate (buffer(capacity))
      st = dao_allocator_snapshot_json(self%handle, buffer, capacity, length)
      if (st == DAO_OK .and. length < capacity) then
        call chars_to_string(buffer, length, json)
        exit
      end if
      deallocate (buffer)
    end do
    call finish(st, status)
  end subroutine allocator_snapshot_json

  !> Destroy the allocator (refused with DAO_ERR_BUSY while blocks are live).
  subroutine allocator_destroy(self, status)
    class(dao_allocator), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_allocator_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine allocator_destroy

  ! ============================================================ stream, event

  !> Create a stream on a place.
  subroutine stream_create(self, place, status)
    class(dao_stream), intent(inout) :: self
    type(dao_place), intent(in) :: place
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_stream%create', status)) return
    h = c_null_ptr
    st = dao_stream_create(place, h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine stream_create

  !> Adopt a native CUDA stream (CUstream / cudaStream_t) of a CUDA place.
  subroutine stream_wrap(self, place, native, status)
    class(dao_stream), intent(inout) :: self
    type(dao_place), intent(in) :: place
    type(c_ptr), intent(in) :: native
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_stream%wrap', status)) return
    h = c_null_ptr
    st = dao_stream_wrap(place, native, h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine stream_wrap

  !> The native handle (CUstream on CUDA places, null elsewhere).
  function stream_native(self, status) result(native)
    class(dao_stream), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: native
    integer(c_int) :: st
    native = c_null_ptr
    st = dao_stream_native(self%handle, native)
    call finish(st, status)
  end function stream_native

  !> The place of the stream.
  function stream_place(self, status) result(place)
    class(dao_stream), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    type(dao_place) :: place
    integer(c_int) :: st
    st = dao_stream_place(self%handle, place)
    call finish(st, status)
  end function stream_place

  !> Wait until the work queued so far has run (nothing for the default stream).
  subroutine stream_synchronize(self, status)
    class(dao_stream), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_stream_synchronize(self%handle), status)
  end subroutine stream_synchronize

  !> Whether all queued work has run, without waiting.
  function stream_is_idle(self, status) result(idle)
    class(dao_stream), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    logical :: idle
    integer(c_int) :: flag, st
    flag = 0
    st = dao_stream_query(self%handle, flag)
    idle = st == DAO_OK .and. flag /= 0
    call finish(st, status)
  end function stream_is_idle

  !> Make later work on the stream wait for an event.
  subroutine stream_wait_event(self, event, status)
    class(dao_stream), intent(in) :: self
    type(dao_event), intent(in) :: event
    integer(c_int), intent(out), optional :: status
    call finish(dao_stream_wait_event(self%handle, event%handle), status)
  end subroutine stream_wait_event

  !> Copy bytes from src to dst in stream order (dao_memcpy_async). The
  !> memory must stay valid until the copy has run: pass c_loc of arrays that
  !> live that long (dao_allocate arrays, or `target` arrays), never of an
  !> expression or a temporary.
  subroutine stream_copy(self, dst, src, bytes, status)
    class(dao_stream), intent(in) :: self
    type(c_ptr), intent(in) :: dst, src
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out), optional :: status
    if (bad_size(bytes, 'dao_stream%copy: bytes', status)) return
    call finish(dao_memcpy_async(dst, src, int(bytes, c_size_t), self%handle), status)
  end subroutine stream_copy

  !> Run a bind(C) host function (interface dao_host_fn) in stream order.
  subroutine stream_launch_host_func(self, fn, user_data, status)
    class(dao_stream), intent(in) :: self
    procedure(dao_host_fn) :: fn
    type(c_ptr), intent(in), optional :: user_data
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: data
    data = c_null_ptr
    if (present(user_data)) data = user_data
    call finish(dao_launch_host_func(self%handle, c_funloc(fn), data), status)
  end subroutine stream_launch_host_func

  !> Destroy the stream after its queued work has run.
  subroutine stream_destroy(self, status)
    class(dao_stream), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_stream_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine stream_destroy

  !> Create an event on a place (it counts as completed).
  subroutine event_create(self, place, status)
    class(dao_event), intent(inout) :: self
    type(dao_place), intent(in) :: place
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_event%create', status)) return
    h = c_null_ptr
    st = dao_event_create(place, h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine event_create

  !> Record the event at the end of a stream (absent: completes at once).
  subroutine event_record(self, stream, status)
    class(dao_event), intent(in) :: self
    type(dao_stream), intent(in), optional :: stream
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: s
    s = c_null_ptr
    if (present(stream)) s = stream%handle
    call finish(dao_event_record(self%handle, s), status)
  end subroutine event_record

  !> Whether the event has completed, without waiting.
  function event_is_done(self, status) result(done)
    class(dao_event), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    logical :: done
    integer(c_int) :: flag, st
    flag = 0
    st = dao_event_query(self%handle, flag)
    done = st == DAO_OK .and. flag /= 0
    call finish(st, status)
  end function event_is_done

  !> Wait until the event has completed.
  subroutine event_synchronize(self, status)
    class(dao_event), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_event_synchronize(self%handle), status)
  end subroutine event_synchronize

  subroutine event_destroy(self, status)
    class(dao_event), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_event_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine event_destroy

  ! ================================================================ snapshot

  !> Number of segments (0 on failure).
  function snapshot_segment_count(self, status) result(count)
    class(dao_snapshot), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer :: count
    integer(c_size_t) :: n
    integer(c_int) :: st
    n = 0
    st = dao_snapshot_segment_count(self%handle, n)
    count = int(n)
    call finish(st, status)
  end function snapshot_segment_count

  !> Segment i (1 .. segment_count()), in address order.
  subroutine snapshot_segment(self, i, info, status)
    class(dao_snapshot), intent(in) :: self
    integer, intent(in) :: i
    type(dao_segment_info), intent(out) :: info
    integer(c_int), intent(out), optional :: status
    info%struct_size = c_sizeof(info)
    call finish(dao_snapshot_segment(self%handle, int(i - 1, c_size_t), info), status)
  end subroutine snapshot_segment

  !> Block j (1 .. block_count of the segment) of segment i, in address order.
  subroutine snapshot_block(self, i, j, info, status)
    class(dao_snapshot), intent(in) :: self
    integer, intent(in) :: i, j
    type(dao_block_info), intent(out) :: info
    integer(c_int), intent(out), optional :: status
    info%struct_size = c_sizeof(info)
    call finish(dao_snapshot_block(self%handle, int(i - 1, c_size_t), int(j - 1, c_size_t), &
                                   info), status)
  end subroutine snapshot_block

  subroutine snapshot_destroy(self, status)
    class(dao_snapshot), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_snapshot_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine snapshot_destroy

  ! =========================================================== recycle pools

  ! The shape as C size_t extents; .false. (failure delivered) if one is
  ! negative. The order is kept: Fortran extents go in column-major order.
  function to_size_t_shape(shape, what, extents, status) result(ok)
    integer(int64), intent(in) :: shape(:)
    character(len=*), intent(in) :: what
    integer(c_size_t), allocatable, intent(out) :: extents(:)
    integer(c_int), intent(out), optional :: status
    logical :: ok
    integer :: d
    ok = .false.
    do d = 1, size(shape)
      if (bad_size(shape(d), what // ': an extent', status)) return
    end do
    extents = int(shape, c_size_t)
    if (size(extents) == 0) then
      ! ndim 0 is refused by libdao; give it one element to point at.
      deallocate (extents)
      allocate (extents(1))
      extents = 0
    end if
    ok = .true.
  end function to_size_t_shape

  !> Create a pool of at most max_buffers buffers of element_size bytes per
  !> element and the given shape (Fortran order: shape(1) varies fastest;
  !> 1 to DAO_RECYCLE_MAX_DIMS extents) on a place; `preallocate` (default 0)
  !> are created now. config: "name=...,spin=..." or absent.
  subroutine recycle_create_s64(self, place, element_size, shape, max_buffers, preallocate, &
                                config, status)
    class(dao_recycle_pool), intent(inout) :: self
    type(dao_place), intent(in) :: place
    integer, intent(in) :: element_size
    integer(int64), intent(in) :: shape(:)
    integer, intent(in) :: max_buffers
    integer, intent(in), optional :: preallocate
    character(len=*), intent(in), optional :: config
    integer(c_int), intent(out), optional :: status
    integer(c_size_t), allocatable :: extents(:)
    integer(c_size_t) :: pre
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_recycle_pool%create', status)) return
    if (bad_size(int(element_size, int64), 'dao_recycle_pool%create: element_size', status)) return
    if (bad_size(int(max_buffers, int64), 'dao_recycle_pool%create: max_buffers', status)) return
    pre = 0
    if (present(preallocate)) then
      if (bad_size(int(preallocate, int64), 'dao_recycle_pool%create: preallocate', status)) return
      pre = int(preallocate, c_size_t)
    end if
    if (.not. to_size_t_shape(shape, 'dao_recycle_pool%create', extents, status)) return
    h = c_null_ptr
    if (present(config)) then
      st = dao_recycle_create(place, int(element_size, c_size_t), int(size(shape), c_int), &
                              extents, int(max_buffers, c_size_t), pre, c_string(config), h)
    else
      st = dao_recycle_create(place, int(element_size, c_size_t), int(size(shape), c_int), &
                              extents, int(max_buffers, c_size_t), pre, out=h)
    end if
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine recycle_create_s64

  subroutine recycle_create_s32(self, place, element_size, shape, max_buffers, preallocate, &
                                config, status)
    class(dao_recycle_pool), intent(inout) :: self
    type(dao_place), intent(in) :: place
    integer, intent(in) :: element_size
    integer(int32), intent(in) :: shape(:)
    integer, intent(in) :: max_buffers
    integer, intent(in), optional :: preallocate
    character(len=*), intent(in), optional :: config
    integer(c_int), intent(out), optional :: status
    call self%recycle_create_s64(place, element_size, int(shape, int64), max_buffers, &
                                 preallocate, config, status)
  end subroutine recycle_create_s32

  ! Seconds for a blocking call: absent waits for ever (as a negative value).
  function timeout_seconds(timeout) result(seconds)
    real(real64), intent(in), optional :: timeout
    real(c_double) :: seconds
    seconds = -1.0_c_double
    if (present(timeout)) seconds = timeout
  end function timeout_seconds

  !> Get a free buffer to fill, waiting at most `timeout` seconds (absent:
  !> for ever; 0: try once). The caller holds one reference.
  subroutine recycle_acquire(self, buffer, timeout, status)
    class(dao_recycle_pool), intent(in) :: self
    type(dao_buffer), intent(inout) :: buffer
    real(real64), intent(in), optional :: timeout
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(buffer%handle, 'dao_recycle_pool%acquire', status)) return
    h = c_null_ptr
    st = dao_recycle_acquire(self%handle, timeout_seconds(timeout), h)
    if (st == DAO_OK) buffer%handle = h
    call finish(st, status)
  end subroutine recycle_acquire

  !> Queue a filled buffer: moves the caller's reference into the queue, so
  !> `buffer` is emptied (retain and keep a copy first to go on using it).
  subroutine recycle_submit(self, buffer, status)
    class(dao_recycle_pool), intent(in) :: self
    type(dao_buffer), intent(inout) :: buffer
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_recycle_submit(self%handle, buffer%handle)
    if (st == DAO_OK) buffer%handle = c_null_ptr
    call finish(st, status)
  end subroutine recycle_submit

  !> Take the next submitted buffer (first in, first out), waiting at most
  !> `timeout` seconds (absent: for ever). The caller holds one reference.
  subroutine recycle_take(self, buffer, timeout, status)
    class(dao_recycle_pool), intent(in) :: self
    type(dao_buffer), intent(inout) :: buffer
    real(real64), intent(in), optional :: timeout
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(buffer%handle, 'dao_recycle_pool%take', status)) return
    h = c_null_ptr
    st = dao_recycle_take(self%handle, timeout_seconds(timeout), h)
    if (st == DAO_OK) buffer%handle = h
    call finish(st, status)
  end subroutine recycle_take

  !> Close the pool: wake waiters with DAO_ERR_CLOSED, refuse new acquires.
  subroutine recycle_close(self, status)
    class(dao_recycle_pool), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_recycle_close(self%handle), status)
  end subroutine recycle_close

  !> Read the statistics (struct_size is set here).
  subroutine recycle_get_stats(self, stats, status)
    class(dao_recycle_pool), intent(in) :: self
    type(dao_recycle_stats), intent(out) :: stats
    integer(c_int), intent(out), optional :: status
    stats%struct_size = c_sizeof(stats)
    call finish(dao_recycle_get_stats(self%handle, stats), status)
  end subroutine recycle_get_stats

  !> Destroy the pool (refused with DAO_ERR_BUSY while buffers are out).
  subroutine recycle_destroy(self, status)
    class(dao_recycle_pool), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_recycle_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine recycle_destroy

  !> Add a reference, for another holder: copy the variable after this.
  subroutine buffer_retain(self, status)
    class(dao_buffer), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_buffer_retain(self%handle), status)
  end subroutine buffer_retain

  !> Drop this variable's reference (the last one returns the buffer to the
  !> pool); the variable is emptied.
  subroutine buffer_release(self, status)
    class(dao_buffer), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_buffer_release(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine buffer_release

  !> Data pointer (host-accessible unless the place is a CUDA device).
  function buffer_data(self, status) result(data)
    class(dao_buffer), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: data
    integer(c_int) :: st
    data = c_null_ptr
    st = dao_buffer_data(self%handle, data)
    call finish(st, status)
  end function buffer_data

  !> Extents as the pool was created with them; with c_order=.true.,
  !> reversed (for a pool whose creator gave a C, row-major shape).
  function buffer_shape(self, c_order, status) result(extents)
    class(dao_buffer), intent(in) :: self
    logical, intent(in), optional :: c_order
    integer(c_int), intent(out), optional :: status
    integer(int64), allocatable :: extents(:)
    integer(c_size_t), pointer :: c_shape(:)
    type(c_ptr) :: p
    integer(c_int) :: ndim, st
    ndim = 0
    p = c_null_ptr
    st = dao_buffer_shape(self%handle, ndim, p)
    if (st == DAO_OK) then
      call c_f_pointer(p, c_shape, [ndim])
      extents = int(c_shape, int64)
      if (present(c_order)) then
        if (c_order) extents = extents(ndim:1:-1)
      end if
    else
      allocate (extents(0))
    end if
    call finish(st, status)
  end function buffer_shape

  !> Bytes per element (0 on failure).
  function buffer_element_size(self, status) result(bytes)
    class(dao_buffer), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer(int64) :: bytes
    integer(c_size_t) :: n
    integer(c_int) :: st
    n = 0
    st = dao_buffer_size(self%handle, element_size=n)
    bytes = n
    call finish(st, status)
  end function buffer_element_size

  !> Total bytes: element size times the number of elements (0 on failure).
  function buffer_bytes(self, status) result(bytes)
    class(dao_buffer), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer(int64) :: bytes
    integer(c_size_t) :: n
    integer(c_int) :: st
    n = 0
    st = dao_buffer_size(self%handle, bytes=n)
    bytes = n
    call finish(st, status)
  end function buffer_bytes

  function buffer_place(self, status) result(place)
    class(dao_buffer), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    type(dao_place) :: place
    integer(c_int) :: st
    st = dao_buffer_place(self%handle, place)
    call finish(st, status)
  end function buffer_place

  !> Position in the pool's order of submission (0 for the first submit), or
  !> DAO_UINT64_MAX (-1) if not submitted since it was acquired.
  function buffer_sequence(self, status) result(sequence)
    class(dao_buffer), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer(int64) :: sequence
    integer(c_int64_t) :: s
    integer(c_int) :: st
    s = DAO_UINT64_MAX
    st = dao_buffer_sequence(self%handle, s)
    sequence = s
    call finish(st, status)
  end function buffer_sequence

  ! ============================================================= collections

  subroutine collection_create(self, status)
    class(dao_collection), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_collection%create', status)) return
    h = c_null_ptr
    st = dao_collection_create(h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine collection_create

  !> Create a pool under a name, with the arguments of
  !> dao_recycle_pool%create. The collection owns it; `pool` (if present)
  !> receives a borrowed handle, valid while the collection lives.
  subroutine collection_add_s64(self, name, place, element_size, shape, max_buffers, &
                                preallocate, config, pool, status)
    class(dao_collection), intent(in) :: self
    character(len=*), intent(in) :: name
    type(dao_place), intent(in) :: place
    integer, intent(in) :: element_size
    integer(int64), intent(in) :: shape(:)
    integer, intent(in) :: max_buffers
    integer, intent(in), optional :: preallocate
    character(len=*), intent(in), optional :: config
    type(dao_recycle_pool), intent(inout), optional :: pool
    integer(c_int), intent(out), optional :: status
    integer(c_size_t), allocatable :: extents(:)
    integer(c_size_t) :: pre
    type(c_ptr) :: h
    integer(c_int) :: st
    if (present(pool)) then
      if (holds_handle(pool%handle, 'dao_collection%add', status)) return
    end if
    if (bad_size(int(element_size, int64), 'dao_collection%add: element_size', status)) return
    if (bad_size(int(max_buffers, int64), 'dao_collection%add: max_buffers', status)) return
    pre = 0
    if (present(preallocate)) then
      if (bad_size(int(preallocate, int64), 'dao_collection%add: preallocate', status)) return
      pre = int(preallocate, c_size_t)
    end if
    if (.not. to_size_t_shape(shape, 'dao_collection%add', extents, status)) return
    h = c_null_ptr
    if (present(config)) then
      st = dao_collection_add(self%handle, c_string(name), place, int(element_size, c_size_t), &
                              int(size(shape), c_int), extents, int(max_buffers, c_size_t), &
                              pre, c_string(config), h)
    else
      st = dao_collection_add(self%handle, c_string(name), place, int(element_size, c_size_t), &
                              int(size(shape), c_int), extents, int(max_buffers, c_size_t), &
                              pre, out=h)
    end if
    if (st == DAO_OK .and. present(pool)) pool%handle = h
    call finish(st, status)
  end subroutine collection_add_s64

  subroutine collection_add_s32(self, name, place, element_size, shape, max_buffers, &
                                preallocate, config, pool, status)
    class(dao_collection), intent(in) :: self
    character(len=*), intent(in) :: name
    type(dao_place), intent(in) :: place
    integer, intent(in) :: element_size
    integer(int32), intent(in) :: shape(:)
    integer, intent(in) :: max_buffers
    integer, intent(in), optional :: preallocate
    character(len=*), intent(in), optional :: config
    type(dao_recycle_pool), intent(inout), optional :: pool
    integer(c_int), intent(out), optional :: status
    call self%collection_add_s64(name, place, element_size, int(shape, int64), max_buffers, &
                                 preallocate, config, pool, status)
  end subroutine collection_add_s32

  !> Look a pool up by name (DAO_ERR_NOT_FOUND if there is none); `pool`
  !> receives a borrowed handle, valid while the collection lives.
  subroutine collection_find(self, name, pool, status)
    class(dao_collection), intent(in) :: self
    character(len=*), intent(in) :: name
    type(dao_recycle_pool), intent(inout) :: pool
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(pool%handle, 'dao_collection%find', status)) return
    h = c_null_ptr
    st = dao_collection_find(self%handle, c_string(name), h)
    if (st == DAO_OK) pool%handle = h
    call finish(st, status)
  end subroutine collection_find

  subroutine collection_close(self, status)
    class(dao_collection), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_collection_close(self%handle), status)
  end subroutine collection_close

  !> Destroy the collection and its pools (DAO_ERR_BUSY while buffers are out).
  subroutine collection_destroy(self, status)
    class(dao_collection), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_collection_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine collection_destroy

  ! ============================================================ tiered pools

  !> Create a tiered pool: device_budget bytes on `device` (CUDA or SIM),
  !> backed by `host` (CPU or CUDA pinned). config: see tiered.h.
  subroutine tiered_create(self, device, host, device_budget, config, status)
    class(dao_tiered), intent(inout) :: self
    type(dao_place), intent(in) :: device, host
    integer(int64), intent(in) :: device_budget
    character(len=*), intent(in), optional :: config
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_tiered%create', status)) return
    if (bad_size(device_budget, 'dao_tiered%create: device_budget', status)) return
    h = c_null_ptr
    if (present(config)) then
      st = dao_tiered_create(device, host, int(device_budget, c_size_t), c_string(config), h)
    else
      st = dao_tiered_create(device, host, int(device_budget, c_size_t), out=h)
    end if
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine tiered_create

  !> Set the bind(C) scoring function (interface dao_score_fn) of policy
  !> `callback`, before the first submit.
  subroutine tiered_set_score_callback(self, score, user_data, status)
    class(dao_tiered), intent(in) :: self
    procedure(dao_score_fn) :: score
    type(c_ptr), intent(in), optional :: user_data
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: data
    data = c_null_ptr
    if (present(user_data)) data = user_data
    call finish(dao_tiered_set_score_callback(self%handle, c_funloc(score), data), status)
  end subroutine tiered_set_score_callback

  !> Submit a bind(C) kernel (interface dao_kernel_fn) with the tensors it
  !> reads and writes; returns at once. user_data must stay valid until the
  !> kernel has run.
  subroutine tiered_submit(self, kernel, inputs, outputs, user_data, status)
    class(dao_tiered), intent(in) :: self
    procedure(dao_kernel_fn) :: kernel
    type(dao_tensor), intent(in), optional :: inputs(:), outputs(:)
    type(c_ptr), intent(in), optional :: user_data
    integer(c_int), intent(out), optional :: status
    type(c_ptr), allocatable :: ins(:), outs(:)
    type(c_ptr) :: data
    integer :: i
    data = c_null_ptr
    if (present(user_data)) data = user_data
    if (present(inputs)) then
      allocate (ins(size(inputs)))
      do i = 1, size(inputs)
        ins(i) = inputs(i)%handle
      end do
    else
      allocate (ins(0))
    end if
    if (present(outputs)) then
      allocate (outs(size(outputs)))
      do i = 1, size(outputs)
        outs(i) = outputs(i)%handle
      end do
    else
      allocate (outs(0))
    end if
    call finish(dao_kernel_submit(self%handle, c_funloc(kernel), data, ins, &
                                  size(ins, kind=c_size_t), outs, size(outs, kind=c_size_t)), &
                status)
  end subroutine tiered_submit

  !> Wait until every submitted kernel has run (DAO_ERR_INVALID_STATE if the
  !> pool failed; the message says which kernel and why).
  subroutine tiered_synchronize(self, status)
    class(dao_tiered), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_tiered_synchronize(self%handle), status)
  end subroutine tiered_synchronize

  !> Wait for the kernels so far, move every resident tensor to the host
  !> tier and give the device budget back (a later kernel takes it again).
  subroutine tiered_trim(self, status)
    class(dao_tiered), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_tiered_trim(self%handle), status)
  end subroutine tiered_trim

  !> Read the statistics (struct_size is set here).
  subroutine tiered_get_stats(self, stats, status)
    class(dao_tiered), intent(in) :: self
    type(dao_tiered_stats), intent(out) :: stats
    integer(c_int), intent(out), optional :: status
    stats%struct_size = c_sizeof(stats)
    call finish(dao_tiered_get_stats(self%handle, stats), status)
  end subroutine tiered_get_stats

  !> Read what the pool copied between its tiers and how long that took
  !> (struct_size is set here).
  subroutine tiered_get_link_stats(self, stats, status)
    class(dao_tiered), intent(in) :: self
    type(dao_tiered_link_stats), intent(out) :: stats
    integer(c_int), intent(out), optional :: status
    stats%struct_size = c_sizeof(stats)
    call finish(dao_tiered_get_link_stats(self%handle, stats), status)
  end subroutine tiered_get_link_stats

  !> Stop the executor after the queued kernels and free everything; every
  !> tensor handle of the pool becomes invalid.
  subroutine tiered_destroy(self, status)
    class(dao_tiered), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_tiered_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine tiered_destroy

  !> Create a tensor of `bytes` in a tiered pool.
  subroutine tensor_create(self, pool, bytes, status)
    class(dao_tensor), intent(inout) :: self
    type(dao_tiered), intent(in) :: pool
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out), optional :: status
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_tensor%create', status)) return
    if (bad_size(bytes, 'dao_tensor%create: bytes', status)) return
    h = c_null_ptr
    st = dao_tensor_create(pool%handle, int(bytes, c_size_t), h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine tensor_create

  !> Write host memory (bytes must equal the tensor's size) in kernel order.
  !> The generic `write` also takes any numeric array or scalar.
  subroutine tensor_write_bytes(self, src, bytes, status)
    class(dao_tensor), intent(in) :: self
    type(c_ptr), intent(in) :: src
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out), optional :: status
    if (bad_size(bytes, 'dao_tensor%write: bytes', status)) return
    call finish(dao_tensor_write(self%handle, src, int(bytes, c_size_t)), status)
  end subroutine tensor_write_bytes

  !> Read the tensor into host memory after the kernels that write it.
  !> The generic `read` also takes any numeric array or scalar.
  subroutine tensor_read_bytes(self, dst, bytes, status)
    class(dao_tensor), intent(in) :: self
    type(c_ptr), intent(in) :: dst
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out), optional :: status
    if (bad_size(bytes, 'dao_tensor%read: bytes', status)) return
    call finish(dao_tensor_read(self%handle, dst, int(bytes, c_size_t)), status)
  end subroutine tensor_read_bytes

  !> Where the data is now: DAO_TENSOR_* (DAO_TENSOR_UNINITIALIZED on failure).
  function tensor_state(self, status) result(state)
    class(dao_tensor), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: state
    integer(c_int) :: st
    state = DAO_TENSOR_UNINITIALIZED
    st = dao_tensor_get_state(self%handle, state)
    call finish(st, status)
  end function tensor_state

  !> No use after those already submitted needs the data; the handle stays
  !> (dao_tensor_retire): once the queued uses have run, evicting it copies
  !> nothing back, and a read fails until it is written again.
  subroutine tensor_retire(self, status)
    class(dao_tensor), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_tensor_retire(self%handle), status)
  end subroutine tensor_retire

  !> Drop the handle; the memory goes once no queued kernel uses the tensor.
  subroutine tensor_release(self, status)
    class(dao_tensor), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_tensor_release(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine tensor_release

  !> In a kernel: the device pointer of argument i (1 .. count) of `list`
  !> (its inputs or outputs); a null pointer when i is out of range.
  function dao_kernel_arg(list, count, i) result(ptr)
    type(c_ptr), intent(in) :: list
    integer(c_size_t), intent(in) :: count
    integer, intent(in) :: i
    type(c_ptr) :: ptr
    type(c_ptr), pointer :: ptrs(:)
    ptr = c_null_ptr
    if (i < 1 .or. i > count .or. .not. c_associated(list)) return
    call c_f_pointer(list, ptrs, [count])
    ptr = ptrs(i)
  end function dao_kernel_arg

  ! ===================================================== partitioned memory

  !> A communicator over places of this process: comms(i) becomes the handle
  !> of rank i - 1, on places(i). size(comms) must be size(places) (1 ..
  !> DAO_COMM_LOCAL_MAX_RANKS), and every element of comms must be empty.
  !> Each rank's collective calls are then made from a thread of its own.
  subroutine dao_comm_local(comms, places, status)
    type(dao_comm), intent(inout) :: comms(:)
    type(dao_place), intent(in) :: places(:)
    integer(c_int), intent(out), optional :: status
    type(c_ptr), allocatable :: h(:)
    integer(c_int) :: st
    integer :: i
    character(len=64) :: text
    if (size(comms) /= size(places)) then
      write (text, '(a, i0, a, i0, a)') '(', size(comms), ' handles for ', size(places), ' places)'
      call fail(DAO_ERR_INVALID_ARGUMENT, 'dao_comm_local: comms and places differ in size ' // &
                trim(text), status)
      return
    end if
    do i = 1, size(comms)
      if (holds_handle(comms(i)%handle, 'dao_comm_local', status)) return
    end do
    allocate (h(max(size(comms), 1)))
    h = c_null_ptr
    st = dao_comm_create_local(int(size(places), c_int), places, h)
    if (st == DAO_OK) then
      do i = 1, size(comms)
        comms(i)%handle = h(i)
      end do
    end if
    call finish(st, status)
  end subroutine dao_comm_local

  !> Name of a whole memory type ("continuous", "chunked", "distributed").
  function dao_whole_type_string(whole_type) result(name)
    integer(c_int), intent(in) :: whole_type
    character(len=:), allocatable :: name
    call to_string(dao_whole_type_name(whole_type), name)
  end function dao_whole_type_string

  !> Name of a whole memory location ("device", "host").
  function dao_whole_location_string(location) result(name)
    integer(c_int), intent(in) :: location
    character(len=:), allocatable :: name
    call to_string(dao_whole_location_name(location), name)
  end function dao_whole_location_string

  !> Destroy this rank's handle (not collective for in-process
  !> communicators); DAO_ERR_BUSY while whole memory objects of it exist.
  subroutine comm_destroy(self, status)
    class(dao_comm), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_comm_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine comm_destroy

  !> This rank, 0 .. size - 1 (-1 on failure).
  function comm_rank(self, status) result(rank)
    class(dao_comm), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer :: rank
    integer(c_int) :: r
    r = -1
    call finish(dao_comm_rank(self%handle, r), status)
    rank = r
  end function comm_rank

  !> Number of ranks (0 on failure).
  function comm_size(self, status) result(count)
    class(dao_comm), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    integer :: count
    integer(c_int) :: n
    n = 0
    call finish(dao_comm_size(self%handle, n), status)
    count = n
  end function comm_size

  !> The place of any rank (0 .. size - 1).
  function comm_rank_place(self, rank, status) result(place)
    class(dao_comm), intent(in) :: self
    integer, intent(in) :: rank
    integer(c_int), intent(out), optional :: status
    type(dao_place) :: place
    place = dao_place()
    call finish(dao_comm_rank_place(self%handle, int(rank, c_int), place), status)
  end function comm_rank_place

  !> Describe the communicator (struct_size is set here); transport: its
  !> name ("in-process", "mpi").
  subroutine comm_info(self, info, transport, status)
    class(dao_comm), intent(in) :: self
    type(dao_comm_info), intent(out) :: info
    character(len=:), allocatable, intent(out), optional :: transport
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    info%struct_size = c_sizeof(info)
    st = dao_comm_get_info(self%handle, info)
    if (present(transport)) call to_string(info%transport, transport)
    call finish(st, status)
  end subroutine comm_info

  !> Wait for every rank; makes earlier writes visible to all. Collective.
  subroutine comm_barrier(self, status)
    class(dao_comm), intent(in) :: self
    integer(c_int), intent(out), optional :: status
    call finish(dao_comm_barrier(self%handle), status)
  end subroutine comm_barrier

  !> Whether this communicator can build whole memory of a type
  !> (DAO_WHOLE_CONTINUOUS ...) on a location (DAO_WHOLE_DEVICE, _HOST). A
  !> "no" is status DAO_ERR_UNSUPPORTED, with a message that says why.
  function comm_supported(self, whole_type, location, status) result(yes)
    class(dao_comm), intent(in) :: self
    integer(c_int), intent(in) :: whole_type, location
    integer(c_int), intent(out), optional :: status
    logical :: yes
    integer(c_int) :: st
    st = dao_whole_supported(self%handle, whole_type, location)
    yes = st == DAO_OK
    call finish(st, status)
  end function comm_supported

  !> Create a whole memory object of total_size bytes made of entries of
  !> entry_size bytes, of a type (DAO_WHOLE_*) on a location (DAO_WHOLE_DEVICE
  !> or DAO_WHOLE_HOST). Collective: every rank of comm, same arguments.
  subroutine whole_create(self, comm, whole_type, location, total_size, entry_size, status)
    class(dao_whole), intent(inout) :: self
    type(dao_comm), intent(in) :: comm
    integer(c_int), intent(in) :: whole_type, location
    integer(int64), intent(in) :: total_size, entry_size
    integer(c_int), intent(out), optional :: status
    type(dao_whole_desc) :: desc
    type(c_ptr) :: h
    integer(c_int) :: st
    if (holds_handle(self%handle, 'dao_whole%create', status)) return
    if (bad_size(total_size, 'dao_whole%create: total_size', status)) return
    if (bad_size(entry_size, 'dao_whole%create: entry_size', status)) return
    desc%struct_size = c_sizeof(desc)
    desc%type = whole_type
    desc%location = location
    desc%total_size = int(total_size, c_size_t)
    desc%entry_size = int(entry_size, c_size_t)
    h = c_null_ptr
    st = dao_whole_create(comm%handle, desc, h)
    if (st == DAO_OK) self%handle = h
    call finish(st, status)
  end subroutine whole_create

  !> Destroy this rank's handle and, once every rank has, the memory.
  !> Collective.
  subroutine whole_destroy(self, status)
    class(dao_whole), intent(inout) :: self
    integer(c_int), intent(out), optional :: status
    integer(c_int) :: st
    st = dao_whole_destroy(self%handle)
    if (st == DAO_OK) self%handle = c_null_ptr
    call finish(st, status)
  end subroutine whole_destroy

  !> Describe the object (struct_size is set here).
  subroutine whole_info(self, info, status)
    class(dao_whole), intent(in) :: self
    type(dao_whole_info), intent(out) :: info
    integer(c_int), intent(out), optional :: status
    info%struct_size = c_sizeof(info)
    call finish(dao_whole_get_info(self%handle, info), status)
  end subroutine whole_info

  !> The entries and bytes rank `rank` (0 .. size - 1) owns.
  subroutine whole_partition(self, rank, range, status)
    class(dao_whole), intent(in) :: self
    integer, intent(in) :: rank
    type(dao_whole_range), intent(out) :: range
    integer(c_int), intent(out), optional :: status
    range%struct_size = c_sizeof(range)
    call finish(dao_whole_get_partition(self%handle, int(rank, c_int), range), status)
  end subroutine whole_partition

  !> The rank that owns entry `index` (0-based; -1 on failure).
  function whole_entry_rank(self, index, status) result(rank)
    class(dao_whole), intent(in) :: self
    integer(int64), intent(in) :: index
    integer(c_int), intent(out), optional :: status
    integer :: rank
    integer(c_int) :: r
    r = -1
    call finish(dao_whole_entry_rank(self%handle, int(index, c_int64_t), r), status)
    rank = r
  end function whole_entry_rank

  !> This rank's own part: its address (c_f_pointer it to an array of the
  !> entry type, except on a CUDA device: there it is a device address, for
  !> kernels and driver copies) and, optionally, its range.
  subroutine whole_local(self, ptr, range, status)
    class(dao_whole), intent(in) :: self
    type(c_ptr), intent(out) :: ptr
    type(dao_whole_range), intent(out), optional :: range
    integer(c_int), intent(out), optional :: status
    ptr = c_null_ptr
    if (present(range)) then
      range%struct_size = c_sizeof(range)
      call finish(dao_whole_get_local(self%handle, ptr, range), status)
    else
      call finish(dao_whole_get_local(self%handle, ptr), status)
    end if
  end subroutine whole_local

  !> The address of rank `rank`'s part of a mapped (continuous or chunked)
  !> object; DAO_ERR_UNSUPPORTED for another rank's part of a distributed one.
  subroutine whole_rank_pointer(self, rank, ptr, status)
    class(dao_whole), intent(in) :: self
    integer, intent(in) :: rank
    type(c_ptr), intent(out) :: ptr
    integer(c_int), intent(out), optional :: status
    ptr = c_null_ptr
    call finish(dao_whole_get_rank_pointer(self%handle, int(rank, c_int), ptr), status)
  end subroutine whole_rank_pointer

  !> The address of entry 0 of a continuous object (DAO_ERR_UNSUPPORTED for
  !> the other types).
  subroutine whole_base(self, ptr, status)
    class(dao_whole), intent(in) :: self
    type(c_ptr), intent(out) :: ptr
    integer(c_int), intent(out), optional :: status
    ptr = c_null_ptr
    call finish(dao_whole_get_base(self%handle, ptr), status)
  end subroutine whole_base

  ! .true. when a buffer of `bytes` holds `count` entries; else the failure
  ! is delivered.
  function whole_buffer_ok(self, count, bytes, what, status) result(ok)
    class(dao_whole), intent(in) :: self
    integer(int64), intent(in) :: count, bytes
    character(len=*), intent(in) :: what
    integer(c_int), intent(out), optional :: status
    logical :: ok
    type(dao_whole_info) :: info
    integer(c_int) :: st
    character(len=96) :: text
    ok = .false.
    if (bad_size(bytes, what // ': bytes', status)) return
    info%struct_size = c_sizeof(info)
    st = dao_whole_get_info(self%handle, info)
    if (st /= DAO_OK) then
      call finish(st, status)
      return
    end if
    ! Nested: Fortran's .and. need not short-circuit (bytes / 0 traps).
    if (count > 0) then
      if (bytes / count < int(info%entry_size, int64)) then
        write (text, '(a, i0, a, i0, a, i0, a)') ' (', count, ' entries of ', info%entry_size, &
          ' bytes, a buffer of ', bytes, ')'
        call fail(DAO_ERR_INVALID_ARGUMENT, what // ': the buffer is too small' // trim(text), &
                  status)
        return
      end if
    end if
    ok = .true.
  end function whole_buffer_ok

  !> Copy entries indices(i) (0-based global indices) into the buffer at
  !> dst, entry after entry: dst holds `bytes` bytes of host-accessible
  !> memory (c_loc of an array), at least size(indices) * entry_size. Not
  !> collective.
  subroutine whole_gather(self, indices, dst, bytes, status)
    class(dao_whole), intent(in) :: self
    integer(int64), intent(in) :: indices(:)
    type(c_ptr), intent(in) :: dst
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out), optional :: status
    integer(c_int64_t), allocatable :: idx(:)
    if (.not. whole_buffer_ok(self, size(indices, kind=int64), bytes, 'dao_whole%gather', &
                              status)) return
    ! Allocated explicitly: the realloc-on-assignment form trips gfortran's
    ! -Wmaybe-uninitialized at some optimisation levels.
    allocate(idx(size(indices)))
    idx(:) = int(indices, c_int64_t)
    call finish(dao_whole_gather(self%handle, idx, size(idx, kind=c_size_t), dst), status)
  end subroutine whole_gather

  !> Copy the buffer at src (`bytes` bytes, at least size(indices) *
  !> entry_size) into entries indices(i), entry after entry. Not collective;
  !> other ranks see the values after their next collective call.
  subroutine whole_scatter(self, src, bytes, indices, status)
    class(dao_whole), intent(in) :: self
    type(c_ptr), intent(in) :: src
    integer(int64), intent(in) :: bytes
    integer(int64), intent(in) :: indices(:)
    integer(c_int), intent(out), optional :: status
    integer(c_int64_t), allocatable :: idx(:)
    if (.not. whole_buffer_ok(self, size(indices, kind=int64), bytes, 'dao_whole%scatter', &
                              status)) return
    ! Allocated explicitly: the realloc-on-assignment form trips gfortran's
    ! -Wmaybe-uninitialized at some optimisation levels.
    allocate(idx(size(indices)))
    idx(:) = int(indices, c_int64_t)
    call finish(dao_whole_scatter(self%handle, src, idx, size(idx, kind=c_size_t)), status)
  end subroutine whole_scatter

  !> As gather, called by every rank together (each with its own indices,
  !> possibly none): on distributed memory the ranks exchange with
  !> two-sided collectives (MPI_Alltoall, MPI_Alltoallv), the fast path
  !> when all ranks gather at once. Collective: any rank's bad argument
  !> fails every rank. A buffer too small still takes part in the call (as
  !> a NULL buffer, which fails every rank), so that no rank is left
  !> waiting; this rank then reports the size.
  subroutine whole_gather_collective(self, indices, dst, bytes, status)
    class(dao_whole), intent(in) :: self
    integer(int64), intent(in) :: indices(:)
    type(c_ptr), intent(in) :: dst
    integer(int64), intent(in) :: bytes
    integer(c_int), intent(out), optional :: status
    integer(c_int64_t), allocatable :: idx(:)
    integer(c_int) :: st
    logical :: ok
    type(c_ptr) :: out
    allocate(idx(size(indices)))
    idx(:) = int(indices, c_int64_t)
    ok = whole_buffer_ok(self, size(indices, kind=int64), bytes, &
                         'dao_whole%gather_collective', st)
    out = dst
    if (.not. ok) out = c_null_ptr
    st = dao_whole_gather_collective(self%handle, idx, size(idx, kind=c_size_t), out)
    if (.not. ok) then
      ok = whole_buffer_ok(self, size(indices, kind=int64), bytes, &
                           'dao_whole%gather_collective', status)
      return
    end if
    call finish(st, status)
  end subroutine whole_gather_collective

  !> As scatter, called by every rank together (see gather_collective).
  !> Collective.
  subroutine whole_scatter_collective(self, src, bytes, indices, status)
    class(dao_whole), intent(in) :: self
    type(c_ptr), intent(in) :: src
    integer(int64), intent(in) :: bytes
    integer(int64), intent(in) :: indices(:)
    integer(c_int), intent(out), optional :: status
    integer(c_int64_t), allocatable :: idx(:)
    integer(c_int) :: st
    logical :: ok
    type(c_ptr) :: in
    allocate(idx(size(indices)))
    idx(:) = int(indices, c_int64_t)
    ok = whole_buffer_ok(self, size(indices, kind=int64), bytes, &
                         'dao_whole%scatter_collective', st)
    in = src
    if (.not. ok) in = c_null_ptr
    st = dao_whole_scatter_collective(self%handle, in, idx, size(idx, kind=c_size_t))
    if (.not. ok) then
      ok = whole_buffer_ok(self, size(indices, kind=int64), bytes, &
                           'dao_whole%scatter_collective', status)
      return
    end if
    call finish(st, status)
  end subroutine whole_scatter_collective

  !> Write the object to a file (entries in index order). Collective.
  subroutine whole_store(self, path, status)
    class(dao_whole), intent(in) :: self
    character(len=*), intent(in) :: path
    integer(c_int), intent(out), optional :: status
    call finish(dao_whole_store(self%handle, c_string(path)), status)
  end subroutine whole_store

  !> Read the object from a file of exactly total_size bytes. Collective.
  subroutine whole_load(self, path, status)
    class(dao_whole), intent(in) :: self
    character(len=*), intent(in) :: path
    integer(c_int), intent(out), optional :: status
    call finish(dao_whole_load(self%handle, c_string(path)), status)
  end subroutine whole_load

  ! ======================================== generated array procedures

  include "dao_arrays_body.inc"

end module dao
