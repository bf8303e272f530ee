// The place defaults: one strategy per place, chosen and configured by the
// environment on first use (see place_defaults.hpp).
#include "strategy/place_defaults.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "strategy/registry.hpp"
#include "util/format.hpp"

namespace dao::detail {

namespace {

constexpr int kMaxDevicesPerKind = 64;
constexpr const char* kKindSuffix[DAO_PLACE_KIND_COUNT] = {"CPU", "CUDA", "CUDA_PINNED",
                                                           "CUDA_MANAGED", "SIM"};

void check_kind(int kind) {
  if (kind < 0 || kind >= DAO_PLACE_KIND_COUNT) {
    throw invalid_argument(
        strprintf("unknown place kind %d (valid kinds are 0..%d)", kind, DAO_PLACE_KIND_COUNT - 1));
  }
}

// Returns the first variable of `names` that is set and not empty.
bool read_env(const std::string (&names)[2], std::string& value, std::string& source) {
  for (const std::string& name : names) {
    const char* v = std::getenv(name.c_str());
    if (v != nullptr && *v != '\0') {
      value = v;
      source = name;
      return true;
    }
  }
  return false;
}

std::array<default_config, DAO_PLACE_KIND_COUNT> read_default_configs() {
  std::array<default_config, DAO_PLACE_KIND_COUNT> out;
  for (int k = 0; k < DAO_PLACE_KIND_COUNT; ++k) {
    default_config& d = out[static_cast<std::size_t>(k)];
    const std::string strategy_vars[2] = {std::string("DAO_ALLOCATOR_") + kKindSuffix[k],
                                          "DAO_ALLOCATOR"};
    const std::string config_vars[2] = {std::string("DAO_ALLOC_CONF_") + kKindSuffix[k],
                                        "DAO_ALLOC_CONF"};
    if (!read_env(strategy_vars, d.strategy, d.strategy_source)) {
      d.strategy = builtin_default_strategy(k);
      d.strategy_source = "built-in default";
    }
    if (!read_env(config_vars, d.config, d.config_source)) d.config_source = "built-in default";
  }
  return out;
}

// Two strategies per place: the user's (dao_alloc) and the library's own
// (internal_place_strategy, "system"), so that neither sees the other's
// pointers.
struct place_table {
  std::mutex create_mutex;
  std::atomic<strategy*> slots[DAO_PLACE_KIND_COUNT][kMaxDevicesPerKind] = {};
  std::atomic<strategy*> internal_slots[DAO_PLACE_KIND_COUNT][kMaxDevicesPerKind] = {};
};

place_table& table() {
  static place_table* instance = new place_table();  // never destroyed: used until exit
  return *instance;
}

std::atomic<strategy*>& slot_of(dao_place place, bool internal) {
  place_table& t = table();
  return internal ? t.internal_slots[raw_kind(place.kind)][place.device]
                  : t.slots[raw_kind(place.kind)][place.device];
}

strategy& create_place_strategy(dao_place place, bool internal) {
  place_table& t = table();
  std::lock_guard<std::mutex> lock(t.create_mutex);
  auto& slot = slot_of(place, internal);
  if (strategy* existing = slot.load(std::memory_order_acquire)) return *existing;
  system_resource& resource = resource_for(place);
  std::unique_ptr<strategy> impl;
  if (internal) {
    // Pools hold their memory and recycle it themselves: straight from the
    // place, nothing cached, so that what a destroyed pool gave back is the
    // place's again at once (not kept from the caller in a second cache).
    impl = make_strategy("system", resource, "");
    strategy* made = impl.release();  // never destroyed: used until exit
    slot.store(made, std::memory_order_release);
    return *made;
  }
  const default_config& d = default_config_for(raw_kind(place.kind));
  try {
    impl = make_strategy(d.strategy, resource, d.config);
  } catch (const invalid_argument& e) {
    throw invalid_argument(
        strprintf("default allocator of %s (strategy from %s, config from %s): %s",
                  place_to_string(place).c_str(), d.strategy_source.c_str(),
                  d.config_source.c_str(), e.what()));
  }
  strategy* made = impl.release();  // never destroyed: used until exit
  slot.store(made, std::memory_order_release);
  return *made;
}

}  // namespace

const default_config& default_config_for(int kind) {
  check_kind(kind);
  // Leaked on purpose: must outlive other static destructors that free memory.
  static const auto* configs =
      new std::array<default_config, DAO_PLACE_KIND_COUNT>(read_default_configs());
  return (*configs)[static_cast<std::size_t>(kind)];
}

namespace {

strategy& place_strategy_of(dao_place place, bool internal) {
  const int kind = raw_kind(place.kind);
  check_kind(kind);
  if (place.device >= 0 && place.device < kMaxDevicesPerKind) {
    strategy* s = slot_of(place, internal).load(std::memory_order_acquire);
    if (s != nullptr) return *s;
    return create_place_strategy(place, internal);
  }
  resource_for(place);  // throws the precise reason for a bad index
  throw unsupported(strprintf("%s: place defaults exist for devices 0..%d only",
                              place_to_string(place).c_str(), kMaxDevicesPerKind - 1));
}

}  // namespace

strategy& place_strategy(dao_place place) { return place_strategy_of(place, false); }

strategy& internal_place_strategy(dao_place place) { return place_strategy_of(place, true); }

strategy* internal_place_strategy_if_made(dao_place place) {
  const int kind = raw_kind(place.kind);
  check_kind(kind);
  if (place.device < 0 || place.device >= kMaxDevicesPerKind) {
    resource_for(place);  // throws the precise reason for a bad index
    return nullptr;
  }
  return slot_of(place, true).load(std::memory_order_acquire);
}

}  // namespace dao::detail
