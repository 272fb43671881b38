// SPDX-License-Identifier: MIT
// AVX-512 KQ of grouped attention over a q8_0 cache (kernels/attention.cpp): the scores of up to
// eight query heads against every cached K row in one pass over K, bit-identical to the Q8_0
// table's gemm (x86/dot_q32.h: per block an exact 8-lane integer dot, one FMA of d_k * d_q into
// an 8-lane float accumulator, then hsum_ps and + 0.0f).
//   * Two cached rows share a register: row j in the low 256 bits, row j+1 in the high ones, so
//     the per-block float steps (convert, scale, FMA) run at full width.
//   * The signed x signed integer dot is vpdpbusd on (k + 128) and q, started from -128 * sum(q)
//     per lane (precomputed per head and block): the same exact integers as the sign trick.
//   * The eight heads' horizontal sums run as one transposed tree that adds exactly the lane pairs
//     hsum_ps adds ((i, i+4), then (i, i+2), then (i, i+1)), leaving 16 scores in one register.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include "kernels/kernel_registry.h"
#include "kernels/x86/count_dispatch.h"
#include "kernels/x86/x86_util.h"
#include "quant/q8_0.h"

namespace sniper::kernels_internal {

namespace {

constexpr int kHeads = 8;          // heads per pass over K
constexpr int64_t kMaxBlocks = 8;  // head_dim <= 256
constexpr int64_t kPrefetchRows = 16;

inline __m256i load_qs(const BlockQ8_0& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }

// The query heads of one pass in the form the loop wants: each block's 32 bytes twice (one copy
// per row of a register), -128 * (sum of each 4 bytes) per lane, and the block scale.
struct QueryTile {
  alignas(64) uint8_t q[kHeads][kMaxBlocks][64];
  alignas(64) int32_t neg_bias[kHeads][kMaxBlocks][16];
  float d[kHeads][kMaxBlocks];
};

void fill_query_tile(const uint8_t* q, size_t q_row_bytes, int n_heads, int64_t nb, QueryTile& t) {
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int g = 0; g < n_heads; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(q + q_row_bytes * static_cast<size_t>(g))[b];
      const __m512i qq = _mm512_broadcast_i64x4(load_qs(blk));
      _mm512_store_si512(t.q[g][b], qq);
      const __m512i bias = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, qq);
      _mm512_store_si512(t.neg_bias[g][b], _mm512_sub_epi32(_mm512_setzero_si512(), bias));
      t.d[g][b] = x86::h2f(blk.d);
    }
  }
}

// Sixteen scores from eight accumulators (rows j, j+1 in the two halves of each): element
// 4 * l + e of the result is head 2 * e + (l >> 1), row j + (l & 1), each the hsum_ps of its
// eight lanes: ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
inline __m512 reduce8x2(const __m512* acc) {
  __m512 s[4], t[2];
  for (int k = 0; k < 4; ++k) {  // a_i + a_{i+4}: [head 2k row j, row j+1, head 2k+1 row j, row j+1]
    const __m512 a = acc[2 * k], b = acc[2 * k + 1];
    s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int k = 0; k < 2; ++k) {  // x0 + x2, x1 + x3
    const __m512 a = s[2 * k], b = s[2 * k + 1];
    t[k] = _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // y0 + y1
  return _mm512_add_ps(_mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

template <int G>
void kq_pass(int64_t nb, int64_t n_rows, const uint8_t* k, size_t k_row_bytes, const QueryTile& qt, float* scores,
             int64_t s_stride) {
  const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
  // Element p of the reordered result is head p / 2, row j + p % 2 (see reduce8x2).
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const size_t head_bytes = sizeof(BlockQ8_0) * static_cast<size_t>(nb);
  for (int64_t j = 0; j < n_rows; j += 2) {
    const bool two = j + 1 < n_rows;
    const uint8_t* r0 = k + k_row_bytes * static_cast<size_t>(j);
    const uint8_t* r1 = two ? r0 + k_row_bytes : r0;  // a lone last row is computed twice, stored once
    if (j + kPrefetchRows + 1 < n_rows) {
      for (int i = 0; i < 2; ++i) {
        const char* p = reinterpret_cast<const char*>(r0 + k_row_bytes * static_cast<size_t>(kPrefetchRows + i));
        for (size_t off = 0; off < head_bytes + 63; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
      }
    }
    const auto* k0 = reinterpret_cast<const BlockQ8_0*>(r0);
    const auto* k1 = reinterpret_cast<const BlockQ8_0*>(r1);
    __m512 acc[kHeads];
    for (int g = 0; g < kHeads; ++g) acc[g] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const __m512i u =
          _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(load_qs(k0[b])), load_qs(k1[b]), 1), k128);
      const __m512 dk =
          _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(x86::h2f(k0[b].d)), _mm512_set1_ps(x86::h2f(k1[b].d)));
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        const __m512i s = _mm512_dpbusd_epi32(_mm512_load_si512(qt.neg_bias[g][b]), u, _mm512_load_si512(qt.q[g][b]));
        acc[g] = _mm512_fmadd_ps(_mm512_mul_ps(dk, _mm512_set1_ps(qt.d[g][b])), _mm512_cvtepi32_ps(s), acc[g]);
      }
    }
    alignas(64) float res[16];
    _mm512_store_ps(res, _mm512_permutexvar_ps(order, _mm512_add_ps(reduce8x2(acc), _mm512_setzero_ps())));
    for (int g = 0; g < G; ++g) {
      float* o = scores + s_stride * g + j;
      o[0] = res[2 * g];
      if (two) o[1] = res[2 * g + 1];
    }
  }
}

}  // namespace

bool attention_kq_q8_0_avx512(int64_t n, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes,
                              const uint8_t* q, size_t q_row_bytes, float* scores, int64_t s_stride) {
  const int64_t nb = n / 32;
  if (n % 32 != 0 || nb < 1 || nb > kMaxBlocks) return false;
  QueryTile qt;
  for (int64_t g0 = 0; g0 < n_heads; g0 += kHeads) {
    const int g = static_cast<int>(n_heads - g0 < kHeads ? n_heads - g0 : kHeads);
    fill_query_tile(q + q_row_bytes * static_cast<size_t>(g0), q_row_bytes, g, nb, qt);
    float* s = scores + s_stride * g0;
    x86::with_count<kHeads>(g, [&](auto c) { kq_pass<c.value>(nb, n_rows, k, k_row_bytes, qt, s, s_stride); });
  }
  return true;
}

}  // namespace sniper::kernels_internal
