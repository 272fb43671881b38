// SPDX-License-Identifier: MIT
// Random quantized blocks written directly into each format's layout.
//
// Derivations (q = the stored quant, sc = a sub-block scale, d/dmin = fp16 super-scales):
//  - Zero mean. Types with a minimum (Q4_1 Q5_1 Q4_K Q5_K: x = d*sc*q - dmin*m) draw q
//    uniformly over all 2^b codes (mean (2^b - 1)/2) and set the minimum to that mean:
//    Q4_1/Q5_1 m = -7.5 d / -15.5 d; Q4_K/Q5_K dmin = 7.5 d / 15.5 d with m = sc.
//    Symmetric types (Q4_0 Q5_0 Q6_K: x = d*sc*(q - 2^(b-1)); Q8_0: x = d*q) draw every code
//    uniformly but remap the one unpaired extreme code (q - 2^(b-1) = -2^(b-1), or q = -128)
//    to the zero point, so the values are {-(2^(b-1)-1) .. 2^(b-1)-1} with 0 twice as likely:
//    symmetric, mean exactly 0.
//  - Variance. Uniform over 2^b codes: var_q = (4^b - 1)/12 (Q4: 21.25, Q5: 85.25). Remapped
//    symmetric sets: var_q = 2 * sum_{k=1}^{K} k^2 / 2^b with K = 2^(b-1) - 1
//    (Q4_0: 17.5, Q5_0: 77.5, Q6_K: 325.5, Q8_0: 5397.5). Sub-block scales are uniform
//    integers in [lo, hi] (a power-of-two count, so one random byte picks one exactly):
//    E[sc^2] = ((lo + hi)/2)^2 + ((hi - lo + 1)^2 - 1)/12. Then std(x) = d * sqrt(E[sc^2] * var_q),
//    so d = target_std / sqrt(E[sc^2] * var_q). Scale ranges keep d a normal fp16 (>= 6.1e-5)
//    for target_std = 0.02: Q4_K sc in [32, 63] -> d = 9.0e-5; Q5_K [16, 31] -> 9.1e-5;
//    Q6_K [8, 23] -> 6.9e-5.
#include "synth/synth_blocks.h"

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "quant/k_scales.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "synth/synth_iq_blocks.h"

