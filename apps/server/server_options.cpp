// SPDX-License-Identifier: MIT
#include "server/server_options.h"

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

}  // namespace sniper::server
