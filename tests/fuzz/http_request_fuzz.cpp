// SPDX-License-Identifier: MIT
// libFuzzer entry point for the server's HTTP/1.1 request parsing (http_wire.h), the bytes
// every connection starts with: any input must parse or be refused with a 4xx/5xx status, and
// a parsed head must be internally consistent; then the request guard's Host, Origin and
// Content-Type checks on its headers. Build with Clang (see CMakeLists.txt); run
//   ./http_request_fuzz -max_len=65536 corpus/http_request_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/http_wire.h"
#include "server/request_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sniper::server;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  WireLimits limits;
  limits.max_head_bytes = 4096;
  limits.max_headers = 32;
  limits.max_body_bytes = 1024;
  // The head terminator is found the same way whether the bytes arrive at once or in two reads.
  const size_t end = find_head_end(bytes, 0);
  if (end > size) std::abort();
  if (size > 1 && find_head_end(bytes, size / 2) != 0 && end == 0) std::abort();
  const std::string_view head = end == 0 ? bytes : bytes.substr(0, end);
  httplib::Request req;
  const WireError e = parse_request_head(head, limits, &req);
  if (e) {
    if (e.status < 400 || e.status > 599 || e.message.empty()) std::abort();
    return 0;
  }
  if (req.path.empty() || req.path.size() > head.size() || req.headers.size() > limits.max_headers) std::abort();
  // The request guard (request_guard.h) on whatever Host, Origin and Content-Type came in:
  // a verdict for every value, errors that are 4xx with a message, hosts it accepts that parse.
  GuardOptions guard;
  guard.cors_origins = {"https://app.example.com"};
  guard.allowed_hosts = {".example.com"};
  if (!normalise_guard_options(&guard).ok()) std::abort();
  const std::string host = req.get_header_value("Host");
  const auto host_error = check_host(guard, req.has_header("Host") ? &host : nullptr, req.version);
  if (host_error && (host_error->status < 400 || host_error->status > 499 || host_error->message.empty())) std::abort();
  if (!host_error && req.has_header("Host") && host_of(host).empty()) std::abort();
  const std::string origin = req.get_header_value("Origin");
  (void)check_origin(guard, req.has_header("Origin") ? &origin : nullptr, host);
  (void)is_json_content_type(req.get_header_value("Content-Type"));
  size_t body = 0;
  const WireError be = request_body_length(req, limits, &body);
  if (be ? (be.status < 400 || be.status > 599) : body > limits.max_body_bytes) std::abort();
  (void)wants_keep_alive(req);
  httplib::Response res;
  res.status = 200;
  res.set_header(req.path.substr(0, 16), req.target);  // arbitrary names/values never break the head
  const std::string out = response_head(res, (size & 1) != 0, (size & 2) != 0);
  if (out.find("\r\n\r\n") != out.size() - 4) std::abort();
  return 0;
}