namespace sniper {

namespace {

// E[sc^2] for sc uniform on the integers [lo, hi].
double uniform_mean_sq(int lo, int hi) {
  const double mean = 0.5 * (lo + hi);
  const double n = hi - lo + 1;
  return mean * mean + (n * n - 1.0) / 12.0;
}

// The fp16 super-scale d giving std(x) = target for quants of variance var_q and scales in
// [lo, hi] (lo = hi = 1 for formats without sub-block scales).
fp16_t scale_for(float target, double var_q, int lo, int hi) {
  return fp32_to_fp16(static_cast<float>(target / std::sqrt(uniform_mean_sq(lo, hi) * var_q)));
}

template <typename Block>
void store(const Block& blk, uint8_t* dst, int64_t i) {
  std::memcpy(dst + static_cast<size_t>(i) * sizeof(Block), &blk, sizeof(Block));
}

// Branch-free byte-parallel (SWAR) helpers over 8 bytes at a time.
constexpr uint64_t kBytes01 = 0x0101010101010101ull;

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void store64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// x holds bytes in [0, 15]: bit 0 of each byte is set where the byte is 0 (x + 15 carries into
// bit 4 exactly when x >= 1; no carry crosses a byte).
uint64_t zero_nibbles(uint64_t x) { return ~((x + 0x0F * kBytes01) >> 4) & kBytes01; }
// f holds bytes in [0, 3]: bit 0 of each byte is set where the byte is 0.
uint64_t zero_pairs(uint64_t f) { return ~((f + 0x03 * kBytes01) >> 2) & kBytes01; }

// Remaps nibble code 0 to 8 in both nibbles of each byte (Q4_0's unpaired -8 -> 0).
void remap_q4_zero(uint8_t* qs, int n) {
  for (int i = 0; i < n; i += 8) {
    const uint64_t q = load64(qs + i);
    const uint64_t lo_zero = zero_nibbles(q & (0x0F * kBytes01));
    const uint64_t hi_zero = zero_nibbles((q >> 4) & (0x0F * kBytes01));
    store64(qs + i, q | (lo_zero << 3) | (hi_zero << 7));
  }
}

constexpr double kVarU4 = 21.25;   // uniform over 0..15
constexpr double kVarU5 = 85.25;   // uniform over 0..31
constexpr double kVarS4 = 17.5;    // -7..7, 0 doubled
constexpr double kVarS5 = 77.5;    // -15..15, 0 doubled
constexpr double kVarS6 = 325.5;   // -31..31, 0 doubled
constexpr double kVarS8 = 5397.5;  // -127..127, 0 doubled

constexpr int kQ4KScLo = 32, kQ4KScHi = 63;
constexpr int kQ5KScLo = 16, kQ5KScHi = 31;
constexpr int kQ6KScLo = 8, kQ6KScHi = 23;

void fill_q4_0(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ4_0 blk;
  blk.d = scale_for(target, kVarS4, 1, 1);
  for (int64_t i = 0; i < n_blocks; ++i) {
    rng.fill_bytes(blk.qs, sizeof(blk.qs));
    remap_q4_zero(blk.qs, 16);
    store(blk, dst, i);
  }
}

void fill_q4_1(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ4_1 blk;
  blk.d = scale_for(target, kVarU4, 1, 1);
  blk.m = fp32_to_fp16(-7.5f * fp16_to_fp32(blk.d));
  for (int64_t i = 0; i < n_blocks; ++i) {
    rng.fill_bytes(blk.qs, sizeof(blk.qs));
    store(blk, dst, i);
  }
}

void fill_q5_0(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ5_0 blk;
  blk.d = scale_for(target, kVarS5, 1, 1);
  for (int64_t i = 0; i < n_blocks; ++i) {
    rng.fill_bytes(blk.qs, sizeof(blk.qs));
    uint32_t qh = static_cast<uint32_t>(rng.next());
    // Element j (< 16) is the low nibble of qs[j], element j + 16 the high one; bit j of qh is
    // element j's fifth bit. Code 0 (value -16) becomes 16 (value 0): setting the fifth bit of
    // every element whose low nibble is 0 does exactly that (it is a no-op where already set).
    for (int j = 0; j < 16; ++j) {
      qh |= static_cast<uint32_t>((blk.qs[j] & 0x0F) == 0) << j;
      qh |= static_cast<uint32_t>((blk.qs[j] & 0xF0) == 0) << (j + 16);
    }
    std::memcpy(blk.qh, &qh, sizeof(qh));
    store(blk, dst, i);
  }
}

void fill_q5_1(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ5_1 blk;
  blk.d = scale_for(target, kVarU5, 1, 1);
  blk.m = fp32_to_fp16(-15.5f * fp16_to_fp32(blk.d));
  for (int64_t i = 0; i < n_blocks; ++i) {
    rng.fill_bytes(blk.qh, sizeof(blk.qh));
    rng.fill_bytes(blk.qs, sizeof(blk.qs));
    store(blk, dst, i);
  }
}

void fill_q8_0(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ8_0 blk;
  blk.d = scale_for(target, kVarS8, 1, 1);
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint8_t* qs = reinterpret_cast<uint8_t*>(blk.qs);
    rng.fill_bytes(qs, sizeof(blk.qs));
    // Bytes equal to 0x80 (-128) become 0: x = q ^ 0x80 is 0 exactly there; the classic
    // zero-byte test sets the top bit of those bytes only.
    for (int i = 0; i < 32; i += 8) {
      const uint64_t q = load64(qs + i);
      const uint64_t x = q ^ (0x80 * kBytes01);
      const uint64_t zero = ~(((x & (0x7F * kBytes01)) + 0x7F * kBytes01) | x | (0x7F * kBytes01));
      store64(qs + i, q & ~((zero >> 7) * 0xFF));
    }
    store(blk, dst, i);
  }
}

// Q4_K and Q5_K share the packed 6-bit scale/min layout; m = sc and dmin = mean_q * d.
void fill_k_scales(SynthRng& rng, int lo, int hi, uint8_t* scales) {
  uint64_t bytes = rng.next();
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j, bytes >>= 8) {
    const uint8_t sc = static_cast<uint8_t>(lo + static_cast<int>(bytes & static_cast<uint64_t>(hi - lo)));
    set_scale_min_k4(j, sc, sc, scales);
  }
}

