// The C handles, and the one rule they follow.
//
// DESIGN: the C API layer (src/capi/) is the only code that knows C handles,
// `extern "C"`, magic checks and guarded(). Every handle is a thin struct
// defined here around the owning layer's C++ object: a 64-bit magic value
// first (checked on every call, so that a handle of another type, a pointer
// to something else or the zeroed memory of a destroyed handle is refused
// with DAO_ERR_INVALID_ARGUMENT instead of being used), then the object or
// a pointer to it. The layers below hold C++ objects (a strategy, a stream
// implementation, a pool), never a handle.
//
// One exception: an object that belongs to a pool, one of many (a recycle
// buffer lives in its pool's record array, a tiered tensor in its pool's
// table), is handed out as its own address: dao_buffer and dao_tensor are
// opaque tag types, never defined. Such a record starts with its own magic
// stamp, which the C API checks like the others (has_magic()). A wrapper per
// buffer would cost an allocation and an indirection on the hot path.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/error.hpp"
#include "dao.h"
#include "resource/stream.hpp"
#include "util/format.hpp"

namespace dao::detail {
class strategy;
struct snapshot_data;
class recycle_pool;
class collection;
class tiered_pool;
namespace whole {
class communicator;
class whole_memory;
}  // namespace whole
}  // namespace dao::detail

// The first members of every handle: the magic value that is checked on
// every call (first, where has_magic() reads it), and the words
// checked_handle() names it with in messages.
#define DAO_HANDLE_(magic_value, arg, what)            \
  static constexpr std::uint64_t kMagic = magic_value; \
  static constexpr const char* kArg = arg;             \
  static constexpr const char* kWhat = what;           \
  std::uint64_t magic = kMagic

struct dao_allocator {
  DAO_HANDLE_(0x64616f616c6c6f63ull, "allocator", "a live dao_allocator handle");  // "daoalloc"
  dao::detail::strategy* impl = nullptr;         // what every call uses
  std::unique_ptr<dao::detail::strategy> owned;  // null for a place default
  std::string config;                            // effective, for dao_allocator_info
  bool place_default = false;                    // owned by libdao, never destroyed
};

struct dao_stream_st {
  DAO_HANDLE_(0x64616f7374726d00ull, "stream", "a live dao_stream handle");  // "daostrm"
  dao::detail::stream_object obj;
  // A tiered pool's compute stream, lent to its kernels: the pool destroys it.
  bool owned_by_pool = false;
};

struct dao_event_st {
  DAO_HANDLE_(0x64616f6576656e74ull, "event", "a live dao_event handle");  // "daoevent"
  dao::detail::event_object obj;
};

struct dao_snapshot {
  DAO_HANDLE_(0x64616f736e617000ull, "snapshot", "a live dao_snapshot handle");  // "daosnap"
  std::unique_ptr<dao::detail::snapshot_data> impl;
};

struct dao_recycle_pool {
  DAO_HANDLE_(0x64616f72637963ull, "pool", "a live dao_recycle_pool handle");  // "daorcyc"
  dao::detail::recycle_pool* impl = nullptr;
  std::unique_ptr<dao::detail::recycle_pool> owned;  // null in a collection
  bool in_collection = false;                        // owned by a dao_collection
};

struct dao_collection {
  DAO_HANDLE_(0x64616f636f6c6c6eull, "collection", "a live dao_collection handle");  // "daocolln"
  std::unique_ptr<dao::detail::collection> impl;
  // The handle of each of its pools, so that add and find give the same one.
  std::mutex handles_mutex;
  std::unordered_map<const dao::detail::recycle_pool*, std::unique_ptr<dao_recycle_pool>> handles;
};

struct dao_tiered {
  DAO_HANDLE_(0x64616f7469657264ull, "pool", "a live dao_tiered handle");  // "daotierd"
  // The handle of the stream the pool's kernels run on, given to each
  // kernel. Declared first: destroyed after the pool, whose destructor may
  // still run queued kernels.
  std::unique_ptr<dao_stream_st> compute_stream;
  std::unique_ptr<dao::detail::tiered_pool> impl;
};

struct dao_comm {
  DAO_HANDLE_(0x64616f636f6d6d21ull, "comm", "a live dao_comm handle");  // "daocomm!"
  std::unique_ptr<dao::detail::whole::communicator> impl;
};

struct dao_whole {
  DAO_HANDLE_(0x64616f77686f6c65ull, "whole", "a live dao_whole handle");  // "daowhole"
  std::unique_ptr<dao::detail::whole::whole_memory> impl;
};

namespace dao::detail {

// Whether `p` may be a live handle whose type has magic `magic` and
// alignment `align`. The magic is read as bytes, so a misaligned pointer or
// one to another type is refused without undefined behaviour.
inline bool has_magic(const void* p, std::uint64_t magic, std::size_t align) noexcept {
  if (reinterpret_cast<std::uintptr_t>(p) % align != 0) return false;
  std::uint64_t found = 0;
  std::memcpy(&found, p, sizeof found);
  return found == magic;
}

template <class T>
bool has_magic(const void* p) noexcept {
  return has_magic(p, T::kMagic, alignof(T));
}

// The object behind a handle a caller passed in. Throws invalid_argument
// naming `function`: "<arg> must not be NULL" or "<p> is not <kWhat>".
// With `name`, the argument is named in both messages (lists of handles).
template <class T>
T& checked_handle(const T* h, const char* function) {
  require_non_null(h, function, T::kArg);
  if (!has_magic<T>(h)) {
    throw invalid_argument(
        strprintf("%s: %p is not %s", function, static_cast<const void*>(h), T::kWhat));
  }
  return const_cast<T&>(*h);
}

template <class T>
T& checked_handle(const T* h, const char* function, const char* name) {
  require_non_null(h, function, name);
  if (!has_magic<T>(h)) {
    throw invalid_argument(
        strprintf("%s: %s (%p) is not %s", function, name, static_cast<const void*>(h), T::kWhat));
  }
  return const_cast<T&>(*h);
}

// The stream behind a stream handle, or nullptr for the default stream
// (NULL). Throws as checked_handle() for anything else.
inline const stream_object* stream_of(dao_stream s, const char* function) {
  return s != nullptr ? &checked_handle(s, function).obj : nullptr;
}

}  // namespace dao::detail
