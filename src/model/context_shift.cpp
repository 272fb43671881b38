// SPDX-License-Identifier: MIT
#include "model/context_shift.h"

#include <vector>

#include "base/check.h"
#include "kernels/ops.h"
#include "model/blocks/block.h"

namespace sniper {

Status context_shift_support(const ModelConfig& c) {
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerPlan& lp = c.layer(l);
    if (lp.mixer != MixerKind::kAttention) {
      return make_error(
          "--context-shift is not supported for %s: layer %ld is a %s mixer with a recurrent state, "
          "which cannot forget part of the past (raise --ctx instead)",
          c.arch.c_str(), static_cast<long>(l), mixer_kind_name(lp.mixer));
    }
    if (lp.sliding_window > 0) {
      return make_error(
          "--context-shift is not supported for %s: layer %ld attends over a sliding window of %ld "
          "positions, whose ring has already dropped the tokens a shift would bring back into the "
          "window (raise --ctx instead)",
          c.arch.c_str(), static_cast<long>(l), static_cast<long>(lp.sliding_window));
    }
  }
  return ok_status();
}

void shift_context(const ModelConfig& c, const ModelWeights& w, SequenceState& state, int64_t n_keep, int64_t n_discard,
                   int64_t n_past, ThreadPool& pool) {
  CHECK(context_shift_support(c).ok(), "shift_context on a model that cannot shift");
  CHECK(n_keep >= 0 && n_discard >= 1 && n_keep + n_discard <= n_past && n_past <= state.n_ctx(),
        "shift_context keep %ld discard %ld of %ld", static_cast<long>(n_keep), static_cast<long>(n_discard),
        static_cast<long>(n_past));
  // Each layer's rope of -n_discard (ggml_rope_ext with position -n_discard: the same angles
  // the forward pass computes for a position). [n_layers][rope_dims / 2] cos, then sin.
  struct LayerShift {
    KvSlot slot;
    int64_t n_kv_heads = 0;
    KvShift shift;
  };
  std::vector<LayerShift> layers;
  std::vector<std::vector<float>> angles;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (state.spec(l).kind != LayerStateKind::kKv) continue;  // a shared-KV layer's rows move with their owner
    const LayerPlan& lp = c.layer(l);
    const int64_t n_rot = lp.rope_dims;
    const float base = lp.rope_base;
    const bool factors = lp.rope_freqs && w.rope_freqs.data != nullptr;
    std::vector<float>& a = angles.emplace_back(static_cast<size_t>(n_rot));
    rope_angles(-n_discard, n_rot, base, c.rope_freq_scale, factors ? f32_data(w.rope_freqs) : nullptr, a.data(),
                a.data() + n_rot / 2);
    LayerShift& ls = layers.emplace_back();
    ls.slot = state.kv_slot(l);
    ls.n_kv_heads = state.spec(l).n_kv_heads;
    ls.shift = {.n_keep = n_keep,
                .n_discard = n_discard,
                .n_past = n_past,
                .n_rot = n_rot,
                .style = c.rope_style,
                .cos = a.data(),
                .sin = a.data() + n_rot / 2};
  }
  // Work items: one (layer, kv head) each.
  std::vector<std::pair<size_t, int64_t>> items;
  for (size_t i = 0; i < layers.size(); ++i) {
    for (int64_t h = 0; h < layers[i].n_kv_heads; ++h) items.emplace_back(i, h);
  }
  pool.parallel_for(static_cast<int64_t>(items.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const LayerShift& ls = layers[items[static_cast<size_t>(i)].first];
      ls.slot.cache->shift_head(ls.slot.index, items[static_cast<size_t>(i)].second, ls.shift);
    }
  });
}

}  // namespace sniper
