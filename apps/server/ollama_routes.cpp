// SPDX-License-Identifier: MIT
// Ollama's API beside OpenAI's: GET /api/version, GET /api/tags, POST /api/show, GET /api/ps,
// POST /api/chat and POST /api/generate. Chat and generate go through the same request -> job ->
// scheduler path as /v1/chat/completions (rendering with the model's template, the output parser
// for thinking and tool calls) and answer as Ollama does: NDJSON (one JSON object per line,
// stream defaults to true) ending with a done object that carries done_reason and the timings in
// nanoseconds, or one object. The model is "NAME" or "NAME:latest" where NAME is a pool model's
// name; another name is 404 {"error": "model 'x' not found"}. Each request leases its model
// (loading it if needed) until the response is written; its keep_alive becomes that model's
// keep-alive in the pool (absent: the server's --keep-alive). A request with no prompt only
// loads the model (done_reason "load"), or with keep_alive 0 unloads it ("unload"), as in Ollama.
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <map>

#include "gguf/format.h"
#include "gguf/reader.h"
#include "server/generation_prologue.h"
#include "server/job_runner.h"
#include "server/keep_alive.h"
#include "server/model_facts.h"
#include "server/ollama_protocol.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

constexpr const char* kOllamaVersion = "0.12.0";  // the Ollama API version these routes follow

std::string tagged(const std::string& id) { return id + ":latest"; }

void send_ollama_error(httplib::Response& res, const ApiError& e) {
  send_json(res, ollama_error_json(e.message), e.status);
}

ApiError not_found(const std::string& name) {
  ApiError e = bad_request("model '" + name + "' not found", "model");
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
  std::string quant;  // llama.cpp's file type name ("Q4_K_M"; model_facts.h)
};

ModelFacts model_facts(const GgufFile& gguf) {
  ModelFacts f;
  for (const GgufTensorInfo& t : gguf.tensors()) f.n_params += static_cast<uint64_t>(t.n_elements());
  f.quant = quantization_level(gguf);
  return f;
}

Json details_json(const std::string& arch, const ModelFacts& f) {
  Json d = Json::object();
  d["parent_model"] = "";
  d["format"] = "gguf";
  d["family"] = arch;
  d["families"] = Json::array({arch});
  d["parameter_size"] = parameter_size(f.n_params);
  d["quantization_level"] = f.quant;
  return d;
}

Json details_json(const ServedModel& m) { return details_json(m.model->config().arch, model_facts(m.model->gguf())); }

// The details of a model from its file's header (a model that is not loaded: nothing is loaded).
Json file_details_json(const std::string& path) {
  auto gguf = gguf_open(path);
  if (!gguf.ok()) {
    Json d = details_json("", ModelFacts{});
    d["families"] = Json::array();
    return d;
  }
  auto arch = gguf.value().get_string_or("general.architecture", "");
  return details_json(arch.ok() ? arch.value() : std::string(), model_facts(gguf.value()));
}

// The SHA-256 of the model file(s), computed once in the background (model_facts.h): "" until known.
std::string digest(ServerContext& ctx, const ModelStatus& s) { return ctx.digests->digest(s.path); }

// The file's modification time (now when it cannot be read).
std::chrono::system_clock::time_point modified_at(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::chrono::system_clock::now();
  return std::chrono::system_clock::from_time_t(st.st_mtime);
}

std::chrono::system_clock::time_point from_unix(int64_t t) {
  return std::chrono::system_clock::from_time_t(static_cast<time_t>(t));
}

// The pool's state of `name` (a pool name).
std::optional<ModelStatus> find_status(const ServerContext& ctx, const std::string& name) {
  for (ModelStatus& s : ctx.models->status()) {
    if (s.name == name) return std::move(s);
  }
  return std::nullopt;
}

// Makes the request's keep_alive (absent: the server's default) the model's keep-alive.
void apply_keep_alive(ServerContext& ctx, const std::string& name, const std::optional<double>& keep_alive) {
  std::optional<double> seconds;
  if (keep_alive.has_value()) seconds = std::isinf(*keep_alive) ? -1.0 : *keep_alive;
  ctx.models->set_keep_alive(name, seconds);
}

