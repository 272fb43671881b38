// SPDX-License-Identifier: MIT
#include "server/server_options.h"

#include <cmath>
#include <cstdlib>

namespace sniper::server {

std::string model_id_from_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  constexpr std::string_view kExt = ".gguf";
  if (base.size() > kExt.size() && base.compare(base.size() - kExt.size(), kExt.size(), kExt) == 0) {
    base.resize(base.size() - kExt.size());
  }
  return base;
}

Result<double> parse_duration_s(const std::string& text, const char* flag) {
  auto bad = [&] {
    return make_error(
        "%s is '%s' but must be a duration: -1 (never), 0, seconds, or a number with ms, s, m or h (e.g. 5m)", flag,
        text.c_str());
  };
  if (text == "-1") return -1.0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || !std::isfinite(v) || v < 0) return bad();
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return bad();
  }
  return v * scale;
}

}  // namespace sniper::server
