!> The bind(C) structs of module dao_c have the layout of the C structs (size
!> and every field's offset, from layout_c.c compiled against the headers),
!> and every constant has the value of the header's.
program test_layout
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use dao
  use dao_test_support
  implicit none

  interface
    function daot_layout(type, field) bind(C, name="daot_layout") result(r)
      import :: c_int, c_size_t
      integer(c_int), value :: type, field
      integer(c_size_t) :: r
    end function daot_layout
    function daot_constant_count() bind(C, name="daot_constant_count") result(r)
      import :: c_int
      integer(c_int) :: r
    end function daot_constant_count
    function daot_constant_name(i) bind(C, name="daot_constant_name") result(r)
      import :: c_int, c_ptr
      integer(c_int), value :: i
      type(c_ptr) :: r
    end function daot_constant_name
    function daot_constant_value(i) bind(C, name="daot_constant_value") result(r)
      import :: c_int, c_long_long
      integer(c_int), value :: i
      integer(c_long_long) :: r
    end function daot_constant_value
    function daot_version_string() bind(C, name="daot_version_string") result(r)
      import :: c_ptr
      type(c_ptr) :: r
    end function daot_version_string
  end interface

  type(dao_place), target :: place
  type(dao_allocator_stats), target :: allocator_stats
  type(dao_stat), target :: stat
  type(dao_segment_info), target :: segment
  type(dao_block_info), target :: block
  type(dao_recycle_stats), target :: recycle_stats
  type(dao_tensor_access_info), target :: access
  type(dao_tiered_stats), target :: tiered_stats
  type(dao_whole_desc), target :: whole_desc
  type(dao_whole_range), target :: whole_range
  type(dao_whole_info), target :: whole_info
  type(dao_comm_info), target :: comm_info
  type(dao_comm_transport), target :: transport
  type(dao_tiered_link_stats), target :: link_stats

  call check_struct(0, 'dao_place', c_sizeof(place), [off(c_loc(place%kind), c_loc(place)), &
                                                      off(c_loc(place%device), c_loc(place))])
  associate (s => allocator_stats)
    call check_struct(1, 'dao_allocator_stats', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%allocated_bytes), c_loc(s)), &
      off(c_loc(s%peak_allocated_bytes), c_loc(s)), off(c_loc(s%requested_bytes), c_loc(s)), &
      off(c_loc(s%reserved_bytes), c_loc(s)), off(c_loc(s%peak_reserved_bytes), c_loc(s)), &
      off(c_loc(s%live_blocks), c_loc(s)), off(c_loc(s%alloc_count), c_loc(s)), &
      off(c_loc(s%free_count), c_loc(s)), off(c_loc(s%failed_alloc_count), c_loc(s)), &
      off(c_loc(s%system_alloc_count), c_loc(s)), off(c_loc(s%system_free_count), c_loc(s)), &
      off(c_loc(s%largest_free_block), c_loc(s)), off(c_loc(s%alloc_retry_count), c_loc(s))])
  end associate
  call check_struct(2, 'dao_stat', c_sizeof(stat), [ &
    off(c_loc(stat%current), c_loc(stat)), off(c_loc(stat%peak), c_loc(stat)), &
    off(c_loc(stat%allocated), c_loc(stat)), off(c_loc(stat%freed), c_loc(stat))])
  associate (s => segment)
    call check_struct(3, 'dao_segment_info', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%address), c_loc(s)), &
      off(c_loc(s%size), c_loc(s)), off(c_loc(s%mapped_bytes), c_loc(s)), &
      off(c_loc(s%pool), c_loc(s)), off(c_loc(s%stream), c_loc(s)), &
      off(c_loc(s%expandable), c_loc(s)), off(c_loc(s%block_count), c_loc(s))])
  end associate
  associate (s => block)
    call check_struct(4, 'dao_block_info', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%address), c_loc(s)), &
      off(c_loc(s%size), c_loc(s)), off(c_loc(s%requested_size), c_loc(s)), &
      off(c_loc(s%state), c_loc(s)), off(c_loc(s%stream), c_loc(s))])
  end associate
  associate (s => recycle_stats)
    call check_struct(5, 'dao_recycle_stats', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%created), c_loc(s)), &
      off(c_loc(s%free), c_loc(s)), off(c_loc(s%queued), c_loc(s)), &
      off(c_loc(s%held), c_loc(s)), off(c_loc(s%peak_free), c_loc(s)), &
      off(c_loc(s%peak_queued), c_loc(s)), off(c_loc(s%peak_held), c_loc(s)), &
      off(c_loc(s%acquired), c_loc(s)), off(c_loc(s%submitted), c_loc(s)), &
      off(c_loc(s%taken), c_loc(s)), off(c_loc(s%acquire_waits), c_loc(s)), &
      off(c_loc(s%take_waits), c_loc(s)), off(c_loc(s%acquire_wait_ns), c_loc(s)), &
      off(c_loc(s%take_wait_ns), c_loc(s)), off(c_loc(s%timeouts), c_loc(s))])
  end associate
  associate (s => access)
    call check_struct(6, 'dao_tensor_access_info', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%tensor), c_loc(s)), &
      off(c_loc(s%bytes), c_loc(s)), off(c_loc(s%now), c_loc(s)), &
      off(c_loc(s%last_use), c_loc(s)), off(c_loc(s%next_use), c_loc(s)), &
      off(c_loc(s%queued_uses), c_loc(s)), off(c_loc(s%dirty), c_loc(s))])
  end associate
  associate (s => tiered_stats)
    call check_struct(7, 'dao_tiered_stats', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%kernels_submitted), c_loc(s)), &
      off(c_loc(s%kernels_run), c_loc(s)), off(c_loc(s%evictions), c_loc(s)), &
      off(c_loc(s%bytes_evicted), c_loc(s)), off(c_loc(s%fetches), c_loc(s)), &
      off(c_loc(s%bytes_fetched), c_loc(s)), off(c_loc(s%prefetches), c_loc(s)), &
      off(c_loc(s%prefetches_in_time), c_loc(s)), off(c_loc(s%stall_ns), c_loc(s)), &
      off(c_loc(s%device_bytes), c_loc(s)), off(c_loc(s%peak_device_bytes), c_loc(s)), &
      off(c_loc(s%host_bytes), c_loc(s)), off(c_loc(s%peak_host_bytes), c_loc(s)), &
      off(c_loc(s%tensors_live), c_loc(s)), off(c_loc(s%device_range_bytes), c_loc(s)), &
      off(c_loc(s%trims), c_loc(s)), off(c_loc(s%idle_trims), c_loc(s))])
  end associate
  associate (s => whole_desc)
    call check_struct(8, 'dao_whole_desc', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%type), c_loc(s)), &
      off(c_loc(s%location), c_loc(s)), off(c_loc(s%total_size), c_loc(s)), &
      off(c_loc(s%entry_size), c_loc(s))])
  end associate
  associate (s => whole_range)
    call check_struct(9, 'dao_whole_range', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%rank), c_loc(s)), &
      off(c_loc(s%first_entry), c_loc(s)), off(c_loc(s%entry_count), c_loc(s)), &
      off(c_loc(s%byte_offset), c_loc(s)), off(c_loc(s%byte_size), c_loc(s))])
  end associate
  associate (s => whole_info)
    call check_struct(10, 'dao_whole_info', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%type), c_loc(s)), &
      off(c_loc(s%location), c_loc(s)), off(c_loc(s%total_size), c_loc(s)), &
      off(c_loc(s%entry_size), c_loc(s)), off(c_loc(s%entry_count), c_loc(s)), &
      off(c_loc(s%rank), c_loc(s)), off(c_loc(s%size), c_loc(s)), &
      off(c_loc(s%place), c_loc(s))])
  end associate
  associate (s => comm_info)
    call check_struct(11, 'dao_comm_info', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%rank), c_loc(s)), &
      off(c_loc(s%size), c_loc(s)), off(c_loc(s%place), c_loc(s)), &
      off(c_loc(s%transport), c_loc(s)), off(c_loc(s%shares_address_space), c_loc(s)), &
      off(c_loc(s%shares_host_memory), c_loc(s))])
  end associate
  associate (s => transport)
    call check_struct(12, 'dao_comm_transport', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%self), c_loc(s)), &
      off(c_loc(s%rank), c_loc(s)), off(c_loc(s%size), c_loc(s)), &
      off(c_loc(s%name), c_loc(s)), off(c_loc(s%shares_host_memory), c_loc(s)), &
      off(c_loc(s%last_error), c_loc(s)), off(c_loc(s%barrier), c_loc(s)), &
      off(c_loc(s%allgather), c_loc(s)), off(c_loc(s%window_create), c_loc(s)), &
      off(c_loc(s%window_allocate), c_loc(s)), off(c_loc(s%window_get), c_loc(s)), &
      off(c_loc(s%window_put), c_loc(s)), off(c_loc(s%window_complete), c_loc(s)), &
      off(c_loc(s%window_free), c_loc(s)), off(c_loc(s%shared_allocate), c_loc(s)), &
      off(c_loc(s%shared_query), c_loc(s)), off(c_loc(s%shared_free), c_loc(s)), &
      off(c_loc(s%destroy), c_loc(s)), off(c_loc(s%window_get_many), c_loc(s)), &
      off(c_loc(s%window_put_many), c_loc(s))])
  end associate
  associate (s => link_stats)
    call check_struct(13, 'dao_tiered_link_stats', c_sizeof(s), [ &
      off(c_loc(s%struct_size), c_loc(s)), off(c_loc(s%bytes_to_device), c_loc(s)), &
      off(c_loc(s%bytes_to_host), c_loc(s)), off(c_loc(s%copies_to_device), c_loc(s)), &
      off(c_loc(s%copies_to_host), c_loc(s)), off(c_loc(s%copy_ns_to_device), c_loc(s)), &
      off(c_loc(s%copy_ns_to_host), c_loc(s)), off(c_loc(s%copy_ns), c_loc(s)), &
      off(c_loc(s%stall_ns), c_loc(s)), off(c_loc(s%kernel_ns), c_loc(s)), &
      off(c_loc(s%hidden_ns), c_loc(s)), off(c_loc(s%to_device_bytes_per_s), c_loc(s)), &
      off(c_loc(s%to_host_bytes_per_s), c_loc(s)), &
      off(c_loc(s%staged_bytes), c_loc(s)), off(c_loc(s%staging_bytes), c_loc(s)), &
      off(c_loc(s%host_pageable), c_loc(s)), off(c_loc(s%staged), c_loc(s))])
  end associate
  ! No struct past the last one.
  call check(daot_layout(14_c_int, 0_c_int) == -1_c_size_t, 'layout table has 14 structs')

  call check_constants()
  call check(dao_string(daot_version_string()) == DAO_MODULE_VERSION_STRING, &
             'DAO_MODULE_VERSION_STRING is the header''s DAO_VERSION_STRING')
  call check(dao_version() == DAO_MODULE_VERSION_STRING, 'library version is the module''s')
  call check(dao_version_number() == DAO_MODULE_VERSION_NUMBER, &
             'dao_version_number() is DAO_MODULE_VERSION_NUMBER')

  call test_done('test_layout')

