// Creates a strategy by name: the one place that lists the strategies.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "strategy/strategy.hpp"

namespace dao::detail {

// Throws invalid_argument for an unknown name or a bad config.
std::unique_ptr<strategy> make_strategy(std::string_view name, system_resource& upstream,
                                        std::string_view config_text);

// Names accepted by make_strategy, for messages and `dao info`.
const std::vector<std::string_view>& strategy_names();

}  // namespace dao::detail
