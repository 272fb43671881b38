// SPDX-License-Identifier: MIT
// ModelStore: the local store of pulled models, and the other caches it borrows from.
// Layout (documented in docs/models.md, "Getting models: sniper pull"):
//   $SNIPER_HOME/models/<owner>/<name>/<path in the repository>          a complete, verified file
//   $SNIPER_HOME/models/<owner>/<name>/<path in the repository>.part     a download in progress
// $SNIPER_HOME defaults to ~/.cache/sniper. A file only ever gets its final name by rename()
// after its SHA-256 matched the hub's listing, so a name without ".part" is complete; a final
// name may be a symbolic link to a verified copy in another cache (when a hard link across file
// systems is impossible). Nothing else is kept: the repository and file come from the path, the
// quant tag from the file name.
// Other caches searched for a file before downloading it (each verified by size and SHA-256):
//   the Hugging Face hub layout <cache>/models--<owner>--<name>/snapshots/*/<path> under
//   LLAMA_CACHE, HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub,
//   ~/.cache/huggingface/hub (llama.cpp's current cache is this layout), and llama.cpp's older
//   flat layout <LLAMA_CACHE or ~/.cache/llama.cpp>/<owner>_<name>_<file name>.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::hub {

using GetenvFn = std::function<const char*(const char*)>;

// $SNIPER_HOME, else $HOME/.cache/sniper. An Error when neither variable is set.
[[nodiscard]] Result<std::string> sniper_home(const GetenvFn& getenv_fn = {});

struct StoreEntry {
  std::string repo;         // "owner/name"
  std::string file;         // path in the repository
  std::string path;         // where it is on disk
  std::string link_target;  // when path is a symbolic link, what it points at
  uint64_t size = 0;        // bytes on disk (of the target for a link)
  std::string tag;          // quant_tag(file)
  bool partial = false;     // a ".part" download in progress
};

class ModelStore {
 public:
  explicit ModelStore(std::string home) : home_(std::move(home)) {}

  const std::string& home() const { return home_; }
  std::string repo_dir(const std::string& repo) const { return home_ + "/models/" + repo; }
  std::string file_path(const std::string& repo, const std::string& file) const { return repo_dir(repo) + "/" + file; }
  std::string part_path(const std::string& repo, const std::string& file) const {
    return file_path(repo, file) + ".part";
  }

  // Every file in the store (complete and partial), sorted by repository then file. A missing
  // store is empty. Errors name an unreadable directory.
  [[nodiscard]] Result<std::vector<StoreEntry>> list() const;

  // Creates the directories above `path`. Errors name the directory and the OS error.
  [[nodiscard]] static Status make_parent_dirs(const std::string& path);

 private:
  std::string home_;
};

// Paths where another cache may hold `file` of `repo` (existing or not), most preferred first.
std::vector<std::string> foreign_cache_candidates(const std::string& repo, const std::string& file,
                                                  const GetenvFn& getenv_fn = {});

// Free bytes for an unprivileged writer on the file system holding `dir` (its nearest existing
// ancestor). Errors name the directory.
[[nodiscard]] Result<uint64_t> free_disk_bytes(const std::string& dir);

}  // namespace sniper::hub
