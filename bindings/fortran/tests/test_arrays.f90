!> dao_allocate / dao_deallocate: arrays of every kind and rank 1-7 on the
!> CPU and on a simulated device (test_arrays.inc, generated), zero-size
!> arrays, bad shapes, foreign and partial pointers, many arrays at once, and
!> arrays allocated from other threads at the same time.
module test_arrays_all
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use dao
  use dao_test_support
  implicit none
  private
  public :: check_all_kinds_and_ranks
contains
  include "test_arrays.inc"
end module test_arrays_all

!> What a host function on a SIM stream does while the main thread works:
!> allocate and free arrays, and fail on purpose, counting what went wrong.
module test_arrays_worker
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use dao
  implicit none
  private
  public :: worker_state, worker

  type, public :: worker_state
    integer :: rounds = 0
    integer :: failures = 0
    integer :: seed = 0
  end type worker_state
contains
  subroutine worker(user_data) bind(C)
    type(c_ptr), value :: user_data
    type(worker_state), pointer :: state
    integer(int64), pointer :: a(:), b(:, :)
    integer(c_int) :: st
    integer :: i
    call c_f_pointer(user_data, state)
    nullify (a, b)
    do i = 1, state%rounds
      call dao_allocate(a, [mod(i * state%seed, 97) + 1], dao_place_cpu(), st)
      if (st /= DAO_OK) state%failures = state%failures + 1
      if (st == DAO_OK) a = int(i, int64)
      call dao_allocate(b, [3, mod(i, 5) + 1], dao_place_sim(0), st)
      if (st /= DAO_OK) state%failures = state%failures + 1
      call dao_deallocate(b, st)
      if (st /= DAO_OK) state%failures = state%failures + 1
      ! A failure on this thread: its own last status, not the main thread's.
      call dao_allocate(b, [-1, 2], dao_place_sim(0), st)
      if (st /= DAO_ERR_INVALID_ARGUMENT) state%failures = state%failures + 1
      if (dao_last_status() /= DAO_ERR_INVALID_ARGUMENT) state%failures = state%failures + 1
      if (associated(a)) then
        if (any(a /= int(i, int64))) state%failures = state%failures + 1
      end if
      call dao_deallocate(a, st)
      if (st /= DAO_OK) state%failures = state%failures + 1
    end do
  end subroutine worker
end module test_arrays_worker

program test_arrays
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use dao
  use dao_test_support
  use test_arrays_all
  use test_arrays_worker
  implicit none

  ! Extents of each rank's first dimensions: small, different, not powers of 2.
  integer, parameter :: extents(7) = [5, 3, 4, 2, 3, 2, 2]

  call check(dao_array_count() == 0, 'no arrays at the start')
  call check_all_kinds_and_ranks(dao_place_cpu(), extents, .false.)
  call check_all_kinds_and_ranks(dao_place_sim(1), extents, .true.)
  call check_all_kinds_and_ranks(dao_place_sim(0), [1, 1, 1, 1, 1, 1, 1], .false.)
  call zero_size()
  call bad_shapes()
  call foreign_and_partial()
  call no_device()
  call many_arrays()
  call other_threads()
  call check(dao_array_count() == 0, 'no arrays left at the end')
  call test_done('test_arrays')

