// SPDX-License-Identifier: MIT
// GgufValue builders and rendering, GgufTensorInfo helpers and GgufFile's typed getters.
// Invariant (canonical value form, shared by the builders and the parser): unsigned integers
// and bools live in u64 and are mirrored into i64 when they fit; signed integers live in i64
// and are mirrored into u64 when non-negative; f32 values are stored as the double of the float.
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "base/check.h"
#include "gguf/reader.h"

namespace sniper {

namespace {

bool is_unsigned_type(GgufValueType t) {
  return t == GgufValueType::kUint8 || t == GgufValueType::kUint16 || t == GgufValueType::kUint32 ||
         t == GgufValueType::kUint64;
}

bool is_signed_type(GgufValueType t) {
  return t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
         t == GgufValueType::kInt64;
}

bool is_float_type(GgufValueType t) { return t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64; }

uint64_t unsigned_max(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8: return UINT8_MAX;
    case GgufValueType::kUint16: return UINT16_MAX;
    case GgufValueType::kUint32: return UINT32_MAX;
    default: return UINT64_MAX;
  }
}

std::pair<int64_t, int64_t> signed_range(GgufValueType t) {
  switch (t) {
    case GgufValueType::kInt8: return {INT8_MIN, INT8_MAX};
    case GgufValueType::kInt16: return {INT16_MIN, INT16_MAX};
    case GgufValueType::kInt32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}

// Whether v fits an item of an integer (or bool) array of element type t.
bool int_item_fits(GgufValueType t, int64_t v) {
  if (t == GgufValueType::kBool) return v == 0 || v == 1;
  if (is_unsigned_type(t)) return v >= 0 && static_cast<uint64_t>(v) <= unsigned_max(t);
  auto [lo, hi] = signed_range(t);
  return v >= lo && v <= hi;
}

const char* type_name_or_unknown(GgufValueType t) {
  const char* name = gguf_value_type_name(t);
  return name != nullptr ? name : "unknown";
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string display_string(const std::string& s) {
  constexpr size_t kMaxChars = 64;
  std::string out = "\"";
  size_t n = 0;
  for (char c : s) {
    if (n++ == kMaxChars) {
      out += "...";
      break;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string format_key(std::string_view key) { return std::string(key); }

}  // namespace

GgufValue GgufValue::make_uint(GgufValueType type, uint64_t v) {
  CHECK(is_unsigned_type(type), "make_uint with type %s", type_name_or_unknown(type));
  CHECK(v <= unsigned_max(type), "%" PRIu64 " does not fit %s", v, type_name_or_unknown(type));
  GgufValue out;
  out.type = type;
  out.u64 = v;
  if (v <= static_cast<uint64_t>(INT64_MAX)) out.i64 = static_cast<int64_t>(v);
  return out;
}

GgufValue GgufValue::make_int(GgufValueType type, int64_t v) {
  CHECK(is_signed_type(type), "make_int with type %s", type_name_or_unknown(type));
  auto [lo, hi] = signed_range(type);
  CHECK(v >= lo && v <= hi, "%" PRId64 " does not fit %s", v, type_name_or_unknown(type));
  GgufValue out;
  out.type = type;
  out.i64 = v;
  if (v >= 0) out.u64 = static_cast<uint64_t>(v);
  return out;
}

GgufValue GgufValue::make_float(GgufValueType type, double v) {
  CHECK(is_float_type(type), "make_float with type %s", type_name_or_unknown(type));
  GgufValue out;
  out.type = type;
  out.f64 = type == GgufValueType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
  return out;
}

GgufValue GgufValue::make_bool(bool v) {
  GgufValue out;
  out.type = GgufValueType::kBool;
  out.u64 = v ? 1 : 0;
  out.i64 = v ? 1 : 0;
  return out;
}

GgufValue GgufValue::make_string(std::string v) {
  GgufValue out;
  out.type = GgufValueType::kString;
  out.str = std::move(v);
  return out;
}

GgufValue GgufValue::make_string_array(std::vector<std::string> items) {
  GgufValue out;
  out.type = GgufValueType::kArray;
  out.elem_type = GgufValueType::kString;
  out.arr_str = std::move(items);
  return out;
}

GgufValue GgufValue::make_int_array(GgufValueType elem_type, std::vector<int64_t> items) {
  CHECK(is_unsigned_type(elem_type) || is_signed_type(elem_type) || elem_type == GgufValueType::kBool,
        "make_int_array with element type %s", type_name_or_unknown(elem_type));
  for (int64_t v : items) {
    CHECK(int_item_fits(elem_type, v), "%" PRId64 " does not fit %s", v, type_name_or_unknown(elem_type));
  }
  GgufValue out;
  out.type = GgufValueType::kArray;
  out.elem_type = elem_type;
  out.arr_int = std::move(items);
  return out;
}

GgufValue GgufValue::make_float_array(GgufValueType elem_type, std::vector<double> items) {
  CHECK(is_float_type(elem_type), "make_float_array with element type %s", type_name_or_unknown(elem_type));
  if (elem_type == GgufValueType::kFloat32) {
    for (double& v : items) v = static_cast<double>(static_cast<float>(v));
  }
  GgufValue out;
  out.type = GgufValueType::kArray;
  out.elem_type = elem_type;
  out.arr_float = std::move(items);
  return out;
}

GgufValue GgufValue::make_nested_array(std::vector<GgufValue> items) {
  for (const GgufValue& v : items) CHECK(v.type == GgufValueType::kArray, "nested array item is not an array");
  GgufValue out;
  out.type = GgufValueType::kArray;
  out.elem_type = GgufValueType::kArray;
  out.arr_nested = std::move(items);
  return out;
}

bool GgufValue::is_integer() const { return is_unsigned_type(type) || is_signed_type(type); }

size_t GgufValue::array_size() const {
  if (type != GgufValueType::kArray) return 0;
  switch (elem_type) {
    case GgufValueType::kString: return arr_str.size();
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64: return arr_float.size();
    case GgufValueType::kArray: return arr_nested.size();
    default: return arr_int.size();
  }
}

std::string GgufValue::to_display_string(size_t max_items) const {
  if (is_unsigned_type(type)) return std::to_string(u64);
  if (is_signed_type(type)) return std::to_string(i64);
  if (is_float_type(type)) return format_double(f64);
  if (type == GgufValueType::kBool) return u64 != 0 ? "true" : "false";
  if (type == GgufValueType::kString) return display_string(str);
  if (type != GgufValueType::kArray) return "<unknown>";
  size_t n = array_size();
  if (n > max_items) {
    char buf[64];
    if (elem_type == GgufValueType::kString) {
      std::snprintf(buf, sizeof(buf), "[%zu strings]", n);
    } else if (elem_type == GgufValueType::kArray) {
      std::snprintf(buf, sizeof(buf), "[%zu arrays]", n);
    } else {
      std::snprintf(buf, sizeof(buf), "[%zu %s values]", n, type_name_or_unknown(elem_type));
    }
    return buf;
  }
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    switch (elem_type) {
      case GgufValueType::kString: out += display_string(arr_str[i]); break;
      case GgufValueType::kFloat32:
      case GgufValueType::kFloat64: out += format_double(arr_float[i]); break;
      case GgufValueType::kArray: out += arr_nested[i].to_display_string(max_items); break;
      case GgufValueType::kBool: out += arr_int[i] != 0 ? "true" : "false"; break;
      default: out += std::to_string(arr_int[i]); break;
    }
  }
  return out + "]";
}

size_t GgufTensorInfo::row_bytes() const { return sniper::row_bytes(type, ne[0]); }

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::add_kv(std::string key, GgufValue value) {
  CHECK(kv_index_.find(key) == kv_index_.end(), "duplicate metadata key '%s'", key.c_str());
  kv_index_.emplace(key, kv_.size());
  kv_.emplace_back(std::move(key), std::move(value));
}

void GgufFile::add_tensor(GgufTensorInfo info) {
  CHECK(tensor_index_.find(info.name) == tensor_index_.end(), "duplicate tensor '%s'", info.name.c_str());
  tensor_index_.emplace(info.name, tensors_.size());
  tensors_.push_back(std::move(info));
}

namespace {

Error missing_key(std::string_view key) { return make_error("metadata key '%s' is missing", format_key(key).c_str()); }

Error wrong_type(std::string_view key, const GgufValue& v, const char* expected) {
  if (v.type == GgufValueType::kArray) {
    return make_error("metadata key '%s' has type array of %s, expected %s", format_key(key).c_str(),
                      type_name_or_unknown(v.elem_type), expected);
  }
  return make_error("metadata key '%s' has type %s, expected %s", format_key(key).c_str(), type_name_or_unknown(v.type),
                    expected);
}

Result<int64_t> as_int(std::string_view key, const GgufValue& v) {
  if (!v.is_integer()) return wrong_type(key, v, "an integer");
  if (v.type == GgufValueType::kUint64 && v.u64 > static_cast<uint64_t>(INT64_MAX)) {
    return make_error("metadata key '%s' is %" PRIu64 ", above the int64 maximum %" PRId64, format_key(key).c_str(),
                      v.u64, INT64_MAX);
  }
  return v.i64;
}

Result<double> as_float(std::string_view key, const GgufValue& v) {
  if (!is_float_type(v.type)) return wrong_type(key, v, "f32 or f64");
  return v.f64;
}

Result<bool> as_bool(std::string_view key, const GgufValue& v) {
  if (v.type != GgufValueType::kBool) return wrong_type(key, v, "bool");
  return v.u64 != 0;
}

Result<std::string> as_string(std::string_view key, const GgufValue& v) {
  if (v.type != GgufValueType::kString) return wrong_type(key, v, "string");
  return v.str;
}

}  // namespace

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  return as_int(key, *v);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  return as_float(key, *v);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  return as_bool(key, *v);
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  return as_string(key, *v);
}

Result<int64_t> GgufFile::get_int_or(std::string_view key, int64_t fallback) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fallback;
  return as_int(key, *v);
}

Result<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fallback;
  return as_float(key, *v);
}

Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fallback;
  return as_bool(key, *v);
}

Result<std::string> GgufFile::get_string_or(std::string_view key, std::string fallback) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return fallback;
  return as_string(key, *v);
}

Result<const std::vector<std::string>*> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  if (v->type != GgufValueType::kArray || v->elem_type != GgufValueType::kString) {
    return wrong_type(key, *v, "array of string");
  }
  return &v->arr_str;
}

Result<const std::vector<int64_t>*> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  bool ok = v->type == GgufValueType::kArray &&
            (is_unsigned_type(v->elem_type) || is_signed_type(v->elem_type) || v->elem_type == GgufValueType::kBool);
  if (!ok) return wrong_type(key, *v, "array of integer");
  return &v->arr_int;
}

Result<const std::vector<double>*> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  if (v->type != GgufValueType::kArray || !is_float_type(v->elem_type)) {
    return wrong_type(key, *v, "array of f32 or f64");
  }
  return &v->arr_float;
}

}  // namespace sniper