contains

  function off(field, base) result(offset)
    type(c_ptr), intent(in) :: field, base
    integer(c_size_t) :: offset
    offset = int(transfer(field, 0_c_intptr_t) - transfer(base, 0_c_intptr_t), c_size_t)
  end function off

  subroutine check_struct(type, name, nbytes, offsets)
    integer, intent(in) :: type
    character(len=*), intent(in) :: name
    integer(c_size_t), intent(in) :: nbytes
    integer(c_size_t), intent(in) :: offsets(:)
    integer :: i
    character(len=160) :: text
    write (text, '(a, a, i0, a, i0)') name, ': sizeof ', daot_layout(int(type, c_int), 0_c_int), &
      ' in C, c_sizeof ', nbytes
    call check(daot_layout(int(type, c_int), 0_c_int) == nbytes, trim(text))
    do i = 1, size(offsets)
      write (text, '(a, a, i0, a, i0, a, i0)') name, ': field ', i, ' at ', &
        daot_layout(int(type, c_int), int(i, c_int)), ' in C, at ', offsets(i)
      call check(daot_layout(int(type, c_int), int(i, c_int)) == offsets(i), trim(text))
    end do
    write (text, '(a, a, i0, a)') name, ': C has ', size(offsets), ' fields too'
    call check(daot_layout(int(type, c_int), int(size(offsets) + 1, c_int)) == -1_c_size_t, &
               trim(text))
  end subroutine check_struct

  ! The Fortran value of the constant that C calls `name`.
  subroutine fortran_value(name, value, found)
    character(len=*), intent(in) :: name
    integer(int64), intent(out) :: value
    logical, intent(out) :: found
    found = .true.
    select case (name)
    case ('DAO_OK'); value = DAO_OK
    case ('DAO_ERR_INVALID_ARGUMENT'); value = DAO_ERR_INVALID_ARGUMENT
    case ('DAO_ERR_OUT_OF_MEMORY'); value = DAO_ERR_OUT_OF_MEMORY
    case ('DAO_ERR_INVALID_POINTER'); value = DAO_ERR_INVALID_POINTER
    case ('DAO_ERR_UNSUPPORTED'); value = DAO_ERR_UNSUPPORTED
    case ('DAO_ERR_NO_DEVICE'); value = DAO_ERR_NO_DEVICE
    case ('DAO_ERR_TIMEOUT'); value = DAO_ERR_TIMEOUT
    case ('DAO_ERR_CLOSED'); value = DAO_ERR_CLOSED
    case ('DAO_ERR_BACKEND'); value = DAO_ERR_BACKEND
    case ('DAO_ERR_INTERNAL'); value = DAO_ERR_INTERNAL
    case ('DAO_ERR_INVALID_STATE'); value = DAO_ERR_INVALID_STATE
    case ('DAO_ERR_BUSY'); value = DAO_ERR_BUSY
    case ('DAO_ERR_NOT_FOUND'); value = DAO_ERR_NOT_FOUND
    case ('DAO_STATUS_END_'); value = DAO_STATUS_END_
    case ('DAO_PLACE_CPU'); value = DAO_PLACE_KIND_CPU
    case ('DAO_PLACE_CUDA'); value = DAO_PLACE_KIND_CUDA
    case ('DAO_PLACE_CUDA_PINNED'); value = DAO_PLACE_KIND_CUDA_PINNED
    case ('DAO_PLACE_CUDA_MANAGED'); value = DAO_PLACE_KIND_CUDA_MANAGED
    case ('DAO_PLACE_SIM'); value = DAO_PLACE_KIND_SIM
    case ('DAO_PLACE_KIND_COUNT'); value = DAO_PLACE_KIND_COUNT
    case ('DAO_SIM_MAX_DEVICES'); value = DAO_SIM_MAX_DEVICES
    case ('DAO_STAT_ALLOCATED_BYTES'); value = DAO_STAT_ALLOCATED_BYTES
    case ('DAO_STAT_ALLOCATED_BLOCKS'); value = DAO_STAT_ALLOCATED_BLOCKS
    case ('DAO_STAT_RESERVED_BYTES'); value = DAO_STAT_RESERVED_BYTES
    case ('DAO_STAT_RESERVED_SEGMENTS'); value = DAO_STAT_RESERVED_SEGMENTS
    case ('DAO_STAT_ACTIVE_BYTES'); value = DAO_STAT_ACTIVE_BYTES
    case ('DAO_STAT_ACTIVE_BLOCKS'); value = DAO_STAT_ACTIVE_BLOCKS
    case ('DAO_STAT_INACTIVE_SPLIT_BYTES'); value = DAO_STAT_INACTIVE_SPLIT_BYTES
    case ('DAO_STAT_INACTIVE_SPLIT_BLOCKS'); value = DAO_STAT_INACTIVE_SPLIT_BLOCKS
    case ('DAO_STAT_REQUESTED_BYTES'); value = DAO_STAT_REQUESTED_BYTES
    case ('DAO_STAT_METRIC_COUNT'); value = DAO_STAT_METRIC_COUNT
    case ('DAO_STAT_POOL_ALL'); value = DAO_STAT_POOL_ALL
    case ('DAO_STAT_POOL_SMALL'); value = DAO_STAT_POOL_SMALL
    case ('DAO_STAT_POOL_LARGE'); value = DAO_STAT_POOL_LARGE
    case ('DAO_STAT_POOL_COUNT'); value = DAO_STAT_POOL_COUNT
    case ('DAO_BLOCK_FREE'); value = DAO_BLOCK_FREE
    case ('DAO_BLOCK_ALLOCATED'); value = DAO_BLOCK_ALLOCATED
    case ('DAO_BLOCK_PENDING_FREE'); value = DAO_BLOCK_PENDING_FREE
    case ('DAO_RECYCLE_MAX_DIMS'); value = DAO_RECYCLE_MAX_DIMS
    case ('DAO_TENSOR_UNINITIALIZED'); value = DAO_TENSOR_UNINITIALIZED
    case ('DAO_TENSOR_ON_DEVICE'); value = DAO_TENSOR_ON_DEVICE
    case ('DAO_TENSOR_ON_HOST'); value = DAO_TENSOR_ON_HOST
    case ('DAO_TENSOR_IN_TRANSIT'); value = DAO_TENSOR_IN_TRANSIT
    case ('DAO_COMM_LOCAL_MAX_RANKS'); value = DAO_COMM_LOCAL_MAX_RANKS
    case ('DAO_WHOLE_CONTINUOUS'); value = DAO_WHOLE_CONTINUOUS
    case ('DAO_WHOLE_CHUNKED'); value = DAO_WHOLE_CHUNKED
    case ('DAO_WHOLE_DISTRIBUTED'); value = DAO_WHOLE_DISTRIBUTED
    case ('DAO_WHOLE_DEVICE'); value = DAO_WHOLE_DEVICE
    case ('DAO_WHOLE_HOST'); value = DAO_WHOLE_HOST
    case ('DAO_VERSION_MAJOR'); value = DAO_VERSION_MAJOR
    case ('DAO_VERSION_MINOR'); value = DAO_VERSION_MINOR
    case ('DAO_VERSION_PATCH'); value = DAO_VERSION_PATCH
    case ('DAO_VERSION_NUMBER'); value = DAO_MODULE_VERSION_NUMBER
    case default
      value = -huge(value)
      found = .false.
    end select
  end subroutine fortran_value

  subroutine check_constants()
    integer(c_int) :: i
    integer(int64) :: value
    logical :: found
    character(len=:), allocatable :: name
    character(len=160) :: text
    call check(daot_constant_count() >= 47, 'layout_c.c lists the constants')
    do i = 0, daot_constant_count() - 1
      name = dao_string(daot_constant_name(i))
      call fortran_value(name, value, found)
      call check(found, name // ' has a Fortran constant')
      if (found) then
        write (text, '(a, a, i0, a, i0)') name, ' is ', daot_constant_value(i), &
          ' in C, ', value
        call check(value == daot_constant_value(i), trim(text))
      end if
    end do
    ! The status list is complete up to its end marker.
    call check(DAO_STATUS_END_ == DAO_ERR_NOT_FOUND + 1, 'DAO_STATUS_END_ follows the last status')
    call check(.not. c_associated(DAO_STREAM_DEFAULT), 'DAO_STREAM_DEFAULT is a null stream')
    call check(DAO_UINT64_MAX == -1_int64, 'DAO_UINT64_MAX reads as -1')
  end subroutine check_constants
end program test_layout
