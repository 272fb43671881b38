// SPDX-License-Identifier: MIT
// Scale searches used by the weight quantizers: ports of ggml's make_qx_quants,
// make_q3_quants, make_qkx2_quants and the IQ4 non-linear search, so our quantized weights are
// the ones llama-quantize (without an importance matrix) would produce.
// Invariants: all functions are deterministic and pure (thread-safe); an all-zero group
// (max |x| below kGroupMaxEps) yields scale 0 and all-zero levels, never NaN.
#pragma once

#include <cstdint>

#include "base/fp16.h"

namespace sniper {

// ggml's GROUP_MAX_EPS: groups whose largest magnitude is below this are treated as zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric search: finds scale s and levels L[i] in [0, 2*nmax) with x[i] ~ s * (L[i] - nmax),
// trying 19 candidate inverse scales around -nmax/max and keeping the weighted least-squares
// best. Weights: qw if non-null, else by rmse_type (1: x^2, 2: 1, 3: |x|, other: sqrt|x|);
// rmse_type 0 is plain rounding with no search. Returns the scale.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw);

// Q3_K's search: like make_qx_quants (weights x^2) but refines levels one by one (up to 5
// passes) when do_rmse. Levels L[i] in [0, 2*nmax). Returns the scale.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

// Asymmetric search with a min: x[i] ~ scale * L[i] - the_min, L[i] in [0, nmax], the_min >= 0.
// Tries nstep+1 inverse scales (rmin + rdelta*is + nmax) / (max - min) and solves for the
// weighted least-squares scale and min at each; error is |diff| (use_mad) or diff^2.
// Laux is scratch of n bytes. Returns the scale and stores the min (as a positive number).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad);

// Q4_K's and Q5_K's super-block of 256 (ggml's quantize_row_q4_K_ref / q5_K_ref): make_qkx2_quants
// per group of 32 with weights sqrt(mean x^2) + |x| and the type's nmax, rmin and nstep (rdelta
// 0.1); the groups' scales and mins as 6-bit values packed into scales12 (k_scales.h) under the
// super-block factors *d and *dmin; then the codes L[0..256) in [0, nmax] requantized with the
// packed scales (a group whose scale packs to 0 keeps its search codes, as ggml).
void quantize_scale_min_super_block(const float* x, int nmax, float rmin, int nstep, uint8_t* scales12, fp16_t* d,
                                    fp16_t* dmin, uint8_t* L);

// Index of the entry of the sorted table val[0..n) nearest to x (ties go up); n a power of 2.
int best_index_int8(int n, const int8_t* val, float x);

// IQ4_NL / IQ4_XS search (ggml's quantize_row_iq4_nl_impl without an importance matrix) for
// one super-block of super_block_size elements split into blocks of 32:
//  - super_block_size == 32 (IQ4_NL): *dh = f16 scale, L[i] = table index.
//  - super_block_size == 256 (IQ4_XS): *dh = f16 super scale, 6-bit block scales (biased by 32)
//    written to *scales_h / scales_l[4].
// q4 receives the packed nibbles (super_block_size/2 bytes). ntry is ggml's search width
// (ggml uses -1 for quantize_row_iq4_nl_ref and 7 for IQ4_XS). `scales` needs
// super_block_size/32 floats, `weight` 32 floats, L super_block_size bytes.
void make_iq4_quants(int super_block_size, const float* x, uint16_t* dh, uint8_t* q4, uint16_t* scales_h,
                     uint8_t* scales_l, float* scales, float* weight, uint8_t* L, int ntry);

}  // namespace sniper
