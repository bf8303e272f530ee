// The options of a tiered pool: parsing its config string (see
// tiered_options.hpp).
#include "tiered/tiered_options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/error.hpp"
#include "util/format.hpp"

namespace dao::detail {
namespace {

// "16GB/s", "25GiB/s", "500MB/s", "1e9B/s", "1000000" (bytes per second).
double parse_bandwidth(const std::string& text, const std::string& context, const char* key) {
  std::string s(trim_spaces(text));
  auto bad = [&] {
    return invalid_argument(
        strprintf("%s: %s='%s' is not a bandwidth (expected a positive number with a unit "
                  "per second, for example 16GB/s, 25GiB/s or 500MB/s)",
                  context.c_str(), key, text.c_str()));
  };
  if (s.size() >= 2 && s.compare(s.size() - 2, 2, "/s") == 0) s.resize(s.size() - 2);
  const char* begin = s.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || number <= 0) throw bad();
  std::string unit(trim_spaces(std::string_view(end)));
  struct row {
    const char* name;
    double factor;
  };
  static const row rows[] = {{"", 1},
                             {"B", 1},
                             {"KB", 1e3},
                             {"kB", 1e3},
                             {"MB", 1e6},
                             {"GB", 1e9},
                             {"TB", 1e12},
                             {"KiB", 1024.0},
                             {"MiB", 1048576.0},
                             {"GiB", 1073741824.0},
                             {"TiB", 1099511627776.0}};
  for (const row& r : rows) {
    if (unit != r.name) continue;
    // Below a byte a second, a copy's time overflows any clock: no link is
    // that slow (the issue 20 defect: 1e-300 overflowed a duration).
    const double bytes_per_second = number * r.factor;
    if (!(bytes_per_second >= 1) || !std::isfinite(bytes_per_second)) {
      throw invalid_argument(strprintf("%s: %s='%s' is out of range (at least 1 B/s)",
                                       context.c_str(), key, text.c_str()));
    }
    return bytes_per_second;
  }
  throw bad();
}

// "500ms", "2s", "1.5s", "250us", "1min"; "0" or "off": never.
std::uint64_t parse_idle_ns(const std::string& text, const std::string& context) {
  std::string s(trim_spaces(text));
  if (s == "0" || s == "off") return 0;
  const char* begin = s.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  const std::string unit(trim_spaces(std::string_view(end)));
  double factor = 0;
  if (unit == "s") factor = 1;
  if (unit == "ms") factor = 1e-3;
  if (unit == "us") factor = 1e-6;
  if (unit == "min") factor = 60;
  if (end == begin || factor == 0 || !std::isfinite(number)) {
    throw invalid_argument(
        strprintf("%s: idle_trim='%s' is not a duration (expected 0, off, or a number with a "
                  "unit s, ms, us or min, for example 500ms or 2s)",
                  context.c_str(), text.c_str()));
  }
  const double seconds = number * factor;
  if (!(seconds >= kMinIdleTrimSeconds && seconds <= kMaxIdleTrimSeconds)) {
    throw invalid_argument(strprintf("%s: idle_trim='%s' is out of range (1ms to 24 hours, or 0)",
                                     context.c_str(), text.c_str()));
  }
  return static_cast<std::uint64_t>(seconds * 1e9);
}

std::size_t parse_count(const std::string& text, const std::string& context, const char* key) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(begin, &end, 10);
  if (end == begin || *end != '\0' || errno == ERANGE || text[0] == '-' || value > 1000000) {
    throw invalid_argument(strprintf("%s: %s='%s' is not a count (expected 0 to 1000000)",
                                     context.c_str(), key, text.c_str()));
  }
  return static_cast<std::size_t>(value);
}

}  // namespace

tiered_options tiered_options::parse(const char* config_text, bool sim_device) {
  tiered_options o;
  const std::string context = "tiered config";
  config cfg = config::parse(config_text != nullptr ? config_text : "", context);
  if (auto p = cfg.take_string("policy")) o.policy = parse_policy(*p, context);
  if (auto p = cfg.take_string("prefetch")) o.prefetch = parse_count(*p, context, "prefetch");
  if (auto h = cfg.take_size("host_budget")) o.host_budget = *h;
  if (auto b = cfg.take_string("link_bandwidth")) {
    o.bandwidth = parse_bandwidth(*b, context, "link_bandwidth");
    o.bandwidth_given = true;
  }
  if (auto b = cfg.take_string("pageable_to_device")) {
    o.pageable_to_device = parse_bandwidth(*b, context, "pageable_to_device");
    o.pageable_to_device_given = true;
  }
  if (auto b = cfg.take_string("pageable_to_host")) {
    o.pageable_to_host = parse_bandwidth(*b, context, "pageable_to_host");
    o.pageable_to_host_given = true;
  }
  bool sim_host_given = false;
  if (auto h = cfg.take_string("sim_host")) {
    sim_host_given = true;
    if (*h == "pinned") {
      o.sim_host_pinned = true;
    } else if (*h != "pageable") {
      throw invalid_argument(strprintf("%s: sim_host='%s' is unknown (expected pageable or pinned)",
                                       context.c_str(), h->c_str()));
    }
  }
  if (auto p = cfg.take_string("staging_buffers")) {
    o.staging_buffers = parse_count(*p, context, "staging_buffers");
    if (o.staging_buffers > kMaxStagingBuffers) {
      throw invalid_argument(strprintf("%s: staging_buffers=%zu is more than %zu", context.c_str(),
                                       o.staging_buffers, kMaxStagingBuffers));
    }
  }
  if (auto c = cfg.take_size("staging_chunk")) {
    if (*c < kMinStagingChunk || *c > kMaxStagingChunk) {
      throw invalid_argument(
          strprintf("%s: staging_chunk=%zu is out of range (%zu to %zu bytes, for example 4MiB)",
                    context.c_str(), *c, kMinStagingChunk, kMaxStagingChunk));
    }
    o.staging_chunk = *c;
  }
  if (auto d = cfg.take_string("idle_trim")) o.idle_trim_ns = parse_idle_ns(*d, context);
  if (auto c = cfg.take_size("inline_copy")) {
    if (*c > kMaxStagingChunk) {
      throw invalid_argument(
          strprintf("%s: inline_copy=%zu is out of range (0 to %zu bytes, for example 64KiB)",
                    context.c_str(), *c, kMaxStagingChunk));
    }
    o.inline_copy = *c;
  }
  if (o.staging_buffers * o.staging_chunk > kMaxStagingBytes) {
    throw invalid_argument(strprintf(
        "%s: staging_buffers=%zu of staging_chunk=%zu bytes is more than %zu bytes of pinned "
        "staging per direction",
        context.c_str(), o.staging_buffers, o.staging_chunk, kMaxStagingBytes));
  }
  cfg.reject_unknown({"policy", "prefetch", "host_budget", "link_bandwidth", "pageable_to_device",
                      "pageable_to_host", "sim_host", "staging_buffers", "staging_chunk",
                      "idle_trim", "inline_copy"});
  if (!sim_device) {
    const char* key = o.bandwidth_given            ? "link_bandwidth"
                      : o.pageable_to_device_given ? "pageable_to_device"
                      : o.pageable_to_host_given   ? "pageable_to_host"
                      : sim_host_given             ? "sim_host"
                                                   : nullptr;
    if (key != nullptr) {
      throw invalid_argument(strprintf(
          "tiered config: %s applies to SIM devices only (a real link has its own)", key));
    }
  }
  return o;
}

}  // namespace dao::detail
