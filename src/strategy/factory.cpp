#include "strategy/factory.hpp"

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "strategy/buddy.hpp"
#include "strategy/caching.hpp"
#include "strategy/system.hpp"
#include "util/format.hpp"

namespace dao::detail {

const std::vector<std::string_view>& strategy_names() {
  static const std::vector<std::string_view> names = {"buddy", "caching", "system"};
  return names;
}

std::unique_ptr<strategy> make_strategy(std::string_view name, system_resource& upstream,
                                        std::string_view config_text) {
  std::string context = std::string(name) + " config";
  if (name == "buddy") {
    config cfg = config::parse(config_text, context);
    return std::make_unique<buddy_strategy>(upstream, buddy_options::from_config(cfg, upstream));
  }
  if (name == "caching") {
    config cfg = config::parse(config_text, context);
    return std::make_unique<caching_strategy>(upstream,
                                              caching_options::from_config(cfg, upstream));
  }
  if (name == "system") {
    config cfg = config::parse(config_text, context);
    return std::make_unique<system_strategy>(upstream, cfg);
  }
  std::string known;
  for (std::string_view n : strategy_names()) {
    if (!known.empty()) known += ", ";
    known.append(n.data(), n.size());
  }
  throw invalid_argument(strprintf("unknown strategy '%.*s'; known strategies: %s",
                                   static_cast<int>(name.size()), name.data(), known.c_str()));
}

}  // namespace dao::detail
