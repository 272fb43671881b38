// SPDX-License-Identifier: MIT
// ServerOptions: what `sniper serve` was asked for (network, auth, slots, limits, where saved
// contexts live) apart from the model load options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/context_compression.h"
#include "engine/embedding.h"
#include "engine/model.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "server/request_defaults.h"
#include "server/request_log.h"

namespace sniper {
class Mmproj;
}

namespace sniper::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0: pick a free port
  std::string api_key;  // empty: no authentication
  // Host names the server answers to besides its address and localhost (request_guard.h).
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> cors_origins;  // origins allowed to make cross-origin requests ("*": any)
  int n_slots = 1;
  int queue_capacity = 16;                  // requests waiting beyond the slots (more -> 503)
  size_t max_body_bytes = 4u << 20;         // larger bodies -> 413
  size_t max_connections = 1024;            // open connections in total; past it -> 503 at once
  size_t max_connections_per_client = 128;  // open connections per client address; past it -> 503
  double header_timeout_s = 10;             // a request head must be complete this long after it starts (408)
  double timeout_s = 30;                    // reading a request body; each write of a response
  std::string context_dir;                  // empty: ContextStore::default_dir()
  ContextCompression context_compression = ContextCompression::kNone;  // of /v1/context/save
  SessionOptions session;                                              // per slot
  int64_t spec_ngram_size = 0;  // > 0: speculative decoding with n-gram lookup of this size, per slot
  // -md: speculative decoding with this draft model, a DraftModel session per slot. Borrowed: it
  // must outlive the server, be planned for n_slots sessions of the target's context, and serve
  // one target (its vocabulary is checked against the model's when the server starts).
  Model* draft_model = nullptr;
  bool spec_mtp = false;                   // --spec-type mtp: models with an MTP block draft with it
  SpecConfig spec;                         // with spec_ngram_size or draft_model
  bool context_shift = false;              // --context-shift: slots go on past a full context
  int64_t n_keep = 0;                      // --keep: prompt tokens a context shift keeps (-1 = all)
  std::string model_id;                    // empty: the model file's base name without ".gguf"
  RequestLogOptions log;                   // the per-request log line (--log-format, --verbose; request_log.h)
  SamplingDefaults sampling_defaults;      // for fields a request leaves out (--temp, ...; request_defaults.h)
  std::vector<std::string> model_aliases;  // the one model's other names (--alias; "*": any name)
  // --content-special-tokens: control-token text in message content becomes control tokens (the
  // old behaviour, as llama-server); default: plain text (only the template's markup is special).
  bool content_special_tokens = false;
  // serve --pooling: the embedding routes' pooling for every model; absent: each model's own
  // (engine/embedding.h pooling_from_gguf).
  std::optional<Pooling> pooling;
  // serve --mmproj: the one model's projector (borrowed; it must outlive the server). Null: the
  // model reads text only, and media in a request get a 400.
  Mmproj* mmproj = nullptr;
  // Under mpirun (src/dist): "" while every rank answers, else why the server cannot generate (a
  // rank was lost, named with its host). Then /health answers 503 "degraded" with the reason and
  // generation requests get a 503 with it at once. Null: a single process. Called from any thread.
  std::function<std::string()> degraded;
};

// "dir/stories260K.gguf" -> "stories260K".
std::string model_id_from_path(const std::string& path);

// A duration for `flag`: "-1" (never: returns -1), "0", seconds ("30", "2.5"), or a number with
// a unit: "500ms", "30s", "5m", "1h". Errors name the flag and the value.
[[nodiscard]] Result<double> parse_duration_s(const std::string& text, const char* flag);

}  // namespace sniper::server
