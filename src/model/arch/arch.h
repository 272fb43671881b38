// SPDX-License-Identifier: MIT
// The architecture registry. An architecture is an ArchSpec: its GGUF name, the model-wide
// switches of the default layer plan (rope style, q/k norm, biases, MoE) and a finish() that
// reads its own keys and, for models whose layers differ, fills the layer plan with the
// mechanisms each layer uses (ModelConfig::layers, LayerPlan). Adding an architecture built from
// existing mechanisms = one file in model/arch/ defining a spec, plus its line in registry.cpp
// (and the file in src/model/CMakeLists.txt); docs/model-layer.md walks through it.
#pragma once

#include <span>
#include <string_view>

#include "base/result.h"
#include "gguf/reader.h"
#include "model/config.h"

namespace sniper {

struct ArchSpec {
  const char* name;  // general.architecture value
  RopeStyle rope_style;
  bool qkv_bias;      // expects attn_{q,k,v}.bias
  bool qk_norm;       // expects attn_{q,k}_norm.weight
  bool allow_moe;     // may carry ffn_*_exps tensors
  bool requires_moe;  // must carry them (qwen3moe)
  // Architecture-specific adjustments after the common keys are read (may be null).
  Status (*finish)(const GgufFile& file, ModelConfig& config);
};

// The Qwen3.5 / Qwen3-Next hybrid plan (arch/qwen35_family.cpp): reads the ssm.*, interval,
// rope-section and expert keys and fills config.layers. Errors name the key.
struct Qwen35Family {
  bool moe;            // routed + shared experts (else a dense SwiGLU FFN)
  bool grouped_heads;  // delta-net value head j reads key head j / (nv / nk), else j % nk
  bool fused_ba;       // ssm_ba instead of ssm_beta + ssm_alpha
  bool rope_sections;  // rope.dimension_sections (IMRoPE) is required
};
[[nodiscard]] Status finish_qwen35_family(const GgufFile& file, ModelConfig& config, const Qwen35Family& family);

// All registered architectures.
std::span<const ArchSpec* const> registered_archs();

// Returns the spec for an architecture name, or nullptr.
const ArchSpec* find_arch(std::string_view name);

}  // namespace sniper