int64_t ns_of_ms(double ms) { return static_cast<int64_t>(ms * 1e6); }

// NDJSON framing for /api/chat (message objects) and /api/generate (response strings).
class OllamaWire final : public JobWire {
 public:
  OllamaWire(std::string model, bool chat, const ChatFormat& format, const RenderedChat& rendered, bool tools,
             bool parse_output, std::chrono::steady_clock::time_point t0, int64_t load_ns)
      : model_(std::move(model)),
        chat_(chat),
        parse_output_(parse_output),
        t0_(t0),
        load_ns_(load_ns),
        parser_(format, rendered, tools) {}

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
  std::string stream_error(int, const std::string& message) override {
    return dump_json(ollama_error_json(message)) + "\n";
  }

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
    (*j)["total_duration"] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
    (*j)["load_duration"] = load_ns_;  // waiting for the model (loading it, or room for it)
    (*j)["prompt_eval_count"] = r.n_prompt - r.n_cached;
    (*j)["prompt_eval_duration"] = ns_of_ms(r.prompt_ms);
    (*j)["eval_count"] = r.n_generated;
    (*j)["eval_duration"] = ns_of_ms(r.decode_ms);
  }

  std::string model_;
  bool chat_;
  bool parse_output_;  // split thinking / tool calls (a chat template rendered the prompt)
  std::chrono::steady_clock::time_point t0_;
  int64_t load_ns_;
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
  const std::string name = ctx.models->has(request.model) ? request.model : ollama_pool_name(request.model);
  if (!ctx.models->has(name)) return fail(not_found(request.model));
  const bool load_only = chat ? request.messages.empty() : request.prompt.empty();
  const bool unload = request.keep_alive.has_value() && *request.keep_alive == 0;
  std::shared_ptr<ModelLease> lease;
  if (!(load_only && unload)) {
    ApiError lease_error;
    lease = ctx.models->acquire(name, &lease_error);
    if (lease == nullptr) return fail(lease_error);
  } else {
    lease = ctx.models->acquire_if_loaded(name);  // released at once: keep-alive 0 unloads it
  }
  // Set while the lease is held, so that an idle model is not unloaded before this request.
  apply_keep_alive(ctx, name, request.keep_alive);
  const int64_t load_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
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
    j["done_reason"] = unload ? "unload" : "load";
    if (!unload) j["load_duration"] = load_ns;
    ctx.metrics.count_request(endpoint, RequestOutcome::kOk);
    return send_json(res, j);
  }
  GenerationRequest g;
  g.model = request.model;
  g.params = request.params;
  g.tools = request.tools;
  g.thinking = request.think;
  g.thinking_required = true;
  const ServedModel& m = lease->model();
  if (!chat && (request.raw || (!m.chat_template && request.images.empty()))) {
    // raw, or no template: the prompt as it is (with the system text before it, if any); a raw
    // prompt's images go at its <__media__> markers, or before it.
    g.text = request.system.empty() ? request.prompt : request.system + "\n\n" + request.prompt;
    g.text_media = request.images;
  } else {
    g.chat = true;
    if (chat) {
      g.messages = request.messages;
    } else {
      if (!request.system.empty()) g.messages.push_back(Json{{"role", "system"}, {"content", request.system}});
      if (request.images.empty()) {
        g.messages.push_back(Json{{"role", "user"}, {"content", request.prompt}});
      } else {  // the images before the text, as in /api/chat
        Json parts = request.images;
        parts.push_back(Json{{"type", "text"}, {"text", request.prompt}});
        g.messages.push_back(Json{{"role", "user"}, {"content", std::move(parts)}});
      }
    }
  }
  PreparedGeneration p;
  if (auto e = prepare_generation(ctx, g, std::move(lease), &p)) return fail(*e);
  auto wire = std::make_shared<OllamaWire>(request.model, chat, p.lease->model().chat_format, p.prompt.rendered,
                                           p.tools, p.template_rendered, t0, load_ns);
  run_wire_job(ctx, std::move(p.lease), endpoint, std::move(p.job), std::move(wire), request.stream,
               "application/x-ndjson", res);
}

