// SPDX-License-Identifier: MIT
// Server-side defaults for the sampling fields a request leaves out (`serve --temp 0.7 --top-k 20
// ...`, as llama-server's flags set its defaults): before a generation route parses its body, each
// default the body does not set is added under that API's own field name, so explicit request
// values always win and every API gets the same defaults:
//   OpenAI  (/v1/chat/completions, /v1/completions): temperature, top_p, top_k, min_p, seed,
//           repeat_penalty, presence_penalty, frequency_penalty, max_tokens
//   Ollama  (/api/chat, /api/generate): options.{temperature, top_p, top_k, min_p, seed,
//           repeat_penalty, presence_penalty, frequency_penalty, num_predict}
//   Anthropic (/v1/messages): temperature (at most 1, the API's range), top_p, top_k
//           (max_tokens is required there)
// Bodies that are not JSON objects within the request bounds are left for the route to refuse.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sniper::server {

struct SamplingDefaults {
  std::optional<double> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int64_t> top_k, seed, max_tokens;
  bool empty() const {
    return !temperature && !top_p && !min_p && !repeat_penalty && !presence_penalty && !frequency_penalty && !top_k &&
           !seed && !max_tokens;
  }
};

// The body with the defaults it lacks added, or nullopt when nothing changes (another route, a
// body that is not a bounded JSON object, nothing missing).
std::optional<std::string> apply_sampling_defaults(const std::string& method, const std::string& path,
                                                   const std::string& body, const SamplingDefaults& defaults);

}  // namespace sniper::server
