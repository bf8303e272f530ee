// The interop entry points' streams (include/dao/interop.h): each native
// stream handle a framework passes is wrapped once into a stream_object and
// cached, and each block allocated on a wrapper is counted on it, so that a
// wrapper is dropped only when no block of it is live (a later free must stay
// ordered after its stream's work) and its stream has run its queued work.
//
// Bounded: at most DAO_INTEROP_STREAM_CACHE wrappers without live blocks are
// kept; past that, the one used least recently goes. A wrapper with live
// blocks stays until they are freed. Keyed by (place, handle) and checked by
// the stream's identity (system_resource::native_stream_identity, or a SIM
// handle's serial number): a handle whose stream was destroyed and whose
// value a new stream took gets a new wrapper, and the old one is retired;
// so is every wrapper whose stream the driver no longer knows, checked
// whenever a new wrapper is made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "dao/interop.h"
#include "resource/stream.hpp"

namespace dao::detail {

class system_resource;

// One native stream of one place, as the strategy layer sees it.
struct interop_stream {
  dao_place place{};
  void* native = nullptr;
  std::uint64_t identity = 0;          // 0: cannot tell (old CUDA driver)
  bool sim = false;                    // a SIM dao_stream handle, not a native one
  std::unique_ptr<stream_object> obj;  // given to the strategy
  // Under the cache's mutex: blocks allocated on it and not yet freed, plus
  // pins of calls using it now; the cache's clock at the last use; whether
  // it is no longer found by its key.
  std::uint64_t live = 0;
  std::uint64_t last_use = 0;
  bool retired = false;
};

// What a block allocated through the entry points remembers.
struct interop_block {
  int device = 0;
  interop_stream* stream = nullptr;  // nullptr: the legacy default stream
};

class interop_streams {
 public:
  static interop_streams& get();

  // The wrapper of `native` (not NULL) on `place`, made on first use, with a
  // pin (live + 1) that the caller gives back with unpin() or hands to a
  // block with add_block(). Throws invalid_argument for a handle that is not
  // a live stream of the place, naming `function`.
  interop_stream& acquire(dao_place place, void* native, const char* function);
  void unpin(interop_stream& s) noexcept;

  // The blocks allocated through the entry points (on any stream).
  // add_block() may throw out_of_memory (then the caller frees the block).
  void add_block(void* p, const interop_block& b);
  // Takes the record of `p` out; false when there is none.
  bool take_block(void* p, interop_block& out) noexcept;
  bool find_block(const void* p, interop_block& out) const noexcept;
  // After the free of a block taken out: its stream loses its count.
  void block_freed(const interop_block& b) noexcept {
    if (b.stream != nullptr) unpin(*b.stream);
  }

  struct counts {
    std::uint64_t cached = 0, idle = 0, wrapped = 0, evicted = 0, retired = 0;
  };
  counts read() const;

 private:
  interop_streams() = default;
  // Waits for the stream's work and drops the wrapper (never under mutex_).
  static void drop(std::unique_ptr<interop_stream> s) noexcept;
  // Moves what must be dropped out of the cache (under mutex_).
  void collect_idle(std::vector<std::unique_ptr<interop_stream>>& out) noexcept;
  void retire(std::unique_ptr<interop_stream> s, std::vector<std::unique_ptr<interop_stream>>& out);
  void retire_dead(system_resource& resource, std::vector<std::unique_ptr<interop_stream>>& out);

  struct key {
    int kind, device;
    std::uintptr_t native;
    bool operator==(const key& o) const noexcept {
      return kind == o.kind && device == o.device && native == o.native;
    }
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept {
      return std::hash<std::uintptr_t>()(k.native) ^
             (static_cast<std::size_t>(k.kind) << 8 ^ static_cast<std::size_t>(k.device)) *
                 0x9E3779B97F4A7C15ull;
    }
  };

  mutable std::mutex mutex_;
  std::unordered_map<key, std::unique_ptr<interop_stream>, key_hash> cache_;
  std::vector<std::unique_ptr<interop_stream>> retired_;  // live blocks, no key
  std::uint64_t clock_ = 0, wrapped_ = 0, evicted_ = 0, retired_count_ = 0;

  // The blocks, in shards by address so that threads rarely share a lock.
  static constexpr std::size_t kShards = 16;
  struct shard {
    mutable std::mutex mutex;
    std::unordered_map<const void*, interop_block> blocks;
  };
  shard& shard_of(const void* p) const noexcept {
    return shards_[(reinterpret_cast<std::uintptr_t>(p) >> 8) % kShards];
  }
  mutable shard shards_[kShards];
};

}  // namespace dao::detail
