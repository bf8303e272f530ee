// The caching strategy's settings: parsing, checking and printing its config
// keys (see caching_options.hpp).
#include "strategy/caching_options.hpp"

#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

bool is_power_of_two(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

// "none" (-1) or a fraction from 0 to 1000.
double parse_fraction_or_none(const std::string& text, const char* key, const char* ctx) {
  if (text == "none") return -1;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(x >= 0 && x <= 1000))
    throw invalid_argument(
        strprintf("%s: %s='%s' must be 'none' or a fraction >= 0", ctx, key, text.c_str()));
  return x;
}

}  // namespace

caching_options caching_options::from_config(config& cfg, const memory_source& upstream) {
  caching_options o;
  const char* ctx = cfg.context().c_str();
  if (auto v = cfg.take_size("max_split_size")) o.max_split_size = *v == 0 ? SIZE_MAX : *v;
  if (auto v = cfg.take_double("max_split_size_mb")) {
    // Range first: converting a double beyond size_t is undefined, and the
    // MiB must still fit in bytes.
    constexpr double kMaxMib = static_cast<double>(SIZE_MAX >> 20);
    if (!(*v >= 0 && *v <= kMaxMib) || *v != static_cast<double>(static_cast<std::size_t>(*v)))
      throw invalid_argument(
          strprintf("%s: max_split_size_mb must be a whole number of MiB from 0 to %zu", ctx,
                    static_cast<std::size_t>(SIZE_MAX >> 20)));
    o.max_split_size = *v == 0 ? SIZE_MAX : static_cast<std::size_t>(*v) << 20;
    // Checked here too, so that the message names the key the user wrote
    // (issue 20: max_split_size_mb=1 was refused as "max_split_size").
    if (o.max_split_size != SIZE_MAX && o.max_split_size <= kLargeBuffer)
      throw invalid_argument(
          strprintf("%s: max_split_size_mb must be larger than 20, or 0 for no limit", ctx));
  }
  if (o.max_split_size != SIZE_MAX && o.max_split_size <= kLargeBuffer) {
    throw invalid_argument(strprintf(
        "%s: max_split_size must be larger than 20 MiB (blocks that large are never split), "
        "or 0 for no limit",
        ctx));
  }
  if (auto v = cfg.take_double("roundup_power2_divisions")) {
    if (*v < 0 || *v > 64 || (*v != 0 && !is_power_of_two(static_cast<std::size_t>(*v))) ||
        *v != static_cast<double>(static_cast<unsigned>(*v)))
      throw invalid_argument(strprintf("%s: roundup_power2_divisions must be 0 or a power of two "
                                       "up to 64",
                                       ctx));
    o.roundup_power2_divisions = static_cast<unsigned>(*v);
  }
  if (auto v = cfg.take_double("garbage_collection_threshold")) {
    if (!(*v >= 0 && *v < 1))
      throw invalid_argument(strprintf("%s: garbage_collection_threshold must be in [0, 1)", ctx));
    o.garbage_collection_threshold = *v;
  }
  o.limit = limit_spec::take(cfg, true);
  if (auto v = cfg.take_bool("expandable_segments")) o.expandable_segments = *v;
  if (auto v = cfg.take_bool("fast_reuse")) o.fast_reuse = *v;
  if (auto v = cfg.take_string("map_chunk"); v && *v != "auto") {
    o.map_chunk = parse_size(*v, cfg.context() + ": map_chunk");
    if (o.map_chunk == 0)
      throw invalid_argument(
          strprintf("%s: map_chunk='%s' must be 'auto' or a size > 0", ctx, v->c_str()));
  }
  if (auto v = cfg.take_string("reserve_slack"))
    o.reserve_slack = parse_fraction_or_none(*v, "reserve_slack", ctx);
  const auto headroom = cfg.take_string("reserve_headroom");
  if (headroom) o.reserve_headroom = parse_fraction_or_none(*headroom, "reserve_headroom", ctx);
  if (o.garbage_collection_threshold > 0 && !o.limit.any() && upstream.info().total_bytes == 0) {
    throw invalid_argument(strprintf("%s: garbage_collection_threshold needs a limit: set "
                                     "memory_fraction or max_pool",
                                     ctx));
  }
  if (const char* env = std::getenv("DAO_NO_CACHING"); env != nullptr && std::strcmp(env, "1") == 0)
    o.no_caching = true;
  if (o.no_caching) o.expandable_segments = o.fast_reuse = false;
  return o;
}

std::string caching_options::effective_config(bool expandable) const {
  return strprintf(
      "max_split_size=%s,roundup_power2_divisions=%u,garbage_collection_threshold=%s,"
      "memory_fraction=%s,max_pool=%s,expandable_segments=%s,reserve_slack=%s,"
      "reserve_headroom=%s,fast_reuse=%s,map_chunk=%s",
      max_split_size == SIZE_MAX ? "0" : format_size_exact(max_split_size).c_str(),
      roundup_power2_divisions, format_double_exact(garbage_collection_threshold).c_str(),
      format_double_exact(limit.memory_fraction).c_str(), format_size_exact(limit.max_pool).c_str(),
      expandable_segments && expandable ? "true" : "false",
      reserve_slack < 0 ? "none" : format_double_exact(reserve_slack).c_str(),
      reserve_headroom < 0 ? "none" : format_double_exact(reserve_headroom).c_str(),
      fast_reuse ? "true" : "false",
      map_chunk == 0 ? "auto" : format_size_exact(map_chunk).c_str());
}

}  // namespace dao::detail
