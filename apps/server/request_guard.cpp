// SPDX-License-Identifier: MIT
#include "server/request_guard.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace sniper::server {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_ipv4(std::string_view host) {
  in_addr a{};
  return host.size() < 16 && inet_pton(AF_INET, std::string(host).c_str(), &a) == 1;
}

bool is_ipv6(std::string_view host) {
  in6_addr a{};
  return host.size() < 64 && inet_pton(AF_INET6, std::string(host).c_str(), &a) == 1;
}

// A host name's characters (RFC 1123 labels; "_" tolerated), or an IP literal.
bool valid_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == ':';
  });
}

bool wildcard_bind(std::string_view bound) { return bound.empty() || bound == "0.0.0.0" || bound == "::"; }

}  // namespace

std::string host_of(std::string_view value) {
  value = trim(value);
  std::string_view host;
  if (!value.empty() && value.front() == '[') {  // [v6]:port
    const size_t close = value.find(']');
    if (close == std::string_view::npos) return "";
    host = value.substr(1, close - 1);
    std::string_view rest = value.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return "";
    if (!is_ipv6(host)) return "";
  } else {
    const size_t colon = value.find(':');
    if (colon != std::string_view::npos && value.find(':', colon + 1) != std::string_view::npos) return "";  // bare v6
    host = value.substr(0, colon);
    if (colon != std::string_view::npos) {
      const std::string_view port = value.substr(colon + 1);
      if (port.empty() || port.size() > 5 ||
          !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return "";
      }
    }
    if (host.find(':') != std::string_view::npos || !valid_host_name(host)) return "";
  }
  return lower(host);
}

bool is_ip_literal(std::string_view host) { return is_ipv4(host) || is_ipv6(host); }

bool is_loopback_host(std::string_view host) {
  const std::string h = lower(host);
  if (h == "localhost" || h.ends_with(".localhost")) return true;
  in_addr a4{};
  if (h.size() < 16 && inet_pton(AF_INET, h.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (h.size() < 64 && inet_pton(AF_INET6, h.c_str(), &a6) == 1) {
    static const in6_addr kLoop = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(a6.s6_addr), std::end(a6.s6_addr), std::begin(kLoop.s6_addr));
  }
  return false;
}

Status normalise_guard_options(GuardOptions* o) {
  for (std::string& h : o->allowed_hosts) {
    h = lower(trim(h));
    const std::string_view name = h.starts_with(".") ? std::string_view(h).substr(1) : std::string_view(h);
    if (h != "*" && (!valid_host_name(name) || (name.find(':') != std::string_view::npos && !is_ipv6(name)))) {
      return make_error(
          "--allowed-hosts has '%s' but each entry must be a host name or an IP address without a port, '.domain' (the "
          "domain and its subdomains) or '*'",
          h.c_str());
    }
  }
  for (std::string& origin : o->cors_origins) {
    origin = lower(trim(origin));
    if (origin == "*" || origin == "null") continue;
    const size_t sep = origin.find("://");
    const std::string scheme = sep == std::string::npos ? "" : origin.substr(0, sep);
    const std::string rest = sep == std::string::npos ? "" : origin.substr(sep + 3);
    if ((scheme != "http" && scheme != "https") || host_of(rest).empty() || rest.find('/') != std::string::npos) {
      return make_error(
          "--cors-origin is '%s' but must be an origin (scheme://host[:port], e.g. https://app.example.com, no path), "
          "'null' or '*'",
          origin.c_str());
    }
  }
  return ok_status();
}

std::optional<GuardError> check_host(const GuardOptions& o, const std::string* header, std::string_view version) {
  if (header == nullptr) {
    if (version == "HTTP/1.0") return std::nullopt;  // HTTP/1.0 clients may omit it; browsers never do
    return GuardError{400, "the request has no Host header (HTTP/1.1 requires one)"};
  }
  const std::string host = host_of(*header);
  if (host.empty()) return GuardError{400, "the Host header '" + header->substr(0, 100) + "' is malformed"};
  for (const std::string& allowed : o.allowed_hosts) {
    if (allowed == "*" || host == allowed) return std::nullopt;
    if (allowed.starts_with(".") && (host == allowed.substr(1) || host.ends_with(allowed))) return std::nullopt;
  }
  if (is_loopback_host(host)) return std::nullopt;
  const std::string bound = lower(host_of(o.bound_host).empty() ? o.bound_host : host_of(o.bound_host));
  if (host == bound) return std::nullopt;
  // Bound to every interface: any address of this machine may be asked for, and an address
  // (unlike a name) cannot be rebound by DNS.
  if (wildcard_bind(bound) && is_ip_literal(host)) return std::nullopt;
  return GuardError{403, "the Host header names '" + host + "', which is not this server's (it answers to " +
                             (wildcard_bind(bound) ? std::string("its IP addresses") : "'" + bound + "'") +
                             ", localhost and the names given with --allowed-hosts); start it with --allowed-hosts " +
                             host + " to serve that name"};
}

OriginVerdict check_origin(const GuardOptions& o, const std::string* origin_header, std::string_view host_header) {
  if (origin_header == nullptr) return OriginVerdict::kNoOrigin;
  const std::string origin = lower(trim(*origin_header));
  const std::string host = lower(trim(host_header));
  if (origin == "http://" + host || origin == "https://" + host) return OriginVerdict::kSameOrigin;
  for (const std::string& allowed : o.cors_origins) {
    if (allowed == "*" || allowed == origin) return OriginVerdict::kAllowed;
  }
  return OriginVerdict::kRefused;
}

std::string allow_origin_value(const GuardOptions& o, const std::string& origin) {
  for (const std::string& allowed : o.cors_origins) {
    if (allowed == lower(trim(origin))) return std::string(trim(origin));
  }
  return "*";
}

bool is_json_content_type(std::string_view value) {
  const std::string_view media = trim(value.substr(0, value.find(';')));
  return lower(media) == "application/json";
}

}  // namespace sniper::server
