// SPDX-License-Identifier: MIT
#include "model/blocks/delta_net.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

namespace {

// TODO(blocks): minimal scalar versions of the delta-net element-wise ops, until the kernels
// branch provides them (kernels/: softplus/sigmoid gates, L2 norm, the conv and the
// recurrence, each with a _ref twin). They follow ggml's CPU ops in float order: softplus is
// x above 20, sigmoid uses libm expf, the L2 norm sums squares in double, the conv and the
// state update are fused multiply-adds (the reference build contracts them).
float sigmoid_scalar(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus_scalar(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

void l2_norm_scalar(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

// ggml_vec_dot_f32 in the selected tier's order (the f32 weight kernel's vec_dot).
float dot_f32(const KernelTable& f32, const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  f32.vec_dot(n, &sum, a, b);
  return sum;
}

}  // namespace

DeltaNetBlock::DeltaNetBlock(const ModelConfig& config, int64_t max_batch) : config_(config), d_(config.delta_net) {
  const size_t B = static_cast<size_t>(max_batch);
  const size_t C = static_cast<size_t>(d_.conv_channels()), nv = static_cast<size_t>(d_.n_v_heads);
  const size_t vd = static_cast<size_t>(d_.v_dim());
  qkv_.resize(B * C);
  conv_.resize(B * C);
  z_.resize(B * vd);
  beta_.resize(B * nv);
  g_.resize(B * nv);
  if (d_.fused_ba) ba_.resize(B * 2 * nv);
  o_.resize(B * vd);
  delta_.resize(vd);
  ones_.assign(B * C, 1.0f);
}

size_t DeltaNetBlock::scratch_bytes() const {
  return (qkv_.size() + conv_.size() + z_.size() + beta_.size() + g_.size() + ba_.size() + o_.size() + delta_.size() +
          ones_.size()) *
         sizeof(float);
}

void DeltaNetBlock::conv(const LayerWeights& lw, float* conv_state, int64_t n_tok, ThreadPool& pool) {
  const int64_t C = d_.conv_channels(), K = d_.conv_kernel, hist = K - 1;
  const float* w = f32_data(lw.ssm_conv1d);  // [C][K], tap K-1 multiplies the current token
  pool.parallel_for(C, 64, [&](int64_t begin, int64_t end) {
    float window[64];
    for (int64_t ch = begin; ch < end; ++ch) {
      float* st = conv_state + ch * hist;
      const float* wc = w + ch * K;
      std::memcpy(window, st, sizeof(float) * static_cast<size_t>(hist));
      for (int64_t t = 0; t < n_tok; ++t) {
        const float x = qkv_[static_cast<size_t>(t * C + ch)];
        float sum = 0.0f;
        for (int64_t k = 0; k < hist; ++k) sum = std::fma(window[k], wc[k], sum);
        sum = std::fma(x, wc[hist], sum);
        for (int64_t k = 0; k + 1 < hist; ++k) window[k] = window[k + 1];
        window[hist - 1] = x;
        conv_[static_cast<size_t>(t * C + ch)] = sum;
      }
      std::memcpy(st, window, sizeof(float) * static_cast<size_t>(hist));
    }
  });
  // silu row by row as ggml_vec_silu_f32 computes it (silu_mul by ones is silu bit for bit).
  for (int64_t t = 0; t < n_tok; ++t) silu_mul(conv_.data() + t * C, ones_.data(), conv_.data() + t * C, C);
}

void DeltaNetBlock::recur(float* heads_state, int64_t n_tok, ThreadPool& pool) {
  const int64_t d = d_.head_dim, nk = d_.n_k_heads, nv = d_.n_v_heads, C = d_.conv_channels();
  const int64_t ratio = nv / nk;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const KernelTable& f32 = get_kernels(GgmlType::kF32);
  pool.parallel_for(nv, 1, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t kh = d_.grouped_heads ? j / ratio : j % nk;
      float* m = heads_state + j * d * d;  // m[jj * d + i] = S[i][jj]
      float* delta = delta_.data() + j * d;
      for (int64_t t = 0; t < n_tok; ++t) {
        const float* row = conv_.data() + t * C;
        const float* q = row + kh * d;
        const float* k = row + nk * d + kh * d;
        const float* v = row + 2 * nk * d + j * d;
        const float decay = std::exp(g_[static_cast<size_t>(t * nv + j)]);
        const float beta = beta_[static_cast<size_t>(t * nv + j)];
        for (int64_t i = 0; i < d * d; ++i) m[i] *= decay;
        for (int64_t jj = 0; jj < d; ++jj) delta[jj] = (v[jj] - dot_f32(f32, m + jj * d, k, d)) * beta;
        for (int64_t jj = 0; jj < d; ++jj) {
          float* mj = m + jj * d;
          const float u = delta[jj];
          for (int64_t i = 0; i < d; ++i) mj[i] = std::fma(k[i], u, mj[i]);
        }
        float* o = o_.data() + t * nv * d + j * d;
        for (int64_t jj = 0; jj < d; ++jj) o[jj] = dot_f32(f32, m + jj * d, q, d) * scale;
      }
    }
  });
}

Status DeltaNetBlock::forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state, const BlockIo& io) {
  const ModelConfig& c = config_;
  const int64_t n_tok = io.n_tok, dim = c.dim;
  const int64_t d = d_.head_dim, nk = d_.n_k_heads, nv = d_.n_v_heads, C = d_.conv_channels(), vd = d_.v_dim();
  ThreadPool& pool = *io.pool;

  // Projections of xb, in one parallel pass.
  ActCache acts(io.buffers->act_bufs, 3);
  MatmulJob jobs[4];
  size_t n_jobs = 0;
  jobs[n_jobs++] = {&lw.ssm_qkv, acts.get(lw.ssm_qkv.type, io.xb, dim, n_tok, pool), qkv_.data(), C};
  jobs[n_jobs++] = {&lw.ssm_gate, acts.get(lw.ssm_gate.type, io.xb, dim, n_tok, pool), z_.data(), vd};
  if (d_.fused_ba) {
    jobs[n_jobs++] = {&lw.ssm_ba, acts.get(lw.ssm_ba.type, io.xb, dim, n_tok, pool), ba_.data(), 2 * nv};
  } else {
    jobs[n_jobs++] = {&lw.ssm_beta, acts.get(lw.ssm_beta.type, io.xb, dim, n_tok, pool), beta_.data(), nv};
    jobs[n_jobs++] = {&lw.ssm_alpha, acts.get(lw.ssm_alpha.type, io.xb, dim, n_tok, pool), g_.data(), nv};
  }
  matmul_q_multi(std::span<const MatmulJob>(jobs, n_jobs), pool, selected_tier(), MatmulOrder::kAuto);

  // Gates: beta = sigmoid(b), g = softplus(a + dt_bias) * ssm_a. A fused ssm_ba row holds, per
  // key head, [b of its nv/nk value heads | a of them].
  const float* dt_bias = f32_data(lw.ssm_dt_bias);
  const float* a_log = f32_data(lw.ssm_a);
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
    for (int64_t j = 0; j < nv; ++j) {
      b[j] = sigmoid_scalar(b[j]);
      g[j] = softplus_scalar(g[j] + dt_bias[j]) * a_log[j];
    }
  }

  conv(lw, state.conv_state(layer_idx), n_tok, pool);
  for (int64_t t = 0; t < n_tok; ++t) {
    float* row = conv_.data() + t * C;
    for (int64_t h = 0; h < 2 * nk; ++h) l2_norm_scalar(row + h * d, d, c.norm_eps);  // q heads, then k heads
  }
  recur(state.recurrent_state(layer_idx), n_tok, pool);

  // o = rms(o) * ssm_norm * silu(z) per head, then the output projection.
  const float* norm = f32_data(lw.ssm_norm);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t j = 0; j < nv; ++j) {
      float* o = o_.data() + t * vd + j * d;
      rms_norm(o, norm, o, d, c.norm_eps);
      silu_mul(z_.data() + t * vd + j * d, o, o, d);
    }
  }
  matmul(lw.ssm_out, o_.data(), io.out, n_tok, io.buffers->act, pool);
  return ok_status();
}

}  // namespace sniper
