// SPDX-License-Identifier: MIT
// Sixteen horizontal sums at once: the reductions _mm512_reduce_add_ps would do on sixteen
// registers, as one transposed tree that adds exactly the same lane pairs ((i, i+8), then
// (i, i+4), (i, i+2), (i, i+1); quant/lane_order.h reduce16_ordered), so each sum has the same
// bits. Input k of level 1 is the register pushed as slot k; lane r of the result is the sum of
// the register pushed in slot slot_of(r) = 4 * (r % 4) + r / 4 (the tree's natural output order
// is lane 4c + k <- input 4k + c, a 4x4 transpose). Pushing in slot order and combining each pair
// as soon as it is complete keeps at most one pending value per level live (a whole tile of
// sixteen inputs in registers spills). Include only from AVX-512 translation units.
#pragma once

#include <immintrin.h>

namespace sniper::x86 {
// Internal linkage on purpose (see x86_util.h).
namespace {

inline __m512 tree_level1(__m512 a, __m512 b) {  // lane i + lane i+8, two inputs per register
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}
inline __m512 tree_level2(__m512 a, __m512 b) {  // + lane i+4: four inputs per register, one per 128-bit block
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}
inline __m512 tree_level3(__m512 a, __m512 b) {  // + lane i+2 within each block
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}
inline __m512 tree_level4(__m512 a, __m512 b) {  // + lane i+1
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The slot whose sum lands in lane r of the result; the transpose is its own inverse, so it is
// also the input that must be pushed as slot s to land in lane s.
constexpr int tree_slot_of(int r) { return 4 * (r % 4) + r / 4; }

struct TransposedTree16 {
  __m512 level1, level2, level3, level4, result;  // result: valid after slot 15
  template <int kSlot>
  inline void push(__m512 v) {
    static_assert(kSlot >= 0 && kSlot < 16);
    if constexpr (kSlot % 2 == 0) {
      level1 = v;
    } else if constexpr (kSlot % 4 == 1) {
      level2 = tree_level1(level1, v);
    } else if constexpr (kSlot % 8 == 3) {
      level3 = tree_level2(level2, tree_level1(level1, v));
    } else if constexpr (kSlot == 7) {
      level4 = tree_level3(level3, tree_level2(level2, tree_level1(level1, v)));
    } else {
      result = tree_level4(level4, tree_level3(level3, tree_level2(level2, tree_level1(level1, v))));
    }
  }
};

}  // namespace
}  // namespace sniper::x86
