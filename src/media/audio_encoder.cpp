// SPDX-License-Identifier: MIT
#include "media/audio_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "kernels/activations.h"
#include "kernels/kernels.h"
#include "kernels/layer_norm.h"
#include "kernels/ops.h"
#include "media/clamped_linear.h"

namespace sniper {

namespace {

constexpr int64_t kConvBlock = 512;  // output positions per im2col block (bounds the [block][9 C] scratch)
constexpr int64_t kFfnChunk = 1024;  // tokens per FFN pass (bounds the [tokens][n_ff] scratch)

template <typename T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

inline float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// The rows of x [n][E] RMS-normed and multiplied by w (rms_norm then ggml_mul, as build_norm), or
// copied when w is absent and `skip_absent`.
void rms_rows(const float* x, const QTensor& w, float* out, int64_t n, int64_t E, float eps, ThreadPool& pool) {
  const float* wv = w.data != nullptr ? f32_view(w) : nullptr;
  pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) rms_norm(x + t * E, wv, out + t * E, E, eps);
  });
}

}  // namespace

AudioEncoder::AudioEncoder(const AudioConfig& config, const AudioWeights& weights)
    : config_(config), weights_(weights) {}

size_t AudioEncoder::scratch_bytes() const {
  const std::vector<float>* vs[] = {&a_,   &b_,   &conv_y_, &xb_,      &q_,   &k_,   &v_,
                                    &att_, &tmp_, &ffn_,    &clamped_, &pos_, &prel_};
  size_t floats = 0;
  for (const auto* v : vs) floats += v->capacity();
  return floats * sizeof(float) + cols_.capacity() * sizeof(uint16_t) + act_.capacity() + act_kernel_.capacity();
}

size_t AudioEncoder::estimate_scratch_bytes(const AudioConfig& c, int64_t n_frames, int64_t c0, int64_t c1, int64_t p,
                                            int64_t out) {
  const int64_t t1 = (n_frames - 1) / 2 + 1, f1 = (c.n_mel - 1) / 2 + 1;
  const int64_t n = audio_tokens_for_frames(n_frames), f2 = (f1 - 1) / 2 + 1;
  const int64_t E = c.n_embd, Q = c.q_dim(), F = c.n_ff;
  const int64_t chunk = std::min(n, kFfnChunk);
  const int64_t conv_a = std::max(n_frames * c.n_mel, n * c1 * f2);
  const int64_t conv_b = t1 * f1 * c0;
  const int64_t cols = kConvBlock * 9 * std::max(c0, int64_t{1}) / 2 + kConvBlock * std::max(c0, c1) +
                       9 * std::max(c0, int64_t{1}) * std::max(c0, c1) / 2;
  const int64_t widest = std::max({E, Q, 2 * E, p, out, c1 * f2});
  const int64_t floats = conv_a + conv_b + cols + n * (2 * E + 4 * Q + 2 * E + widest) + chunk * F +
                         n * widest /* clamped copy */ + (c.max_past + 1) * (E + Q);
  const int64_t acts = n * std::max({widest, F}) * 4 + 4096;
  return static_cast<size_t>(floats) * sizeof(float) + static_cast<size_t>(acts);
}

void AudioEncoder::linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias,
                          const ClampBounds* clamp, ThreadPool& pool) {
  clamped_linear(w, x, n_tok, y, bias, clamp, clamped_, act_, pool);
}

