// SPDX-License-Identifier: MIT
// The list of supported architectures (one line each: its spec, defined in model/arch/<name>.cpp).
#include <cstring>

#include "model/arch/arch.h"

namespace sniper {

extern const ArchSpec kLlamaArch;
extern const ArchSpec kQwen2Arch;
extern const ArchSpec kQwen3Arch;
extern const ArchSpec kQwen3MoeArch;
extern const ArchSpec kQwen35Arch;
extern const ArchSpec kQwen35MoeArch;
extern const ArchSpec kQwen3NextArch;
extern const ArchSpec kGemma4Arch;

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
