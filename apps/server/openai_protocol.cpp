// SPDX-License-Identifier: MIT
#include "server/openai_protocol.h"

#include "server/structured_output.h"

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <random>

namespace sniper::server {

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

const char* type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

// Reads an optional number field in [lo, hi] into *out. Absent or null keeps *out.
std::optional<ApiError> get_number(const Json& body, const char* key, double lo, double hi, float* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return bad_request(fmt("%s must be a number, got %s", key, type_name(*it)), key);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return bad_request(fmt("%s is %g but must be in [%g, %g]", key, v, lo, hi), key);
  }
  *out = static_cast<float>(v);
  return std::nullopt;
}

// Reads an optional integer field in [lo, hi]. Absent or null keeps *out.
std::optional<ApiError> get_integer(const Json& body, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      const auto v = static_cast<int64_t>(d);
      if (v < lo || v > hi)
        return bad_request(fmt("%s is %lld but must be in [%lld, %lld]", key, static_cast<long long>(v),
                               static_cast<long long>(lo), static_cast<long long>(hi)),
                           key);
      *out = v;
      return std::nullopt;
    }
    return bad_request(fmt("%s must be an integer, got %g", key, d), key);
  }
  if (!it->is_number_integer()) return bad_request(fmt("%s must be an integer, got %s", key, type_name(*it)), key);
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo)))
      return bad_request(fmt("%s is %llu but must be in [%lld, %lld]", key, static_cast<unsigned long long>(u),
                             static_cast<long long>(lo), static_cast<long long>(hi)),
                         key);
    *out = static_cast<int64_t>(u);
    return std::nullopt;
  }
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi)
    return bad_request(fmt("%s is %lld but must be in [%lld, %lld]", key, static_cast<long long>(v),
                           static_cast<long long>(lo), static_cast<long long>(hi)),
                       key);
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> get_bool(const Json& body, const char* key, bool* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return bad_request(fmt("%s must be a boolean, got %s", key, type_name(*it)), key);
  *out = it->get<bool>();
  return std::nullopt;
}

#define TRY_API(expr)                \
  do {                               \
    if (auto e_ = (expr)) return e_; \
  } while (0)

std::optional<ApiError> parse_params(const Json& body, GenerationParams* p) {
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return bad_request(fmt("model must be a string, got %s", type_name(*it)), "model");
    p->model = it->get<std::string>();
  }
  SamplerConfig& s = p->sampler;
  s.temperature = 1.0f;  // OpenAI defaults
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  s.presence_penalty = 0;
  s.frequency_penalty = 0;
  TRY_API(get_number(body, "temperature", 0.0, 2.0, &s.temperature));
  TRY_API(get_number(body, "top_p", 0.0, 1.0, &s.top_p));
  if (s.top_p <= 0.0f) return bad_request("top_p is 0 but must be in (0, 1]", "top_p");
  TRY_API(get_number(body, "min_p", 0.0, 1.0, &s.min_p));
  TRY_API(get_number(body, "presence_penalty", -2.0, 2.0, &s.presence_penalty));
  TRY_API(get_number(body, "frequency_penalty", -2.0, 2.0, &s.frequency_penalty));
  TRY_API(get_number(body, "repeat_penalty", 0.01, 10.0, &s.repeat_penalty));
  int64_t top_k = 0;
  TRY_API(get_integer(body, "top_k", 0, 1 << 24, &top_k));
  s.top_k = static_cast<int>(top_k);
  int64_t seed = 0;
  TRY_API(get_integer(body, "seed", INT64_MIN, INT64_MAX, &seed));
  s.seed = static_cast<uint64_t>(seed);
  constexpr int64_t kMaxTokens = int64_t{1} << 53;
  TRY_API(get_integer(body, "max_tokens", 1, kMaxTokens, &p->max_tokens));
  TRY_API(get_integer(body, "max_completion_tokens", 1, kMaxTokens, &p->max_tokens));
  int64_t n = 1;
  TRY_API(get_integer(body, "n", 1, INT64_MAX, &n));
  if (n != 1) return bad_request(fmt("n is %lld but only n = 1 is supported", static_cast<long long>(n)), "n");
  if (auto it = body.find("logprobs"); it != body.end() && !it->is_null()) {
    if (!(it->is_boolean() && !it->get<bool>())) {
      return bad_request("logprobs are not supported by this server (omit logprobs or set it to false)", "logprobs");
    }
  }
  if (auto it = body.find("top_logprobs"); it != body.end() && !it->is_null()) {
    return bad_request("top_logprobs is not supported by this server", "top_logprobs");
  }
  if (auto it = body.find("response_format"); it != body.end()) TRY_API(openai_response_format(*it, &p->grammar));
  if (auto it = body.find("stop"); it != body.end() && !it->is_null()) {
    if (it->is_string()) {
      p->stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > 16)
        return bad_request(fmt("stop has %zu entries but at most 16 are allowed", it->size()), "stop");
      for (const Json& s : *it) {
        if (!s.is_string()) return bad_request(fmt("stop must hold strings, got %s", type_name(s)), "stop");
        p->stop.push_back(s.get<std::string>());
      }
    } else {
      return bad_request(fmt("stop must be a string or an array of strings, got %s", type_name(*it)), "stop");
    }
    for (const std::string& s : p->stop) {
      if (s.size() > 1024) return bad_request("a stop string is longer than 1024 bytes", "stop");
    }
  }
  TRY_API(get_bool(body, "stream", &p->stream));
  TRY_API(get_bool(body, "ignore_eos", &p->ignore_eos));
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object())
      return bad_request(fmt("stream_options must be an object, got %s", type_name(*it)), "stream_options");
    TRY_API(get_bool(*it, "include_usage", &p->include_usage));
  }
  return std::nullopt;
}

