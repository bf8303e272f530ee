!> A host function for the test: runs on a stream, in stream order, and
!> records what it saw of the copy queued before it.
module test_allocator_callbacks
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  implicit none
  private
  public :: host_state, check_copy

  type, public :: host_state
    type(c_ptr) :: data = c_null_ptr
    integer(int64) :: n = 0
    integer :: calls = 0
    logical :: matched = .false.
  end type host_state
contains
  subroutine check_copy(user_data) bind(C)
    type(c_ptr), value :: user_data
    type(host_state), pointer :: state
    integer(int64), pointer :: v(:)
    integer(int64) :: i
    call c_f_pointer(user_data, state)
    state%calls = state%calls + 1
    call c_f_pointer(state%data, v, [state%n])
    state%matched = .true.
    do i = 1, state%n
      if (v(i) /= 3 * i) state%matched = .false.
    end do
  end subroutine check_copy
end module test_allocator_callbacks

!> Allocator objects of every strategy: a caching allocator on a simulated
!> device with two streams, an event, copies and a host function in stream
!> order, statistics, detailed statistics, snapshots and JSON; buddy and
!> system allocators; the place default allocator.
program test_allocator
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use dao
  use dao_test_support
  use test_allocator_callbacks
  implicit none

  integer(int64), parameter :: mib = 1048576

  call caching_with_streams()
  call buddy_and_system()
  call place_default()
  call test_done('test_allocator')

