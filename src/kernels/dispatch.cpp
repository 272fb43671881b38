// SPDX-License-Identifier: MIT
// Builds the KernelSets once (first use): the ref tier's from the scalar entries, then for every
// tier the host can run, lowest first, a copy of the tier below patched by the architecture's
// code for that tier (kernel_registry.h), so entries a tier does not implement fall back to the
// tier below. Lookups afterwards are lock-free reads of immutable sets.
#include <memory>
#include <mutex>

#include "base/check.h"
#include "base/log.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernel_set.h"

namespace sniper {

namespace {

constexpr int kTypeSlots = static_cast<int>(kGgmlTypeSlots);  // GgmlType values are below it
constexpr int kTiers = kMaxIsaLevel + 1;                      // one set per level of the target architecture

struct Sets {
  KernelSet set[kTiers];
};

// The activation quantizers of a set: for each activation type, the quantize_act entry of the
// first weight type (by GgmlType value) that consumes it.
void fill_act_quantizers(KernelSet& s) {
  for (int slot = 0; slot < kTypeSlots; ++slot) s.act_quantizer[slot] = nullptr;
  for (int slot = 0; slot < kTypeSlots; ++slot) {
    if (!s.present[slot]) continue;
    const KernelTable& t = s.weights[slot];
    CHECK(t.dequant_row && t.quantize_act && t.vec_dot && t.gemm, "incomplete kernel table for type %d", slot);
    const int act_slot = static_cast<int>(t.vec_dot_type);
    CHECK(act_slot < kTypeSlots, "activation type %d out of range", act_slot);
    if (s.act_quantizer[act_slot] == nullptr) s.act_quantizer[act_slot] = t.quantize_act;
  }
}

std::unique_ptr<Sets> build_sets() {
  auto sets = std::make_unique<Sets>();
  const CpuFeatures& features = cpu_features();
  for (const IsaTier tier : arch_tiers()) {
    if (!host_runs(tier)) break;
    KernelSet& s = sets->set[tier.level];
    if (tier == IsaTier::kRef) {
      kernels_internal::fill_ref_set(s);
    } else {
      s = sets->set[tier.level - 1];
      s.tier = tier;
      kernels_internal::patch_arch_tier(s.tier, features, s);
    }
    for (int slot = 0; slot < kTypeSlots; ++slot) {
      if (s.present[slot]) s.weights[slot].tier = s.tier;
    }
    CHECK(s.rows.softmax && s.gelu.gelu && s.delta_net && s.layer_norm, "incomplete kernel set at tier %s",
          isa_tier_name(s.tier));
    fill_act_quantizers(s);
  }
  return sets;
}

const Sets& sets() {
  static const std::unique_ptr<Sets> all = build_sets();
  return *all;
}

}  // namespace

const KernelSet* find_kernel_set(IsaTier tier) {
  if (!host_runs(tier)) return nullptr;
  return &sets().set[tier.level];
}

const KernelSet& get_kernel_set(IsaTier tier) {
  const KernelSet* s = find_kernel_set(tier);
  CHECK(s != nullptr, "ISA tier %s is not runnable on this host", isa_tier_name(tier));
  return *s;
}

const KernelTable* find_kernels(GgmlType type, IsaTier tier) {
  const auto slot = static_cast<uint32_t>(type);
  const KernelSet* s = find_kernel_set(tier);
  if (s == nullptr || slot >= kGgmlTypeSlots) return nullptr;
  return s->present[slot] ? &s->weights[slot] : nullptr;
}

const KernelTable& get_kernels(GgmlType type) {
  static std::once_flag logged;
  const IsaTier tier = selected_tier();
  std::call_once(logged, [tier] { LOG_INFO("kernels: using ISA tier %s", isa_tier_name(tier)); });
  const KernelTable* t = find_kernels(type, tier);
  CHECK(t != nullptr, "no kernels for tensor type %u at tier %s", static_cast<unsigned>(type), isa_tier_name(tier));
  return *t;
}

QuantizeActFn find_act_quantizer(GgmlType act_type, IsaTier tier) {
  const auto slot = static_cast<uint32_t>(act_type);
  const KernelSet* s = find_kernel_set(tier);
  if (s == nullptr || slot >= kGgmlTypeSlots) return nullptr;
  return s->act_quantizer[slot];
}

}  // namespace sniper
