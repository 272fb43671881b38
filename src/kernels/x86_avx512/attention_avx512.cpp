// SPDX-License-Identifier: MIT
// AVX-512 products of grouped attention over an f16 cache (kernels/attention.cpp), in the two
// orders of the reference engine, bit-identical to the F16 gemm / gemm_batched entries (and so to
// the ref tier):
//   * KQ, vec_dot order (ggml_vec_dot_f16: 4 accumulators of 16 lanes over steps of 64, combined
//     (a0+a2)+(a1+a3), then _mm512_reduce_add_ps) and tinyBLAS order (one accumulator over steps
//     of 16, then _mm512_reduce_add_ps). Sixteen cached positions at a time: their K rows are
//     widened once into an L1 tile shared by the group's heads (the next tile is widened a
//     share at a time between the heads' passes over this one), and the sixteen horizontal sums
//     run as one transposed tree that adds exactly the lane pairs _mm512_reduce_add_ps adds
//     ((i, i+8), then (i, i+4), (i, i+2), (i, i+1)), leaving the sums in one register.
//   * KQV over the transposed V: one V^T row at a time against up to four heads' weights, in
//     position chunks whose weights stay in L1; each row's accumulators are parked in scratch
//     between chunks, so every accumulator sees the same FMAs in the same order as one long dot.
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the masked-off source, which trips
// -Wuninitialized/-Wmaybe-uninitialized at -O2+ (a false positive: those lanes are never read).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: Clang has no -Wmaybe-uninitialized
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/kernel_registry.h"
#include "kernels/x86/count_dispatch.h"
#include "kernels/x86/transposed_tree512.h"

namespace sniper::kernels_internal {

namespace {

constexpr int kRowsPerTile = 16;
constexpr int64_t kPrefetchTiles = 4;  // KQ: how far ahead (in tiles of rows) K rows are prefetched
constexpr int64_t kChunk = 2048;       // positions per KQV chunk: 4 heads x 2048 x 4 B = 32 KB of weights (L1)

// One head's sum over one widened K row (kHd floats) against the query in registers.
template <bool kTiny, int kHd>
inline __m512 row_dot(const float* k, const __m512* q) {
  if constexpr (kTiny) {
    __m512 sum = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int i = 0; i < kHd / 16; ++i) sum = _mm512_fmadd_ps(_mm512_load_ps(k + 16 * i), q[i], sum);
    return sum;
  } else {
    __m512 a[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) a[j] = _mm512_fmadd_ps(_mm512_load_ps(k + 16 * j), q[j], _mm512_setzero_ps());
#pragma GCC unroll 4
    for (int i = 64; i < kHd; i += 64) {
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) a[j] = _mm512_fmadd_ps(_mm512_load_ps(k + i + 16 * j), q[i / 16 + j], a[j]);
    }
    return _mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3]));
  }
}

// The 16 rows' sums through the transposed tree (x86/transposed_tree512.h): row r of the tile is
// pushed as slot tree_slot_of(r), so lane r of the result is row r's score.
template <bool kTiny, int kHd, int... kSlots>
inline __m512 tile_sums(const float* kf, const __m512* q, std::integer_sequence<int, kSlots...>) {
  x86::TransposedTree16 tree;
  (tree.push<kSlots>(row_dot<kTiny, kHd>(kf + x86::tree_slot_of(kSlots) * kHd, q)), ...);
  return tree.result;
}

// One head against a tile of 16 widened K rows (row r at kf + r * kHd). kHd is a compile-time
// head_dim so that every loop unrolls; the query stays in registers.
template <bool kTiny, int kHd>
inline void kq_tile(const float* kf, const float* q, float* out, int nr) {
  __m512 qv[kHd / 16];
#pragma GCC unroll 16
  for (int i = 0; i < kHd / 16; ++i) qv[i] = _mm512_loadu_ps(q + 16 * i);
  const __m512 res = tile_sums<kTiny, kHd>(kf, qv, std::make_integer_sequence<int, kRowsPerTile>{});
  if (nr == kRowsPerTile) {
    _mm512_storeu_ps(out, res);
  } else {
    _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << nr) - 1), res);
  }
}