std::optional<ApiError> parse_json_body(const httplib::Request& req, Json* body) { return parse_body(req.body, body); }

}  // namespace

void handle_ollama_version(ServerContext&, const httplib::Request&, httplib::Response& res) {
  send_json(res, Json{{"version", kOllamaVersion}});
}

void handle_ollama_tags(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  Json models = Json::array();
  for (const ModelStatus& st : ctx.models->status()) {
    Json m = Json::object();
    m["name"] = tagged(st.name);
    m["model"] = tagged(st.name);
    m["modified_at"] = rfc3339(modified_at(st.path));
    m["size"] = st.size_bytes;
    m["digest"] = digest(ctx, st);
    std::shared_ptr<ModelLease> lease = ctx.models->acquire_if_loaded(st.name);
    m["details"] = lease != nullptr ? details_json(lease->model()) : file_details_json(st.path);
    models.push_back(std::move(m));
  }
  send_json(res, Json{{"models", std::move(models)}});
}

void handle_ollama_ps(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  Json models = Json::array();
  for (const ModelStatus& st : ctx.models->status()) {
    if (st.state != ModelState::kLoaded) continue;
    std::shared_ptr<ModelLease> lease = ctx.models->acquire_if_loaded(st.name);
    if (lease == nullptr) continue;  // unloaded meanwhile
    const ServedModel& sm = lease->model();
    Json m = Json::object();
    m["name"] = tagged(st.name);
    m["model"] = tagged(st.name);
    m["size"] = st.memory_bytes != 0 ? st.memory_bytes : st.size_bytes;
    m["digest"] = digest(ctx, st);
    m["details"] = details_json(sm);
    std::chrono::system_clock::time_point expires;
    if (st.expires_at_unix != 0) {
      expires = from_unix(st.expires_at_unix);
    } else if (st.keep_alive_s < 0) {
      expires = from_unix(int64_t{1} << 33);  // never (year 2242), as Ollama reports a negative keep_alive
    } else {
      // In use: keep-alive starts counting when its requests finish.
      expires = std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                       std::chrono::duration<double>(st.keep_alive_s));
    }
    m["expires_at"] = rfc3339(expires);
    m["size_vram"] = 0;  // CPU only
    m["context_length"] = sm.scheduler->n_ctx();
    models.push_back(std::move(m));
  }
  send_json(res, Json{{"models", std::move(models)}});
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
  std::optional<ModelStatus> st = find_status(ctx, name);
  if (!st) st = find_status(ctx, ollama_pool_name(name));
  if (!st) return send_ollama_error(res, not_found(name));
  // The details come from the loaded model: load it if needed (as a request would).
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = ctx.models->acquire(st->name, &lease_error);
  if (lease == nullptr) return send_ollama_error(res, lease_error);
  const ServedModel& sm = lease->model();
  const ModelFacts f = model_facts(sm.model->gguf());
  const ModelConfig& cfg = sm.model->config();
  Json info = Json::object();
  info["general.architecture"] = cfg.arch;
  info["general.parameter_count"] = f.n_params;
  info[cfg.arch + ".context_length"] = cfg.n_ctx_train;
  info[cfg.arch + ".embedding_length"] = cfg.dim;
  info[cfg.arch + ".block_count"] = cfg.n_layers;
  Json caps = model_capabilities(sm);
  Json j = Json::object();
  j["modelfile"] = "# served by sniper from " + sm.model->gguf().path + "\nFROM " + sm.model->gguf().path + "\n";
  j["parameters"] = "";
  j["template"] = sm.model->chat_template();
  j["details"] = details_json(cfg.arch, f);
  j["model_info"] = std::move(info);
  j["capabilities"] = std::move(caps);
  if (sm.media != nullptr) {
    const Mmproj& p = sm.media->mmproj();
    Json proj = Json{{"path", p.path()}};
    if (!p.info().vision_type.empty()) proj["clip.vision.projector_type"] = p.info().vision_type;
    if (!p.info().audio_type.empty()) proj["clip.audio.projector_type"] = p.info().audio_type;
    j["projector_info"] = std::move(proj);
  }
  j["modified_at"] = rfc3339(modified_at(st->path));
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
