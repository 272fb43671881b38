// SPDX-License-Identifier: MIT
// The gemm driver of the 512-bit i-quant and ternary kernels (dot_iquants512.h,
// dot_ternary512.h): token tiles of 8, twice x86_util.h gemm_entry's, so each decoded weight
// block serves twice the tokens (32 zmm registers hold 8 tokens' i32 sums). The rest of a batch
// goes in tiles of 4, 2 and 1, so only four tile sizes are instantiated. A kernel K keeps the
// x86_util.h contract (every token's result is the same for any tile size), so the output does
// not depend on the tiling. Include only from AVX-512 translation units.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sniper::x86 {
// Internal linkage on purpose (see dot_q32.h): compiled once per ISA.
namespace {

// True when K's dot takes a prefetch bound (dot<NT>(n, w, a, out, limit)).
template <class K>
concept PrefetchingDot = requires(int64_t n, const void* w, const void* const* a, float* out, const uint8_t* limit) {
  K::template dot<1>(n, w, a, out, limit);
};

// gemm entry (KernelTable::gemm contract) for kernel K in token tiles of 8, then 4, 2, 1. A
// one-token call hands a PrefetchingDot the end of its rows, so it prefetches across them.
template <class K>
void gemm_entry8(int64_t n, int64_t n_rows, int64_t n_tok, const void* w, size_t w_row_bytes, const void* a,
                 size_t a_row_bytes, float* out, int64_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  if constexpr (PrefetchingDot<K>) {
    if (n_tok == 1) {
      const void* ap[1] = {ab};
      const uint8_t* limit = wb + static_cast<size_t>(n_rows) * w_row_bytes;
      for (int64_t r = 0; r < n_rows; ++r)
        K::template dot<1>(n, wb + static_cast<size_t>(r) * w_row_bytes, ap, out + r, limit);
      return;
    }
  }
  for (int64_t t0 = 0; t0 < n_tok;) {
    const int64_t left = n_tok - t0;
    const int nt = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const void* ap[8];
    for (int t = 0; t < nt; ++t) ap[t] = ab + static_cast<size_t>(t0 + t) * a_row_bytes;
    float* o = out + t0 * out_stride;
    for (int64_t r = 0; r < n_rows; ++r) {
      const void* wr = wb + static_cast<size_t>(r) * w_row_bytes;
      float res[8];
      switch (nt) {
        case 8: K::template dot<8>(n, wr, ap, res); break;
        case 4: K::template dot<4>(n, wr, ap, res); break;
        case 2: K::template dot<2>(n, wr, ap, res); break;
        default: K::template dot<1>(n, wr, ap, res); break;
      }
      for (int t = 0; t < nt; ++t) o[t * out_stride + r] = res[t];
    }
    t0 += nt;
  }
}

}  // namespace
}  // namespace sniper::x86
