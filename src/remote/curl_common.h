// SPDX-License-Identifier: MIT
// What the hub client and the S3 client both need around libcurl: its one-time global set-up and
// RFC 3986 percent-encoding of URL parts.
#pragma once

#include <string>
#include <string_view>

namespace sniper {

// curl_global_init, once per process (thread-safe); aborts if libcurl cannot start.
void init_curl_once();

// Percent-encodes every byte of `s` but the RFC 3986 unreserved characters (ASCII letters and
// digits, - _ . ~) and, when `keep_slash`, '/' (a path keeps its separators; a query value does
// not).
std::string percent_encode(std::string_view s, bool keep_slash);

}  // namespace sniper
