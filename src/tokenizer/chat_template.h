// SPDX-License-Identifier: MIT
// ChatTemplate: renders a HuggingFace chat template (tokenizer.chat_template, a Jinja2 program)
// byte-identically to Python Jinja2 with trim_blocks and lstrip_blocks on, the way
// transformers' apply_chat_template does (ImmutableSandboxedEnvironment, the loopcontrols
// extension, a tojson that is json.dumps(ensure_ascii=False), raise_exception, strftime_now).
// Invariants: parsing checks all syntax, statements, filters and tests up front; rendering is
// bounded (loop iterations, call depth, string size), so untrusted templates and messages cannot
// hang or exhaust memory. Nothing throws: every failure is an Error naming the line and cause.
// A parsed ChatTemplate is immutable; render() is const and safe to call from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace sniper {

// Bounds on the work of one render (hostile templates end with an Error, not a hang).
struct ChatTemplateLimits {
  int64_t max_work = 1'000'000;         // loop items + 10 per call, summed over the render
  int max_call_depth = 64;              // nested macro/function calls
  size_t max_string_bytes = 64u << 20;  // the output and any string built on the way
};

class ChatTemplate {
 public:
  // Parses template source. Errors name the line: unterminated tags/strings/comments,
  // unknown statements, filters or tests, misplaced end tags.
  [[nodiscard]] static Result<ChatTemplate> parse(std::string source);

  // Renders with `context` as the template's variables (messages, add_generation_prompt,
  // bos_token, eos_token, tools, enable_thinking...; a key that is absent is undefined in the
  // template). `context` must be a JSON object. Errors: render-time failures with their line,
  // or exactly the template's message when it calls raise_exception(message).
  // Thread-safe (const).
  [[nodiscard]] Result<std::string> render(const nlohmann::json& context, const ChatTemplateLimits& limits = {}) const;
  // Same, keeping the key order of JSON objects (visible through tojson and dict iteration);
  // nlohmann::json sorts keys, so prefer this overload when the order must match Python's.
  [[nodiscard]] Result<std::string> render(const nlohmann::ordered_json& context,
                                           const ChatTemplateLimits& limits = {}) const;

  const std::string& source() const { return source_; }

 private:
  struct Program;
  ChatTemplate(std::string source, std::shared_ptr<const Program> program);

  std::string source_;
  std::shared_ptr<const Program> program_;  // shared so ChatTemplate stays cheap to copy
};

}  // namespace sniper