void AudioEncoder::conv_stage(int stage, const float* in, int64_t T, int64_t F, int64_t cin, float* out,
                              ThreadPool& pool) {
  const AudioWeights& w = weights_;
  const int64_t cout = w.channels[stage], K = 9 * cin;
  const int64_t T2 = (T - 1) / 2 + 1, F2 = (F - 1) / 2 + 1, n = T2 * F2;
  // ggml_conv_2d: im2col to f16 (column order (ci, kh, kw)), and the gemm with the patches as
  // the weight rows and the kernel, rounded to f16, as the activations: y[c][p] over f16 pairs
  // with an f32 accumulator, as the vision encoders' patch embedding.
  const QuantizedActs acts = quantize_acts(GgmlType::kF16, f32_view(w.conv_w[stage]), K, cout, K, act_kernel_, pool);
  const int64_t block = std::min(n, kConvBlock);
  grow(cols_, static_cast<size_t>(block * K));
  grow(conv_y_, static_cast<size_t>(block * cout));
  for (int64_t p0 = 0; p0 < n; p0 += kConvBlock) {
    const int64_t m = std::min(kConvBlock, n - p0);
    pool.parallel_for(m, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t p = p0 + i, to = p / F2, fo = p % F2;
        uint16_t* row = cols_.data() + i * K;
        for (int64_t ci = 0; ci < cin; ++ci) {
          for (int64_t kh = 0; kh < 3; ++kh) {
            const int64_t t = 2 * to + kh - 1;
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t f = 2 * fo + kw - 1;
              const bool inside = t >= 0 && t < T && f >= 0 && f < F;
              row[(ci * 3 + kh) * 3 + kw] = fp32_to_fp16(inside ? in[(t * F + f) * cin + ci] : 0.0f);
            }
          }
        }
      }
    });
    QTensor patches;
    patches.type = GgmlType::kF16;
    patches.ne = {K, m, 1, 1};
    patches.data = reinterpret_cast<const uint8_t*>(cols_.data());
    patches.row_bytes = static_cast<size_t>(K) * 2;
    matmul_q(patches, acts, conv_y_.data(), m, pool);
    pool.parallel_for(m, 64, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t c = 0; c < cout; ++c) out[(p0 + i) * cout + c] = conv_y_[static_cast<size_t>(c * m + i)];
      }
    });
  }
  const float* bias = w.conv_b[stage].data != nullptr ? f32_view(w.conv_b[stage]) : nullptr;
  const float* norm = w.conv_norm[stage].data != nullptr ? f32_view(w.conv_norm[stage]) : nullptr;
  const float eps = config_.eps;
  // The bias as mtmd's graph adds it: ggml_add of a [cout] vector to the [F', T', cout] output
  // broadcasts it along the mel axis (bias[f % cout] at every channel), not the channels
  // (bind_audio_weights refuses a bias when cout does not divide F').
  pool.parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      float* y = out + p * cout;
      if (bias != nullptr) {
        const float bf = bias[(p % F2) % cout];
        for (int64_t c = 0; c < cout; ++c) y[c] += bf;
      }
      if (norm != nullptr) layer_norm(y, norm, nullptr, y, cout, eps);
      for (int64_t c = 0; c < cout; ++c) y[c] = y[c] > 0.0f ? y[c] : 0.0f;
    }
  });
}

void AudioEncoder::half_ffn(const QTensor& norm, const QTensor& up, const QTensor& down, const QTensor& post,
                            const ClampBounds& cu, const ClampBounds& cd, float* x, int64_t n, ThreadPool& pool) {
  const int64_t E = config_.n_embd, F = config_.n_ff;
  const float eps = config_.eps;
  grow(xb_, static_cast<size_t>(n * E));
  grow(tmp_, static_cast<size_t>(n * E));
  rms_rows(x, norm, xb_.data(), n, E, eps, pool);
  const int64_t chunk = std::min(n, kFfnChunk);
  grow(ffn_, static_cast<size_t>(chunk * F));
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t m = std::min(chunk, n - t0);
    linear(up, xb_.data() + t0 * E, m, ffn_.data(), nullptr, &cu, pool);
    pool.parallel_for(m, 16, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) silu_row(ffn_.data() + t * F, ffn_.data() + t * F, F);
    });
    linear(down, ffn_.data(), m, tmp_.data() + t0 * E, nullptr, &cd, pool);
  }
  if (post.data != nullptr) rms_rows(tmp_.data(), post, tmp_.data(), n, E, eps, pool);
  pool.parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * E; i < end * E; ++i) x[i] += tmp_[static_cast<size_t>(i)] * 0.5f;
  });
}

