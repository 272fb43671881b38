// SPDX-License-Identifier: MIT
// libFuzzer entry point for chat-template rendering of arbitrary messages and tools, the way
// POST /v1/chat/completions does it: the body is parsed within the request bounds, validated by
// parse_chat_request, then rendered by render_chat (Jinja engine, from_json of messages and
// tools). Any input must render or fail with an error, never crash or recurse without bound.
// The same bytes also go through the template's model-output parser as generated text, and every
// message string through the control-token escaping (Qwen2 vocabulary).
// Templates: a built-in ChatML template with tools, plus the real Qwen3, Qwen3.5, Llama 3 and
// Gemma 4 templates when SNIPER_SHARED_DIR (or ../shared) holds them. Build with Clang (see
// CMakeLists.txt); run   ./chat_template_fuzz -max_len=65536 corpus/chat_template_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "server/chat_format.h"
#include "server/openai_protocol.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace {

using sniper::ChatTemplate;
using namespace sniper::server;

// ChatML with a tools block and content parts: exercises tojson of arbitrary tools, loops over
// message fields and nested content.
constexpr const char* kChatml = R"TPL({%- if tools %}<|im_start|>system
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}<|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ message.role }}
{%- if message.content is string %}{{ message.content }}
{%- elif message.content %}{% for part in message.content %}{{ part.text if part.text is defined else part | tojson }}{% endfor %}
{%- endif %}
{%- if message.tool_calls %}{% for call in message.tool_calls %}<tool_call>{{ call | tojson }}</tool_call>{% endfor %}{% endif %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %})TPL";

struct Template {
  ChatTemplate tmpl;
  ChatFormat format;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::unique_ptr<Template>> load_templates() {
  std::vector<std::string> sources = {kChatml};
  const char* env = std::getenv("SNIPER_SHARED_DIR");
  const std::string shared = env != nullptr ? env : "../shared";
  for (const char* model : {"qwen3", "qwen35", "llama3", "gemma4"}) {
    // tokenizer_config.json's chat_template, or chat_template.jinja (Qwen3.5, Gemma 4).
    const std::string dir = shared + "/tokenizer/" + model;
    Json config;
    if (parse_json_bounded(read_file(dir + "/tokenizer_config.json"), &config).empty() && config.is_object() &&
        config.contains("chat_template") && config["chat_template"].is_string()) {
      sources.push_back(config["chat_template"].get<std::string>());
    } else if (const std::string jinja = read_file(dir + "/chat_template.jinja"); !jinja.empty()) {
      sources.push_back(jinja);
    }
  }
  std::vector<std::unique_ptr<Template>> out;
  for (const std::string& s : sources) {
    auto t = ChatTemplate::parse(s);
    if (!t.ok()) std::abort();  // the templates are fixed: one that does not parse is a bug here
    out.push_back(std::make_unique<Template>(Template{std::move(t).value(), detect_chat_format(s)}));
  }
  return out;
}

// The Qwen2 vocabulary (ChatML control tokens), when the shared directory has it.
std::unique_ptr<sniper::Tokenizer> load_qwen2_tokenizer() {
  const char* env = std::getenv("SNIPER_SHARED_DIR");
  const std::string shared = env != nullptr ? env : "../shared";
  auto file = sniper::gguf_open(shared + "/tokenizer/ggml-vocab-qwen2.gguf");
  if (!file.ok()) return nullptr;
  auto tok = sniper::Tokenizer::from_gguf(*file);
  if (!tok.ok()) return nullptr;
  return std::make_unique<sniper::Tokenizer>(std::move(tok).value());
}

const std::vector<std::unique_ptr<Template>>& templates() {
  static const std::vector<std::unique_ptr<Template>> kTemplates = load_templates();
  return kTemplates;
}

const sniper::Tokenizer* qwen2_tokenizer() {
  static const std::unique_ptr<sniper::Tokenizer> kTokenizer = load_qwen2_tokenizer();
  return kTokenizer.get();
}

}  // namespace

// libFuzzer calls this once before the first input: the templates and the 150k-token vocabulary
// load here, outside the per-input timeout (under ASan on a busy machine the vocabulary alone
// takes seconds). The replay driver loads them at the first input instead.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)templates();
  (void)qwen2_tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::unique_ptr<Template>>& all = templates();
  if (size == 0) return 0;
  // The first byte picks the template and the generation prompt; the rest is the request body.
  const Template& t = *all[data[0] % all.size()];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  {
    // The same bytes as model output: the template's output parser (thinking, Hermes JSON,
    // Qwen3.5 XML and Gemma 4 tool-call syntaxes) takes any text, split anywhere.
    RenderedChat rendered;
    rendered.thinking_enabled = (data[0] & 0x40) != 0;
    ChatOutputParser parser(t.format, rendered, /*tools_requested=*/true);
    std::vector<ChatDelta> deltas;
    const size_t cut = body.size() / 2;
    parser.feed(body.substr(0, cut), &deltas);
    parser.feed(body.substr(cut), &deltas);
    parser.finish(&deltas);
    (void)parser.message();
  }
  Json j;
  if (parse_body(body, &j)) return 0;
  ChatRequest request;
  if (parse_chat_request(j, &request)) return 0;
  ChatRenderInput in;
  in.messages = request.messages;
  in.tools = request.tools;
  in.template_kwargs = request.template_kwargs;
  in.add_generation_prompt = (data[0] & 0x80) == 0;
  auto rendered = render_chat(t.tmpl, t.format, in, "<s>", "</s>");
  if (!rendered.ok() && rendered.error().message.empty()) std::abort();
  // Message text never becomes control tokens (issue 40 finding 9): every string of the
  // messages, escaped as the server escapes it, encodes to plain-text tokens only, and the same
  // text comes back.
  if (const sniper::Tokenizer* tok = qwen2_tokenizer(); tok != nullptr) {
    const std::string mark = "\xEF\xB7\x90";
    std::vector<const Json*> todo = {&request.messages};
    while (!todo.empty()) {
      const Json* v = todo.back();
      todo.pop_back();
      if (v->is_array() || v->is_object()) {
        for (const Json& e : *v) todo.push_back(&e);
        continue;
      }
      if (!v->is_string() || v->get_ref<const std::string&>().find(mark) != std::string::npos) continue;
      const std::string& text = v->get_ref<const std::string&>();
      const std::vector<int32_t> ids = tok->encode_escaped(tok->escape_special_text(text, mark), false, mark);
      for (int32_t id : ids) {
        if (tok->is_control(id)) std::abort();
      }
      if (ids != tok->encode(text, false, false)) std::abort();
    }
  }
  return 0;
}
