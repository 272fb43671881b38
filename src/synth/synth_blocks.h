// SPDX-License-Identifier: MIT
// Direct generation of random quantized blocks: random quants plus chosen scales, written
// straight into the block layout, with no float tensor and no quantizer in between (the
// `_ref` quantizers run at tens of MB/s; this runs at GB/s). Used for full-scale synthetic
// models.
//
// Invariants, for every supported type:
//  - every block is valid (finite fp16 scales, every bit pattern of the quants is legal);
//  - the dequantized values have mean 0 by construction (quants symmetric around the zero
//    point, or the block minimum set to cancel the quants' mean) and a standard deviation of
//    target_std (derived per type below; tests measure both);
//  - the output depends only on the generator state, so chunks seeded independently of
//    threads give thread-count-independent bytes.
#pragma once

#include <cstdint>

#include "gguf/format.h"
#include "synth/synth_rng.h"

namespace sniper {

// Standard deviation of synthetic matrix weights (the usual normal(0, 0.02) init).
constexpr float kSynthWeightStd = 0.02f;
// Token embeddings are unit scale (see weight_std in synth_model.cpp).
constexpr float kSynthEmbeddingStd = 1.0f;

// True if fill_random_blocks can generate `type` directly: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K
// Q6_K, and the i-quant / ternary types (synth_iq_blocks.h), which have no quantizer and are
// always generated this way. Other types need the exact path (normal floats through the `_ref`
// quantizer).
bool has_direct_blocks(GgmlType type);

// Writes n_blocks consecutive random blocks of `type` to dst (n_blocks * block bytes), drawing
// from rng. CHECKs has_direct_blocks(type) and target_std in (0, 1]. Thread-compatible.
void fill_random_blocks(GgmlType type, SynthRng& rng, float target_std, uint8_t* dst, int64_t n_blocks);

}  // namespace sniper
