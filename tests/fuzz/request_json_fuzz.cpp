// SPDX-License-Identifier: MIT
// libFuzzer entry point for the request bodies of every JSON endpoint: parse_body (bounded JSON,
// UTF-8; the context routes use it too) and then the chat-completion and text-completion request
// validators, Ollama's chat/generate and Anthropic's messages validators (structured-output
// schemas and GBNF grammars compiled, logit_bias, tool_choice and num_ctx checked), and the media parts
// of every accepted chat taken out (take_media: data URLs, base64, the byte and count limits). Any input must be
// accepted or refused with an ApiError; an accepted request's values must lie in their documented ranges. Build with
// Clang (see CMakeLists.txt); run
//   ./request_json_fuzz -max_len=65536 corpus/request_json_fuzz
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/anthropic_protocol.h"
#include "server/media_input.h"
#include "server/ollama_protocol.h"
#include "server/openai_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sniper::server;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Json j;
  if (auto e = parse_body(body, &j)) {
    if (e->status != 400 || e->message.empty()) std::abort();
    return 0;
  }
  if (!j.is_object()) std::abort();
  (void)dump_json(j);  // the DOM is bounded: serializing it recurses at most 64 deep
  // Every accepted logit_bias entry names a token (an id >= 0, or non-empty text) and a bias in
  // [-100, 100] or -inf (banned); a rejected request's error names its field.
  auto check_params = [](const GenerationParams& p) {
    for (const LogitBiasEntry& e : p.logit_bias) {
      if (e.token < 0 && e.text.empty()) std::abort();
      if (!(e.bias >= -100 && e.bias <= 100) && !(std::isinf(e.bias) && e.bias < 0)) std::abort();
      if (e.field.empty()) std::abort();
    }
    for (const std::string& s : p.stop) {
      if (s.empty() || s.size() > 1024) std::abort();
    }
    if (p.n_ctx < 0 || !p.sampler.validate().ok()) std::abort();
  };
  // Media parts: each item taken is non-empty and within the limits, or the request gets a 400;
  // no media part is left behind.
  auto check_media = [](Json messages) {
    sniper::MediaLimits limits;
    limits.max_bytes = 4096;
    limits.max_media = 4;
    std::vector<MediaInput> items;
    if (auto e = take_media(&messages, limits, "<m>", &items)) {
      if (e->status != 400 || e->message.empty()) std::abort();
      return;
    }
    if (items.size() > 4 || has_media_parts(messages)) std::abort();
    for (const MediaInput& item : items) {
      if (item.bytes.empty() || item.bytes.size() > 4096 || item.field.empty()) std::abort();
    }
  };
  ChatRequest chat;
  if (auto e = parse_chat_request(j, &chat); !e) {
    check_media(chat.messages);
    if (!chat.messages.is_array() || chat.messages.empty()) std::abort();
    const sniper::SamplerConfig& s = chat.params.sampler;
    if (!(s.temperature >= 0 && s.temperature <= 2 && s.top_p > 0 && s.top_p <= 1)) std::abort();
    if (chat.params.max_tokens == 0 || chat.params.max_tokens < -1 || chat.params.stop.size() > 16) std::abort();
    check_params(chat.params);
  } else if (e->status != 400 || e->message.empty()) {
    std::abort();
  }
  CompletionRequest completion;
  if (!parse_completion_request(j, &completion)) {
    if (!is_valid_utf8(completion.prompt)) std::abort();
    check_params(completion.params);
  }
  for (int kind = 0; kind < 2; ++kind) {
    OllamaRequest ollama;
    if (!(kind == 0 ? parse_ollama_chat(j, &ollama) : parse_ollama_generate(j, &ollama))) {
      if (!ollama.params.sampler.validate().ok() || ollama.params.max_tokens == 0 || ollama.model.empty()) std::abort();
      check_params(ollama.params);
      check_media(ollama.messages);
    }
  }
  AnthropicRequest anthropic;
  if (!parse_anthropic_messages(j, &anthropic)) {
    if (!anthropic.chat.params.sampler.validate().ok() || anthropic.chat.params.max_tokens < 1) std::abort();
    check_params(anthropic.chat.params);
    check_media(anthropic.chat.messages);
  }
  return 0;
}
