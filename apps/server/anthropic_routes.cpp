// SPDX-License-Identifier: MIT
// POST /v1/messages: Anthropic's Messages API over the server's request -> job -> scheduler path.
// The reply's content is thinking blocks (the model's reasoning), a text block and tool_use
// blocks (the model's tool calls, input as an object); stop_reason is end_turn, max_tokens,
// stop_sequence (with stop_sequence set) or tool_use. Streaming is server-sent events in
// Anthropic's order: message_start, then per block content_block_start / content_block_delta
// (text_delta, thinking_delta, input_json_delta) / content_block_stop, then message_delta (the
// stop reason and output token count) and message_stop. Errors use Anthropic's error object,
// in the body or (mid-stream) as an `error` event. The model must be the served model's id.
#include <chrono>

#include "server/anthropic_protocol.h"
#include "server/generation_prologue.h"
#include "server/job_runner.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

std::string event(const char* name, const Json& data) {
  return std::string("event: ") + name + "\ndata: " + dump_json(data) + "\n\n";
}

class AnthropicWire final : public JobWire {
 public:
  AnthropicWire(std::string model, const ChatFormat& format, const RenderedChat& rendered, bool tools, int64_t n_prompt,
                bool parse_output)
      : model_(std::move(model)),
        id_(make_id("msg_")),
        n_prompt_(n_prompt),
        parse_output_(parse_output),
        parser_(format, rendered, tools) {}

  std::string stream_start() override {
    Json msg = Json::object();
    msg["id"] = id_;
    msg["type"] = "message";
    msg["role"] = "assistant";
    msg["content"] = Json::array();
    msg["model"] = model_;
    msg["stop_reason"] = Json();
    msg["stop_sequence"] = Json();
    msg["usage"] = Json{{"input_tokens", n_prompt_}, {"output_tokens", 0}};
    return event("message_start", Json{{"type", "message_start"}, {"message", msg}});
  }

  std::string stream_text(std::string_view text) override {
    std::vector<ChatDelta> deltas;
    decode(text, &deltas);
    return events(deltas);
  }

  std::string stream_end(const JobResult& r) override {
    std::vector<ChatDelta> deltas;
    if (parse_output_) parser_.finish(&deltas);
    std::string out = events(deltas);
    if (open_ != Block::kNone) out += close_block();
    Json delta = Json{{"stop_reason", stop_reason(r)}, {"stop_sequence", stop_sequence(r)}};
    out += event("message_delta",
                 Json{{"type", "message_delta"}, {"delta", delta}, {"usage", Json{{"output_tokens", r.n_generated}}}});
    out += event("message_stop", Json{{"type", "message_stop"}});
    return out;
  }

  std::string stream_error(int status, const std::string& message) override {
    return event("error", anthropic_error_json(status, message));
  }

  void feed(std::string_view text) override {
    std::vector<ChatDelta> ignored;
    decode(text, &ignored);
  }

