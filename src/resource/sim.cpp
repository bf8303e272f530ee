// The SIM backend: devices of fixed capacity backed by host memory taken per
// system allocation, so a large capacity costs nothing until it is used.
#include "resource/fault_injection.hpp"
#include "resource/sim.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "dao/sim.h"
#include "resource/host.hpp"
#include "resource/sim_stream.hpp"
#include "resource/system_resource.hpp"
#include "resource/virtual_memory.hpp"
#include "util/format.hpp"

namespace dao::detail {

std::vector<std::size_t> parse_sim_devices(std::string_view text) {
  static constexpr std::string_view var = "DAO_SIM_DEVICES";
  std::vector<std::size_t> capacities;
  std::string_view all = trim_spaces(text);
  if (all == "0") return capacities;
  std::string_view rest = all;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view item = trim_spaces(rest.substr(0, comma));
    if (item.empty()) {
      throw invalid_argument(strprintf(
          "DAO_SIM_DEVICES='%.*s': empty item (expected for example 2x512MiB or 1GiB,256MiB)",
          static_cast<int>(text.size()), text.data()));
    }
    std::size_t count = 1;
    std::size_t x = item.find_first_of("xX");
    if (x != std::string_view::npos) {
      std::string_view count_text = trim_spaces(item.substr(0, x));
      std::size_t parsed = 0;
      bool ok = !count_text.empty() && count_text.size() <= 3;
      for (char c : count_text) {
        if (c < '0' || c > '9') ok = false;
        parsed = parsed * 10 + static_cast<std::size_t>(c - '0');
      }
      if (!ok || parsed == 0) {
        throw invalid_argument(strprintf(
            "DAO_SIM_DEVICES='%.*s': '%.*s' is not a device count (expected NxSIZE, N >= 1)",
            static_cast<int>(text.size()), text.data(), static_cast<int>(item.size()),
            item.data()));
      }
      count = parsed;
      item = item.substr(x + 1);
    }
    std::size_t capacity =
        parse_size(item, strprintf("%.*s='%.*s'", static_cast<int>(var.size()), var.data(),
                                   static_cast<int>(text.size()), text.data()));
    if (capacity == 0) {
      throw invalid_argument(strprintf("DAO_SIM_DEVICES='%.*s': a capacity must be > 0",
                                       static_cast<int>(text.size()), text.data()));
    }
    if (capacities.size() + count > DAO_SIM_MAX_DEVICES) {
      throw invalid_argument(strprintf("DAO_SIM_DEVICES='%.*s': more than %d devices",
                                       static_cast<int>(text.size()), text.data(),
                                       DAO_SIM_MAX_DEVICES));
    }
    capacities.insert(capacities.end(), count, capacity);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return capacities;
}

namespace {

class sim_device final : public system_resource {
 public:
  sim_device(int index, std::size_t capacity, const sim_profile& profile)
      : index_(index),
        capacity_(capacity),
        meter_(profile),
        granularity_(profile.granularity != 0 ? profile.granularity : host_page_size()) {}

  void* allocate(std::size_t bytes) override {
    if (faults::inject(faults::alloc))
      faults::raise_fault(faults::alloc, place_to_string(place()) + ": allocate");
    // Count what the host really hands out: whole 256-byte units.
    std::size_t rounded = take(bytes, kMinAlignment);
    void* p = host_aligned_alloc(rounded);
    if (p == nullptr) {
      used_.fetch_sub(rounded, std::memory_order_relaxed);
      throw out_of_memory(strprintf("sim:%d: the host could not back %s of device memory", index_,
                                    format_bytes(bytes).c_str()));
    }
    try {
      meter_.note_range(p, rounded);
    } catch (...) {
      host_aligned_free(p);
      used_.fetch_sub(rounded, std::memory_order_relaxed);
      throw;
    }
    meter_.on_alloc(bytes);
    return p;
  }

  void deallocate(void* p, std::size_t bytes) noexcept override {
    if (p == nullptr) return;
    meter_.forget_range(p);
    meter_.on_free(bytes);
    host_aligned_free(p);
    used_.fetch_sub((bytes + kMinAlignment - 1) & ~(kMinAlignment - 1), std::memory_order_relaxed);
  }

  dao_place place() const noexcept override { return dao_place{DAO_PLACE_SIM, index_}; }
  memory_info info() const override {
    std::size_t used = used_.load(std::memory_order_relaxed);
    return memory_info{capacity_ - used, capacity_};
  }
  bool host_accessible() const noexcept override { return true; }
  std::unique_ptr<stream_impl> create_stream() override { return make_sim_stream(place(), meter_); }
  std::unique_ptr<event_impl> create_event() override { return make_sim_event(meter_); }
  std::size_t capacity() const noexcept { return capacity_; }
  sim_cost_meter& meter() noexcept { return meter_; }

