// SPDX-License-Identifier: MIT
// Chat formatting for the OpenAI-compatible server: detects how a model's chat template formats
// tool calls and thinking, validates OpenAI chat messages/tools and renders them through the
// template, and parses generated text back into reasoning, content and tool calls.
// Invariants: render_chat never lets an unvalidated message reach the template; the output
// parser never loses generated text (anything that is not a well-formed marker or tool call is
// emitted as content or reasoning), and the concatenation of the deltas it emits equals the
// aggregated message().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "tokenizer/chat_template.h"

namespace sniper::server {

// How a model's template formats tool calls and thinking (detected from the template source).
enum class ToolCallFormat {
  kNone,
  kHermes,     // Qwen: <tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>
  kLlama3,     // {"name": .., "parameters": {..}} as the whole message, or after <|python_tag|>
  kQwen35Xml,  // Qwen3.5: <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
  kGemma4,     // Gemma 4: <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>
};

// How the model marks its reasoning.
enum class ThinkingSyntax {
  kThinkTags,      // <think>...</think> (Qwen3, Qwen3.5)
  kGemma4Channel,  // <|channel>thought\n...<channel|> (Gemma 4)
};

struct ChatFormat {
  ToolCallFormat tool_calls = ToolCallFormat::kNone;
  bool supports_thinking = false;  // template knows <think> (Qwen3) or <|channel> (Gemma 4)
  ThinkingSyntax thinking = ThinkingSyntax::kThinkTags;
};

// Detects the format from the template source text. Pure; thread-safe.
ChatFormat detect_chat_format(std::string_view template_source);

// The markers a model of this format writes in its own replies (thinking and tool-call syntax:
// "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|\"|>", "<think>",
// "<tool_call>", "<|python_tag|>", ...): in assistant messages sent back to the server they keep
// their meaning as control tokens; every other control-token text in any message is plain text.
std::vector<std::string> model_output_markers(const ChatFormat& format);

struct ChatRenderInput {
  nlohmann::ordered_json messages;  // OpenAI messages (validated by render_chat)
  nlohmann::ordered_json tools;     // OpenAI tools array or null
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // e.g. enable_thinking
  bool add_generation_prompt = true;
  const std::atomic<bool>* cancel = nullptr;  // set (server stopping) -> the render ends with an error
  // When set, every string that comes from the request (message fields, tool definitions, the
  // template kwargs' values, keys included) passes through it before the template sees it: the
  // caller marks text that must stay plain (Tokenizer::escape_special_text). model_output is
  // true for assistant messages, whose model_output_markers() keep their meaning (templates
  // parse them: Gemma 4 strips the thought channel from earlier replies). The template's own
  // text and bos/eos are untouched.
  std::function<std::string(std::string_view text, bool model_output)> escape_text;
};

struct RenderedChat {
  std::string prompt;             // text to tokenize (special tokens parsed; request text escaped by escape_text)
  bool thinking_open = false;     // the prompt ends inside an open <think> block
  bool thinking_enabled = false;  // the model may emit <think>...</think> first
  // Function name -> its "parameters" JSON Schema, from the request's tools (empty without
  // tools). The Qwen3.5 XML parser reads parameter types from it.
  nlohmann::ordered_json tool_schemas = nlohmann::ordered_json::object();
};

// Validates messages (role in system|user|assistant|tool|developer, content string/null/array of
// text parts, tool_calls shape, tool_call_id) and tools; renders through the template (within
// ChatTemplateLimits' defaults, stopping when input.cancel is set) with
// bos/eos tokens, `tools` (when non-empty) and template_kwargs as top-level variables.
// Gemma 4: when a generation prompt is asked for but the template ended the prompt with a closed
// turn ("<turn|>\n", after a tool response followed by content), "<|turn>model\n" is appended, as
// llama.cpp does.
// Errors name the offending field ("messages[2].role is 'robot' but must be one of ...").
// Thread-safe (the template is const).
[[nodiscard]] Result<RenderedChat> render_chat(const ChatTemplate& tmpl, const ChatFormat& format,
                                               const ChatRenderInput& input, const std::string& bos_token,
                                               const std::string& eos_token);

// One streamed piece of assistant output.
struct ChatDelta {
  enum class Kind { kContent, kReasoning, kToolCall };
  Kind kind = Kind::kContent;
  std::string text;    // kContent / kReasoning text
  int tool_index = 0;  // kToolCall: index in tool_calls
  // kToolCall: id+name on the first delta of a call (empty afterwards); arguments (JSON text of
  // the arguments object, compact) may be split over several deltas; concatenated they are the
  // call's "arguments" string.
  std::string tool_id, tool_name, tool_arguments;
};

// Incremental parser of generated text: separates reasoning (<think> or Gemma 4's thought
// channel), content and tool calls (Hermes JSON, Qwen3.5 XML, Gemma 4 or Llama 3 syntax).
// Holds back text that could be the start of a marker until it is decided. Tool calls are only
// recognised when tools_requested and the format has a tool-call syntax. Thread-compatible.
class ChatOutputParser {
 public:
  ChatOutputParser(ChatFormat format, const RenderedChat& rendered, bool tools_requested);

