// SPDX-License-Identifier: MIT
#include "server/request_body.h"

#include <cstdint>

#include "server/field_validators.h"

namespace sniper::server {

namespace {

// Walks every string (keys too) and checks UTF-8. The JSON parser already rejects invalid
// UTF-8; this keeps the guarantee independent of the parser's settings.
bool strings_valid(const Json& j) {
  if (j.is_string()) return is_valid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    for (const Json& e : j) {
      if (!strings_valid(e)) return false;
    }
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!is_valid_utf8(it.key()) || !strings_valid(it.value())) return false;
    }
  }
  return true;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return false;
    }
    i += len;
  }
  return true;
}

std::optional<ApiError> parse_body(std::string_view body, Json* out) {
  if (body.empty()) return bad_request("the request body is empty; expected a JSON object");
  if (!is_valid_utf8(body)) return bad_request("the request body is not valid UTF-8");
  // Bounded while parsing: the DOM is at most kRequestJsonLimits.max_depth deep, so the
  // recursive walks below (strings_valid, copies, dump, the template's from_json) are bounded.
  Json j;
  const std::string why = parse_json_bounded(body, &j, kRequestJsonLimits);
  if (!why.empty()) return bad_request("the request body is not valid JSON: " + why);
  if (!j.is_object()) return bad_request(std::string("the request body must be a JSON object, got ") + json_kind(j));
  if (!strings_valid(j)) return bad_request("the request contains a string that is not valid UTF-8");
  *out = std::move(j);
  return std::nullopt;
}

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace sniper::server
