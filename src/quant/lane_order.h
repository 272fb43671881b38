// SPDX-License-Identifier: MIT
// Scalar models of the SIMD reductions the reference engine (ggml's x86 CPU backend) uses, so
// the `_ref` dot products can perform the same float operations in the same order as the
// kernels llama.cpp ran. Every function is a fixed tree of float additions; float addition is
// commutative, so only the association (the tree) matters, not the operand order.
//   hsum8:    ggml's hsum_float_8 / tinyBLAS hsum(__m256): (hi128 + lo128), then movehl, movehdup.
//   hsum4:    the 4-lane tail of hsum8 (ggml's q4_K min accumulator).
//   reduce16: _mm512_reduce_add_ps (GCC and Clang both halve 512 -> 256 -> 128 -> 64 -> 32).
// Invariant: pure functions, no rounding-mode or FTZ assumptions beyond IEEE defaults.
#pragma once

#include <cmath>
#include <cstdint>

namespace sniper {

inline float hsum4_ordered(const float* v) { return (v[0] + v[2]) + (v[1] + v[3]); }

inline float hsum8_ordered(const float* v) {
  float t[4];
  for (int i = 0; i < 4; ++i) t[i] = v[i + 4] + v[i];
  return hsum4_ordered(t);
}

inline float reduce16_ordered(const float* v) {
  float t[8];
  for (int i = 0; i < 8; ++i) t[i] = v[i + 8] + v[i];
  return hsum8_ordered(t);
}

// acc = acc + a * b with a single rounding (the FMA the SIMD kernels use). std::fma is exact
// whatever the compile flags of the calling translation unit.
inline float fma_ordered(float a, float b, float acc) { return std::fma(a, b, acc); }

// ggml's AVX2 block step for the 32-element formats: 8 int32 lanes of 4 consecutive products
// (maddubs+madd or vpdpbusd), each converted to float and FMA'd with d into acc[lane].
inline void fma_block32_ordered(float* acc, float d, const int* w, const int8_t* a) {
  for (int k = 0; k < 8; ++k) {
    int lane = 0;
    for (int j = 4 * k; j < 4 * k + 4; ++j) lane += w[j] * a[j];
    acc[k] = fma_ordered(d, static_cast<float>(lane), acc[k]);
  }
}

// ggml's AVX2 K-quant super-block lanes (256 elements): 8 int32 lanes, lane k holding the
// products of elements 4k..4k+3 of every 32-element chunk times that element's 16-group scale
// (the lane layout of maddubs + madd). q: the 256 decoded weight values, scale16: 16 scales.
inline void superblock_lanes(int* lanes, const int8_t* q, const int* scale16, const int8_t* a) {
  for (int k = 0; k < 8; ++k) {
    int lane = 0;
    for (int c = 0; c < 8; ++c) {
      for (int b = 4 * k; b < 4 * k + 4; ++b) {
        const int e = 32 * c + b;
        lane += scale16[e / 16] * (q[e] * a[e]);
      }
    }
    lanes[k] = lane;
  }
}

// acc[k] = fma(d, float(lanes[k]), acc[k]) for the 8 lanes.
inline void fma_lanes8(float* acc, float d, const int* lanes) {
  for (int k = 0; k < 8; ++k) acc[k] = fma_ordered(d, static_cast<float>(lanes[k]), acc[k]);
}

// superblock_lanes followed by fma_lanes8.
inline void fma_superblock_ordered(float* acc, float d, const int8_t* q, const int* scale16, const int8_t* a) {
  int lanes[8];
  superblock_lanes(lanes, q, scale16, a);
  fma_lanes8(acc, d, lanes);
}

}  // namespace sniper
