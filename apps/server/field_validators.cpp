// SPDX-License-Identifier: MIT
#include "server/field_validators.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "server/request_body.h"

namespace sniper::server {

namespace {

// A bound for messages: integers without a fraction, others as %g.
std::string bound(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// An integer value of any JSON integer or integral float: sign and magnitude (so that values
// past INT64_MAX keep their size in messages and range checks).
struct IntValue {
  bool negative = false;
  uint64_t magnitude = 0;
  bool fits_int64() const {
    return negative ? magnitude <= uint64_t{1} << 63 : magnitude <= static_cast<uint64_t>(INT64_MAX);
  }
  int64_t as_int64() const {  // precondition: fits_int64()
    return negative ? static_cast<int64_t>(~magnitude + 1) : static_cast<int64_t>(magnitude);
  }
  std::string text() const { return (negative ? "-" : "") + std::to_string(magnitude); }
};

// Integral floats below 2^53 in magnitude count as integers: JSON has one number type, and
// some clients write 5 as 5.0.
constexpr double kMaxExactFloat = 9007199254740992.0;  // 2^53

bool integer_value(const Json& j, IntValue* out) {
  if (j.is_number_unsigned()) {
    *out = IntValue{false, j.get<uint64_t>()};
    return true;
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    *out = v < 0 ? IntValue{true, ~static_cast<uint64_t>(v) + 1} : IntValue{false, static_cast<uint64_t>(v)};
    return true;
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > kMaxExactFloat) return false;
    *out = IntValue{d < 0, static_cast<uint64_t>(std::fabs(d))};
    return true;
  }
  return false;
}

}  // namespace

const char* json_kind(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

std::string describe_json(const Json& j) {
  constexpr size_t kMax = 40;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s.size() > kMax) {
      size_t cut = kMax;
      while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
      s = s.substr(0, cut) + "...";
    }
    return "'" + s + "'";
  }
  std::string s = dump_json(j);
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

FieldReader::FieldReader(const Json& obj, std::string path) : obj_(&obj), path_(std::move(path)) {}

const Json* FieldReader::get(std::string_view key) const {
  auto it = obj_->find(std::string(key));
  if (it == obj_->end() || it->is_null()) return nullptr;
  return &*it;
}

std::string FieldReader::path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

ApiError FieldReader::error(std::string_view key, const std::string& message) const {
  return bad_request(message, path(key));
}

ApiError FieldReader::type_error(std::string_view key, const char* expected) const {
  const Json* v = get(key);
  std::string got = v == nullptr ? "null" : json_kind(*v);
  if (v != nullptr && v->is_number()) got = dump_json(*v);  // "got 1.5" says more than "got a number"
  return error(key, path(key) + " must be " + expected + ", got " + got);
}

std::optional<ApiError> FieldReader::number(std::string_view key, NumberRange r, double* out) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return error(key, path(key) + " must be a number, got " + json_kind(*v));
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < r.lo || d > r.hi || (r.open_lo && d == r.lo)) {
    return error(key, path(key) + " is " + dump_json(*v) + " but must be in " + (r.open_lo ? "(" : "[") + bound(r.lo) +
                          ", " + bound(r.hi) + "]");
  }
  *out = d;
  return std::nullopt;
}

std::optional<ApiError> FieldReader::number(std::string_view key, NumberRange r, float* out) const {
  double d = *out;
  SNIPER_TRY_API(number(key, r, &d));
  *out = static_cast<float>(d);
  return std::nullopt;
}

std::optional<ApiError> FieldReader::integer(std::string_view key, IntegerRange r, int64_t* out) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  IntValue iv;
  if (!integer_value(*v, &iv)) return type_error(key, "an integer");
  if (!iv.fits_int64() || iv.as_int64() < r.lo || iv.as_int64() > r.hi) {
    return error(key, path(key) + " is " + iv.text() + " but must be in [" + std::to_string(r.lo) + ", " +
                          std::to_string(r.hi) + "]");
  }
  *out = iv.as_int64();
  return std::nullopt;
}

