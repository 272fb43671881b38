// SPDX-License-Identifier: MIT
// sniper chat -m MODEL: an interactive conversation rendered through the model's own chat
// template. Each turn re-renders the whole conversation and evaluates only the tokens past
// the prefix already in the KV cache (for a hybrid model, past the latest state checkpoint at
// or before it: each turn's prompt is checkpointed kPromptCheckpointTail tokens before its end).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include <unistd.h>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "engine/generate.h"
#include "server/chat_format.h"
#include "spec_args.h"
#include "tokenizer/chat_template.h"

namespace sniper::cli {

namespace {

// Renders a conversation without a template (models that carry none).
// add_generation_prompt: end with "Assistant:" for the reply to follow.
std::string plain_render(const nlohmann::json& messages, bool add_generation_prompt = true) {
  std::string out;
  for (const auto& m : messages) {
    const std::string role = m["role"].get<std::string>();
    out += (role == "user"     ? "User: "
            : role == "system" ? "System: "
                               : "Assistant: ") +
           m["content"].get<std::string>() + "\n";
  }
  return add_generation_prompt ? out + "Assistant:" : out;
}

// A mark for Tokenizer::escape_special_text that occurs in no message and not in the template:
// the first Unicode noncharacter of U+FDD0..U+FDEF that none holds ("" when every one occurs:
// the text is then tokenized as before, with its control-token texts parsed).
std::string pick_mark(const nlohmann::json& messages, const std::string& template_source) {
  for (uint32_t cp = 0xFDD0; cp <= 0xFDEF; ++cp) {
    const std::string mark = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                              static_cast<char>(0x80 | (cp & 0x3F))};
    bool used = template_source.find(mark) != std::string::npos;
    for (const auto& m : messages)
      used = used || m["content"].get_ref<const std::string&>().find(mark) != std::string::npos;
    if (!used) return mark;
  }
  return "";
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  const std::vector<FlagSpec> specs =
      concat(concat(concat(model_flags(), sampling_flags()), spec_flags()),
             {
                 {"--system", nullptr, "TEXT", "system prompt"},
                 {"--n-predict", "-n", "N", "most tokens per reply (default 1024)"},
                 {"--think", nullptr, nullptr, "let thinking models think (sets enable_thinking)"},
                 {"--no-think", nullptr, nullptr, "ask thinking models not to think"},
                 {"--content-special-tokens", nullptr, nullptr,
                  "tokenize control-token text you type (<|im_end|>, ...) as the control token (default: as plain "
                  "text; only the chat template's markup is special)"},
                 {"--ctx-checkpoints", nullptr, "N|auto",
                  "state checkpoints for reusing earlier turns on hybrid models (delta-net layers, sliding windows), "
                  "counted in --mem; 0 = none (default auto: 8, fewer if 8 take over 1/8 of --mem)"},
                 {"--help", "-h", nullptr, "show this help"},
             });
  auto args = Args::parse("chat", argc, argv, 2, concat(specs, context_shift_flags()));
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("chat", "-m MODEL [--system TEXT] [sampling flags]", specs);
    return 0;
  }
  auto n_predict = args->get_int("--n-predict", 1024, -1, int64_t{1} << 24);
  if (!n_predict.ok()) return fail(n_predict.error());
  auto sampler = sampler_from_args(*args);
  if (!sampler.ok()) return fail(sampler.error());
  auto checkpoints = parse_checkpoint_count(args->get_string("--ctx-checkpoints", "auto"));
  if (!checkpoints.ok()) return fail(checkpoints.error());
  auto spec_req = parse_spec_args(*args);
  if (!spec_req.ok()) return fail(spec_req.error());
  int64_t n_checkpoints = *checkpoints;
  if (n_checkpoints != kAutoCheckpoints) n_checkpoints = std::max(n_checkpoints, spec_req->checkpoints());
  auto loaded = load_model_and_session(*args, n_checkpoints, spec_req->draft_mem_bytes, spec_req->logit_rows(),
                                       spec_req->kind == SpecKind::kMtp);
  if (!loaded.ok()) return fail(loaded.error());
  auto threads = args->get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return fail(threads.error());
  auto spec = setup_spec(*spec_req, *loaded, *sampler, static_cast<int>(*threads));
  if (!spec.ok()) return fail(spec.error());
  auto tokenizer = loaded->model->tokenizer();
  if (!tokenizer.ok()) return fail(tokenizer.error());
  const Tokenizer& tok = **tokenizer;
  Session& session = *loaded->session;
  bool shift = false;
  auto keep_arg = context_shift_from_args(*args, loaded->model->config(), &shift);
  if (!keep_arg.ok()) return fail(keep_arg.error());
  // With --context-shift, as llama.cpp's conversation mode (common_chat_format_single): the
  // session holds the earlier turns, perhaps with shifted-out parts, so a new turn evaluates only
  // the text its rendering adds to that of the conversation before it (re-rendering everything
  // would need the dropped tokens). `seen`: a turn has been evaluated since the last reset.
  bool seen = false;
  int64_t n_keep = -1;  // resolved against the first turn's prompt

