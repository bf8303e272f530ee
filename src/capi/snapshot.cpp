// dao_allocator_snapshot, the dao_snapshot readers, and the JSON export.
#include <cstring>
#include <string>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/sized_struct.hpp"
#include "resource/system_resource.hpp"
#include "strategy/strategy.hpp"
#include "util/format.hpp"

using namespace dao::detail;

namespace {

const snapshot_data& checked_snapshot(const dao_snapshot* snapshot, const char* function) {
  return *checked_handle(snapshot, function).impl;
}

const char* pool_name(dao_stat_pool pool) {
  return pool == DAO_STAT_POOL_SMALL ? "small" : pool == DAO_STAT_POOL_LARGE ? "large" : "all";
}

const char* state_name(dao_block_state state) {
  switch (state) {
    case DAO_BLOCK_FREE: return "free";
    case DAO_BLOCK_ALLOCATED: return "allocated";
    case DAO_BLOCK_PENDING_FREE: return "pending_free";
  }
  return "unknown";
}

std::string to_json(const dao_allocator& h, const snapshot_data& snap) {
  std::string out;
  const char* config = h.config.c_str();
  out += strprintf("{\"strategy\":\"%s\",\"place\":\"%s\",\"config\":\"%s\",\"stats\":{",
                   h.impl->name(), place_to_string(h.impl->upstream().place()).c_str(), config);
  static const char* const metrics[DAO_STAT_METRIC_COUNT] = {
      "allocated_bytes",      "allocated_blocks",      "reserved_bytes",
      "reserved_segments",    "active_bytes",          "active_blocks",
      "inactive_split_bytes", "inactive_split_blocks", "requested_bytes"};
  bool first = true;
  for (int m = 0; m < DAO_STAT_METRIC_COUNT; ++m) {
    for (int p = 0; p < DAO_STAT_POOL_COUNT; ++p) {
      dao_stat s{};
      if (!h.impl->stat(m, p, s)) continue;
      out += strprintf(
          "%s\"%s.%s\":{\"current\":%lld,\"peak\":%lld,\"allocated\":%lld,\"freed\":%lld}",
          first ? "" : ",", metrics[m], pool_name(static_cast<dao_stat_pool>(p)),
          static_cast<long long>(s.current), static_cast<long long>(s.peak),
          static_cast<long long>(s.allocated), static_cast<long long>(s.freed));
      first = false;
    }
  }
  out += "},\"segments\":[";
  for (std::size_t i = 0; i < snap.segments.size(); ++i) {
    const auto& seg = snap.segments[i];
    out += strprintf(
        "%s{\"address\":%llu,\"size\":%zu,\"mapped_bytes\":%zu,\"pool\":\"%s\","
        "\"stream\":%llu,\"expandable\":%s,\"blocks\":[",
        i ? "," : "", static_cast<unsigned long long>(seg.info.address), seg.info.size,
        seg.info.mapped_bytes, pool_name(seg.info.pool),
        static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(seg.info.stream)),
        seg.info.expandable ? "true" : "false");
    for (std::size_t j = 0; j < seg.blocks.size(); ++j) {
      const dao_block_info& b = seg.blocks[j];
      out += strprintf("%s{\"address\":%llu,\"size\":%zu,\"requested_size\":%zu,\"state\":\"%s\","
                       "\"stream\":%llu}",
                       j ? "," : "", static_cast<unsigned long long>(b.address), b.size,
                       b.requested_size, state_name(b.state),
                       static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(b.stream)));
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

}  // namespace

extern "C" dao_status dao_allocator_snapshot(dao_allocator* a, dao_snapshot** out) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_snapshot");
    require_non_null(out, "dao_allocator_snapshot", "out");
    auto handle = std::make_unique<dao_snapshot>();
    handle->impl = h.impl->snapshot();
    *out = handle.release();
  });
}

extern "C" dao_status dao_snapshot_segment_count(const dao_snapshot* snapshot, size_t* count) {
  return guarded([&] {
    const snapshot_data& snap = checked_snapshot(snapshot, "dao_snapshot_segment_count");
    require_non_null(count, "dao_snapshot_segment_count", "count");
    *count = snap.segments.size();
  });
}

extern "C" dao_status dao_snapshot_segment(const dao_snapshot* snapshot, size_t index,
                                           dao_segment_info* info) {
  return guarded([&] {
    const snapshot_data& snap = checked_snapshot(snapshot, "dao_snapshot_segment");
    if (index >= snap.segments.size()) {
      throw invalid_argument(
          strprintf("dao_snapshot_segment: index %zu is out of range (%zu segments)", index,
                    snap.segments.size()));
    }
    write_sized(snap.segments[index].info, info, "dao_snapshot_segment", "info");
  });
}

extern "C" dao_status dao_snapshot_block(const dao_snapshot* snapshot, size_t segment, size_t index,
                                         dao_block_info* info) {
  return guarded([&] {
    const snapshot_data& snap = checked_snapshot(snapshot, "dao_snapshot_block");
    if (segment >= snap.segments.size()) {
      throw invalid_argument(
          strprintf("dao_snapshot_block: segment %zu is out of range (%zu segments)", segment,
                    snap.segments.size()));
    }
    const auto& blocks = snap.segments[segment].blocks;
    if (index >= blocks.size()) {
      throw invalid_argument(strprintf("dao_snapshot_block: block %zu is out of range (%zu blocks)",
                                       index, blocks.size()));
    }
    write_sized(blocks[index], info, "dao_snapshot_block", "info");
  });
}

extern "C" dao_status dao_snapshot_destroy(dao_snapshot* snapshot) {
  if (snapshot == nullptr) return DAO_OK;  // like free(NULL)
  return guarded([&] {
    checked_handle(snapshot, "dao_snapshot_destroy");
    snapshot->magic = 0;  // a second destroy of the same memory is refused while it lasts
    delete snapshot;
  });
}

extern "C" dao_status dao_allocator_snapshot_json(dao_allocator* a, char* buffer, size_t capacity,
                                                  size_t* length) {
  return guarded([&] {
    dao_allocator& h = checked_handle(a, "dao_allocator_snapshot_json");
    require_non_null(length, "dao_allocator_snapshot_json", "length");
    if (buffer == nullptr && capacity > 0) {
      throw invalid_argument("dao_allocator_snapshot_json: buffer is NULL but capacity is not 0");
    }
    std::unique_ptr<snapshot_data> snap = h.impl->snapshot();
    std::string json = to_json(h, *snap);
    if (capacity > 0) {
      std::size_t n = json.size() < capacity - 1 ? json.size() : capacity - 1;
      std::memcpy(buffer, json.data(), n);
      buffer[n] = '\0';
    }
    *length = json.size();
  });
}
