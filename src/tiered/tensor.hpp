// A tensor of a tiered pool: its state in the two tiers and its row of the
// access table (each queued or executed access, by logical time), with the
// few questions the executor and the placement ask of that row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dao/tiered.h"
#include "resource/stream.hpp"
#include "tiered/resident_key.hpp"

namespace dao::detail {

class tiered_pool;

// One entry of the access table: every access of one operation.
struct tensor_access {
  std::uint64_t t = 0;
  bool read = false;
  bool write = false;
  bool kernel = false;  // of a kernel (not of a write, read or release)
};

// The C API's tiered_tensor handle is the address of the pool's record
// (src/capi/handles.hpp says why).
struct tiered_tensor {
  static constexpr std::uint64_t kMagic = 0x64616f74656e7372ull;  // "daotensr"
  std::uint64_t magic = kMagic;  // a live record's stamp, checked by the C API
  dao::detail::tiered_pool* pool = nullptr;
  std::size_t bytes = 0;
  std::uint64_t id = 0;

  // Everything below: under the pool's mutex.
  bool released = false;  // the caller dropped the handle
  bool retired = false;   // dao_tensor_retire: no data needed after its queued uses
  bool freed = false;     // its memory is gone (released, no queued use)
  bool written = false;   // a write or a kernel output was submitted
  bool produced = false;  // a write or a kernel output has run: it holds data
  std::vector<dao::detail::tensor_access> accesses;  // the access table row
  std::size_t cursor = 0;  // accesses[cursor] is the next not yet executed
  std::uint64_t last_use = 0;

  // Executor state.
  bool resident = false;
  std::size_t offset = 0;                            // in the device arena, when resident
  void* host = nullptr;                              // host tier buffer (may be stale)
  bool host_valid = false;                           // the host buffer holds the current data
  bool pinned = false;                               // used by the kernel being prepared
  bool prefetched = false;                           // fetched ahead, not yet used
  std::unique_ptr<dao::detail::event_impl> transit;  // after its last copy
  // Staged copies: the lane (link_dir) and job number of its last copy, -1
  // and 0 when it had none (or it was not staged).
  int staged_dir = -1;
  std::uint64_t staged_job = 0;
  // Not staged: whether `transit` was last recorded after a fetch.
  bool transit_to_device = false;

  // The pool's list of free records (tensor_records.hpp), once reclaimed.
  tiered_tensor* next_free = nullptr;

  // Its entry in placement's index of resident tensors (resident_index.hpp),
  // as it was last keyed: valid while `indexed`. `index_entry` is that entry
  // itself, so that removing or re-keying it searches nothing.
  bool indexed = false;
  resident_set::iterator index_entry{};
  double index_score = 0;
  std::size_t index_copy = 0;
  std::size_t index_offset = 0;
};

// The logical time of the next access not yet executed (UINT64_MAX: none).
inline std::uint64_t next_use(const tiered_tensor& t) noexcept {
  return t.cursor < t.accesses.size() ? t.accesses[t.cursor].t : UINT64_MAX;
}

// Whether evicting `t` must copy it to the host: its host copy is stale and
// it is still to be used, or may still be read (held, not retired).
inline bool needs_copy(const tiered_tensor& t) noexcept {
  return !t.host_valid && (t.cursor < t.accesses.size() || !(t.released || t.retired));
}

// Makes room for one more access in `t`'s row (growing it geometrically),
// so that the append_access() of an operation cannot fail. May throw
// std::bad_alloc: nothing changed then but the row's capacity. An operation
// reserves for every tensor it uses before it is published (queued), so that
// it is queued with all its accesses or not at all (issue 20).
inline void reserve_access(tiered_tensor& t) {
  if (t.accesses.size() < t.accesses.capacity()) return;
  t.accesses.reserve(t.accesses.empty() ? 4 : 2 * t.accesses.size());
}

// Adds an access at logical time `time` (merged with the last entry when it
// is of the same operation). Never throws after a reserve_access() for this
// operation: at most one entry is added per operation and tensor.
inline void append_access(tiered_tensor& t, std::uint64_t time, bool read, bool write,
                          bool kernel = false) noexcept {
  if (!t.accesses.empty() && t.accesses.back().t == time) {
    t.accesses.back().read |= read;
    t.accesses.back().write |= write;
    t.accesses.back().kernel |= kernel;
    return;
  }
  t.accesses.push_back(tensor_access{time, read, write, kernel});  // capacity reserved
}

// The first queued access of `t` after logical time `now`, or NULL.
inline const tensor_access* access_after(const tiered_tensor& t, std::uint64_t now) noexcept {
  for (std::size_t i = t.cursor; i < t.accesses.size(); ++i) {
    if (t.accesses[i].t > now) return &t.accesses[i];
  }
  return nullptr;
}

// Marks the accesses up to `now` executed (last_use follows), dropping the
// executed part of the row now and then.
inline void advance(tiered_tensor& t, std::uint64_t now) {
  while (t.cursor < t.accesses.size() && t.accesses[t.cursor].t <= now) {
    t.last_use = t.accesses[t.cursor].t;
    ++t.cursor;
  }
  // Drop the executed part of the table now and then.
  if (t.cursor >= 256 && t.cursor * 2 >= t.accesses.size()) {
    t.accesses.erase(t.accesses.begin(), t.accesses.begin() + static_cast<long>(t.cursor));
    t.cursor = 0;
  }
}

// What a scoring policy sees of `t` at logical time `now`.
inline dao_tensor_access_info access_info(const tiered_tensor& t, std::uint64_t now) noexcept {
  dao_tensor_access_info info{};
  info.struct_size = sizeof info;
  info.tensor = reinterpret_cast<const dao_tensor*>(&t);  // its handle: the record's address
  info.bytes = t.bytes;
  info.now = now;
  info.last_use = t.last_use;
  info.next_use = next_use(t);
  info.queued_uses = t.accesses.size() - t.cursor;
  info.dirty = t.host_valid ? 0 : 1;
  return info;
}

}  // namespace dao::detail
