// The strategy registry (see registry.hpp): the table and the builder.
#include "strategy/registry.hpp"

#include <optional>
#include <string>

#include "core/error.hpp"
#include "strategy/buddy.hpp"
#include "strategy/caching.hpp"
#include "strategy/limit_strategy.hpp"
#include "strategy/strategy_list.h"
#include "strategy/strategy_source.hpp"
#include "strategy/trace_source.hpp"
#include "strategy/system.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

std::unique_ptr<strategy> make_buddy(memory_source& upstream, strategy_source*, config& cfg) {
  return std::make_unique<buddy_strategy>(upstream, buddy_options::from_config(cfg, upstream));
}

std::unique_ptr<strategy> make_caching(memory_source& upstream, strategy_source*, config& cfg) {
  return std::make_unique<caching_strategy>(upstream, caching_options::from_config(cfg, upstream));
}

std::unique_ptr<strategy> make_system(memory_source& upstream, strategy_source*, config&) {
  return std::make_unique<system_strategy>(upstream);
}

std::unique_ptr<strategy> make_limit(memory_source&, strategy_source* below, config& cfg) {
  return std::make_unique<limit_strategy>(*below, limit_spec::take(cfg, true));
}

// One row per name of DAO_STRATEGY_LIST, in its order.
std::vector<strategy_entry> build_table() {
  std::vector<strategy_entry> rows = {
      {"buddy",
       "binary buddy pool in chunks (Paddle's BuddyAllocator); fast, host default",
       {"min_block", "chunk_size", "max_pool", "initial_pool"},
       make_buddy},
      {"caching",
       "stream-ordered caching allocator (PyTorch's); device default",
       {"max_split_size", "max_split_size_mb", "roundup_power2_divisions",
        "garbage_collection_threshold", "memory_fraction", "max_pool", "expandable_segments",
        "reserve_slack", "reserve_headroom", "fast_reuse", "map_chunk"},
       make_caching},
      {"system", "no pooling: every allocation from the system resource", {}, make_system},
      {"limit",
       "caps the bytes in use through it over another strategy (upstream=...)",
       {"max_pool", "memory_fraction"},
       make_limit,
       true},
  };
#define DAO_NAME_(s) #s,
  static const char* const listed[] = {DAO_STRATEGY_LIST(DAO_NAME_)};
#undef DAO_NAME_
  bool same = rows.size() == sizeof listed / sizeof listed[0];
  for (std::size_t i = 0; same && i < rows.size(); ++i) same = rows[i].name == listed[i];
  if (!same) throw std::logic_error("strategy registry and strategy_list.h disagree");
  return rows;
}

std::string known_names() {
  std::string known;
  for (const strategy_entry& e : strategy_registry()) {
    if (!known.empty()) known += ", ";
    known.append(e.name.data(), e.name.size());
  }
  return known;
}

}  // namespace

const std::vector<strategy_entry>& strategy_registry() {
  static const std::vector<strategy_entry> table = build_table();
  return table;
}

const strategy_entry& find_strategy(std::string_view name) {
  for (const strategy_entry& e : strategy_registry())
    if (e.name == name) return e;
  throw invalid_argument(strprintf("unknown strategy '%.*s'; known strategies: %s",
                                   static_cast<int>(name.size()), name.data(),
                                   known_names().c_str()));
}

const char* builtin_default_strategy(int kind) noexcept {
  return kind == DAO_PLACE_CPU ? "buddy" : "caching";
}

std::unique_ptr<strategy> make_strategy(std::string_view name, system_resource& place,
                                        std::string_view config_text) {
  const strategy_entry& entry = find_strategy(name);
  const std::string context = std::string(name) + " config";
  config cfg = config::parse(config_text, context);
  std::optional<std::string> below_name = cfg.take_string("upstream");
  const std::string below_config = cfg.take_prefixed("upstream.");
  std::vector<std::string_view> keys = entry.keys;
  keys.insert(keys.end(), {"upstream", "upstream.<key>"});
  cfg.require_known(keys);
  if (!below_name && !below_config.empty()) {
    throw invalid_argument(strprintf("%s: upstream.* keys (%s) need upstream=<strategy>",
                                     context.c_str(), below_config.c_str()));
  }
  if (!below_name && entry.adaptor)
    below_name = builtin_default_strategy(raw_kind(place.place().kind));

  std::unique_ptr<strategy_source> below;
  if (below_name) {
    try {
      below = std::make_unique<strategy_source>(make_strategy(*below_name, place, below_config));
    } catch (const invalid_argument& e) {
      throw invalid_argument(strprintf("%s: upstream: %s", context.c_str(), e.what()));
    }
  }
  // The bottom strategy takes its memory through a trace_source, so that
  // a recording sees every map and unmap of the stack (issue 18); one
  // above another is recorded through the top one only.
  std::unique_ptr<trace_source> traced_place;
  if (below) below->inner().set_traced(false);
  else traced_place = std::make_unique<trace_source>(place);
  memory_source& upstream = below ? static_cast<memory_source&>(*below) : *traced_place;
  std::unique_ptr<strategy> made = entry.make(upstream, below.get(), cfg);
  if (below) {
    const strategy* inner = &below->inner();
    made->adopt_upstream(std::move(below), inner);
  } else {
    made->adopt_upstream(std::move(traced_place), nullptr);
  }
  return made;
}

}  // namespace dao::detail
