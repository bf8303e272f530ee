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
double parse_bandwidth(const std::string& text, const std::string& context) {
  std::string s(trim_spaces(text));
  auto bad = [&] {
    return invalid_argument(strprintf(
        "%s: link_bandwidth='%s' is not a bandwidth (expected a positive number with a unit "
        "per second, for example 16GB/s, 25GiB/s or 500MB/s)",
        context.c_str(), text.c_str()));
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
      throw invalid_argument(strprintf("%s: link_bandwidth='%s' is out of range (at least 1 B/s)",
                                       context.c_str(), text.c_str()));
    }
    return bytes_per_second;
  }
  throw bad();
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
  if (auto b = cfg.take_string("link_bandwidth")) o.bandwidth = parse_bandwidth(*b, context);
  cfg.reject_unknown({"policy", "prefetch", "host_budget", "link_bandwidth"});
  if (o.bandwidth > 0 && !sim_device) {
    throw invalid_argument(
        "tiered config: link_bandwidth applies to SIM devices only (a real link has its own)");
  }
  return o;
}

}  // namespace dao::detail
