// SPDX-License-Identifier: MIT
#include "server/response_formatter.h"

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

}  // namespace sniper::server
