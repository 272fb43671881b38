// SPDX-License-Identifier: MIT
#include "model/blocks/delta_net.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "kernels/activations.h"
#include "kernels/delta_net.h"
#include "kernels/ssm_conv.h"

namespace sniper {

namespace {

TensorShape per_value_head(const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.delta_net.n_v_heads); }
TensorShape dim_to_value_heads(const ModelConfig& c, const LayerPlan&) {
  return tensor_shape(c.dim, c.delta_net.n_v_heads);
}
bool fused_ba(const ModelConfig& c, const LayerPlan&) { return c.delta_net.fused_ba; }
bool split_ba(const ModelConfig& c, const LayerPlan&) { return !c.delta_net.fused_ba; }

// The projections (attn_qkv, attn_gate, ssm_out) are the layer's mixer weights, like attention's:
// a dense hybrid streams them when even its FFN does not fit. The small tensors (conv, the
// gates' a / dt / alpha / beta, the norm) stay resident.
constexpr LayerTensorSpec kTable[] = {
    {"attn_qkv.weight", &LayerWeights::ssm_qkv,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.delta_net.conv_channels()); },
     TensorRole::kAttention, TensorType::kMatrix, false, nullptr},
    {"attn_gate.weight", &LayerWeights::ssm_gate,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, c.delta_net.v_dim()); },
     TensorRole::kAttention, TensorType::kMatrix, false, nullptr},
    {"ssm_conv1d.weight", &LayerWeights::ssm_conv1d,
     [](const ModelConfig& c, const LayerPlan&) {
       return tensor_shape(c.delta_net.conv_kernel, c.delta_net.conv_channels());
     },
     TensorRole::kAlways, TensorType::kF32, false, nullptr},
    {"ssm_dt.bias", &LayerWeights::ssm_dt_bias, per_value_head, TensorRole::kAlways, TensorType::kF32, false, nullptr},
    {"ssm_a", &LayerWeights::ssm_a, per_value_head, TensorRole::kAlways, TensorType::kF32, false, nullptr},
    {"ssm_ba.weight", &LayerWeights::ssm_ba,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.dim, 2 * c.delta_net.n_v_heads); },
     TensorRole::kAlways, TensorType::kMatrix, false, fused_ba},
    {"ssm_beta.weight", &LayerWeights::ssm_beta, dim_to_value_heads, TensorRole::kAlways, TensorType::kMatrix, false,
     split_ba},
    {"ssm_alpha.weight", &LayerWeights::ssm_alpha, dim_to_value_heads, TensorRole::kAlways, TensorType::kMatrix, false,
     split_ba},
    {"ssm_norm.weight", &LayerWeights::ssm_norm,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.delta_net.head_dim); }, TensorRole::kAlways,
     TensorType::kF32, false, nullptr},
    {"ssm_out.weight", &LayerWeights::ssm_out,
     [](const ModelConfig& c, const LayerPlan&) { return tensor_shape(c.delta_net.v_dim(), c.dim); },
     TensorRole::kAttention, TensorType::kMatrix, false, nullptr},
};

}  // namespace

std::span<const LayerTensorSpec> DeltaNetBlock::tensor_table() { return kTable; }

std::span<const ScratchEntry<DeltaNetBlock>> DeltaNetBlock::scratch_table() {
  constexpr auto channels = [](const ModelConfig& c, int64_t B) { return rows(B, c.delta_net.conv_channels()); };
  constexpr auto values = [](const ModelConfig& c, int64_t B) { return rows(B, c.delta_net.v_dim()); };
  constexpr auto heads = [](const ModelConfig& c, int64_t B) { return rows(B, c.delta_net.n_v_heads); };
  static constexpr ScratchEntry<DeltaNetBlock> kScratch[] = {
      {&DeltaNetBlock::qkv_, nullptr, channels},
      {&DeltaNetBlock::conv_, nullptr, channels},
      {&DeltaNetBlock::z_, nullptr, values},
      {&DeltaNetBlock::beta_, nullptr, heads},
      {&DeltaNetBlock::g_, nullptr, heads},
      {&DeltaNetBlock::ba_, nullptr,
       [](const ModelConfig& c, int64_t B) { return c.delta_net.fused_ba ? rows(B, 2 * c.delta_net.n_v_heads) : 0; }},
      {&DeltaNetBlock::o_, nullptr, values},
  };
  return kScratch;
}

size_t DeltaNetBlock::scratch_bound(const ModelConfig& config, int64_t max_batch) {
  return scratch_table_bytes(scratch_table(), config, max_batch);
}

DeltaNetBlock::DeltaNetBlock(const ModelConfig& config, int64_t max_batch) : config_(config), d_(config.delta_net) {
  allocate_scratch(*this, scratch_table(), config, max_batch);
}

size_t DeltaNetBlock::scratch_bytes() const { return held_scratch_bytes(*this, scratch_table()); }

