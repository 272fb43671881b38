// SPDX-License-Identifier: MIT
// The list of supported architectures (one line each).
#include <cstring>

#include "model/arch/arch.h"

namespace sniper {

namespace {
constexpr const ArchSpec* kArchs[] = {
    &kLlamaArch, &kQwen2Arch, &kQwen3Arch, &kQwen3MoeArch, &kQwen35Arch, &kQwen35MoeArch, &kQwen3NextArch, &kGemma4Arch,
};
}  // namespace

std::span<const ArchSpec* const> registered_archs() { return kArchs; }

const ArchSpec* find_arch(std::string_view name) {
  for (const ArchSpec* spec : kArchs) {
    if (name == spec->name) return spec;
  }
  return nullptr;
}

}  // namespace sniper
