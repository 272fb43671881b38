// SPDX-License-Identifier: MIT
// Ollama's API beside OpenAI's: GET /api/version, GET /api/tags, POST /api/show, GET /api/ps,
// POST /api/chat and POST /api/generate. Chat and generate go through the same request -> job ->
// scheduler path as /v1/chat/completions (rendering with the model's template, the output parser
// for thinking and tool calls) and answer as Ollama does: NDJSON (one JSON object per line,
// stream defaults to true) ending with a done object that carries done_reason and the timings in
// nanoseconds, or one object. The model is "NAME" or "NAME:latest" where NAME is the served
// model's id; another name is 404 {"error": "model \"x\" not found, try pulling it first"}.
// A generate request with no prompt only loads the model (done_reason "load", or "unload" with
// keep_alive 0), as in Ollama.
#include <chrono>
#include <map>

#include "gguf/format.h"
#include "server/job_runner.h"
#include "server/ollama_protocol.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

constexpr const char* kOllamaVersion = "0.12.0";  // the Ollama API version these routes follow

std::string tagged(const std::string& id) { return id + ":latest"; }

bool serves(const ServerContext& ctx, const std::string& name) {
  return name == ctx.model_id || name == tagged(ctx.model_id);
}

void send_ollama_error(httplib::Response& res, const ApiError& e) { send_json(res, ollama_error_json(e.message), e.status); }

ApiError not_found(const std::string& name) {
  ApiError e = bad_request("model \"" + name + "\" not found, try pulling it first", "model");
  e.status = 404;
  return e;
}

// "0.6B", "135M": Ollama's parameter_size.
std::string parameter_size(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof(buf), "%.1fB", static_cast<double>(n) / 1e9);
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof(buf), "%.0fM", static_cast<double>(n) / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0fK", static_cast<double>(n) / 1e3);
  }
  return buf;
}

struct ModelFacts {
  uint64_t n_params = 0;
  std::string quant;  // the type holding most of the weight bytes ("Q4_K")
};

ModelFacts model_facts(const ServerContext& ctx) {
  ModelFacts f;
  std::map<uint32_t, uint64_t> bytes_by_type;
  for (const GgufTensorInfo& t : ctx.model->gguf().tensors()) {
    f.n_params += static_cast<uint64_t>(t.n_elements());
    if (t.n_dims >= 2) bytes_by_type[static_cast<uint32_t>(t.type)] += t.nbytes;
  }
  uint64_t best = 0;
  for (const auto& [type, bytes] : bytes_by_type) {
    if (bytes <= best) continue;
    best = bytes;
    const char* name = ggml_type_upper_name(type);
    f.quant = name != nullptr ? name : "unknown";
  }
  return f;
}

Json details_json(const ServerContext& ctx, const ModelFacts& f) {
  const std::string& arch = ctx.model->config().arch;
  Json d = Json::object();
  d["parent_model"] = "";
  d["format"] = "gguf";
  d["family"] = arch;
  d["families"] = Json::array({arch});
  d["parameter_size"] = parameter_size(f.n_params);
  d["quantization_level"] = f.quant;
  return d;
}

std::string digest(const ServerContext& ctx) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(ctx.fingerprint));
  return std::string(buf) + std::string(48, '0');  // sha256-sized; the fingerprint is not a file hash
}

int64_t ns_of_ms(double ms) { return static_cast<int64_t>(ms * 1e6); }

// NDJSON framing for /api/chat (message objects) and /api/generate (response strings).
class OllamaWire final : public JobWire {
 public:
  OllamaWire(std::string model, bool chat, const ChatFormat& format, const RenderedChat& rendered, bool tools,
             bool parse_output, std::chrono::steady_clock::time_point t0)
      : model_(std::move(model)), chat_(chat), parse_output_(parse_output), t0_(t0), parser_(format, rendered, tools) {}

  std::string stream_start() override { return {}; }
  std::string stream_text(std::string_view text) override {
    std::vector<ChatDelta> deltas;
    if (parse_output_) {
      parser_.feed(text, &deltas);
    } else {
      deltas.push_back(ChatDelta{ChatDelta::Kind::kContent, std::string(text), 0, {}, {}, {}});
    }
    return lines(deltas);
  }
  std::string stream_end(const JobResult& r) override {
    std::vector<ChatDelta> deltas;
    if (parse_output_) parser_.finish(&deltas);
    std::string out = lines(deltas);
    if (chat_ && parser_.has_tool_calls()) {
      // Ollama sends a call whole, in a message of its own.
      Json m = ollama_message(parser_.message());
      Json msg = Json{{"role", "assistant"}, {"content", ""}, {"tool_calls", m["tool_calls"]}};
      Json j = header();
      j["message"] = std::move(msg);
      j["done"] = false;
      out += dump_json(j) + "\n";
    }
    Json end = header();
    if (chat_) {
      end["message"] = Json{{"role", "assistant"}, {"content", ""}};
    } else {
      end["response"] = "";
    }
    finish_fields(&end, r);
    return out + dump_json(end) + "\n";
  }
  std::string stream_error(int, const std::string& message) override { return dump_json(ollama_error_json(message)) + "\n"; }

