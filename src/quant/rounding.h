// SPDX-License-Identifier: MIT
// Rounding helpers shared by the quantizers, bit-identical to ggml's.
// Invariant: nothing here has undefined behaviour for finite or infinite inputs.
#pragma once

#include <cmath>
#include <cstdint>
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

// What x86 computes for _mm256_round_ps(v, _MM_ROUND_NEAREST) -> _mm256_cvtps_epi32 ->
// _mm256_packs_epi32 -> _mm256_packs_epi16: round half to even; NaN or a value outside the int32
// range becomes INT32_MIN (the "integer indefinite"), then both packs saturate to [-128, 127].
inline int8_t round_even_sat_i8(float v) {
  const float r = std::nearbyint(v);  // default rounding mode: ties to even
  if (!(r >= -2147483648.0f && r < 2147483648.0f)) return -128;
  if (r > 127.0f) return 127;
  if (r < -128.0f) return -128;
  return static_cast<int8_t>(r);
}

}  // namespace sniper
