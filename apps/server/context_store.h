// SPDX-License-Identifier: MIT
// ContextStore: the directory of saved KV contexts (POST /v1/context/save|load, GET
// /v1/context, DELETE /v1/context/{name}). Names are restricted to [A-Za-z0-9._-]{1,64} and
// may not start with '.', so a name can never leave the directory; each context is one file
// "<name>.ctx" written atomically (engine/session_state.h has the format).
// Thread-safe: operations on distinct names are independent; a save racing a load of the same
// name sees either the old or the new file, never a partial one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/session_state.h"

namespace sniper::server {

struct ContextInfo {
  std::string name;
  int64_t n_tokens = 0;
  uint64_t bytes = 0;
  int64_t created = 0;  // unix seconds (file modification time)
};

class ContextStore {
 public:
  // `dir` is created (with parents) on the first save; saves use `compression` unless told
  // otherwise (serve --context-compression).
  explicit ContextStore(std::string dir, ContextCompression compression = ContextCompression::kNone)
      : dir_(std::move(dir)), compression_(compression) {}

  // Ok when `name` matches [A-Za-z0-9._-]{1,64} and does not start with '.'.
  [[nodiscard]] static Status validate_name(const std::string& name);
  // The default directory: $XDG_CACHE_HOME/sniper/contexts, else ~/.cache/sniper/contexts.
  static std::string default_dir();

  // Errors name the path, or a model whose shape `compression` does not support.
  [[nodiscard]] Status save(const std::string& name, const SessionState& state, ContextCompression compression) const;
  [[nodiscard]] Status save(const std::string& name, const SessionState& state) const {
    return save(name, state, compression_);
  }
  ContextCompression default_compression() const { return compression_; }
  // An Error whose message starts with "not found" when there is no such context.
  [[nodiscard]] Result<SessionState> load(const std::string& name) const;
  bool exists(const std::string& name) const;
  // Returns false when there is no such context.
  [[nodiscard]] Result<bool> remove(const std::string& name) const;
  // Every context, sorted by name. Unreadable files are skipped.
  std::vector<ContextInfo> list() const;
  // Bytes of the stored file, 0 if absent.
  uint64_t file_bytes(const std::string& name) const;
  const std::string& dir() const { return dir_; }
  // The file of context `name` (validate the name first).
  std::string path_of(const std::string& name) const { return dir_ + "/" + name + ".ctx"; }

 private:
  std::string dir_;
  ContextCompression compression_ = ContextCompression::kNone;
};

}  // namespace sniper::server
