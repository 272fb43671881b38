// SPDX-License-Identifier: MIT
// VisionEncoder: a projector's ViT and projection from the preprocessed image
// (media/image_preprocess.h) to the embeddings the language model reads in place of the image's
// placeholder tokens. The computation follows llama.cpp's clip graphs op by op with the same
// arithmetic (tools/mtmd/models/gemma4v.cpp, qwen3vl.cpp; clip.cpp build_vit, build_attn with
// flash attention, which mtmd picks on the CPU):
//   * patch embedding: the image cut into P x P patches (im2col, each value rounded to f16, as
//     ggml_conv_2d's im2col does), times the f16 conv kernel as one gemm whose rows are the
//     patches (ggml's operand order);
//   * linears through kernels/matmul.h (activations in the weight's vec_dot_type); norms as
//     ggml's (rms_norm, layer_norm); 2D rope per projector; GELU through the f16 table;
//   * attention: flash attention over f16 K and V, every patch attending to every patch
//     (kernels/flash_attention.h with AttentionBatch::causal false), split over the ThreadPool
//     by (token tile, kv head).
// Weights are QTensors bound by media/projector.h; a layer's matrices may stream (a
// VisionLayerSource reads them per layer). Model code only: no intrinsics, no file descriptors.
// Thread-compatible: one encode() at a time; it uses the pool inside.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "media/image_preprocess.h"
#include "media/projector.h"

namespace sniper {

// Supplies a ViT layer's weights with every matrix's bytes present (streamed ones read for the
// call). The views stay valid until the next acquire().
class VisionLayerSource {
 public:
  virtual ~VisionLayerSource() = default;
  [[nodiscard]] virtual Result<const VisionLayerWeights*> acquire(int64_t layer_idx) = 0;
};

struct EncodedImage {
  TokenGrid grid;           // nx * ny tokens in row-major order
  int64_t dim = 0;          // width of each embedding (the language model's)
  std::vector<float> embd;  // [grid.n_tokens()][dim]
};

class VisionEncoder {
 public:
  // `layers` supplies streamed layers (null: every tensor of `weights` is resident).
  VisionEncoder(const VisionConfig& config, const VisionWeights& weights, VisionLayerSource* layers = nullptr);

  // Encodes one image preprocessed with config.preprocess. Errors: an image whose patch grid
  // does not fit the projector (gemma4v: a side over its position table), or a failed read of a
  // streamed layer.
  Result<EncodedImage> encode(const PreprocessedImage& image, ThreadPool& pool);

  const VisionConfig& config() const { return config_; }
  // Width of the embeddings this encoder produces.
  int64_t out_dim() const;
  // Bytes of scratch this instance holds now (it grows with the largest image encoded).
  size_t scratch_bytes() const;
  // Upper bound of the scratch for the largest image the config allows (its preprocessing's
  // largest output, planned_preprocessed_pixels), with a pool of n_threads: what memory planning
  // counts.
  static size_t estimate_scratch_bytes(const VisionConfig& config, int n_threads);

 private:
  // Where a layer's weights come from (resident or the source).
  Result<const VisionLayerWeights*> layer(int64_t layer_idx);
  // y [n_tok][w.n_rows()] = x [n_tok][w.ne[0]] . w^T, then + bias (if any); Gemma 4's clamps of
  // a copy of x and of y when `clamp` is non-null.
  void linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias, const ClampBounds* clamp,
              ThreadPool& pool);
  // out [n_patches][E] = the image's patches times `kernel` (ggml_conv_2d), patches in row-major order.
  void patch_embed(const float* planar, int64_t width, int64_t height, const QTensor& kernel, float* out,
                   ThreadPool& pool);
  // att [n][q_dim] = attention of q [n][q_dim] over k, v [n][kv_dim] (every token sees every token).
  void attention(const float* q, const float* k, const float* v, int64_t n, float scale, float* att, ThreadPool& pool);
  // The FFN of one layer over n tokens of xb into out, in chunks of tokens.
  void ffn(const VisionLayerWeights& L, const float* xb, int64_t n, float* out, ThreadPool& pool);

  Result<EncodedImage> encode_gemma4v(const PreprocessedImage& image, ThreadPool& pool);
  Result<EncodedImage> encode_qwen3vl(const PreprocessedImage& image, ThreadPool& pool);

  const VisionConfig& config_;
  const VisionWeights& weights_;
  VisionLayerSource* layers_;
  ActBuffer act_;
  ActBuffer act_kernel_;
  std::vector<float> x_, xb_, q_, k_, v_, att_, tmp_, ffn_a_, ffn_b_, clamped_;
  std::vector<uint16_t> patches_;    // [n_patches][3 P^2] f16 (im2col)
  std::vector<uint16_t> k16_, v16_;  // [kv_heads][n][head_dim] f16
  std::vector<uint8_t> att_scratch_;
};

}  // namespace sniper