  std::optional<ChatTemplate> tmpl;
  if (!loaded->model->chat_template().empty()) {
    auto t = ChatTemplate::parse(loaded->model->chat_template());
    if (!t.ok()) return fail(make_error("the model's chat template: %s", t.error().message.c_str()));
    tmpl.emplace(std::move(t).value());
  } else {
    std::fprintf(stderr, "note: the model has no chat template; using a plain 'User:/Assistant:' format\n");
  }
  const std::vector<std::string> model_markers =
      tmpl ? server::model_output_markers(server::detect_chat_format(loaded->model->chat_template()))
           : std::vector<std::string>();
  nlohmann::json messages = nlohmann::json::array();
  if (args->has("--system")) messages.push_back({{"role", "system"}, {"content", args->get_string("--system")}});
  const bool interactive = isatty(0);
  std::string line;
  for (;;) {
    if (interactive) std::fprintf(stdout, "\n> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "/quit" || line == "/exit") break;
    if (line.empty()) continue;
    messages.push_back({{"role", "user"}, {"content", line}});
    // What the user typed stays plain text: its control-token look-alikes are escaped before the
    // template renders it, and only the template's markup becomes control tokens.
    const std::string mark =
        tmpl && !args->has("--content-special-tokens") ? pick_mark(messages, loaded->model->chat_template()) : "";
    auto render = [&](const nlohmann::json& msgs, bool add_generation_prompt) -> Result<std::string> {
      if (!tmpl) return plain_render(msgs, add_generation_prompt);
      auto piece = [&tok](int32_t id) { return id >= 0 ? tok.token_to_piece(id, true) : std::string(); };
      nlohmann::json escaped = msgs;
      if (!mark.empty()) {
        for (auto& m : escaped) {
          // The model's own markers (thinking, tool calls) keep their meaning in its replies.
          const bool reply = m["role"] == "assistant";
          m["content"] = tok.escape_special_text(m["content"].get<std::string>(), mark,
                                                 reply ? model_markers : std::vector<std::string>());
        }
      }
      nlohmann::json ctx = {{"messages", escaped},
                            {"add_generation_prompt", add_generation_prompt},
                            {"bos_token", piece(tok.bos_id())},
                            {"eos_token", piece(tok.eos_id())}};
      if (args->has("--think")) ctx["enable_thinking"] = true;
      if (args->has("--no-think")) ctx["enable_thinking"] = false;
      return tmpl->render(ctx);
    };
    auto rendered = render(messages, true);
    if (!rendered.ok()) return fail(rendered.error());
    const std::string prompt = *rendered;
    // With --context-shift: the conversation before this turn, as the template closes it.
    std::string before;
    if (shift && messages.size() > 1) {
      auto prev = render(nlohmann::json(std::vector<nlohmann::json>(messages.begin(), messages.end() - 1)), false);
      if (prev.ok()) before = *prev;
    }
    std::vector<int32_t> ids = tmpl ? tok.encode_escaped(prompt, /*add_special=*/false, mark)
                                    : tok.encode(prompt, /*add_special=*/true, args->has("--content-special-tokens"));
    // Reuse the cached prefix; evaluate only what is new.
    size_t common = 0;
    if (!shift) {
      const auto& hist = session.history();
      while (common < hist.size() && common < ids.size() && hist[common] == ids[common]) ++common;
      if (common == ids.size() && common > 0) --common;  // at least one token must be evaluated for fresh logits
      common = static_cast<size_t>(session.truncate(static_cast<int64_t>(common)));  // 0 when it cannot rewind
    } else if (seen && !before.empty() && prompt.compare(0, before.size(), before) == 0) {
      ids = tok.encode_escaped(prompt.substr(before.size()), /*add_special=*/false, mark);
      common = 0;
    } else {
      (void)session.truncate(0);  // the first turn, or a conversation that no longer extends what was seen
      if (n_keep < 0) n_keep = resolve_n_keep(*keep_arg, ids, tok.bos_id());
    }
    std::vector<int32_t> fresh(ids.begin() + static_cast<long>(common), ids.end());
    // A hybrid session checkpoints the prompt just before its generation prompt, where the next
    // turn departs from it.
    double head_ms = 0;
    int64_t n_head = 0;
    if (session.keeps_checkpoints() && static_cast<int64_t>(fresh.size()) > kPromptCheckpointTail) {
      n_head = static_cast<int64_t>(fresh.size()) - kPromptCheckpointTail;
      const auto t0 = std::chrono::steady_clock::now();
      Status st = session.eval(std::span<const int32_t>(fresh.data(), static_cast<size_t>(n_head)));
      if (!st.ok()) {
        fail(st.error());
        messages.erase(messages.end() - 1);
        continue;
      }
      session.checkpoint();
      head_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      fresh.erase(fresh.begin(), fresh.begin() + n_head);
    }
    GenerateOptions go;
    go.n_predict = *n_predict;
    go.sampler = *sampler;
    go.draft = spec->source.get();
    go.spec = spec_req->config;
    go.context_shift = shift;
    go.n_keep = std::max<int64_t>(n_keep, 0);
    // Room for the new turn: shift as often as it takes (generate() shifts once).
    Status room = ok_status();
    while (shift && room.ok() && !fresh.empty() && session.n_past() > go.n_keep + 1 &&
           session.n_past() + static_cast<int64_t>(fresh.size()) >= session.n_ctx()) {
      room = shift_full_context(session, go.n_keep);
    }
    if (!room.ok()) {
      fail(room.error());
      messages.erase(messages.end() - 1);
      continue;
    }
    std::string reply;
    auto stats = generate(session, tok, fresh, go, [&](std::string_view text) {
      reply.append(text);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputc('\n', stdout);
    if (!stats.ok()) {
      seen = false;  // start over next turn
      fail(stats.error());
      messages.erase(messages.end() - 1);
      continue;
    }
    stats->n_prompt += n_head;
    stats->prompt_ms += head_ms;
    std::fprintf(stderr, "[%ld prompt tok at %.1f tok/s, %ld tok at %.1f tok/s]\n", static_cast<long>(stats->n_prompt),
                 stats->prompt_tok_s(), static_cast<long>(stats->n_gen), stats->gen_tok_s());
    if (go.draft != nullptr) std::fprintf(stderr, "[%s]\n", spec_summary(stats->spec).c_str());
    messages.push_back({{"role", "assistant"}, {"content", reply}});
    seen = true;
  }
  return 0;
}

}  // namespace sniper::cli
