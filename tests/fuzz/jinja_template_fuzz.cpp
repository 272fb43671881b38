// SPDX-License-Identifier: MIT
// libFuzzer entry point for the Jinja engine itself: the input is a chat template (the bytes a
// downloaded GGUF carries), parsed and rendered against a fixed chat context (messages with
// content parts and tool calls, tools, the usual flags) with tight resource limits on. The
// property: every input parses and renders, or fails with an Error, within the limits; a limit
// error is fine, a crash, a sanitizer report, a timeout (libFuzzer -timeout) or an out-of-memory
// (-rss_limit_mb) is a bug. The limits are checked after each run too: the work, steps and
// bytes a render reports never exceed them, and its error names what stopped it.
// Corpus: the language's constructs and every reproduction of issue 40 (findings 1 and 2),
// sized to fit -max_len. Build with Clang (see CMakeLists.txt);
// run   ./jinja_template_fuzz -max_len=65536 corpus/jinja_template_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json kContext = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}, {"type": "image"}]},
      {"role": "assistant", "content": "<think>\nlook it up\n</think>\n\n", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": {"city": "Paris", "days": 2}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "{\"t\": 21.5}"},
      {"role": "assistant", "content": "21.5 C, sunny."},
      {"role": "user", "content": "Thanks! And  tomorrow? \u00e9\u4e2d\ud83d\ude00"}
    ],
    "tools": [{"type": "function", "function": {"name": "weather", "description": "Forecast.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer",
      "enum": [1, 2, 3]}}, "required": ["city"]}}}],
    "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>"
  })");
  return kContext;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  auto tpl = sniper::ChatTemplate::parse(source);
  if (!tpl.ok()) {
    if (tpl.error().message.empty()) std::abort();  // every failure says why
    return 0;
  }
  // Tight limits keep each run well under libFuzzer's timeout and memory limit, under ASan.
  sniper::ChatTemplateLimits limits;
  limits.max_work = 200'000;
  limits.max_steps = 2'000'000;
  limits.max_string_bytes = 4u << 20;
  limits.max_total_bytes = 64u << 20;
  limits.max_time_ms = 2'000;
  sniper::ChatTemplateUsage usage;
  auto out = tpl->render(context(), limits, &usage);
  if (!out.ok() && out.error().message.empty()) std::abort();
  if (out.ok() && out->size() > limits.max_string_bytes) std::abort();  // the output is one string
  if (usage.work > limits.max_work || usage.steps > limits.max_steps || usage.bytes > limits.max_total_bytes ||
      usage.max_nesting > limits.max_nesting + 1) {
    std::abort();  // a charge that went past its limit
  }
  return 0;
}
