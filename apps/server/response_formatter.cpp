// SPDX-License-Identifier: MIT
#include "server/response_formatter.h"

#include <algorithm>

namespace sniper::server {

Json usage_json(const JobResult& r) {
  Json u = Json::object();
  u["prompt_tokens"] = r.n_prompt;
  u["completion_tokens"] = r.n_generated;
  u["total_tokens"] = r.n_prompt + r.n_generated;
  u["prompt_tokens_details"] = Json{{"cached_tokens", r.n_cached}};
  if (r.speculative) {
    // OpenAI's names for predicted tokens that were / were not used.
    u["completion_tokens_details"] =
        Json{{"accepted_prediction_tokens", r.n_accepted}, {"rejected_prediction_tokens", r.n_drafted - r.n_accepted}};
  }
  return u;
}

Json timings_json(const JobResult& r) {
  const int64_t evaluated = r.n_prompt - r.n_cached;
  const int64_t decoded = std::max<int64_t>(0, r.n_generated - 1);  // the first token comes from the prompt's pass
  auto per_second = [](int64_t n, double ms) { return ms > 0 ? static_cast<double>(n) * 1000.0 / ms : 0.0; };
  Json t = Json::object();
  t["prompt_n"] = evaluated;
  t["prompt_ms"] = r.prompt_ms;
  t["prompt_per_second"] = per_second(evaluated, r.prompt_ms);
  t["predicted_n"] = r.n_generated;
  t["predicted_ms"] = r.decode_ms;
  t["predicted_per_second"] = per_second(decoded, r.decode_ms);
  t["ttft_ms"] = r.ttft_ms >= 0 ? Json(r.ttft_ms) : Json();
  return t;
}

}  // namespace sniper::server
