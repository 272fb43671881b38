// SPDX-License-Identifier: MIT
#include "kernels/hadamard.h"

#include <cmath>

#include "base/check.h"

namespace sniper {

void hadamard_rotate(float* x, int64_t n, int64_t chunk) {
  CHECK(chunk >= 2 && (chunk & (chunk - 1)) == 0 && n % chunk == 0, "hadamard chunk %ld for %ld elements",
        static_cast<long>(chunk), static_cast<long>(n));
  const float scale = 1.0f / std::sqrt(static_cast<float>(chunk));
  for (int64_t c = 0; c < n; c += chunk) {
    float* row = x + c;
    for (int64_t j = 0; j < chunk; ++j) row[j] *= scale;
    for (int64_t len = 1; len < chunk; len <<= 1) {
      for (int64_t i = 0; i < chunk; i += 2 * len) {
        for (int64_t j = 0; j < len; ++j) {
          const float u = row[i + j];
          const float v = row[i + len + j];
          row[i + j] = u + v;
          row[i + len + j] = u - v;
        }
      }
    }
  }
}

int64_t hadamard_k_chunk(int64_t head_dim) {
  if (head_dim <= 0 || head_dim % 64 != 0) return 0;
  int64_t n = 64;
  while (head_dim % (2 * n) == 0) n *= 2;
  return n;
}

int64_t hadamard_v_chunk(int64_t head_dim) { return head_dim > 0 && head_dim % 64 == 0 ? 64 : 0; }

}  // namespace sniper
