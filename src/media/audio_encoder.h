// SPDX-License-Identifier: MIT
// AudioEncoder: the gemma4a audio tower, from one chunk's log-mel spectrogram (media/audio_mel.h)
// to the embeddings the language model reads in place of the audio's placeholder tokens. The
// computation follows llama.cpp's clip graph op by op (tools/mtmd/models/gemma4a.cpp and its
// inputs in clip.cpp):
//   * SSCP: two conv2d 3x3, stride 2, padding 1 over (time, mel) (ggml_conv_2d: im2col and the
//     kernel rounded to f16, one gemm per block of output positions), + the bias as ggml
//     broadcasts it (along the mel axis), LayerNorm over the channels (ggml_norm, * weight),
//     ReLU; flattened channel-fastest per time step; the input projection;
//   * conformer layers: x += 0.5 * rms(down(silu(up(rms(x))))); chunked local self-attention
//     (each token sees itself and the 11 before it, as mtmd's blocked mask) with q scaled by
//     1/sqrt(d)/ln 2 * per_dim_scale, k by ln(1+e)/ln 2 * per_dim_k_scale, the content score plus
//     q . (k_rel x sinusoid of the distance) (Transformer-XL's relative term, the blocked shift
//     resolved to distances), softcap 50, softmax, the output projection and its post norm; the
//     conv module (rms, pw1, GLU, causal depthwise conv of 5 taps + bias, rms, SiLU, pw2); the
//     second half-step FFN; the layer's output RMS norm;
//   * the output projection, RMS norm * soft_emb_norm, and the input projection into the LM.
// Every linear goes through kernels/matmul.h (activations in the weight's vec_dot_type) with
// Gemma 4's clamps; norms are ggml's; token rows are split over the ThreadPool.
// Model code only: no intrinsics, no file descriptors. Thread-compatible: one encode() at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "media/audio_mel.h"
#include "media/projector.h"

namespace sniper {

struct EncodedAudio {
  int64_t n_tokens = 0;
  int64_t dim = 0;          // width of each embedding (the language model's)
  std::vector<float> embd;  // [n_tokens][dim]
};

class AudioEncoder {
 public:
  AudioEncoder(const AudioConfig& config, const AudioWeights& weights);

  // Encodes one spectrogram chunk (config.n_mel rows). Errors: a spectrogram of other rows, or
  // empty.
  Result<EncodedAudio> encode(const MelSpectrogram& mel, ThreadPool& pool);

  const AudioConfig& config() const { return config_; }
  int64_t out_dim() const { return weights_.mm_proj.ne[1]; }
  // Bytes of scratch this instance holds now (it grows with the longest chunk encoded).
  size_t scratch_bytes() const;
  // Upper bound of the scratch for a chunk of n_frames frames with conv channels c0, c1 and
  // output widths p (the output projection's) and out (the language model's).
  static size_t estimate_scratch_bytes(const AudioConfig& config, int64_t n_frames, int64_t c0, int64_t c1, int64_t p,
                                       int64_t out);

 private:
  void linear(const QTensor& w, const float* x, int64_t n_tok, float* y, const QTensor* bias, const ClampBounds* clamp,
              ThreadPool& pool);
  // One SSCP stage: in [T][F][cin] -> out [T'][F'][cout] (conv, bias, channel LayerNorm, ReLU).
  void conv_stage(int stage, const float* in, int64_t T, int64_t F, int64_t cin, float* out, ThreadPool& pool);
  // x [n][E] += 0.5 * half-step FFN of x.
  void half_ffn(const QTensor& norm, const QTensor& up, const QTensor& down, const QTensor& post, const ClampBounds& cu,
                const ClampBounds& cd, float* x, int64_t n, ThreadPool& pool);
  void attention(const AudioLayerWeights& L, float* x, int64_t n, ThreadPool& pool);
  void conv_module(const AudioLayerWeights& L, float* x, int64_t n, ThreadPool& pool);

  const AudioConfig& config_;
  const AudioWeights& weights_;
  ActBuffer act_, act_kernel_;
  std::vector<uint16_t> cols_;  // an im2col block [positions][9 cin] f16
  std::vector<float> a_, b_, conv_y_, xb_, q_, k_, v_, att_, tmp_, ffn_, clamped_, pos_, prel_;
};

}  // namespace sniper
