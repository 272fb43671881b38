// SPDX-License-Identifier: MIT
// The lookup-free layouts of iq_repack.h: each source group's grid entry is re-encoded through
// a table of its elements' codes (built once from the grids of iq_grids.h), signs and scales
// copied as the source decoders (iq2.cpp, iq3.cpp) read them, so a repacked block decodes to
// exactly what the source block decodes to (tests/quant/iq_repack_test.cpp checks it against the
// decoders); the dot products reuse the source types' scalar machinery (iq_scaled.h) with the
// same factors, hence the same float operations.
#include "quant/iq_repack.h"

#include <cstring>
#include <vector>

#include "base/check.h"
#include "quant/block_count.h"
#include "quant/iq1.h"
#include "quant/iq1_dot.h"
#include "quant/iq2.h"
#include "quant/iq3.h"
#include "quant/iq_grids.h"
#include "quant/iq_scaled.h"
#include "quant/tq.h"

namespace sniper {

namespace {

// The code of magnitude v in levels[0..n), CHECKed to exist (the grids hold only these values).
uint8_t level_code(const uint8_t* levels, int n, int v) {
  for (int c = 0; c < n; ++c) {
    if (levels[c] == v) return static_cast<uint8_t>(c);
  }
  CHECK(false, "grid magnitude %d has no repacked code", v);
  return 0;
}

// Per grid entry, its elements' codes spread one per byte (IQ2: 8 bytes, IQ3: 4), so a group is
// re-encoded with one table load: the repack of a 10 GB file takes seconds, not minutes.
template <class Entry, size_t kN, int kElems>
std::vector<uint64_t> spread_codes(const Entry (&grid)[kN], const uint8_t* levels, int n_levels) {
  std::vector<uint64_t> out(kN);
  for (size_t i = 0; i < kN; ++i) {
    for (int k = 0; k < kElems; ++k) {
      const int v = static_cast<int>((static_cast<uint64_t>(grid[i]) >> (8 * k)) & 0xff);
      out[i] |= static_cast<uint64_t>(level_code(levels, n_levels, v)) << (8 * k);
    }
  }
  return out;
}

const std::vector<uint64_t>& iq2_xxs_codes() {
  static const std::vector<uint64_t> t = spread_codes<uint64_t, 256, 8>(kIq2xxsGrid, kIq2RpLevels, 3);
  return t;
}
const std::vector<uint64_t>& iq2_xs_codes() {
  static const std::vector<uint64_t> t = spread_codes<uint64_t, 512, 8>(kIq2xsGrid, kIq2RpLevels, 3);
  return t;
}
const std::vector<uint64_t>& iq2_s_codes() {
  static const std::vector<uint64_t> t = spread_codes<uint64_t, 1024, 8>(kIq2sGrid, kIq2RpLevels, 3);
  return t;
}
const std::vector<uint64_t>& iq3_xxs_codes() {
  static const std::vector<uint64_t> t = spread_codes<uint32_t, 256, 4>(kIq3xxsGrid, kIq3XxsRpLevels, 8);
  return t;
}
const std::vector<uint64_t>& iq3_s_codes() {
  static const std::vector<uint64_t> t = spread_codes<uint32_t, 512, 4>(kIq3sGrid, kIq3SRpLevels, 8);
  return t;
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void or64(uint8_t* p, uint64_t v) { std::memcpy(p, &(v |= load64(p)), 8); }
inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void or32(uint8_t* p, uint32_t v) { std::memcpy(p, &(v |= load32(p)), 4); }

// IQ2 group g (elements 8g..8g+7): spread codes (byte k = code of element 8g + k) and the sign
// byte. Element 64j + m is at bits 2j of byte m: the group's bytes are 8g % 64 .. +7, shift 2 (g / 8).
inline void put_iq2_group(BlockIQ2_RP& out, int g, uint64_t codes, uint8_t sign) {
  or64(out.qs + 8 * (g % 8), codes << (2 * (g / 8)));
  out.signs[g] = sign;
}

// IQ3 half-group (elements 4q..4q+3): spread codes and their 4 sign bits. Element 128h + r is in
// byte 64h + r % 64, nibble r / 64.
inline void put_iq3_quad(BlockIQ3_RP& out, int q, uint64_t codes, unsigned sign4) {
  uint32_t v = static_cast<uint32_t>(codes);
  for (int k = 0; k < 4; ++k) v |= ((sign4 >> k) & 1u) << (8 * k + 3);
  const int e = 4 * q, h = e / 128, r = e % 128;
  or32(out.qs + 64 * h + r % 64, v << (4 * (r / 64)));
}

void scales_from_nibbles(const uint8_t* nib, uint8_t* scales) { std::memcpy(scales, nib, 8); }

void decode_scales(const uint8_t* scales, int* scale16) {
  for (int j = 0; j < 8; ++j) {
    scale16[2 * j] = 2 * (scales[j] & 0xf) + 1;
    scale16[2 * j + 1] = 2 * (scales[j] >> 4) + 1;
  }
}

// Per 32 elements one 4-bit scale c (both halves): scales[j] = c | c << 4.
inline uint8_t both_halves(unsigned c) { return static_cast<uint8_t>((c & 0xf) | (c & 0xf) << 4); }

void repack_iq2_xxs(const BlockIQ2_XXS& b, BlockIQ2_RP& out) {
  const std::vector<uint64_t>& t = iq2_xxs_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = b.d;
  const auto* qs = reinterpret_cast<const uint8_t*>(b.qs);
  for (int s = 0; s < 8; ++s) {
    const uint32_t w = load32(qs + 8 * s + 4);
    for (int l = 0; l < 4; ++l) put_iq2_group(out, 4 * s + l, t[qs[8 * s + l]], kKsignsIq2xs[(w >> (7 * l)) & 127]);
    out.scales[s] = both_halves(w >> 28);
  }
}

void repack_iq2_xs(const BlockIQ2_XS& b, BlockIQ2_RP& out) {
  const std::vector<uint64_t>& t = iq2_xs_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = b.d;
  for (int g = 0; g < 32; ++g) put_iq2_group(out, g, t[b.qs[g] & 511], kKsignsIq2xs[b.qs[g] >> 9]);
  scales_from_nibbles(b.scales, out.scales);
}

void repack_iq2_s(const BlockIQ2_S& b, BlockIQ2_RP& out) {
  const std::vector<uint64_t>& t = iq2_s_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = b.d;
  for (int g = 0; g < 32; ++g) {
    const int idx = b.qs[g] | (((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
    put_iq2_group(out, g, t[static_cast<size_t>(idx)], b.qs[32 + g]);
  }
  scales_from_nibbles(b.scales, out.scales);
}

void repack_iq3_xxs(const BlockIQ3_XXS& b, BlockIQ3_RP& out) {
  const std::vector<uint64_t>& t = iq3_xxs_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = b.d;
  for (int s = 0; s < 8; ++s) {
    const uint32_t w = load32(b.qs + 64 + 4 * s);
    for (int l = 0; l < 4; ++l) {
      const uint8_t sign = kKsignsIq2xs[(w >> (7 * l)) & 127];
      put_iq3_quad(out, 8 * s + 2 * l, t[b.qs[8 * s + 2 * l]], sign & 0xf);
      put_iq3_quad(out, 8 * s + 2 * l + 1, t[b.qs[8 * s + 2 * l + 1]], sign >> 4);
    }
    out.scales[s] = both_halves(w >> 28);
  }
}

void repack_iq3_s(const BlockIQ3_S& b, BlockIQ3_RP& out) {
  const std::vector<uint64_t>& t = iq3_s_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = b.d;
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < 4; ++l) {
      const int i0 = b.qs[8 * s + 2 * l] | (((b.qh[s] >> (2 * l)) & 1) << 8);
      const int i1 = b.qs[8 * s + 2 * l + 1] | (((b.qh[s] >> (2 * l + 1)) & 1) << 8);
      const uint8_t sign = b.signs[4 * s + l];
      put_iq3_quad(out, 8 * s + 2 * l, t[static_cast<size_t>(i0)], sign & 0xf);
      put_iq3_quad(out, 8 * s + 2 * l + 1, t[static_cast<size_t>(i1)], sign >> 4);
    }
    out.scales[s] = both_halves(b.scales[s / 2] >> (4 * (s % 2)));
  }
}

// The IQ1 grid's int8 values -1, 0, 1 as codes q + 1, spread one per byte.
const std::vector<uint64_t>& iq1_codes() {
  static const std::vector<uint64_t> t = [] {
    std::vector<uint64_t> out(2048);
    for (size_t i = 0; i < out.size(); ++i) {
      for (int k = 0; k < 8; ++k) {
        const auto v = static_cast<int8_t>(static_cast<uint8_t>(kIq1sGrid[i] >> (8 * k)));
        CHECK(v >= -1 && v <= 1, "iq1 grid value %d", v);
        out[i] |= static_cast<uint64_t>(v + 1) << (8 * k);
      }
    }
    return out;
  }();
  return t;
}

inline void put_iq1_group(BlockIQ1_RP& out, int g, uint64_t codes, bool negative_delta) {
  or64(out.qs + 8 * (g % 8), codes << (2 * (g / 8)));
  if (negative_delta) out.delta[g / 8] |= static_cast<uint8_t>(1 << (g % 8));
}

void repack_iq1_s(const BlockIQ1_S& b, BlockIQ1_RP& out) {
  const std::vector<uint64_t>& t = iq1_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = b.d;
  for (int s = 0; s < 8; ++s) {
    const uint16_t h = b.qh[s];
    for (int l = 0; l < 4; ++l) {
      const int idx = b.qs[4 * s + l] | (((h >> (3 * l)) & 7) << 8);
      put_iq1_group(out, 4 * s + l, t[static_cast<size_t>(idx)], (h & 0x8000) != 0);
    }
    out.scales[s] = both_halves((h >> 12) & 7);
  }
}

void repack_iq1_m(const BlockIQ1_M& b, BlockIQ1_RP& out) {
  const std::vector<uint64_t>& t = iq1_codes();
  std::memset(&out, 0, sizeof(out));
  out.d = iq1_m_scale_bits(b);
  uint16_t sc[4];
  std::memcpy(sc, b.scales, 8);
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < 4; ++l) {
      const int nib = (b.qh[2 * s + l / 2] >> (4 * (l % 2))) & 0xf;
      put_iq1_group(out, 4 * s + l, t[static_cast<size_t>(b.qs[4 * s + l] | ((nib & 7) << 8))], (nib & 8) != 0);
    }
    const int r = 6 * (s % 2);
    out.scales[s] = static_cast<uint8_t>(((sc[s / 2] >> r) & 7) | ((sc[s / 2] >> (r + 3)) & 7) << 4);
  }
}

template <class Src, class Dst, void (*Repack)(const Src&, Dst&)>
void repack_blocks(const void* src, void* dst, int64_t nb) {
  const auto* in = static_cast<const Src*>(src);
  auto* out = static_cast<Dst*>(dst);
  for (int64_t i = 0; i < nb; ++i) Repack(in[i], out[i]);
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
    case GgmlType::kIQ1_S: return GgmlType::kIQ1_S_RP;
    case GgmlType::kIQ1_M: return GgmlType::kIQ1_M_RP;
    case GgmlType::kTQ1_0: return GgmlType::kTQ2_0;
    default: return type;
  }
}

void repack_row(GgmlType from, const void* src, void* dst, int64_t n) {
  const int64_t nb = block_count(n, 256, "repack_row");
  switch (from) {
    case GgmlType::kIQ2_XXS: repack_blocks<BlockIQ2_XXS, BlockIQ2_RP, repack_iq2_xxs>(src, dst, nb); return;
    case GgmlType::kIQ2_XS: repack_blocks<BlockIQ2_XS, BlockIQ2_RP, repack_iq2_xs>(src, dst, nb); return;
    case GgmlType::kIQ2_S: repack_blocks<BlockIQ2_S, BlockIQ2_RP, repack_iq2_s>(src, dst, nb); return;
    case GgmlType::kIQ3_XXS: repack_blocks<BlockIQ3_XXS, BlockIQ3_RP, repack_iq3_xxs>(src, dst, nb); return;
    case GgmlType::kIQ3_S: repack_blocks<BlockIQ3_S, BlockIQ3_RP, repack_iq3_s>(src, dst, nb); return;
    case GgmlType::kIQ1_S: repack_blocks<BlockIQ1_S, BlockIQ1_RP, repack_iq1_s>(src, dst, nb); return;
    case GgmlType::kIQ1_M: repack_blocks<BlockIQ1_M, BlockIQ1_RP, repack_iq1_m>(src, dst, nb); return;
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

namespace {

// delta_group(e) = the group of 8 whose delta bit element e takes.
template <int (*DeltaGroup)(int)>
void decode_iq1_rp(const BlockIQ1_RP& b, int8_t* q, int8_t* delta, int* scale16) {
  for (int e = 0; e < 256; ++e) {
    q[e] = static_cast<int8_t>(((b.qs[e % 64] >> (2 * (e / 64))) & 3) - 1);
    const int g = DeltaGroup(e);
    delta[e] = (b.delta[g / 8] >> (g % 8)) & 1 ? -1 : 1;
  }
  decode_scales(b.scales, scale16);
}
int chunk_delta_group(int e) { return 4 * (e / 32); }
int own_delta_group(int e) { return e / 8; }

}  // namespace

void decode_iq1_s_rp_block(const BlockIQ1_RP& b, int8_t* q, int8_t* delta, int* scale16) {
  decode_iq1_rp<chunk_delta_group>(b, q, delta, scale16);
}
void decode_iq1_m_rp_block(const BlockIQ1_RP& b, int8_t* q, int8_t* delta, int* scale16) {
  decode_iq1_rp<own_delta_group>(b, q, delta, scale16);
}

namespace {

fp16_t iq1_rp_d(const BlockIQ1_RP& b) { return b.d; }

}  // namespace

void dequantize_row_iq1_s_rp_ref(const BlockIQ1_RP* x, float* y, int64_t n) {
  iq1_internal::dequantize<BlockIQ1_RP, decode_iq1_s_rp_block, iq1_rp_d>(x, y, n, "dequantize_row_iq1_s_rp_ref");
}
void dequantize_row_iq1_m_rp_ref(const BlockIQ1_RP* x, float* y, int64_t n) {
  iq1_internal::dequantize<BlockIQ1_RP, decode_iq1_m_rp_block, iq1_rp_d>(x, y, n, "dequantize_row_iq1_m_rp_ref");
}
float vec_dot_iq1_s_rp_q8_K_ref(int64_t n, const BlockIQ1_RP* w, const BlockQ8_K* a) {
  return iq1_internal::vec_dot_s<BlockIQ1_RP, decode_iq1_s_rp_block, iq1_rp_d>(n, w, a, "vec_dot_iq1_s_rp_q8_K_ref");
}
float vec_dot_iq1_m_rp_q8_K_ref(int64_t n, const BlockIQ1_RP* w, const BlockQ8_K* a) {
  return iq1_internal::vec_dot_m<BlockIQ1_RP, decode_iq1_m_rp_block, iq1_rp_d>(n, w, a, "vec_dot_iq1_m_rp_q8_K_ref");
}

}  // namespace sniper