contains

  subroutine zero_size()
    real(real64), pointer :: a(:, :)
    complex(real32), pointer :: c(:)
    integer(c_int) :: st
    integer(int64) :: used0
    used0 = dao_used_bytes(dao_place_sim(0))
    nullify (a, c)
    call dao_allocate(a, [0, 7], dao_place_sim(0), st)
    call check_ok(st, 'zero-size: allocate')
    call check(associated(a), 'zero-size: associated, as after a Fortran allocate')
    call check(size(a) == 0 .and. all(shape(a) == [0, 7]), 'zero-size: shape [0, 7]')
    call check(dao_array_count() == 0, 'zero-size: takes no memory, not counted')
    call check(dao_used_bytes(dao_place_sim(0)) == used0, 'zero-size: nothing used on the place')
    call dao_deallocate(a, st)
    call check_ok(st, 'zero-size: deallocate')
    call check(.not. associated(a), 'zero-size: nullified')
    call dao_allocate(c, [0_int64], dao_place_cpu(), st)
    call check_ok(st, 'zero-size rank 1 int64 shape')
    call dao_deallocate(c, st)
    call check_ok(st, 'zero-size rank 1: deallocate')
    ! A disassociated pointer: nothing to do, like dao_free(NULL).
    call dao_deallocate(c, st)
    call check_ok(st, 'deallocate of a disassociated pointer does nothing')
    ! Zero size still checks the place.
    call dao_allocate(a, [0, 1], dao_place_sim(9), st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'zero-size on a missing device')
  end subroutine zero_size

  subroutine bad_shapes()
    real(real64), pointer :: a(:, :)
    integer(int32), pointer :: v(:)
    integer(c_int) :: st
    nullify (a, v)
    call dao_allocate(a, [3, -1], dao_place_cpu(), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'negative extent')
    call check(.not. associated(a), 'negative extent: pointer null')
    call dao_allocate(a, [1, 2, 3], dao_place_cpu(), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'three extents for a rank-2 array')
    call check(.not. associated(a), 'wrong extent count: pointer null')
    call dao_allocate(a, [2_int64**61, 5_int64], dao_place_cpu(), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'size in bytes overflows')
    ! 800 MB on a 64 MiB simulated device.
    call dao_allocate(a, [10000, 10000], dao_place_sim(0), st)
    call check_failed_cleanly(st, DAO_ERR_OUT_OF_MEMORY, 'larger than the simulated device')
    call check(.not. associated(a), 'out of memory: pointer null')
    call dao_allocate(v, [4], dao_place(42, 0), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'unknown place kind')
    call dao_allocate(v, [4], dao_place(DAO_PLACE_KIND_SIM, -1), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'negative device index')
    ! No status argument: the failure is recorded, nothing stops.
    call dao_allocate(v, [-4], dao_place_cpu())
    call check(dao_last_status() == DAO_ERR_INVALID_ARGUMENT, 'failure without status recorded')
    call check(index(dao_last_message(), 'negative') > 0, 'the message says the extent is negative')
    call check(.not. associated(v), 'failure without status: pointer null')
    call dao_allocate(v, [4], dao_place_cpu())
    call check(dao_last_status() == DAO_OK, 'a success clears the last status')
    call check(len(dao_last_message()) == 0, 'a success clears the last message')
    call dao_deallocate(v)
    call check(dao_last_status() == DAO_OK, 'deallocate without status')
    call check(.not. associated(v), 'deallocate without status: nullified')
  end subroutine bad_shapes

  subroutine foreign_and_partial()
    real(real64), target :: local(16)
    real(real64), pointer :: p(:), a(:), copy(:), m(:, :), r(:, :)
    integer(c_int) :: st
    integer(int64) :: count0
    count0 = dao_array_count()
    p => local
    call dao_deallocate(p, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'a Fortran array is not dao''s')
    call check(associated(p, local), 'foreign pointer: left as it was')

    call dao_allocate(a, [64], dao_place_sim(0), st)
    call check_ok(st, 'allocate for partial tests')
    a = 2.0_real64
    p => a(2:10)
    call dao_deallocate(p, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'an interior section')
    p => a(1:10)
    call dao_deallocate(p, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'a leading section')
    p => a(1:64:2)
    call dao_deallocate(p, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'a strided section')
    call check(dao_array_count() == count0 + 1, 'failed deallocations freed nothing')
    call check(all(same(a, 2.0_real64)), 'failed deallocations left the data')

    ! The same memory seen with other bounds or another shape is the array.
    r(0:7, 0:7) => a
    call dao_deallocate(r, st)
    call check_ok(st, 'deallocate through a remapped rank-2 pointer')
    call check(.not. associated(r), 'remapped: nullified')
    call check(dao_array_count() == count0, 'remapped: freed')

    call dao_allocate(m, [4, 4], dao_place_cpu(), st)
    call check_ok(st, 'allocate m')
    call c_f_pointer(c_loc(m), copy, [16])
    call dao_deallocate(m, st)
    call check_ok(st, 'deallocate m')
    call dao_deallocate(copy, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_POINTER, 'a second deallocate (through a copy)')
    call check(dao_array_count() == count0, 'double deallocate: count unchanged')
  end subroutine foreign_and_partial

  subroutine no_device()
    real(real32), pointer :: a(:, :)
    integer(c_int) :: st
    integer :: i, devices
    type(dao_place) :: places(3)
    places = [dao_place_cuda(0), dao_place_cuda_pinned(), dao_place_cuda_managed(0)]
    nullify (a)
    do i = 1, size(places)
      devices = dao_device_count(places(i)%kind)
      call dao_allocate(a, [8, 8], places(i), st)
      if (devices == 0) then
        call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'dao_allocate on ' // &
                                  dao_place_name(places(i)) // ' without a device')
        call check(.not. associated(a), 'no device: pointer null')
      else
        ! A machine with a GPU: the array exists (device memory is not
        ! touched from the host).
        call check_ok(st, 'dao_allocate on ' // dao_place_name(places(i)))
        call dao_deallocate(a, st)
        call check_ok(st, 'dao_deallocate on ' // dao_place_name(places(i)))
      end if
    end do
  end subroutine no_device

  ! Enough arrays to grow the registry several times, freed in another order.
  subroutine many_arrays()
    integer, parameter :: n = 1000
    type :: holder
      integer(int64), pointer :: a(:) => null()
    end type holder
    type(holder), allocatable :: h(:)
    integer(c_int) :: st
    integer :: i, j, bad
    allocate (h(n))
    bad = 0
    do i = 1, n
      call dao_allocate(h(i)%a, [mod(i, 13) + 1], dao_place_cpu(), st)
      if (st /= DAO_OK) bad = bad + 1
      if (st == DAO_OK) h(i)%a = int(i, int64)
    end do
    call check(bad == 0, 'many arrays: all allocated')
    call check(dao_array_count() == n, 'many arrays: all counted')
    ! Every 7th index modulo n (7 and n are coprime), so every array once.
    do j = 1, n
      i = mod(j * 7, n) + 1
      if (any(h(i)%a /= int(i, int64))) bad = bad + 1
      call dao_deallocate(h(i)%a, st)
      if (st /= DAO_OK) bad = bad + 1
    end do
    call check(bad == 0, 'many arrays: values intact and all deallocated')
    call check(dao_array_count() == 0, 'many arrays: none left')
  end subroutine many_arrays

  ! Host functions on two SIM streams (libdao worker threads) allocate and
  ! free while this thread does too: the registry and the per-thread last
  ! status must hold.
  subroutine other_threads()
    type(worker_state), target :: states(2)
    type(dao_stream) :: streams(2)
    real(real64), pointer :: a(:, :)
    integer(c_int) :: st
    integer :: i, bad, last_bad
    nullify (a)
    do i = 1, 2
      states(i) = worker_state(rounds=400, failures=0, seed=i + 2)
      call streams(i)%create(dao_place_sim(i - 1), st)
      call check_ok(st, 'stream for a worker')
      call streams(i)%launch_host_func(worker, c_loc(states(i)), st)
      call check_ok(st, 'launch a worker')
    end do
    bad = 0
    last_bad = 0
    do i = 1, 400
      call dao_allocate(a, [7, mod(i, 11) + 1], dao_place_sim(1), st)
      if (st /= DAO_OK) bad = bad + 1
      if (dao_last_status() /= DAO_OK) last_bad = last_bad + 1
      call dao_deallocate(a, st)
      if (st /= DAO_OK) bad = bad + 1
    end do
    do i = 1, 2
      call streams(i)%synchronize(st)
      call check_ok(st, 'workers finished')
      call streams(i)%destroy(st)
      call check_ok(st, 'stream destroyed')
      call check(states(i)%failures == 0, 'a worker thread saw no failure')
    end do
    call check(bad == 0, 'main thread: all allocations while workers ran')
    call check(last_bad == 0, 'main thread: its last status is its own (workers failed meanwhile)')
  end subroutine other_threads
end program test_arrays
