// The options of a tiered pool: its config string (include/dao/tiered.h,
// docs/tiered.md) parsed and checked into plain values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tiered/policy.hpp"

namespace dao::detail {

// Bounds of the staging options: at most 64 buffers per direction, chunks of
// 64 KiB to 256 MiB, at most 256 MiB of buffers per direction.
inline constexpr std::size_t kMaxStagingBuffers = 64;
inline constexpr std::size_t kMinStagingChunk = std::size_t(64) << 10;
inline constexpr std::size_t kMaxStagingChunk = std::size_t(256) << 20;
inline constexpr std::size_t kMaxStagingBytes = std::size_t(256) << 20;
// Bounds of idle_trim: from a millisecond (shorter would trim between the
// kernels of a program that submits as it goes) to a day.
inline constexpr double kMinIdleTrimSeconds = 1e-3;
inline constexpr double kMaxIdleTrimSeconds = 86400;

struct tiered_options {
  evict_policy policy = evict_policy::belady;
  std::size_t prefetch = 2;     // kernels ahead whose inputs are fetched early
  std::size_t host_budget = 0;  // bytes, 0 = unlimited
  double bandwidth = 0;         // link_bandwidth in bytes per second, 0 = unlimited
  bool bandwidth_given = false;
  // SIM only: copies from or to pageable host memory, bytes per second
  // (0: not modelled), and whether they were given (else: the SIM profile's).
  double pageable_to_device = 0;
  double pageable_to_host = 0;
  bool pageable_to_device_given = false;
  bool pageable_to_host_given = false;
  // SIM only: the host tier stands for pinned memory (a CUDA_PINNED tier).
  bool sim_host_pinned = false;
  // Staging of copies between a pageable host tier and the device: pinned
  // buffers per direction (0: copies go straight from pageable memory) and
  // the bytes of each.
  std::size_t staging_buffers = 4;
  std::size_t staging_chunk = std::size_t(1) << 20;
  // Give the device range back after this long with an empty queue (as
  // dao_tiered_trim() does), in nanoseconds; 0 = never (the default).
  std::uint64_t idle_trim_ns = 0;
  // Staged copies of at most this many bytes are made by the executor
  // itself, at once (0: never), at most kMaxStagingChunk.
  std::size_t inline_copy = std::size_t(64) << 10;

  // Parses `config_text` (NULL: the defaults) for a pool whose device is a
  // SIM device or not (link_bandwidth, pageable_* and sim_host apply to SIM
  // devices only). Throws
  // invalid_argument, with "tiered config: ..." messages, for an unknown
  // key or a bad value.
  static tiered_options parse(const char* config_text, bool sim_device);
};

}  // namespace dao::detail
