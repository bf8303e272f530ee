! The example of bindings/fortran/README.md: a 1000 x 500 matrix on three
! places. Build: gfortran quickstart.f90 $(pkg-config --cflags --libs dao-fortran)
program quickstart
  use dao
  use, intrinsic :: iso_fortran_env, only: real64
  implicit none
  real(real64), pointer :: a(:, :) => null()
  type(dao_place) :: places(3)
  integer :: i, status, failed

  print '(2a)', 'libdao ', dao_version()
  ! Managed memory, unlike dao_place_cuda(0), can be touched by the host.
  places = [dao_place_cpu(), dao_place_sim(0), dao_place_cuda_managed(0)]
  failed = 0
  do i = 1, size(places)
    call dao_allocate(a, [1000, 500], places(i), status)  ! 1000 rows, 500 columns
    if (status /= DAO_OK) then  ! for example no GPU on this machine
      print '(5a)', dao_place_name(places(i)), ': ', dao_status_name(status), ': ', &
        dao_last_message()
      if (status /= DAO_ERR_NO_DEVICE) failed = 1
      cycle
    end if
    a = 1.5_real64
    a(:, 500) = 2.0_real64  ! the last column
    print '(2a, f0.1, a, i0, a)', dao_place_name(places(i)), ': sum ', sum(a), ', ', &
      dao_used_bytes(places(i)), ' bytes in use'
    call dao_deallocate(a, status)
    if (status /= DAO_OK) failed = 1
  end do
  if (failed /= 0) error stop 1
end program quickstart
