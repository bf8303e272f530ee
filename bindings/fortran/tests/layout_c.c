/* The C side of test_layout.f90: sizes and field offsets of the public
 * structs, and the values of the public constants, as the C compiler sees
 * them in the headers. */
#include <stddef.h>

/* dao_comm_transport is behind DAO_EXPERIMENTAL; dao_c.f90 binds it too. */
#define DAO_EXPERIMENTAL
#include <dao.h>

/* Size (field 0) or offset of field 1, 2, ... (declaration order) of struct
 * number `type` (the order of test_layout.f90); (size_t)-1 past the end. */
#define FIELDS_(T, ...) \
  { sizeof(T), __VA_ARGS__, (size_t)-1 }
size_t daot_layout(int type, int field);
size_t daot_layout(int type, int field) {
  static const size_t table[][24] = {
      FIELDS_(dao_place, offsetof(dao_place, kind), offsetof(dao_place, device)),
      FIELDS_(dao_allocator_stats, offsetof(dao_allocator_stats, struct_size),
              offsetof(dao_allocator_stats, allocated_bytes),
              offsetof(dao_allocator_stats, peak_allocated_bytes),
              offsetof(dao_allocator_stats, requested_bytes),
              offsetof(dao_allocator_stats, reserved_bytes),
              offsetof(dao_allocator_stats, peak_reserved_bytes),
              offsetof(dao_allocator_stats, live_blocks),
              offsetof(dao_allocator_stats, alloc_count),
              offsetof(dao_allocator_stats, free_count),
              offsetof(dao_allocator_stats, failed_alloc_count),
              offsetof(dao_allocator_stats, system_alloc_count),
              offsetof(dao_allocator_stats, system_free_count),
              offsetof(dao_allocator_stats, largest_free_block),
              offsetof(dao_allocator_stats, alloc_retry_count)),
      FIELDS_(dao_stat, offsetof(dao_stat, current), offsetof(dao_stat, peak),
              offsetof(dao_stat, allocated), offsetof(dao_stat, freed)),
      FIELDS_(dao_segment_info, offsetof(dao_segment_info, struct_size),
              offsetof(dao_segment_info, address), offsetof(dao_segment_info, size),
              offsetof(dao_segment_info, mapped_bytes), offsetof(dao_segment_info, pool),
              offsetof(dao_segment_info, stream), offsetof(dao_segment_info, expandable),
              offsetof(dao_segment_info, block_count)),
      FIELDS_(dao_block_info, offsetof(dao_block_info, struct_size),
              offsetof(dao_block_info, address), offsetof(dao_block_info, size),
              offsetof(dao_block_info, requested_size), offsetof(dao_block_info, state),
              offsetof(dao_block_info, stream)),
      FIELDS_(dao_recycle_stats, offsetof(dao_recycle_stats, struct_size),
              offsetof(dao_recycle_stats, created), offsetof(dao_recycle_stats, free),
              offsetof(dao_recycle_stats, queued), offsetof(dao_recycle_stats, held),
              offsetof(dao_recycle_stats, peak_free), offsetof(dao_recycle_stats, peak_queued),
              offsetof(dao_recycle_stats, peak_held), offsetof(dao_recycle_stats, acquired),
              offsetof(dao_recycle_stats, submitted), offsetof(dao_recycle_stats, taken),
              offsetof(dao_recycle_stats, acquire_waits), offsetof(dao_recycle_stats, take_waits),
              offsetof(dao_recycle_stats, acquire_wait_ns),
              offsetof(dao_recycle_stats, take_wait_ns), offsetof(dao_recycle_stats, timeouts)),
      FIELDS_(dao_tensor_access_info, offsetof(dao_tensor_access_info, struct_size),
              offsetof(dao_tensor_access_info, tensor), offsetof(dao_tensor_access_info, bytes),
              offsetof(dao_tensor_access_info, now), offsetof(dao_tensor_access_info, last_use),
              offsetof(dao_tensor_access_info, next_use),
              offsetof(dao_tensor_access_info, queued_uses),
              offsetof(dao_tensor_access_info, dirty)),
      FIELDS_(dao_tiered_stats, offsetof(dao_tiered_stats, struct_size),
              offsetof(dao_tiered_stats, kernels_submitted),
              offsetof(dao_tiered_stats, kernels_run),
              offsetof(dao_tiered_stats, evictions), offsetof(dao_tiered_stats, bytes_evicted),
              offsetof(dao_tiered_stats, fetches), offsetof(dao_tiered_stats, bytes_fetched),
              offsetof(dao_tiered_stats, prefetches),
              offsetof(dao_tiered_stats, prefetches_in_time), offsetof(dao_tiered_stats, stall_ns),
              offsetof(dao_tiered_stats, device_bytes),
              offsetof(dao_tiered_stats, peak_device_bytes),
              offsetof(dao_tiered_stats, host_bytes),
              offsetof(dao_tiered_stats, peak_host_bytes),
              offsetof(dao_tiered_stats, tensors_live),
              offsetof(dao_tiered_stats, device_range_bytes),
              offsetof(dao_tiered_stats, trims), offsetof(dao_tiered_stats, idle_trims)),
      FIELDS_(dao_whole_desc, offsetof(dao_whole_desc, struct_size),
              offsetof(dao_whole_desc, type), offsetof(dao_whole_desc, location),
              offsetof(dao_whole_desc, total_size), offsetof(dao_whole_desc, entry_size)),
      FIELDS_(dao_whole_range, offsetof(dao_whole_range, struct_size),
              offsetof(dao_whole_range, rank), offsetof(dao_whole_range, first_entry),
              offsetof(dao_whole_range, entry_count), offsetof(dao_whole_range, byte_offset),
              offsetof(dao_whole_range, byte_size)),
      FIELDS_(dao_whole_info, offsetof(dao_whole_info, struct_size),
              offsetof(dao_whole_info, type), offsetof(dao_whole_info, location),
              offsetof(dao_whole_info, total_size), offsetof(dao_whole_info, entry_size),
              offsetof(dao_whole_info, entry_count), offsetof(dao_whole_info, rank),
              offsetof(dao_whole_info, size), offsetof(dao_whole_info, place)),
      FIELDS_(dao_comm_info, offsetof(dao_comm_info, struct_size),
              offsetof(dao_comm_info, rank), offsetof(dao_comm_info, size),
              offsetof(dao_comm_info, place), offsetof(dao_comm_info, transport),
              offsetof(dao_comm_info, shares_address_space),
              offsetof(dao_comm_info, shares_host_memory)),
      FIELDS_(dao_comm_transport, offsetof(dao_comm_transport, struct_size),
              offsetof(dao_comm_transport, self), offsetof(dao_comm_transport, rank),
              offsetof(dao_comm_transport, size), offsetof(dao_comm_transport, name),
              offsetof(dao_comm_transport, shares_host_memory),
              offsetof(dao_comm_transport, last_error), offsetof(dao_comm_transport, barrier),
              offsetof(dao_comm_transport, allgather),
              offsetof(dao_comm_transport, window_create),
              offsetof(dao_comm_transport, window_allocate),
              offsetof(dao_comm_transport, window_get), offsetof(dao_comm_transport, window_put),
              offsetof(dao_comm_transport, window_complete),
              offsetof(dao_comm_transport, window_free),
              offsetof(dao_comm_transport, shared_allocate),
              offsetof(dao_comm_transport, shared_query),
              offsetof(dao_comm_transport, shared_free), offsetof(dao_comm_transport, destroy),
              offsetof(dao_comm_transport, window_get_many),
              offsetof(dao_comm_transport, window_put_many)),
      FIELDS_(dao_tiered_link_stats, offsetof(dao_tiered_link_stats, struct_size), offsetof(dao_tiered_link_stats, bytes_to_device), offsetof(dao_tiered_link_stats, bytes_to_host), offsetof(dao_tiered_link_stats, copies_to_device), offsetof(dao_tiered_link_stats, copies_to_host), offsetof(dao_tiered_link_stats, copy_ns_to_device), offsetof(dao_tiered_link_stats, copy_ns_to_host), offsetof(dao_tiered_link_stats, copy_ns), offsetof(dao_tiered_link_stats, stall_ns), offsetof(dao_tiered_link_stats, kernel_ns), offsetof(dao_tiered_link_stats, hidden_ns), offsetof(dao_tiered_link_stats, to_device_bytes_per_s), offsetof(dao_tiered_link_stats, to_host_bytes_per_s), offsetof(dao_tiered_link_stats, staged_bytes), offsetof(dao_tiered_link_stats, staging_bytes), offsetof(dao_tiered_link_stats, host_pageable), offsetof(dao_tiered_link_stats, staged)),
  };
  if (type < 0 || type >= (int)(sizeof table / sizeof table[0]) || field < 0 || field >= 24) {
    return (size_t)-1;
  }
  return table[type][field];
}

