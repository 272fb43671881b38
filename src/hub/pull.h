// SPDX-License-Identifier: MIT
// pull_model: what `sniper pull REPO[:QUANT|FILE]` and `-hf` do. Lists the repository, selects
// the files (select_model), and makes each one complete in the store: already there (right
// size: it was verified before it got its name), else borrowed from another cache (same size and
// SHA-256; hard-linked, or symlinked across file systems), else downloaded into "<file>.part"
// with resume and a bounded retry, verified against the LFS SHA-256, and only then renamed.
// Free space is checked before the first byte is fetched. A checksum mismatch deletes the part.
// resolve_local finds a complete selection already in the store without the network (for -hf
// when the hub is unreachable). With with_mmproj, the model's projector file comes along as one
// more file of the pull.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "hub/hub_client.h"
#include "hub/hub_files.h"
#include "hub/model_store.h"

namespace sniper::hub {

struct PullOptions {
  uint64_t budget_bytes = 0;  // memory budget for the no-tag choice
  int max_retries = 3;        // further attempts after a retryable failure, each resuming
  double retry_delay_s = 1;   // doubled after each failure
  // Called with the file being fetched, its 1-based index among the files and their count,
  // then with bytes done / total as they arrive.
  std::function<void(const std::string& file, int index, int count)> on_file_start;
  ProgressFn progress;
  std::function<void(const std::string& file, bool ok)> on_file_end;
  std::function<void(const std::string& line)> log;  // one line of narrative (choice, reuse, retry)
  GetenvFn getenv_fn;                                // for the foreign cache locations
  // Also the repository's multimodal projector for the selected model (find_best_sibling with
  // "mmproj", as llama.cpp's -hf picks it), when it has one.
  bool with_mmproj = false;
};

struct PullResult {
  Selection selection;
  std::vector<std::string> paths;  // store paths of the selected files, in part order
  std::string mmproj_path;         // store path of the projector (with_mmproj), "" when none
  uint64_t downloaded_bytes = 0;   // fetched over the network by this call
  double download_s = 0;           // wall time spent downloading
};

[[nodiscard]] Result<PullResult> pull_model(HubClient& client, const ModelStore& store, const RepoRef& ref,
                                            const PullOptions& options);

// The store's complete files of `ref.repo` as HubFiles (sha256 empty) and the selection among
// them; an Error when the store has none that match.
[[nodiscard]] Result<PullResult> resolve_local(const ModelStore& store, const RepoRef& ref, uint64_t budget_bytes,
                                               bool with_mmproj = false);

}  // namespace sniper::hub
