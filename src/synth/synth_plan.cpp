// SPDX-License-Identifier: MIT
// SynthPlanBuilder: type, size and order of the planned tensors of the hybrid and gemma4 stacks.
#include "synth/synth_plan.h"

#include <algorithm>
#include <cstdio>

#include "quant/quant.h"

namespace sniper {

namespace {

uint64_t tensor_bytes(GgmlType type, const std::vector<int64_t>& ne) {
  uint64_t nbytes = row_bytes(type, ne[0]);
  for (size_t d = 1; d < ne.size(); ++d) nbytes *= static_cast<uint64_t>(ne[d]);
  return nbytes;
}

// llama.cpp's weight_name_comparer: the block number of "blk.N." (-1 for the others), then the name.
int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) layer = -1;
  return layer;
}

}  // namespace

void SynthPlanBuilder::matrix(const std::string& name, SynthMatrix kind, const SynthTensorPos& pos,
                              std::vector<int64_t> ne, float std, int64_t n_gqa) {
  const GgmlType type = synth_tensor_type(types_, kind, pos, spec_.n_experts, ne[0], n_gqa);
  const uint64_t nbytes = tensor_bytes(type, ne);
  plan_.push_back({SynthTensor{name, type, std::move(ne), nbytes}, SynthInit::kWeight, std});
}

void SynthPlanBuilder::f32(const std::string& name, std::vector<int64_t> ne, SynthInit init, float a, float b,
                           float std) {
  const uint64_t nbytes = tensor_bytes(GgmlType::kF32, ne);
  plan_.push_back({SynthTensor{name, GgmlType::kF32, std::move(ne), nbytes}, init, std, a, b});
}

std::vector<PlannedTensor> SynthPlanBuilder::take_sorted() {
  std::stable_sort(plan_.begin(), plan_.end(), [](const PlannedTensor& x, const PlannedTensor& y) {
    const int lx = layer_of(x.t.name), ly = layer_of(y.t.name);
    if (lx != ly) return lx < ly;
    return x.t.name < y.t.name;
  });
  return std::move(plan_);
}

}  // namespace sniper
