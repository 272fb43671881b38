// SPDX-License-Identifier: MIT
// Random-but-valid blocks of the i-quant and ternary types (IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S
// IQ3_XXS IQ3_S TQ1_0 TQ2_0), which have no quantizer here: synthetic IQ2_M / IQ3_XXS / ...
// models are written directly in these layouts.
//
// Invariants:
//  - valid: every index field is masked to its table by the format, the fp16 scale is finite;
//  - zero mean by construction: IQ2_*/IQ3_* magnitudes carry uniformly random signs (the
//    parity-coded 7-bit sign indices negate each element with probability 1/2, and a global
//    flip is a bijection on them); IQ1_* draw grid points only from the subset of kIq1sGrid
//    closed under negation (uniformly, so x and -x are equally likely) and a random delta sign;
//    TQ* draw every digit uniformly from {0, 1, 2} (values -1, 0, +1);
//  - std: d = target_std / rms(values at d = 1), the rms measured once per type on 64 blocks
//    from a fixed seed (scales and indices are uniform, so it is a property of the format);
//  - the bytes depend only on the generator state (thread-count independent, like synth_blocks.h).
#pragma once

#include <cstdint>

#include "gguf/format.h"
#include "synth/synth_rng.h"

namespace sniper {

// True for the nine types above.
bool has_iq_random_blocks(GgmlType type);

// Writes n_blocks random blocks of `type` at dst. CHECKs has_iq_random_blocks(type) and
// target_std in (0, 1]. Thread-compatible.
void fill_iq_random_blocks(GgmlType type, SynthRng& rng, float target_std, uint8_t* dst, int64_t n_blocks);

}  // namespace sniper
