// SPDX-License-Identifier: MIT
// Where the tests find ../shared: $SNIPER_SHARED_DIR (set by ctest), else ../shared relative
// to the working directory.
#pragma once

#include <cstdlib>
#include <string>

namespace sniper {

inline std::string shared_dir() {
  const char* env = std::getenv("SNIPER_SHARED_DIR");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string("../shared");
}

}  // namespace sniper
