// SPDX-License-Identifier: MIT
// 512-bit integer paths for the two hot Q4_K_M formats (Q4_K, Q6_K) against q8_K activations,
// used by the AVX-512 tier in place of the 256-bit templates of dot_kquants.h. Each zmm holds
// two 32-element chunks that the 256-bit kernel processes one after the other, so the upper
// and lower 256-bit halves are added before the float step: per super-block the 8 int32 lanes
// hold exactly the same integers as in dot_kquants.h (integer sums are exact in any order), and
// the float operations (one convert + FMA per super-block and token, the same final reduction)
// are unchanged, so results are bitwise equal to the 256-bit kernels and the ref tier. The
// i16 pair sums are scaled and accumulated with VNNI vpdpwssd (= madd + add, exact here).
// Weights are prefetched a fixed distance ahead (rows of a chunk are contiguous), which hides
// DRAM latency for the single-token decode stream, and gemm tiles 8 tokens (32 zmm registers)
// so prefill decodes each weight block half as often. Include only from AVX-512 TUs.
#pragma once

#include "kernels/x86/dot_kquants.h"

namespace sniper::x86 {
// Internal linkage on purpose (see dot_kquants.h).
namespace {

// Prefetch distance in bytes ahead of the super-block being processed.
constexpr int kPrefetchBytes = 3072;

// Prefetches the `bytes` bytes kPrefetchBytes past `p`, where they lie before `limit` (the end
// of the rows this call owns: nothing outside them is pulled into cache).
inline void prefetch_ahead(const void* p, int bytes, const uint8_t* limit) {
  const uint8_t* c = static_cast<const uint8_t*>(p) + kPrefetchBytes;
  if (c + bytes > limit) return;
  for (int off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(c + off), _MM_HINT_T0);
}

inline __m256i fold512(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// A qword holding four copies of the 16-bit value v.
constexpr int64_t words4(int v) { return static_cast<int64_t>(0x0001000100010001ULL * static_cast<uint64_t>(v)); }

// zmm of 32 words: words [8k, 8k+8) hold v[k] (k < 4). (Built from qwords: GCC 12 warns about
// _mm512_inserti64x4 on constants.)
inline __m512i words_by_quarter(int v0, int v1, int v2, int v3) {
  return _mm512_set_epi64(words4(v3), words4(v3), words4(v2), words4(v2), words4(v1), words4(v1), words4(v0),
                          words4(v0));
}

// Word-index vector for vpermw: words [0,16) take index a, words [16,32) take index b.
inline __m512i word_pair_index(int a, int b) { return words_by_quarter(a, a, b, b); }

// Constants of q4_k_scale_words. Word j < 8 is scale j, word 8 + j is min j. From the 12 packed
// bytes b: for j < 4 the value is the low 6 bits of one byte (scale: b[j], min: b[j + 4]); for
// j >= 4 it is 4 low bits of b[j + 4] (scale: its low nibble, min: its high nibble) and 2 high
// bits from the top of b[j - 4] (scale) or b[j] (min). The shuffle puts that byte in the low half
// of the word and b[j + 4] in the high half; one variable shift and mask take the 4 low bits, a
// shift by 2 and mask move the 2 high bits to bits 4..5.
struct Q4KScaleConsts {
  __m256i shuffle, shift, low_mask, high_mask;
  Q4KScaleConsts() {
    alignas(32) int8_t sh[32];
    alignas(32) int16_t s[16], lo[16], hi[16];
    for (int j = 0; j < 8; ++j) {
      const bool split = j >= 4;
      // Scale j: word j, bytes from lane 0 of the broadcast 16 bytes.
      sh[2 * j] = static_cast<int8_t>(split ? j - 4 : j);
      sh[2 * j + 1] = static_cast<int8_t>(split ? j + 4 : -128);  // -128: zero
      s[j] = static_cast<int16_t>(split ? 8 : 0);
      lo[j] = split ? 0x0F : 0x3F;
      hi[j] = split ? 0x30 : 0;
      // Min j: word 8 + j, bytes from lane 1 (the same 16 bytes).
      sh[16 + 2 * j] = static_cast<int8_t>(split ? j : j + 4);
      sh[16 + 2 * j + 1] = static_cast<int8_t>(split ? j + 4 : -128);
      s[8 + j] = static_cast<int16_t>(split ? 12 : 0);
      lo[8 + j] = split ? 0x0F : 0x3F;
      hi[8 + j] = split ? 0x30 : 0;
    }
    shuffle = _mm256_load_si256(reinterpret_cast<const __m256i*>(sh));
    shift = _mm256_load_si256(reinterpret_cast<const __m256i*>(s));
    low_mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    high_mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  }
};

// The 8 scales (words 0..7) and 8 mins (words 8..15) of a Q4_K super-block, as unpack_scales_k4
// gives them, in one shuffle and four 16-bit ops. Reads 16 bytes at `packed` (the 12 scale bytes
// and the first 4 bytes of quants after them).
[[gnu::always_inline]] inline __m256i q4_k_scale_words(const uint8_t* packed, const Q4KScaleConsts& k) {
  const __m256i w = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(load128(packed)), k.shuffle);
  const __m256i low = _mm256_and_si256(_mm256_srlv_epi16(w, k.shift), k.low_mask);
  return _mm256_ternarylogic_epi32(low, _mm256_srli_epi16(w, 2), k.high_mask, 0xF8);  // low | (w >> 2 & high)
}

// Q4_K: zmm chunk j = [low nibbles of qs chunk j | high nibbles], against activation bytes
// 64j..64j+63 (the same pairing as DotQ4_K's p0/p1), scales [sc[2j] x16 words | sc[2j+1] x16].
// The integer part of super-block i against NT tokens: isum[t] = the scaled sub-block sums
// (16 lanes, exact); returns the 8 mins as words. (The prefill tiles of gemm_kquants512.h lay
// their chunks out per token pair instead.)
struct Q4KConsts {
  Q4KScaleConsts scales;
  __m512i low_mask = _mm512_set1_epi8(0x0F);
  __m512i shift = words_by_quarter(0, 0, 4, 4);
  __m512i idx[4] = {word_pair_index(0, 1), word_pair_index(2, 3), word_pair_index(4, 5), word_pair_index(6, 7)};
};

template <int NT>
[[gnu::always_inline]] inline __m128i q4_k_superblock_isums(const BlockQ4_K& w, const BlockQ8_K* const* a, int64_t i,
                                                            const Q4KConsts& k, __m512i* isum) {
  const __m256i words = q4_k_scale_words(w.scales, k.scales);
  const __m512i sc16 = _mm512_zextsi256_si512(words);
  for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
  for (int j = 0; j < 4; ++j) {
    const __m512i q4 = _mm512_broadcast_i64x4(load256(w.qs + 32 * j));
    const __m512i q = _mm512_and_si512(_mm512_srlv_epi16(q4, k.shift), k.low_mask);
    const __m512i s16 = _mm512_permutexvar_epi16(k.idx[j], sc16);
    for (int t = 0; t < NT; ++t) {
      isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(q, _mm512_loadu_si512(a[t][i].qs + 64 * j)), s16);
    }
  }
  return _mm256_extracti128_si256(words, 1);
}

struct DotQ4_K512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    dot_prefetch<NT>(n, wv, av, out, static_cast<const uint8_t*>(wv) + n / 256 * sizeof(BlockQ4_K));
  }

  // dot, prefetching weights up to `pf_limit` (rows are contiguous, so past this row too).
  template <int NT>
  static void dot_prefetch(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ4_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    __m128 accm[NT];
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_setzero_ps();
      accm[t] = _mm_setzero_ps();
    }
    const Q4KConsts k;
    for (int64_t i = 0; i < n / 256; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ4_K)), pf_limit);
      __m512i isum[NT];
      const __m128i mins8 = q4_k_superblock_isums<NT>(w[i], a, i, k, isum);
      const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
      for (int t = 0; t < NT; ++t) {
        accm[t] =
            _mm_fmadd_ps(_mm_set1_ps(-a[t][i].d * dmin), _mm_cvtepi32_ps(min_dot4(a[t][i].bsums, mins8)), accm[t]);
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(a[t][i].d * d), _mm256_cvtepi32_ps(fold512(isum[t])), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]) + hsum4_ps(accm[t]);
  }
};

