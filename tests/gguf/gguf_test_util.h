// SPDX-License-Identifier: MIT
// Test helpers for the GGUF tests: a sample image built with GgufWriter (every value type,
// several tensor types, deterministic data), and a FieldMap that walks a *valid* image and
// records where each count, length, type and offset field sits, so tests can corrupt exactly
// one field. The walker is independent of the reader (it re-derives the layout from format.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace sniper::test {

// Deterministic tensor bytes: a function of the tensor's seed and the byte index.
inline uint8_t pattern_byte(uint32_t seed, size_t i) {
  return static_cast<uint8_t>((i * 131u + seed * 7919u + (i >> 8)) & 0xFF);
}

inline GgufWriter::FillFn pattern_fill(uint32_t seed) {
  return [seed](uint8_t* dst, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = pattern_byte(seed, i);
  };
}

// A small writer exercising every metadata type and a few tensor types. Two keys and two
// tensor names have equal lengths so tests can patch one into the other.
inline GgufWriter make_sample_writer(uint32_t alignment = 32, bool set_alignment_key = true) {
  using T = GgufValueType;
  GgufWriter w;
  if (set_alignment_key) w.set_alignment(alignment);
  w.set_string("general.architecture", "llama");
  w.set_value("dup.key1", GgufValue::make_uint(T::kUint8, 7));
  w.set_value("dup.key2", GgufValue::make_int(T::kInt8, -7));
  w.set_value("v.u16", GgufValue::make_uint(T::kUint16, 65535));
  w.set_value("v.i16", GgufValue::make_int(T::kInt16, -32768));
  w.set_u32("v.u32", 4000000000u);
  w.set_i32("v.i32", -123456);
  w.set_f32("v.f32", 0.125f);
  w.set_bool("v.bool", true);
  w.set_u64("v.u64", 1234567890123ull);
  w.set_value("v.i64", GgufValue::make_int(T::kInt64, -9876543210ll));
  w.set_value("v.f64", GgufValue::make_float(T::kFloat64, 2.5e-300));
  w.set_string_array("v.strs", {"a", "", "ccc"});
  w.set_i32_array("v.i32s", {1, -2, 3});
  w.set_value("v.u64s", GgufValue::make_int_array(T::kUint64, {0, 5, INT64_MAX}));
  w.set_f32_array("v.f32s", {1.5f, -2.0f});
  w.set_value("v.nested", GgufValue::make_nested_array({GgufValue::make_string_array({"x", "yz"}),
                                                        GgufValue::make_int_array(T::kUint8, {1, 2, 3}),
                                                        GgufValue::make_nested_array({})}));
  w.add_tensor("blk.0.a", GgmlType::kF32, {8, 2}, pattern_fill(1));
  w.add_tensor("blk.0.b", GgmlType::kQ4_0, {64, 3}, pattern_fill(2));
  w.add_tensor("tok.weight", GgmlType::kQ8_0, {32}, pattern_fill(3));
  w.add_tensor("blk.0.ffn.weight", GgmlType::kF16, {4, 3, 2, 1}, pattern_fill(4));
  return w;
}

enum class FieldKind {
  kMagic,
  kVersion,
  kNTensors,
  kNKv,
  kKeyLen,
  kKeyBytes,
  kValueType,
  kScalar,     // a scalar value (width 1..8); value_type says which
  kStringLen,  // length of a string value or string array item
  kElemType,
  kArrayCount,
  kArrayItem,  // a numeric array item (width 1..8); value_type is the element type
  kNameLen,
  kNameBytes,
  kNDims,
  kNe,
  kTensorType,
  kTensorOffset,
};

struct Field {
  FieldKind kind;
  size_t offset;
  size_t width;
  std::string owner;  // the key or tensor name the field belongs to
  GgufValueType value_type = GgufValueType::kUint8;
};

struct FieldMap {
  std::vector<Field> fields;
  size_t table_end = 0;  // first byte after the tensor table

  std::vector<Field> of(FieldKind kind) const {
    std::vector<Field> out;
    for (const Field& f : fields)
      if (f.kind == kind) out.push_back(f);
    return out;
  }
  const Field& find(FieldKind kind, const std::string& owner) const {
    for (const Field& f : fields)
      if (f.kind == kind && f.owner == owner) return f;
    throw std::runtime_error("no such field for " + owner);
  }
};