void AudioEncoder::attention(const AudioLayerWeights& L, float* x, int64_t n, ThreadPool& pool) {
  const AudioConfig& c = config_;
  const int64_t E = c.n_embd, Q = c.q_dim(), D = c.head_dim, H = c.n_heads, P = c.max_past;
  grow(xb_, static_cast<size_t>(n * E));
  if (L.attn_norm.data != nullptr) {
    rms_rows(x, L.attn_norm, xb_.data(), n, E, c.eps, pool);
  } else {
    std::memcpy(xb_.data(), x, static_cast<size_t>(n * E) * sizeof(float));
  }
  grow(q_, static_cast<size_t>(n * Q));
  grow(k_, static_cast<size_t>(n * Q));
  grow(v_, static_cast<size_t>(n * Q));
  grow(att_, static_cast<size_t>(n * Q));
  linear(L.q, xb_.data(), n, q_.data(), nullptr, &L.clamp_q, pool);
  linear(L.k, xb_.data(), n, k_.data(), nullptr, &L.clamp_k, pool);
  linear(L.v, xb_.data(), n, v_.data(), nullptr, &L.clamp_v, pool);
  // q * (1/sqrt(d) / ln 2) * per_dim_scale; k * (ln(1 + e) / ln 2) * per_dim_k_scale (two ops each).
  const float q_scale = (1.0f / std::sqrt(static_cast<float>(D))) / std::log(2.0f);
  const float k_scale = std::log(1.0f + std::exp(1.0f)) / std::log(2.0f);
  const float* qs = L.per_dim_scale.data != nullptr ? f32_view(L.per_dim_scale) : nullptr;
  const float* ks = L.per_dim_k_scale.data != nullptr ? f32_view(L.per_dim_k_scale) : nullptr;
  pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* qt = q_.data() + t * Q;
      float* kt = k_.data() + t * Q;
      for (int64_t i = 0; i < Q; ++i) {
        qt[i] *= q_scale;
        if (qs != nullptr) qt[i] *= qs[i % D];
        kt[i] *= k_scale;
        if (ks != nullptr) kt[i] *= ks[i % D];
      }
    }
  });
  // The relative position term: k_rel times the sinusoid of each distance 0..P (row P - j holds
  // distance j, as mtmd's table of positions P, P - 1, ..., 0).
  const bool rel = L.k_rel.data != nullptr;
  if (rel) {
    const int64_t half = E / 2;
    const float log_inc = std::log(10000.0f) / static_cast<float>(std::max<int64_t>(half - 1, 1));
    grow(pos_, static_cast<size_t>((P + 1) * E));
    for (int64_t r = 0; r <= P; ++r) {
      const auto position = static_cast<float>(P - r);
      for (int64_t i = 0; i < half; ++i) {
        const float inv_ts = std::exp(-static_cast<float>(i) * log_inc);
        const float scaled = position * inv_ts;
        pos_[static_cast<size_t>(r * E + i)] = std::sin(scaled);
        pos_[static_cast<size_t>(r * E + i + half)] = std::cos(scaled);
      }
    }
    grow(prel_, static_cast<size_t>((P + 1) * Q));
    matmul(L.k_rel, pos_.data(), prel_.data(), P + 1, act_, pool);
  }
  const float cap = c.softcap, inv_cap = 1.0f / c.softcap;
  pool.parallel_for(n, 8, [&](int64_t begin, int64_t end) {
    float scores[64];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n_keys = std::min(t + 1, P);
      for (int64_t h = 0; h < H; ++h) {
        const float* qh = q_.data() + t * Q + h * D;
        float m = -INFINITY;
        for (int64_t j = 0; j < n_keys; ++j) {
          float s = dot(qh, k_.data() + (t - j) * Q + h * D, D);
          if (rel) s += dot(qh, prel_.data() + (P - j) * Q + h * D, D);
          s = std::tanh(s * inv_cap) * cap;
          scores[j] = s;
          m = std::max(m, s);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n_keys; ++j) {
          scores[j] = std::exp(scores[j] - m);
          sum += scores[j];
        }
        const auto inv = static_cast<float>(1.0 / sum);
        float* out = att_.data() + t * Q + h * D;
        for (int64_t d = 0; d < D; ++d) out[d] = 0.0f;
        for (int64_t j = 0; j < n_keys; ++j) {
          const float wj = scores[j] * inv;
          const float* vh = v_.data() + (t - j) * Q + h * D;
          for (int64_t d = 0; d < D; ++d) out[d] += wj * vh[d];
        }
      }
    }
  });
  grow(tmp_, static_cast<size_t>(n * E));
  linear(L.o, att_.data(), n, tmp_.data(), &L.o_b, &L.clamp_o, pool);
  if (L.attn_post_norm.data != nullptr) rms_rows(tmp_.data(), L.attn_post_norm, tmp_.data(), n, E, c.eps, pool);
  pool.parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) add_inplace(x + t * E, tmp_.data() + t * E, E);
  });
}

void AudioEncoder::conv_module(const AudioLayerWeights& L, float* x, int64_t n, ThreadPool& pool) {
  const AudioConfig& c = config_;
  const int64_t E = c.n_embd, K = c.conv_kernel;
  grow(xb_, static_cast<size_t>(n * E));
  grow(ffn_, static_cast<size_t>(n * 2 * E));
  grow(tmp_, static_cast<size_t>(n * E));
  grow(att_, static_cast<size_t>(n * E));
  rms_rows(x, L.conv_pre_norm, xb_.data(), n, E, c.eps, pool);
  linear(L.conv_pw1, xb_.data(), n, ffn_.data(), nullptr, &L.clamp_pw1, pool);
  // GLU: the first half times the sigmoid of the second.
  float* glu = att_.data();
  pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* a = ffn_.data() + t * 2 * E;
      for (int64_t i = 0; i < E; ++i) glu[t * E + i] = a[i] * sigmoid(a[E + i]);
    }
  });
  // Causal depthwise conv (ggml_ssm_conv over K - 1 zeros of left padding): y[t] = sum over k of
  // glu[t + k - (K - 1)] * w[k], in k order, then + bias, RMS norm * weight, SiLU.
  const float* dw = f32_view(L.conv_dw);
  const float* db = L.conv_dw_b.data != nullptr ? f32_view(L.conv_dw_b) : nullptr;
  const float* cn = L.conv_norm.data != nullptr ? f32_view(L.conv_norm) : nullptr;
  float* y = tmp_.data();
  pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* yt = y + t * E;
      for (int64_t i = 0; i < E; ++i) {
        float s = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t src = t + k - (K - 1);
          s += (src >= 0 ? glu[src * E + i] : 0.0f) * dw[i * K + k];
        }
        yt[i] = s;
      }
      if (db != nullptr) add_inplace(yt, db, E);
      if (cn != nullptr) rms_norm(yt, cn, yt, E, c.eps);
      silu_row(yt, yt, E);
    }
  });
  linear(L.conv_pw2, y, n, xb_.data(), nullptr, &L.clamp_pw2, pool);
  pool.parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) add_inplace(x + t * E, xb_.data() + t * E, E);
  });
}

