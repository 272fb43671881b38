// SPDX-License-Identifier: MIT
// Helpers shared by the x86 kernel templates (dot_q32.h, dot_kquants.h, dot_float.h,
// quantize_acts.h) and the gemm tile driver. Included only from translation units compiled
// with at least the AVX2 flag set (-mavx2 -mfma -mf16c); see cmake/isa.cmake.
//
// Kernel concept used throughout: a struct K with
//   template <int NT> static void dot(int64_t n, const void* w, const void* const* a, float* out);
// computing out[t] = dot(w, a[t]) for t < NT. Each token's accumulators see exactly the same
// operations in the same order for every NT, so a (row, token) result does not depend on how
// the gemm driver tiles tokens (this is what makes matmul bitwise independent of threading).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace sniper::x86 {
// Internal linkage on purpose: these are compiled once per ISA with different -m flags, and
// must not be merged across ISA translation units by the linker (ODR).
namespace {

// Maximum tokens per tile; the gemm driver reuses each decoded weight block for this many.
constexpr int kMaxTileTokens = 4;

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
// Round-to-nearest-even float -> half; equals base/fp16.h fp32_to_fp16 for non-NaN input.
// (Local copies instead of the shared inline helpers keep ISA-flagged code out of COMDATs.)
inline uint16_t f2h(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline float bf2f(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

inline float hsum_ps(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(1, 0, 3, 2)));
  x = _mm_add_epi32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(x);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// 16 bytes of packed nibbles -> 32 bytes: low nibbles in bytes 0..15, high nibbles in 16..31
// (the element order of the 32-element formats).
inline __m256i unpack_nibbles(const uint8_t* p) {
  const __m128i x = load128(p);
  const __m256i v = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

// 32 bits (little-endian bit j = element j) -> 32 bytes, 0xFF where the bit is set.
inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i shuf =
      _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), shuf);
  // Byte k of each group keeps all bits but bit k set; it becomes 0xFF iff bit k was set.
  v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(v, _mm256_set1_epi64x(-1));
}

// Signed x signed byte dot: acc += per-i32-lane sums of 4 products. |y| must be <= 127
// (true for every q8 activation format); x may be -128.
template <class Isa>
inline __m256i dot_s8s8(__m256i acc, __m256i x, __m256i y) {
  return Isa::dot_u8s8(acc, _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// Signed-byte dot with one 16-bit scale per 16-element half (or per lane group):
// per-i32 sums of u8*s8 products, each pair sum multiplied by the matching i16 of `scale`.
// u*s pair sums must fit i16 (u <= 128, |s| <= 127).
inline __m256i dot_u8s8_scaled(__m256i u, __m256i s, __m256i scale16) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16);
}

// i16 scale a for elements 0..15 of a 32-byte chunk and b for elements 16..31.
inline __m256i scale_pair16(int a, int b) {
  return _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(a)), _mm_set1_epi16(static_cast<int16_t>(b)));
}

// vec_dot entry (KernelTable::vec_dot signature) for kernel K.
template <class K>
void vec_dot_entry(int64_t n, float* out, const void* w, const void* a) {
  const void* ap[1] = {a};
  K::template dot<1>(n, w, ap, out);
}

// gemm entry (KernelTable::gemm signature) for kernel K: tokens in tiles of kMaxTileTokens,
// rows inside, so a tile's activations stay in L1 while weight rows stream.
template <class K>
void gemm_entry(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                size_t a_row_bytes, float* out, int64_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTileTokens) {
    const int nt = static_cast<int>(n_tok - t0 < kMaxTileTokens ? n_tok - t0 : kMaxTileTokens);
    const void* ap[kMaxTileTokens];
    for (int t = 0; t < nt; ++t) ap[t] = ab + static_cast<size_t>(t0 + t) * a_row_bytes;
    float* o = out + t0 * out_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const void* wr = wb + static_cast<size_t>(r) * w_row_bytes;
      float res[kMaxTileTokens];
      switch (nt) {
        case 1: K::template dot<1>(n, wr, ap, res); break;
        case 2: K::template dot<2>(n, wr, ap, res); break;
        case 3: K::template dot<3>(n, wr, ap, res); break;
        default: K::template dot<4>(n, wr, ap, res); break;
      }
      for (int t = 0; t < nt; ++t) o[t * out_stride + r] = res[t];
    }
  }
}

}  // namespace
}  // namespace sniper::x86
