// SPDX-License-Identifier: MIT
// The qwen3vl_merger graph (llama.cpp tools/mtmd/models/qwen3vl.cpp):
//   x = conv0(pixels) + conv1(pixels) (the two temporal kernels of a still image), reordered so
//       that each 2x2 block of patches is 4 consecutive tokens (row-major blocks, row-major
//       inside), + patch bias + the learned position grid resized to the patch grid (bilinear,
//       corners aligned; as is when the sizes match), in the same order;
//   optional pre-LN; per layer: h = LN1(x); q|k|v = qkv(h) + b; q, k: vision M-RoPE (theta 10000,
//       the first quarter of pairs by row, the second by column, over whole heads);
//       x = o(attention(q, k, v, 1/sqrt(head_dim))) + o_b + x; x = FFN(LN2(x)) + x;
//   post-LN; every 4 consecutive tokens as one row of 4 * width; out = mm2(gelu(mm0(row) + b0)) + b2.
#include <cmath>

#include "kernels/activations.h"
#include "kernels/layer_norm.h"
#include "kernels/ops.h"
#include "media/vision_encoder.h"

namespace sniper {

namespace {

template <typename T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

constexpr int64_t kRowGrain = 16;  // tokens per parallel_for chunk of the per-token passes

// ggml_interpolate (GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS) of a grid [side][side]
// of rows of E floats (cell (x, y) at x + side * y) to [h][w] (cell (x, y) at x + w * y). The
// weighted sum is written as ggml-cpu's build (native ISA, the compiler's FP contraction) computes
// a*(1-dx)*(1-dy) + b*dx*(1-dy) + c*(1-dx)*dy + d*dx*dy: each later term fused into the sum.
void resize_grid_bilinear(const float* src, int64_t side, int64_t E, int64_t w, int64_t h, float* dst) {
  const float sf0 = w > 1 && side > 1 ? static_cast<float>(w - 1) / static_cast<float>(side - 1)
                                      : static_cast<float>(w) / static_cast<float>(side);
  const float sf1 = h > 1 && side > 1 ? static_cast<float>(h - 1) / static_cast<float>(side - 1)
                                      : static_cast<float>(h) / static_cast<float>(side);
  for (int64_t i1 = 0; i1 < h; ++i1) {
    const float y = static_cast<float>(i1) / sf1;
    int64_t y0 = static_cast<int64_t>(std::floor(y)), y1 = y0 + 1;
    y0 = std::max<int64_t>(0, std::min(y0, side - 1));
    y1 = std::max<int64_t>(0, std::min(y1, side - 1));
    const float dy = std::max(0.0f, std::min(y - static_cast<float>(y0), 1.0f));
    for (int64_t i0 = 0; i0 < w; ++i0) {
      const float xf = static_cast<float>(i0) / sf0;
      int64_t x0 = static_cast<int64_t>(std::floor(xf)), x1 = x0 + 1;
      x0 = std::max<int64_t>(0, std::min(x0, side - 1));
      x1 = std::max<int64_t>(0, std::min(x1, side - 1));
      const float dx = std::max(0.0f, std::min(xf - static_cast<float>(x0), 1.0f));
      const float* a = src + (y0 * side + x0) * E;
      const float* b = src + (y0 * side + x1) * E;
      const float* cc = src + (y1 * side + x0) * E;
      const float* d = src + (y1 * side + x1) * E;
      float* out = dst + (i1 * w + i0) * E;
      for (int64_t e = 0; e < E; ++e) {
        const float t0 = (b[e] * dx) * (1.0f - dy);
        float v = std::fma(a[e] * (1.0f - dx), 1.0f - dy, t0);
        v = std::fma(cc[e] * (1.0f - dx), dy, v);
        v = std::fma(d[e] * dx, dy, v);
        out[e] = v;
      }
    }
  }
}

}  // namespace

Result<EncodedImage> VisionEncoder::encode_qwen3vl(const PreprocessedImage& image, ThreadPool& pool) {
  const VisionConfig& c = config_;
  const VisionWeights& w = weights_;
  const int64_t P = c.patch_size, E = c.n_embd, hd = c.head_dim, nh = c.n_heads;
  const int64_t px = image.width / P, py = image.height / P, n = px * py;
  // The two temporal kernels over the same frame, added ([patch][E] each).
  grow(x_, static_cast<size_t>(n * E));
  grow(xb_, static_cast<size_t>(n * E));
  float* x = x_.data();
  float* xb = xb_.data();
  patch_embed(image.planar.data(), image.width, image.height, w.patch_embd[0], xb, pool);
  grow(att_, static_cast<size_t>(n * E));
  patch_embed(image.planar.data(), image.width, image.height, w.patch_embd[1], att_.data(), pool);
  for (int64_t i = 0; i < n * E; ++i) xb[i] += att_[static_cast<size_t>(i)];
  // Position grid at the patch grid's size ([y][x][E]).
  const int64_t side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(w.pos_embd.ne[1]))));
  const float* pos = f32_view(w.pos_embd);
  std::vector<float> resized;
  if (px != side || py != side) {
    resized.resize(static_cast<size_t>(n * E));
    resize_grid_bilinear(pos, side, E, px, py, resized.data());
    pos = resized.data();
  }
  // Merged order: token ((j * px / 2 + i) * 2 + dy) * 2 + dx is patch (2i + dx, 2j + dy).
  const float* bias = f32_view(w.patch_bias);
  std::vector<int64_t> patch_of(static_cast<size_t>(n));
  {
    int64_t tok = 0;
    for (int64_t j = 0; j < py / 2; ++j) {
      for (int64_t i = 0; i < px / 2; ++i) {
        for (int64_t dy = 0; dy < 2; ++dy) {
          for (int64_t dx = 0; dx < 2; ++dx) patch_of[static_cast<size_t>(tok++)] = (2 * j + dy) * px + 2 * i + dx;
        }
      }
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    const int64_t p = patch_of[static_cast<size_t>(t)];
    float* xt = x + t * E;
    for (int64_t e = 0; e < E; ++e) xt[e] = xb[p * E + e] + bias[e];
    add_inplace(xt, pos + p * E, E);
  }
  if (w.pre_ln_w.data != nullptr) {
    const float* b = w.pre_ln_b.data != nullptr ? f32_view(w.pre_ln_b) : nullptr;
    for (int64_t t = 0; t < n; ++t) layer_norm(x + t * E, f32_view(w.pre_ln_w), b, x + t * E, E, c.eps);
  }
  // Vision M-RoPE angles per token: t = row, h = column (the w and e sections are past the pairs).
  const int64_t half = hd / 2;
  const int32_t sections[4] = {static_cast<int32_t>(hd / 4), static_cast<int32_t>(hd / 4), static_cast<int32_t>(hd / 4),
                               static_cast<int32_t>(hd / 4)};
  std::vector<float> rope_cos(static_cast<size_t>(n * half)), rope_sin(rope_cos.size());
  for (int64_t t = 0; t < n; ++t) {
    const int64_t p = patch_of[static_cast<size_t>(t)];
    const int64_t row = p / px, col = p % px;
    const int64_t positions[4] = {row, col, row, col};
    rope_angles_vision(positions, sections, hd, c.rope_theta, rope_cos.data() + t * half, rope_sin.data() + t * half);
  }
  grow(q_, static_cast<size_t>(n * E));
  grow(k_, static_cast<size_t>(n * E));
  grow(v_, static_cast<size_t>(n * E));
  grow(tmp_, static_cast<size_t>(n * 3 * E));
  const float kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    SNIPER_ASSIGN_OR_RETURN(const VisionLayerWeights* lw, layer(l));
    const VisionLayerWeights& L = *lw;
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        layer_norm(x + t * E, f32_view(L.ln1_w), f32_view(L.ln1_b), xb + t * E, E, c.eps);
      }
    });
    float* qkv = tmp_.data();
    linear(L.qkv, xb, n, qkv, &L.qkv_b, nullptr, pool);
    pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const float* row = qkv + t * 3 * E;
        float* qt = q_.data() + t * E;
        float* kt = k_.data() + t * E;
        std::copy_n(row, E, qt);
        std::copy_n(row + E, E, kt);
        std::copy_n(row + 2 * E, E, v_.data() + t * E);
        rope_apply(qt, nh, hd, hd, RopeStyle::kNeox, rope_cos.data() + t * half, rope_sin.data() + t * half);
        rope_apply(kt, nh, hd, hd, RopeStyle::kNeox, rope_cos.data() + t * half, rope_sin.data() + t * half);
      }
    });
    attention(q_.data(), k_.data(), v_.data(), n, kq_scale, att_.data(), pool);
    linear(L.o, att_.data(), n, xb, &L.o_b, nullptr, pool);
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        add_inplace(x + t * E, xb + t * E, E);
        layer_norm(x + t * E, f32_view(L.ln2_w), f32_view(L.ln2_b), xb + t * E, E, c.eps);
      }
    });
    float* out = tmp_.data();
    ffn(L, xb, n, out, pool);
    pool.parallel_for(n, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) add_inplace(x + t * E, out + t * E, E);
    });
  }
  for (int64_t t = 0; t < n; ++t)
    layer_norm(x + t * E, f32_view(w.post_ln_w), f32_view(w.post_ln_b), xb + t * E, E, c.eps);
  // The merger over rows of 4 consecutive tokens.
  const int64_t n_out = n / 4, E4 = 4 * E;
  grow(att_, static_cast<size_t>(n_out * E4));
  float* hidden = att_.data();
  linear(w.mm0_w, xb, n_out, hidden, &w.mm0_b, nullptr, pool);
  for (int64_t t = 0; t < n_out; ++t) gelu(hidden + t * E4, hidden + t * E4, E4);
  EncodedImage result;
  result.grid = {px / 2, py / 2};
  result.dim = w.mm2_w.ne[1];
  result.embd.resize(static_cast<size_t>(n_out * result.dim));
  linear(w.mm2_w, hidden, n_out, result.embd.data(), &w.mm2_b, nullptr, pool);
  return result;
}

}  // namespace sniper
