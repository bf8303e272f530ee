!> What every Fortran test of the binding shares: checks that count failures
!> and say what failed, bit-exact comparison of numbers, and the end of a test
!> (`error stop 1` when anything failed).
module dao_test_support
  use, intrinsic :: iso_c_binding, only: c_int
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64, error_unit, output_unit
  use dao
  implicit none
  private
  public :: check, check_status, check_ok, check_failed_cleanly, same, test_done, test_failures

  integer, save :: failures = 0
  integer, save :: checks = 0

  !> Bit-exact equality (what was written is what is read back), for every
  !> kind the binding has arrays of; elemental.
  interface same
    module procedure same_int32, same_int64, same_real32, same_real64, same_complex32, &
                     same_complex64
  end interface same

contains

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. condition) then
      failures = failures + 1
      write (error_unit, '(2a)') 'FAIL: ', what
    end if
  end subroutine check

  !> The status is `expected`; on a failure also the last message.
  subroutine check_status(status, expected, what)
    integer(c_int), intent(in) :: status, expected
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (status /= expected) then
      failures = failures + 1
      write (error_unit, '(a, a, a, i0, a, a, a, i0, a, a, a)') 'FAIL: ', what, ': status ', &
        status, ' (', dao_status_name(status), '), expected ', expected, ' (', &
        dao_status_name(expected), ')'
      write (error_unit, '(2a)') '      last message: ', dao_last_message()
    end if
  end subroutine check_status

  subroutine check_ok(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    call check_status(status, DAO_OK, what)
  end subroutine check_ok

  !> A failure as the project wants them: the expected status, returned and
  !> recorded as the last status of this thread, with a message that says
  !> something.
  subroutine check_failed_cleanly(status, expected, what)
    integer(c_int), intent(in) :: status, expected
    character(len=*), intent(in) :: what
    call check_status(status, expected, what)
    call check_status(dao_last_status(), expected, what // ' (dao_last_status)')
    call check(len(dao_last_message()) > 10, what // ': a message that says what went wrong')
  end subroutine check_failed_cleanly

  function test_failures() result(n)
    integer :: n
    n = failures
  end function test_failures

  !> Ends the test: `error stop 1` if any check failed.
  subroutine test_done(name)
    character(len=*), intent(in) :: name
    if (failures > 0) then
      write (error_unit, '(a, a, i0, a, i0, a)') name, ': ', failures, ' of ', checks, &
        ' checks failed'
      error stop 1
    end if
    write (output_unit, '(a, a, i0, a)') name, ': all ', checks, ' checks passed'
  end subroutine test_done

  elemental function same_int32(a, b) result(equal)
    integer(int32), intent(in) :: a, b
    logical :: equal
    equal = a == b
  end function same_int32

  elemental function same_int64(a, b) result(equal)
    integer(int64), intent(in) :: a, b
    logical :: equal
    equal = a == b
  end function same_int64

  elemental function same_real32(a, b) result(equal)
    real(real32), intent(in) :: a, b
    logical :: equal
    equal = transfer(a, 0_int32) == transfer(b, 0_int32)
  end function same_real32

  elemental function same_real64(a, b) result(equal)
    real(real64), intent(in) :: a, b
    logical :: equal
    equal = transfer(a, 0_int64) == transfer(b, 0_int64)
  end function same_real64

  elemental function same_complex32(a, b) result(equal)
    complex(real32), intent(in) :: a, b
    logical :: equal
    equal = same_real32(real(a), real(b)) .and. same_real32(aimag(a), aimag(b))
  end function same_complex32

  elemental function same_complex64(a, b) result(equal)
    complex(real64), intent(in) :: a, b
    logical :: equal
    equal = same_real64(real(a), real(b)) .and. same_real64(aimag(a), aimag(b))
  end function same_complex64
end module dao_test_support
