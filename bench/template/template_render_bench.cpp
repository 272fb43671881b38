// SPDX-License-Identifier: MIT
// Chat-template render time of the real templates in ../shared/tokenizer (Qwen3, Qwen3.5,
// Llama 3, Gemma 4) on a long conversation: a system prompt, N user/assistant turns of ~2 KB
// each (assistant turns with a <think> block) and 20 tools. Prints, per template, the output
// size and the best of R renders in ms (default limits). Uses only ChatTemplate::parse and
// render(json), so the same file builds against older engines for A/B comparisons
// (bench/template/ab_render.sh).
// usage: template_render_bench [SHARED_DIR] [TURNS=250] [REPEATS=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json conversation(int turns) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant. " + std::string(500, 's')}});
  for (int i = 0; i < turns; ++i) {
    messages.push_back(
        {{"role", "user"}, {"content", "Question " + std::to_string(i) + ": " + std::string(2000, 'q')}});
    messages.push_back(
        {{"role", "assistant"}, {"content", "<think>\nhm\n</think>\n\nAnswer " + std::string(2000, 'a')}});
  }
  messages.push_back({{"role", "user"}, {"content", "last question"}});
  return messages;
}

nlohmann::ordered_json tools(int n) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (int i = 0; i < n; ++i) {
    nlohmann::ordered_json params = nlohmann::ordered_json::parse(
        R"({"type": "object", "properties": {"path": {"type": "string", "description": "A path"},
            "count": {"type": "integer"}, "mode": {"type": "string", "enum": ["a", "b"]}}, "required": ["path"]})");
    out.push_back(
        {{"type", "function"},
         {"function",
          {{"name", "tool_" + std::to_string(i)}, {"description", "Does a thing."}, {"parameters", params}}}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string shared = argc > 1 ? argv[1] : "../shared";
  const int turns = argc > 2 ? std::atoi(argv[2]) : 250;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  const std::string dir = shared + "/tokenizer/";
  struct Source {
    const char* name;
    std::string path;
    bool in_config;
  };
  const Source sources[] = {{"qwen3", dir + "qwen3/tokenizer_config.json", true},
                            {"qwen35", dir + "qwen35/chat_template.jinja", false},
                            {"llama3", dir + "llama3/tokenizer_config.json", true},
                            {"gemma4", dir + "gemma4/chat_template.jinja", false}};
  nlohmann::ordered_json context;
  context["messages"] = conversation(turns);
  context["tools"] = tools(20);
  context["add_generation_prompt"] = true;
  context["bos_token"] = "<s>";
  context["eos_token"] = "</s>";
  std::printf("%d turns (%zu messages), 20 tools, best of %d\n", turns, context["messages"].size(), repeats);
  for (const Source& src : sources) {
    std::string text = read_file(src.path);
    if (src.in_config) text = nlohmann::json::parse(text)["chat_template"].get<std::string>();
    auto tpl = sniper::ChatTemplate::parse(text);
    if (!tpl.ok()) {
      std::printf("%-7s parse error: %s\n", src.name, tpl.error().message.c_str());
      return 1;
    }
    double best_ms = 1e30;
    size_t bytes = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto out = tpl->render(context);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!out.ok()) {
        std::printf("%-7s render error: %s\n", src.name, out.error().message.c_str());
        return 1;
      }
      bytes = out->size();
      best_ms = std::min(best_ms, ms);
    }
    std::printf("%-7s %9zu bytes  %8.2f ms\n", src.name, bytes, best_ms);
  }
  return 0;
}
