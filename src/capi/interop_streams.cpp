// The interop stream cache and block records (see interop_streams.hpp).
#include "capi/interop_streams.hpp"

#include <utility>

#include "capi/handles.hpp"
#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

bool same_place(dao_place a, dao_place b) noexcept {
  return raw_kind(a.kind) == raw_kind(b.kind) && a.device == b.device;
}

// Wrappers to drop once the cache's mutex is released, also when the scope
// is left by an exception.
struct drop_list {
  std::vector<std::unique_ptr<interop_stream>> items;
  void (*drop)(std::unique_ptr<interop_stream>) noexcept;
  ~drop_list() {
    for (auto& s : items) drop(std::move(s));
  }
};

}  // namespace

interop_streams& interop_streams::get() {
  static interop_streams* streams = new interop_streams();  // used until exit
  return *streams;
}

interop_stream& interop_streams::acquire(dao_place place, void* native, const char* function) {
  system_resource& resource = resource_for(place);
  const bool sim = raw_kind(place.kind) == DAO_PLACE_SIM;
  std::uint64_t identity = 0;
  dao_stream_st* handle = nullptr;
  if (sim) {
    // Under DAO_INTEROP_PLACE=sim the "native" handle is a dao_stream of the
    // SIM device; its serial number tells a new stream at a reused address.
    handle = &checked_handle(static_cast<dao_stream>(native), function, "stream");
    if (!same_place(handle->obj.place, resource.place())) {
      throw invalid_argument(strprintf("%s: stream %p is a stream of %s, not of %s", function,
                                       native, place_to_string(handle->obj.place).c_str(),
                                       place_to_string(resource.place()).c_str()));
    }
    identity = handle->obj.id;
  } else {
    try {
      identity = resource.native_stream_identity(native);
    } catch (const invalid_argument& e) {
      throw invalid_argument(strprintf("%s: %s", function, e.what()));
    }
  }

  drop_list dropped{{}, &interop_streams::drop};
  std::lock_guard<std::mutex> lock(mutex_);
  const key k{raw_kind(place.kind), place.device, reinterpret_cast<std::uintptr_t>(native)};
  auto it = cache_.find(k);
  if (it != cache_.end()) {
    interop_stream& s = *it->second;
    if (s.identity == identity) {
      ++s.live;
      s.last_use = ++clock_;
      return s;
    }
    // The handle names another stream now: the one it named was destroyed.
    // Its wrapper stays (unreachable) while blocks of it are live.
    std::unique_ptr<interop_stream> old = std::move(it->second);
    cache_.erase(it);
    retire(std::move(old), dropped.items);
  }
  if (!sim) retire_dead(resource, dropped.items);
  auto s = std::make_unique<interop_stream>();
  s->place = resource.place();
  s->native = native;
  s->identity = identity;
  s->sim = sim;
  s->obj = std::make_unique<stream_object>();
  s->obj->place = resource.place();
  if (sim) {
    s->obj->impl = handle->obj.impl;  // the same queue, under a wrapper of its own
    s->obj->handle = handle;
  } else {
    s->obj->impl = resource.wrap_stream(native);
    s->obj->handle = static_cast<dao_stream>(native);  // what snapshots name
  }
  s->live = 1;
  s->last_use = ++clock_;
  interop_stream& result = *s;
  cache_.emplace(k, std::move(s));
  ++wrapped_;
  collect_idle(dropped.items);
  return result;
}

void interop_streams::unpin(interop_stream& s) noexcept {
  drop_list dropped{{}, &interop_streams::drop};
  std::lock_guard<std::mutex> lock(mutex_);
  s.last_use = ++clock_;  // a free is a use: the stream just became idle
  if (--s.live != 0) return;
  if (s.retired) {
    for (auto& r : retired_) {
      if (r.get() != &s) continue;
      try {
        dropped.items.push_back(std::move(r));  // on a throw, nothing moved
      } catch (...) {
        return;  // out of host memory: it stays retired, idle
      }
      r = std::move(retired_.back());
      retired_.pop_back();
      break;
    }
    return;
  }
  if (cache_.size() > DAO_INTEROP_STREAM_CACHE) collect_idle(dropped.items);
}

