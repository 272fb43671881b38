// SPDX-License-Identifier: MIT
#include "server/response_formatter.h"

namespace sniper::server {

Json usage_json(const JobResult& r) {
  Json u = Json::object();
  u["prompt_tokens"] = r.n_prompt;
  u["completion_tokens"] = r.n_generated;
  u["total_tokens"] = r.n_prompt + r.n_generated;
  u["prompt_tokens_details"] = Json{{"cached_tokens", r.n_cached}};
  return u;
}

}  // namespace sniper::server
