// SPDX-License-Identifier: MIT
// GGUF file format (v2 and v3) and the ggml tensor type table.
//
// Byte layout (all integers little-endian):
//   u32 magic "GGUF" (0x46554747)   u32 version (2 or 3)
//   u64 n_tensors                   u64 n_kv
//   n_kv x { string key; u32 value_type; value }
//   n_tensors x { string name; u32 n_dims (1..4); u64 ne[n_dims]; u32 ggml_type; u64 offset }
//   padding to `general.alignment` (u32 metadata, default 32, a power of two)
//   tensor data; each tensor starts at data_offset + offset, offset a multiple of the alignment
// where string = { u64 len; len bytes (UTF-8, no terminator) } and an array value is
//   { u32 elem_type; u64 count; count x value } (arrays may nest).
// Shapes are in ggml order: ne[0] is the fastest-varying (row length) dimension.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sniper {

constexpr uint32_t kGgufMagic = 0x46554747u;  // "GGUF" read as a little-endian u32
constexpr uint32_t kGgufDefaultAlignment = 32;
constexpr int kGgufMaxDims = 4;

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// Returns the name of a value type ("u32", "string", ...) or nullptr when out of range.
const char* gguf_value_type_name(GgufValueType type);

// ggml tensor types, numbered as in ggml.h (the numbers are part of the file format).
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  // In-memory layouts that no file holds: the load-time repacks of i-quant weights
  // (quant/iq_repack.h). Numbered past every number ggml has assigned, so a file naming one is
  // rejected like any unknown type (find_type_info knows only file types).
  kIQ2_RP = 64,
  kIQ3_XXS_RP = 65,
  kIQ3_S_RP = 66,
  kIQ1_S_RP = 67,
  kIQ1_M_RP = 68,
};

// One past the largest GgmlType value (tables indexed by type number are this long).
constexpr uint32_t kGgmlTypeSlots = 69;

// Static facts about one tensor type.
struct GgmlTypeInfo {
  GgmlType type;
  const char* name;    // "q4_K", as ggml spells it
  int64_t block_size;  // elements per block
  size_t type_size;    // bytes per block
};

// Returns the info for a type number, or nullptr when the number is not a type we know in files.
// Known types include ones we can store but not compute with (I8..F64); see quant/ for those we can.
const GgmlTypeInfo* find_type_info(uint32_t type);
// find_type_info, and also the in-memory-only layouts (kIQ2_RP ...). For tables of everything
// a QTensor can hold (the kernel dispatch), never for bytes read from a file.
const GgmlTypeInfo* find_memory_type_info(uint32_t type);
// The info of any GgmlType, in-memory layouts included; CHECKs that it is one.
const GgmlTypeInfo& get_type_info(GgmlType type);

// ggml's upper-case name for any type number it has used, known to us or not ("IQ3_S",
// "MXFP4", "Q4_0_4_4"), or nullptr for numbers ggml never assigned. For error messages such as
// "IQ3_S (type 21)".
const char* ggml_type_upper_name(uint32_t type);

// Bytes of one row of n elements; CHECKs n % block_size == 0.
size_t row_bytes(GgmlType type, int64_t n);

}  // namespace sniper
