// SPDX-License-Identifier: MIT
// Builds the KernelTables once (first use): for every supported weight type and every tier the
// host can run, start from the ref entries and let each ISA tier up to that tier overwrite the
// entries it implements. Lookups afterwards are lock-free reads of immutable tables.
#include <mutex>

#include "base/check.h"
#include "base/log.h"
#include "kernels/kernel_registry.h"
#include "kernels/kernels.h"

namespace sniper {

namespace {

constexpr int kTypeSlots = static_cast<int>(kGgmlTypeSlots);  // GgmlType values are below it
constexpr int kTiers = 3;

struct Tables {
  KernelTable table[kTiers][kTypeSlots] = {};
  bool present[kTiers][kTypeSlots] = {};
  QuantizeActFn act_quantizer[kTiers][kTypeSlots] = {};
};

Tables build_tables() {
  Tables tabs;
  const int best = static_cast<int>(host_best_tier());
  const CpuFeatures& features = cpu_features();
  for (int slot = 0; slot < kTypeSlots; ++slot) {
    const auto type = static_cast<GgmlType>(slot);
    if (find_memory_type_info(static_cast<uint32_t>(slot)) == nullptr) continue;
    for (int tier = 0; tier <= best; ++tier) {
      KernelTable t{};
      if (!kernels_internal::fill_ref_kernels(type, t)) break;
#if defined(__x86_64__)  // TODO(arm): the per-tier dispatch record replaces this guard #45
      if (tier >= static_cast<int>(IsaTier::kAvx2)) {
        kernels_internal::patch_q32_avx2(t);
        kernels_internal::patch_kquants_avx2(t);
        kernels_internal::patch_float_avx2(t);
        kernels_internal::patch_iquants_avx2(t);
      }
      if (tier >= static_cast<int>(IsaTier::kAvx512)) {
        kernels_internal::patch_q32_avx512(t);
        kernels_internal::patch_kquants_avx512(t);
        kernels_internal::patch_float_avx512(t, features);
        kernels_internal::patch_iquants_avx512(t);
        if (features.avx512vbmi) kernels_internal::patch_iquants_avx512vbmi(t);
      }
#else
      (void)features;
#endif
      t.tier = static_cast<IsaTier>(tier);
      CHECK(t.dequant_row && t.quantize_act && t.vec_dot && t.gemm, "incomplete kernel table for type %d", slot);
      tabs.table[tier][slot] = t;
      tabs.present[tier][slot] = true;
      const int act_slot = static_cast<int>(t.vec_dot_type);
      CHECK(act_slot < kTypeSlots, "activation type %d out of range", act_slot);
      if (tabs.act_quantizer[tier][act_slot] == nullptr) tabs.act_quantizer[tier][act_slot] = t.quantize_act;
    }
  }
  return tabs;
}

const Tables& tables() {
  static const Tables tabs = build_tables();
  return tabs;
}

bool valid(uint32_t slot, IsaTier tier) {
  return slot < kTypeSlots && static_cast<int>(tier) >= 0 && tier <= host_best_tier();
}

}  // namespace

const KernelTable* find_kernels(GgmlType type, IsaTier tier) {
  const auto slot = static_cast<uint32_t>(type);
  if (!valid(slot, tier)) return nullptr;
  const Tables& tabs = tables();
  const int ti = static_cast<int>(tier);
  return tabs.present[ti][slot] ? &tabs.table[ti][slot] : nullptr;
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
  if (!valid(slot, tier)) return nullptr;
  return tables().act_quantizer[static_cast<int>(tier)][slot];
}

}  // namespace sniper
