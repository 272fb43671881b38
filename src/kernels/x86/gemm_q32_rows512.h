// SPDX-License-Identifier: MIT
// Matvec and gemm for the 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) at the
// AVX-512 VNNI tier, with 16 weight rows in the 16 dword lanes of a zmm, bit-identical to the
// 256-bit kernels of dot_q32.h and to the ref tier.
//
// Why. The reference order gives every (row, token) eight float accumulators, lane k holding the
// products of elements 4k..4k+3 of every block: per block an exact integer dot per lane, then
// acc[k] = fma(d_w * d_a, float(dot_k), acc[k]). The 256-bit kernel runs that on one row at a
// time: eight lanes per instruction, and for one token a single chain of dependent FMAs per row
// (4 cycles a block: decode ran at 17-40 GB/s a core, latency-bound). With rows in lanes the
// eight accumulators of 16 rows are 8 zmm: for accumulator k, one vpdpbusd multiplies bytes
// 4k..4k+3 of every row's block by the same 4 activation bytes (a broadcast from memory), one
// convert and one FMA finish the block. Each lane sees exactly the reference's operations in its
// order, so nothing changes in the results; the final hsum of the 8 accumulators is 7 adds of
// whole registers.
//
// Unsigned weights. vpdpbusd takes u8 x s8. Each format decodes to unsigned bytes u with its
// value u - c (Q8_0: q + 128, c = 128; Q4_0: c = 8; Q5_0: c = 16; IQ4_NL: its table + 128,
// c = 128; Q4_1 / Q5_1: c = 0, their min goes through the activation sum s): the integer dot
// starts from -c * (sum of the 4 activation bytes), the same exact integer as the signed dot.
//
// The transposed weights. For each group of 16 rows a block is decoded and transposed into the
// row-lane form (8 zmm of bytes + the rows' d and m): on the fly for one token (nothing to reuse),
// and into a copy on the stack for batches, made once per group and reused by every token pair.
// The file's bytes are not changed (streamed experts need no other layout).
// Include only from AVX-512 TUs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

#include "kernels/x86/dot_q32.h"
#include "kernels/x86/gemm_rows512.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h).
namespace {

// One block of 16 rows in row-lane form.
struct alignas(64) Q32Block {
  __m512i q[8];  // lane r of q[k]: row r's values 4k..4k+3 (unsigned bytes)
  __m512 d;      // lane r: row r's d
  __m512 m;      // lane r: row r's m (formats with a min)
};

// Longest row the batched path copies (the copy is kQ32RowsMaxBlocks * 640 bytes of stack,
// 240 KB); longer rows run the token pairs on blocks transposed on the fly.
constexpr int64_t kQ32RowsMaxBlocks = 384;
// Activation blocks whose -c * lane sums are prepared at once (32 bytes each: 64 KB of stack).
constexpr int64_t kQ32BiasBlocks = 2048;

// Lanes of the 16 rows' 16 packed bytes of block i at byte `offset`: out[j] lane r = dword j of
// row r. Each register takes a 128-bit slice of four rows (row m + 4L in slice L), then two
// rounds of unpacks leave the rows in order. 16 loads and inserts, 8 shuffles.
template <class W>
[[gnu::always_inline]] inline void transpose_16x4(const W* const* rows, int64_t i, size_t offset, __m512i* out) {
  auto at = [&](int r) { return reinterpret_cast<const uint8_t*>(rows[r] + i) + offset; };
  __m512i z[4];
  for (int m = 0; m < 4; ++m) {
    __m512i v = _mm512_castsi128_si512(load128(at(m)));
    v = _mm512_inserti32x4(v, load128(at(m + 4)), 1);
    v = _mm512_inserti32x4(v, load128(at(m + 8)), 2);
    z[m] = _mm512_inserti32x4(v, load128(at(m + 12)), 3);
  }
  const __m512i lo01 = _mm512_unpacklo_epi32(z[0], z[1]), hi01 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i lo23 = _mm512_unpacklo_epi32(z[2], z[3]), hi23 = _mm512_unpackhi_epi32(z[2], z[3]);
  out[0] = _mm512_unpacklo_epi64(lo01, lo23);
  out[1] = _mm512_unpackhi_epi64(lo01, lo23);
  out[2] = _mm512_unpacklo_epi64(hi01, hi23);
  out[3] = _mm512_unpackhi_epi64(hi01, hi23);
}

// Lane r = the u32 at byte `offset` of row r's block i.
template <class W>
[[gnu::always_inline]] inline __m512i row_words16(const W* const* rows, int64_t i, size_t offset) {
  alignas(64) uint32_t v[kRowLanes];
  for (int r = 0; r < kRowLanes; ++r)
    __builtin_memcpy(&v[r], reinterpret_cast<const uint8_t*>(rows[r] + i) + offset, 4);
  return _mm512_load_si512(v);
}

// The packed nibbles of 16 rows in lanes: dword j of a row's 16 bytes holds elements 4j..4j+3 in
// its low nibbles and 16 + 4j.. in its high ones, so q[j] and q[4 + j] come from one register.
template <class W>
[[gnu::always_inline]] inline void nibble_lanes(const W* const* rows, int64_t i, size_t offset, __m512i* q) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  __m512i p[4];
  transpose_16x4(rows, i, offset, p);
  for (int j = 0; j < 4; ++j) {
    q[j] = _mm512_and_si512(p[j], low);
    q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(p[j], 4), low);
  }
}

