// SPDX-License-Identifier: MIT
// pack_experts: rewrites a MoE GGUF so that each expert's gate, up and down matrices are
// adjacent and 4 KiB aligned (tensors blk.L.ffn_{gate,up,down}.E.weight, expert-major), so the
// expert cache fetches an expert with one read instead of three. Everything else is copied
// unchanged (metadata, non-expert tensors, their order); `sniper.packed_experts` = true is added.
// The output is a valid GGUF of the same architecture for Sniper; llama.cpp does not load
// per-expert tensors for qwen3moe (it expects the merged ffn_*_exps tensors).
#pragma once

#include <functional>
#include <string>

#include "base/result.h"

namespace sniper {

// progress(done_bytes, total_bytes) may be null. Writes atomically (temp file + rename).
[[nodiscard]] Status pack_experts(const std::string& in_path, const std::string& out_path,
                                  const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace sniper