// Keeps at most DAO_INTEROP_STREAM_CACHE wrappers without live blocks: the
// least recently used others go. A scan, but only when a wrapper is made or
// becomes idle with the cache over its bound.
// A wrapper whose stream was destroyed: dropped now, or once its last live
// block is freed (the strategy cannot settle its pool meanwhile: the driver
// refuses the handle, so its memory stays cached until then).
void interop_streams::retire(std::unique_ptr<interop_stream> s,
                             std::vector<std::unique_ptr<interop_stream>>& out) {
  s->retired = true;
  ++retired_count_;
  if (s->live == 0) {
    out.push_back(std::move(s));
  } else {
    retired_.push_back(std::move(s));
  }
}

// Before a new native stream gets a wrapper (a stream was made since, maybe
// one destroyed): the other wrappers of the place whose streams are gone
// are retired, so that their cached memory goes back. Driver calls, one per
// wrapper of the place, only when a wrapper is made.
void interop_streams::retire_dead(system_resource& resource,
                                  std::vector<std::unique_ptr<interop_stream>>& out) {
  const dao_place place = resource.place();
  for (auto it = cache_.begin(); it != cache_.end();) {
    interop_stream& s = *it->second;
    bool alive = s.identity == 0 || !same_place(s.place, place);  // 0: cannot tell
    if (!alive) {
      try {
        alive = resource.native_stream_identity(s.native) == s.identity;
      } catch (const error&) {
        alive = false;
      }
    }
    if (alive) {
      ++it;
      continue;
    }
    std::unique_ptr<interop_stream> old = std::move(it->second);
    it = cache_.erase(it);
    retire(std::move(old), out);
  }
}

// Out of host memory, what is left waits for the next call.
void interop_streams::collect_idle(std::vector<std::unique_ptr<interop_stream>>& out) noexcept {
  for (;;) {
    std::size_t idle = 0;
    auto oldest = cache_.end();
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->second->live != 0) continue;
      ++idle;
      if (oldest == cache_.end() || it->second->last_use < oldest->second->last_use) oldest = it;
    }
    if (idle <= DAO_INTEROP_STREAM_CACHE) return;
    try {
      out.push_back(std::move(oldest->second));  // on a throw, nothing moved
    } catch (...) {
      return;
    }
    cache_.erase(oldest);
    ++evicted_;
  }
}

// The strategy treats a pool whose stream object is gone as settled, and
// gives its cached memory back: so the stream must first have run all the
// work queued on it. A native stream destroyed by its owner (its identity
// changed, or the driver refuses it) is waited for through the whole device.
void interop_streams::drop(std::unique_ptr<interop_stream> s) noexcept {
  try {
    bool same = s->sim;
    if (!same) {
      system_resource& resource = resource_for(s->place);
      try {
        same = s->identity != 0 && resource.native_stream_identity(s->native) == s->identity;
      } catch (...) {
        same = false;
      }
      if (!same) resource.synchronize_device();
    }
    if (same) s->obj->impl->synchronize();
  } catch (...) {
    // Waiting failed (the device is broken): drop anyway, as
    // dao_stream_destroy() does; memory of a broken device is moot.
  }
  s.reset();
  destroyed_stream_count().fetch_add(1, std::memory_order_release);
}

void interop_streams::add_block(void* p, const interop_block& b) {
  shard& sh = shard_of(p);
  std::lock_guard<std::mutex> lock(sh.mutex);
  sh.blocks[p] = b;
}

bool interop_streams::take_block(void* p, interop_block& out) noexcept {
  shard& sh = shard_of(p);
  std::lock_guard<std::mutex> lock(sh.mutex);
  auto it = sh.blocks.find(p);
  if (it == sh.blocks.end()) return false;
  out = it->second;
  sh.blocks.erase(it);
  return true;
}

bool interop_streams::find_block(const void* p, interop_block& out) const noexcept {
  const shard& sh = shard_of(p);
  std::lock_guard<std::mutex> lock(sh.mutex);
  auto it = sh.blocks.find(p);
  if (it == sh.blocks.end()) return false;
  out = it->second;
  return true;
}

interop_streams::counts interop_streams::read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  counts c;
  c.cached = cache_.size() + retired_.size();
  for (const auto& e : cache_)
    if (e.second->live == 0) ++c.idle;
  c.wrapped = wrapped_;
  c.evicted = evicted_;
  c.retired = retired_count_;
  return c;
}

}  // namespace dao::detail