Result<EncodedAudio> AudioEncoder::encode(const MelSpectrogram& mel, ThreadPool& pool) {
  const AudioConfig& c = config_;
  const AudioWeights& w = weights_;
  if (mel.n_mel != c.n_mel || mel.n_frames < 1 ||
      mel.data.size() != static_cast<size_t>(mel.n_mel) * static_cast<size_t>(mel.n_frames)) {
    return make_error("the audio encoder takes spectrograms of %lld mel bins, not %d bins of %d frames",
                      static_cast<long long>(c.n_mel), mel.n_mel, mel.n_frames);
  }
  const int64_t T0 = mel.n_frames, F0 = c.n_mel, E = c.n_embd;
  // The spectrogram transposed to [time][mel] (mtmd's ggml_transpose of the [frames, mel] input).
  grow(a_, static_cast<size_t>(T0 * F0));
  for (int64_t f = 0; f < F0; ++f) {
    for (int64_t t = 0; t < T0; ++t) a_[static_cast<size_t>(t * F0 + f)] = mel.data[static_cast<size_t>(f * T0 + t)];
  }
  const int64_t T1 = (T0 - 1) / 2 + 1, F1 = (F0 - 1) / 2 + 1;
  const int64_t T2 = (T1 - 1) / 2 + 1, F2 = (F1 - 1) / 2 + 1;
  grow(b_, static_cast<size_t>(T1 * F1 * w.channels[0]));
  conv_stage(0, a_.data(), T0, F0, 1, b_.data(), pool);
  grow(a_, static_cast<size_t>(T2 * F2 * w.channels[1]));
  conv_stage(1, b_.data(), T1, F1, w.channels[0], a_.data(), pool);
  const int64_t n = T2;
  // [T2][F2][C] rows are the flattened features (channel fastest): the input projection.
  grow(b_, static_cast<size_t>(n * E));
  float* x = b_.data();
  linear(w.inp_proj, a_.data(), n, x, &w.inp_proj_b, &w.clamp_inp_proj, pool);
  for (const AudioLayerWeights& L : w.layers) {
    half_ffn(L.ffn_norm, L.ffn_up, L.ffn_down, L.ffn_post_norm, L.clamp_ffn_up, L.clamp_ffn_down, x, n, pool);
    attention(L, x, n, pool);
    conv_module(L, x, n, pool);
    half_ffn(L.ffn_norm_1, L.ffn_up_1, L.ffn_down_1, L.ffn_post_norm_1, L.clamp_ffn_up_1, L.clamp_ffn_down_1, x, n,
             pool);
    if (L.out_norm.data != nullptr) rms_rows(x, L.out_norm, x, n, E, c.eps, pool);
  }
  const float* h = x;
  int64_t width = E;
  if (w.out_proj.data != nullptr) {
    width = w.out_proj.ne[1];
    grow(a_, static_cast<size_t>(n * width));
    linear(w.out_proj, x, n, a_.data(), &w.out_proj_b, &w.clamp_out_proj, pool);
    h = a_.data();
  }
  grow(xb_, static_cast<size_t>(n * width));
  // ggml_rms_norm, then ggml_mul by soft_emb_norm when present.
  QTensor none;
  rms_rows(h, none, xb_.data(), n, width, c.eps, pool);
  if (w.soft_emb_norm.data != nullptr) {
    const float* s = f32_view(w.soft_emb_norm);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < width; ++i) xb_[static_cast<size_t>(t * width + i)] *= s[i];
    }
  }
  EncodedAudio out;
  out.n_tokens = n;
  out.dim = out_dim();
  out.embd.resize(static_cast<size_t>(n * out.dim));
  linear(w.mm_proj, xb_.data(), n, out.embd.data(), nullptr, &w.clamp_mm_proj, pool);
  return out;
}

}  // namespace sniper