// Adds the fifth bit (0x10) of the 16 rows' elements: bit e of qh is element e, so lane k of
// q takes bits 4k..4k+3, spread to its four bytes by a 16-entry table.
template <class W>
[[gnu::always_inline]] inline void add_high_bits(const W* const* rows, int64_t i, size_t qh_offset, __m512i* q) {
  const __m512i h = row_words16(rows, i, qh_offset);
  alignas(64) static constexpr uint32_t kSpread[16] = {
      0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010, 0x00101000, 0x00101010,
      0x10000000, 0x10000010, 0x10001000, 0x10001010, 0x10100000, 0x10100010, 0x10101000, 0x10101010};
  const __m512i spread = _mm512_load_si512(kSpread);
  const __m512i nib = _mm512_set1_epi32(0xF);
  for (int k = 0; k < 8; ++k) {
    const __m512i idx = _mm512_and_si512(_mm512_srli_epi32(h, 4 * k), nib);
    q[k] = _mm512_or_si512(q[k], _mm512_permutexvar_epi32(idx, spread));
  }
}

// Row-lane forms of the formats: lay_out(rows, i, q) writes block i of the 16 rows as unsigned
// bytes (q[k] lane r = row r's values 4k..4k+3), each value u standing for u - kOffset. kMin: the
// block has a min m (Q4_1, Q5_1), applied as fma(m, s_a, summ) in block order. kOneTokenLanes:
// one token (decode) takes the row lanes too. Q8_0 does not: row at a time its rows are single
// sequential streams, and that 256-bit kernel read 55-57 GB/s from DRAM on two cores against
// 47-51 for 16 lockstep rows (the row lanes win only in cache); the 4- and 5-bit formats decode
// 16-18 GB/s a core row at a time and gain 60-70% in row lanes.
template <class Fmt, int kC, bool kHasMin, bool kOneToken = true>
struct Q32Lanes {
  using Base = Fmt;  // the 256-bit format policy (dot_q32.h)
  using W = typename Fmt::W;
  using A = typename Fmt::A;
  static constexpr int kOffset = kC;
  static constexpr bool kMin = kHasMin;
  static constexpr bool kOneTokenLanes = kOneToken;
};

