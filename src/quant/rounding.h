// SPDX-License-Identifier: MIT
// Rounding helpers shared by the quantizers, bit-identical to ggml's.
// Invariant: nothing here has undefined behaviour for finite or infinite inputs.
#pragma once

#include <cmath>
#include <cstring>

namespace sniper {

// ggml's nearest_int: rounds to the nearest integer, ties to even, for |fval| <= 4194303.
// Derivation: 12582912 = 1.5 * 2^23. Adding it puts the sum in [2^23, 2^24), where the float
// ulp is exactly 1, so the FPU's round-to-nearest-even does the rounding; the low 23 mantissa
// bits then hold 2^22 + round(fval). Outside that range (or for inf/NaN) the result is garbage
// but defined, exactly as in ggml (callers such as quantize_row_q8_K_ref depend on that).
inline int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

// Returns 1/d, or 0 when d is 0 or 1/d overflows to infinity (d below ~2.9e-39). ggml computes
// `d ? 1/d : 0`; for the overflow case its float->int casts are undefined behaviour that
// yields 0 on x86, which is what returning 0 here reproduces without the UB.
inline float safe_inverse(float d) {
  if (d == 0.0f) return 0.0f;
  const float id = 1.0f / d;
  return std::isfinite(id) ? id : 0.0f;
}

}  // namespace sniper