  // Virtual memory: addresses are free, mapped pages count against the
  // capacity exactly as allocations do. With a card's profile, mapped in
  // that card's granularity (and no larger pages: the granule is the
  // card's page), and as the card's driver does it: each map() call is one
  // physical allocation, charged as one, and only exactly the range of one
  // map() call can be unmapped; anything else is refused and stays mapped,
  // as cuMemUnmap refuses it.
  std::size_t map_granularity() const noexcept override { return granularity_; }
  std::size_t large_page_size() const noexcept override {
    return card_like() ? 0 : host_huge_page_size();
  }
  bool unmaps_in_part() const noexcept override { return !card_like(); }
  void* reserve_addresses(std::size_t bytes) override {
    void* p = host_reserve(bytes);
    if (p == nullptr) {
      throw out_of_memory(strprintf("sim:%d: out of address space: could not reserve %s", index_,
                                    format_bytes(bytes).c_str()));
    }
    try {
      meter_.note_range(p, bytes);
    } catch (...) {
      host_release(p, bytes);
      throw;
    }
    return p;
  }
  void release_addresses(void* base, std::size_t bytes) noexcept override {
    meter_.forget_range(base);
    host_release(base, bytes);
  }
  void map(void* addr, std::size_t bytes) override {
    if (faults::inject(faults::map))
      faults::raise_fault(faults::map, place_to_string(place()) + ": map");
    const auto key = reinterpret_cast<std::uintptr_t>(addr);
    if (card_like()) {
      std::lock_guard<std::mutex> lock(mappings_mutex_);
      mappings_.emplace(key, bytes);  // first: may throw, nothing mapped yet
    }
    try {
      take(bytes, 1);
    } catch (...) {
      forget_mapping(key);
      throw;
    }
    if (!host_commit(addr, bytes)) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);
      forget_mapping(key);
      throw out_of_memory(strprintf("sim:%d: the host could not back %s of device memory", index_,
                                    format_bytes(bytes).c_str()));
    }
    meter_.on_map(bytes, card_like() ? bytes : granularity_);
  }
  void unmap(void* addr, std::size_t bytes) noexcept override {
    if (card_like()) {
      std::lock_guard<std::mutex> lock(mappings_mutex_);
      auto it = mappings_.find(reinterpret_cast<std::uintptr_t>(addr));
      if (it == mappings_.end() || it->second != bytes) {
        ++refused_unmaps_;
        return;
      }
      mappings_.erase(it);
    }
    host_decommit(addr, bytes);
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    meter_.on_unmap(bytes, card_like() ? bytes : granularity_);
  }
  // Unmaps refused because they were not exactly one map() call (card
  // profiles): a caller that would fail on the card.
  std::uint64_t refused_unmaps() const noexcept {
    std::lock_guard<std::mutex> lock(mappings_mutex_);
    return refused_unmaps_;
  }

 private:
  bool card_like() const noexcept { return meter_.profile().granularity != 0; }
  void forget_mapping(std::uintptr_t key) noexcept {
    if (!card_like()) return;
    std::lock_guard<std::mutex> lock(mappings_mutex_);
    mappings_.erase(key);
  }

  // Takes `bytes` rounded up to `unit` from the capacity, or throws the
  // out-of-memory a full GPU would give. Returns the rounded size.
  std::size_t take(std::size_t bytes, std::size_t unit) {
    if (bytes > capacity_) throw full(bytes, used_.load(std::memory_order_relaxed));
    std::size_t rounded = (bytes + unit - 1) / unit * unit;
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (rounded > capacity_ - used) throw full(bytes, used);
    } while (!used_.compare_exchange_weak(used, used + rounded, std::memory_order_relaxed));
    return rounded;
  }

  out_of_memory full(std::size_t bytes, std::size_t used) const {
    return out_of_memory(
        strprintf("sim:%d: out of memory: tried to allocate %s; the device has a capacity of %s, "
                  "of which %s is in use and %s is free",
                  index_, format_bytes(bytes).c_str(), format_bytes(capacity_).c_str(),
                  format_bytes(used).c_str(), format_bytes(capacity_ - used).c_str()));
  }

  int index_;
  std::size_t capacity_;
  std::atomic<std::size_t> used_{0};
  sim_cost_meter meter_;
  std::size_t granularity_;
  mutable std::mutex mappings_mutex_;
  std::map<std::uintptr_t, std::size_t> mappings_;  // card profiles: base -> bytes of each map()
  std::uint64_t refused_unmaps_ = 0;
};

class sim_backend_impl final : public backend {
 public:
  int device_count() override {
    std::lock_guard<std::mutex> lock(mutex_);
    freeze_locked();
    return static_cast<int>(devices_.size());
  }

