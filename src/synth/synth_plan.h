// SPDX-License-Identifier: MIT
// Internal to synth/: the planned tensor table of a synthetic model (name, type, shape and how
// to fill it) and the per-architecture planners. synth_model.cpp owns the llama-style stacks
// (llama, qwen2, qwen3, qwen3moe) and the writer; synth_hybrid.cpp the Qwen3.5 / Qwen3-Next
// hybrids (qwen35, qwen35moe, qwen3next); synth_gemma4.cpp gemma4. A planner writes its
// architecture's metadata keys (as llama.cpp's converter names them) and lists the tensors in
// the order of a llama-quantize output file (sorted by layer, then by name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/writer.h"
#include "synth/synth_blocks.h"
#include "synth/synth_mix.h"
#include "synth/synth_model.h"

namespace sniper {

enum class SynthInit {
  kWeight,         // normal(0, std), or direct quantized blocks with that std
  kNorm,           // a * (1 + 0.1 * normal)
  kUniform,        // uniform(a, b)
  kNegLogUniform,  // -exp(uniform(log a, log b)): a delta-net ssm_a (-A, decay exp(g) in (0, 1))
  kRopeFreqs,      // 1.0 for the first a entries, then 1e30 (pairs that do not rotate)
};

struct PlannedTensor {
  SynthTensor t;
  SynthInit init = SynthInit::kWeight;
  float std = kSynthWeightStd;  // kWeight
  float a = 1.0f, b = 0.0f;     // kNorm scale; kUniform / kNegLogUniform range; kRopeFreqs count
};

// Collects planned tensors; the helpers compute nbytes from type and shape.
class SynthPlanBuilder {
 public:
  SynthPlanBuilder(const SynthSpec& spec, const SynthTypePlan& types) : spec_(spec), types_(types) {}

  // A quantizable matrix: its type from the mix rule for (matrix, pos) and the row length ne[0].
  void matrix(const std::string& name, SynthMatrix kind, const SynthTensorPos& pos, std::vector<int64_t> ne, float std,
              int64_t n_gqa);
  // A tensor llama.cpp keeps in f32 (norms, 1-D tensors, routers, conv kernels, ...).
  void f32(const std::string& name, std::vector<int64_t> ne, SynthInit init, float a = 1.0f, float b = 0.0f,
           float std = kSynthWeightStd);
  void norm(const std::string& name, int64_t n, float scale = 1.0f) { f32(name, {n}, SynthInit::kNorm, scale); }

  // Sorts by (layer, name) as llama.cpp's model loader orders tensors, which a quantized file
  // keeps; non-layer tensors come first.
  std::vector<PlannedTensor> take_sorted();

 private:
  const SynthSpec& spec_;
  const SynthTypePlan& types_;
  std::vector<PlannedTensor> plan_;
};

// Residual-scaled std for matrices that write into the residual stream (see synth_model.cpp).
float synth_residual_std(int64_t n_layers);

// Writes tokenizer.* (synthetic, or copied with --vocab-from) and returns the vocabulary size.
[[nodiscard]] Result<int64_t> synth_add_tokenizer(const SynthSpec& spec, GgufWriter& w);

// qwen35 / qwen35moe / qwen3next (synth_hybrid.cpp).
bool synth_is_hybrid_arch(const std::string& arch);
[[nodiscard]] Status validate_hybrid_spec(const SynthSpec& spec);
void add_hybrid_metadata(const SynthSpec& spec, GgufWriter& w);
std::vector<PlannedTensor> plan_hybrid(const SynthSpec& spec, const SynthTypePlan& types, int64_t vocab);

// gemma4 (synth_gemma4.cpp).
[[nodiscard]] Status validate_gemma4_spec(const SynthSpec& spec);
void add_gemma4_metadata(const SynthSpec& spec, GgufWriter& w);
std::vector<PlannedTensor> plan_gemma4(const SynthSpec& spec, const SynthTypePlan& types, int64_t vocab);

}  // namespace sniper
