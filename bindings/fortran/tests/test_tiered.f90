!> Kernels and a score function written in Fortran, for test_tiered.
module test_tiered_kernels
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use dao
  implicit none
  private
  public :: axpy, failing, by_next_use

  !> What an axpy kernel needs besides its tensors.
  type, public :: axpy_args
    real(real64) :: alpha = 0
    integer(int64) :: n = 0
  end type axpy_args

  !> What the score function counts.
  type, public :: score_log
    integer :: calls = 0
    integer :: bad_infos = 0
  end type score_log
contains
  !> outputs(1) = alpha * inputs(1) + inputs(2), elementwise, on the device
  !> memory (a simulated device: host-addressable).
  function axpy(user_data, inputs, input_count, outputs, output_count, stream) &
      bind(C) result(status)
    type(c_ptr), value :: user_data, inputs, outputs, stream
    integer(c_size_t), value :: input_count, output_count
    integer(c_int) :: status
    type(axpy_args), pointer :: args
    real(real64), pointer :: x(:), y(:), out(:)
    status = DAO_ERR_INTERNAL
    ! (`stream` is the compute stream; SIM memory is computed on directly.)
    if (input_count /= 2 .or. output_count /= 1 .or. c_associated(stream, user_data)) return
    call c_f_pointer(user_data, args)
    call c_f_pointer(dao_kernel_arg(inputs, input_count, 1), x, [args%n])
    call c_f_pointer(dao_kernel_arg(inputs, input_count, 2), y, [args%n])
    call c_f_pointer(dao_kernel_arg(outputs, output_count, 1), out, [args%n])
    if (c_associated(dao_kernel_arg(inputs, input_count, 3))) return
    out = args%alpha * x + y
    status = DAO_OK
  end function axpy

  !> Fails, as a kernel that finds something wrong does.
  function failing(user_data, inputs, input_count, outputs, output_count, stream) &
      bind(C) result(status)
    type(c_ptr), value :: user_data, inputs, outputs, stream
    integer(c_size_t), value :: input_count, output_count
    integer(c_int) :: status
    status = DAO_ERR_UNSUPPORTED
    ! (Each argument is looked at, so that none is unused.)
    if (c_associated(user_data) .or. c_associated(inputs) .or. c_associated(outputs) .or. &
        c_associated(stream) .or. input_count + output_count > 100) status = DAO_ERR_INTERNAL
  end function failing

  !> Policy `callback`: evict what is used furthest ahead (never again first).
  function by_next_use(user_data, info) bind(C) result(score)
    type(c_ptr), value :: user_data
    type(dao_tensor_access_info), intent(in) :: info
    real(c_double) :: score
    type(score_log), pointer :: log
    call c_f_pointer(user_data, log)
    log%calls = log%calls + 1
    if (info%struct_size /= c_sizeof(info) .or. .not. c_associated(info%tensor) .or. &
        info%bytes <= 0) log%bad_infos = log%bad_infos + 1
    if (info%next_use == DAO_UINT64_MAX) then
      score = 1.0e30_c_double
    else
      score = real(info%next_use - info%now, c_double)
    end if
  end function by_next_use
end module test_tiered_kernels

!> Tiered pools with Fortran kernels: a chain of axpy kernels over more
!> tensors than the device budget holds, computed on the host beside them and
!> compared bit for bit; the same with policy `callback` and a Fortran score
!> function; a failing kernel.
program test_tiered
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use dao
  use dao_test_support
  use test_tiered_kernels
  implicit none

  integer, parameter :: ntensors = 6, nkernels = 40
  integer(int64), parameter :: n = 32768  ! 256 KiB of real64 per tensor
  ! Budget 1 MiB: 4 tensors; each kernel needs 3, the program uses 6.
  integer(int64), parameter :: budget = 1048576

  call run_chain('prefetch=1', .false.)
  call run_chain('policy=callback', .true.)
  call run_chain('policy=lru,prefetch=0', .false.)
  call failing_kernel()
  call test_done('test_tiered')