void fill_q4_k(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ4_K blk;
  blk.d = scale_for(target, kVarU4, kQ4KScLo, kQ4KScHi);
  blk.dmin = fp32_to_fp16(7.5f * fp16_to_fp32(blk.d));
  for (int64_t i = 0; i < n_blocks; ++i) {
    fill_k_scales(rng, kQ4KScLo, kQ4KScHi, blk.scales);
    rng.fill_bytes(blk.qs, sizeof(blk.qs));
    store(blk, dst, i);
  }
}

void fill_q5_k(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ5_K blk;
  blk.d = scale_for(target, kVarU5, kQ5KScLo, kQ5KScHi);
  blk.dmin = fp32_to_fp16(15.5f * fp16_to_fp32(blk.d));
  for (int64_t i = 0; i < n_blocks; ++i) {
    fill_k_scales(rng, kQ5KScLo, kQ5KScHi, blk.scales);
    rng.fill_bytes(blk.qh, sizeof(blk.qh));
    rng.fill_bytes(blk.qs, sizeof(blk.qs));
    store(blk, dst, i);
  }
}

void fill_q6_k(SynthRng& rng, float target, uint8_t* dst, int64_t n_blocks) {
  BlockQ6_K blk;
  blk.d = scale_for(target, kVarS6, kQ6KScLo, kQ6KScHi);
  for (int64_t i = 0; i < n_blocks; ++i) {
    rng.fill_bytes(blk.ql, sizeof(blk.ql));
    rng.fill_bytes(blk.qh, sizeof(blk.qh));
    uint8_t sc_bytes[16];
    rng.fill_bytes(sc_bytes, sizeof(sc_bytes));
    for (int j = 0; j < 16; ++j) blk.scales[j] = static_cast<int8_t>(kQ6KScLo + (sc_bytes[j] & (kQ6KScHi - kQ6KScLo)));
    // Each half of the block holds 128 quants: for l < 32, the low nibbles of ql[l] and
    // ql[l + 32] and their high nibbles, with 2-bit high parts in qh[l] at shifts 0, 2, 4, 6.
    // Code 0 (value -32) becomes 32 (value 0): set the high part to 0b10.
    constexpr uint64_t kNib = 0x0F * kBytes01, kPair = 0x03 * kBytes01;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = blk.ql + 64 * half;
      uint8_t* qh = blk.qh + 32 * half;
      for (int l = 0; l < 32; l += 8) {
        const uint64_t a = load64(ql + l), b = load64(ql + l + 32), h = load64(qh + l);
        const uint64_t z0 = zero_nibbles(a & kNib) & zero_pairs(h & kPair);
        const uint64_t z1 = zero_nibbles(b & kNib) & zero_pairs((h >> 2) & kPair);
        const uint64_t z2 = zero_nibbles((a >> 4) & kNib) & zero_pairs((h >> 4) & kPair);
        const uint64_t z3 = zero_nibbles((b >> 4) & kNib) & zero_pairs((h >> 6) & kPair);
        store64(qh + l, h | (z0 << 1) | (z1 << 3) | (z2 << 5) | (z3 << 7));
      }
    }
    store(blk, dst, i);
  }
}

}  // namespace

bool has_direct_blocks(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K: return true;
    default: return has_iq_random_blocks(type);
  }
}

void fill_random_blocks(GgmlType type, SynthRng& rng, float target_std, uint8_t* dst, int64_t n_blocks) {
  CHECK(target_std > 0.0f && target_std <= 1.0f, "target_std %g out of (0, 1]", static_cast<double>(target_std));
  switch (type) {
    case GgmlType::kQ4_0: return fill_q4_0(rng, target_std, dst, n_blocks);
    case GgmlType::kQ4_1: return fill_q4_1(rng, target_std, dst, n_blocks);
    case GgmlType::kQ5_0: return fill_q5_0(rng, target_std, dst, n_blocks);
    case GgmlType::kQ5_1: return fill_q5_1(rng, target_std, dst, n_blocks);
    case GgmlType::kQ8_0: return fill_q8_0(rng, target_std, dst, n_blocks);
    case GgmlType::kQ4_K: return fill_q4_k(rng, target_std, dst, n_blocks);
    case GgmlType::kQ5_K: return fill_q5_k(rng, target_std, dst, n_blocks);
    case GgmlType::kQ6_K: return fill_q6_k(rng, target_std, dst, n_blocks);
    default:
      CHECK(has_iq_random_blocks(type), "no direct random blocks for type %s", get_type_info(type).name);
      return fill_iq_random_blocks(type, rng, target_std, dst, n_blocks);
  }
}

}  // namespace sniper