struct LanesQ8_0 : Q32Lanes<FmtQ8_0, 128, false, false> {  // q + 128
  static void lay_out(const W* const* rows, int64_t i, __m512i* q) {
    __m512i z[8];
    for (int k = 0; k < 8; ++k) z[k] = two_rows(rows[k][i].qs, rows[k + 8][i].qs);
    transpose_16x8(z, q);
    for (int k = 0; k < 8; ++k) q[k] = _mm512_xor_si512(q[k], _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};
struct LanesQ4_0 : Q32Lanes<FmtQ4_0, 8, false> {
  static void lay_out(const W* const* rows, int64_t i, __m512i* q) { nibble_lanes(rows, i, offsetof(W, qs), q); }
};
struct LanesQ4_1 : Q32Lanes<FmtQ4_1, 0, true> {
  static void lay_out(const W* const* rows, int64_t i, __m512i* q) { nibble_lanes(rows, i, offsetof(W, qs), q); }
};
struct LanesQ5_0 : Q32Lanes<FmtQ5_0, 16, false> {
  static void lay_out(const W* const* rows, int64_t i, __m512i* q) {
    nibble_lanes(rows, i, offsetof(W, qs), q);
    add_high_bits(rows, i, offsetof(W, qh), q);
  }
};
struct LanesQ5_1 : Q32Lanes<FmtQ5_1, 0, true> {
  static void lay_out(const W* const* rows, int64_t i, __m512i* q) {
    nibble_lanes(rows, i, offsetof(W, qs), q);
    add_high_bits(rows, i, offsetof(W, qh), q);
  }
};
struct LanesIQ4_NL : Q32Lanes<FmtIQ4_NL, 128, false> {  // table value + 128
  static void lay_out(const W* const* rows, int64_t i, __m512i* q) {
    nibble_lanes(rows, i, offsetof(W, qs), q);
    const __m512i lut =
        _mm512_xor_si512(_mm512_broadcast_i32x4(load128(kIq4nlValues)), _mm512_set1_epi8(static_cast<char>(0x80)));
    for (int k = 0; k < 8; ++k) q[k] = _mm512_shuffle_epi8(lut, q[k]);
  }
};

template <class F>
[[gnu::always_inline]] inline void lay_out_q32(const typename F::W* const* rows, int64_t i, Q32Block& b) {
  F::lay_out(rows, i, b.q);
  using W = typename F::W;
  b.d = row_halves(rows, sizeof(W) * static_cast<size_t>(i) + offsetof(W, d));
  if constexpr (F::kMin) b.m = row_halves(rows, sizeof(W) * static_cast<size_t>(i) + offsetof(W, m));
}

// bias[8 * i + k] = -c * (sum of activation bytes 4k..4k+3 of block i), for nb blocks.
template <class F>
inline void lane_bias(const typename F::A* a, int64_t nb, int32_t* bias) {
  const __m256i c = _mm256_set1_epi8(static_cast<char>(F::kOffset));
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), c, load256(a[i].qs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bias + 8 * i), _mm256_sub_epi32(_mm256_setzero_si256(), s));
  }
}

// The running sums of 16 rows against NT tokens: acc[t][k] per reference lane k, summ[t] for
// formats with a min.
template <class F, int NT>
struct Q32Acc {
  __m512 acc[NT][8];
  __m512 summ[NT];

  Q32Acc() {
    for (int t = 0; t < NT; ++t) {
      for (int k = 0; k < 8; ++k) acc[t][k] = _mm512_setzero_ps();
      summ[t] = _mm512_setzero_ps();
    }
  }

