// SPDX-License-Identifier: MIT
// Where a read-only block format (the ones without a reference quantizer: IQ1_*, IQ2_*, IQ3_XXS,
// IQ3_S, TQ1_0, TQ2_0, and the repacked layouts of iq_repack.h) keeps its fp16 super-block scale, so synthetic data and
// tests can write random-but-valid blocks: every bit pattern of the other fields is a legal block (indices are masked
// to their tables), so random bytes plus a finite scale make a valid block.
#pragma once

#include <cstdint>

#include "base/fp16.h"
#include "gguf/format.h"

namespace sniper {

// True for the types set_block_scale handles.
bool has_settable_block_scale(GgmlType type);

// Sets the super-block scale of the block at `block` to d (IQ1_M: the top nibbles of its four
// scale words; the other bits are kept). CHECKs has_settable_block_scale(type).
void set_block_scale(GgmlType type, uint8_t* block, fp16_t d);

}  // namespace sniper
