// SPDX-License-Identifier: MIT
// ContextSync: copies saved contexts (ContextStore files) to and from S3-compatible object
// storage, for `sniper context push|pull|list` and POST /v1/context/upload|download.
//
// Remote layout under s3://bucket/prefix/ (the data object goes up in one PUT, or as a multipart
// upload above SNIPER_S3_PART_BYTES, 64 MiB by default):
//   NAME.ctx       the context file, byte for byte (engine/session_state.h), with user metadata
//                  x-amz-meta-sha256 and x-amz-meta-model-fingerprint
//   NAME.ctx.json  the manifest, written LAST: {"format": "sniper-context", "version": 1, "name",
//                  "bytes", "sha256", "model_fingerprint" (16 hex digits), "n_tokens", "created"}
// Invariants: a push deletes the old manifest first and writes the new one only after the data
// object is complete, so an interrupted push leaves no manifest, or an old manifest whose sha256
// the new data does not match; a pull refuses a context without a manifest, downloads to a
// hidden temp file in the store's directory and renames it to NAME.ctx only after the size, the
// sha256, the file's own checksum and the model fingerprint all match. A failed pull leaves no
// file behind. Thread-compatible: one ContextSync per request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "remote/s3_client.h"
#include "server/context_store.h"

namespace sniper::server {

// Why a sync operation failed (for the server's HTTP status and error code).
enum class SyncFailure {
  kNone,
  kInvalid,        // a bad name, or a local file that is not a valid context
  kNotFound,       // no such local or remote context (remote: no manifest)
  kForbidden,      // S3 refused the credentials or the bucket (401/403)
  kUnreachable,    // no HTTP answer: endpoint down, connection cut midway
  kCorrupt,        // the download does not match its manifest, or is not a valid context
  kModelMismatch,  // the context was saved with another model file
  kRemote,         // another S3 error
};
const char* sync_failure_code(SyncFailure f);  // "remote_forbidden", ... for API errors

struct ContextTransfer {
  std::string name;
  std::string url;  // s3://bucket/prefix/NAME.ctx
  uint64_t bytes = 0;
  std::string sha256;
  uint64_t model_fingerprint = 0;
  int64_t n_tokens = 0;
  double ms = 0;
};

struct RemoteContext {
  std::string name;
  uint64_t bytes = 0;
  std::string last_modified;  // of the manifest, ISO 8601
};

class ContextSync {
 public:
  ContextSync(S3Config config, S3Location where) : client_(std::move(config)), where_(std::move(where)) {}

  // Uploads the store's context `name`. Refuses a local file that fails its own checksum.
  [[nodiscard]] Result<ContextTransfer> push(const ContextStore& store, const std::string& name);
  // Downloads context `name` into the store, replacing a local one only once verified. With
  // `model_fingerprint`, a context saved with another model is refused (kModelMismatch) before
  // its data is downloaded.
  [[nodiscard]] Result<ContextTransfer> pull(const ContextStore& store, const std::string& name,
                                             std::optional<uint64_t> model_fingerprint);
  // The complete contexts (data and manifest present) directly under the prefix, sorted by name.
  [[nodiscard]] Result<std::vector<RemoteContext>> list();

  SyncFailure last_failure() const { return failure_; }

 private:
  Error fail(SyncFailure why, Error e) {
    failure_ = why;
    return e;
  }
  SyncFailure remote_failure() const;

  S3Client client_;
  S3Location where_;
  SyncFailure failure_ = SyncFailure::kNone;
};

}  // namespace sniper::server