contains

  subroutine caching_with_streams()
    type(dao_allocator) :: a
    type(dao_stream) :: s1, s2, default_stream
    type(dao_event) :: e
    type(dao_allocator_stats) :: stats
    type(dao_stat) :: stat
    type(dao_place) :: place
    type(host_state), target :: state
    character(len=:), allocatable :: strategy, config, json
    integer(int64), pointer :: src(:), dst(:), dev(:)
    integer(int64), parameter :: n = 32768  ! 256 KiB of int64
    type(c_ptr) :: p
    integer(c_int) :: st
    integer(int64) :: i, released, reserved_before

    call a%create(dao_place_sim(0), 'caching', 'garbage_collection_threshold=0.9', st)
    call check_ok(st, 'caching allocator on SIM 0')
    call a%info(place, strategy, config, st)
    call check_ok(st, 'info')
    call check(place == dao_place_sim(0), 'info: place')
    call check(strategy == 'caching', 'info: strategy')
    call check(index(config, 'garbage_collection_threshold=0.9') > 0, &
               'info: the config has the key given')
    call check(index(config, 'expandable_segments') > 0, 'info: the config has every key')

    call s1%create(dao_place_sim(0), st)
    call check_ok(st, 'stream 1')
    call s2%create(dao_place_sim(0), st)
    call check_ok(st, 'stream 2')
    call e%create(dao_place_sim(0), st)
    call check_ok(st, 'event')
    call check(e%is_done(st), 'a new event counts as completed')
    call check(s1%place() == dao_place_sim(0), 'stream place')
    call check(.not. c_associated(s1%native()), 'a SIM stream has no native handle')

    ! Host data on the CPU, a block of the allocator on stream 1.
    nullify (src, dst)
    call dao_allocate(src, [n], dao_place_cpu(), st)
    call check_ok(st, 'source array')
    call dao_allocate(dst, [n], dao_place_cpu(), st)
    call check_ok(st, 'destination array')
    src = [(3 * i, i = 1, n)]
    dst = 0
    call a%alloc(p, n * 8, s1, st)
    call check_ok(st, 'alloc 256 KiB on stream 1')
    call check(a%usable_size(p) >= n * 8, 'usable size >= asked')
    call c_f_pointer(p, dev, [n])

    ! Copy to the device block on stream 1, mark it, make stream 2 wait, copy
    ! back on stream 2 and check it there with a host function.
    call s1%copy(p, c_loc(src), n * 8, st)
    call check_ok(st, 'copy host -> SIM on stream 1')
    call e%record(s1, st)
    call check_ok(st, 'record the event on stream 1')
    call s2%wait_event(e, st)
    call check_ok(st, 'stream 2 waits for the event')
    call s2%copy(c_loc(dst), p, n * 8, st)
    call check_ok(st, 'copy SIM -> host on stream 2')
    state = host_state(data=c_loc(dst), n=n)
    call s2%launch_host_func(check_copy, c_loc(state), st)
    call check_ok(st, 'host function on stream 2')
    call a%record_stream(p, s2, st)
    call check_ok(st, 'record_stream: the block is used on stream 2 too')
    call s2%synchronize(st)
    call check_ok(st, 'synchronize stream 2')
    call check(s2%is_idle(st), 'stream 2 idle after synchronize')
    call check_ok(st, 'stream 2 query')
    call check(e%is_done(), 'the event completed')
    call e%synchronize(st)
    call check_ok(st, 'event synchronize')
    call check(state%calls == 1, 'the host function ran once')
    call check(state%matched, 'in stream order, after both copies')
    call check(all(dst == src) .and. all(dev == src), 'the data went there and back')

    ! The default stream (a dao_stream that holds nothing) is synchronous.
    state = host_state(data=c_loc(src), n=n)
    call default_stream%launch_host_func(check_copy, c_loc(state), st)
    call check(st == DAO_OK .and. state%calls == 1 .and. state%matched, &
               'a host function on the default stream runs before the call returns')

    call a%get_stats(stats, st)
    call check_ok(st, 'get_stats')
    call check(stats%struct_size == c_sizeof(stats), 'struct_size set by the binding')
    call check(stats%live_blocks == 1, 'one live block')
    call check(stats%allocated_bytes >= n * 8, 'allocated bytes')
    call check(stats%reserved_bytes >= stats%allocated_bytes, 'reserved >= allocated')
    call check(stats%alloc_count >= 1, 'alloc count')
    call a%get_stat(DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_ALL, stat, st)
    call check_ok(st, 'get_stat allocated bytes')
    call check(stat%current == stats%allocated_bytes .and. stat%peak >= stat%current, &
               'detailed allocated bytes agree with the stats')
    call a%get_stat(DAO_STAT_ALLOCATED_BLOCKS, DAO_STAT_POOL_SMALL, stat, st)
    call check_ok(st, 'get_stat small pool blocks')
    call check(stat%current == 1, 'a 256 KiB block is in the small pool')
    call a%get_stat(99_c_int, DAO_STAT_POOL_ALL, stat, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'an unknown metric')

    call snapshots(a, p)
    call a%snapshot_json(json, st)
    call check_ok(st, 'snapshot_json')
    call check(len(json) > 2, 'JSON has content')
    if (len(json) > 0) call check(json(1:1) == '{', 'JSON is an object')
    call check(index(json, 'caching') > 0 .or. index(json, 'segments') > 0, &
               'JSON describes the allocator')

    call a%destroy(st)
    call check_failed_cleanly(st, DAO_ERR_BUSY, 'destroy with a live block')
    call a%free(p, st)
    call check_ok(st, 'free the block')
    call s1%synchronize()
    call s2%synchronize()
    call a%get_stats(stats)
    call check(stats%live_blocks == 0 .and. stats%free_count >= 1, 'no live block')
    reserved_before = stats%reserved_bytes
    call a%trim(released, st)
    call check_ok(st, 'trim')
    call a%get_stats(stats)
    call check(released > 0, 'trim gave cached memory back')
    call check(stats%reserved_bytes == reserved_before - released, &
               'reserved bytes fell by what trim released')
    call a%reset_peak_stats(st)
    call check_ok(st, 'reset peak stats')
    call a%get_stats(stats)
    call check(stats%peak_allocated_bytes == stats%allocated_bytes, 'peak reset to current')
    call a%reset_accumulated_stats(st)
    call check_ok(st, 'reset accumulated stats')
    call a%get_stats(stats)
    call check(stats%alloc_count == 0 .and. stats%free_count == 0, 'counters reset')

    call dao_deallocate(src)
    call dao_deallocate(dst)
    call e%destroy(st)
    call check_ok(st, 'destroy the event')
    call s1%destroy(st)
    call check_ok(st, 'destroy stream 1')
    call s2%destroy(st)
    call check_ok(st, 'destroy stream 2')
    call a%destroy(st)
    call check_ok(st, 'destroy the allocator')
  end subroutine caching_with_streams

  ! The live block p of allocator a is in its snapshot.
  subroutine snapshots(a, p)
    type(dao_allocator), intent(in) :: a
    type(c_ptr), intent(in) :: p
    type(dao_snapshot) :: snap
    type(dao_segment_info) :: seg
    type(dao_block_info) :: blk
    integer(c_int) :: st
    integer :: i, j, segments, found
    integer(int64) :: blocks_bytes
    call a%snapshot(snap, st)
    call check_ok(st, 'snapshot')
    segments = snap%segment_count(st)
    call check_ok(st, 'segment count')
    call check(segments >= 1, 'at least one segment')
    found = 0
    do i = 1, segments
      call snap%segment(i, seg, st)
      call check_ok(st, 'segment')
      call check(seg%struct_size == c_sizeof(seg) .and. seg%size > 0, 'segment filled')
      call check(seg%block_count >= 1, 'segment has blocks')
      blocks_bytes = 0
      do j = 1, int(seg%block_count)
        call snap%block(i, j, blk, st)
        call check_ok(st, 'block')
        blocks_bytes = blocks_bytes + blk%size
        if (blk%address == transfer(p, 0_c_intptr_t)) then
          found = found + 1
          call check(blk%state == DAO_BLOCK_ALLOCATED, 'the live block is allocated')
          call check(blk%requested_size == 262144, 'requested size 256 KiB')
        end if
      end do
      call check(blocks_bytes == seg%mapped_bytes .or. blocks_bytes == seg%size, &
                 'blocks cover the segment')
    end do
    call check(found == 1, 'the live block is in the snapshot once')
    call snap%segment(segments + 1, seg, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a segment past the end')
    call snap%block(1, 100000, blk, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a block past the end')
    call snap%destroy(st)
    call check_ok(st, 'destroy the snapshot')
    call check(.not. c_associated(snap%handle), 'snapshot variable emptied')
  end subroutine snapshots

  subroutine buddy_and_system()
    type(dao_allocator) :: b, s
    type(dao_allocator_stats) :: stats
    type(dao_stat) :: stat
    type(dao_snapshot) :: snap
    character(len=:), allocatable :: json, config
    type(c_ptr) :: p(10)
    integer(c_int) :: st
    integer :: i
    call b%create(dao_place_cpu(), 'buddy', 'chunk_size=2MiB,max_pool=4MiB', st)
    call check_ok(st, 'buddy allocator')
    call b%info(config=config)
    call check(index(config, 'chunk_size=2MiB') > 0 .or. index(config, 'chunk_size=2097152') > 0, &
               'buddy config has the chunk size')
    do i = 1, 10
      call b%alloc(p(i), 100000_int64 * i, status=st)
      if (i <= 5) call check_ok(st, 'buddy alloc under max_pool')
    end do
    call b%get_stats(stats)
    call check(stats%failed_alloc_count >= 1, 'max_pool of 4 MiB refused some of 5.5 MB')
    call check(stats%reserved_bytes <= 4 * mib, 'reserved within max_pool')
    call b%get_stat(DAO_STAT_RESERVED_BYTES, DAO_STAT_POOL_ALL, stat, st)
    call check_ok(st, 'buddy keeps reserved bytes')
    call b%get_stat(DAO_STAT_INACTIVE_SPLIT_BYTES, DAO_STAT_POOL_ALL, stat, st)
    call check_failed_cleanly(st, DAO_ERR_UNSUPPORTED, 'buddy keeps no inactive split bytes')
    call b%get_stat(DAO_STAT_ALLOCATED_BYTES, DAO_STAT_POOL_SMALL, stat, st)
    call check_failed_cleanly(st, DAO_ERR_UNSUPPORTED, 'buddy keeps no small pool')
    call b%snapshot(snap, st)
    call check_failed_cleanly(st, DAO_ERR_UNSUPPORTED, 'buddy keeps no segments')
    call b%snapshot_json(json, st)
    call check_failed_cleanly(st, DAO_ERR_UNSUPPORTED, 'buddy has no JSON snapshot')
    do i = 1, 10
      call b%free(p(i), st)
      call check_ok(st, 'buddy free (a null pointer too)')
    end do
    call b%destroy(st)
    call check_ok(st, 'destroy buddy')

    call s%create(dao_place_sim(1), 'system', status=st)
    call check_ok(st, 'system allocator on SIM 1')
    call s%alloc(p(1), 3 * mib, status=st)
    call check_ok(st, 'system alloc')
    call s%get_stats(stats)
    call check(stats%system_alloc_count == 1 .and. stats%live_blocks == 1, 'system stats')
    call s%free(p(1))
    call s%get_stats(stats)
    call check(stats%system_free_count == 1 .and. stats%reserved_bytes == 0, &
               'system gives memory back at once')
    call s%destroy(st)
    call check_ok(st, 'destroy system')
    call s%create(dao_place_cpu(), 'system', 'key=1', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'system takes no config key')
  end subroutine buddy_and_system

  ! The default allocator of a place is dao_allocate's too.
  subroutine place_default()
    type(dao_allocator) :: d
    type(dao_allocator_stats) :: before, after
    real(c_double), pointer :: x(:, :)
    integer(c_int) :: st
    call d%from_place(dao_place_sim(1), st)
    call check_ok(st, 'default allocator of SIM 1')
    call d%get_stats(before)
    nullify (x)
    call dao_allocate(x, [128, 64], dao_place_sim(1), st)
    call check_ok(st, 'dao_allocate on SIM 1')
    call d%get_stats(after)
    call check(after%live_blocks == before%live_blocks + 1, 'dao_allocate used the default')
    call check(d%usable_size(c_loc(x)) >= 128 * 64 * 8, 'usable size of the array')
    call dao_deallocate(x)
    call d%get_stats(after)
    call check(after%live_blocks == before%live_blocks, 'dao_deallocate freed it there')
  end subroutine place_default
end program test_allocator
