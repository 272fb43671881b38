// SPDX-License-Identifier: MIT
// The stages every vision projector shares (patch embedding, linears, attention, FFN) and the
// dispatch per projector type; media/gemma4v_encoder.cpp and media/qwen3vl_encoder.cpp hold the
// per-type graphs.
#include "media/vision_encoder.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/activations.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"
#include "kernels/matmul_widened.h"
#include "kernels/ops.h"
#include "media/clamped_linear.h"

namespace sniper {

namespace {

constexpr int64_t kFfnChunk = 1024;  // tokens per FFN pass (bounds the [tokens][n_ff] scratch)

template <typename T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

VisionEncoder::VisionEncoder(const VisionConfig& config, const VisionWeights& weights, VisionLayerSource* layers)
    : config_(config), weights_(weights), layers_(layers) {}

int64_t VisionEncoder::out_dim() const {
  return config_.type == ProjectorType::kGemma4V ? weights_.input_proj.ne[1] : weights_.mm2_w.ne[1];
}

size_t VisionEncoder::scratch_bytes() const {
  return (x_.capacity() + xb_.capacity() + q_.capacity() + k_.capacity() + v_.capacity() + att_.capacity() +
          tmp_.capacity() + ffn_a_.capacity() + ffn_b_.capacity() + clamped_.capacity()) *
             sizeof(float) +
         (patches_.capacity() + k16_.capacity() + v16_.capacity()) * sizeof(uint16_t) + att_scratch_.capacity() +
         act_.capacity() + act_kernel_.capacity();
}

size_t VisionEncoder::estimate_scratch_bytes(const VisionConfig& c, int n_threads) {
  // The most patches an image may have: the preprocessing's largest output over P x P patches.
  const int64_t n = planned_preprocessed_pixels(c.preprocess) / (c.patch_size * c.patch_size);
  const auto N = static_cast<size_t>(n), E = static_cast<size_t>(c.n_embd);
  const size_t F = static_cast<size_t>(std::max(c.n_ff, 4 * c.n_embd));
  const size_t K = static_cast<size_t>(3 * c.patch_size * c.patch_size);
  const size_t chunk = static_cast<size_t>(std::min<int64_t>(n, kFfnChunk));
  size_t floats = N * (6 * E + static_cast<size_t>(c.q_dim()) * 2) + 2 * chunk * F + 2 * N * std::max(E, F);
  size_t halves = N * K + 2 * N * static_cast<size_t>(c.kv_dim());
  const int64_t group = c.n_heads / c.n_kv_heads;
  const size_t att = static_cast<size_t>(n_threads) * (attention_scratch_bound(c.head_dim, group, n) + 64) + 64;
  // The linears' widened activations and per-thread weight slices (matmul_widened_bytes).
  const size_t acts = 2 * N * std::max(E, F) * 4 + K * E * 2 + static_cast<size_t>(n_threads) * kWidenedChunkBytes;
  return floats * sizeof(float) + halves * sizeof(uint16_t) + att + acts;
}

Result<const VisionLayerWeights*> VisionEncoder::layer(int64_t layer_idx) {
  if (layers_ != nullptr) return layers_->acquire(layer_idx);
  return &weights_.layers[static_cast<size_t>(layer_idx)];
}

void VisionEncoder::linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias,
                           const ClampBounds* clamp, ThreadPool& pool) {
  clamped_linear(w, x, n_tok, y, bias, clamp, clamped_, act_, pool);
}

void VisionEncoder::patch_embed(const float* planar, int64_t width, int64_t height, const QTensor& kernel, float* out,
                                ThreadPool& pool) {
  const int64_t P = config_.patch_size, E = config_.n_embd, K = 3 * P * P;
  const int64_t px = width / P, py = height / P, n = px * py;
  // im2col (ggml_im2col to f16): row p = patch (x = p % px, y = p / px), column c * P^2 + ky * P + kx.
  grow(patches_, static_cast<size_t>(n * K));
  pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t x0 = (p % px) * P, y0 = (p / px) * P;
      uint16_t* row = patches_.data() + p * K;
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t ky = 0; ky < P; ++ky) {
          const float* src = planar + (c * height + y0 + ky) * width + x0;
          for (int64_t kx = 0; kx < P; ++kx) row[(c * P + ky) * P + kx] = fp32_to_fp16(src[kx]);
        }
      }
    }
  });
  // The patches are the gemm's weight rows and the kernel its f16 activations (ggml_conv_2d's
  // mul_mat(im2col, kernel)): y[e][p].
  QTensor w;
  w.type = GgmlType::kF16;
  w.ne = {K, n, 1, 1};
  w.data = reinterpret_cast<const uint8_t*>(patches_.data());
  w.row_bytes = static_cast<size_t>(K) * 2;
  QuantizedActs acts;
  if (kernel.type == GgmlType::kF16) {
    acts.type = GgmlType::kF16;
    acts.n = K;
    acts.n_tok = E;
    acts.row_bytes = static_cast<size_t>(K) * 2;
    acts.data = kernel.data;
  } else {
    acts = quantize_acts(GgmlType::kF16, f32_view(kernel), K, E, K, act_kernel_, pool);
  }
  grow(tmp_, static_cast<size_t>(n * E));
  matmul_q(w, acts, tmp_.data(), n, pool);
  // The transpose to [p][e] (ggml_cont of the transposed conv output).
  pool.parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      for (int64_t e = 0; e < E; ++e) out[p * E + e] = tmp_[static_cast<size_t>(e * n + p)];
    }
  });
}

