// SPDX-License-Identifier: MIT
// The lookup-free layouts of iq_repack.h: each source block is decoded with its own decoder
// (iq2.h, iq3.h, tq.h) and the integers re-encoded, so a repacked block holds exactly what the
// source block decodes to; the dot products reuse the source types' scalar machinery
// (iq_scaled.h) with the same factors, hence the same float operations.
#include "quant/iq_repack.h"

#include <cstring>

#include "base/check.h"
#include "quant/block_count.h"
#include "quant/iq2.h"
#include "quant/iq3.h"
#include "quant/iq_scaled.h"
#include "quant/tq.h"

namespace sniper {

namespace {

// The code of magnitude v in levels[0..n), CHECKed to exist (the decoders only yield grid values).
uint8_t level_code(const uint8_t* levels, int n, int v) {
  for (int c = 0; c < n; ++c) {
    if (levels[c] == v) return static_cast<uint8_t>(c);
  }
  CHECK(false, "grid magnitude %d has no repacked code", v);
  return 0;
}

void encode_scales(const int* scale16, uint8_t* scales) {
  for (int j = 0; j < 8; ++j) {
    const int lo = (scale16[2 * j] - 1) / 2, hi = (scale16[2 * j + 1] - 1) / 2;
    CHECK(lo >= 0 && lo < 16 && hi >= 0 && hi < 16 && 2 * lo + 1 == scale16[2 * j] && 2 * hi + 1 == scale16[2 * j + 1],
          "scales %d, %d are not odd 4-bit scales", scale16[2 * j], scale16[2 * j + 1]);
    scales[j] = static_cast<uint8_t>(lo | hi << 4);
  }
}

void decode_scales(const uint8_t* scales, int* scale16) {
  for (int j = 0; j < 8; ++j) {
    scale16[2 * j] = 2 * (scales[j] & 0xf) + 1;
    scale16[2 * j + 1] = 2 * (scales[j] >> 4) + 1;
  }
}

void encode_iq2_rp(fp16_t d, const int8_t* q, const int* scale16, BlockIQ2_RP& out) {
  std::memset(&out, 0, sizeof(out));
  out.d = d;
  encode_scales(scale16, out.scales);
  for (int e = 0; e < 256; ++e) {
    const int v = q[e] < 0 ? -q[e] : q[e];
    out.qs[e % 64] |= static_cast<uint8_t>(level_code(kIq2RpLevels, 3, v) << (2 * (e / 64)));
    if (q[e] < 0) out.signs[e / 8] |= static_cast<uint8_t>(1 << (e % 8));
  }
}

void encode_iq3_rp(fp16_t d, const int8_t* q, const int* scale16, const uint8_t* levels, BlockIQ3_RP& out) {
  std::memset(&out, 0, sizeof(out));
  out.d = d;
  encode_scales(scale16, out.scales);
  for (int e = 0; e < 256; ++e) {
    const int v = q[e] < 0 ? -q[e] : q[e];
    const int nibble = level_code(levels, 8, v) | (q[e] < 0 ? 8 : 0);
    const int h = e / 128, r = e % 128;
    out.qs[64 * h + r % 64] |= static_cast<uint8_t>(nibble << (4 * (r / 64)));
  }
}

template <class Src, void (*Decode)(const Src&, int8_t*, int*)>
void repack_iq2(const void* src, void* dst, int64_t nb) {
  const auto* in = static_cast<const Src*>(src);
  auto* out = static_cast<BlockIQ2_RP*>(dst);
  int8_t q[256];
  int scale16[16];
  for (int64_t i = 0; i < nb; ++i) {
    Decode(in[i], q, scale16);
    encode_iq2_rp(in[i].d, q, scale16, out[i]);
  }
}

template <class Src, void (*Decode)(const Src&, int8_t*, int*)>
void repack_iq3(const void* src, void* dst, int64_t nb, const uint8_t* levels) {
  const auto* in = static_cast<const Src*>(src);
  auto* out = static_cast<BlockIQ3_RP*>(dst);
  int8_t q[256];
  int scale16[16];
  for (int64_t i = 0; i < nb; ++i) {
    Decode(in[i], q, scale16);
    encode_iq3_rp(in[i].d, q, scale16, levels, out[i]);
  }
}

void repack_tq1_0(const void* src, void* dst, int64_t nb) {
  const auto* in = static_cast<const BlockTQ1_0*>(src);
  auto* out = static_cast<BlockTQ2_0*>(dst);
  int8_t t[256];
  for (int64_t i = 0; i < nb; ++i) {
    decode_tq1_0_block(in[i], t);
    std::memset(out[i].qs, 0, sizeof(out[i].qs));
    // element 128c + 32n + m: bits 2n..2n+1 of byte 32c + m (tq.h)
    for (int e = 0; e < 256; ++e) {
      const int c = e / 128, n = (e % 128) / 32, m = e % 32;
      out[i].qs[32 * c + m] |= static_cast<uint8_t>(t[e] << (2 * n));
    }
    out[i].d = in[i].d;
  }
}

}  // namespace

GgmlType repacked_type(GgmlType type) {
  switch (type) {
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S: return GgmlType::kIQ2_RP;
    case GgmlType::kIQ3_XXS: return GgmlType::kIQ3_XXS_RP;
    case GgmlType::kIQ3_S: return GgmlType::kIQ3_S_RP;
    case GgmlType::kTQ1_0: return GgmlType::kTQ2_0;
    default: return type;
  }
}

void repack_row(GgmlType from, const void* src, void* dst, int64_t n) {
  const int64_t nb = block_count(n, 256, "repack_row");
  switch (from) {
    case GgmlType::kIQ2_XXS: repack_iq2<BlockIQ2_XXS, decode_iq2_xxs_block>(src, dst, nb); return;
    case GgmlType::kIQ2_XS: repack_iq2<BlockIQ2_XS, decode_iq2_xs_block>(src, dst, nb); return;
    case GgmlType::kIQ2_S: repack_iq2<BlockIQ2_S, decode_iq2_s_block>(src, dst, nb); return;
    case GgmlType::kIQ3_XXS: repack_iq3<BlockIQ3_XXS, decode_iq3_xxs_block>(src, dst, nb, kIq3XxsRpLevels); return;
    case GgmlType::kIQ3_S: repack_iq3<BlockIQ3_S, decode_iq3_s_block>(src, dst, nb, kIq3SRpLevels); return;
    case GgmlType::kTQ1_0: repack_tq1_0(src, dst, nb); return;
    default: CHECK(false, "type %s has no repacked layout", get_type_info(from).name);
  }
}

void decode_iq2_rp_block(const BlockIQ2_RP& b, int8_t* q, int* scale16) {
  for (int e = 0; e < 256; ++e) {
    const int v = kIq2RpLevels[(b.qs[e % 64] >> (2 * (e / 64))) & 3];
    q[e] = static_cast<int8_t>((b.signs[e / 8] >> (e % 8)) & 1 ? -v : v);
  }
  decode_scales(b.scales, scale16);
}

namespace {

void decode_iq3_rp(const BlockIQ3_RP& b, const uint8_t* levels, int8_t* q, int* scale16) {
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128;
    const int nibble = (b.qs[64 * h + r % 64] >> (4 * (r / 64))) & 0xf;
    const int v = levels[nibble];
    q[e] = static_cast<int8_t>(nibble & 8 ? -v : v);
  }
  decode_scales(b.scales, scale16);
}

}  // namespace