  void feed(std::string_view text) override {
    if (parse_output_) {
      std::vector<ChatDelta> ignored;
      parser_.feed(text, &ignored);
    } else {
      raw_.append(text);
    }
  }
  Json body(const JobResult& r) override {
    Json j = header();
    Json m;
    if (parse_output_) {
      std::vector<ChatDelta> ignored;
      parser_.finish(&ignored);
      m = ollama_message(parser_.message());
    } else {
      m = Json{{"role", "assistant"}, {"content", raw_}};
    }
    if (chat_) {
      j["message"] = std::move(m);
    } else {
      j["response"] = m["content"];
      if (m.contains("thinking")) j["thinking"] = m["thinking"];
    }
    finish_fields(&j, r);
    return j;
  }
  Json error_body(int, const std::string& message) override { return ollama_error_json(message); }

 private:
  Json header() const {
    Json j = Json::object();
    j["model"] = model_;
    j["created_at"] = rfc3339(std::chrono::system_clock::now());
    return j;
  }
  std::string lines(const std::vector<ChatDelta>& deltas) const {
    std::string out;
    for (const ChatDelta& d : deltas) {
      if (d.kind == ChatDelta::Kind::kToolCall || d.text.empty()) continue;  // calls: sent whole at the end
      const bool thinking = d.kind == ChatDelta::Kind::kReasoning;
      Json j = header();
      if (chat_) {
        Json m = Json{{"role", "assistant"}, {"content", thinking ? "" : d.text}};
        if (thinking) m["thinking"] = d.text;
        j["message"] = std::move(m);
      } else {
        j["response"] = thinking ? "" : d.text;
        if (thinking) j["thinking"] = d.text;
      }
      j["done"] = false;
      out += dump_json(j) + "\n";
    }
    return out;
  }
  void finish_fields(Json* j, const JobResult& r) const {
    (*j)["done"] = true;
    (*j)["done_reason"] = r.finish_reason == "length" ? "length" : "stop";
    (*j)["total_duration"] = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
    (*j)["load_duration"] = 0;  // the model is loaded before the request
    (*j)["prompt_eval_count"] = r.n_prompt - r.n_cached;
    (*j)["prompt_eval_duration"] = ns_of_ms(r.prompt_ms);
    (*j)["eval_count"] = r.n_generated;
    (*j)["eval_duration"] = ns_of_ms(r.decode_ms);
  }

  std::string model_;
  bool chat_;
  bool parse_output_;  // split thinking / tool calls (a chat template rendered the prompt)
  std::chrono::steady_clock::time_point t0_;
  ChatOutputParser parser_;
  std::string raw_;
};

// Shared by chat and generate once the request is parsed: model check, keep-alive, rendering.
void run_ollama(ServerContext& ctx, Endpoint endpoint, bool chat, OllamaRequest& request,
                std::chrono::steady_clock::time_point t0, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(endpoint, RequestOutcome::kError);
    send_ollama_error(res, e);
  };
  if (!serves(ctx, request.model)) return fail(not_found(request.model));
  ctx.keep_alive.touch(request.keep_alive.value_or(kDefaultKeepAliveS));
  const bool load_only = chat ? request.messages.empty() : request.prompt.empty();
  if (load_only) {
    Json j = Json::object();
    j["model"] = request.model;
    j["created_at"] = rfc3339(std::chrono::system_clock::now());
    if (chat) {
      j["message"] = Json{{"role", "assistant"}, {"content", ""}};
    } else {
      j["response"] = "";
    }
    j["done"] = true;
    j["done_reason"] = request.keep_alive.has_value() && *request.keep_alive == 0 ? "unload" : "load";
    ctx.metrics.count_request(endpoint, RequestOutcome::kOk);
    return send_json(res, j);
  }
  if (request.think.value_or(false) && !ctx.chat_format.supports_thinking) {
    return fail(bad_request("\"" + request.model + "\" does not support thinking", "think"));
  }
  ChatRequest cr;
  cr.params = request.params;
  cr.tools = request.tools;
  if (request.think.has_value() && ctx.chat_format.supports_thinking) cr.template_kwargs["enable_thinking"] = *request.think;
  PromptTokens prompt;
  bool parse_output = false;
  if (!chat && (request.raw || !ctx.chat_template)) {
    // raw, or no template: the prompt as it is (with the system text before it, if any).
    const std::string text = request.system.empty() ? request.prompt : request.system + "\n\n" + request.prompt;
    prompt.ids = text_prompt_tokens(ctx, text);
  } else {
    if (chat) {
      cr.messages = request.messages;
    } else {
      cr.messages = Json::array();
      if (!request.system.empty()) cr.messages.push_back(Json{{"role", "system"}, {"content", request.system}});
      cr.messages.push_back(Json{{"role", "user"}, {"content", request.prompt}});
    }
    if (auto e = chat_prompt_tokens(ctx, cr, &prompt)) return fail(*e);
    parse_output = ctx.chat_template.has_value();
  }
  std::shared_ptr<Job> job;
  if (auto e = make_generation_job(ctx, cr.params, std::move(prompt.ids), &job)) return fail(*e);
  const bool tools = cr.tools.is_array() && !cr.tools.empty();
  auto wire = std::make_shared<OllamaWire>(request.model, chat, ctx.chat_format, prompt.rendered, tools, parse_output, t0);
  run_wire_job(ctx, endpoint, std::move(job), std::move(wire), request.stream, "application/x-ndjson", res);
}

