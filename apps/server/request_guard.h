// SPDX-License-Identifier: MIT
// What a request must satisfy before any route sees it, against requests forged by web pages
// (issue 40 finding 5; docs/server-security.md):
// - Host: the name the client connected to must be this server's: the bound address, a
//   loopback name or address (localhost, *.localhost, 127.0.0.0/8, ::1), an IP address when
//   bound to all interfaces, or a name given with --allowed-hosts. A DNS-rebinding page reaches
//   the server under its own domain name, which none of these is, so it gets 403.
// - Origin (sent by browsers): a same-origin request (the web UI), or an origin given with
//   --cors-origin (or "*"), is served and, when cross-origin, answered with CORS headers; any
//   other origin gets 403 before any work is done (a "simple" cross-origin POST would otherwise
//   run even though the page cannot read the reply). Preflights (OPTIONS) are answered here.
// - Content-Type: routes that take a JSON body take only application/json (415 otherwise), so a
//   page cannot send one as a form or text/plain without a preflight.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper::server {

struct GuardOptions {
  std::string bound_host = "127.0.0.1";    // --host
  std::vector<std::string> allowed_hosts;  // --allowed-hosts: names, ".suffix" (a domain and its subdomains), "*"
  std::vector<std::string> cors_origins;   // --cors-origin: "scheme://host[:port]", "null" or "*"
};

// Validates and normalises (lower case) the --allowed-hosts and --cors-origin values; errors
// name the flag and the value.
[[nodiscard]] Status normalise_guard_options(GuardOptions* options);

// The host part of a Host header value, lower-cased, without the port or the IPv6 brackets
// ("[::1]:8000" -> "::1"); "" when the value is malformed.
std::string host_of(std::string_view host_header);
// True for loopback names and addresses: localhost, *.localhost, 127.0.0.0/8, ::1.
bool is_loopback_host(std::string_view host);
// True when `host` is an IPv4 address in dotted-quad form or an IPv6 address.
bool is_ip_literal(std::string_view host);

// Ok when a request with this Host header (null: none) may be served; otherwise the 4xx status
// and a message naming the host and what is allowed.
struct GuardError {
  int status = 403;
  std::string message;
};
std::optional<GuardError> check_host(const GuardOptions& options, const std::string* host_header,
                                     std::string_view http_version);

// What to do with a request's Origin header.
enum class OriginVerdict {
  kNoOrigin,    // not a browser's cross-origin request: nothing to add
  kSameOrigin,  // the page came from this server (the web UI)
  kAllowed,     // listed by --cors-origin: add the CORS headers
  kRefused,     // 403
};
// `host_header` is the request's Host (already checked).
OriginVerdict check_origin(const GuardOptions& options, const std::string* origin, std::string_view host_header);
// The Access-Control-Allow-Origin value for an allowed origin ("*" when --cors-origin "*").
std::string allow_origin_value(const GuardOptions& options, const std::string& origin);

// True for "application/json" with optional parameters, any case ("Application/JSON; charset=utf-8").
bool is_json_content_type(std::string_view content_type);

}  // namespace sniper::server
