// SPDX-License-Identifier: MIT
// See curl_common.h.
#include "remote/curl_common.h"

#include <curl/curl.h>

#include <mutex>

#include "base/check.h"

namespace sniper {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK, "curl_global_init failed"); });
}

std::string percent_encode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const unsigned char c : s) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace sniper