// Scale words of chunk pair hp (chunks 2hp, 2hp + 1 = 16-element groups 4hp .. 4hp + 3): one
// group per 128-bit quarter, from 16 scale words.
struct GroupWordIndex {
  __m512i idx[4];
  GroupWordIndex() {
    for (int hp = 0; hp < 4; ++hp) idx[hp] = words_by_quarter(4 * hp, 4 * hp + 1, 4 * hp + 2, 4 * hp + 3);
  }
};

// Q6_K: per half, zmm pair p (p = 0: chunks 0,1; p = 1: chunks 2,3 of DotQ6_K) against the 64
// contiguous activation bytes 128*half + 64p; ql of chunks 0,1 are 64 contiguous bytes, the
// 2 high bits come from the shared qh bytes shifted by 4p + {0 | 2}.
struct DotQ6_K512 {
  template <int NT>
  static void dot(int64_t n, const void* wv, const void* const* av, float* out) {
    dot_prefetch<NT>(n, wv, av, out, static_cast<const uint8_t*>(wv) + n / 256 * sizeof(BlockQ6_K));
  }

  // dot, prefetching weights up to `pf_limit` (rows are contiguous, so past this row too).
  template <int NT>
  static void dot_prefetch(int64_t n, const void* wv, const void* const* av, float* out, const uint8_t* pf_limit) {
    const auto* w = static_cast<const BlockQ6_K*>(wv);
    const BlockQ8_K* a[NT];
    for (int t = 0; t < NT; ++t) a[t] = static_cast<const BlockQ8_K*>(av[t]);
    __m256 acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
    const __m512i low_mask = _mm512_set1_epi8(0x0F);
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    const __m512i shift01 = words_by_quarter(0, 0, 2, 2);
    const __m512i shift23 = words_by_quarter(4, 4, 6, 6);
    // Pair p of half h covers groups 8h + 4p .. 8h + 4p + 3.
    const GroupWordIndex gw;
    for (int64_t i = 0; i < n / 256; ++i) {
      prefetch_ahead(w + i, static_cast<int>(sizeof(BlockQ6_K)), pf_limit);
      const __m256i sc16_256 = _mm256_cvtepi8_epi16(load128(w[i].scales));
      const __m512i sc16 = _mm512_zextsi256_si512(sc16_256);
      __m512i isum[NT];
      for (int t = 0; t < NT; ++t) {
        // 32 * (sc[2k] * bsums[2k] + sc[2k+1] * bsums[2k+1]) per lane, subtracted up front.
        const __m256i m = _mm256_slli_epi32(bsum_dot(a[t][i].bsums, sc16_256), 5);
        isum[t] = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), m));
      }
      for (int half = 0; half < 2; ++half) {
        const __m512i ql = _mm512_loadu_si512(w[i].ql + 64 * half);
        const __m512i qh = _mm512_broadcast_i64x4(load256(w[i].qh + 32 * half));
        const __m512i h01 = _mm512_and_si512(_mm512_srlv_epi16(qh, shift01), two_bits);
        const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, shift23), two_bits);
        const __m512i q01 = _mm512_or_si512(_mm512_and_si512(ql, low_mask), _mm512_slli_epi16(h01, 4));
        const __m512i q23 =
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_mask), _mm512_slli_epi16(h23, 4));
        const __m512i s01 = _mm512_permutexvar_epi16(gw.idx[2 * half], sc16);
        const __m512i s23 = _mm512_permutexvar_epi16(gw.idx[2 * half + 1], sc16);
        for (int t = 0; t < NT; ++t) {
          const __m512i y01 = _mm512_loadu_si512(a[t][i].qs + 128 * half);
          const __m512i y23 = _mm512_loadu_si512(a[t][i].qs + 128 * half + 64);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(q01, y01), s01);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(q23, y23), s23);
        }
      }
      const float d = h2f(w[i].d);
      for (int t = 0; t < NT; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[t][i].d), _mm256_cvtepi32_ps(fold512(isum[t])), acc[t]);
      }
    }
    for (int t = 0; t < NT; ++t) out[t] = hsum_ps(acc[t]);
  }
};

