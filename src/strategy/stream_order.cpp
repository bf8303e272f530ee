// The caching strategy's stream ordering: pools per stream, settling, and
// deferred frees (see stream_order.hpp).
#include "strategy/stream_order.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

std::uintptr_t key_of(stream_handle stream, bool small) noexcept {
  return reinterpret_cast<std::uintptr_t>(stream) | (small ? 1u : 0u);
}

}  // namespace

bool stream_order::switch_to(stream_handle stream) noexcept {
  const std::uint64_t id = stream != nullptr ? stream->id : 0;
  if (stream == last_stream_ && id == last_stream_id_) return false;
  last_stream_ = stream;
  last_stream_id_ = id;
  last_pools_[0] = last_pools_[1] = kNone;
  const std::uint64_t destroyed = destroyed_stream_count().load(std::memory_order_acquire);
  if (destroyed == destroyed_seen_) return false;
  destroyed_seen_ = destroyed;
  return true;
}

std::uint32_t stream_order::lookup(stream_handle stream, bool small) const {
  if (last_pools_[small ? 1 : 0] != kNone) return last_pools_[small ? 1 : 0];
  auto it = pool_index_.find(key_of(stream, small));
  return it == pool_index_.end() ? kNone : it->second;
}

void stream_order::add(stream_handle stream, bool small, std::uint32_t pool_index) {
  if (pools_.size() <= pool_index) pools_.resize(pool_index + 1);  // capacity reserved
  pools_[pool_index].stream = stream;
  pool_index_.emplace(key_of(stream, small), pool_index);
}

void stream_order::bind(std::uint32_t pool_index, stream_handle stream, bool small) noexcept {
  pool_stream& p = pools_[pool_index];
  const std::uint64_t id = stream != nullptr ? stream->id : 0;
  if (p.stream_id != id) {
    if (stream != nullptr) p.stream_ref = stream->impl;
    p.stream_id = id;
    p.handle = handle_of(stream);  // live now: read it while it is
  }
  last_pools_[small ? 1 : 0] = pool_index;
}

void stream_order::grow() {
  if (pools_.capacity() < pools_.size() + 2)
    pools_.reserve(std::max<std::size_t>(4, pools_.capacity() * 2));
}

bool stream_order::settled(std::uint32_t pool_index) noexcept {
  const pool_stream& p = pools_[pool_index];
  if (p.stream == nullptr) return true;  // the default stream runs work at once
  std::shared_ptr<stream_impl> impl = p.stream_ref.lock();
  if (impl == nullptr) return true;  // destroyed: its work ran first
  try {
    return impl->query();
  } catch (...) {
    return false;  // the stream failed: keep its memory rather than guess
  }
}

void stream_order::settle_all() noexcept { waits().wait(); }

// Out of host memory, the lists hold what fit: the caller then waits for
// less, and gives back only what has settled (a trim must not fail for lack
// of memory, nor wait under its lock).
stream_order::wait_list stream_order::waits() const noexcept {
  wait_list w;
  try {
    w.streams.reserve(pools_.size() + pending_.size());
    w.events.reserve(pending_.size());
    auto add_stream = [&](std::shared_ptr<stream_impl> impl) {
      if (impl != nullptr && std::find(w.streams.begin(), w.streams.end(), impl) == w.streams.end())
        w.streams.push_back(std::move(impl));
    };
    for (const pool_stream& p : pools_) add_stream(p.stream_ref.lock());
    for (const pending_free& f : pending_) {
      if (f.by_stream) add_stream(f.stream);  // its event was never recorded
      else w.events.push_back(f.event);
    }
  } catch (...) {
  }
  return w;
}

stream_order::wait_list stream_order::waits_of(std::uint32_t pool_index) const noexcept {
  wait_list w;
  try {
    if (std::shared_ptr<stream_impl> impl = pools_[pool_index].stream_ref.lock())
      w.streams.push_back(std::move(impl));
  } catch (...) {
  }
  return w;
}

bool stream_order::waits_for(const void* stream) const noexcept {
  for (const pool_stream& p : pools_) {
    if (p.stream == nullptr) continue;
    const std::shared_ptr<stream_impl> impl = p.stream_ref.lock();
    if (impl != nullptr && impl.get() == stream) return true;
  }
  for (const pending_free& f : pending_)
    if (f.recorded_on == stream) return true;
  return false;
}

void stream_order::wait_list::wait() const noexcept {
  for (const std::shared_ptr<stream_impl>& s : streams) {
    try {
      s->synchronize();
    } catch (...) {
    }
  }
  for (const std::shared_ptr<event_impl>& e : events) {
    try {
      e->synchronize();
    } catch (...) {
    }
  }
}

void stream_order::check_place(stream_handle stream, const dao_place& mine, const char* function) {
  if (raw_kind(stream->place.kind) != raw_kind(mine.kind) || stream->place.device != mine.device) {
    throw invalid_argument(strprintf(
        "%s: the stream is on %s but the allocator is on %s; only streams of the allocator's "
        "place can use its memory in order",
        function, place_to_string(stream->place).c_str(), place_to_string(mine).c_str()));
  }
}

void stream_order::add_use(std::uint32_t index, stream_handle stream,
                           const std::function<std::unique_ptr<event_impl>()>& new_event) {
  auto found = uses_.find(index);
  if (found != uses_.end()) {
    for (const pending_free& u : found->second)
      if (u.stream == stream->impl) return;
  }
  // The node first, with its event, then the map's entry: a throw of either
  // leaves nothing behind.
  std::list<pending_free> node;
  if (!spare_.empty()) {
    node.splice(node.end(), spare_, spare_.begin());
  } else {
    node.emplace_back();
    node.back().event = new_event();
  }
  node.back().block = index;
  node.back().stream = stream->impl;
  try {
    if (found == uses_.end()) found = uses_.try_emplace(index).first;
  } catch (...) {
    node.back().stream.reset();
    spare_.splice(spare_.end(), node);
    throw;
  }
  found->second.splice(found->second.end(), node);
}

std::size_t stream_order::defer_free(std::uint32_t index) noexcept {
  auto found = uses_.find(index);
  if (found == uses_.end()) return 0;
  std::list<pending_free>& uses = found->second;
  for (pending_free& u : uses) {
    u.recorded_on = u.stream.get();
    try {
      u.stream->record(*u.event);
      u.by_stream = false;
      u.stream.reset();
    } catch (...) {
      // The stream could not record (no memory for its queue). Waiting for
      // it here would wait under the allocator's lock, and a host function
      // on it may need that lock (issue 20): the free waits instead for the
      // stream to run dry, which orders it as well as the event would have.
      u.by_stream = true;
    }
  }
  const std::size_t queued = uses.size();
  pending_.splice(pending_.end(), uses);
  uses_.erase(found);
  return queued;
}

}  // namespace dao::detail