  // One block: a[t] is token t's block, bias[t] its 8 lane biases (unused when c = 0). Each
  // token's 4-byte groups and biases are loaded as two 128-bit halves and broadcast with
  // in-lane shuffles (vpshufd, on the shuffle ports): 16 broadcast loads per token and block
  // kept the load ports busier than the dot and FMA ports.
  [[gnu::always_inline]] inline void add(const Q32Block& b, const typename F::A* const* a, const int32_t* const* bias) {
    __m512i q[8];
    for (int k = 0; k < 8; ++k) q[k] = _mm512_load_si512(&b.q[k]);
    for (int t = 0; t < NT; ++t) {
      const __m512 sc = _mm512_mul_ps(b.d, _mm512_set1_ps(h2f(a[t]->d)));
      const __m512i a4[2] = {_mm512_broadcast_i32x4(load128(a[t]->qs)), _mm512_broadcast_i32x4(load128(a[t]->qs + 16))};
      __m512i b4[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
      if constexpr (F::kOffset != 0) {
        b4[0] = _mm512_broadcast_i32x4(load128(bias[t]));
        b4[1] = _mm512_broadcast_i32x4(load128(bias[t] + 4));
      }
      lanes(q, a4, b4, sc, acc[t], std::make_integer_sequence<int, 8>{});
      if constexpr (F::kMin) summ[t] = _mm512_fmadd_ps(b.m, _mm512_set1_ps(h2f(a[t]->s)), summ[t]);
    }
  }

  template <int... kK>
  [[gnu::always_inline]] static inline void lanes(const __m512i* q, const __m512i* a4, const __m512i* b4, __m512 sc,
                                                  __m512* acc, std::integer_sequence<int, kK...>) {
    auto one = [&](auto kc) {
      constexpr int k = decltype(kc)::value;
      constexpr _MM_PERM_ENUM kSel = static_cast<_MM_PERM_ENUM>((k % 4) * 0x55);
      const __m512i init = F::kOffset != 0 ? _mm512_shuffle_epi32(b4[k / 4], kSel) : _mm512_setzero_si512();
      const __m512i x = _mm512_dpbusd_epi32(init, q[k], _mm512_shuffle_epi32(a4[k / 4], kSel));
      acc[k] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(x), acc[k]);
    };
    (one(std::integral_constant<int, kK>{}), ...);
  }

  // hsum8 of each row's lanes ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), + summ.
  void store(float* out, int64_t out_stride, __mmask16 lanes) const {
    for (int t = 0; t < NT; ++t) {
      const __m512* v = acc[t];
      __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(v[0], v[4]), _mm512_add_ps(v[2], v[6])),
                               _mm512_add_ps(_mm512_add_ps(v[1], v[5]), _mm512_add_ps(v[3], v[7])));
      if constexpr (F::kMin) s = _mm512_add_ps(s, summ[t]);
      _mm512_mask_storeu_ps(out + t * out_stride, lanes, s);
    }
  }
};

// Prefetches the next group of rows while the current one computes. A group reads 16 rows in
// lockstep (16 short streams a core), which the hardware prefetchers follow poorly from DRAM:
// without this, one-token Q8_0 read 33 GB/s on two cores and Q4_0 27; with it, Q4_0 reads 55-57.
// The next group's rows are one contiguous region; its lines are requested in order, spread over
// the current group's block steps.
class NextGroupPrefetch {
 public:
  NextGroupPrefetch(const uint8_t* begin, const uint8_t* end, int64_t steps)
      : p_(reinterpret_cast<const char*>(begin)), end_(reinterpret_cast<const char*>(end)) {
    const int64_t lines = (end - begin + 63) / 64;
    per_step_ = steps > 0 ? (lines + steps - 1) / steps : lines;
  }
  [[gnu::always_inline]] inline void step() {
    for (int64_t k = 0; k < per_step_ && p_ < end_; ++k, p_ += 64) _mm_prefetch(p_, _MM_HINT_T1);
  }

 private:
  const char* p_;
  const char* end_;
  int64_t per_step_;
};

// Tokens per pass over a group's blocks: 8 accumulators each, plus the 8 weight registers.
constexpr int kQ32PassTokens = 2;

// Whether gemm_q32_rows takes rows of nb blocks: the lane biases of a pass's tokens must fit
// its buffer (rows of up to 32768 elements).
constexpr bool q32_rows_fit(int64_t nb) { return nb * kQ32PassTokens <= kQ32BiasBlocks; }