void decode_iq3_xxs_rp_block(const BlockIQ3_RP& b, int8_t* q, int* scale16) {
  decode_iq3_rp(b, kIq3XxsRpLevels, q, scale16);
}
void decode_iq3_s_rp_block(const BlockIQ3_RP& b, int8_t* q, int* scale16) {
  decode_iq3_rp(b, kIq3SRpLevels, q, scale16);
}

void dequantize_row_iq2_rp_ref(const BlockIQ2_RP* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ2_RP, decode_iq2_rp_block>(x, y, n, 0.125f, "dequantize_row_iq2_rp_ref");
}
void dequantize_row_iq3_xxs_rp_ref(const BlockIQ3_RP* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ3_RP, decode_iq3_xxs_rp_block>(x, y, n, 0.25f, "dequantize_row_iq3_xxs_rp_ref");
}
void dequantize_row_iq3_s_rp_ref(const BlockIQ3_RP* x, float* y, int64_t n) {
  iq_internal::dequantize_scaled<BlockIQ3_RP, decode_iq3_s_rp_block>(x, y, n, 1.0f, "dequantize_row_iq3_s_rp_ref");
}

float vec_dot_iq2_rp_q8_K_ref(int64_t n, const BlockIQ2_RP* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ2_RP, decode_iq2_rp_block>(n, w, a, 0.125f, "vec_dot_iq2_rp_q8_K_ref");
}
float vec_dot_iq3_xxs_rp_q8_K_ref(int64_t n, const BlockIQ3_RP* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ3_RP, decode_iq3_xxs_rp_block>(n, w, a, 0.25f,
                                                                           "vec_dot_iq3_xxs_rp_q8_K_ref");
}
float vec_dot_iq3_s_rp_q8_K_ref(int64_t n, const BlockIQ3_RP* w, const BlockQ8_K* a) {
  return iq_internal::vec_dot_scaled<BlockIQ3_RP, decode_iq3_s_rp_block>(n, w, a, 1.0f, "vec_dot_iq3_s_rp_q8_K_ref");
}

}  // namespace sniper
