// SPDX-License-Identifier: MIT
// AVX2 activation quantizers (q8_0, q8_1, q8_K, f16, bf16), bit-identical to quant.h's
// quantize_act_row_ref: ggml's AVX2 q8_0/q8_1 (id = 127/max, round half to even, cvtps/packs
// saturation), ggml's nearest_int (ties to even, magic-number trick) and modular int8
// conversion for q8_K.
// Include only from ISA translation units (needs AVX2 + F16C).
#pragma once

#include "kernels/x86/x86_util.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"

namespace sniper::x86 {
// Internal linkage on purpose: these are compiled once per ISA with different -m flags, and
// must not be merged across ISA translation units by the linker (ODR).
namespace {

// As quant/rounding.h safe_inverse: 1/d, or 0 when d is 0 or 1/d overflows.
inline float inverse_or_zero(float d) {
  if (d == 0.0f) return 0.0f;
  const float id = 1.0f / d;
  return __builtin_isfinite(id) ? id : 0.0f;
}

// The reference's NaN-aware conversions, for the rare NaN lanes (see base/fp16.h).
inline uint16_t f2h_nan(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7E00u);
}
inline uint16_t f2bf_nan(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u >> 16) | 64);
}
inline uint16_t f2bf(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return f2bf_nan(f);
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

inline __m256 abs_ps(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }

// Max of |x| over 8*k floats; NaN inputs are skipped as std::max(amax, NaN) does.
inline float amax_ps(const float* x, int k) {
  __m256 m = _mm256_setzero_ps();
  for (int j = 0; j < k; ++j) m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + 8 * j)), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(_mm_movehl_ps(h, h), h);
  h = _mm_max_ss(_mm_movehdup_ps(h), h);
  return _mm_cvtss_f32(h);
}

// 4 x 8 int32 -> 32 int8 in order, with packs' saturation.
inline __m256i pack_epi32_to_epi8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i r = _mm256_packs_epi16(ab, cd);
  // packs interleave 128-bit lanes: restore element order.
  return _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// ggml's AVX2 q8_0/q8_1 block: q = cvtps_epi32(round_nearest_even(x * id)). Returns the int32
// conversions (before saturation) in q[4] and stores the saturated bytes.
inline void quantize_q32_block(const float* x, float id, int8_t* qs, __m256i* q) {
  const __m256 vid = _mm256_set1_ps(id);
  for (int j = 0; j < 4; ++j) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), vid);
    q[j] = _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_epi32_to_epi8(q[0], q[1], q[2], q[3]));
}

inline void quantize_q8_0(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* xb = x + 32 * i;
    const float amax = amax_ps(xb, 4);
    y[i].d = f2h(amax / 127.0f);
    __m256i q[4];
    quantize_q32_block(xb, amax != 0.0f ? 127.0f / amax : 0.0f, y[i].qs, q);
  }
}

inline void quantize_q8_1(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float* xb = x + 32 * i;
    const float amax = amax_ps(xb, 4);
    const float d = amax / 127.0f;
    y[i].d = f2h(d);
    __m256i q[4];
    quantize_q32_block(xb, amax != 0.0f ? 127.0f / amax : 0.0f, y[i].qs, q);
    const int sum = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    y[i].s = f2h(static_cast<float>(sum) * d);
  }
}

inline void quantize_q8_K(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / 256; ++i) {
    const float* xb = x + 256 * i;
    const float amax = amax_ps(xb, 32);
    if (amax == 0.0f) {
      __builtin_memset(&y[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    // The first element attaining amax (the reference keeps the first on ties).
    float max = 0.0f;
    const __m256 vamax = _mm256_set1_ps(amax);
    for (int j = 0; j < 32; ++j) {
      const __m256 v = _mm256_loadu_ps(xb + 8 * j);
      const int mask = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v), vamax, _CMP_EQ_OQ));
      if (mask != 0) {
        max = xb[8 * j + __builtin_ctz(static_cast<unsigned>(mask))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256i mant = _mm256_set1_epi32(0x007fffff), bias = _mm256_set1_epi32(0x00400000);
    const __m256i cap = _mm256_set1_epi32(127), byte = _mm256_set1_epi32(0xFF);
    for (int j = 0; j < 8; ++j) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(xb + 32 * j + 8 * k)), magic);
        __m256i r = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v), mant), bias);
        // min(127, v) then the modular int8 conversion: keep the low byte (0..255).
        q[k] = _mm256_and_si256(_mm256_min_epi32(r, cap), byte);
      }
      const __m256i ab = _mm256_packus_epi32(q[0], q[1]);
      const __m256i cd = _mm256_packus_epi32(q[2], q[3]);
      const __m256i r =
          _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + 32 * j), r);
      // bsums of the two 16-element groups.
      const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), r);
      const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
      y[i].bsums[2 * j] = static_cast<int16_t>(hsum_epi32(_mm256_inserti128_si256(s32, _mm_setzero_si128(), 1)));
      y[i].bsums[2 * j + 1] = static_cast<int16_t>(hsum_epi32(_mm256_permute2x128_si256(s32, s32, 0x81)));
    }
    y[i].d = 1.0f / iscale;
  }
}

inline void quantize_f32(const float* x, void* dst, int64_t n) {
  __builtin_memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
}

inline void quantize_f16(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const int nan = _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
    if (nan != 0) {  // the reference's NaN encoding (sign | 0x7E00)
      for (int k = 0; k < 8; ++k) {
        if ((nan >> k) & 1) y[i + k] = f2h_nan(x[i + k]);
      }
    }
  }
  for (; i < n; ++i) y[i] = __builtin_isnan(x[i]) ? f2h_nan(x[i]) : f2h(x[i]);
}

inline void quantize_bf16(const float* x, void* dst, int64_t n) {
  auto* y = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
  for (; i + 16 <= n; i += 16) {
    __m256i r[2];
    int nan = 0;
    for (int k = 0; k < 2; ++k) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      nan |= _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) << (8 * k);
      const __m256i u = _mm256_castps_si256(v);
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
      r[k] = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, lsb)), 16);
    }
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), _MM_SHUFFLE(3, 1, 2, 0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), p);
    if (nan != 0) {
      for (int k = 0; k < 16; ++k) {
        if ((nan >> k) & 1) y[i + k] = f2bf_nan(x[i + k]);
      }
    }
  }
  for (; i < n; ++i) y[i] = f2bf(x[i]);
}

}  // namespace
}  // namespace sniper::x86
