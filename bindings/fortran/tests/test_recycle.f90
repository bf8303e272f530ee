!> Recycle pools from Fortran: a pool round trip (acquire, fill as a Fortran
!> array, submit, take, read, release), references, limits, close, statistics,
!> a pool made with a C (row-major) shape seen in Fortran order, and a
!> collection of pools.
program test_recycle
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use dao
  use dao_test_support
  implicit none

  call round_trip()
  call limits_and_close()
  call c_order_shape()
  call collection()
  call test_done('test_recycle')

contains

  subroutine round_trip()
    type(dao_recycle_pool) :: pool
    type(dao_buffer) :: buf, taken, second
    type(dao_recycle_stats) :: stats
    real(real64), pointer :: a(:, :), b(:, :), t(:, :)
    real(real32), pointer :: wrong_kind(:, :)
    real(real64), pointer :: wrong_rank(:, :, :)
    integer(c_int) :: st
    integer :: i, j
    logical :: ok
    nullify (a, b, t, wrong_kind, wrong_rank)

    ! 4 x 3 real64 matrices (Fortran order: 4 rows), at most 3 buffers.
    call pool%create(dao_place_sim(0), 8, [4, 3], 3, 1, 'name=fortran_matrices', st)
    call check_ok(st, 'create the pool')
    call pool%get_stats(stats, st)
    call check_ok(st, 'stats')
    call check(stats%created == 1 .and. stats%free == 1, 'one buffer preallocated')

    call pool%acquire(buf, 0.0_real64, st)
    call check_ok(st, 'acquire')
    call check(buf%place() == dao_place_sim(0), 'buffer place')
    call check(all(buf%shape() == [4_int64, 3_int64]), 'buffer shape as given')
    call check(all(buf%shape(c_order=.true.) == [3_int64, 4_int64]), 'shape reversed')
    call check(buf%element_size() == 8, 'element size')
    call check(buf%bytes() == 96, 'bytes')
    call check(buf%sequence() == DAO_UINT64_MAX, 'not submitted yet')
    call check(mod(transfer(buf%data(), 0_c_intptr_t), 256_c_intptr_t) == 0, 'aligned data')

    call dao_buffer_array(buf, a, status=st)
    call check_ok(st, 'buffer as a 4 x 3 array')
    call check(all(shape(a) == [4, 3]), 'array shape 4 x 3')
    call check(c_associated(c_loc(a), buf%data()), 'the array is the buffer''s memory')
    do j = 1, 3
      do i = 1, 4
        a(i, j) = i + 10.0_real64 * j
      end do
    end do
    call dao_buffer_array(buf, b, c_order=.true., status=st)
    call check_ok(st, 'buffer seen with the shape reversed')
    call check(all(shape(b) == [3, 4]), 'reversed view 3 x 4')
    call check(same(b(1, 2), a(4, 1)) .and. same(b(3, 4), a(4, 3)), &
               'the reversed view is the same memory, read in another order')
    call dao_buffer_array(buf, wrong_kind, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'real32 view of real64 elements')
    call check(.not. associated(wrong_kind), 'wrong kind: pointer null')
    call dao_buffer_array(buf, wrong_rank, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'rank-3 view of a 2-d buffer')

    call pool%submit(buf, st)
    call check_ok(st, 'submit')
    call check(.not. c_associated(buf%handle), 'submit moved the reference')
    call pool%submit(buf, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'submit an empty variable')

    call pool%take(taken, 1.0_real64, st)
    call check_ok(st, 'take')
    call check(taken%sequence() == 0, 'first submitted')
    call dao_buffer_array(taken, t, status=st)
    call check_ok(st, 'taken buffer as an array')
    ok = .true.
    do j = 1, 3
      do i = 1, 4
        ok = ok .and. same(t(i, j), i + 10.0_real64 * j)
      end do
    end do
    call check(ok, 'what was filled is what was taken')

    call taken%retain(st)
    call check_ok(st, 'retain')
    second = taken
    call taken%release(st)
    call check_ok(st, 'release one reference')
    call check(.not. c_associated(taken%handle), 'release emptied the variable')
    call pool%get_stats(stats)
    call check(stats%held == 1, 'still held through the other reference')
    call second%release(st)
    call check_ok(st, 'release the last reference')
    call pool%get_stats(stats)
    call check(stats%held == 0 .and. stats%free == stats%created, 'back in the free list')
    call check(stats%acquired == 1 .and. stats%submitted == 1 .and. stats%taken == 1, &
               'counters')
    call check(stats%struct_size == c_sizeof(stats), 'struct_size set')

    call pool%take(taken, 0.0_real64, st)
    call check_failed_cleanly(st, DAO_ERR_TIMEOUT, 'take from an empty queue')
    call pool%destroy(st)
    call check_ok(st, 'destroy')
  end subroutine round_trip

  subroutine limits_and_close()
    type(dao_recycle_pool) :: pool
    type(dao_buffer) :: bufs(3), extra
    type(dao_recycle_stats) :: stats
    integer(int32), pointer :: v(:)
    integer(c_int) :: st
    integer :: i
    call pool%create(dao_place_cpu(), 4, [1000_int64], 3, status=st)
    call check_ok(st, 'pool of 3 on the CPU')
    do i = 1, 3
      call pool%acquire(bufs(i), status=st)
      call check_ok(st, 'acquire up to max_buffers')
    end do
    call pool%acquire(extra, 0.01_real64, st)
    call check_failed_cleanly(st, DAO_ERR_TIMEOUT, 'a fourth acquire times out')
    call pool%acquire(bufs(1), 0.0_real64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'acquire into a variable in use')
    call pool%get_stats(stats)
    call check(stats%timeouts == 1 .and. stats%held == 3 .and. stats%created == 3, &
               'stats after the timeout')
    call pool%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_BUSY, 'destroy with buffers out')
    call dao_buffer_array(bufs(2), v, status=st)
    call check_ok(st, 'int32 view')
    v = 7
    call pool%submit(bufs(2), st)
    call check_ok(st, 'submit before close')
    call pool%close(st)
    call check_ok(st, 'close')
    call pool%acquire(extra, 0.0_real64, st)
    call check_failed_cleanly(st, DAO_ERR_CLOSED, 'acquire from a closed pool')
    call pool%submit(bufs(3), st)
    call check_ok(st, 'submit still works after close (draining)')
    call pool%take(extra, status=st)
    call check_ok(st, 'take a queued buffer after close')
    call dao_buffer_array(extra, v, status=st)
    call check(st == DAO_OK .and. all(v == 7), 'the drained buffer has its data')
    call extra%release()
    call pool%take(extra, status=st)
    call check_ok(st, 'take the second queued buffer')
    call extra%release()
    call pool%take(extra, status=st)
    call check_failed_cleanly(st, DAO_ERR_CLOSED, 'take from a closed, empty pool')
    call bufs(1)%release(st)
    call check_ok(st, 'release the last buffer')
    call bufs(1)%release(st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'release an empty variable')
    call pool%destroy(st)
    call check_ok(st, 'destroy after everything came back')
  end subroutine limits_and_close

  ! A pool made by C code (the C layer here) with the row-major shape
  ! {2 rows, 5 columns}: element [r][c] is at r * 5 + c. In Fortran, with
  ! c_order=.true., it is a(c + 1, r + 1) of a 5 x 2 array.
  subroutine c_order_shape()
    type(dao_recycle_pool) :: pool
    type(dao_buffer) :: buf
    type(c_ptr) :: h
    integer(int64), pointer :: a(:, :), flat(:)
    integer(c_int) :: st
    integer :: r, c
    logical :: ok
    call check_ok(dao_recycle_create(dao_place_cpu(), 8_c_size_t, 2_c_int, &
                                     [2_c_size_t, 5_c_size_t], 1_c_size_t, 0_c_size_t, &
                                     out=h), 'C layer: create a 2 x 5 row-major pool')
    pool%handle = h
    call pool%acquire(buf, status=st)
    call check_ok(st, 'acquire')
    call c_f_pointer(buf%data(), flat, [10])
    do r = 0, 1
      do c = 0, 4
        flat(r * 5 + c + 1) = 100 * r + c  ! as C writes p[r * 5 + c]
      end do
    end do
    call dao_buffer_array(buf, a, c_order=.true., status=st)
    call check_ok(st, 'view in Fortran order')
    call check(all(shape(a) == [5, 2]), 'a C {2, 5} shape is a Fortran 5 x 2 array')
    ok = .true.
    do r = 0, 1
      do c = 0, 4
        ok = ok .and. a(c + 1, r + 1) == 100 * r + c
      end do
    end do
    call check(ok, 'C element [r][c] is Fortran a(c + 1, r + 1)')
    call buf%release()
    call pool%destroy(st)
    call check_ok(st, 'destroy')
  end subroutine c_order_shape

  subroutine collection()
    type(dao_collection) :: col
    type(dao_recycle_pool) :: vis, flags, found
    type(dao_buffer) :: buf
    complex(real64), pointer :: z(:)
    integer(int32), pointer :: f(:, :)
    integer(c_int) :: st
    integer :: i
    call col%create(st)
    call check_ok(st, 'collection')
    call col%add('vis', dao_place_sim(1), 16, [8], 2, pool=vis, status=st)
    call check_ok(st, 'add complex64 pool "vis"')
    call col%add('flags', dao_place_cpu(), 4, [2_int64, 2_int64], 4, 1, 'name=flags,spin=0', &
                 flags, st)
    call check_ok(st, 'add int32 pool "flags"')
    call col%find('vis', found, st)
    call check_ok(st, 'find "vis"')
    call check(c_associated(found%handle, vis%handle), 'find gives the pool that add gave')

    call found%acquire(buf, status=st)
    call check_ok(st, 'acquire from the found pool')
    call dao_buffer_array(buf, z, status=st)
    call check_ok(st, 'complex64 view')
    z = [(cmplx(i, -i, real64), i = 1, 8)]
    call vis%submit(buf, st)
    call check_ok(st, 'submit')
    call vis%take(buf, status=st)
    call check_ok(st, 'take')
    call dao_buffer_array(buf, z, status=st)
    call check(all(same(z, [(cmplx(i, -i, real64), i = 1, 8)])), 'complex values round trip')

    call flags%acquire(buf, status=st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'acquire into a variable in use')
    call col%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_BUSY, 'destroy with a buffer out')
    call check(index(dao_last_message(), 'vis') > 0, 'the message names the pool')
    call buf%release()
    call flags%acquire(buf, status=st)
    call dao_buffer_array(buf, f, status=st)
    call check(st == DAO_OK .and. all(shape(f) == [2, 2]), 'int32 2 x 2 view')
    call buf%release()
    call col%close(st)
    call check_ok(st, 'close every pool')
    call vis%acquire(buf, 0.0_real64, st)
    call check_failed_cleanly(st, DAO_ERR_CLOSED, 'a pool of a closed collection')
    call col%destroy(st)
    call check_ok(st, 'destroy the collection and its pools')
  end subroutine collection
end program test_recycle
