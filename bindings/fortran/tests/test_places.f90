!> Version, status names, places of every kind (CPU and SIM here; CUDA kinds
!> with or without devices), memory information, defaults, simulated device
!> configuration and cost accounting, and the C layer used directly.
program test_places
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64
  use dao
  use dao_test_support
  implicit none

  call version_and_status()
  call kinds_and_places()
  call memory_information()
  call cuda_kinds()
  call defaults()
  call simulated_devices()
  call sim_costs()
  call c_layer()
  call test_done('test_places')

contains

  subroutine version_and_status()
    call check(dao_version_number() == DAO_MODULE_VERSION_NUMBER, 'version number')
    call check(dao_version() == DAO_MODULE_VERSION_STRING, 'version string')
    call check(dao_status_name(DAO_OK) == 'success', 'DAO_OK is "success"')
    call check(dao_status_name(DAO_ERR_OUT_OF_MEMORY) == 'out of memory', 'out of memory')
    call check(dao_status_name(DAO_ERR_BUSY) == 'resource still in use', 'busy')
    call check(dao_status_name(DAO_ERR_NOT_FOUND) == 'not found', 'not found')
    call check(dao_status_name(DAO_STATUS_END_) == 'unknown status', &
               'a number past the list is "unknown status"')
    call check(dao_status_name(-3_c_int) == 'unknown status', 'negative number')
  end subroutine version_and_status

  subroutine kinds_and_places()
    type(dao_place) :: p
    integer(c_int) :: st
    call check(dao_kind_name(DAO_PLACE_KIND_CPU) == 'cpu', 'kind name cpu')
    call check(dao_kind_name(DAO_PLACE_KIND_CUDA) == 'cuda', 'kind name cuda')
    call check(dao_kind_name(DAO_PLACE_KIND_CUDA_PINNED) == 'cuda_pinned', 'kind cuda_pinned')
    call check(dao_kind_name(DAO_PLACE_KIND_CUDA_MANAGED) == 'cuda_managed', 'cuda_managed')
    call check(dao_kind_name(DAO_PLACE_KIND_SIM) == 'sim', 'kind name sim')
    call check(dao_kind_name(DAO_PLACE_KIND_COUNT) == 'unknown', 'kind past the list')

    p = dao_place_cpu()
    call check(p%kind == DAO_PLACE_KIND_CPU .and. p%device == 0, 'dao_place_cpu()')
    p = dao_place_sim(1)
    call check(p%kind == DAO_PLACE_KIND_SIM .and. p%device == 1, 'dao_place_sim(1)')
    p = dao_place_cuda(3)
    call check(p%kind == DAO_PLACE_KIND_CUDA .and. p%device == 3, 'dao_place_cuda(3)')
    p = dao_place_cuda_pinned()
    call check(p%kind == DAO_PLACE_KIND_CUDA_PINNED .and. p%device == 0, 'cuda_pinned()')
    p = dao_place_cuda_managed(2)
    call check(p%kind == DAO_PLACE_KIND_CUDA_MANAGED .and. p%device == 2, 'cuda_managed(2)')
    call check(dao_place_sim(1) == dao_place(DAO_PLACE_KIND_SIM, 1), 'place ==')
    call check(dao_place_sim(1) /= dao_place_sim(0), 'place /= (device)')
    call check(dao_place_cpu() /= dao_place_sim(0), 'place /= (kind)')
    call check(dao_place_name(dao_place_cpu()) == 'cpu', 'place name cpu')
    call check(dao_place_name(dao_place_sim(1)) == 'sim:1', 'place name sim:1')
    call check(dao_place_name(dao_place_cuda(0)) == 'cuda:0', 'place name cuda:0')

    call check(dao_device_count(DAO_PLACE_KIND_CPU, st) == 1, 'one CPU')
    call check_ok(st, 'device count CPU')
    call check(dao_device_count(DAO_PLACE_KIND_SIM, st) == 2, 'two SIM devices (2x64MiB)')
    call check_ok(st, 'device count SIM')
    call check(dao_device_count(77_c_int, st) == 0, 'count of an unknown kind is 0')
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'device count of an unknown kind')
    call check(len(dao_backend_description(DAO_PLACE_KIND_CPU)) > 0, 'CPU backend description')
    call check(len(dao_backend_description(DAO_PLACE_KIND_SIM)) > 0, 'SIM backend description')
    call check(dao_backend_description(99_c_int) == 'unknown place kind', 'unknown kind backend')
  end subroutine kinds_and_places

  subroutine memory_information()
    integer(int64) :: free_bytes, total_bytes, used0, used1
    integer(c_int) :: st
    type(c_ptr) :: p
    call dao_memory_info(dao_place_cpu(), free_bytes, total_bytes, st)
    call check_ok(st, 'CPU memory info')
    call check(total_bytes > 0 .and. free_bytes <= total_bytes, 'CPU free <= total')
    call dao_memory_info(dao_place_sim(0), free_bytes, total_bytes, st)
    call check_ok(st, 'SIM memory info')
    call check(total_bytes == 64_int64 * 1024 * 1024, 'SIM 0 has 64 MiB (DAO_SIM_DEVICES)')
    call check(free_bytes <= total_bytes, 'SIM free <= total')
    call dao_memory_info(dao_place_sim(1), total_bytes=total_bytes, status=st)
    call check_ok(st, 'SIM 1 total only')
    call dao_memory_info(dao_place_sim(2), free_bytes, total_bytes, st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'memory info of SIM 2 (there are 2)')
    call dao_memory_info(dao_place(DAO_PLACE_KIND_CPU, 1), status=st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'memory info of CPU device 1')

    ! dao_alloc through the C layer shows in dao_used_bytes.
    used0 = dao_used_bytes(dao_place_sim(1), st)
    call check_ok(st, 'dao_used_bytes')
    call check_ok(dao_alloc(dao_place_sim(1), 1048576_c_size_t, p), 'C layer dao_alloc')
    call check(c_associated(p), 'dao_alloc gave a pointer')
    call check(mod(transfer(p, 0_c_intptr_t), 256_c_intptr_t) == 0, 'aligned to 256 bytes')
    used1 = dao_used_bytes(dao_place_sim(1))
    call check(used1 >= used0 + 1048576, 'used grew by at least 1 MiB')
    call check_ok(dao_free(dao_place_sim(1), p), 'C layer dao_free')
    call check(dao_used_bytes(dao_place_sim(1)) == used0, 'used back')
    call check_status(dao_free(dao_place_sim(1), p), DAO_ERR_INVALID_POINTER, 'C double free')
    call check(len(dao_string(dao_last_error())) > 0, 'C dao_last_error() has the message')
    call check(dao_used_bytes(dao_place_sim(5), st) == 0, 'used of a missing device is 0')
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'dao_used_bytes of a missing device')
  end subroutine memory_information

  ! CUDA kinds: without a driver or GPU every place of them gives
  ! DAO_ERR_NO_DEVICE with a message that says why; with one (or the fake
  ! driver of tests/fake_cuda, test fortran_places_fake_cuda), they work.
  subroutine cuda_kinds()
    integer :: n
    integer(c_int) :: st
    type(dao_allocator) :: alloc
    type(dao_stream) :: stream
    type(dao_event) :: event
    type(c_ptr) :: p
    integer(int64) :: total_bytes
    n = dao_device_count(DAO_PLACE_KIND_CUDA, st)
    call check_ok(st, 'CUDA device count')
    call check(n >= 0, 'CUDA count >= 0')
    call check(dao_device_count(DAO_PLACE_KIND_CUDA_MANAGED) == n, 'managed count = CUDA count')
    call check(dao_device_count(DAO_PLACE_KIND_CUDA_PINNED) == min(n, 1), 'pinned count')
    if (n == 0) then
      call check(len(dao_backend_description(DAO_PLACE_KIND_CUDA)) > 0, 'CUDA: says why none')
      call dao_memory_info(dao_place_cuda(0), total_bytes=total_bytes, status=st)
      call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'memory info of CUDA 0')
      call alloc%create(dao_place_cuda(0), 'caching', status=st)
      call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'allocator on CUDA 0')
      call check(.not. c_associated(alloc%handle), 'no allocator handle')
      call alloc%create(dao_place_cuda_pinned(), status=st)
      call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'allocator on CUDA pinned')
      call stream%create(dao_place_cuda(0), st)
      call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'stream on CUDA 0')
      call event%create(dao_place_cuda_managed(0), st)
      call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'event on CUDA managed 0')
    else
      call dao_memory_info(dao_place_cuda(0), total_bytes=total_bytes, status=st)
      call check_ok(st, 'memory info of CUDA 0')
      call check(total_bytes > 0, 'a GPU has memory')
      call stream%create(dao_place_cuda(0), st)
      call check_ok(st, 'stream on CUDA 0')
      call check(c_associated(stream%native()), 'a CUDA stream has a native CUstream')
      call alloc%create(dao_place_cuda(0), 'caching', status=st)
      call check_ok(st, 'caching allocator on CUDA 0')
      call alloc%alloc(p, 1048576_int64, stream, st)
      call check_ok(st, 'alloc 1 MiB on the CUDA stream')
      call check(mod(transfer(p, 0_c_intptr_t), 256_c_intptr_t) == 0, 'CUDA block aligned')
      call event%create(dao_place_cuda(0), st)
      call check_ok(st, 'event on CUDA 0')
      call event%record(stream, st)
      call check_ok(st, 'record on the CUDA stream')
      call event%synchronize(st)
      call check_ok(st, 'event synchronize')
      call alloc%free(p, st)
      call check_ok(st, 'free the CUDA block')
      call stream%synchronize(st)
      call check_ok(st, 'synchronize the CUDA stream')
      call event%destroy(st)
      call check_ok(st, 'destroy the CUDA event')
      call alloc%destroy(st)
      call check_ok(st, 'destroy the CUDA allocator')
      call stream%destroy(st)
      call check_ok(st, 'destroy the CUDA stream')
    end if
    call stream%wrap(dao_place_sim(0), c_null_ptr, st)
    call check_failed_cleanly(st, DAO_ERR_UNSUPPORTED, 'wrap a native stream on SIM')
  end subroutine cuda_kinds

  subroutine defaults()
    character(len=:), allocatable :: strategy, config
    integer(c_int) :: st
    call dao_default_config(DAO_PLACE_KIND_CPU, strategy, config, st)
    call check_ok(st, 'default config CPU')
    call check(len(strategy) > 0, 'CPU default strategy named')
    call dao_default_config(DAO_PLACE_KIND_SIM, strategy, status=st)
    call check_ok(st, 'default config SIM, strategy only')
    call check(strategy == 'caching' .or. strategy == 'buddy' .or. strategy == 'system', &
               'SIM default strategy is one of the strategies')
    call dao_default_config(11_c_int, strategy, config, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'default config of an unknown kind')
  end subroutine defaults

  subroutine simulated_devices()
    integer(c_int) :: st
    ! In use already (above) with 2 x 64 MiB: the same configuration is
    ! accepted and changes nothing, another one is refused.
    call dao_configure_sim([67108864_int64, 67108864_int64], st)
    call check_ok(st, 'configure SIM again with the configuration in use')
    call dao_configure_sim([1048576_int64], st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'configure SIM after use, differently')
    call dao_configure_sim([-5_int64], st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'a negative capacity')
    call check(dao_device_count(DAO_PLACE_KIND_SIM) == 2, 'still two SIM devices')
  end subroutine simulated_devices

  ! Cost profiles and accounting. The SIM devices are in use, with the
  ! profile of DAO_SIM_COSTS: "none" (unset; test fortran_places) counts
  ! calls and charges no time, "h200" (test fortran_places_h200) charges
  ! an H200's driver time too.
  subroutine sim_costs()
    character(len=:), allocatable :: profile
    character(len=16) :: expected, other
    type(dao_sim_cost) :: cost
    type(dao_allocator) :: alloc
    type(c_ptr) :: p
    integer(c_int) :: st, op
    integer :: length, env_status
    call get_environment_variable('DAO_SIM_COSTS', expected, length, env_status)
    if (env_status /= 0 .or. length == 0) expected = 'none'
    other = merge('h200', 'none', trim(expected) == 'none')
    call dao_get_sim_profile(profile, st)
    call check_ok(st, 'get the SIM profile')
    call check(profile == trim(expected), 'the profile is that of DAO_SIM_COSTS')
    call dao_set_sim_profile(expected, st)
    call check_ok(st, 'set the profile in effect again')
    call dao_set_sim_profile(other, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_STATE, 'another profile after first use')
    call dao_set_sim_profile('tpu7', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'an unknown profile')
    call check(index(dao_last_message(), 'tpu7') > 0, 'the message names the profile')
    call check(index(dao_last_message(), 'h200') > 0, 'the message lists the profiles')
    call dao_set_sim_profile('', st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'an empty profile')
    call dao_set_sim_profile(other)
    call check_status(dao_last_status(), DAO_ERR_INVALID_STATE, 'no status argument: recorded')
    call dao_get_sim_profile(profile)
    call check_ok(dao_last_status(), 'get the profile without a status argument')
    call check(profile == trim(expected), 'profile unchanged')

    call check(dao_sim_operation_name(DAO_SIM_OP_ALLOC) == 'alloc', 'op name alloc')
    call check(dao_sim_operation_name(DAO_SIM_OP_COPY_TO_DEVICE) == 'copy_to_device', &
               'op name copy_to_device')
    call check(dao_sim_operation_name(DAO_SIM_OP_COUNT) == 'unknown', 'op name past the list')
    call check(dao_sim_operation_name(-1_c_int) == 'unknown', 'op name of -1')

    call dao_reset_sim_costs(0, st)
    call check_ok(st, 'reset the costs of SIM 0')
    do op = 0, DAO_SIM_OP_COUNT - 1
      call dao_get_sim_cost(0, op, cost, st)
      call check_ok(st, 'cost of ' // dao_sim_operation_name(op))
      call check(cost%count == 0 .and. cost%bytes == 0 .and. cost%ns == 0, &
                 'zero after a reset: ' // dao_sim_operation_name(op))
    end do
    ! A system allocator takes every block from the device: one segment
    ! allocation of the block's bytes, one free.
    call alloc%create(dao_place_sim(0), 'system', status=st)
    call check_ok(st, 'system allocator on SIM 0')
    call alloc%alloc(p, 1048576_int64, status=st)
    call check_ok(st, 'alloc 1 MiB')
    call dao_get_sim_cost(0, DAO_SIM_OP_ALLOC, cost, st)
    call check_ok(st, 'cost of alloc')
    call check(cost%struct_size == c_sizeof(cost), 'struct_size set for the caller')
    call check(cost%count == 1, 'one segment allocation counted')
    call check(cost%bytes >= 1048576, 'its bytes counted')
    if (profile == 'none') then
      call check(cost%ns == 0, 'profile "none": no simulated time')
    else
      call check(cost%ns > 0, 'profile "h200": simulated time of cuMemAlloc')
    end if
    call alloc%free(p, st)
    call check_ok(st, 'free the block')
    call dao_get_sim_cost(0, DAO_SIM_OP_FREE, cost, st)
    call check_ok(st, 'cost of free')
    call check(cost%count == 1, 'one free counted')
    call check((cost%ns == 0) .eqv. (profile == 'none'), 'simulated time of free: profile')
    call alloc%destroy(st)
    call check_ok(st, 'destroy the allocator')
    call dao_get_sim_cost(1, DAO_SIM_OP_ALLOC, cost, st)
    call check_ok(st, 'cost on SIM 1')
    call dao_reset_sim_costs(0)
    call check_ok(dao_last_status(), 'reset without a status argument')
    call dao_get_sim_cost(0, DAO_SIM_OP_ALLOC, cost)
    call check(cost%count == 0 .and. cost%bytes == 0, 'zero again after the reset')

    call dao_get_sim_cost(2, DAO_SIM_OP_ALLOC, cost, st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'cost of SIM 2 (there are 2)')
    call dao_get_sim_cost(-1, DAO_SIM_OP_ALLOC, cost, st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'cost of SIM -1')
    call dao_get_sim_cost(0, DAO_SIM_OP_COUNT, cost, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'cost of an unknown operation')
    call check(cost%count == 0 .and. cost%bytes == 0 .and. cost%ns == 0, 'zero on failure')
    call dao_get_sim_cost(0, 99_c_int, cost, st)
    call check_failed_cleanly(st, DAO_ERR_INVALID_ARGUMENT, 'cost of operation 99')
    call dao_reset_sim_costs(7, st)
    call check_failed_cleanly(st, DAO_ERR_NO_DEVICE, 'reset the costs of SIM 7')
    ! The C layer: struct_size is the caller's to set.
    cost = dao_sim_cost()
    call check_status(dao_sim_get_cost(0, DAO_SIM_OP_ALLOC, cost), DAO_ERR_INVALID_ARGUMENT, &
                      'C layer: struct_size 0')
  end subroutine sim_costs

  ! The bare C layer: functions under their C names, statuses as results.
  subroutine c_layer()
    integer(c_int) :: count, st
    integer(c_size_t) :: free_bytes, total_bytes
    type(c_ptr) :: strategy, a, p
    type(dao_place) :: place
    call check_ok(dao_place_device_count(DAO_PLACE_KIND_SIM, count), 'C device count')
    call check(count == 2, 'C layer sees two SIM devices')
    call check_ok(dao_place_memory_info(dao_place_sim(0), total_bytes=total_bytes), &
                  'C memory info with free_bytes absent (NULL)')
    call check(total_bytes == 67108864_c_size_t, 'C total bytes')
    st = dao_place_memory_info(dao_place_sim(0), free_bytes)
    call check_ok(st, 'C memory info with total_bytes absent')
    call check_ok(dao_place_default_config(DAO_PLACE_KIND_CPU, strategy), 'C default config')
    call check(len(dao_string(strategy)) > 0, 'C default strategy')
    call check(dao_string(dao_place_kind_name(DAO_PLACE_KIND_SIM)) == 'sim', 'C kind name')
    call check(dao_string(dao_status_string(DAO_ERR_TIMEOUT)) == 'timed out', 'C status string')
    call check(dao_string(dao_version_string()) == DAO_MODULE_VERSION_STRING, 'C version')
    ! NUL-terminated strings; absent optional arguments are NULL.
    st = dao_allocator_create(dao_place_cpu(), 'buddy' // c_null_char, 'chunk_size=2MiB' // &
                              c_null_char, a)
    call check_ok(st, 'C allocator create')
    call check_ok(dao_allocator_alloc(a, 1000_c_size_t, DAO_STREAM_DEFAULT, p), 'C alloc')
    call check_ok(dao_allocator_info(a, place=place), 'C allocator info, place only')
    call check(place == dao_place_cpu(), 'C allocator place')
    call check_status(dao_allocator_destroy(a), DAO_ERR_BUSY, 'C destroy with a live block')
    call check(index(dao_string(dao_last_error()), '1') > 0, 'C busy message says how many')
    call check_ok(dao_allocator_free(a, p), 'C free')
    call check_ok(dao_allocator_destroy(a), 'C destroy')
    st = dao_allocator_create(dao_place_cpu(), 'nonsense' // c_null_char, out=a)
    call check_status(st, DAO_ERR_INVALID_ARGUMENT, 'C unknown strategy')
    call check(index(dao_string(dao_last_error()), 'nonsense') > 0, &
               'C message names the strategy')
  end subroutine c_layer
end program test_places
