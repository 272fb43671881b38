// SPDX-License-Identifier: MIT
// Writes a model as a split GGUF set the way llama.cpp's gguf-split --split does: parts
// "<prefix>-00001-of-0000N.gguf" ..., tensors in the source's order, a new part started when
// the next tensor would push the current one's tensor bytes past max_part_bytes (or its count
// past max_part_tensors); every part gets split.no (u16), split.count (u16) and
// split.tensors.count (i32), and only the first carries the model's metadata. Tensor bytes are
// copied from the source file(s); a read error fails the write and removes what was written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"

namespace sniper {

struct SplitLimits {
  uint64_t max_part_bytes = 0;    // 0: no byte limit
  uint64_t max_part_tensors = 0;  // 0: no tensor-count limit
};

// Writes `model` (opened with gguf_open_model, so a split source re-splits) and returns the part
// paths. An Error when neither limit is set, or names the file that failed.
[[nodiscard]] Result<std::vector<std::string>> gguf_write_split(const GgufFile& model, const std::string& out_prefix,
                                                                const SplitLimits& limits);

}  // namespace sniper