/* The public constants: every status of DAO_STATUS_LIST (so a status added
 * to the C list fails the test until the Fortran module has it), and the
 * other enums and macros. */
typedef struct daot_constant {
  const char *name;
  long long value;
} daot_constant;

#define DAOT_STATUS_(name, value, text) {#name, value},
#define DAOT_C_(name) {#name, (long long)(name)},
static const daot_constant daot_constants[] = {
    DAO_STATUS_LIST(DAOT_STATUS_)
    DAOT_C_(DAO_STATUS_END_)
    DAOT_C_(DAO_PLACE_CPU) DAOT_C_(DAO_PLACE_CUDA) DAOT_C_(DAO_PLACE_CUDA_PINNED)
    DAOT_C_(DAO_PLACE_CUDA_MANAGED) DAOT_C_(DAO_PLACE_SIM) DAOT_C_(DAO_PLACE_KIND_COUNT)
    DAOT_C_(DAO_SIM_MAX_DEVICES)
    DAOT_C_(DAO_STAT_ALLOCATED_BYTES) DAOT_C_(DAO_STAT_ALLOCATED_BLOCKS)
    DAOT_C_(DAO_STAT_RESERVED_BYTES) DAOT_C_(DAO_STAT_RESERVED_SEGMENTS)
    DAOT_C_(DAO_STAT_ACTIVE_BYTES) DAOT_C_(DAO_STAT_ACTIVE_BLOCKS)
    DAOT_C_(DAO_STAT_INACTIVE_SPLIT_BYTES) DAOT_C_(DAO_STAT_INACTIVE_SPLIT_BLOCKS)
    DAOT_C_(DAO_STAT_REQUESTED_BYTES) DAOT_C_(DAO_STAT_METRIC_COUNT)
    DAOT_C_(DAO_STAT_POOL_ALL) DAOT_C_(DAO_STAT_POOL_SMALL) DAOT_C_(DAO_STAT_POOL_LARGE)
    DAOT_C_(DAO_STAT_POOL_COUNT)
    DAOT_C_(DAO_BLOCK_FREE) DAOT_C_(DAO_BLOCK_ALLOCATED) DAOT_C_(DAO_BLOCK_PENDING_FREE)
    DAOT_C_(DAO_RECYCLE_MAX_DIMS)
    DAOT_C_(DAO_TENSOR_UNINITIALIZED) DAOT_C_(DAO_TENSOR_ON_DEVICE) DAOT_C_(DAO_TENSOR_ON_HOST)
    DAOT_C_(DAO_TENSOR_IN_TRANSIT)
    DAOT_C_(DAO_COMM_LOCAL_MAX_RANKS)
    DAOT_C_(DAO_WHOLE_CONTINUOUS) DAOT_C_(DAO_WHOLE_CHUNKED) DAOT_C_(DAO_WHOLE_DISTRIBUTED)
    DAOT_C_(DAO_WHOLE_DEVICE) DAOT_C_(DAO_WHOLE_HOST)
    DAOT_C_(DAO_VERSION_MAJOR) DAOT_C_(DAO_VERSION_MINOR) DAOT_C_(DAO_VERSION_PATCH)
    DAOT_C_(DAO_VERSION_NUMBER)
};

int daot_constant_count(void);
int daot_constant_count(void) { return (int)(sizeof daot_constants / sizeof daot_constants[0]); }

const char *daot_constant_name(int i);
const char *daot_constant_name(int i) { return daot_constants[i].name; }

long long daot_constant_value(int i);
long long daot_constant_value(int i) { return daot_constants[i].value; }

/* The version string the headers give (DAO_VERSION_STRING). */
const char *daot_version_string(void);
const char *daot_version_string(void) { return DAO_VERSION_STRING; }
