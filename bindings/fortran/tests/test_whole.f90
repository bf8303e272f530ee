!> Partitioned memory (dao_comm, dao_whole): a communicator over the two SIM
!> devices of this process, each rank driven by a thread of its own (rank 0
!> by the main thread, rank 1 by a host function on a SIM stream, a libdao
!> worker thread: collective calls need every rank at once). For every type
!> the communicator supports: the partition, the local part, scatter of
!> every entry in random order then gather of random indices, pointers,
!> store / load, and bad input (a status, never a hang). Then a one-rank
!> communicator, which needs no threads, and bad arguments of the Fortran
!> layer.
module test_whole_rank
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use dao
  use dao_test_support, only: same
  implicit none
  private
  public :: rank_state, rank_body, entry_value, ENTRY_WORDS, ENTRIES

  !> An entry: 3 real64 values (24 bytes, not a power of two).
  integer, parameter :: ENTRY_WORDS = 3
  integer(int64), parameter :: ENTRIES = 1001

  type :: rank_state
    type(dao_comm) :: comm
    integer :: rank = -1
    integer :: checks = 0
    integer :: failures = 0
    integer :: types = 0
    character(len=400) :: first_failure = ''
    integer(int64) :: seed = 1
    character(len=200) :: path = ''
  end type rank_state