  Json body(const JobResult& r) override {
    std::vector<ChatDelta> ignored;
    if (parse_output_) parser_.finish(&ignored);
    const Json m = parse_output_ ? parser_.message() : Json{{"content", raw_}};
    Json content = Json::array();
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
      content.push_back(Json{{"type", "thinking"}, {"thinking", m["reasoning_content"]}, {"signature", ""}});
    }
    const std::string text = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    const bool calls = m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty();
    if (!text.empty() || !calls) content.push_back(Json{{"type", "text"}, {"text", text}});
    if (calls) {
      for (const Json& c : m["tool_calls"]) {
        Json input = Json::parse(c["function"].value("arguments", std::string("{}")), nullptr, false);
        if (input.is_discarded() || !input.is_object()) input = Json::object();
        content.push_back(
            Json{{"type", "tool_use"}, {"id", c["id"]}, {"name", c["function"]["name"]}, {"input", input}});
      }
    }
    Json j = Json::object();
    j["id"] = id_;
    j["type"] = "message";
    j["role"] = "assistant";
    j["model"] = model_;
    j["content"] = std::move(content);
    j["stop_reason"] = stop_reason(r);
    j["stop_sequence"] = stop_sequence(r);
    j["usage"] =
        Json{{"input_tokens", r.n_prompt}, {"output_tokens", r.n_generated}, {"cache_read_input_tokens", r.n_cached}};
    return j;
  }

  Json error_body(int status, const std::string& message) override { return anthropic_error_json(status, message); }

 private:
  enum class Block { kNone, kText, kThinking, kToolUse };

  void decode(std::string_view text, std::vector<ChatDelta>* deltas) {
    if (parse_output_) {
      parser_.feed(text, deltas);
    } else {
      raw_.append(text);
      deltas->push_back(ChatDelta{ChatDelta::Kind::kContent, std::string(text), 0, {}, {}, {}});
    }
  }

  std::string stop_reason(const JobResult& r) const {
    if (parse_output_ && parser_.has_tool_calls()) return "tool_use";
    if (r.finish_reason == "length") return "max_tokens";
    if (!r.stop_string.empty()) return "stop_sequence";
    return "end_turn";
  }
  Json stop_sequence(const JobResult& r) const {
    return !r.stop_string.empty() && !(parse_output_ && parser_.has_tool_calls()) ? Json(r.stop_string) : Json();
  }

  std::string close_block() {
    std::string out = event("content_block_stop", Json{{"type", "content_block_stop"}, {"index", index_}});
    open_ = Block::kNone;
    ++index_;
    return out;
  }

  std::string open_block(Block b, Json block) {
    std::string out;
    if (open_ != Block::kNone) out += close_block();
    open_ = b;
    return out + event("content_block_start",
                       Json{{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
  }

  std::string events(const std::vector<ChatDelta>& deltas) {
    std::string out;
    for (const ChatDelta& d : deltas) {
      Json delta;
      if (d.kind == ChatDelta::Kind::kContent) {
        if (d.text.empty()) continue;
        if (open_ != Block::kText) out += open_block(Block::kText, Json{{"type", "text"}, {"text", ""}});
        delta = Json{{"type", "text_delta"}, {"text", d.text}};
      } else if (d.kind == ChatDelta::Kind::kReasoning) {
        if (d.text.empty()) continue;
        if (open_ != Block::kThinking)
          out += open_block(Block::kThinking, Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
        delta = Json{{"type", "thinking_delta"}, {"thinking", d.text}};
      } else {
        if (!d.tool_id.empty() || open_ != Block::kToolUse) {
          out += open_block(
              Block::kToolUse,
              Json{{"type", "tool_use"}, {"id", d.tool_id}, {"name", d.tool_name}, {"input", Json::object()}});
        }
        if (d.tool_arguments.empty()) continue;
        delta = Json{{"type", "input_json_delta"}, {"partial_json", d.tool_arguments}};
      }
      out += event("content_block_delta",
                   Json{{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
    }
    return out;
  }

  std::string model_;
  std::string id_;
  int64_t n_prompt_;
  bool parse_output_;
  ChatOutputParser parser_;
  std::string raw_;
  Block open_ = Block::kNone;
  int index_ = 0;
};

}  // namespace

void handle_anthropic_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto fail = [&](const ApiError& e) {
    ctx.metrics.count_request(Endpoint::kChat, RequestOutcome::kError);
    send_json(res, anthropic_error_json(e.status, e.message), e.status);
  };
  Json body;
  if (auto e = parse_body(req.body, &body)) return fail(*e);
  AnthropicRequest request;
  if (auto e = parse_anthropic_messages(body, &request)) return fail(*e);
  if (!ctx.models->has(request.model)) {
    ApiError e = bad_request("model: " + request.model);
    e.status = 404;
    return fail(e);
  }
  GenerationRequest g;
  g.model = request.model;
  g.params = request.chat.params;
  g.chat = true;
  g.messages = std::move(request.chat.messages);
  g.tools = std::move(request.chat.tools);
  g.template_kwargs = std::move(request.chat.template_kwargs);
  g.thinking = request.thinking;
  PreparedGeneration p;
  if (auto e = prepare_generation(ctx, g, nullptr, &p)) return fail(*e);
  const int64_t n_prompt = static_cast<int64_t>(p.prompt.ids.size());
  auto wire = std::make_shared<AnthropicWire>(request.model, p.lease->model().chat_format, p.prompt.rendered, p.tools,
                                              n_prompt, p.template_rendered);
  run_wire_job(ctx, std::move(p.lease), Endpoint::kChat, std::move(p.job), std::move(wire), g.params.stream,
               "text/event-stream", res);
}

}  // namespace sniper::server
