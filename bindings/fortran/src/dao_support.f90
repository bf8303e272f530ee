!> Internal to libdao_fortran: interfaces to dao_fortran_support.c (the
!> thread-local status of the Fortran layer and the registry of dao_allocate
!> arrays) and to strlen. Module `dao` uses it privately; nothing here is
!> part of the API. (A module of its own because a bind(C) interface with a
!> binding label cannot be PRIVATE in the module that declares it.)
module dao_support
  use, intrinsic :: iso_c_binding, only: c_int, c_char, c_size_t, c_ptr
  use dao_c, only: dao_place
  implicit none
  private
  public :: c_strlen, daof_set_last, daof_set_last_from_c, daof_last_status, &
            daof_last_message, daof_registry_add, daof_registry_remove, daof_registry_count

  interface
    function c_strlen(s) bind(C, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen

    subroutine daof_set_last(status, message, length) bind(C, name="daof_set_last")
      import :: c_int, c_char, c_size_t
      integer(c_int), value :: status
      character(kind=c_char), dimension(*), intent(in) :: message
      integer(c_size_t), value :: length
    end subroutine daof_set_last

    subroutine daof_set_last_from_c(status) bind(C, name="daof_set_last_from_c")
      import :: c_int
      integer(c_int), value :: status
    end subroutine daof_set_last_from_c

    function daof_last_status() bind(C, name="daof_last_status") result(r)
      import :: c_int
      integer(c_int) :: r
    end function daof_last_status

    function daof_last_message() bind(C, name="daof_last_message") result(r)
      import :: c_ptr
      type(c_ptr) :: r
    end function daof_last_message

    function daof_registry_add(ptr, bytes, place) bind(C, name="daof_registry_add") result(r)
      import :: c_int, c_ptr, c_size_t, dao_place
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      type(dao_place), value :: place
      integer(c_int) :: r
    end function daof_registry_add

    function daof_registry_remove(ptr, bytes, place, recorded_bytes) &
        bind(C, name="daof_registry_remove") result(r)
      import :: c_int, c_ptr, c_size_t, dao_place
      type(c_ptr), value :: ptr
      integer(c_size_t), value :: bytes
      type(dao_place), intent(inout) :: place
      integer(c_size_t), intent(inout) :: recorded_bytes
      integer(c_int) :: r
    end function daof_registry_remove

    function daof_registry_count() bind(C, name="daof_registry_count") result(r)
      import :: c_size_t
      integer(c_size_t) :: r
    end function daof_registry_count
  end interface
end module dao_support