// Tokens per tile of gemm_entry_prefetch: 32 zmm registers hold this many tokens' sums.
constexpr int kTileTokens512 = 8;

// gemm entry (KernelTable::gemm contract, the tiling of x86_util.h gemm_entry with tiles of
// kTileTokens512) for a kernel with dot_prefetch: prefetches run ahead across the rows of this
// call, never past them. Every token's result is the same for any tile size (see x86_util.h).
template <class K>
void gemm_entry_prefetch(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                         size_t a_row_bytes, float* out, int64_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  const uint8_t* w_end = wb + static_cast<size_t>(n_rows) * w_row_bytes;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kTileTokens512) {
    const int nt = static_cast<int>(n_tok - t0 < kTileTokens512 ? n_tok - t0 : kTileTokens512);
    const void* ap[kTileTokens512];
    for (int t = 0; t < nt; ++t) ap[t] = ab + static_cast<size_t>(t0 + t) * a_row_bytes;
    float* o = out + t0 * out_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const void* wr = wb + static_cast<size_t>(r) * w_row_bytes;
      float res[kTileTokens512];
      switch (nt) {
        case 1: K::template dot_prefetch<1>(n, wr, ap, res, w_end); break;
        case 2: K::template dot_prefetch<2>(n, wr, ap, res, w_end); break;
        case 3: K::template dot_prefetch<3>(n, wr, ap, res, w_end); break;
        case 4: K::template dot_prefetch<4>(n, wr, ap, res, w_end); break;
        case 5: K::template dot_prefetch<5>(n, wr, ap, res, w_end); break;
        case 6: K::template dot_prefetch<6>(n, wr, ap, res, w_end); break;
        case 7: K::template dot_prefetch<7>(n, wr, ap, res, w_end); break;
        default: K::template dot_prefetch<8>(n, wr, ap, res, w_end); break;
      }
      for (int t = 0; t < nt; ++t) o[t * out_stride + r] = res[t];
    }
  }
}

}  // namespace
}  // namespace sniper::x86