// KernelTable::gemm for format F: rows [0, n_rows) against tokens [0, n_tok), q32_rows_fit(n / 32),
// and n_tok >= 2 unless F::kOneTokenLanes.
template <class F>
void gemm_q32_rows(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                   size_t a_row_bytes, float* out, int64_t out_stride) {
  using W = typename F::W;
  using A = typename F::A;
  const int64_t nb = n / 32;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  // Batches transpose each group of rows once into `blocks`; one token (or rows too long for the
  // copy) transposes each block as it goes.
  const bool copy = n_tok > kQ32PassTokens && nb <= kQ32RowsMaxBlocks;
  // Tokens come in slices whose lane biases are prepared at once (a multiple of the pass).
  const int64_t slice =
      std::max<int64_t>(1, kQ32BiasBlocks / std::max<int64_t>(nb, 1) / kQ32PassTokens) * kQ32PassTokens;
  alignas(64) int32_t bias[F::kOffset != 0 ? 8 * kQ32BiasBlocks : 8];
  // Without an offset the biases are never read and `bias` holds one block's lanes: every
  // token's and block's pointer is its start rather than past its end.
  constexpr int64_t kBiasStride = F::kOffset != 0 ? 8 : 0;
  Q32Block blocks[kQ32RowsMaxBlocks];
  for (int64_t s0 = 0; s0 < n_tok; s0 += slice) {
    const int64_t s1 = std::min(n_tok, s0 + slice);
    if constexpr (F::kOffset != 0) {
      for (int64_t t = s0; t < s1; ++t) {
        lane_bias<F>(reinterpret_cast<const A*>(ab + static_cast<size_t>(t) * a_row_bytes), nb,
                     bias + 8 * nb * (t - s0));
      }
    }
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRowLanes) {
      const int nr = static_cast<int>(std::min<int64_t>(n_rows - r0, kRowLanes));
      const W* rows[kRowLanes];  // a group of fewer than 16 rows repeats its last row
      for (int r = 0; r < kRowLanes; ++r) {
        rows[r] = reinterpret_cast<const W*>(wb + static_cast<size_t>(r0 + std::min(r, nr - 1)) * w_row_bytes);
      }
      const uint8_t* next = wb + static_cast<size_t>(std::min(n_rows, r0 + kRowLanes)) * w_row_bytes;
      NextGroupPrefetch prefetch(next, wb + static_cast<size_t>(std::min(n_rows, r0 + 2 * kRowLanes)) * w_row_bytes,
                                 nb);
      if (copy) {
        for (int64_t i = 0; i < nb; ++i) {
          prefetch.step();
          lay_out_q32<F>(rows, i, blocks[i]);
        }
      }
      const __mmask16 lanes = static_cast<__mmask16>((1u << nr) - 1);
      for (int64_t t0 = s0; t0 < s1; t0 += kQ32PassTokens) {
        const int nt = static_cast<int>(std::min<int64_t>(s1 - t0, kQ32PassTokens));
        float* o = out + t0 * out_stride + r0;
        auto pass = [&](auto count) {
          constexpr int NT = decltype(count)::value;
          const A* at[NT];
          const int32_t* bt[NT];
          for (int t = 0; t < NT; ++t) {
            at[t] = reinterpret_cast<const A*>(ab + static_cast<size_t>(t0 + t) * a_row_bytes);
            bt[t] = bias + kBiasStride * nb * (t0 + t - s0);
          }
          Q32Acc<F, NT> acc;
          Q32Block fly;
          for (int64_t i = 0; i < nb; ++i) {
            const A* ai[NT];
            const int32_t* bi[NT];
            for (int t = 0; t < NT; ++t) {
              ai[t] = at[t] + i;
              bi[t] = bt[t] + kBiasStride * i;
            }
            if (copy) {
              acc.add(blocks[i], ai, bi);
            } else {
              prefetch.step();  // the first pass only: the region is exhausted after it
              lay_out_q32<F>(rows, i, fly);
              acc.add(fly, ai, bi);
            }
          }
          acc.store(o, out_stride, lanes);
        };
        if (nt == 1) {
          pass(std::integral_constant<int, 1>{});
        } else {
          pass(std::integral_constant<int, kQ32PassTokens>{});
        }
      }
    }
  }
}

}  // namespace
}  // namespace sniper::x86
