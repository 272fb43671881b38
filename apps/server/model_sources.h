// SPDX-License-Identifier: MIT
// ModelSource: a model `sniper serve` can load, by name: from `--models DIR` (every *.gguf in
// DIR, named by its file stem; a split model `X-00001-of-0000N.gguf` is listed once, as X, by
// its first part), from `--model NAME=PATH`, or from `-m PATH` (named by the file stem or
// --alias). Names are unique; they are what requests put in "model".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::server {

// serve --alias "*": a model that answers to any name (clients with a fixed model name).
inline constexpr const char* kAnyModelAlias = "*";

struct ModelSource {
  std::string name;
  std::string path;                       // the GGUF file (a split model's first part)
  uint64_t size_bytes = 0;                // on disk, all parts of a split model together
  std::vector<std::string> aliases = {};  // other names requests may use (serve --alias); "*": any name
};

// "X-00001-of-00003" -> true with *base = "X", *part = 1, *n_parts = 3; false for other stems.
bool parse_split_stem(const std::string& stem, std::string* base, int* part, int* n_parts);

// Every model in `dir`, sorted by name. Errors: the directory cannot be read, it holds no
// *.gguf file, two files give the same name.
[[nodiscard]] Result<std::vector<ModelSource>> scan_models_dir(const std::string& dir);

// "NAME=PATH" -> {NAME, PATH}; "PATH" alone is named by its file stem. Errors: an empty name or
// path, a name with '/' or whitespace, a file that does not exist.
[[nodiscard]] Result<ModelSource> parse_model_spec(const std::string& spec);

// Ok unless two sources share a name (the error names it) or the list is empty.
[[nodiscard]] Status check_unique_names(const std::vector<ModelSource>& sources);

}  // namespace sniper::server
