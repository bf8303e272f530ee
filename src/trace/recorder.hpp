// The memory-history recorder (issue 18, docs/recording.md): what the
// layers above call to record allocator events. The hot path is
// record(): one relaxed load of a global flag when off (active()), and
// when on a time stamp, a slot claimed in a fixed ring and 64 bytes written;
// a full ring drops the record and counts it, never blocks. A writer
// thread merges the threads' rings in stamp order, encodes the records
// (docs/trace-format.md: binary frames, or JSON Lines) and writes whole
// frames or lines every `flush_ms`.
//
// This layer sits above core and below resource: it knows nothing of
// places' resources or strategies; they describe themselves in plain
// values (allocator_info) when first seen.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/hot_path.hpp"

namespace dao::detail::trace {

enum class kind : std::uint8_t {
  skip = 0,  // a claimed slot whose operation failed: the writer skips it
  alloc,
  free,
  use,
  map,
  unmap,
  oom,
  trim,
  mark,
};

// The global flag: true while a recording runs. Read with a relaxed load
// on every allocator call; a stale true costs a record in a ring nobody
// drains yet, a stale false a record not taken (at start and stop only).
extern std::atomic<bool> g_active;
inline bool active() noexcept { return g_active.load(std::memory_order_relaxed); }

// What the writer prints for an allocator the first time it is seen.
struct allocator_info {
  std::string place;  // "sim:0"
  std::string strategy;
  std::string config;
  std::uint64_t capacity = 0;
};

// The id of the allocator whose slot this is, in the current recording
// (0 when none runs). `slot` holds (session << 32 | id); the first call of a
// recording calls `describe` (once) and registers the allocator.
template <class Describe>
std::uint32_t allocator_id(std::atomic<std::uint64_t>& slot, Describe&& describe);

// Low-level: the session number of the running recording, and the
// registration of an allocator in it (returns its id).
extern std::atomic<std::uint32_t> g_session;
inline std::uint32_t session() noexcept {
  return active() ? g_session.load(std::memory_order_acquire) : 0;
}
// Registers under a lock that also re-reads `slot`, so that two threads
// seeing a new allocator at once get one id.
std::uint32_t register_allocator(std::atomic<std::uint64_t>& slot, std::uint32_t session,
                                 const allocator_info& info);

template <class Describe>
std::uint32_t allocator_id(std::atomic<std::uint64_t>& slot, Describe&& describe) {
  const std::uint64_t v = slot.load(std::memory_order_acquire);
  const std::uint32_t now = session();
  if (now == 0) return 0;
  if (static_cast<std::uint32_t>(v >> 32) == now) return static_cast<std::uint32_t>(v);
  return register_allocator(slot, now, describe());
}

// One event. `stream_id` 0 is the NULL stream; `stream_handle` is written
// in the stream's declaration (informational).
struct event {
  kind what = kind::skip;
  std::uint32_t allocator = 0;
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t req = 0;  // alloc: bytes asked; oom: bytes free on the place
  std::uint64_t stream_id = 0;
  const void* stream_handle = nullptr;
  const char* place = nullptr;  // the stream's place, for its declaration
};

// A slot claimed (and stamped) in the ring: fill it with commit() (or it is
// skipped when destroyed uncommitted). Claim before an operation whose
// effect another thread could see first (a free: the block may be handed
// out again at once), so that the file order is the order of the effects.
class pending {
 public:
  pending() noexcept = default;
  pending(void* cell, std::uint64_t position) noexcept : cell_(cell), position_(position) {}
  pending(pending&& o) noexcept : cell_(o.cell_), position_(o.position_) { o.cell_ = nullptr; }
  pending& operator=(pending&&) = delete;
  ~pending() { cancel(); }
  inline void commit(const event& e) noexcept;
  inline void cancel() noexcept;

 private:
  void* cell_ = nullptr;
  std::uint64_t position_ = 0;  // the cell's ring position + 1
};

// Claims a slot (empty pending when the ring is full: counted as lost).
inline pending claim() noexcept;

// claim() + commit(): the whole record at once.
inline void record(const event& e) noexcept;

// An out-of-memory event with its message (copied to a bounded side table;
// when full, the message is dropped, the record kept).
void record_oom(std::uint32_t allocator, std::uint64_t size, std::uint64_t stream_id,
                std::uint64_t free_bytes, const char* message) noexcept;

// The size of the block this thread's last allocation handed out: the
// busiest strategies store it as they return (one store, no branch), so
// that a recorded allocation needs no lookup of its size; 0 when the
// strategy does not say (the recorder asks usable_size() then).
inline thread_local std::size_t t_block_size __attribute__((tls_model("initial-exec"))) = 0;

// The allocator on whose behalf this thread is working (set by the
// strategy layer around a traced call), so that the system resource's
// map/unmap records name it.
class current_allocator {
 public:
  explicit current_allocator(std::uint32_t id) noexcept : outer_(current_) { current_ = id; }
  ~current_allocator() { current_ = outer_; }
  current_allocator(const current_allocator&) = delete;
  current_allocator& operator=(const current_allocator&) = delete;
  static std::uint32_t get() noexcept { return current_; }

 private:
  std::uint32_t outer_;
  static inline thread_local std::uint32_t current_ __attribute__((tls_model("initial-exec"))) = 0;
};

// --- the API behind include/dao/trace.h (throw error subclasses) ---
void start(const char* path, const char* options);
void stop();
void mark(const char* text);
struct status_values {
  bool active = false;
  std::uint64_t records = 0;  // records written to the file
  std::uint64_t lost = 0;     // records dropped (ring full)
  std::uint64_t pending = 0;  // records in the ring, not yet written
  std::uint64_t bytes = 0;    // bytes written to the file
  std::string path;
};
status_values status();
// Writes what the ring holds to the file now (whole lines), without
// stopping.
void flush();

// --- the hot path, inline ---

inline void fill(void* cell_memory, const event& e) noexcept {
  cell& c = *static_cast<cell*>(cell_memory);
  c.what = static_cast<std::uint8_t>(e.what);
  c.ptr = e.ptr;
  c.size = e.size;
  c.req = e.req;
  c.extra = reinterpret_cast<std::uintptr_t>(e.stream_handle);
  c.allocator = e.allocator;
  c.stream = static_cast<std::uint32_t>(e.stream_id);
  c.stack = 0;
  if (__builtin_expect(g_stacks.load(std::memory_order_relaxed), 0) &&
      (e.what == kind::alloc || e.what == kind::free))
    c.stack = stack_id_now();
}

inline void pending::commit(const event& e) noexcept {
  if (cell_ == nullptr) return;
  fill(cell_, e);
  static_cast<cell*>(cell_)->seq.store(position_, std::memory_order_release);
  cell_ = nullptr;
}

inline void pending::cancel() noexcept {
  if (cell_ == nullptr) return;
  cell& c = *static_cast<cell*>(cell_);
  c.what = static_cast<std::uint8_t>(kind::skip);
  c.seq.store(position_, std::memory_order_release);
  cell_ = nullptr;
}

inline pending claim() noexcept {
  std::uint64_t position = 0;
  cell* c = claim_cell(position);
  return pending(c, position);
}

inline void record(const event& e) noexcept {
  std::uint64_t position = 0;
  cell* c = claim_cell(position);
  if (c == nullptr) return;
  fill(c, e);
  c->seq.store(position, std::memory_order_release);
}

}  // namespace dao::detail::trace
