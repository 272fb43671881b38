// SPDX-License-Identifier: MIT
// The CLI side of `sniper pull` and `-hf`: runs pull_model with a progress display on stderr
// (a redrawn bar with bytes, rate and ETA on a terminal; a plain line every few seconds
// otherwise) and resolves the model flags (-m PATH or -hf REPO[:QUANT]) to a local path.
#pragma once

#include <string>

#include "args.h"
#include "base/result.h"
#include "hub/pull.h"

namespace sniper::cli {

struct HubPullRequest {
  std::string ref;                // "owner/name[:QUANT|:FILE.gguf]"
  uint64_t budget_bytes = 0;      // for the no-tag choice
  bool offline_fallback = false;  // when the hub is unreachable, use a complete match in the store
  bool with_mmproj = false;       // also the repository's projector for the model (llama.cpp's choice)
};

// Pulls (or finds) the model; returns the store paths, first part first. Narrative and progress
// go to stderr. Errors name the repository and the cause.
[[nodiscard]] Result<hub::PullResult> pull_with_progress(const HubPullRequest& request);

// A model as the user names it: an existing file as given; else a store name OWNER/NAME[:QUANT]
// (or a bare NAME[:QUANT] that one store repository has), taken from the store when it holds a
// match, pulled otherwise (first part of a split set). Text that looks like a path (".gguf", "/",
// "./") and does not exist is an Error, never a download.
[[nodiscard]] Result<std::string> resolve_model_ref(const std::string& text, uint64_t budget_bytes);

// An Error when the positional words are more than the model (or any, with -m / -hf): unquoted
// prompt words get "quote the prompt". Commands call it before slow work.
[[nodiscard]] Status check_model_positionals(const Args& args);

// The model file the arguments name: -m MODEL, or the first positional word, through
// resolve_model_ref; else -hf REPO[:QUANT] pulled into the store if needed. Errors: no model,
// both -m and -hf, more words than a model (unquoted prompt words get "quote the prompt").
[[nodiscard]] Result<std::string> model_path_from_args(const Args& args);

// True when -hf should also fetch the repository's projector, as llama.cpp's -hf does for its
// multimodal tools: a command that uses one (chat and serve; run and logits with --image or
// --audio), with neither --mmproj nor --no-mmproj.
bool wants_hub_mmproj(const Args& args);

struct ModelFiles {
  std::string model;
  std::string mmproj;  // the projector -hf fetched (wants_hub_mmproj), "" when none
};

// model_path_from_args, and with -hf the projector beside the model when wants_hub_mmproj.
[[nodiscard]] Result<ModelFiles> model_files_from_args(const Args& args);

}  // namespace sniper::cli
