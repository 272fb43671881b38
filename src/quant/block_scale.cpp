// SPDX-License-Identifier: MIT
// Scale field positions of the read-only block formats (see block_scale.h and the structs in
// iq1.h, iq2.h, iq3.h, tq.h).
#include "quant/block_scale.h"

#include <cstddef>
#include <cstring>

#include "base/check.h"
#include "quant/iq1.h"
#include "quant/tq.h"

namespace sniper {

bool has_settable_block_scale(GgmlType type) {
  switch (type) {
    case GgmlType::kIQ2_XXS:
    case GgmlType::kIQ2_XS:
    case GgmlType::kIQ2_S:
    case GgmlType::kIQ3_XXS:
    case GgmlType::kIQ3_S:
    case GgmlType::kIQ1_S:
    case GgmlType::kIQ1_M:
    case GgmlType::kTQ1_0:
    case GgmlType::kTQ2_0:
    case GgmlType::kIQ2_RP:
    case GgmlType::kIQ3_XXS_RP:
    case GgmlType::kIQ3_S_RP:
    case GgmlType::kIQ1_S_RP:
    case GgmlType::kIQ1_M_RP: return true;
    default: return false;
  }
}

void set_block_scale(GgmlType type, uint8_t* block, fp16_t d) {
  CHECK(has_settable_block_scale(type), "set_block_scale: %s has no settable scale", get_type_info(type).name);
  switch (type) {
    case GgmlType::kIQ1_M: {
      uint16_t sc[4];
      std::memcpy(sc, block + offsetof(BlockIQ1_M, scales), 8);
      for (int k = 0; k < 4; ++k) sc[k] = static_cast<uint16_t>((sc[k] & 0x0fff) | (((d >> (4 * k)) & 0xf) << 12));
      std::memcpy(block + offsetof(BlockIQ1_M, scales), sc, 8);
      return;
    }
    case GgmlType::kTQ1_0: std::memcpy(block + offsetof(BlockTQ1_0, d), &d, 2); return;
    case GgmlType::kTQ2_0: std::memcpy(block + offsetof(BlockTQ2_0, d), &d, 2); return;
    default: std::memcpy(block, &d, 2); return;  // the IQ2_*, IQ3_*, IQ1_S and repacked blocks start with d
  }
}

}  // namespace sniper