inline __m512 widen(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Widens rows [ra, rb) of the tile of 16 K rows starting at r0 into kf (row r at kf + r * kHd);
// rows past n_rows become zeros.
template <int kHd>
inline void widen_rows(const uint8_t* k, size_t k_row_bytes, int64_t r0, int64_t n_rows, int ra, int rb, float* kf) {
  for (int r = ra; r < rb; ++r) {
    float* dst = kf + r * kHd;
    if (r0 + r >= n_rows) {
      std::memset(dst, 0, sizeof(float) * kHd);
      continue;
    }
    const auto* src = reinterpret_cast<const uint16_t*>(k + static_cast<size_t>(r0 + r) * k_row_bytes);
#pragma GCC unroll 16
    for (int i = 0; i < kHd; i += 16) _mm512_store_ps(dst + i, widen(src + i));
  }
}

template <bool kTiny, int kHd>
void kq(int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes, const float* q, float* scores,
        int64_t s_stride) {
  // Two tiles: each head's pass over the current one also widens its share of the next one, so
  // the K stream is read at an even rate under the arithmetic. Widening a whole tile between two
  // tiles' work (a burst of 64 lines, then none) left the loads waiting on memory: 64 against
  // 53 us per kv head at 4,096 positions from DRAM, with the same prefetches.
  alignas(64) float kf[2][kRowsPerTile * kHd];
  widen_rows<kHd>(k, k_row_bytes, 0, n_rows, 0, kRowsPerTile, kf[0]);
  int cur = 0;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowsPerTile, cur ^= 1) {
    const int nr = static_cast<int>(n_rows - r0 < kRowsPerTile ? n_rows - r0 : kRowsPerTile);
    const int64_t r_next = r0 + kRowsPerTile;
    // The rows are a head's slice of each cached position (k_row_bytes apart): too sparse for the
    // hardware prefetchers. The rows kPrefetchTiles tiles ahead are fetched explicitly, spread
    // over the heads' work so that the fill buffers never fill up in a burst.
    const int64_t pf0 = r0 + kPrefetchTiles * kRowsPerTile;
    const int64_t pf_n = std::max<int64_t>(0, std::min<int64_t>(kRowsPerTile, n_rows - pf0));
    int64_t pf_next = 0;
    for (int64_t g = 0; g < n_heads; ++g) {
      for (const int64_t until = pf_n * (g + 1) / n_heads; pf_next < until; ++pf_next) {
        const auto* row = reinterpret_cast<const char*>(k + static_cast<size_t>(pf0 + pf_next) * k_row_bytes);
#pragma GCC unroll 8
        for (int off = 0; off < 2 * kHd; off += 64) _mm_prefetch(row + off, _MM_HINT_T0);
      }
      if (r_next < n_rows) {
        widen_rows<kHd>(k, k_row_bytes, r_next, n_rows, static_cast<int>(kRowsPerTile * g / n_heads),
                        static_cast<int>(kRowsPerTile * (g + 1) / n_heads), kf[cur ^ 1]);
      }
      // The tile and the query are loop-invariant across the heads: left visible, GCC hoists
      // every load out of this loop and spills them all (a copy of the tile per tile).
      const float* kt = kf[cur];
      const float* qg = q + g * kHd;
      asm("" : "+r"(kt), "+r"(qg));
      kq_tile<kTiny, kHd>(kt, qg, scores + g * s_stride + r0, nr);
    }
  }
}

template <bool kTiny>
bool kq_dispatch(int64_t hd, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes, const float* q,
                 float* scores, int64_t s_stride) {
  switch (hd) {
    case 64: kq<kTiny, 64>(n_rows, n_heads, k, k_row_bytes, q, scores, s_stride); return true;
    case 128: kq<kTiny, 128>(n_rows, n_heads, k, k_row_bytes, q, scores, s_stride); return true;
    case 256: kq<kTiny, 256>(n_rows, n_heads, k, k_row_bytes, q, scores, s_stride); return true;
    default: return false;
  }
}

// Each row's chunk is a short stream the hardware prefetchers would only pick up part way, so
// the row two ahead is prefetched as this one is read: the two lines of 64 positions per step
// (pf is null past the last row).
inline void prefetch_v(const char* pf, int64_t i) {
  if (pf == nullptr) return;
  _mm_prefetch(pf + 2 * i, _MM_HINT_T1);
  _mm_prefetch(pf + 2 * i + 64, _MM_HINT_T1);
}

inline const char* row_ahead(const uint8_t* vt, size_t vt_row_bytes, int64_t d, int64_t hd) {
  return d < hd ? reinterpret_cast<const char*>(vt + static_cast<size_t>(d) * vt_row_bytes) : nullptr;
}

// One chunk [c0, c1) of positions for NG (<= 4) heads, vec order: per (row, head) 4
// accumulators over steps of 64, parked in `state` between chunks (first: start from zero;
// last: reduce into out).
template <int NG>
void kqv_vec_chunk(int64_t c0, int64_t c1, bool first, bool last, int64_t hd, const uint8_t* vt, size_t vt_row_bytes,
                   const float* p, int64_t p_stride, float* out, float* state) {
  for (int64_t d = 0; d < hd; ++d) {
    const auto* row = reinterpret_cast<const uint16_t*>(vt + static_cast<size_t>(d) * vt_row_bytes);
    float* st = state + d * (NG * 4 * 16);
    __m512 acc[NG][4];
    for (int t = 0; t < NG; ++t) {
      for (int j = 0; j < 4; ++j) acc[t][j] = first ? _mm512_setzero_ps() : _mm512_load_ps(st + (t * 4 + j) * 16);
    }
    const char* pf = row_ahead(vt, vt_row_bytes, d + 2, hd);
    for (int64_t i = c0; i < c1; i += 64) {
      prefetch_v(pf, i);
      for (int j = 0; j < 4; ++j) {
        const __m512 w = widen(row + i + 16 * j);
        for (int t = 0; t < NG; ++t)
          acc[t][j] = _mm512_fmadd_ps(w, _mm512_loadu_ps(p + t * p_stride + i + 16 * j), acc[t][j]);
      }
    }
    for (int t = 0; t < NG; ++t) {
      if (last) {
        out[t * hd + d] = _mm512_reduce_add_ps(
            _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][2]), _mm512_add_ps(acc[t][1], acc[t][3])));
      } else {
        for (int j = 0; j < 4; ++j) _mm512_store_ps(st + (t * 4 + j) * 16, acc[t][j]);
      }
    }
  }
}

