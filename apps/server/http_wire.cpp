// SPDX-License-Identifier: MIT
#include "server/http_wire.h"

#include <cstdint>

namespace sniper::server {

namespace {

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u <= 32 || u >= 127) return false;
  switch (c) {
    case '(':
    case ')':
    case '<':
    case '>':
    case '@':
    case ',':
    case ';':
    case ':':
    case '\\':
    case '"':
    case '/':
    case '[':
    case ']':
    case '?':
    case '=':
    case '{':
    case '}': return false;
    default: return true;
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX -> byte; a '%' not followed by two hex digits stays as it is.
std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_is_space && s[i] == '+') ? ' ' : s[i];
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// True when the comma-separated header value holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

void parse_query(std::string_view q, httplib::Params* params) {
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      params->emplace(percent_decode(pair.substr(0, eq), true),
                      eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true));
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
}

WireError error(int status, std::string message) { return WireError{status, std::move(message)}; }

}  // namespace

size_t find_head_end(std::string_view data, size_t from) {
  // Back up so a terminator split across two reads is found.
  size_t i = from > 3 ? from - 3 : 0;
  for (; i < data.size(); ++i) {
    if (data[i] != '\n') continue;
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return 0;
}

WireError parse_request_head(std::string_view head, const WireLimits& limits, httplib::Request* req) {
  if (head.size() > limits.max_head_bytes) {
    return error(431, "the request head is larger than " + std::to_string(limits.max_head_bytes) + " bytes");
  }
  auto next_line = [&head](std::string_view* line) {
    const size_t nl = head.find('\n');
    if (nl == std::string_view::npos) return false;
    *line = head.substr(0, nl);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    head.remove_prefix(nl + 1);
    return true;
  };
  std::string_view line;
  if (!next_line(&line)) return error(400, "the request line is incomplete");
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return error(400, "the request line must be 'METHOD TARGET HTTP/1.x'");
  }
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (method.empty()) return error(400, "the request method is empty");
  for (char c : method) {
    if (!is_token_char(c)) return error(400, "the request method has an invalid character");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return error(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  if (target.empty() || target.front() != '/') return error(400, "the request target must start with '/'");
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 32 || u == 127) return error(400, "the request target has a control character or a space");
  }
  req->method = std::string(method);
  req->target = std::string(target);
  req->version = std::string(version);
  const size_t q = target.find('?');
  req->path = percent_decode(target.substr(0, q), false);
  if (q != std::string_view::npos) parse_query(target.substr(q + 1), &req->params);

  size_t n_headers = 0;
  while (next_line(&line)) {
    if (line.empty()) return {};  // the blank line ends the head
    if (line.front() == ' ' || line.front() == '\t') return error(400, "folded header lines are not supported");
    if (++n_headers > limits.max_headers) {
      return error(431, "the request has more than " + std::to_string(limits.max_headers) + " headers");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return error(400, "a header line has no 'name:'");
    const std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!is_token_char(c)) return error(400, "a header name has an invalid character");
    }
    const std::string_view value = trim(line.substr(colon + 1));
    for (char c : value) {
      if (c == '\0' || c == '\r' || c == '\n') return error(400, "a header value has a control character");
    }
    req->headers.emplace(std::string(name), std::string(value));
  }
  return error(400, "the request head does not end with a blank line");
}

WireError request_body_length(const httplib::Request& req, const WireLimits& limits, size_t* length) {
  *length = 0;
  if (req.has_header("Transfer-Encoding")) {
    return error(411, "request bodies must be sent with Content-Length (Transfer-Encoding is not supported)");
  }
  const size_t n = req.get_header_value_count("Content-Length");
  if (n == 0) return {};
  if (n > 1) return error(400, "Content-Length is repeated");
  const std::string v = req.get_header_value("Content-Length");
  if (v.empty() || v.size() > 19) return error(400, "Content-Length '" + v.substr(0, 32) + "' is not a byte count");
  uint64_t bytes = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return error(400, "Content-Length '" + v + "' is not a byte count");
    bytes = bytes * 10 + static_cast<uint64_t>(c - '0');
  }
  if (bytes > limits.max_body_bytes) {
    return error(413, "the request body has " + std::to_string(bytes) + " bytes but at most " +
                          std::to_string(limits.max_body_bytes) + " are accepted (--max-body)");
  }
  *length = static_cast<size_t>(bytes);
  return {};
}

bool wants_keep_alive(const httplib::Request& req) {
  const std::string c = req.get_header_value("Connection");
  if (req.version == "HTTP/1.0") return has_token(c, "keep-alive");
  return !has_token(c, "close");
}

const char* status_reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string response_head(const httplib::Response& res, bool chunked, bool keep_alive) {
  const int status = res.status < 100 || res.status > 999 ? 500 : res.status;
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + status_reason(status) + "\r\n";
  for (const auto& [name, value] : res.headers) {
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") || iequals(name, "Connection")) continue;
    if (name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) continue;
    h += name + ": " + value + "\r\n";
  }
  if (chunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else {
    h += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

std::string simple_json_response(int status, const std::string& json_body) {
  httplib::Response res;
  res.status = status;
  res.set_header("Content-Type", "application/json");
  res.body = json_body;
  return response_head(res, /*chunked=*/false, /*keep_alive=*/false) + json_body;
}

}  // namespace sniper::server
