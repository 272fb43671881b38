// SPDX-License-Identifier: MIT
// The ggml tensor type table and GGUF value type names. The table is the single source of
// truth for block sizes and bytes per block; numbers, names and sizes are those of ggml.
// Invariant: every GgmlType enumerator has exactly one row, in kTypeTable (file types) or in
// kMemoryTypeTable (in-memory layouts, never accepted from a file).
#include "gguf/format.h"

#include <cstdint>
#include <iterator>

#include "base/check.h"

namespace sniper {

namespace {

// type_size derivations (bytes per block of block_size elements), as ggml-common.h lays them out:
//   q4_0  = f16 d + 16 nibble bytes                         = 2 + 16        = 18
//   q4_1  = f16 d, m + 16 nibble bytes                      = 4 + 16        = 20
//   q5_0  = f16 d + u32 high bits + 16 nibble bytes         = 2 + 4 + 16    = 22
//   q5_1  = f16 d, m + u32 high bits + 16 nibble bytes      = 4 + 4 + 16    = 24
//   q8_0  = f16 d + 32 int8                                 = 2 + 32        = 34
//   q8_1  = f16 d, s + 32 int8                              = 4 + 32        = 36
//   q2_K  = 16 scales + 64 quants + f16 d, dmin             = 16 + 64 + 4   = 84
//   q3_K  = 32 hmask + 64 quants + 12 scales + f16 d        = 32+64+12+2    = 110
//   q4_K  = f16 d, dmin + 12 scales + 128 quants            = 4 + 12 + 128  = 144
//   q5_K  = f16 d, dmin + 12 scales + 32 qh + 128 qs        = 4+12+32+128   = 176
//   q6_K  = 128 ql + 64 qh + 16 scales + f16 d              = 128+64+16+2   = 210
//   q8_K  = f32 d + 256 int8 + 16 i16 bsums                 = 4 + 256 + 32  = 292
//   iq4_nl= f16 d + 16 nibble bytes                         = 2 + 16        = 18
//   iq4_xs= f16 d + u16 scales_h + 4 scales_l + 128 qs      = 2+2+4+128     = 136
//   iq2_xxs = f16 d + 32 u16 (grid bytes, signs+scales)     = 2 + 64        = 66
//   iq2_xs  = f16 d + 32 u16 qs + 8 scales                  = 2 + 64 + 8    = 74
//   iq2_s   = f16 d + 64 qs/signs + 8 qh + 8 scales         = 2+64+8+8      = 82
//   iq3_xxs = f16 d + 64 grid bytes + 32 signs/scales       = 2 + 64 + 32   = 98
//   iq3_s   = f16 d + 64 qs + 8 qh + 32 signs + 4 scales    = 2+64+8+32+4   = 110
//   iq1_s   = f16 d + 32 qs + 8 u16 qh                      = 2 + 32 + 16   = 50
//   iq1_m   = 32 qs + 16 qh + 8 scales (d inside scales)    = 32 + 16 + 8   = 56
//   tq1_0   = 48 qs (5 trits/byte) + 4 qh (4 trits) + f16 d = 48 + 4 + 2    = 54
//   tq2_0   = 64 qs (4 x 2 bits/byte) + f16 d               = 64 + 2        = 66
constexpr GgmlTypeInfo kTypeTable[] = {
    {GgmlType::kF32, "f32", 1, 4},
    {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},
    {GgmlType::kQ4_1, "q4_1", 32, 20},
    {GgmlType::kQ5_0, "q5_0", 32, 22},
    {GgmlType::kQ5_1, "q5_1", 32, 24},
    {GgmlType::kQ8_0, "q8_0", 32, 34},
    {GgmlType::kQ8_1, "q8_1", 32, 36},
    {GgmlType::kQ2_K, "q2_K", 256, 84},
    {GgmlType::kQ3_K, "q3_K", 256, 110},
    {GgmlType::kQ4_K, "q4_K", 256, 144},
    {GgmlType::kQ5_K, "q5_K", 256, 176},
    {GgmlType::kQ6_K, "q6_K", 256, 210},
    {GgmlType::kQ8_K, "q8_K", 256, 292},
    {GgmlType::kIQ2_XXS, "iq2_xxs", 256, 66},
    {GgmlType::kIQ2_XS, "iq2_xs", 256, 74},
    {GgmlType::kIQ3_XXS, "iq3_xxs", 256, 98},
    {GgmlType::kIQ1_S, "iq1_s", 256, 50},
    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18},
    {GgmlType::kIQ3_S, "iq3_s", 256, 110},
    {GgmlType::kIQ2_S, "iq2_s", 256, 82},
    {GgmlType::kIQ4_XS, "iq4_xs", 256, 136},
    {GgmlType::kIQ1_M, "iq1_m", 256, 56},
    {GgmlType::kTQ1_0, "tq1_0", 256, 54},
    {GgmlType::kTQ2_0, "tq2_0", 256, 66},
    {GgmlType::kI8, "i8", 1, 1},
    {GgmlType::kI16, "i16", 1, 2},
    {GgmlType::kI32, "i32", 1, 4},
    {GgmlType::kI64, "i64", 1, 8},
    {GgmlType::kF64, "f64", 1, 8},
    {GgmlType::kBF16, "bf16", 1, 2},
};

// The in-memory layouts (quant/iq_repack.h gives each one's bytes):
//   iq2_rp     = f16 d + 8 scale nibbles + 32 sign bytes + 64 two-bit codes   = 2+8+32+64  = 106
//   iq3_*_rp   = f16 d + 8 scale nibbles + 128 nibbles (3-bit code, sign)    = 2+8+128    = 138
//   iq1_*_rp   = f16 d + 8 scale nibbles + 4 delta-sign bytes + 64 2-bit codes = 2+8+4+64 = 78
constexpr GgmlTypeInfo kMemoryTypeTable[] = {
    {GgmlType::kIQ2_RP, "iq2_rp", 256, 106},     {GgmlType::kIQ3_XXS_RP, "iq3_xxs_rp", 256, 138},
    {GgmlType::kIQ3_S_RP, "iq3_s_rp", 256, 138}, {GgmlType::kIQ1_S_RP, "iq1_s_rp", 256, 78},
    {GgmlType::kIQ1_M_RP, "iq1_m_rp", 256, 78},
};

// ggml.h's GGML_TYPE_* names by number, including numbers ggml has retired (Q4_2, Q4_0_4_4, ...)
// or that we cannot read (MXFP4, ...); nullptr where ggml never assigned the number.
constexpr const char* kUpperNames[] = {
    "F32",        "F16",        "Q4_0",       "Q4_1",  "Q4_2",     "Q4_3",     "Q5_0",     "Q5_1",    "Q8_0",
    "Q8_1",       "Q2_K",       "Q3_K",       "Q4_K",  "Q5_K",     "Q6_K",     "Q8_K",     "IQ2_XXS", "IQ2_XS",
    "IQ3_XXS",    "IQ1_S",      "IQ4_NL",     "IQ3_S", "IQ2_S",    "IQ4_XS",   "I8",       "I16",     "I32",
    "I64",        "F64",        "IQ1_M",      "BF16",  "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",   "TQ2_0",
    "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4", "NVFP4",    "Q1_0",     "Q2_0"};

// Indexed by GgufValueType.
constexpr const char* kValueTypeNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                           "bool", "string", "array", "u64", "i64", "f64"};

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  auto idx = static_cast<uint32_t>(type);
  if (idx >= std::size(kValueTypeNames)) return nullptr;
  return kValueTypeNames[idx];
}