// Walks every string (keys too) and checks UTF-8. The JSON parser already rejects invalid
// UTF-8; this keeps the guarantee independent of the parser's settings.
bool strings_valid(const Json& j) {
  if (j.is_string()) return is_valid_utf8(j.get_ref<const std::string&>());
  if (j.is_array()) {
    for (const Json& e : j) {
      if (!strings_valid(e)) return false;
    }
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!is_valid_utf8(it.key()) || !strings_valid(it.value())) return false;
    }
  }
  return true;
}

}  // namespace

ApiError bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

Json error_json(const ApiError& e) {
  Json err = Json::object();
  err["message"] = e.message;
  err["type"] = e.type;
  err["param"] = e.param.empty() ? Json() : Json(e.param);
  err["code"] = e.code.empty() ? Json() : Json(e.code);
  return Json{{"error", err}};
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
      return false;
    }
    i += len;
  }
  return true;
}

std::optional<ApiError> parse_body(std::string_view body, Json* out) {
  if (body.empty()) return bad_request("the request body is empty; expected a JSON object");
  if (!is_valid_utf8(body)) return bad_request("the request body is not valid UTF-8");
  // Bounded while parsing: the DOM is at most kRequestJsonLimits.max_depth deep, so the
  // recursive walks below (strings_valid, copies, dump, the template's from_json) are bounded.
  Json j;
  const std::string why = parse_json_bounded(body, &j, kRequestJsonLimits);
  if (!why.empty()) return bad_request("the request body is not valid JSON: " + why);
  if (!j.is_object()) return bad_request(fmt("the request body must be a JSON object, got %s", type_name(j)));
  if (!strings_valid(j)) return bad_request("the request contains a string that is not valid UTF-8");
  *out = std::move(j);
  return std::nullopt;
}

std::optional<ApiError> parse_chat_request(const Json& body, ChatRequest* out) {
  auto it = body.find("messages");
  if (it == body.end()) return bad_request("messages is required", "messages");
  if (!it->is_array()) return bad_request(fmt("messages must be an array, got %s", type_name(*it)), "messages");
  if (it->empty()) return bad_request("messages must not be empty", "messages");
  out->messages = *it;
  TRY_API(parse_params(body, &out->params));
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) return bad_request(fmt("tools must be an array, got %s", type_name(*t)), "tools");
    out->tools = *t;
  }
  if (auto tc = body.find("tool_choice"); tc != body.end() && !tc->is_null()) {
    if (tc->is_string()) {
      const std::string v = tc->get<std::string>();
      if (v == "none") {
        out->tools = Json();
      } else if (v != "auto" && v != "required") {
        return bad_request("tool_choice must be 'none', 'auto', 'required' or an object naming a function",
                           "tool_choice");
      }
    } else if (!tc->is_object()) {
      return bad_request(fmt("tool_choice must be a string or an object, got %s", type_name(*tc)), "tool_choice");
    }
  }
  if (auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
    if (!k->is_object())
      return bad_request(fmt("chat_template_kwargs must be an object, got %s", type_name(*k)), "chat_template_kwargs");
    out->template_kwargs = *k;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_completion_request(const Json& body, CompletionRequest* out) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return bad_request("prompt is required", "prompt");
  if (it->is_string()) {
    out->prompt = it->get<std::string>();
  } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    out->prompt = (*it)[0].get<std::string>();
  } else if (it->is_array()) {
    return bad_request("prompt must be a string or an array of exactly one string (batches are not supported)",
                       "prompt");
  } else {
    return bad_request(fmt("prompt must be a string, got %s", type_name(*it)), "prompt");
  }
  if (auto e = body.find("echo"); e != body.end() && !e->is_null()) {
    if (!e->is_boolean()) return bad_request(fmt("echo must be a boolean, got %s", type_name(*e)), "echo");
    if (e->get<bool>()) return bad_request("echo is not supported by this server", "echo");
  }
  if (auto s = body.find("suffix"); s != body.end() && !s->is_null()) {
    return bad_request("suffix is not supported by this server", "suffix");
  }
  if (auto b = body.find("best_of");
      b != body.end() && !b->is_null() && !(b->is_number_integer() && b->get<int64_t>() == 1)) {
    return bad_request("best_of must be 1", "best_of");
  }
  return parse_params(body, &out->params);
}

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string make_id(const char* prefix) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

int64_t unix_time_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace sniper::server
