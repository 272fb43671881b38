// SPDX-License-Identifier: MIT
// GGUF reader: parses the header, metadata and tensor table of a GGUF file and validates every
// count, length, offset and shape against the file size before use. Tensor data is not read:
// callers get byte ranges (file_offset, nbytes) and fetch them the way their residency wants.
// A bad file yields an Error naming the field, the value and the allowed range; never a crash,
// a hang or an allocation larger than the file justifies.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "gguf/format.h"

namespace sniper {

// One metadata value. Scalars live in the matching field; arrays keep their element type and
// their items in exactly one of the arr_* vectors (nested arrays in arr_nested).
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  uint64_t u64 = 0;                                 // unsigned integer types and bool (0/1)
  int64_t i64 = 0;                                  // signed integer types; unsigned ones that fit are mirrored here
  double f64 = 0;                                   // float32 / float64
  std::string str;                                  // string
  GgufValueType elem_type = GgufValueType::kUint8;  // arrays only
  std::vector<std::string> arr_str;                 // array of string
  std::vector<int64_t> arr_int;       // array of integer or bool (u64 values above INT64_MAX are an error)
  std::vector<double> arr_float;      // array of float32 / float64
  std::vector<GgufValue> arr_nested;  // array of array

  // Builders that produce the canonical form the reader produces (so values compare equal
  // after a round trip). Each CHECKs that `type` suits it and the value fits the type.
  static GgufValue make_uint(GgufValueType type, uint64_t v);  // u8, u16, u32, u64
  static GgufValue make_int(GgufValueType type, int64_t v);    // i8, i16, i32, i64
  static GgufValue make_float(GgufValueType type, double v);   // f32 (rounded to float), f64
  static GgufValue make_bool(bool v);
  static GgufValue make_string(std::string v);
  static GgufValue make_string_array(std::vector<std::string> items);
  static GgufValue make_int_array(GgufValueType elem_type, std::vector<int64_t> items);  // integer or bool items
  static GgufValue make_float_array(GgufValueType elem_type, std::vector<double> items);
  static GgufValue make_nested_array(std::vector<GgufValue> items);  // every item is an array

  bool operator==(const GgufValue& other) const = default;

  bool is_integer() const;
  // Number of array items (0 for scalars).
  size_t array_size() const;
  // A short human-readable rendering for `sniper inspect` ("[512 strings]" for long arrays).
  std::string to_display_string(size_t max_items = 8) const;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  int n_dims = 0;
  std::array<int64_t, kGgufMaxDims> ne{1, 1, 1, 1};  // ggml order, unused dims are 1
  uint64_t offset = 0;                               // relative to the start of the data section (of its part)
  uint64_t file_offset = 0;  // absolute: data_offset + offset; in a split model the part is encoded
                             // in the high bits (base/split_offset.h), 0 for an unsplit file
  uint64_t nbytes = 0;

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  // Bytes of one ne[0]-long row.
  size_t row_bytes() const;
};

// One file holding tensor data: the file itself, or one part of a split model.
struct GgufPart {
  std::string path;
  uint64_t file_size = 0;
  uint64_t data_offset = 0;
};

class GgufFile {
 public:
  uint32_t version = 0;
  uint64_t alignment = kGgufDefaultAlignment;
  uint64_t data_offset = 0;  // absolute file offset of the data section
  uint64_t file_size = 0;    // of `path` (the first part of a split model)
  std::string path;
  // The files the tensor data lives in, in part order: {path} for gguf_open, every part for a
  // split model opened with gguf_open_model (gguf/split.h). A tensor's part is
  // part_of(file_offset).
  std::vector<GgufPart> parts;

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: an Error if the key is missing or has another type. Integers accept every
  // integer type whose value fits int64; floats accept float32 and float64.
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  // The *_or variants return `fallback` when the key is absent, but still fail on a wrong type.
  Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;
  // Arrays: the pointer stays valid as long as this GgufFile lives.
  Result<const std::vector<std::string>*> get_string_array(std::string_view key) const;
  Result<const std::vector<int64_t>*> get_int_array(std::string_view key) const;
  Result<const std::vector<double>*> get_float_array(std::string_view key) const;

  // Builders used by the parser.
  void add_kv(std::string key, GgufValue value);
  void add_tensor(GgufTensorInfo info);

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Opens and parses `path` (header, metadata, tensor table; no tensor data). Thread-safe.
Result<GgufFile> gguf_open(const std::string& path);

// Parses a GGUF image held in memory; `size` is the whole file's size (tensor data included).
// Used by the fuzzer and tests. Thread-safe.
Result<GgufFile> gguf_parse(const uint8_t* data, size_t size);

}  // namespace sniper
