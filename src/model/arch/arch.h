// SPDX-License-Identifier: MIT
// The architecture registry. An architecture is an ArchSpec: its GGUF name and the switches
// that distinguish it inside the shared transformer forward (rope style, q/k norm, biases,
// MoE routing). Adding an architecture = one file in model/arch/ defining a spec, plus one
// line in registry.cpp.
#pragma once

#include <span>
#include <string_view>

#include "base/result.h"
#include "gguf/reader.h"
#include "model/config.h"

namespace sniper {

struct ArchSpec {
  const char* name;             // general.architecture value
  RopeStyle rope_style;
  bool qkv_bias;                // expects attn_{q,k,v}.bias
  bool qk_norm;                 // expects attn_{q,k}_norm.weight
  bool allow_moe;               // may carry ffn_*_exps tensors
  bool requires_moe;            // must carry them (qwen3moe)
  // Architecture-specific adjustments after the common keys are read (may be null).
  Status (*finish)(const GgufFile& file, ModelConfig& config);
};

extern const ArchSpec kLlamaArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;
extern const ArchSpec kQwen3MoeArch;
extern const ArchSpec kGemma4Arch;

// All registered architectures.
std::span<const ArchSpec* const> registered_archs();

// Returns the spec for an architecture name, or nullptr.
const ArchSpec* find_arch(std::string_view name);

}  // namespace sniper