Status DeltaNetBlock::forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state, const BlockIo& io) {
  const ModelConfig& c = config_;
  const int64_t n_tok = io.n_tok, dim = c.dim;
  const int64_t d = d_.head_dim, nk = d_.n_k_heads, nv = d_.n_v_heads, C = d_.conv_channels(), vd = d_.v_dim();
  ThreadPool& pool = *io.pool;

  // Projections of xb, in one parallel pass (two when the weights need more activation types
  // than the ActCache holds: a file may mix types freely).
  struct Proj {
    const QTensor* w;
    float* y;
    int64_t rows;
  };
  Proj projs[4];
  size_t n_proj = 0;
  projs[n_proj++] = {&lw.ssm_qkv, qkv_.data(), C};
  projs[n_proj++] = {&lw.ssm_gate, z_.data(), vd};
  if (d_.fused_ba) {
    projs[n_proj++] = {&lw.ssm_ba, ba_.data(), 2 * nv};
  } else {
    projs[n_proj++] = {&lw.ssm_beta, beta_.data(), nv};
    projs[n_proj++] = {&lw.ssm_alpha, g_.data(), nv};
  }
  GgmlType act_types[4];
  size_t n_types = 0;
  for (size_t i = 0; i < n_proj; ++i) {
    const GgmlType t = vec_dot_type(projs[i].w->type);
    if (std::find(act_types, act_types + n_types, t) == act_types + n_types) act_types[n_types++] = t;
  }
  const size_t per_pass = n_types <= 3 ? n_proj : 2;
  for (size_t first = 0; first < n_proj; first += per_pass) {
    ActCache acts(io.buffers->act_bufs, 3);
    MatmulJob jobs[4];
    size_t n_jobs = 0;
    for (size_t i = first; i < std::min(n_proj, first + per_pass); ++i) {
      jobs[n_jobs++] = {projs[i].w, acts.get(projs[i].w->type, io.xb, dim, n_tok, pool), projs[i].y, projs[i].rows};
    }
    matmul_q_multi(std::span<const MatmulJob>(jobs, n_jobs), pool, selected_tier(), MatmulOrder::kAuto);
  }

  // Gates: beta = sigmoid(b), g = softplus(a + dt_bias) * ssm_a. A fused ssm_ba row holds, per
  // key head, [b of its nv/nk value heads | a of them].
  const int64_t ratio = nv / nk;
  for (int64_t t = 0; t < n_tok; ++t) {
    float* b = beta_.data() + t * nv;
    float* g = g_.data() + t * nv;
    if (d_.fused_ba) {
      const float* ba = ba_.data() + t * 2 * nv;
      for (int64_t j = 0; j < nv; ++j) {
        const int64_t grp = j / ratio, i = j % ratio;
        b[j] = ba[grp * 2 * ratio + i];
        g[j] = ba[grp * 2 * ratio + ratio + i];
      }
    }
    delta_net_gates(b, g, f32_data(lw.ssm_dt_bias), f32_data(lw.ssm_a), b, g, nv);
  }

  // The causal conv (and silu) over the chunk, carrying the state; then L2-normalised q and k heads.
  ssm_conv_silu(qkv_.data(), C, n_tok, C, f32_data(lw.ssm_conv1d), state.conv_state(layer_idx), conv_.data(), C);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* row = conv_.data() + t * C;
    for (int64_t h = 0; h < 2 * nk; ++h) l2_norm(row + h * d, row + h * d, d, c.norm_eps);  // q heads, then k heads
  }

  // The recurrence, value heads spread over the pool (each head owns its state and outputs).
  DeltaNetArgs args;
  args.head_dim = d;
  args.n_k_heads = nk;
  args.n_v_heads = nv;
  args.key_map = d_.grouped_heads ? KeyHeadMap::kGrouped : KeyHeadMap::kTiled;
  args.n_tokens = n_tok;
  args.q = conv_.data();
  args.q_stride = C;
  args.k = conv_.data() + nk * d;
  args.k_stride = C;
  args.v = conv_.data() + 2 * nk * d;
  args.v_stride = C;
  args.g = g_.data();
  args.beta = beta_.data();
  args.gb_stride = nv;
  args.out = o_.data();
  args.out_stride = vd;
  args.state = state.recurrent_state(layer_idx);
  pool.parallel_for(nv, 1, [&](int64_t begin, int64_t end) { delta_net(args, begin, end); });

  // o = rms(o) * ssm_norm * silu(z) per head, then the output projection.
  const float* norm = f32_data(lw.ssm_norm);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t j = 0; j < nv; ++j) {
      float* o = o_.data() + t * vd + j * d;
      gated_rms_norm(o, norm, z_.data() + t * vd + j * d, o, d, c.norm_eps);
    }
  }
  matmul(lw.ssm_out, o_.data(), io.out, n_tok, io.buffers->act, pool);
  return ok_status();
}

}  // namespace sniper
