// SPDX-License-Identifier: MIT
// Context shift (llama.cpp's --context-shift): when the context is full, forget the tokens at
// positions [n_keep, n_keep + n_discard) and move the later ones down by n_discard, re-rotating
// their keys by the rope of -n_discard with each layer's rope (kv/kv_cache.h KvCache::shift_head
// does one kv head). The shifted keys are the old keys rotated, not keys computed at the new
// positions: they equal those only up to rounding, as in llama.cpp.
// Only a state made of KV rows can be shifted: a recurrent (delta-net) state holds the past
// folded together, and a sliding-window ring has already forgotten the positions a shift would
// bring back into its window (llama.cpp's iSWA cache prunes them too, so after a shift its
// sliding layers see a different past than a fresh evaluation); context_shift_support refuses
// both, naming the layer. Thread-compatible.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kv/sequence_state.h"
#include "model/config.h"
#include "model/model_weights.h"

namespace sniper {

// ok when every layer's state can be shifted; else an error naming the layer and the reason.
[[nodiscard]] Status context_shift_support(const ModelConfig& config);

// Shifts every attention layer's KV rows of `state` (made from layer_state_specs(config)) on
// the pool. Preconditions (CHECKed): context_shift_support(config) passed; 0 <= n_keep,
// n_discard >= 1, n_keep + n_discard <= n_past <= state.n_ctx().
void shift_context(const ModelConfig& config, const ModelWeights& weights, SequenceState& state, int64_t n_keep,
                   int64_t n_discard, int64_t n_past, ThreadPool& pool);

}  // namespace sniper
