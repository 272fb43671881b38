// SPDX-License-Identifier: MIT
// Split GGUF models, as llama.cpp's gguf-split writes them: files named
// "<prefix>-00001-of-0000N.gguf" ... "<prefix>-0000N-of-0000N.gguf", each a GGUF file with the keys
// split.no (u16, 0-based), split.count (u16) and split.tensors.count (i32, the model's total);
// the first part carries the model's metadata, every part some of the tensors.
// gguf_open_model presents such a set as one GgufFile: part 1's metadata, the union of the tensor
// tables, and each tensor's file_offset encoding its part (base/split_offset.h); `parts` lists
// the files. Given a plain file it is gguf_open.
// Errors name the file and the problem: a missing part, a part whose split.no / split.count does
// not match its name, differing split.tensors.count, a tensor count that does not add up, a
// tensor name in two parts.
#pragma once

#include <string>

#include "base/result.h"
#include "gguf/reader.h"

namespace sniper {

// Opens a model given any of its parts (or a plain file). Thread-safe.
[[nodiscard]] Result<GgufFile> gguf_open_model(const std::string& path);

// "<prefix>-%05d-of-%05d.gguf" for 1-based `index`.
std::string gguf_split_path(const std::string& prefix, int index, int count);

}  // namespace sniper
