// The cap behind max_pool and memory_fraction (see limit.hpp).
#include "strategy/limit.hpp"

#include "core/error.hpp"
#include "resource/system_resource.hpp"
#include "util/format.hpp"

namespace dao::detail {

limit_spec limit_spec::take(config& cfg, bool with_fraction) {
  limit_spec s;
  if (with_fraction) {
    if (auto v = cfg.take_double("memory_fraction")) {
      if (!(*v >= 0 && *v <= 1)) {
        throw invalid_argument(strprintf("%s: memory_fraction must be in [0, 1] (0: no limit)",
                                         cfg.context().c_str()));
      }
      s.memory_fraction = *v;
    }
  }
  if (auto v = cfg.take_size("max_pool")) s.max_pool = *v;
  return s;
}

std::size_t limit_spec::cap(std::size_t total_bytes) const noexcept {
  std::size_t cap = max_pool;
  if (memory_fraction > 0 && total_bytes != 0) {
    // A fraction of 1 of a SIZE_MAX device is 2^64 as a double: converting
    // that to size_t is undefined (issue 20), so clamp first.
    const double wanted = static_cast<double>(total_bytes) * memory_fraction;
    const std::size_t by_fraction =
        wanted >= 18446744073709551615.0 ? SIZE_MAX : static_cast<std::size_t>(wanted);
    if (cap == 0 || by_fraction < cap) cap = by_fraction;
  }
  return cap;
}

std::string limit_spec::effective_config(bool with_fraction) const {
  std::string text = "max_pool=" + format_size_exact(max_pool);
  if (with_fraction) text += ",memory_fraction=" + format_double_exact(memory_fraction);
  return text;
}

std::size_t byte_limit::cap() const noexcept {
  std::size_t total = 0;
  if (spec_.memory_fraction > 0) {
    try {
      total = place_.info().total_bytes;
    } catch (...) {  // capacity unknown: the fraction does not limit
    }
  }
  return spec_.cap(total);
}

bool byte_limit::fits(std::size_t extra, std::size_t used) const noexcept {
  if (!spec_.any()) return true;
  const std::size_t c = cap();
  return c == 0 || (extra <= c && used <= c - extra);
}

void byte_limit::take(std::size_t bytes, const char* what) {
  std::size_t u = used();
  do {
    if (!fits(bytes, u)) {
      throw out_of_memory(strprintf("%s: %s %s would pass the limit of %s (%s in use)",
                                    place_to_string(place_.place()).c_str(), what,
                                    format_bytes(bytes).c_str(), format_bytes(cap()).c_str(),
                                    format_bytes(u).c_str()));
    }
  } while (!used_.compare_exchange_weak(u, u + bytes, std::memory_order_relaxed));
}

void* limit_source::allocate(std::size_t bytes) {
  limit_.take(bytes, "allocating");
  try {
    return upstream_.allocate(bytes);
  } catch (...) {
    limit_.give(bytes);
    throw;
  }
}

void limit_source::deallocate(void* p, std::size_t bytes) noexcept {
  upstream_.deallocate(p, bytes);
  limit_.give(bytes);
}

void limit_source::map(void* addr, std::size_t bytes) {
  limit_.take(bytes, "mapping");
  try {
    upstream_.map(addr, bytes);
  } catch (...) {
    limit_.give(bytes);
    throw;
  }
}

void limit_source::unmap(void* addr, std::size_t bytes) noexcept {
  upstream_.unmap(addr, bytes);
  limit_.give(bytes);
}

}  // namespace dao::detail
