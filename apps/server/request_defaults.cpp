// SPDX-License-Identifier: MIT
#include "server/request_defaults.h"

#include "server/openai_protocol.h"

namespace sniper::server {

namespace {

enum class Api { kNone, kOpenAi, kOllama, kAnthropic };

Api api_of(const std::string& method, const std::string& path) {
  if (method != "POST") return Api::kNone;
  if (path == "/v1/chat/completions" || path == "/v1/completions") return Api::kOpenAi;
  if (path == "/api/chat" || path == "/api/generate") return Api::kOllama;
  if (path == "/v1/messages") return Api::kAnthropic;
  return Api::kNone;
}

template <typename T>
bool add(Json* obj, const char* key, const std::optional<T>& value) {
  if (!value || obj->contains(key)) return false;
  (*obj)[key] = *value;
  return true;
}

}  // namespace

std::optional<std::string> apply_sampling_defaults(const std::string& method, const std::string& path,
                                                   const std::string& body, const SamplingDefaults& d) {
  const Api api = api_of(method, path);
  if (api == Api::kNone || d.empty()) return std::nullopt;
  Json j;
  if (parse_body(body, &j).has_value() || !j.is_object()) return std::nullopt;
  bool changed = false;
  if (api == Api::kOllama) {
    if (j.contains("options") && !j["options"].is_object()) return std::nullopt;  // the route names the error
    Json options = j.contains("options") ? j["options"] : Json::object();
    for (auto [key, value] :
         {std::pair{"temperature", d.temperature}, std::pair{"top_p", d.top_p}, std::pair{"min_p", d.min_p},
          std::pair{"repeat_penalty", d.repeat_penalty}, std::pair{"presence_penalty", d.presence_penalty},
          std::pair{"frequency_penalty", d.frequency_penalty}}) {
      changed |= add(&options, key, value);
    }
    changed |= add(&options, "top_k", d.top_k);
    changed |= add(&options, "seed", d.seed);
    changed |= add(&options, "num_predict", d.max_tokens);
    if (changed) j["options"] = options;
  } else {
    // Anthropic's temperature is in [0, 1]: a server default above it (serve --temp takes [0, 2])
    // becomes 1, the API's most random, rather than a 400 on a field the request never sent.
    std::optional<double> temperature = d.temperature;
    if (api == Api::kAnthropic && temperature && *temperature > 1.0) temperature = 1.0;
    changed |= add(&j, "temperature", temperature);
    changed |= add(&j, "top_p", d.top_p);
    changed |= add(&j, "top_k", d.top_k);
    if (api == Api::kOpenAi) {
      changed |= add(&j, "min_p", d.min_p);
      changed |= add(&j, "seed", d.seed);
      changed |= add(&j, "repeat_penalty", d.repeat_penalty);
      changed |= add(&j, "presence_penalty", d.presence_penalty);
      changed |= add(&j, "frequency_penalty", d.frequency_penalty);
      // The newer name first: a body with max_completion_tokens keeps it.
      if (!j.contains("max_completion_tokens")) changed |= add(&j, "max_tokens", d.max_tokens);
    }
  }
  if (!changed) return std::nullopt;
  return dump_json(j);
}

}  // namespace sniper::server