  std::string description() override {
    std::lock_guard<std::mutex> lock(mutex_);
    freeze_locked();
    std::string out =
        strprintf("simulated devices (host memory with a hard capacity), from %s", source_.c_str());
    return out;
  }

  system_resource& resource(int device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    freeze_locked();
    if (device < 0 || device >= static_cast<int>(devices_.size())) {
      throw no_device(
          strprintf("sim device %d does not exist: %zu simulated device(s) configured from %s "
                    "(set DAO_SIM_DEVICES, e.g. 2x512MiB, or call dao_sim_configure)",
                    device, devices_.size(), source_.c_str()));
    }
    return *devices_[static_cast<std::size_t>(device)];
  }

  void set_profile(std::string_view name) {
    const sim_profile& p = find_sim_profile(name, "dao_sim_set_profile");
    std::lock_guard<std::mutex> lock(mutex_);
    if (frozen_) {
      if (&p == profile_) return;
      throw invalid_state(strprintf(
          "dao_sim_set_profile: simulated devices are already in use with profile '%.*s'; "
          "choose the profile before the first use of a SIM place",
          static_cast<int>(profile_->name.size()), profile_->name.data()));
    }
    api_profile_ = &p;
  }

  const sim_profile& profile() {
    std::lock_guard<std::mutex> lock(mutex_);
    freeze_locked();
    return *profile_;
  }

  sim_device& device(int index) { return static_cast<sim_device&>(resource(index)); }

  void configure(const std::vector<std::size_t>& capacities) {
    if (capacities.size() > DAO_SIM_MAX_DEVICES) {
      throw invalid_argument(strprintf("dao_sim_configure: count %zu is out of range 0..%d",
                                       capacities.size(), DAO_SIM_MAX_DEVICES));
    }
    for (std::size_t c : capacities)
      if (c == 0) throw invalid_argument("dao_sim_configure: a capacity must be > 0");
    std::lock_guard<std::mutex> lock(mutex_);
    if (frozen_) {
      if (capacities == frozen_capacities()) return;
      throw invalid_state(
          strprintf("dao_sim_configure: simulated devices are already in use (configured from %s); "
                    "call dao_sim_configure before the first use of a SIM place",
                    source_.c_str()));
    }
    api_capacities_ = capacities;
    api_configured_ = true;
  }

 private:
  std::vector<std::size_t> frozen_capacities() const {
    std::vector<std::size_t> out;
    for (const auto& d : devices_) out.push_back(d->capacity());
    return out;
  }

  // The first use fixes the configuration. A malformed DAO_SIM_DEVICES is
  // reported and leaves SIM unconfigured, so dao_sim_configure can still fix it.
  void freeze_locked() {
    if (frozen_) return;
    std::vector<std::size_t> capacities;
    if (api_configured_) {
      capacities = api_capacities_;
      source_ = "dao_sim_configure";
    } else if (const char* env = std::getenv("DAO_SIM_DEVICES"); env != nullptr && *env != '\0') {
      capacities = parse_sim_devices(env);
      source_ = strprintf("DAO_SIM_DEVICES=%s", env);
    } else {
      capacities.assign(1, kSimDefaultCapacity);
      source_ = "the default (1 device of 1 GiB; set DAO_SIM_DEVICES to change)";
    }
    const sim_profile* profile = api_profile_;
    if (profile == nullptr) {
      const char* env = std::getenv("DAO_SIM_COSTS");
      profile = &find_sim_profile(env != nullptr && *env != '\0' ? env : "none", "DAO_SIM_COSTS");
    }
    for (std::size_t i = 0; i < capacities.size(); ++i)
      devices_.push_back(
          std::make_unique<sim_device>(static_cast<int>(i), capacities[i], *profile));
    profile_ = profile;
    frozen_ = true;
  }

  std::mutex mutex_;
  bool frozen_ = false;
  bool api_configured_ = false;
  std::vector<std::size_t> api_capacities_;
  std::vector<std::unique_ptr<sim_device>> devices_;
  std::string source_;
  const sim_profile* api_profile_ = nullptr;  // dao_sim_set_profile
  const sim_profile* profile_ = nullptr;      // in effect once frozen
};

sim_backend_impl& sim_instance() {
  static sim_backend_impl* instance = new sim_backend_impl();  // never destroyed: used until exit
  return *instance;
}

}  // namespace

backend& sim_backend() { return sim_instance(); }

void sim_configure(const std::vector<std::size_t>& capacities) {
  sim_instance().configure(capacities);
}

void sim_set_profile(std::string_view name) { sim_instance().set_profile(name); }

const sim_profile& sim_current_profile() { return sim_instance().profile(); }

sim_cost_meter& sim_meter(int device) { return sim_instance().device(device).meter(); }

}  // namespace dao::detail
