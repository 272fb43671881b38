// SPDX-License-Identifier: MIT
// Naming rules for models on a Hugging Face-style hub, as llama.cpp's `-hf REPO[:QUANT]` reads
// them: parsing "owner/name[:TAG|:FILE]", the quant tag and split position in a file name
// ("Model-UD-IQ2_M-00002-of-00003.gguf" -> tag UD-IQ2_M... see quant_tag()), grouping split
// parts into one choice, and picking a choice for a tag or, with no tag, for a memory budget.
// Pure functions over file lists (no I/O), so every rule has a unit test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper::hub {

// A file of a hub repository as the tree API lists it.
struct HubFile {
  std::string path;    // relative to the repository root, '/'-separated
  uint64_t size = 0;   // bytes
  std::string sha256;  // LFS oid (64 lowercase hex digits), "" when the file is not in LFS
};

// "owner/name", "owner/name:Q4_K_M" or "owner/name:sub/dir/file.gguf".
struct RepoRef {
  std::string repo;  // "owner/name"
  std::string tag;   // quant tag as typed (case kept), "" when none
  std::string file;  // exact file path when the part after ':' ends in ".gguf", else ""
  std::string display() const;
};

// Errors name the text and the rule: exactly one '/', owner and name in [A-Za-z0-9._-], no
// ".." anywhere, a tag in [A-Za-z0-9._-].
[[nodiscard]] Result<RepoRef> parse_repo_ref(std::string_view text);

// Position of a file in a split set ("-00001-of-00003.gguf"); index = count = 1 when unsplit.
struct SplitInfo {
  std::string prefix;  // path without ".gguf" and the split suffix
  int index = 1;       // 1-based
  int count = 1;
};
SplitInfo split_info(std::string_view path);
// The split part path for index i of a set whose first part is `first` (same prefix and count).
std::string split_part_path(const std::string& prefix, int index, int count);

// The quant tag of a GGUF file name, upper case: the last [-.]-separated run of [A-Za-z0-9_]
// before ".gguf" and the split suffix, extended over a leading "UD-" ("Qwen3-30B-UD-IQ2_M.gguf"
// -> "UD-IQ2_M", "model.Q4_K_M.gguf" -> "Q4_K_M"). "" when the name has none.
std::string quant_tag(std::string_view path);

// True for model weights: ".gguf" files that are not projectors, imatrix or draft heads (the
// names llama.cpp skips: mmproj, imatrix, mtp-, eagle3-, dflash-, dspark-).
bool is_model_file(std::string_view path);

// One downloadable model: a single file or every part of a split set, in part order.
struct ModelChoice {
  std::vector<HubFile> files;
  std::string tag;  // quant_tag of the first file
  // The sum of the files' sizes, UINT64_MAX when it does not fit (sizes come from the hub).
  uint64_t total_bytes() const;
  const std::string& first_path() const { return files.front().path; }
};

// The repository's model choices in listing order of their first file. A split set with a
// missing part is left out (it cannot be loaded). Thread-safe.
std::vector<ModelChoice> model_choices(const std::vector<HubFile>& files);

// Distinct tags of `choices`, in order, for error messages ("Q4_K_M, Q8_0, UD-IQ2_M").
std::string list_tags(const std::vector<ModelChoice>& choices);

struct Selection {
  ModelChoice choice;
  std::string reason;  // one line saying why this choice ("tag Q4_K_M", "largest that fits 12.0 GiB")
};

// Picks what `ref` asks for among `files` of the repository:
// - ref.file: that file (and the rest of its split set); an Error lists the model files.
// - ref.tag: the choice whose tag equals it (case-insensitive), else the first whose path holds
//   "<tag>." or "<tag>-" (llama.cpp's match); an Error lists the tags that exist.
// - neither: Q4_K_M when present; else the largest choice whose bytes fit `budget_bytes` (the
//   best quality that runs from RAM); else the smallest one (it will stream from SSD).
// An Error when the repository holds no model file at all.
[[nodiscard]] Result<Selection> select_model(const std::vector<HubFile>& files, const RepoRef& ref,
                                             uint64_t budget_bytes);

// The quantization bits of a GGUF file name as llama.cpp's -hf reads them: the digits at the
// first digit of the name's last [-.]-separated tag ("Q4_K_M" -> 4, "F16" -> 16, "IQ2_M" -> 2),
// 0 when there are none.
int quant_bits(std::string_view path);

// The sibling GGUF of `model_path` whose path holds `keyword` ("mmproj"), picked as llama.cpp's
// find_best_sibling does: only files in the model's directory or one above it on its path; the
// deepest such directory first, then a name holding "-<TAG>." for a given `tag`, then the
// quantization bits closest to the tag's (or the model's when no tag); the listing order breaks
// ties. nullopt when none qualifies.
std::optional<HubFile> find_best_sibling(const std::vector<HubFile>& files, std::string_view model_path,
                                         std::string_view keyword, std::string_view tag = "");

// "12.3 GiB", "512.0 MiB", "812 B".
std::string format_bytes(uint64_t bytes);

}  // namespace sniper::hub