contains

  !> What entry i holds after the scatter.
  pure function entry_value(i) result(v)
    integer(int64), intent(in) :: i
    real(real64) :: v(ENTRY_WORDS)
    v = [real(i, real64), real(i, real64) * 0.5_real64 + 0.25_real64, -real(i, real64)]
  end function entry_value

  subroutine expect(s, condition, what)
    type(rank_state), intent(inout) :: s
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    character(len=16) :: r
    s%checks = s%checks + 1
    if (.not. condition) then
      s%failures = s%failures + 1
      if (s%failures == 1) then
        write (r, '(a, i0, a)') 'rank ', s%rank, ': '
        s%first_failure = trim(r) // ' ' // what // ' [' // dao_status_name(dao_last_status()) &
                          // ': ' // dao_last_message() // ']'
      end if
    end if
  end subroutine expect

  ! A small LCG per rank: random_number's state is not the point here.
  function next_random(s, n) result(k)
    type(rank_state), intent(inout) :: s
    integer(int64), intent(in) :: n
    integer(int64) :: k
    s%seed = mod(s%seed * 48271_int64, 2147483647_int64)
    k = mod(s%seed, n)
  end function next_random

  !> The body of one rank: the same collective calls, in the same order, on
  !> every rank.
  subroutine rank_body(user_data) bind(C)
    type(c_ptr), value :: user_data
    type(rank_state), pointer :: s
    integer(c_int) :: types(3), t, st
    integer :: i
    call c_f_pointer(user_data, s)
    types = [DAO_WHOLE_CONTINUOUS, DAO_WHOLE_CHUNKED, DAO_WHOLE_DISTRIBUTED]
    s%rank = s%comm%rank(st)
    call expect(s, st == DAO_OK .and. s%rank >= 0, 'comm%rank')
    do i = 1, size(types)
      t = types(i)
      ! Every rank gets the same answer, so the collective calls stay in step.
      if (s%comm%supported(t, DAO_WHOLE_DEVICE, st)) then
        call one_type(s, t, DAO_WHOLE_DEVICE)
      else
        call expect(s, st == DAO_ERR_UNSUPPORTED, 'supported: DAO_OK or DAO_ERR_UNSUPPORTED')
      end if
    end do
    if (s%comm%supported(DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, st)) then
      call one_type(s, DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST)
    end if
    call collective_bad_input(s)
    call s%comm%barrier(st)
    call expect(s, st == DAO_OK, 'final barrier')
  end subroutine rank_body

  ! "type/location" for messages, without the binding's deferred-length
  ! name functions (see one_type); test_whole checks those on one thread.
  pure function names(whole_type, location) result(name)
    integer(c_int), intent(in) :: whole_type, location
    character(len=32) :: name
    select case (whole_type)
    case (DAO_WHOLE_CONTINUOUS)
      name = 'continuous'
    case (DAO_WHOLE_CHUNKED)
      name = 'chunked'
    case default
      name = 'distributed'
    end select
    if (location == DAO_WHOLE_HOST) then
      name(len_trim(name) + 1:) = '/host'
    else
      name(len_trim(name) + 1:) = '/device'
    end if
  end function names

  subroutine one_type(s, whole_type, location)
    type(rank_state), intent(inout) :: s
    integer(c_int), intent(in) :: whole_type, location
    type(dao_whole) :: w, w2
    type(dao_whole_info) :: info
    type(dao_whole_range) :: mine, part(0:1)
    integer(int64) :: n_mine, i, j, k, tmp, entry_bytes, n_coll
    integer(int64), allocatable :: order(:), idx(:)
    real(real64), allocatable, target :: src(:, :), dst(:, :)
    real(real64), pointer :: local(:, :)
    type(c_ptr) :: p, q
    integer(c_int) :: st
    integer :: size_, r, owners(4)
    ! Fixed lengths on the ranks' threads: gfortran 12 keeps the length of a
    ! deferred-length temporary in a static variable, so two threads building
    ! such strings at once overran each other's (AddressSanitizer).
    character(len=512) :: msg
    character(len=32) :: what
    logical :: ok

    what = names(whole_type, location)
    entry_bytes = ENTRY_WORDS * 8
    call w%create(s%comm, whole_type, location, ENTRIES * entry_bytes, entry_bytes, st)
    call expect(s, st == DAO_OK, what // ': create')
    if (st /= DAO_OK) return
    s%types = s%types + 1
    size_ = s%comm%size()

    ! info and the partition rule: 1001 entries on 2 ranks are 501, 500.
    call w%info(info, st)
    call expect(s, st == DAO_OK .and. info%type == whole_type .and. &
                info%location == location .and. info%entry_count == ENTRIES .and. &
                info%entry_size == entry_bytes .and. info%rank == s%rank .and. &
                info%size == size_, what // ': info')
    do r = 0, size_ - 1
      call w%partition(r, part(r), st)
      call expect(s, st == DAO_OK .and. part(r)%rank == r, what // ': partition')
    end do
    call expect(s, part(0)%first_entry == 0 .and. part(0)%entry_count == 501 .and. &
                part(1)%first_entry == 501 .and. part(1)%entry_count == 500 .and. &
                part(1)%byte_offset == 501 * entry_bytes .and. &
                part(1)%byte_size == 500 * entry_bytes, what // ': partition rule')
    owners = [w%entry_rank(0_int64), w%entry_rank(500_int64), w%entry_rank(501_int64), &
              w%entry_rank(ENTRIES - 1)]
    call expect(s, all(owners == [0, 0, 1, 1]), what // ': entry_rank')
    call w%partition(size_, mine, st)
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT, what // ': partition of a rank past the end')
    k = w%entry_rank(ENTRIES, st)
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT .and. k == -1, &
                what // ': entry_rank past the end')

    call w%local(p, mine, st)
    call expect(s, st == DAO_OK .and. c_associated(p) .and. mine%rank == s%rank .and. &
                mine%first_entry == part(s%rank)%first_entry .and. &
                mine%entry_count == part(s%rank)%entry_count, what // ': local part')

    ! Each rank scatters the entries of one parity, in random order: every
    ! entry written once, half of them into the other rank's part.
    n_mine = (ENTRIES - s%rank + 1) / 2
    allocate (order(n_mine))
    do i = 1, n_mine
      order(i) = 2 * (i - 1) + s%rank
    end do
    do i = n_mine, 2, -1
      j = next_random(s, i) + 1
      tmp = order(i)
      order(i) = order(j)
      order(j) = tmp
    end do
    allocate (src(ENTRY_WORDS, n_mine))
    do i = 1, n_mine
      src(:, i) = entry_value(order(i))
    end do
    call w%scatter(c_loc(src), size(src, kind=int64) * 8, order, st)
    call expect(s, st == DAO_OK, what // ': scatter')
    call s%comm%barrier(st)
    call expect(s, st == DAO_OK, what // ': barrier after the scatter')

    ! Gather random indices (repeats allowed) from the whole table.
    allocate (idx(777), dst(ENTRY_WORDS, 777))
    do i = 1, size(idx)
      idx(i) = next_random(s, ENTRIES)
    end do
    idx(1) = 0
    idx(2) = ENTRIES - 1
    dst = -1.0_real64
    call w%gather(idx, c_loc(dst), size(dst, kind=int64) * 8, st)
    call expect(s, st == DAO_OK, what // ': gather')
    ok = .true.
    do i = 1, size(idx)
      ok = ok .and. all(same(dst(:, i), entry_value(idx(i))))
    end do
    call expect(s, ok, what // ': gathered entries are the scattered ones')

    ! The same, every rank together (rank 1 with fewer indices).
    dst = -1.0_real64
    n_coll = size(idx, kind=int64) - s%rank * 100
    call w%gather_collective(idx(1:n_coll), c_loc(dst), size(dst, kind=int64) * 8, st)
    call expect(s, st == DAO_OK, what // ': collective gather')
    ok = .true.
    do i = 1, n_coll
      ok = ok .and. all(same(dst(:, i), entry_value(idx(i))))
    end do
    call expect(s, ok, what // ': collectively gathered entries are the scattered ones')
    ! A buffer too small on one rank fails both.
    if (s%rank == 0) then
      call w%gather_collective(idx, c_loc(dst), 8_int64, st)
      msg = dao_last_message()
      call expect(s, st == DAO_ERR_INVALID_ARGUMENT .and. index(msg, 'too small') > 0, &
                  what // ': collective gather into a small buffer')
    else
      call w%gather_collective(idx, c_loc(dst), size(dst, kind=int64) * 8, st)
      call expect(s, st == DAO_ERR_INVALID_ARGUMENT, &
                  what // ': collective gather fails with the other rank''s small buffer')
    end if
    ! Scatter back what is there: nothing changes.
    call w%scatter_collective(c_loc(dst), n_coll * ENTRY_WORDS * 8, idx(1:n_coll), st)
    call expect(s, st == DAO_OK, what // ': collective scatter')

    ! The local part holds this rank's entries.
    if (mine%entry_count > 0) then
      call c_f_pointer(p, local, [int(ENTRY_WORDS, int64), int(mine%entry_count, int64)])
      ok = .true.
      do i = 1, int(mine%entry_count, int64)
        ok = ok .and. all(same(local(:, i), entry_value(int(mine%first_entry, int64) + i - 1)))
      end do
      call expect(s, ok, what // ': local part holds its entries')
    end if

    ! Pointers: any rank's part when mapped, only our own when distributed;
    ! the base only of a continuous object.
    r = 1 - s%rank
    call w%rank_pointer(r, q, st)
    if (whole_type == DAO_WHOLE_DISTRIBUTED) then
      call expect(s, st == DAO_ERR_UNSUPPORTED .and. .not. c_associated(q), &
                  what // ': another rank''s pointer of a distributed object')
    else
      call expect(s, st == DAO_OK .and. c_associated(q), what // ': another rank''s pointer')
      if (st == DAO_OK .and. c_associated(q)) then
        call c_f_pointer(q, local, [int(ENTRY_WORDS, int64), 1_int64])
        call expect(s, all(same(local(:, 1), entry_value(int(part(r)%first_entry, int64)))), &
                    what // ': first entry through another rank''s pointer')
      end if
    end if
    call w%rank_pointer(s%rank, q, st)
    call expect(s, st == DAO_OK .and. c_associated(q, p), what // ': own rank pointer is local')
    call w%base(q, st)
    if (whole_type == DAO_WHOLE_CONTINUOUS) then
      call expect(s, st == DAO_OK .and. c_associated(q), what // ': base')
      if (st == DAO_OK) then
        call c_f_pointer(q, local, [int(ENTRY_WORDS, int64), ENTRIES])
        call expect(s, all(same(local(:, ENTRIES), entry_value(ENTRIES - 1))) .and. &
                    all(same(local(:, 1), entry_value(0_int64))), what // ': entries through base')
      end if
    else
      call expect(s, st == DAO_ERR_UNSUPPORTED, what // ': no base')
    end if

    ! Bad input of one-sided calls: a status on this rank only.
    idx(5) = ENTRIES
    call w%gather(idx, c_loc(dst), size(dst, kind=int64) * 8, st)
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT, what // ': gather of an index out of range')
    idx(5) = -3
    call w%scatter(c_loc(dst), size(dst, kind=int64) * 8, idx, st)
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT, what // ': scatter of a negative index')
    idx(5) = 0
    call w%gather(idx, c_loc(dst), 8_int64, st)
    msg = dao_last_message()
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT .and. index(msg, 'too small') > 0, &
                what // ': gather into a small buffer')
    call w%gather(idx(1:0), c_null_ptr, 0_int64, st)
    call expect(s, st == DAO_OK, what // ': gather of no entries')

    ! store, then load into an object of another type.
    call w%store(trim(s%path), st)
    call expect(s, st == DAO_OK, what // ': store')
    if (s%comm%supported(DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST)) then
      call w2%create(s%comm, DAO_WHOLE_DISTRIBUTED, DAO_WHOLE_HOST, ENTRIES * entry_bytes, &
                     entry_bytes, st)
      call expect(s, st == DAO_OK, what // ': create a second object')
      call w2%load(trim(s%path), st)
      call expect(s, st == DAO_OK, what // ': load')
      dst = 0
      call w2%gather(idx, c_loc(dst), size(dst, kind=int64) * 8, st)
      ok = st == DAO_OK
      do i = 1, size(idx)
        ok = ok .and. all(same(dst(:, i), entry_value(idx(i))))
      end do
      call expect(s, ok, what // ': loaded entries are the stored ones')
      call w2%load(trim(s%path) // '.missing', st)
      call expect(s, st == DAO_ERR_NOT_FOUND, what // ': load of a missing file (every rank)')
      call w2%destroy(st)
      call expect(s, st == DAO_OK, what // ': destroy the second object')
    end if

    ! A live object keeps the communicator handle.
    call s%comm%destroy(st)
    call expect(s, st == DAO_ERR_BUSY .and. c_associated(s%comm%handle), &
                what // ': comm%destroy while an object lives')
    call w%destroy(st)
    call expect(s, st == DAO_OK .and. .not. c_associated(w%handle), what // ': destroy')
  end subroutine one_type

  ! Collective calls with bad arguments fail on every rank, with a status.
  subroutine collective_bad_input(s)
    type(rank_state), intent(inout) :: s
    type(dao_whole) :: w
    integer(c_int) :: st
    character(len=512) :: msg  ! fixed length: see one_type
    ! An entry size that does not divide the total size.
    call w%create(s%comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, 1000_int64, 24_int64, st)
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT .and. .not. c_associated(w%handle), &
                'create with an entry size that does not divide the total')
    ! The ranks disagree on the total size.
    call w%create(s%comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, 240_int64 * (s%rank + 1), &
                  24_int64, st)
    msg = dao_last_message()
    call expect(s, st == DAO_ERR_INVALID_ARGUMENT .and. .not. c_associated(w%handle) .and. &
                index(msg, 'total_size') > 0, 'create where the ranks disagree')
    ! Too large for a 64 MiB SIM device.
    call w%create(s%comm, DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, 1000_int64 * 1024 * 1024, &
                  1024_int64, st)
    call expect(s, st == DAO_ERR_OUT_OF_MEMORY .and. .not. c_associated(w%handle), &
                'create larger than the devices')
  end subroutine collective_bad_input
end module test_whole_rank

program test_whole
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64, error_unit, output_unit
  use dao
  use dao_test_support
  use test_whole_rank
  implicit none

  call two_ranks()
  call one_rank()
  call bad_communicators()
  call check(dao_whole_type_string(DAO_WHOLE_CHUNKED) == 'chunked', 'type name')
  call check(dao_whole_location_string(DAO_WHOLE_HOST) == 'host', 'location name')
  call check(dao_whole_type_string(77_c_int) == 'unknown', 'name of an unknown type')
  call test_done('test_whole')

contains

  subroutine two_ranks()
    type(dao_comm) :: comms(2)
    type(rank_state), target :: states(2)
    type(dao_stream) :: stream
    type(dao_comm_info) :: info
    type(dao_place) :: places(2), place
    character(len=:), allocatable :: transport
    integer(c_int) :: st
    integer :: r

    places = [dao_place_sim(0), dao_place_sim(1)]
    call dao_comm_local(comms, places, st)
    call check_ok(st, 'dao_comm_local over two SIM devices')
    if (st /= DAO_OK) return
    do r = 1, 2
      call check(comms(r)%rank() == r - 1, 'rank')
      call check(comms(r)%size() == 2, 'size')
      call check(comms(r)%rank_place(2 - r) == places(3 - r), 'rank_place of the other rank')
      call comms(r)%info(info, transport, st)
      call check_ok(st, 'comm%info')
      call check(info%rank == r - 1 .and. info%size == 2 .and. info%place == places(r) .and. &
                 transport == 'in-process' .and. info%shares_address_space == 1, 'comm info')
    end do
    place = comms(1)%rank_place(2, st)
    call check(place == dao_place() .and. st == DAO_ERR_INVALID_ARGUMENT, &
               'rank_place of a rank past the end')

    do r = 1, 2
      states(r)%comm = comms(r)
      states(r)%seed = 12345_int64 * r
      states(r)%path = 'fortran_test_whole.bin'
    end do
    ! Rank 1 on a libdao worker thread, rank 0 on this one.
    call stream%create(dao_place_sim(1), st)
    call check_ok(st, 'a stream for rank 1')
    if (st /= DAO_OK) return
    call stream%launch_host_func(rank_body, c_loc(states(2)), st)
    call check_ok(st, 'launch rank 1')
    call rank_body(c_loc(states(1)))
    call stream%synchronize(st)
    call check_ok(st, 'rank 1 finished')
    call stream%destroy(st)
    call check_ok(st, 'stream destroyed')
    do r = 1, 2
      if (states(r)%failures > 0) write (error_unit, '(a)') trim(states(r)%first_failure)
      write (output_unit, '(a, i0, a, i0, a, i0, a)') 'rank ', r - 1, ': ', states(r)%checks, &
        ' checks on its thread, ', states(r)%types, ' types of whole memory'
      call check(states(r)%types == 4, 'every type (and chunked host memory) ran on each rank')
      call check(states(r)%failures == 0 .and. states(r)%checks > 50, 'every check of a rank')
    end do
    do r = 1, 2
      call comms(r)%destroy(st)
      call check_ok(st, 'comm%destroy')
      call check(.not. c_associated(comms(r)%handle), 'destroyed handle is null')
    end do
    open (newunit=r, file='fortran_test_whole.bin', status='old', iostat=st)
    if (st == 0) close (r, status='delete')
  end subroutine two_ranks

  ! One rank: every call, collective or not, from this thread.
  subroutine one_rank()
    type(dao_comm) :: comms(1)
    type(dao_whole) :: w
    type(dao_whole_range) :: mine
    integer(int64) :: idx(4)
    real(real64), target :: src(3, 4), dst(3, 4)
    type(c_ptr) :: p
    integer(c_int) :: st
    integer :: i

    call dao_comm_local(comms, [dao_place_cpu()], st)
    call check_ok(st, 'dao_comm_local of one rank')
    if (st /= DAO_OK) return
    call w%create(comms(1), DAO_WHOLE_CONTINUOUS, DAO_WHOLE_HOST, 10_int64 * 24, 24_int64, st)
    call check_ok(st, 'one rank: create')
    call w%local(p, mine, st)
    call check(st == DAO_OK .and. mine%entry_count == 10 .and. mine%first_entry == 0, &
               'one rank: owns every entry')
    idx = [9, 0, 4, 9]
    do i = 1, 4
      src(:, i) = entry_value(idx(i))
    end do
    call w%scatter(c_loc(src), 96_int64, idx, st)
    call check_ok(st, 'one rank: scatter')
    call comms(1)%barrier(st)
    call check_ok(st, 'one rank: barrier')
    call w%gather(idx([4, 3, 2, 1]), c_loc(dst), 96_int64, st)
    call check_ok(st, 'one rank: gather')
    call check(all(same(dst, src(:, [4, 3, 2, 1]))), 'one rank: gathered what was scattered')
    ! Bad input of the Fortran layer, and a handle already held.
    call w%gather(idx, c_loc(dst), -1_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'one rank: negative bytes')
    call w%create(comms(1), DAO_WHOLE_CHUNKED, DAO_WHOLE_HOST, 240_int64, 24_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'one rank: create into a held handle')
    call w%load('/nonexistent/dir/whole.bin', st)
    call check_failed_cleanly(st, DAO_ERR_NOT_FOUND, 'one rank: load of a missing file')
    call comms(1)%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_BUSY, 'one rank: comm%destroy with a live object')
    call w%destroy(st)
    call check_ok(st, 'one rank: destroy')
    i = w%entry_rank(0_int64, st)
    call check(i == -1 .and. st == DAO_ERR_INVALID_ARGUMENT, 'a destroyed object is refused')
    call comms(1)%destroy(st)
    call check_ok(st, 'one rank: comm%destroy')
  end subroutine one_rank

  subroutine bad_communicators()
    type(dao_comm) :: comms(2), one(1)
    type(dao_whole) :: w
    type(dao_whole_info) :: info
    integer(c_int) :: st
    call dao_comm_local(comms, [dao_place_sim(0)], st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'comms and places differ in size')
    call dao_comm_local(comms, [dao_place_sim(0), dao_place_sim(9)], st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'a SIM device that does not exist')
    call check(.not. c_associated(comms(1)%handle), 'handles unchanged on failure')
    call dao_comm_local(one, [dao_place(kind=77, device=0)], st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a place of an unknown kind')
    call dao_comm_local(one, [dao_place_sim(0)], st)
    call check_ok(st, 'one SIM rank')
    call dao_comm_local(one, [dao_place_sim(0)], st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'a comm variable that holds a handle')
    call check(.not. one(1)%supported(DAO_WHOLE_CHUNKED, 9_c_int, st), 'unknown location')
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'supported: unknown location')
    call w%create(one(1), DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, -24_int64, 24_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'create with a negative size')
    call w%create(one(1), DAO_WHOLE_CHUNKED, DAO_WHOLE_DEVICE, 0_int64, 24_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'create with a zero size')
    call w%create(one(1), 7_c_int, DAO_WHOLE_DEVICE, 240_int64, 24_int64, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'create with an unknown type')
    call w%info(info, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'info of no object')
    call one(1)%destroy(st)
    call check_ok(st, 'destroy the one SIM rank')
  end subroutine bad_communicators
end program test_whole
