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
};

// Pulls (or finds) the model; returns the store paths, first part first. Narrative and progress
// go to stderr. Errors name the repository and the cause.
[[nodiscard]] Result<hub::PullResult> pull_with_progress(const HubPullRequest& request);

// The model file the flags name: --model PATH as given, else --hf-repo REPO[:QUANT] pulled into
// the store if needed (first part of a split set). An Error when neither flag is given.
[[nodiscard]] Result<std::string> model_path_from_args(const Args& args);

}  // namespace sniper::cli