class FieldWalker {
 public:
  explicit FieldWalker(const std::vector<uint8_t>& img) : img_(img) {}

  FieldMap walk() {
    field(FieldKind::kMagic, 4, "");
    field(FieldKind::kVersion, 4, "");
    uint64_t n_tensors = field(FieldKind::kNTensors, 8, "");
    uint64_t n_kv = field(FieldKind::kNKv, 8, "");
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key = str(FieldKind::kKeyLen, FieldKind::kKeyBytes, "");
      auto type = static_cast<GgufValueType>(field(FieldKind::kValueType, 4, key));
      value(type, key);
    }
    for (uint64_t i = 0; i < n_tensors; ++i) {
      std::string name = str(FieldKind::kNameLen, FieldKind::kNameBytes, "");
      uint64_t n_dims = field(FieldKind::kNDims, 4, name);
      for (uint64_t d = 0; d < n_dims; ++d) field(FieldKind::kNe, 8, name);
      field(FieldKind::kTensorType, 4, name);
      field(FieldKind::kTensorOffset, 8, name);
    }
    map_.table_end = pos_;
    return map_;
  }

 private:
  uint64_t get(size_t width) {
    if (pos_ + width > img_.size()) throw std::runtime_error("walker ran off the image");
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v |= uint64_t{img_[pos_ + i]} << (8 * i);
    pos_ += width;
    return v;
  }
  uint64_t field(FieldKind kind, size_t width, const std::string& owner, GgufValueType vt = GgufValueType::kUint8) {
    map_.fields.push_back(Field{kind, pos_, width, owner, vt});
    return get(width);
  }
  std::string str(FieldKind len_kind, FieldKind bytes_kind, const std::string& owner) {
    size_t len_at = pos_;
    uint64_t len = get(8);
    if (pos_ + len > img_.size()) throw std::runtime_error("walker: bad string");
    std::string s(reinterpret_cast<const char*>(img_.data() + pos_), len);
    const std::string& who = owner.empty() ? s : owner;
    map_.fields.push_back(Field{len_kind, len_at, 8, who});
    map_.fields.push_back(Field{bytes_kind, pos_, len, who});
    pos_ += len;
    return s;
  }
  static size_t scalar_width(GgufValueType t) {
    switch (t) {
      case GgufValueType::kUint8:
      case GgufValueType::kInt8:
      case GgufValueType::kBool: return 1;
      case GgufValueType::kUint16:
      case GgufValueType::kInt16: return 2;
      case GgufValueType::kUint32:
      case GgufValueType::kInt32:
      case GgufValueType::kFloat32: return 4;
      default: return 8;
    }
  }
  void value(GgufValueType t, const std::string& key) {
    if (t == GgufValueType::kString) {
      size_t len_at = pos_;
      uint64_t len = get(8);
      map_.fields.push_back(Field{FieldKind::kStringLen, len_at, 8, key});
      pos_ += len;
    } else if (t == GgufValueType::kArray) {
      auto et = static_cast<GgufValueType>(field(FieldKind::kElemType, 4, key));
      uint64_t count = field(FieldKind::kArrayCount, 8, key);
      for (uint64_t i = 0; i < count; ++i) {
        if (et == GgufValueType::kString || et == GgufValueType::kArray) {
          value(et, key);
        } else {
          field(FieldKind::kArrayItem, scalar_width(et), key, et);
        }
      }
    } else {
      field(FieldKind::kScalar, scalar_width(t), key, t);
    }
  }

  const std::vector<uint8_t>& img_;
  size_t pos_ = 0;
  FieldMap map_;
};

inline FieldMap map_fields(const std::vector<uint8_t>& img) { return FieldWalker(img).walk(); }

inline void poke(std::vector<uint8_t>& img, const Field& f, uint64_t v) {
  for (size_t i = 0; i < f.width && i < 8; ++i) img[f.offset + i] = static_cast<uint8_t>(v >> (8 * i));
}

inline Result<GgufFile> parse(const std::vector<uint8_t>& img) { return gguf_parse(img.data(), img.size()); }

}  // namespace sniper::test