const GgmlTypeInfo* find_type_info(uint32_t type) {
  for (const GgmlTypeInfo& info : kTypeTable) {
    if (static_cast<uint32_t>(info.type) == type) return &info;
  }
  return nullptr;
}

const GgmlTypeInfo* find_memory_type_info(uint32_t type) {
  if (const GgmlTypeInfo* info = find_type_info(type)) return info;
  for (const GgmlTypeInfo& info : kMemoryTypeTable) {
    if (static_cast<uint32_t>(info.type) == type) return &info;
  }
  return nullptr;
}

const char* ggml_type_upper_name(uint32_t type) { return type < std::size(kUpperNames) ? kUpperNames[type] : nullptr; }

const GgmlTypeInfo& get_type_info(GgmlType type) {
  const GgmlTypeInfo* info = find_memory_type_info(static_cast<uint32_t>(type));
  CHECK(info != nullptr, "unknown GgmlType %u", static_cast<uint32_t>(type));
  return *info;
}

size_t row_bytes(GgmlType type, int64_t n) {
  const GgmlTypeInfo& info = get_type_info(type);
  CHECK(n >= 0 && n % info.block_size == 0, "row of %lld elements is not a whole number of %s blocks of %lld",
        static_cast<long long>(n), info.name, static_cast<long long>(info.block_size));
  uint64_t blocks = static_cast<uint64_t>(n / info.block_size);
  CHECK(blocks <= SIZE_MAX / info.type_size, "row of %lld %s elements overflows size_t", static_cast<long long>(n),
        info.name);
  return static_cast<size_t>(blocks) * info.type_size;
}

}  // namespace sniper
