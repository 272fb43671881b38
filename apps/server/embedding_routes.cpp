// SPDX-License-Identifier: MIT
// Embedding routes: OpenAI's POST /v1/embeddings ({model, input, encoding_format float|base64,
// dimensions}) and Ollama's POST /api/embed ({model, input, truncate, keep_alive}) and older
// POST /api/embeddings ({model, prompt}). Every input becomes a JobKind::kEmbed job on the
// model's scheduler (engine/embedding.h: pooled final hidden states, L2-normalised, as
// llama-server computes them; pooling from the GGUF or serve --pooling); a batch of inputs keeps
// at most one job per slot in flight, so it shares the slots with generation instead of filling
// the queue. Inputs: a string, an array of strings, and for OpenAI also token ids (an array of
// integers, or an array of such arrays). Errors name the field ("input[2]"): empty input, more
// than kMaxEmbedInputs items, a wrong type, a token id outside the vocabulary, an input longer
// than the slot's context (OpenAI and Ollama with truncate false; Ollama truncates by default).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>

#include "server/generation_prologue.h"
#include "server/keep_alive.h"
#include "server/ollama_protocol.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

constexpr size_t kMaxEmbedInputs = 2048;  // OpenAI's limit of inputs per request

// An error for an input field: "input" for a single input, "input[i]" in an array.
std::string input_field(const std::string& field, size_t i, bool array) {
  return array ? field + "[" + std::to_string(i) + "]" : field;
}

// The inputs as token lists (text tokenized as llama-server does: special tokens, BOS/EOS as the
// tokenizer adds them).
std::optional<ApiError> read_inputs(const ServedModel& m, const Json& v, const std::string& field, bool allow_ids,
                                    std::vector<std::vector<int32_t>>* out) {
  const int64_t vocab = m.model->config().vocab_size;
  auto ids_of = [&](const Json& arr, const std::string& name, std::vector<int32_t>* ids) -> std::optional<ApiError> {
    if (arr.empty()) return bad_request(name + " is an empty array of token ids", field);
    for (size_t j = 0; j < arr.size(); ++j) {
      const Json& t = arr[j];
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
        return bad_request(
            name + "[" + std::to_string(j) + "] must be a token id in [0, " + std::to_string(vocab) + ")", field);
      }
      ids->push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return std::nullopt;
  };
  auto text = [&](const Json& s, const std::string& name) -> std::optional<ApiError> {
    const std::string& str = s.get_ref<const std::string&>();
    if (str.empty()) return bad_request(name + " is an empty string", field);
    out->push_back(text_prompt_tokens(m, str));
    if (out->back().empty()) return bad_request(name + " encodes to no tokens", field);
    return std::nullopt;
  };
  const std::string kinds =
      allow_ids ? "a string, an array of strings, or token ids" : "a string or an array of strings";
  if (v.is_string()) return text(v, field);
  if (!v.is_array()) return bad_request(field + " must be " + kinds, field);
  if (v.empty()) return bad_request(field + " is an empty array", field);
  if (v.size() > kMaxEmbedInputs) {
    return bad_request(field + " has " + std::to_string(v.size()) + " items but at most " +
                           std::to_string(kMaxEmbedInputs) + " are allowed",
                       field);
  }
  if (allow_ids && v[0].is_number()) {  // one input of token ids
    out->emplace_back();
    return ids_of(v, field, &out->back());
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string name = input_field(field, i, true);
    if (v[i].is_string()) {
      if (auto e = text(v[i], name)) return e;
    } else if (allow_ids && v[i].is_array()) {
      out->emplace_back();
      if (auto e = ids_of(v[i], name, &out->back())) return e;
    } else {
      return bad_request(name + " must be " + std::string(allow_ids ? "a string or an array of token ids" : "a string"),
                         field);
    }
  }
  return std::nullopt;
}

// The model's pooling (serve --pooling, else the file's); a model that cannot embed is a 400.
std::optional<ApiError> model_pooling(const ServerContext& ctx, const ServedModel& m, Pooling* out) {
  if (ctx.options.pooling.has_value()) {
    *out = *ctx.options.pooling;
    return std::nullopt;
  }
  auto p = pooling_from_gguf(m.model->gguf());
  if (!p.ok()) return bad_request("model '" + m.id + "' cannot embed: " + p.error().message, "model");
  *out = *p;
  return std::nullopt;
}

// Inputs longer than the slot's context: an error naming the input, or cut to the context.
std::optional<ApiError> fit_context(const ServedModel& m, const std::string& field, bool array, bool truncate,
                                    std::vector<std::vector<int32_t>>* inputs) {
  const size_t n_ctx = static_cast<size_t>(m.scheduler->n_ctx());
  for (size_t i = 0; i < inputs->size(); ++i) {
    std::vector<int32_t>& t = (*inputs)[i];
    if (t.size() <= n_ctx) continue;
    if (truncate) {
      t.resize(n_ctx);
      continue;
    }
    return bad_request(input_field(field, i, array) + " has " + std::to_string(t.size()) +
                           " tokens but the context holds " + std::to_string(n_ctx),
                       field, "context_length_exceeded");
  }
  return std::nullopt;
}