  // Consumes the next piece of generated text (any split, even inside a UTF-8 sequence or a
  // marker) and appends the deltas it decides to `out` (possibly none). A delta never ends
  // inside a UTF-8 sequence, so each delta's text is valid UTF-8 when the input is.
  void feed(std::string_view text, std::vector<ChatDelta>* out);
  // Flushes held-back text; an unterminated thinking block becomes reasoning, an unterminated or
  // invalid tool call becomes content. Call once after the last feed().
  void finish(std::vector<ChatDelta>* out);

  // The whole message so far, OpenAI shape: {"role":"assistant", "content": string or null,
  // "reasoning_content" (omitted when empty), "tool_calls" (omitted when none; arguments as a
  // JSON string)}.
  nlohmann::ordered_json message() const;
  // True when at least one tool call was emitted: finish_reason becomes "tool_calls".
  bool has_tool_calls() const { return !calls_.empty(); }

 private:
  enum class State {
    kStart,      // nothing decided yet: <think>, a Llama 3 JSON call or plain content may follow
    kThink,      // inside <think>...</think>
    kContent,    // plain content (tagged tool formats: watching for the call's open marker)
    kToolCall,   // inside a tagged call (<tool_call>...</tool_call>, <|tool_call>...<tool_call|>)
    kLlamaJson,  // the whole message is a Llama 3 JSON call (buffered until finish)
  };
  struct Call {
    std::string id, name, arguments;
  };

  void process(bool final, std::vector<ChatDelta>* out);
  void emit_content(std::string_view text, std::vector<ChatDelta>* out);
  void emit_reasoning(std::string_view text, std::vector<ChatDelta>* out);
  // Parses one tool-call JSON object {"name":..., "arguments"|"parameters": {...}}; on success
  // records the call, appends its delta and returns true.
  bool emit_call(const nlohmann::ordered_json& call, std::vector<ChatDelta>* out);
  // Parses `body` as one or more call objects (a JSON object, an array of objects, or objects
  // separated by whitespace/';'); all or nothing. Returns false and emits nothing on failure.
  bool emit_calls(std::string_view body, std::vector<ChatDelta>* out);
  std::string make_call_id(size_t index) const;

  // Parses the body of one tagged call into {"name", "arguments"} (format-specific); false when
  // it is not a well-formed call.
  bool emit_tagged_call(std::string_view body, std::vector<ChatDelta>* out);

  ToolCallFormat format_ = ToolCallFormat::kNone;
  nlohmann::ordered_json tool_schemas_;  // RenderedChat::tool_schemas
  std::string_view think_open_;          // the reasoning markers of the format
  std::string_view think_close_;
  std::string_view tool_open_;  // the tagged call markers of the format (empty: none)
  std::string_view tool_close_;
  bool think_allowed_ = false;   // recognise the reasoning open marker at the start of the message
  bool hermes_tools_ = false;    // recognise tagged call blocks (Hermes, Qwen3.5 XML, Gemma 4)
  bool llama_tools_ = false;     // recognise a Llama 3 JSON call as the whole message
  bool gemma_channels_ = false;  // Gemma 4: thought blocks and stray <channel|> after content too
  uint64_t id_seed_ = 0;         // makes tool-call ids unique across parsers
  State state_ = State::kStart;
  std::string buf_;                // undecided text, not yet emitted
  bool strip_leading_ws_ = false;  // drop whitespace at the start of the next content
  std::string ws_before_call_;     // whitespace dropped before a call's open marker, restored if it fails
  std::string content_, reasoning_;
  std::vector<Call> calls_;
};

}  // namespace sniper::server
