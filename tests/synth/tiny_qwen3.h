// SPDX-License-Identifier: MIT
// The smallest qwen3 the server and engine suites generate for themselves: 2 layers of width 64,
// 2 query heads sharing 1 KV head of 32, FFN 128, Q8_0, written with 2 threads. Callers add what
// their test needs (a real vocab or chat template, a seed, pooling metadata).
#pragma once

#include "synth/synth_model.h"

namespace sniper::test {

inline SynthSpec tiny_qwen3_spec() {
  SynthSpec spec;
  spec.arch = "qwen3";
  spec.dim = 64;
  spec.n_layers = 2;
  spec.n_heads = 2;
  spec.n_kv_heads = 1;
  spec.head_dim = 32;
  spec.hidden_dim = 128;
  spec.type = "q8_0";
  spec.n_threads = 2;
  return spec;
}

}  // namespace sniper::test