// The same in tinyBLAS order: per (row, head) one accumulator over steps of 16; two rows at a
// time so that enough independent FMA chains are in flight.
template <int NG>
void kqv_tiny_chunk(int64_t c0, int64_t c1, bool first, bool last, int64_t hd, const uint8_t* vt, size_t vt_row_bytes,
                    const float* p, int64_t p_stride, float* out, float* state) {
  for (int64_t d0 = 0; d0 < hd; d0 += 2) {
    const int nd = hd - d0 < 2 ? 1 : 2;
    const uint16_t* row[2];
    for (int e = 0; e < 2; ++e) {
      row[e] = reinterpret_cast<const uint16_t*>(vt + static_cast<size_t>(d0 + (e < nd ? e : 0)) * vt_row_bytes);
    }
    float* st = state + d0 * (NG * 16);
    __m512 acc[2][NG];
    for (int e = 0; e < 2; ++e) {
      for (int t = 0; t < NG; ++t) acc[e][t] = first ? _mm512_setzero_ps() : _mm512_load_ps(st + (e * NG + t) * 16);
    }
    const char* pf2 = row_ahead(vt, vt_row_bytes, d0 + 2, hd);
    const char* pf3 = row_ahead(vt, vt_row_bytes, d0 + 3, hd);
    for (int64_t i = c0; i < c1; i += 16) {
      if (i % 64 == 0) {
        prefetch_v(pf2, i);
        prefetch_v(pf3, i);
      }
      for (int e = 0; e < 2; ++e) {
        const __m512 w = widen(row[e] + i);
        for (int t = 0; t < NG; ++t) acc[e][t] = _mm512_fmadd_ps(w, _mm512_loadu_ps(p + t * p_stride + i), acc[e][t]);
      }
    }
    for (int e = 0; e < nd; ++e) {
      for (int t = 0; t < NG; ++t) {
        if (last) {
          out[t * hd + d0 + e] = _mm512_reduce_add_ps(acc[e][t]);
        } else {
          _mm512_store_ps(st + (e * NG + t) * 16, acc[e][t]);
        }
      }
    }
  }
}

// Chunks outer, tiles of up to 4 heads inner: a group of more than 4 heads re-reads each chunk
// of V^T from L2, not from memory. Each tile parks its accumulators in its own part of state.
template <bool kTiny>
void kqv(int64_t n, int64_t hd, int64_t n_heads, const uint8_t* vt, size_t vt_row_bytes, const float* p,
         int64_t p_stride, float* out, float* state) {
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t c1 = n - c0 < kChunk ? n : c0 + kChunk;
    const bool first = c0 == 0, last = c1 == n;
    for (int64_t g0 = 0; g0 < n_heads; g0 += 4) {
      const float* pg = p + g0 * p_stride;
      float* og = out + g0 * hd;
      float* st = state + (g0 / 4) * kqv_state_floats(hd, 4);
      const int ng = static_cast<int>(n_heads - g0 < 4 ? n_heads - g0 : 4);
      x86::with_count<4>(ng, [&](auto c) {
        if constexpr (kTiny) {
          kqv_tiny_chunk<c.value>(c0, c1, first, last, hd, vt, vt_row_bytes, pg, p_stride, og, st);
        } else {
          kqv_vec_chunk<c.value>(c0, c1, first, last, hd, vt, vt_row_bytes, pg, p_stride, og, st);
        }
      });
    }
  }
}

}  // namespace

bool attention_kq_f16_avx512(int64_t hd, int64_t n_rows, int64_t n_heads, const uint8_t* k, size_t k_row_bytes,
                             const float* q, float* scores, int64_t s_stride, bool tiny) {
  return (tiny ? kq_dispatch<true> : kq_dispatch<false>)(hd, n_rows, n_heads, k, k_row_bytes, q, scores, s_stride);
}

void attention_kqv_f16_avx512(int64_t n, int64_t hd, int64_t n_heads, const uint8_t* vt, size_t vt_row_bytes,
                              const float* p, int64_t p_stride, float* out, float* state, bool tiny) {
  (tiny ? kqv<true> : kqv<false>)(n, hd, n_heads, vt, vt_row_bytes, p, p_stride, out, state);
}

}  // namespace sniper::kernels_internal
