// SPDX-License-Identifier: MIT
// OpenAI chat client with SSE streaming (see backend_client.h). httplib exceptions and JSON
// parse errors are caught here and turned into classified failures.
#include "agent/backend_client.h"

#include <httplib.h>

#include <chrono>

#include "server/bounded_json.h"

namespace sniper::agent {

using nlohmann::json;

namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

// Backend replies are untrusted: parsed within bounds on nesting and counts (checked while
// parsing), so a hostile backend cannot deepen the recursive walks (dump, copies) below.
// Discarded when malformed or out of bounds.
json parse_reply(std::string_view text) {
  json j;
  if (!server::parse_json_bounded(text, &j).empty()) return json(json::value_t::discarded);
  return j;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void set_timeouts(httplib::Client& cli, double connect_s, double read_s) {
  auto split = [](double s, time_t* sec, time_t* usec) {
    *sec = static_cast<time_t>(s);
    *usec = static_cast<time_t>((s - static_cast<double>(*sec)) * 1e6);
  };
  time_t sec = 0, usec = 0;
  split(connect_s, &sec, &usec);
  cli.set_connection_timeout(sec, usec);
  split(read_s, &sec, &usec);
  cli.set_read_timeout(sec, usec);
  cli.set_write_timeout(sec, usec);
}

// The message of an OpenAI error body, or the body itself (shortened).
std::string error_message(int status, const std::string& body) {
  json j = parse_reply(body);
  std::string msg;
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) msg = e["message"].get<std::string>();
    else if (e.is_string()) msg = e.get<std::string>();
  }
  if (msg.empty()) msg = body.substr(0, 200);
  return "HTTP " + std::to_string(status) + (msg.empty() ? "" : ": " + msg);
}

FailureKind classify_status(int status) {
  if (status == 429) return FailureKind::kRateLimited;
  if (status >= 500) return FailureKind::kServer;
  return FailureKind::kClient;
}

// Applies one chat.completion(.chunk) object to the result. Returns false if it is not one.
bool apply_chunk(const json& j, ChatResult* r, const DeltaFn& on_delta, std::chrono::steady_clock::time_point t0,
                 bool* counted_usage) {
  if (!j.is_object()) return false;
  if (j.contains("error")) {
    r->failure = FailureKind::kServer;
    r->error = error_message(500, j.dump());
    return true;
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      r->prompt_tokens = u["prompt_tokens"].get<int>();
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      r->completion_tokens = u["completion_tokens"].get<int>();
      *counted_usage = true;
    }
  }
  if (!j.contains("choices")) return j.contains("usage");
  if (!j["choices"].is_array()) return false;
  for (const json& c : j["choices"]) {
    if (!c.is_object()) continue;
    const json* part = nullptr;
    if (c.contains("delta") && c["delta"].is_object()) part = &c["delta"];
    else if (c.contains("message") && c["message"].is_object()) part = &c["message"];
    else if (c.contains("text") && c["text"].is_string()) part = &c;  // /v1/completions shape
    if (part) {
      auto emit = [&](const char* key, bool reasoning) {
        if (!part->contains(key) || !(*part)[key].is_string()) return;
        std::string text = (*part)[key].get<std::string>();
        if (text.empty()) return;
        if (r->ttft_s == 0) r->ttft_s = seconds_since(t0);
        (reasoning ? r->reasoning : r->content) += text;
        if (!reasoning && !*counted_usage) ++r->completion_tokens;
        if (on_delta) on_delta(text, reasoning);
      };
      emit("reasoning_content", true);
      emit("content", false);
      emit("text", false);
    }
    if (c.contains("finish_reason") && c["finish_reason"].is_string())
      r->finish_reason = c["finish_reason"].get<std::string>();
  }
  return true;
}

}  // namespace

const char* failure_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone: return "ok";
    case FailureKind::kDown: return "down";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kRateLimited: return "rate limited";
    case FailureKind::kServer: return "server error";
    case FailureKind::kClient: return "request error";
    case FailureKind::kProtocol: return "protocol error";
    case FailureKind::kCancelled: return "cancelled";
  }
  return "?";
}

double ChatResult::tokens_per_second() const {
  if (!streamed) return elapsed_s > 0 ? completion_tokens / elapsed_s : 0;
  double decode_s = elapsed_s - ttft_s;
  if (completion_tokens <= 1 || decode_s <= 0) return 0;
  return (completion_tokens - 1) / decode_s;
}

void SseParser::take_line(std::string_view line, const std::function<void(const std::string&)>& on_event) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    if (has_data_) on_event(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.rfind("data:", 0) != 0) return;  // comments (":"), event:, id:, retry: are ignored
  std::string_view payload = line.substr(5);
  if (!payload.empty() && payload.front() == ' ') payload.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_ += payload;
  has_data_ = true;
}

