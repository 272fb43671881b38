// SPDX-License-Identifier: MIT
// The gemma4v graph (llama.cpp tools/mtmd/models/gemma4v.cpp and clip.cpp build_vit for it):
//   x = conv(2 * pixels - 1) + pos_x[col] + pos_y[row]
//   per layer: h = rms(x) * ln1; q, k, v = linears of h (clamped); q, k: per-head rms * norm;
//              2D NeoX rope (theta 100): the first half of each head turns by the column, the
//              second by the row; v: per-head rms; a = attention(q, k, v) with scale 1;
//              x = rms(o(a)) * attn_post_norm + x; h = rms(x) * ln2;
//              x = rms(down(gelu(gate h) * up h)) * ffn_post_norm + x; x *= out_scale
//   pooled = avg_pool(x, merge x merge) * sqrt(width); (pooled - std_bias) * std_scale if present;
//   out = input_projection(rms(pooled)) (clamped).
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "media/vision_encoder.h"

namespace sniper {

namespace {

template <typename T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

constexpr int64_t kRowGrain = 16;  // tokens per parallel_for chunk of the per-token passes

}  // namespace

Result<EncodedImage> VisionEncoder::encode_gemma4v(const PreprocessedImage& image, ThreadPool& pool) {
  const VisionConfig& c = config_;
  const VisionWeights& w = weights_;
  const int64_t P = c.patch_size, E = c.n_embd, hd = c.head_dim, nh = c.n_heads, nkv = c.n_kv_heads;
  const int64_t q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const int64_t px = image.width / P, py = image.height / P, n = px * py;
  const int64_t pos_size = w.pos_embd.ne[1];
  if (px > pos_size || py > pos_size) {
    return make_error("image of %lldx%lld pixels has %lldx%lld patches, over the projector's %lld positions per side",
                      static_cast<long long>(image.width), static_cast<long long>(image.height),
                      static_cast<long long>(px), static_cast<long long>(py), static_cast<long long>(pos_size));
  }
  // Patch embedding of 2 * x - 1 (ggml_scale_bias: exact for x * 2).
  std::vector<float> pixels(image.planar.size());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = image.planar[i] * 2.0f + -1.0f;
  grow(x_, static_cast<size_t>(n * E));
  float* x = x_.data();
  patch_embed(pixels.data(), image.width, image.height, w.patch_embd[0], x, pool);
  // Learned positions: table 0 by column, table 1 by row (ggml_get_rows, two adds).
  {
    const KernelTable& kt = get_kernels(w.pos_embd.type);
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(E));
      for (int64_t p = begin; p < end; ++p) {
        kt.dequant_row(w.pos_embd.row(p % px), row.data(), E);
        add_inplace(x + p * E, row.data(), E);
        kt.dequant_row(w.pos_embd.row(pos_size + p / px), row.data(), E);
        add_inplace(x + p * E, row.data(), E);
      }
    });
  }
  // Rope angles per column and per row: each half-head of hd / 2 dims rotates NeoX-style.
  const int64_t quarter = hd / 4;
  std::vector<float> cos_x(static_cast<size_t>(px * quarter)), sin_x(cos_x.size());
  std::vector<float> cos_y(static_cast<size_t>(py * quarter)), sin_y(cos_y.size());
  for (int64_t i = 0; i < px; ++i) {
    rope_angles(i, hd / 2, c.rope_theta, 1.0f, nullptr, cos_x.data() + i * quarter, sin_x.data() + i * quarter);
  }
  for (int64_t i = 0; i < py; ++i) {
    rope_angles(i, hd / 2, c.rope_theta, 1.0f, nullptr, cos_y.data() + i * quarter, sin_y.data() + i * quarter);
  }
  grow(xb_, static_cast<size_t>(n * E));
  grow(q_, static_cast<size_t>(n * q_dim));
  grow(k_, static_cast<size_t>(n * kv_dim));
  grow(v_, static_cast<size_t>(n * kv_dim));
  grow(att_, static_cast<size_t>(n * q_dim));
  float* xb = xb_.data();
  for (int64_t l = 0; l < c.n_layers; ++l) {
    SNIPER_ASSIGN_OR_RETURN(const VisionLayerWeights* lw, layer(l));
    const VisionLayerWeights& L = *lw;
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) rms_norm(x + t * E, f32_view(L.ln1_w), xb + t * E, E, c.eps);
    });
    linear(L.q, xb, n, q_.data(), nullptr, &L.clamp_q, pool);
    linear(L.k, xb, n, k_.data(), nullptr, &L.clamp_k, pool);
    linear(L.v, xb, n, v_.data(), nullptr, &L.clamp_v, pool);
    pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        float* qt = q_.data() + t * q_dim;
        float* kt = k_.data() + t * kv_dim;
        float* vt = v_.data() + t * kv_dim;
        for (int64_t h = 0; h < nh; ++h) rms_norm(qt + h * hd, f32_view(L.q_norm), qt + h * hd, hd, c.eps);
        for (int64_t h = 0; h < nkv; ++h) rms_norm(kt + h * hd, f32_view(L.k_norm), kt + h * hd, hd, c.eps);
        const float* cx = cos_x.data() + (t % px) * quarter;
        const float* sx = sin_x.data() + (t % px) * quarter;
        const float* cy = cos_y.data() + (t / px) * quarter;
        const float* sy = sin_y.data() + (t / px) * quarter;
        rope_apply(qt, nh, hd, hd / 2, RopeStyle::kNeox, cx, sx);
        rope_apply(qt + hd / 2, nh, hd, hd / 2, RopeStyle::kNeox, cy, sy);
        rope_apply(kt, nkv, hd, hd / 2, RopeStyle::kNeox, cx, sx);
        rope_apply(kt + hd / 2, nkv, hd, hd / 2, RopeStyle::kNeox, cy, sy);
        for (int64_t h = 0; h < nkv; ++h) rms_norm(vt + h * hd, nullptr, vt + h * hd, hd, c.eps);
      }
    });
    attention(q_.data(), k_.data(), v_.data(), n, 1.0f, att_.data(), pool);
    grow(tmp_, static_cast<size_t>(n * E));
    float* tmp = tmp_.data();
    linear(L.o, att_.data(), n, tmp, nullptr, &L.clamp_o, pool);
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        rms_norm(tmp + t * E, f32_view(L.attn_post_norm), tmp + t * E, E, c.eps);
        add_inplace(x + t * E, tmp + t * E, E);
        rms_norm(x + t * E, f32_view(L.ln2_w), xb + t * E, E, c.eps);
      }
    });
    ffn(L, xb, n, tmp, pool);
    const float* scale = L.out_scale.data != nullptr ? f32_view(L.out_scale) : nullptr;
    const bool per_channel = L.out_scale.ne[0] == E && E > 1;
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        float* xt = x + t * E;
        rms_norm(tmp + t * E, f32_view(L.ffn_post_norm), tmp + t * E, E, c.eps);
        add_inplace(xt, tmp + t * E, E);
        if (scale != nullptr) {
          for (int64_t i = 0; i < E; ++i) xt[i] *= per_channel ? scale[i] : scale[0];
        }
      }
    });
  }
  // Average pooling over merge x merge patches, channel by channel (ggml_pool_2d: the window summed
  // row by row in float, divided by its size), then * sqrt(width).
  const int64_t k = c.merge, ox_n = px / k, oy_n = py / k, n_out = ox_n * oy_n;
  const float area = static_cast<float>(k * k), scale = std::sqrt(static_cast<float>(E));
  float* pooled = xb;
  for (int64_t oy = 0; oy < oy_n; ++oy) {
    for (int64_t ox = 0; ox < ox_n; ++ox) {
      float* out = pooled + (oy * ox_n + ox) * E;
      for (int64_t e = 0; e < E; ++e) {
        float res = 0.0f;
        for (int64_t ky = 0; ky < k; ++ky) {
          for (int64_t kx = 0; kx < k; ++kx) res += x[((oy * k + ky) * px + ox * k + kx) * E + e];
        }
        res /= area;
        out[e] = res * scale;
      }
    }
  }
  if (w.std_bias.data != nullptr) {
    const float* sb = f32_view(w.std_bias);
    const float* ss = f32_view(w.std_scale);
    for (int64_t t = 0; t < n_out; ++t) {
      for (int64_t e = 0; e < E; ++e) pooled[t * E + e] = (pooled[t * E + e] - sb[e]) * ss[e];
    }
  }
  for (int64_t t = 0; t < n_out; ++t) rms_norm(pooled + t * E, nullptr, pooled + t * E, E, c.eps);
  EncodedImage out;
  out.grid = {ox_n, oy_n};
  out.dim = w.input_proj.ne[1];
  out.embd.resize(static_cast<size_t>(n_out * out.dim));
  linear(w.input_proj, pooled, n_out, out.embd.data(), nullptr, &w.clamp_proj, pool);
  return out;
}

}  // namespace sniper