// Runs every input as an embedding job, at most one per slot at a time, into *vectors (in input
// order). Errors: the queue stays full (503), a job fails (its status).
std::optional<ApiError> run_embeddings(const ServedModel& m, Pooling pooling,
                                       const std::vector<std::vector<int32_t>>& inputs,
                                       std::vector<std::vector<float>>* vectors) {
  vectors->assign(inputs.size(), {});
  std::deque<std::pair<size_t, std::shared_ptr<Job>>> in_flight;
  const size_t window = static_cast<size_t>(std::max(1, m.scheduler->n_slots()));
  std::optional<ApiError> error;
  auto collect = [&]() {
    auto [i, job] = std::move(in_flight.front());
    in_flight.pop_front();
    const JobResult& r = job->wait_done();
    if (!r.error.empty()) {
      if (!error) {
        error = bad_request(r.error);
        error->status = r.error_status;
        if (r.error_status >= 500) error->type = "server_error";
      }
      return;
    }
    (*vectors)[i] = r.embedding;
  };
  for (size_t i = 0; i < inputs.size() && !error; ++i) {
    auto job = std::make_shared<Job>();
    job->kind = JobKind::kEmbed;
    job->prompt = inputs[i];
    job->pooling = pooling;
    while (in_flight.size() >= window && !error) collect();
    if (error) break;
    while (!m.scheduler->submit(job)) {
      if (in_flight.empty()) {
        error = status_error(503, "the server is busy: all slots and the queue are full; retry later");
        break;
      }
      collect();
      if (error) break;
    }
    if (!error) in_flight.emplace_back(i, job);
  }
  if (error) {
    for (auto& [i, job] : in_flight) job->cancel();
  }
  while (!in_flight.empty()) collect();
  return error;
}

// Little-endian float32 bytes in standard base64 (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = 0;
    std::memcpy(&u, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<size_t>(b)] = static_cast<uint8_t>(u >> (8 * b));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{bytes[i]} << 16) | (i + 1 < bytes.size() ? uint32_t{bytes[i + 1]} << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t{bytes[i + 2]} : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

int64_t total_tokens(const std::vector<std::vector<int32_t>>& inputs) {
  int64_t n = 0;
  for (const auto& t : inputs) n += static_cast<int64_t>(t.size());
  return n;
}

// Ollama's requests: the model (404 in Ollama's words when unknown) and its keep_alive.
std::shared_ptr<ModelLease> lease_ollama(ServerContext& ctx, const Json& body, std::string* name, ApiError* error) {
  auto it = body.find("model");
  if (it == body.end() || !it->is_string() || it->get<std::string>().empty()) {
    *error = bad_request("model is required and must be a string", "model");
    return nullptr;
  }
  *name = it->get<std::string>();
  const std::string pool = ctx.models->has(*name) ? *name : ollama_pool_name(*name);
  if (!ctx.models->has(pool)) {
    *error = bad_request("model '" + *name + "' not found", "model");
    error->status = 404;
    return nullptr;
  }
  std::optional<double> keep_alive;
  if (auto ka = body.find("keep_alive"); ka != body.end() && !ka->is_null()) {
    auto seconds = parse_keep_alive(*ka);
    if (!seconds.ok()) {
      *error = bad_request(seconds.error().message, "keep_alive");
      return nullptr;
    }
    keep_alive = *seconds;
  }
  std::shared_ptr<ModelLease> lease = ctx.models->acquire(pool, error);
  if (lease == nullptr) return nullptr;
  if (keep_alive.has_value()) ctx.models->set_keep_alive(pool, std::isinf(*keep_alive) ? -1.0 : *keep_alive);
  return lease;
}

int64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

void send_ollama(httplib::Response& res, const ApiError& e) { send_json(res, ollama_error_json(e.message), e.status); }

}  // namespace