void SseParser::feed(std::string_view bytes, const std::function<void(const std::string&)>& on_event) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      line_ += bytes;
      return;
    }
    line_ += bytes.substr(0, nl);
    bytes.remove_prefix(nl + 1);
    std::string line = std::move(line_);
    line_.clear();
    take_line(line, on_event);
  }
}

void SseParser::finish(const std::function<void(const std::string&)>& on_event) {
  if (!line_.empty()) {
    std::string line = std::move(line_);
    line_.clear();
    take_line(line, on_event);
  }
  take_line("", on_event);
}

bool split_url(const std::string& url, std::string* origin, std::string* path) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return false;
  std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return false;
  size_t host_end = url.find('/', scheme_end + 3);
  *origin = url.substr(0, host_end);
  *path = host_end == std::string::npos ? "" : url.substr(host_end);
  while (!path->empty() && path->back() == '/') path->pop_back();
  return origin->size() > scheme_end + 3;
}

std::string endpoint_path(const std::string& base_path, const std::string& endpoint) {
  std::string base = base_path;
  while (!base.empty() && base.back() == '/') base.pop_back();
  bool has_v1 = base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0;
  return base + (has_v1 ? "" : "/v1") + "/" + endpoint;
}

BackendClient::BackendClient(BackendConfig config, double connect_timeout_s, double read_timeout_s)
    : config_(std::move(config)), connect_timeout_s_(connect_timeout_s), read_timeout_s_(read_timeout_s) {}

json BackendClient::request_body(const ChatRequest& request) const {
  json body = json::object();
  if (!config_.model.empty()) body["model"] = config_.model;
  body["messages"] = request.messages;
  body["stream"] = request.stream;
  if (request.stream) body["stream_options"] = json{{"include_usage", true}};  // token counts in the last chunk
  if (request.temperature) body["temperature"] = *request.temperature;
  if (request.max_tokens > 0) body["max_tokens"] = request.max_tokens;
  if (request.thinking && config_.template_kwargs)
    body["chat_template_kwargs"] = json{{"enable_thinking", *request.thinking}};
  return body;
}

ChatResult BackendClient::chat(const ChatRequest& request, const DeltaFn& on_delta,
                               const std::atomic<bool>* cancel) const {
  ChatResult r;
  auto t0 = std::chrono::steady_clock::now();
  std::string origin, base;
  if (!split_url(config_.url, &origin, &base)) {
    r.failure = FailureKind::kClient;
    r.error = "backend url '" + config_.url + "' is not http(s)";
    return r;
  }
  try {
    httplib::Client cli(origin);
    set_timeouts(cli, connect_timeout_s_, read_timeout_s_);
    httplib::Request req;
    req.method = "POST";
    req.path = endpoint_path(base, "chat/completions");
    req.headers.emplace("Content-Type", "application/json");
    req.headers.emplace("Accept", request.stream ? "text/event-stream" : "application/json");
    if (!config_.api_key.empty()) req.headers.emplace("Authorization", "Bearer " + config_.api_key);
    req.body = request_body(request).dump();

    int status = 0;
    bool is_sse = false;
    bool counted_usage = false;
    bool saw_done = false;
    bool cancelled = false;
    std::string raw;  // non-SSE body (or error body)
    SseParser sse;
    auto on_event = [&](const std::string& data) {
      if (data == "[DONE]") {
        saw_done = true;
        return;
      }
      json j = parse_reply(data);
      if (j.is_discarded() || !apply_chunk(j, &r, on_delta, t0, &counted_usage)) {
        if (r.failure == FailureKind::kNone) {
          r.failure = FailureKind::kProtocol;
          r.error = "unexpected stream event: " + data.substr(0, 120);
        }
      }
    };
    req.response_handler = [&](const httplib::Response& res) {
      status = res.status;
      r.retry_after = res.get_header_value("Retry-After");
      is_sse = res.get_header_value("Content-Type").find("text/event-stream") != std::string::npos;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (cancel && cancel->load()) {
        cancelled = true;
        return false;
      }
      if (status == 200 && is_sse) {
        sse.feed(std::string_view(data, n), on_event);
      } else if (raw.size() < kMaxErrorBody * 256) {
        raw.append(data, n);
      }
      if (cancel && cancel->load()) {
        cancelled = true;
        return false;
      }
      return true;
    };
    httplib::Result res = cli.send(req);
    r.elapsed_s = seconds_since(t0);
    r.http_status = status;
    if (cancelled || (cancel && cancel->load() && !res)) {
      r.failure = FailureKind::kCancelled;
      r.error = "cancelled";
      return r;
    }
    if (!res) {
      httplib::Error e = res.error();
      bool timed_out = e == httplib::Error::Read && r.elapsed_s >= read_timeout_s_ * 0.9;
      if (status == 200 && !r.content.empty() && !timed_out) {
        // The stream broke after some output; keep what we have but report it.
        r.failure = FailureKind::kServer;
        r.error = "stream interrupted: " + httplib::to_string(e);
        return r;
      }
      r.failure =
          (e == httplib::Error::Connection || e == httplib::Error::SSLConnection ||
           e == httplib::Error::SSLServerVerification)
              ? FailureKind::kDown
              : (timed_out || e == httplib::Error::ConnectionTimeout ? FailureKind::kTimeout : FailureKind::kServer);
      if (e == httplib::Error::ConnectionTimeout) r.failure = FailureKind::kDown;
      r.error = std::string(failure_name(r.failure)) + " (" + httplib::to_string(e) + ")";
      return r;
    }
    if (status != 200) {
      r.failure = classify_status(status);
      r.error = error_message(status, raw.substr(0, kMaxErrorBody));
      return r;
    }
    r.streamed = is_sse;
    if (is_sse) {
      sse.finish(on_event);
      if (r.failure == FailureKind::kNone && !saw_done && r.finish_reason.empty() && r.content.empty()) {
        r.failure = FailureKind::kProtocol;
        r.error = "stream ended without data";
      }
    } else {
      json j = parse_reply(raw);
      if (j.is_discarded() || !apply_chunk(j, &r, on_delta, t0, &counted_usage) || !j.contains("choices")) {
        r.failure = FailureKind::kProtocol;
        r.error = "reply is not a chat completion: " + raw.substr(0, 120);
      }
    }
    r.elapsed_s = seconds_since(t0);
    return r;
  } catch (const std::exception& e) {
    r.failure = FailureKind::kProtocol;
    r.error = std::string("client error: ") + e.what();
    r.elapsed_s = seconds_since(t0);
    return r;
  }
}

