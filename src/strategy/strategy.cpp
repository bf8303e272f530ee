// Defaults of the strategy base class.
#include "strategy/strategy.hpp"

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

bool strategy::stat(int metric, int pool, dao_stat& out) const {
  if (pool != DAO_STAT_POOL_ALL) return false;
  allocator_counters c = counters();
  const stat_value* s = c.find(metric);
  if (s == nullptr) return false;
  out = dao_stat{s->current, s->peak, s->allocated, s->freed};
  return true;
}

void strategy::do_record_stream(void* p, const stream_object*) {
  usable_size(p);  // a bad pointer is reported as such first
  throw unsupported(strprintf(
      "%s allocator on %s is not stream-ordered: it hands memory back at once on free, so "
      "synchronize the other streams before freeing (or use the \"caching\" strategy)",
      name(), place_to_string(upstream().place()).c_str()));
}

std::string strategy::full_config() const {
  std::string text = effective_config();
  if (below_ == nullptr) return text;
  if (!text.empty()) text += ',';
  text += "upstream=";
  text += below_->name();
  const std::string inner = below_->full_config();
  for (std::size_t start = 0; start < inner.size();) {
    std::size_t end = inner.find(',', start);
    if (end == std::string::npos) end = inner.size();
    text += ",upstream.";
    text.append(inner, start, end - start);
    start = end + 1;
  }
  return text;
}

std::unique_ptr<snapshot_data> strategy::snapshot() const {
  throw unsupported(strprintf("%s allocator on %s keeps no segments to snapshot (the \"caching\" "
                              "strategy does)",
                              name(), place_to_string(upstream().place()).c_str()));
}

bool strategy::destroy_waits_for(const void*) const { return false; }

}  // namespace dao::detail
