// SPDX-License-Identifier: MIT
// Response formatters: turn a job's generated text and result into OpenAI objects, as stream
// chunks ("chat.completion.chunk" / "text_completion") or one final response
// ("chat.completion" / "text_completion"). The chat formatter runs the text through
// ChatOutputParser, so reasoning goes to reasoning_content and tool calls to tool_calls
// (finish_reason "tool_calls"). Thread-compatible: one consumer thread per formatter.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/chat_format.h"
#include "server/job.h"
#include "server/openai_protocol.h"

namespace sniper::server {

// usage: prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens.
Json usage_json(const JobResult& r);
// llama-server's "timings", measured by the server for this one reply: prompt_n (tokens evaluated,
// cached ones excluded), prompt_ms, prompt_per_second, predicted_n, predicted_ms,
// predicted_per_second (the tokens decoded after the first, over the decode time: the figure
// /metrics reports as sniper_decode_tokens_per_second), and ttft_ms (request start to first text,
// sniper_time_to_first_token_seconds). The web UI shows these, so a reply and the live panel agree.
Json timings_json(const JobResult& r);

class Formatter {
 public:
  // id_prefix: "chatcmpl-" / "cmpl-"; chunk_object: the `object` of stream chunks.
  Formatter(std::string model_id, const char* id_prefix, const char* chunk_object)
      : model_(std::move(model_id)), id_(make_id(id_prefix)), created_(unix_time_now()), chunk_object_(chunk_object) {}
  virtual ~Formatter() = default;
  virtual std::vector<Json> start() = 0;                         // stream: first chunks
  virtual std::vector<Json> on_text(std::string_view text) = 0;  // stream chunks for new text
  virtual std::vector<Json> finish(const JobResult& r) = 0;      // stream: last chunks
  virtual Json response(const JobResult& r) = 0;                 // the non-streaming body
  // stream_options.include_usage: a chunk with no choices and the usage.
  Json usage_chunk(const JobResult& r) const {
    Json j = header(chunk_object_);
    j["choices"] = Json::array();
    j["usage"] = usage_json(r);
    j["timings"] = timings_json(r);
    return j;
  }

 protected:
  // id, object, created, model: the fields every response and chunk starts with.
  Json header(const char* object) const {
    Json j = Json::object();
    j["id"] = id_;
    j["object"] = object;
    j["created"] = created_;
    j["model"] = model_;
    return j;
  }
  const char* chunk_object() const { return chunk_object_; }

 private:
  std::string model_;
  std::string id_;
  int64_t created_;
  const char* chunk_object_;
};

class ChatFormatter final : public Formatter {
 public:
  ChatFormatter(std::string model_id, const ChatFormat& format, const RenderedChat& rendered, bool tools)
      : Formatter(std::move(model_id), "chatcmpl-", "chat.completion.chunk"), parser_(format, rendered, tools) {}

  std::vector<Json> start() override { return {chunk(Json{{"role", "assistant"}, {"content", ""}}, Json())}; }

  std::vector<Json> on_text(std::string_view text) override {
    std::vector<ChatDelta> deltas;
    parser_.feed(text, &deltas);
    return to_chunks(deltas);
  }

  std::vector<Json> finish(const JobResult& r) override {
    std::vector<ChatDelta> deltas;
    parser_.finish(&deltas);
    finished_ = true;
    std::vector<Json> out = to_chunks(deltas);
    out.push_back(chunk(Json::object(), reason(r)));
    return out;
  }

  Json response(const JobResult& r) override {
    if (!finished_) {
      std::vector<ChatDelta> ignored;
      parser_.finish(&ignored);
      finished_ = true;
    }
    Json choice = Json::object();
    choice["index"] = 0;
    choice["message"] = parser_.message();
    choice["logprobs"] = Json();
    choice["finish_reason"] = reason(r);
    Json j = header("chat.completion");
    j["choices"] = Json::array({choice});
    j["usage"] = usage_json(r);
    j["timings"] = timings_json(r);
    return j;
  }

 private:
  std::string reason(const JobResult& r) const { return parser_.has_tool_calls() ? "tool_calls" : r.finish_reason; }

  Json chunk(Json delta, Json finish_reason) const {
    Json choice = Json::object();
    choice["index"] = 0;
    choice["delta"] = std::move(delta);
    choice["logprobs"] = Json();
    choice["finish_reason"] = std::move(finish_reason);
    Json j = header(chunk_object());
    j["choices"] = Json::array({choice});
    return j;
  }

  std::vector<Json> to_chunks(const std::vector<ChatDelta>& deltas) const {
    std::vector<Json> out;
    for (const ChatDelta& d : deltas) {
      Json delta = Json::object();
      if (d.kind == ChatDelta::Kind::kContent) {
        if (d.text.empty()) continue;
        delta["content"] = d.text;
      } else if (d.kind == ChatDelta::Kind::kReasoning) {
        if (d.text.empty()) continue;
        delta["reasoning_content"] = d.text;
      } else {
        Json call = Json::object();
        call["index"] = d.tool_index;
        Json fn = Json::object();
        if (!d.tool_id.empty()) {
          call["id"] = d.tool_id;
          call["type"] = "function";
          fn["name"] = d.tool_name;
        }
        fn["arguments"] = d.tool_arguments;
        call["function"] = fn;
        delta["tool_calls"] = Json::array({call});
      }
      out.push_back(chunk(std::move(delta), Json()));
    }
    return out;
  }

  ChatOutputParser parser_;
  bool finished_ = false;
};

class CompletionFormatter final : public Formatter {
 public:
  explicit CompletionFormatter(std::string model_id) : Formatter(std::move(model_id), "cmpl-", "text_completion") {}

  std::vector<Json> start() override { return {}; }
  std::vector<Json> on_text(std::string_view text) override {
    text_.append(text);
    return {body(std::string(text), Json())};
  }
  std::vector<Json> finish(const JobResult& r) override { return {body("", r.finish_reason)}; }
  Json response(const JobResult& r) override {
    Json j = body(text_, r.finish_reason);
    j["usage"] = usage_json(r);
    j["timings"] = timings_json(r);
    return j;
  }

 private:
  Json body(std::string text, Json finish_reason) const {
    Json choice = Json::object();
    choice["text"] = std::move(text);
    choice["index"] = 0;
    choice["logprobs"] = Json();
    choice["finish_reason"] = std::move(finish_reason);
    Json j = header(chunk_object());
    j["choices"] = Json::array({choice});
    return j;
  }

  std::string text_;
};

}  // namespace sniper::server
