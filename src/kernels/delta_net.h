// SPDX-License-Identifier: MIT
// Gated delta-net recurrence (the linear-attention mixer of Qwen3.5 / Qwen3-Next), token by token
// in f32 exactly as the reference engine's fused CPU op (ggml_gated_delta_net) computes it.
//
// Per value head j and token t, with d = head dim, q and k the (L2-normalised) query and key of
// j's key head, v_j the value, g the log-decay and beta the write strength:
//   S = exp(g) * S                         (libm expf, one multiply per element)
//   u[c] = (v[c] - sum_r S[r][c] * k[r]) * beta
//   S[r][c] = S[r][c] + k[r] * u[c]        (one fused multiply-add per element)
//   o[c] = (sum_r S[r][c] * q[r]) * (1 / sqrtf(d))
// The scale is applied to the output after the sum (not to q), and every sum over r is
// ggml_vec_dot_f32's order (kernels/ggml_math.h: 4 x 16-lane accumulators, then a tree).
//
// State layout (ours, fixed): a head's state is d x d floats stored transposed, one row per value
// channel c: state[c * d + r] = S[r][c], so every sum above runs along a contiguous row. A
// sequence's state for n_v_heads heads is [n_v_heads][d][d] (head j at state + j * d * d). The
// state starts at zero for a new sequence; the functions update it in place.
//
// A prefill over n tokens gives the same bits as n single-token calls. Threads may run disjoint
// head ranges of one call concurrently (each head touches only its own state and outputs).
#pragma once

#include <cstdint>

#include "base/cpu_features.h"

namespace sniper {

// Which key head value head j reads: tiled kh = j % n_k_heads (qwen35, qwen35moe: the converter
// reorders value heads), grouped kh = j / (n_v_heads / n_k_heads) (qwen3next).
enum class KeyHeadMap { kTiled, kGrouped };

// One sequence chunk of the recurrence over n_tokens tokens. Token t's vectors:
//   q + t * q_stride + kh * d, k + t * k_stride + kh * d     [n_k_heads * d] per token
//   v + t * v_stride + j * d                                  [n_v_heads * d] per token
//   g[t * gb_stride + j], beta[t * gb_stride + j]             [n_v_heads] per token
//   out + t * out_stride + j * d                              [n_v_heads * d] per token (written)
// (The conv output rows q | k | v of the model give q_stride = k_stride = v_stride = channels.)
// out must not overlap the inputs or the state.
struct DeltaNetArgs {
  int64_t head_dim = 0;   // d
  int64_t n_k_heads = 0;  // key heads; n_v_heads % n_k_heads == 0
  int64_t n_v_heads = 0;  // value heads (and states)
  KeyHeadMap key_map = KeyHeadMap::kTiled;
  int64_t n_tokens = 0;
  const float* q = nullptr;
  int64_t q_stride = 0;
  const float* k = nullptr;
  int64_t k_stride = 0;
  const float* v = nullptr;
  int64_t v_stride = 0;
  const float* g = nullptr;     // log-decay, <= 0 for a decaying state
  const float* beta = nullptr;  // in (0, 1) after sigmoid
  int64_t gb_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  float* state = nullptr;  // [n_v_heads][d][d], transposed per head (see above); in/out
};

// Runs the recurrence of value heads [head_begin, head_end) over all a.n_tokens tokens, updating
// their states and writing their outputs. CHECKs the shape (d > 0, head counts divide, range within
// [0, n_v_heads]). Dispatches (once, at first use) to the selected ISA tier; every tier gives the
// bits of delta_net_ref. Thread-compatible; disjoint head ranges may run concurrently.
void delta_net(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end);

// The key head that value head j reads.
int64_t delta_net_key_head(const DeltaNetArgs& a, int64_t j);

// The scalar twin that defines the result.
void delta_net_ref(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end);

using DeltaNetFn = void (*)(const DeltaNetArgs& a, int64_t head_begin, int64_t head_end);
// The kernel of `tier` (ref where the tier has none). CHECKs the host can run the tier.
DeltaNetFn find_delta_net(IsaTier tier);

}  // namespace sniper
