// SPDX-License-Identifier: MIT
// Scalar IEEE half and bfloat16 conversions. fp16_to_fp32 and bf16_to_fp32 are exact;
// fp32_to_fp16 and fp32_to_bf16 round to nearest even (as ggml does), NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace sniper {

using fp16_t = uint16_t;
using bf16_t = uint16_t;

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float fp16_to_fp32(fp16_t h) {
  // Derivation: shift the half's exponent/mantissa into float position, then rescale by
  // 2^(127-15) via a float multiply so subnormals are handled by the FPU (exact).
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = bits_to_f32(0x7800000u);  // 2^-112
  const float normalized = bits_to_f32((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = bits_to_f32((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t denormalized_cutoff = 1u << 27;
  const uint32_t result = sign | (two_w < denormalized_cutoff ? f32_to_bits(denormalized) : f32_to_bits(normalized));
  return bits_to_f32(result);
}

inline fp16_t fp32_to_fp16(float f) {
  // Round-to-nearest-even via float arithmetic: scale to move the rounding point, then
  // add the biased exponent so the FPU performs the rounding.
  const float scale_to_inf = bits_to_f32(0x77800000u);   // 2^112
  const float scale_to_zero = bits_to_f32(0x08800000u);  // 2^-110
  float base = (f < 0 ? -f : f) * scale_to_inf * scale_to_zero;
  const uint32_t w = f32_to_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = bits_to_f32((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f32_to_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<fp16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

inline float bf16_to_fp32(bf16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

inline bf16_t fp32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 64);  // quiet NaN
  return static_cast<bf16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

// Rounds through half precision and back (what storing to an f16 buffer does).
inline float round_fp16(float f) { return fp16_to_fp32(fp32_to_fp16(f)); }

}  // namespace sniper