std::optional<ApiError> parse_json_body(const httplib::Request& req, Json* body) { return parse_body(req.body, body); }

}  // namespace

void handle_ollama_version(ServerContext&, const httplib::Request&, httplib::Response& res) {
  send_json(res, Json{{"version", kOllamaVersion}});
}

void handle_ollama_tags(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  const ModelFacts f = model_facts(ctx);
  Json m = Json::object();
  m["name"] = tagged(ctx.model_id);
  m["model"] = tagged(ctx.model_id);
  m["modified_at"] = rfc3339(ctx.keep_alive.loaded_at());
  m["size"] = ctx.model->gguf().file_size;
  m["digest"] = digest(ctx);
  m["details"] = details_json(ctx, f);
  send_json(res, Json{{"models", Json::array({m})}});
}

void handle_ollama_ps(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  const ModelFacts f = model_facts(ctx);
  Json m = Json::object();
  m["name"] = tagged(ctx.model_id);
  m["model"] = tagged(ctx.model_id);
  m["size"] = ctx.model->gguf().file_size;
  m["digest"] = digest(ctx);
  m["details"] = details_json(ctx, f);
  m["expires_at"] = rfc3339(ctx.keep_alive.expires_at());
  m["size_vram"] = 0;  // CPU only
  m["context_length"] = ctx.scheduler->n_ctx();
  send_json(res, Json{{"models", Json::array({m})}});
}

void handle_ollama_show(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_json_body(req, &body)) return send_ollama_error(res, *e);
  std::string name;
  for (const char* key : {"model", "name"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) {
      if (!it->is_string()) return send_ollama_error(res, bad_request(std::string(key) + " must be a string", key));
      name = it->get<std::string>();
      break;
    }
  }
  if (name.empty()) return send_ollama_error(res, bad_request("model is required", "model"));
  if (!serves(ctx, name)) return send_ollama_error(res, not_found(name));
  const ModelFacts f = model_facts(ctx);
  const ModelConfig& cfg = ctx.model->config();
  Json info = Json::object();
  info["general.architecture"] = cfg.arch;
  info["general.parameter_count"] = f.n_params;
  info[cfg.arch + ".context_length"] = cfg.n_ctx_train;
  info[cfg.arch + ".embedding_length"] = cfg.dim;
  info[cfg.arch + ".block_count"] = cfg.n_layers;
  Json caps = Json::array({"completion"});
  if (ctx.chat_format.tool_calls != ToolCallFormat::kNone) caps.push_back("tools");
  if (ctx.chat_format.supports_thinking) caps.push_back("thinking");
  Json j = Json::object();
  j["modelfile"] = "# served by sniper from " + ctx.model->gguf().path + "\nFROM " + ctx.model->gguf().path + "\n";
  j["parameters"] = "";
  j["template"] = ctx.model->chat_template();
  j["details"] = details_json(ctx, f);
  j["model_info"] = std::move(info);
  j["capabilities"] = std::move(caps);
  j["modified_at"] = rfc3339(ctx.keep_alive.loaded_at());
  send_json(res, j);
}

void handle_ollama_chat(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  Json body;
  OllamaRequest request;
  std::optional<ApiError> e = parse_json_body(req, &body);
  if (!e) e = parse_ollama_chat(body, &request);
  if (e) {
    ctx.metrics.count_request(Endpoint::kChat, RequestOutcome::kError);
    return send_ollama_error(res, *e);
  }
  run_ollama(ctx, Endpoint::kChat, /*chat=*/true, request, t0, res);
}

void handle_ollama_generate(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  Json body;
  OllamaRequest request;
  std::optional<ApiError> e = parse_json_body(req, &body);
  if (!e) e = parse_ollama_generate(body, &request);
  if (e) {
    ctx.metrics.count_request(Endpoint::kCompletions, RequestOutcome::kError);
    return send_ollama_error(res, *e);
  }
  run_ollama(ctx, Endpoint::kCompletions, /*chat=*/false, request, t0, res);
}

}  // namespace sniper::server