void handle_openai_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return send_error(res, *e);
  if (!body.is_object()) return send_error(res, bad_request("the body must be a JSON object"));
  std::string format = "float";
  if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    format = it->is_string() ? it->get<std::string>() : std::string();
    if (format != "float" && format != "base64") {
      return send_error(res, bad_request("encoding_format must be \"float\" or \"base64\"", "encoding_format"));
    }
  }
  auto input = body.find("input");
  if (input == body.end()) return send_error(res, bad_request("input is required", "input"));
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = lease_model(ctx, body, &lease_error);
  if (lease == nullptr) return send_error(res, lease_error);
  const ServedModel& m = lease->model();
  const int64_t dim = m.model->config().dim;
  if (auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() != dim) {
      return send_error(res, bad_request("dimensions must be " + std::to_string(dim) +
                                             ", the width of this model's embeddings (other sizes are not supported)",
                                         "dimensions"));
    }
  }
  Pooling pooling = Pooling::kLast;
  if (auto e = model_pooling(ctx, m, &pooling)) return send_error(res, *e);
  std::vector<std::vector<int32_t>> inputs;
  if (auto e = read_inputs(m, *input, "input", /*allow_ids=*/true, &inputs)) return send_error(res, *e);
  if (auto e = fit_context(m, "input", input->is_array() && inputs.size() > 1, /*truncate=*/false, &inputs)) {
    return send_error(res, *e);
  }
  std::vector<std::vector<float>> vectors;
  if (auto e = run_embeddings(m, pooling, inputs, &vectors)) return send_error(res, *e);
  Json data = Json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    Json item = Json::object();
    item["object"] = "embedding";
    item["index"] = i;
    if (format == "base64") {
      item["embedding"] = base64_floats(vectors[i]);
    } else {
      item["embedding"] = vectors[i];
    }
    data.push_back(std::move(item));
  }
  const int64_t n_tokens = total_tokens(inputs);
  Json out = Json::object();
  out["object"] = "list";
  out["data"] = std::move(data);
  out["model"] = m.id;
  out["usage"] = Json{{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}};
  send_json(res, out);
}

void handle_ollama_embed(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const auto t0 = std::chrono::steady_clock::now();
  Json body;
  if (auto e = parse_body(req.body, &body)) return send_ollama(res, *e);
  if (!body.is_object()) return send_ollama(res, bad_request("the body must be a JSON object"));
  bool truncate = true;
  if (auto it = body.find("truncate"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return send_ollama(res, bad_request("truncate must be true or false", "truncate"));
    truncate = it->get<bool>();
  }
  std::string name;
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = lease_ollama(ctx, body, &name, &lease_error);
  if (lease == nullptr) return send_ollama(res, lease_error);
  const int64_t load_ns = ns_since(t0);
  const ServedModel& m = lease->model();
  const int64_t dim = m.model->config().dim;
  if (auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() != dim) {
      return send_ollama(res, bad_request("dimensions must be " + std::to_string(dim) +
                                              ", the width of this model's embeddings (other sizes are not supported)",
                                          "dimensions"));
    }
  }
  Pooling pooling = Pooling::kLast;
  if (auto e = model_pooling(ctx, m, &pooling)) return send_ollama(res, *e);
  auto input = body.find("input");
  if (input == body.end()) return send_ollama(res, bad_request("input is required", "input"));
  std::vector<std::vector<int32_t>> inputs;
  if (auto e = read_inputs(m, *input, "input", /*allow_ids=*/false, &inputs)) return send_ollama(res, *e);
  if (auto e = fit_context(m, "input", input->is_array(), truncate, &inputs)) return send_ollama(res, *e);
  std::vector<std::vector<float>> vectors;
  if (auto e = run_embeddings(m, pooling, inputs, &vectors)) return send_ollama(res, *e);
  Json out = Json::object();
  out["model"] = name;
  out["embeddings"] = vectors;
  out["total_duration"] = ns_since(t0);
  out["load_duration"] = load_ns;
  out["prompt_eval_count"] = total_tokens(inputs);
  send_json(res, out);
}

void handle_ollama_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_body(req.body, &body)) return send_ollama(res, *e);
  if (!body.is_object()) return send_ollama(res, bad_request("the body must be a JSON object"));
  auto prompt = body.find("prompt");
  if (prompt == body.end() || !prompt->is_string()) {
    return send_ollama(res, bad_request("prompt is required and must be a string", "prompt"));
  }
  std::string name;
  ApiError lease_error;
  std::shared_ptr<ModelLease> lease = lease_ollama(ctx, body, &name, &lease_error);
  if (lease == nullptr) return send_ollama(res, lease_error);
  const ServedModel& m = lease->model();
  Pooling pooling = Pooling::kLast;
  if (auto e = model_pooling(ctx, m, &pooling)) return send_ollama(res, *e);
  std::vector<std::vector<int32_t>> inputs;
  if (auto e = read_inputs(m, *prompt, "prompt", /*allow_ids=*/false, &inputs)) return send_ollama(res, *e);
  if (auto e = fit_context(m, "prompt", false, /*truncate=*/true, &inputs)) return send_ollama(res, *e);
  std::vector<std::vector<float>> vectors;
  if (auto e = run_embeddings(m, pooling, inputs, &vectors)) return send_ollama(res, *e);
  send_json(res, Json{{"embedding", vectors[0]}});
}

}  // namespace sniper::server