contains

  subroutine run_chain(config, with_score)
    character(len=*), intent(in) :: config
    logical, intent(in) :: with_score
    type(dao_tiered) :: pool
    type(dao_tensor) :: t(ntensors), unused
    type(dao_tiered_stats) :: stats
    type(dao_tiered_link_stats) :: link
    type(axpy_args), target :: args(nkernels)
    type(score_log), target :: log
    real(real64), allocatable :: model(:, :), got(:)
    integer(c_int) :: st, state
    integer :: i, k, x, y, o
    logical :: ok

    call pool%create(dao_place_sim(0), dao_place_cpu(), budget, config, st)
    call check_ok(st, config // ': create')
    if (with_score) then
      call pool%set_score_callback(by_next_use, c_loc(log), st)
      call check_ok(st, config // ': Fortran score function')
    end if
    allocate (model(n, ntensors), got(n))
    do i = 1, ntensors
      model(:, i) = [(real(k, real64) * i / 64.0_real64, k = 1, int(n))]
      call t(i)%create(pool, n * 8, st)
      call check_ok(st, config // ': tensor')
      call t(i)%write(model(:, i), st)
      call check_ok(st, config // ': write a tensor from a Fortran array')
    end do
    call unused%create(pool, 64_int64, st)
    call check(unused%state() == DAO_TENSOR_UNINITIALIZED, config // ': never written')
    call unused%read(got(1:8), st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, config // ': read a never written tensor')
    call unused%release()

    do k = 1, nkernels
      x = mod(k, ntensors) + 1
      y = mod(3 * k + 1, ntensors) + 1
      o = mod(5 * k + 2, ntensors) + 1
      if (y == x) y = mod(y, ntensors) + 1
      args(k) = axpy_args(alpha=1.0_real64 / k, n=n)
      call pool%submit(axpy, [t(x), t(y)], [t(o)], c_loc(args(k)), st)
      call check_ok(st, config // ': submit')
      model(:, o) = args(k)%alpha * model(:, x) + model(:, y)
    end do
    call pool%synchronize(st)
    call check_ok(st, config // ': synchronize')

    ok = .true.
    do i = 1, ntensors
      state = t(i)%state()
      ok = ok .and. (state == DAO_TENSOR_ON_DEVICE .or. state == DAO_TENSOR_ON_HOST)
      call t(i)%read(got, st)
      call check_ok(st, config // ': read into a Fortran array')
      ok = ok .and. all(same(got, model(:, i)))
    end do
    call check(ok, config // ': every tensor equals the host model, bit for bit')

    call pool%get_stats(stats, st)
    call check_ok(st, config // ': stats')
    call check(stats%kernels_submitted == nkernels .and. stats%kernels_run == nkernels, &
               config // ': all kernels ran')
    call check(stats%evictions > 0 .and. stats%fetches > 0, &
               config // ': more tensors than the budget: evictions and fetches')
    call check(stats%peak_device_bytes <= budget, config // ': within the device budget')
    call check(stats%tensors_live == ntensors, config // ': tensors live')
    call pool%get_link_stats(link, st)
    call check_ok(st, config // ': link stats')
    ! To the device: the fetches, and the writes that went straight there
    ! (at most one per tensor, all of n * 8 bytes; how many depends on how
    ! far the submits had got when each write ran).
    call check(link%bytes_to_device - stats%bytes_fetched == &
               (link%copies_to_device - stats%fetches) * n * 8 .and. &
               link%copies_to_device >= stats%fetches .and. &
               link%copies_to_device - stats%fetches <= ntensors .and. &
               link%bytes_to_host == stats%bytes_evicted .and. link%host_pageable == 1, &
               config // ': link stats agree with the stats')
    call pool%trim(st)
    call check_ok(st, config // ': trim')
    call pool%get_stats(stats, st)
    call check(stats%device_bytes == 0, config // ': trimmed: nothing on the device')
    ! Retired: no data until written again (dao_tensor_retire).
    call t(1)%retire(st)
    call check_ok(st, config // ': retire')
    call t(1)%read(got, st)
    call check(st == DAO_ERR_INVALID_STATE, config // ': a retired tensor holds no data')
    call t(1)%write(model(:, 1), st)
    call check_ok(st, config // ': written again')
    if (with_score) then
      call check(log%calls > 0, config // ': the Fortran score function was called')
      call check(log%bad_infos == 0, config // ': it was given sound information')
    end if
    do i = 1, ntensors
      call t(i)%release(st)
      call check_ok(st, config // ': release')
    end do
    call pool%destroy(st)
    call check_ok(st, config // ': destroy')
  end subroutine run_chain

  subroutine failing_kernel()
    type(dao_tiered) :: pool
    type(dao_tensor) :: a
    integer(c_int) :: st
    call pool%create(dao_place_sim(1), dao_place_cpu(), budget, status=st)
    call check_ok(st, 'failing: create')
    call a%create(pool, 1024_int64, st)
    call pool%submit(failing, outputs=[a], status=st)
    call check_ok(st, 'failing: submit (it fails later, on the executor)')
    call pool%synchronize(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'failing: synchronize reports it')
    call pool%submit(failing, outputs=[a], status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'failing: a failed pool refuses work')
    call pool%destroy(st)
    call check_ok(st, 'failing: destroy a failed pool')
  end subroutine failing_kernel
end program test_tiered
