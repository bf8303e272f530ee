!> A score callback for the test (callbacks live in modules, not as internal
!> procedures, so that c_funloc needs no trampoline).
module test_errors_callbacks
  use, intrinsic :: iso_c_binding
  use dao
  implicit none
contains
  function no_score(user_data, info) bind(C) result(score)
    type(c_ptr), value :: user_data
    type(dao_tensor_access_info), intent(in) :: info
    real(c_double) :: score
    score = real(info%bytes, c_double)
    if (c_associated(user_data)) score = 0
  end function no_score
end module test_errors_callbacks

!> Bad input through the Fortran layer: each call gives its status and a
!> message, changes nothing, and the program goes on, with or without a
!> `status` argument.
program test_errors
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use dao
  use dao_test_support
  use test_errors_callbacks
  implicit none

  call allocators()
  call without_status()
  call pointers()
  call streams_and_events()
  call pools()
  call tiered_pools()
  call test_done('test_errors')

contains

  subroutine allocators()
    type(dao_allocator) :: a, b
    type(c_ptr) :: p
    integer(c_int) :: st
    call a%create(dao_place_cpu(), 'nonsense', '', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'unknown strategy')
    call check(index(dao_last_message(), 'nonsense') > 0, 'the message names the strategy')
    call check(.not. c_associated(a%handle), 'no handle after a failed create')
    call a%create(dao_place_cpu(), 'buddy', 'chunk_size=banana', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'malformed config value')
    call a%create(dao_place_cpu(), 'buddy', 'colour=blue', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'unknown config key')
    call check(index(dao_last_message(), 'colour') > 0, 'the message names the key')
    call a%create(dao_place_sim(7), 'caching', status=st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'a SIM device that does not exist')

    call a%create(dao_place_sim(0), 'caching', status=st)
    call check_ok(st, 'caching allocator')
    b = a
    call a%create(dao_place_sim(0), 'caching', status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'create into a variable in use')
    call check(c_associated(a%handle, b%handle), 'the handle was kept')

    call a%alloc(p, -1_int64, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a negative size')
    call check(.not. c_associated(p), 'negative size: null pointer')
    call a%alloc(p, huge(0_int64), status=st)
    call check_failed_cleanly(st, DAO_ERR_OUT_OF_MEMORY, 'more than the device has')
    call a%alloc(p, 4096_int64, status=st)
    call check_ok(st, 'alloc 4 KiB')
    call a%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_BUSY, 'destroy with a live block')
    call check(c_associated(a%handle), 'busy destroy kept the handle')
    call a%free(p, st)
    call check_ok(st, 'free')
    call a%free(p, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'double free')
    call a%destroy(st)
    call check_ok(st, 'destroy')
    call check(.not. c_associated(a%handle), 'destroy emptied the variable')
    call a%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'destroy of an empty variable')

    call b%from_place(dao_place_cpu(), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'from_place into a variable in use')
    b = dao_allocator()
    call b%from_place(dao_place_cpu(), st)
    call check_ok(st, 'borrow the CPU default allocator')
    call b%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'destroy a place default')
  end subroutine allocators

  ! No `status` argument: nothing stops; dao_last_status() and
  ! dao_last_message() tell what happened in the last call of this thread.
  subroutine without_status()
    type(dao_allocator) :: a
    type(c_ptr) :: p
    call a%create(dao_place_cpu(), 'nonsense')
    call check(dao_last_status() == DAO_ERR_INVALID_ARGUMENT, 'failure recorded')
    call check(index(dao_last_message(), 'nonsense') > 0, 'message recorded')
    call a%create(dao_place_cpu(), 'system')
    call check(dao_last_status() == DAO_OK, 'a success records DAO_OK')
    call check(dao_last_message() == '', 'and an empty message')
    call a%alloc(p, 512_int64)
    call check(dao_last_status() == DAO_OK, 'alloc without status')
    call check(c_associated(p), 'alloc without status: a pointer')
    ! Printed on error_unit when verbose (look for "libdao: " in the output).
    call dao_set_verbose(.true.)
    call a%destroy()
    call dao_set_verbose(.false.)
    call check(dao_last_status() == DAO_ERR_BUSY, 'busy without status')
    call a%free(p)
    call a%destroy()
    call check(dao_last_status() == DAO_OK, 'destroyed')
    call check(.not. c_associated(a%handle), 'destroyed: variable emptied')
  end subroutine without_status

  subroutine pointers()
    type(dao_allocator) :: a, other
    real(real64), target :: local(100)
    type(c_ptr) :: p, q
    integer(c_int) :: st
    integer(int64) :: n
    call a%create(dao_place_cpu(), 'buddy', status=st)
    call other%create(dao_place_cpu(), 'buddy', status=st)
    call a%alloc(p, 1000_int64, status=st)
    call check_ok(st, 'alloc')
    n = a%usable_size(c_loc(local), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'usable size of a foreign pointer')
    call check(n == 0, 'usable size 0 on failure')
    call a%free(c_loc(local), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'free a Fortran array''s address')
    call other%free(p, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'free in another allocator')
    q = transfer(transfer(p, 0_c_intptr_t) + 256_c_intptr_t, q)
    call a%free(q, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'free an interior pointer')
    call a%free(c_null_ptr, st)
    call check_ok(st, 'free of a null pointer does nothing')
    call a%free(p, st)
    call check_ok(st, 'the block is still live and frees')
    call a%alloc(p, 0_int64, status=st)
    call check(st == DAO_OK .and. .not. c_associated(p), 'size 0 gives a null pointer')
    call a%record_stream(p, dao_stream(), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'record_stream of a null pointer')
    call a%alloc(p, 64_int64, status=st)
    call a%record_stream(p, dao_stream(), st)
    call check_failed_cleanly(st, DAO_ERR_UNSUPPORTED, 'record_stream on buddy')
    call a%free(p)
    call a%destroy()
    call other%destroy()
    call check(dao_last_status() == DAO_OK, 'cleaned up')
  end subroutine pointers

  subroutine streams_and_events()
    type(dao_stream) :: s, empty
    type(dao_event) :: e_cpu, e
    integer(c_int) :: st
    call s%create(dao_place_sim(0), st)
    call check_ok(st, 'stream on SIM 0')
    call e_cpu%create(dao_place_cpu(), st)
    call check_ok(st, 'event on the CPU')
    call s%wait_event(e_cpu, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'wait on an event of another place')
    call e_cpu%record(s, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'record on a stream of another place')
    call e%record(s, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'record an empty event')
    call check(.not. e%is_done(st), 'an empty event is not done')
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'query an empty event')
    call s%copy(c_null_ptr, c_null_ptr, 8_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'copy from NULL')
    call s%copy(c_null_ptr, c_null_ptr, -8_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'copy a negative size')
    call empty%synchronize(st)
    call check_ok(st, 'synchronize the default stream does nothing')
    call empty%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'destroy the default stream')
    call s%create(dao_place_sim(1), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'create into a stream in use')
    call e_cpu%destroy(st)
    call check_ok(st, 'destroy the event')
    call s%destroy(st)
    call check_ok(st, 'destroy the stream')
    call s%create(dao_place(DAO_PLACE_KIND_SIM, -2), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'stream on a negative device')
  end subroutine streams_and_events

  subroutine pools()
    type(dao_recycle_pool) :: pool
    type(dao_collection) :: c
    integer(c_int) :: st
    call pool%create(dao_place_sim(0), 0, [4, 4], 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'element size 0')
    call pool%create(dao_place_sim(0), 8, [1, 2, 3, 4, 5, 6, 7, 8, 9], 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'nine dimensions')
    call pool%create(dao_place_sim(0), 8, [4, 0], 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'an extent of 0')
    call pool%create(dao_place_sim(0), 8, [4, -3], 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a negative extent')
    call pool%create(dao_place_sim(0), 8, [4], 0, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'max_buffers 0')
    call pool%create(dao_place_sim(0), 8, [4], 2, 3, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'preallocate > max_buffers')
    call pool%create(dao_place_sim(0), 8, [4], 2, config='speed=11', status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'unknown pool config key')
    call pool%create(dao_place_sim(0), 1024, [1024, 1024], 2, 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_OUT_OF_MEMORY, 'preallocated 2 GiB on 64 MiB')
    call check(.not. c_associated(pool%handle), 'no pool after failures')

    call c%create(st)
    call check_ok(st, 'collection')
    call c%add('a', dao_place_cpu(), 4, [16], 2, status=st)
    call check_ok(st, 'add pool a')
    call c%add('a', dao_place_cpu(), 4, [16], 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a name used twice')
    call c%add('', dao_place_cpu(), 4, [16], 2, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'an empty name')
    call c%find('b', pool, st)
    call check_failed_cleanly(st, DAO_ERR_NOT_FOUND, 'find a missing name')
    call check(index(dao_last_message(), 'a') > 0, 'the message lists the names there are')
    call c%find('a', pool, st)
    call check_ok(st, 'find a')
    call pool%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'destroy a pool of a collection')
    call c%destroy(st)
    call check_ok(st, 'destroy the collection')
  end subroutine pools

  subroutine tiered_pools()
    type(dao_tiered) :: t
    type(dao_tensor) :: x
    integer(c_int) :: st
    call t%create(dao_place_sim(0), dao_place_cpu(), 0_int64, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a zero device budget')
    call t%create(dao_place_cpu(), dao_place_cpu(), 1048576_int64, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'the CPU as the device tier')
    call t%create(dao_place_sim(0), dao_place_cpu(), 1073741824_int64, status=st)
    call check_failed_cleanly(st, DAO_ERR_OUT_OF_MEMORY, 'a budget larger than the device')
    call t%create(dao_place_sim(0), dao_place_cpu(), 1048576_int64, 'policy=random', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'an unknown policy')
    call t%create(dao_place_sim(0), dao_place_cpu(), 1048576_int64, status=st)
    call check_ok(st, 'tiered pool')
    call x%create(t, 2097152_int64, st)
    call check_failed_cleanly(st, DAO_ERR_OUT_OF_MEMORY, 'a tensor larger than the budget')
    call x%create(t, 0_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a tensor of 0 bytes')
    call x%create(t, 64_int64, st)
    call check_ok(st, 'a tensor of 64 bytes')
    call check(x%state(st) == DAO_TENSOR_UNINITIALIZED, 'never written')
    call x%write([1.0_real64, 2.0_real64], st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'write 16 bytes into 64')
    call t%set_score_callback(no_score, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'score callback without policy=callback')
    call x%release(st)
    call check_ok(st, 'release the tensor')
    call x%release(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'release an empty tensor variable')
    call t%destroy(st)
    call check_ok(st, 'destroy the pool')
  end subroutine tiered_pools
end program test_errors