std::optional<ApiError> FieldReader::seed(std::string_view key, uint64_t* out) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  IntValue iv;
  if (!integer_value(*v, &iv)) return type_error(key, "an integer");
  if (iv.negative && iv.magnitude > uint64_t{1} << 63) {
    return error(key, path(key) + " is " + iv.text() + " but must be in [-9223372036854775808, 18446744073709551615]");
  }
  *out = iv.negative ? ~iv.magnitude + 1 : iv.magnitude;
  return std::nullopt;
}

std::optional<ApiError> FieldReader::boolean(std::string_view key, bool* out) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return type_error(key, "a boolean");
  *out = v->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> FieldReader::string(std::string_view key, std::string* out, bool allow_empty,
                                            size_t max_bytes) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return type_error(key, "a string");
  const std::string& s = v->get_ref<const std::string&>();
  if (s.empty() && !allow_empty) return error(key, path(key) + " must not be empty");
  if (s.size() > max_bytes) {
    return error(key, path(key) + " is " + std::to_string(s.size()) + " bytes long but at most " +
                          std::to_string(max_bytes) + " are allowed");
  }
  *out = s;
  return std::nullopt;
}

std::optional<ApiError> FieldReader::one_of(std::string_view key, std::initializer_list<const char*> allowed,
                                            std::string* out) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  if (!v->is_string()) return type_error(key, ("one of the strings " + list).c_str());
  const std::string& s = v->get_ref<const std::string&>();
  for (const char* a : allowed) {
    if (s == a) {
      *out = s;
      return std::nullopt;
    }
  }
  return error(key, path(key) + " is " + describe_json(*v) + " but must be one of " + list);
}

std::optional<ApiError> FieldReader::string_list(std::string_view key, const StringListRule& rule,
                                                 std::vector<std::string>* out) const {
  const Json* v = get(key);
  if (v == nullptr) return std::nullopt;
  const char* expected = rule.allow_single ? "a string or an array of strings" : "an array of strings";
  std::vector<const Json*> items;
  if (v->is_string() && rule.allow_single) {
    items.push_back(v);
  } else if (v->is_array()) {
    if (v->size() > rule.max_count) {
      return error(key, path(key) + " has " + std::to_string(v->size()) + " entries but at most " +
                            std::to_string(rule.max_count) + " are allowed");
    }
    for (const Json& x : *v) items.push_back(&x);
  } else {
    return type_error(key, expected);
  }
  std::vector<std::string> values;
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& x = *items[i];
    const std::string at = v->is_array() ? path(key) + "[" + std::to_string(i) + "]" : path(key);
    if (!x.is_string()) return error(key, at + " must be a string, got " + json_kind(x));
    const std::string& s = x.get_ref<const std::string&>();
    if (s.empty() && !rule.allow_empty) return error(key, at + " must not be empty");
    if (s.size() > rule.max_bytes) {
      return error(key, at + " is " + std::to_string(s.size()) + " bytes long but at most " +
                            std::to_string(rule.max_bytes) + " are allowed");
    }
    values.push_back(s);
  }
  for (std::string& s : values) out->push_back(std::move(s));
  return std::nullopt;
}

std::optional<ApiError> FieldReader::object(std::string_view key, const Json** out) const {
  const Json* v = get(key);
  *out = nullptr;
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) return type_error(key, "an object");
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> FieldReader::array(std::string_view key, size_t max_count, const Json** out) const {
  const Json* v = get(key);
  *out = nullptr;
  if (v == nullptr) return std::nullopt;
  if (!v->is_array()) return type_error(key, "an array");
  if (v->size() > max_count) {
    return error(key, path(key) + " has " + std::to_string(v->size()) + " entries but at most " +
                          std::to_string(max_count) + " are allowed");
  }
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> FieldReader::require(std::string_view key) const {
  if (get(key) == nullptr) return error(key, path(key) + " is required");
  return std::nullopt;
}

}  // namespace sniper::server