Status BackendClient::probe(double timeout_s) const {
  std::string origin, base;
  if (!split_url(config_.url, &origin, &base))
    return make_error("%s (%s) is not an http(s) URL", config_.name.c_str(), config_.url.c_str());
  try {
    httplib::Client cli(origin);
    set_timeouts(cli, timeout_s, timeout_s);
    httplib::Headers headers;
    if (!config_.api_key.empty()) headers.emplace("Authorization", "Bearer " + config_.api_key);
    auto res = cli.Get(endpoint_path(base, "models"), headers);
    if (!res) {
      const httplib::Error e = res.error();
      const std::string why = e == httplib::Error::Connection          ? "nothing answers there (connection refused)"
                              : e == httplib::Error::ConnectionTimeout ? "no answer to the connection"
                                                                       : httplib::to_string(e);
      return make_error("%s (%s): %s", config_.name.c_str(), config_.url.c_str(), why.c_str());
    }
    return ok_status();
  } catch (const std::exception& e) {
    return make_error("%s (%s): %s", config_.name.c_str(), config_.url.c_str(), e.what());
  }
}

Result<json> BackendClient::get_models() const {
  std::string origin, base;
  if (!split_url(config_.url, &origin, &base))
    return make_error("backend url '%s' is not http(s)", config_.url.c_str());
  try {
    httplib::Client cli(origin);
    set_timeouts(cli, connect_timeout_s_, read_timeout_s_);
    httplib::Headers headers;
    if (!config_.api_key.empty()) headers.emplace("Authorization", "Bearer " + config_.api_key);
    auto res = cli.Get(endpoint_path(base, "models"), headers);
    if (!res)
      return make_error("GET models from %s failed: %s", config_.name.c_str(), httplib::to_string(res.error()).c_str());
    if (res->status != 200)
      return make_error("GET models from %s: %s", config_.name.c_str(), error_message(res->status, res->body).c_str());
    json j = parse_reply(res->body);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array())
      return make_error("models reply has no data array");
    return j;
  } catch (const std::exception& e) {
    return make_error("GET models: %s", e.what());
  }
}

Result<std::vector<std::string>> BackendClient::list_models() const {
  SNIPER_ASSIGN_OR_RETURN(json j, get_models());
  std::vector<std::string> ids;
  for (const json& m : j["data"]) {
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  }
  return ids;
}

Result<std::vector<std::string>> BackendClient::model_capabilities() const {
  SNIPER_ASSIGN_OR_RETURN(json j, get_models());
  auto names_model = [&](const json& m) {
    if (config_.model.empty()) return true;
    if (m.contains("id") && m["id"] == config_.model) return true;
    if (m.contains("aliases") && m["aliases"].is_array()) {
      for (const json& a : m["aliases"]) {
        if (a == config_.model) return true;
      }
    }
    return false;
  };
  std::vector<std::string> caps;
  for (const json& m : j["data"]) {
    if (!m.is_object() || !names_model(m)) continue;
    if (m.contains("capabilities") && m["capabilities"].is_array()) {
      for (const json& c : m["capabilities"]) {
        if (c.is_string()) caps.push_back(c.get<std::string>());
      }
    }
    break;
  }
  return caps;
}

}  // namespace sniper::agent
