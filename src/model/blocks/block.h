// SPDX-License-Identifier: MIT
// Layers as blocks. A layer of the forward pass (model/layer_stack.h) is
//   xb = rms_norm(x) * attn_norm;  x += Mixer(xb)
//   xb = rms_norm(x) * ffn_norm;   x += Ffn(xb)
// where the mixer and the FFN are blocks chosen per layer by the layer plan (ModelConfig::layers,
// MixerKind / FfnKind) and parameterised by it: blocks are named by mechanism (attention,
// delta-net, dense MLP, routed experts), never by model, and what differs between architectures
// is a LayerPlan field. A block reads xb ([n_tok, dim], already normed), writes its output to
// `out` ([n_tok, dim]; the layer step adds it to the residual) and owns its scratch. A mixer also
// owns its layer's slice of the SequenceState (KV rows, recurrent state); an FFN keeps nothing
// between tokens. Blocks call only kernels (kernels/*.h), never intrinsics or file descriptors.
// One block instance serves every layer of its kind (weights come per call), so its scratch is
// sized for the widest such layer.
//
// A block also describes itself: a table of the tensors it reads (model/tensor_table.h), from
// which binding, streaming roles and the memory plan follow, and a table of its scratch buffers
// (model/blocks/scratch_table.h), from which its allocation and the plan's bound follow.
// docs/model-layer.md says how to add a mechanism to a block, a block, a tensor or an
// architecture.
#pragma once

#include <cstdint>

#include "base/check.h"
#include "base/result.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kv/sequence_state.h"
#include "model/config.h"
#include "model/model_weights.h"
#include "quant/quant.h"

namespace sniper {

// Activations quantized once per vec_dot_type and reused by every weight of that type that
// reads the same input (q/k/v, gate/up). Slots are invalidated by reset().
class ActCache {
 public:
  ActCache(ActBuffer* bufs, int n_bufs) : bufs_(bufs), n_bufs_(n_bufs) {}
  const QuantizedActs& get(GgmlType weight_type, const float* x, int64_t n, int64_t n_tok, ThreadPool& pool) {
    const GgmlType t = vec_dot_type(weight_type);
    for (int i = 0; i < used_; ++i) {
      if (acts_[i].type == t) return acts_[i];
    }
    CHECK(used_ < n_bufs_, "ActCache: more than %d activation types for one input", n_bufs_);
    acts_[used_] = quantize_acts(t, x, n, n_tok, n, bufs_[used_], pool);
    return acts_[used_++];
  }
  void reset() { used_ = 0; }

 private:
  ActBuffer* bufs_;
  int n_bufs_;
  int used_ = 0;
  QuantizedActs acts_[3];
};

// The activation buffers every block shares (owned by the Transformer; one forward at a time).
struct BlockBuffers {
  ActBuffer act;          // single-use activations (matmul())
  ActBuffer act_bufs[3];  // activations reused across weights (ActCache)
};

// What a forward chunk may carry besides its token ids: media input (engine/media_prompt.h).
// Positions: token i of a chunk occupies KV cell pos0 + i; its rope position is pos0 + i +
// rope_offset in every component, or, for M-RoPE models, rope_pos's (t, h, w, e) when given (an
// image's 2D positions, as llama.cpp's mtmd assigns them). Defaults: a plain text chunk.
struct ChunkInput {
  const float* embd = nullptr;        // [n_tok, dim] rows that replace the token embeddings (no embedding
                                      // scale, as llama.cpp's embedding batches); the tokens given are 0
                                      // (gemma4's per-layer inputs then read token 0's rows, as llama.cpp)
  const int32_t* rope_pos = nullptr;  // [4][n_tok] rope positions t, h, w, e (M-RoPE models only)
  int64_t rope_offset = 0;            // rope position - KV cell for tokens without rope_pos (<= 0)
  bool non_causal = false;            // the chunk's tokens attend to each other both ways (one forward, never
                                      // split: an image for gemma4v)
};

// One call's inputs and outputs, shared by the blocks of every layer.
struct BlockIo {
  int64_t n_tok = 0;          // tokens of the chunk, 1 <= n_tok <= max_batch
  int64_t pos0 = 0;           // KV cell (position) of the chunk's first token
  bool non_causal = false;    // ChunkInput::non_causal
  const float* x = nullptr;   // [n_tok, dim] residual stream entering the block (read only)
  const float* xb = nullptr;  // [n_tok, dim] normed input of the block
  float* out = nullptr;       // [n_tok, dim] the block's output
  BlockBuffers* buffers = nullptr;
  ThreadPool* pool = nullptr;
};

class MixerBlock {
 public:
  virtual ~MixerBlock() = default;
  // Called once per forward, before the first layer (e.g. rope angles for the chunk's positions;
  // `in` as ChunkInput says).
  virtual void begin_chunk(int64_t pos0, int64_t n_tok, const ChunkInput& in) = 0;
  // Mixes the chunk's tokens with the layer's sequence state (which it reads and updates) into
  // io.out. Errors only from weight sources.
  [[nodiscard]] virtual Status forward(int64_t layer_idx, const LayerWeights& lw, SequenceState& state,
                                       const BlockIo& io) = 0;
  // Bytes of scratch this block holds.
  virtual size_t scratch_bytes() const = 0;
};

class FfnBlock {
 public:
  virtual ~FfnBlock() = default;
  // io.out = FFN(io.xb). Errors only from weight sources (streamed experts).
  [[nodiscard]] virtual Status forward(int64_t layer_idx, const LayerWeights& lw, const BlockIo& io) = 0;
  // Called after the layer's output joined the residual (io.x is the new residual): a block that
  // streams its weights may start reading a later layer's now.
  virtual void after_layer(int64_t layer_idx, const BlockIo& io) = 0;
  virtual size_t scratch_bytes() const = 0;
};

inline const float* f32_data(const QTensor& t) { return reinterpret_cast<const float*>(t.data); }

}  // namespace sniper
