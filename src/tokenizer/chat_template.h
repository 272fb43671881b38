// SPDX-License-Identifier: MIT
// ChatTemplate: renders a HuggingFace chat template (tokenizer.chat_template, a Jinja2 program)
// byte-identically to Python Jinja2 with trim_blocks and lstrip_blocks on, the way
// transformers' apply_chat_template does (ImmutableSandboxedEnvironment, the loopcontrols
// extension, a tojson that is json.dumps(ensure_ascii=False), raise_exception, strftime_now).
// Invariants: parsing checks all syntax, statements, filters and tests up front, and bounds the
// template's size and nesting; rendering is bounded in work, bytes, string size, nesting, call
// depth and wall time, and stops when the caller's cancel flag is set, so untrusted templates and
// messages cannot crash, hang or exhaust memory (docs/chat-template-limits.md). Nothing throws:
// every failure is an Error naming the line and cause, or the limit that was hit.
// A parsed ChatTemplate is immutable; render() is const and safe to call from several threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace sniper {

// Bounds on the work of one render (hostile templates end with an Error, not a hang). The
// defaults are far above what real chat templates need (docs/chat-template-limits.md).
struct ChatTemplateLimits {
  int64_t max_work = 10'000'000;              // loop items + list items built + 10 per call
  int64_t max_steps = 50'000'000;             // statements, expressions, value nodes compared/printed
  int max_call_depth = 64;                    // nested macro/function calls
  int max_nesting = 400;                      // statements, expressions and calls active at once
  uint64_t max_string_bytes = 64ull << 20;    // the output and any string built on the way
  uint64_t max_total_bytes = 512ull << 20;    // bytes built, copied or scanned, in total
  int64_t max_time_ms = 30'000;               // wall clock of one render
  const std::atomic<bool>* cancel = nullptr;  // set from another thread: the render stops
};

// What one render spent of its limits (for measurements and tests).
struct ChatTemplateUsage {
  int64_t work = 0;
  int64_t steps = 0;
  uint64_t bytes = 0;
  int max_nesting = 0;
};

// Largest template source parse() accepts (real chat templates are a few tens of KiB).
inline constexpr size_t kMaxChatTemplateBytes = 1u << 20;

class ChatTemplate {
 public:
  // Parses template source. Errors name the line: unterminated tags/strings/comments,
  // unknown statements, filters or tests, misplaced end tags, nesting past kMaxParseDepth; or
  // the size, past kMaxChatTemplateBytes.
  [[nodiscard]] static Result<ChatTemplate> parse(std::string source);

  // Renders with `context` as the template's variables (messages, add_generation_prompt,
  // bos_token, eos_token, tools, enable_thinking...; a key that is absent is undefined in the
  // template). `context` must be a JSON object. Errors: render-time failures with their line,
  // or exactly the template's message when it calls raise_exception(message).
  // Thread-safe (const).
  // When `usage` is not null it receives what the render spent, whether it succeeded or not.
  [[nodiscard]] Result<std::string> render(const nlohmann::json& context, const ChatTemplateLimits& limits = {},
                                           ChatTemplateUsage* usage = nullptr) const;
  // Same, keeping the key order of JSON objects (visible through tojson and dict iteration);
  // nlohmann::json sorts keys, so prefer this overload when the order must match Python's.
  [[nodiscard]] Result<std::string> render(const nlohmann::ordered_json& context, const ChatTemplateLimits& limits = {},
                                           ChatTemplateUsage* usage = nullptr) const;

  const std::string& source() const { return source_; }

 private:
  struct Program;
  ChatTemplate(std::string source, std::shared_ptr<const Program> program);

  std::string source_;
  std::shared_ptr<const Program> program_;  // shared so ChatTemplate stays cheap to copy
};

}  // namespace sniper
