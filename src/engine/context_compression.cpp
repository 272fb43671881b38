// SPDX-License-Identifier: MIT
#include "engine/context_compression.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/fp16.h"
#include "quant/q4_0.h"
#include "quant/q8_0.h"

namespace sniper {

namespace {

constexpr int64_t kBlock = 32;
constexpr int64_t kTile = 64;  // transpose tile: 64 x 64 f32 = 16 KiB, well inside L1+L2

size_t block_bytes(ContextCompression c) {
  return c == ContextCompression::kQ8_0 ? sizeof(BlockQ8_0) : c == ContextCompression::kQ4_0 ? sizeof(BlockQ4_0) : 0;
}

// Bytes of one head's row of head_dim values in a `type` cache (f16 or q8_0).
size_t head_bytes(int64_t head_dim, KvType type) {
  return type == KvType::kF16 ? sizeof(fp16_t) * static_cast<size_t>(head_dim)
                              : sizeof(BlockQ8_0) * static_cast<size_t>(head_dim / kBlock);
}

// V is saved transposed ([kv_dim][m]) when the cache keeps it so: f16 without flash attention.
bool v_transposed(const KvConfig& config) { return config.v == KvType::kF16 && !config.flash(); }

// Bytes of n values in rows of `type` (n a multiple of 32).
size_t rows_bytes(KvType type, size_t n) {
  return type == KvType::kF16 ? n * sizeof(fp16_t) : n / kBlock * sizeof(BlockQ8_0);
}

// n values in rows of `type` (q8_0 blocks never straddle heads and a position's heads are
// contiguous, so m positions are n / 32 consecutive blocks) to f32, and back.
void rows_to_f32(const uint8_t* in, KvType type, size_t n, float* out) {
  if (type == KvType::kQ8_0) {
    dequantize_row_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(in), out, static_cast<int64_t>(n));
    return;
  }
  const auto* h = reinterpret_cast<const fp16_t*>(in);
  for (size_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(h[i]);
}

void f32_to_rows(const float* in, KvType type, size_t n, uint8_t* out) {
  if (type == KvType::kQ8_0) {
    // The cache's own quantizer (KvCache::store: q8_0's activation quantizer, the same bytes).
    quantize_act_q8_0_ref(in, reinterpret_cast<BlockQ8_0*>(out), static_cast<int64_t>(n));
    return;
  }
  auto* h = reinterpret_cast<fp16_t*>(out);
  for (size_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(in[i]);
}

// One section (K then V, m positions, saved layout of `config`) as f32 rows k, v: [m][kv_dim].
void section_to_f32(const uint8_t* in, const KvConfig& config, int64_t m, int64_t kv_dim, float* k, float* v) {
  const size_t n = static_cast<size_t>(m * kv_dim);
  rows_to_f32(in, config.k, n, k);
  const uint8_t* vin = in + rows_bytes(config.k, n);
  if (!v_transposed(config)) {
    rows_to_f32(vin, config.v, n, v);
    return;
  }
  const auto* vt = reinterpret_cast<const fp16_t*>(vin);  // [kv_dim][m]
  // Transposed in kTile x kTile tiles, so both sides stay in cache at long contexts.
  for (int64_t r0 = 0; r0 < kv_dim; r0 += kTile) {
    for (int64_t p0 = 0; p0 < m; p0 += kTile) {
      for (int64_t r = r0; r < std::min(r0 + kTile, kv_dim); ++r) {
        for (int64_t p = p0; p < std::min(p0 + kTile, m); ++p) v[p * kv_dim + r] = fp16_to_fp32(vt[r * m + p]);
      }
    }
  }
}

void f32_to_section(const float* k, const float* v, int64_t m, int64_t kv_dim, const KvConfig& config, uint8_t* out) {
  const size_t n = static_cast<size_t>(m * kv_dim);
  f32_to_rows(k, config.k, n, out);
  uint8_t* vout = out + rows_bytes(config.k, n);
  if (!v_transposed(config)) {
    f32_to_rows(v, config.v, n, vout);
    return;
  }
  auto* vt = reinterpret_cast<fp16_t*>(vout);
  for (int64_t r0 = 0; r0 < kv_dim; r0 += kTile) {
    for (int64_t p0 = 0; p0 < m; p0 += kTile) {
      for (int64_t r = r0; r < std::min(r0 + kTile, kv_dim); ++r) {
        for (int64_t p = p0; p < std::min(p0 + kTile, m); ++p) vt[r * m + p] = fp32_to_fp16(v[p * kv_dim + r]);
      }
    }
  }
}

// Whether the codec knows a cache type's rows. A switch without default: a new KvType fails to
// compile here until it is handled.
bool type_compressible(KvType type) {
  switch (type) {
    case KvType::kF16:
    case KvType::kQ8_0: return true;
    case KvType::kBF16:
    case KvType::kQ4_0:
    case KvType::kQ4_1:
    case KvType::kIQ4_NL:
    case KvType::kQ5_0:
    case KvType::kQ5_1: return false;
  }
  return false;
}

}  // namespace

bool kv_type_compressible(const KvConfig& config) { return type_compressible(config.k) && type_compressible(config.v); }

Result<ContextCompression> parse_context_compression(std::string_view text) {
  if (text == "none") return ContextCompression::kNone;
  if (text == "q8_0") return ContextCompression::kQ8_0;
  if (text == "q4_0") return ContextCompression::kQ4_0;
  return make_error("context compression is '%.*s' but must be none, q8_0 or q4_0", static_cast<int>(text.size()),
                    text.data());
}

const char* context_compression_name(ContextCompression c) {
  switch (c) {
    case ContextCompression::kNone: return "none";
    case ContextCompression::kQ8_0: return "q8_0";
    case ContextCompression::kQ4_0: return "q4_0";
  }
  return "?";
}

size_t compressed_kv_position_bytes(int64_t n_kv_heads, int64_t head_dim, ContextCompression c) {
  return 2 * static_cast<size_t>(n_kv_heads * (head_dim / kBlock)) * block_bytes(c);
}

size_t kv_position_bytes(int64_t n_kv_heads, int64_t head_dim, const KvConfig& config) {
  return static_cast<size_t>(n_kv_heads) * (head_bytes(head_dim, config.k) + head_bytes(head_dim, config.v));
}

void compress_kv_section(const uint8_t* in, const KvConfig& type, int64_t m, int64_t n_kv_heads, int64_t head_dim,
                         ContextCompression c, uint8_t* out) {
  CHECK(c != ContextCompression::kNone && head_dim % kBlock == 0 && m >= 0 && kv_type_compressible(type),
        "compress_kv_section preconditions");
  const int64_t kv_dim = n_kv_heads * head_dim;
  std::vector<float> k(static_cast<size_t>(m * kv_dim)), v(k.size());
  section_to_f32(in, type, m, kv_dim, k.data(), v.data());
  const int64_t n = m * kv_dim;
  if (c == ContextCompression::kQ8_0) {
    quantize_row_q8_0_ref(k.data(), reinterpret_cast<BlockQ8_0*>(out), n);
    quantize_row_q8_0_ref(v.data(), reinterpret_cast<BlockQ8_0*>(out) + n / kBlock, n);
  } else {
    quantize_row_q4_0_ref(k.data(), reinterpret_cast<BlockQ4_0*>(out), n);
    quantize_row_q4_0_ref(v.data(), reinterpret_cast<BlockQ4_0*>(out) + n / kBlock, n);
  }
}

void decompress_kv_section(const uint8_t* in, ContextCompression c, int64_t m, int64_t n_kv_heads, int64_t head_dim,
                           const KvConfig& type, uint8_t* out) {
  CHECK(c != ContextCompression::kNone && head_dim % kBlock == 0 && m >= 0 && kv_type_compressible(type),
        "decompress_kv_section preconditions");
  const int64_t kv_dim = n_kv_heads * head_dim;
  const int64_t n = m * kv_dim;
  std::vector<float> k(static_cast<size_t>(n)), v(k.size());
  if (c == ContextCompression::kQ8_0) {
    dequantize_row_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(in), k.data(), n);
    dequantize_row_q8_0_ref(reinterpret_cast<const BlockQ8_0*>(in) + n / kBlock, v.data(), n);
  } else {
    dequantize_row_q4_0_ref(reinterpret_cast<const BlockQ4_0*>(in), k.data(), n);
    dequantize_row_q4_0_ref(reinterpret_cast<const BlockQ4_0*>(in) + n / kBlock, v.data(), n);
  }
  f32_to_section(k.data(), v.data(), m, kv_dim, type, out);
}

}  // namespace sniper