void VisionEncoder::attention(const float* q, const float* k, const float* v, int64_t n, float scale, float* att,
                              ThreadPool& pool) {
  const VisionConfig& c = config_;
  const int64_t hd = c.head_dim, n_kv = c.n_kv_heads, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const int64_t group = c.n_heads / n_kv;
  // K and V cast to f16 (ggml_cast in build_attn), each kv head's rows contiguous.
  grow(k16_, static_cast<size_t>(n * kv_dim));
  grow(v16_, static_cast<size_t>(n * kv_dim));
  pool.parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      for (int64_t h = 0; h < n_kv; ++h) {
        uint16_t* kd = k16_.data() + (h * n + t) * hd;
        uint16_t* vd = v16_.data() + (h * n + t) * hd;
        const float* ks = k + t * kv_dim + h * hd;
        const float* vs = v + t * kv_dim + h * hd;
        for (int64_t d = 0; d < hd; ++d) {
          kd[d] = fp32_to_fp16(ks[d]);
          vd[d] = fp32_to_fp16(vs[d]);
        }
      }
    }
  });
  AttentionLayout layout;
  layout.k_type = GgmlType::kF16;
  layout.v_type = GgmlType::kF16;
  layout.flash = true;
  layout.head_dim = hd;
  layout.n_ctx = n;
  layout.head_bytes = static_cast<size_t>(hd) * 2;
  layout.row_bytes = layout.head_bytes;
  layout.head_stride = static_cast<size_t>(n * hd) * 2;
  layout.v_head_bytes = layout.head_bytes;
  layout.v_row_bytes = layout.head_bytes;
  layout.v_head_stride = layout.head_stride;
  AttentionBatch batch;
  batch.n_kv_padded = n;
  batch.batched = n >= 2;
  batch.n_tok = n;
  batch.n_threads = pool.n_threads();
  batch.causal = false;
  const int64_t tok_tile = attention_token_tile(layout, batch, group);
  const int64_t n_tiles = (n + tok_tile - 1) / tok_tile;
  const size_t need = attention_scratch_bytes(layout, n, group, tok_tile);
  size_t stride = 0;
  uint8_t* scratch_base = thread_scratch_slices(att_scratch_, need, static_cast<size_t>(pool.n_threads()), &stride);
  const auto* k_rows = reinterpret_cast<const uint8_t*>(k16_.data());
  const auto* v_rows = reinterpret_cast<const uint8_t*>(v16_.data());
  const int64_t n_items = n_tiles * n_kv;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    uint8_t* scratch = scratch_base + stride * static_cast<size_t>(thread_idx);
    for (;;) {
      const int64_t item = next.fetch_add(1, std::memory_order_relaxed);
      if (item >= n_items) break;
      const int64_t kvh = item / n_tiles, t = item % n_tiles * tok_tile, nt = std::min(tok_tile, n - t);
      const int64_t off = t * q_dim + kvh * group * hd;
      attend_tokens(layout, batch, q + off, q_dim, k_rows, v_rows, kvh, group, nt, n, scale, att + off, q_dim, scratch);
    }
  });
}

void VisionEncoder::ffn(const VisionLayerWeights& L, const float* xb, int64_t n, float* out, ThreadPool& pool) {
  const int64_t F = config_.n_ff, E = config_.n_embd;
  const VisionFfnAct act = config_.ffn_act;
  const bool gated = L.gate.row_bytes != 0;
  const int64_t chunk = std::min(n, kFfnChunk);
  grow(ffn_a_, static_cast<size_t>(chunk * F));
  if (gated) grow(ffn_b_, static_cast<size_t>(chunk * F));
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t m = std::min(chunk, n - t0);
    const float* x = xb + t0 * E;
    // build_ffn: up first, then the gate, then the activation (gated: act(gate) * up).
    linear(L.up, x, m, ffn_a_.data(), &L.up_b, gated ? &L.clamp_up : nullptr, pool);
    if (gated) {
      linear(L.gate, x, m, ffn_b_.data(), &L.gate_b, &L.clamp_gate, pool);
      pool.parallel_for(m, 4, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          float* g = ffn_b_.data() + t * F;
          float* u = ffn_a_.data() + t * F;
          switch (act) {
            case VisionFfnAct::kGelu: geglu(g, u, u, F); break;
            case VisionFfnAct::kSilu: silu_mul(g, u, u, F); break;
            case VisionFfnAct::kGeluQuick: geglu_quick(g, u, u, F); break;
          }
        }
      });
    } else {
      pool.parallel_for(m, 4, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          float* u = ffn_a_.data() + t * F;
          switch (act) {
            case VisionFfnAct::kGelu: gelu(u, u, F); break;
            case VisionFfnAct::kSilu: silu_row(u, u, F); break;
            case VisionFfnAct::kGeluQuick: gelu_quick(u, u, F); break;
          }
        }
      });
    }
    linear(L.down, ffn_a_.data(), m, out + t0 * E, &L.down_b, gated ? &L.clamp_down : nullptr, pool);
  }
}

Result<EncodedImage> VisionEncoder::encode(const PreprocessedImage& image, ThreadPool& pool) {
  const VisionConfig& c = config_;
  const int64_t align = c.patch_size * c.merge;
  if (image.width < align || image.height < align || image.width % align != 0 || image.height % align != 0 ||
      image.planar.size() != static_cast<size_t>(3 * image.width * image.height)) {
    return make_error("the encoder takes images whose sides are positive multiples of %lld, not %lldx%lld",
                      static_cast<long long>(align), static_cast<long long>(image.width),
                      static_cast<long long>(image.height));
  }
  switch (c.type) {
    case ProjectorType::kGemma4V: return encode_gemma4v(image, pool);
    case ProjectorType::kQwen3VLMerger: return encode_qwen3vl(image, pool);
    case ProjectorType::kGemma4A: break;
  }
  return make_error("unknown projector type");
}

}  // namespace sniper
