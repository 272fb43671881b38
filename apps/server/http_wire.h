// SPDX-License-Identifier: MIT
// HTTP/1.1 on the wire, as pure functions over bytes (no sockets, so they are fuzzed and unit
// tested alone): the request head (request line + headers) parsed into an httplib::Request with
// limits on its size and header count, the body length a request announces, and the head of a
// response. Requests and responses use cpp-httplib's structs so the route handlers are the same
// as under httplib::Server; only the connection handling is ours (see http_listener.h for why).
// Decisions: request bodies need Content-Length (Transfer-Encoding on a request is answered 411,
// as few API clients send chunked bodies); the path is percent-decoded like httplib does ('+'
// stays '+'); the query string goes to Request::params. Thread-safe (no state).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <httplib.h>

namespace sniper::server {

struct WireLimits {
  size_t max_head_bytes = 16 * 1024;  // request line + headers + the blank line
  size_t max_headers = 100;
  size_t max_body_bytes = 4u << 20;
};

// The outcome of a parse: status 0 when fine, else the HTTP status to answer with and why.
struct WireError {
  int status = 0;
  std::string message;
  explicit operator bool() const { return status != 0; }
};

// Offset just past the "\r\n\r\n" (or "\n\n") that ends the head in `data`, or 0 while it is
// incomplete. Scans from `from` (bytes before it were scanned already; pass the previous size).
size_t find_head_end(std::string_view data, size_t from);

// Parses a complete head (through its blank line) into req: method, target, path, params,
// version, headers. Errors: 400 malformed, 414 target too long, 431 too many/large headers,
// 505 not HTTP/1.x.
WireError parse_request_head(std::string_view head, const WireLimits& limits, httplib::Request* req);

// The body length the request announces (0 without Content-Length). Errors: 400 for a malformed
// or repeated Content-Length, 411 for Transfer-Encoding, 413 past limits.max_body_bytes.
WireError request_body_length(const httplib::Request& req, const WireLimits& limits, size_t* length);

// True when the connection may serve another request after this one (HTTP/1.1 unless
// "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
bool wants_keep_alive(const httplib::Request& req);

// "HTTP/1.1 200 OK\r\n" + res.headers + Content-Length (or Transfer-Encoding: chunked when
// chunked) + Connection + "\r\n". Header values with CR or LF are dropped (no injection).
std::string response_head(const httplib::Response& res, bool chunked, bool keep_alive);

// The reason phrase for a status ("Service Unavailable"), "Unknown" if we never send it.
const char* status_reason(int status);

// A whole response: status, a JSON body, Connection: close. For answers sent before any
// routing (503 at admission, 408 after a header timeout, 4xx from the parser).
std::string simple_json_response(int status, const std::string& json_body);

}  // namespace sniper::server
