// SPDX-License-Identifier: MIT
// sniper chat MODEL: an interactive conversation through the model's own chat template. A one-line
// banner, then a prompt with line editing and history (line_editor.h), slash commands
// (chat_commands.h: /help, /clear, /system, /set, /save, /load, /quit), and Ctrl-C that stops a
// reply without losing the conversation (a second one at an empty prompt, or Ctrl-D, leaves).
// The conversation and its prefix reuse between turns are chat_conversation.h's. Without a
// terminal it reads plain lines, commands included, for scripts.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "chat_commands.h"
#include "chat_conversation.h"
#include "commands.h"
#include "common.h"
#include "engine/session_state.h"
#include "hub_model.h"
#include "interrupt.h"
#include "line_editor.h"
#include "media_args.h"
#include "progress.h"
#include "server/context_store.h"
#include "spec_args.h"
#include "tokenizer/chat_template.h"

namespace sniper::cli {

namespace {

struct ChatApp {
  Loaded* loaded = nullptr;
  ChatConversation* conversation = nullptr;
  ChatSettings settings;
  std::string context_dir;
  std::optional<uint64_t> fingerprint;

  Result<uint64_t> model_fingerprint_once() {
    if (!fingerprint) {
      SNIPER_ASSIGN_OR_RETURN(uint64_t f, model_fingerprint(loaded->model->gguf()));
      fingerprint = f;
    }
    return *fingerprint;
  }
};

void say(const std::string& text) {
  std::fputs((text + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void complain(const std::string& text) {
  std::fprintf(stderr, "error: %s\n", text.c_str());
  std::fflush(stderr);
}

// Runs one slash command. Returns false when the chat should end.
bool run_command(ChatApp& app, const ChatCommand& cmd) {
  const ChatCommandInfo* info = find_chat_command(cmd.name);
  if (info == nullptr) {
    complain(unknown_chat_command_message(cmd.name));
    return true;
  }
  const std::string name = info->name;
  if (name == "quit") return false;
  if (name == "help") {
    std::fputs(chat_help_text().c_str(), stdout);
  } else if (name == "clear") {
    app.conversation->clear();
    say("conversation cleared");
  } else if (name == "system") {
    if (cmd.arg.empty()) {
      say(app.settings.system.empty() ? "no system prompt (/system TEXT sets one)"
                                      : "system prompt: " + app.settings.system);
    } else {
      auto shown = apply_chat_setting(&app.settings, "system " + cmd.arg);
      if (shown.ok()) say(*shown);
      else complain(shown.error().message);
    }
  } else if (name == "set") {
    if (cmd.arg.empty()) {
      std::fputs(("settings:\n" + describe_chat_settings(app.settings)).c_str(), stdout);
    } else {
      auto shown = apply_chat_setting(&app.settings, cmd.arg);
      if (shown.ok()) say(*shown);
      else complain(shown.error().message);
    }
  } else if (name == "save" || name == "load") {
    if (name == "load" && cmd.arg.empty()) {
      const std::vector<std::string> names = list_saved_chats(app.context_dir);
      std::string listing;
      for (const std::string& n : names) listing += (listing.empty() ? "" : ", ") + n;
      say(names.empty() ? "no saved conversations in " + app.context_dir + " (/save NAME saves one)"
                        : "saved conversations: " + listing);
      return true;
    }
    if (cmd.arg.empty()) {
      complain("/save needs a NAME: /save NAME");
      return true;
    }
    auto fingerprint = app.model_fingerprint_once();
    if (!fingerprint.ok()) {
      complain(fingerprint.error().message);
      return true;
    }
    if (name == "save") {
      Status st = app.conversation->save(app.context_dir, cmd.arg, app.settings, *fingerprint);
      if (st.ok()) {
        say("saved as '" + cmd.arg + "' (" + std::to_string(app.conversation->n_past()) + " tokens) in " +
            app.context_dir);
      } else {
        complain(st.error().message);
      }
    } else {
      std::string note;
      Status st = app.conversation->load(app.context_dir, cmd.arg, &app.settings, *fingerprint, &note);
      if (!st.ok()) {
        complain(st.error().message);
      } else {
        say("loaded '" + cmd.arg + "': " + std::to_string(app.conversation->messages().size()) + " messages" +
            (note.empty() ? ", " + std::to_string(app.conversation->n_past()) + " tokens in context" : ""));
        if (!note.empty()) say("note: " + note);
      }
    }
  } else if (info->needs_media) {
    if (cmd.arg.empty()) {
      complain("/" + name + " needs a PATH: /" + name + " PATH");
      return true;
    }
    auto tokens = app.conversation->attach({name, cmd.arg});
    if (tokens.ok()) {
      say(name + " attached to the next message: " + cmd.arg + " (" + std::to_string(*tokens) + " tokens)");
    } else {
      complain(tokens.error().message);
    }
  }
  return true;
}

// One message and its reply, streamed to stdout; the figures to stderr.
void run_turn(ChatApp& app, const std::string& text, DraftSource* draft, const SpecConfig& spec) {
  std::atomic<bool>& interrupted = interrupt_requested();
  interrupted.store(false);
  ProgressLine line;
  ChatTurnHooks hooks;
  hooks.on_text = [&](std::string_view piece) {
    line.clear();
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return !interrupted.load();
  };
  hooks.on_prompt_progress = prompt_progress(line, &interrupted);
  hooks.draft = draft;
  hooks.spec = spec;
  hooks.cancel = &interrupted;  // Ctrl-C while the chat template renders
  auto result = app.conversation->turn(text, app.settings, hooks);
  line.clear();
  const bool stopped = result.ok() && result->stopped;
  const bool interrupted_now = interrupted.exchange(false);
  if (!result.ok()) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (interrupted_now) {  // the render was cancelled; the conversation is as it was
      std::fprintf(stderr, "[stopped before the reply began; the message was not sent]\n");
      return;
    }
    complain(result.error().message + " (/clear starts a new conversation)");
    return;
  }
  if (result->stats.n_gen > 0 || !stopped) std::fputc('\n', stdout);
  std::fflush(stdout);
  const GenerateStats& s = result->stats;
  if (stopped) {
    std::fprintf(stderr, s.n_gen == 0 ? "[stopped before the reply began; the message was not sent]\n"
                                      : "[stopped; the reply so far stays in the conversation]\n");
  }
  std::fprintf(stderr, "[%ld prompt tok at %.1f tok/s, %ld tok at %.1f tok/s]\n", static_cast<long>(s.n_prompt),
               s.prompt_tok_s(), static_cast<long>(s.n_gen), s.gen_tok_s());
  if (draft != nullptr) std::fprintf(stderr, "[%s]\n", spec_summary(s.spec).c_str());
  if (s.finish_reason == "context") {
    std::fprintf(stderr,
                 "[the context is full (%ld tokens): /clear starts over; or restart with a larger --ctx, or with "
                 "--context-shift to keep going]\n",
                 static_cast<long>(app.conversation->n_ctx()));
  }
  std::fflush(stderr);
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  const std::vector<FlagSpec> specs = concat(
      concat(concat(concat(concat(model_flags(), media_flags()), sampling_flags()), spec_flags()),
             context_shift_flags()),
      {
          {"--system", "-sys", "TEXT", "system prompt (/system changes it during the chat)", nullptr,
           "--system-prompt"},
          {"--system-file", "-sysf", "PATH", "read the system prompt from a file", nullptr, "--system-prompt-file"},
          {"--n-predict", "-n", "N", "most tokens per reply, -1 = until the model ends it (default 1024)", nullptr,
           "--predict"},
          {"--think", nullptr, nullptr, "let thinking models think (sets enable_thinking)"},
          {"--no-think", nullptr, nullptr, "ask thinking models not to think"},
          {"--content-special-tokens", nullptr, nullptr,
           "tokenize control-token text you type (<|im_end|>, ...) as the control token (default: as plain text; "
           "only the chat template's markup is special)"},
          {"--ctx-checkpoints", nullptr, "N|auto",
           "state checkpoints for reusing earlier turns on hybrid models (delta-net layers, sliding windows), "
           "counted in --mem; 0 = none (default auto: 8, fewer if 8 take over 1/8 of --mem)"},
          {"--context-dir", nullptr, "DIR",
           "where /save and /load keep conversations (default: the contexts of sniper serve, "
           "$XDG_CACHE_HOME/sniper/contexts or ~/.cache/sniper/contexts)"},
          {"--help", "-h", nullptr, "show this help"},
      });
  auto args = Args::parse("chat", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage(
        "chat", "MODEL [--system TEXT] [flags]", specs,
        "Talks with a model in the terminal through its own chat template. MODEL is a GGUF file or a store "
        "name (OWNER/NAME[:QUANT], pulled if needed). Type /help in the chat for its commands (/set temp 0.7, "
        "/system, /clear, /save, /load, /quit); Ctrl-C stops a reply and keeps the conversation. With --mmproj P, "
        "/image PATH attaches an image to the next message (--image F attaches F to the first).");
    return 0;
  }
  if (Status st = check_model_positionals(*args); !st.ok()) return fail(st.error());
  ChatApp app;
  auto n_predict = args->get_int("--n-predict", 1024, -1, int64_t{1} << 24);
  if (!n_predict.ok()) return fail(n_predict.error());
  app.settings.n_predict = *n_predict == 0 ? 1024 : *n_predict;
  auto sampler = sampler_from_args(*args);
  if (!sampler.ok()) return fail(sampler.error());
  app.settings.sampler = *sampler;
  if (args->has("--think") && args->has("--no-think")) return fail(make_error("pass --think or --no-think, not both"));
  if (args->has("--think")) app.settings.think = true;
  if (args->has("--no-think")) app.settings.think = false;
  app.settings.system = args->get_string("--system");
  if (args->has("--system-file")) {
    auto text = read_file(args->get_string("--system-file"));
    if (!text.ok()) return fail(text.error());
    app.settings.system = *text;
  }
  app.context_dir = args->get_string("--context-dir", server::ContextStore::default_dir());
  auto checkpoints = parse_checkpoint_count(args->get_string("--ctx-checkpoints", "auto"));
  if (!checkpoints.ok()) return fail(checkpoints.error());
  auto spec_req = parse_spec_args(*args);
  if (!spec_req.ok()) return fail(spec_req.error());
  int64_t n_checkpoints = *checkpoints;
  if (n_checkpoints != kAutoCheckpoints) n_checkpoints = std::max(n_checkpoints, spec_req->checkpoints());
  if (args->has("--mmproj") && spec_req->kind == SpecKind::kMtp) {
    return fail(make_error("--spec-type mtp does not take images (the MTP head reads token ids); use ngram or draft"));
  }
  auto loaded = load_model_and_session(*args, n_checkpoints, spec_req->draft_mem_bytes, spec_req->logit_rows(),
                                       spec_req->kind == SpecKind::kMtp);
  if (!loaded.ok()) return fail(loaded.error());
  app.loaded = &*loaded;
  auto threads = args->get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return fail(threads.error());
  auto spec = setup_spec(*spec_req, *loaded, *sampler, static_cast<int>(*threads));
  if (!spec.ok()) return fail(spec.error());
  auto tokenizer = loaded->model->tokenizer();
  if (!tokenizer.ok()) return fail(tokenizer.error());
  bool shift = false;
  auto keep_arg = context_shift_from_args(*args, loaded->model->config(), &shift);
  if (!keep_arg.ok()) return fail(keep_arg.error());
  std::optional<ChatTemplate> tmpl;
  if (!loaded->model->chat_template().empty()) {
    auto t = ChatTemplate::parse(loaded->model->chat_template());
    if (!t.ok()) return fail(make_error("the model's chat template: %s", t.error().message.c_str()));
    tmpl.emplace(std::move(t).value());
  }
  ChatConversation conversation(*loaded->session, **tokenizer, std::move(tmpl), shift, *keep_arg,
                                args->has("--content-special-tokens"));
  app.conversation = &conversation;
  conversation.set_media(loaded->mmproj.get());
  // --image and --audio: attached to the first message, in command-line order.
  for (const auto& [flag, path] : args->get_all_of({"--image", "--audio"})) {
    auto tokens = conversation.attach({flag == "--audio" ? "audio" : "image", path});
    if (!tokens.ok()) return fail(tokens.error());
  }

  const ModelConfig& c = loaded->model->config();
  const std::string file = std::filesystem::path(loaded->path).filename().string();
  std::fprintf(stderr, "sniper chat: %s (%s%s), context %ld tokens. /help for commands, Ctrl-D to quit.\n",
               c.name.empty() ? file.c_str() : c.name.c_str(), c.arch.c_str(), c.is_moe() ? ", MoE" : "",
               static_cast<long>(loaded->session->n_ctx()));
  if (loaded->model->chat_template().empty()) {
    std::fprintf(stderr, "note: the model has no chat template; using a plain 'User:/Assistant:' format\n");
  }
  std::fflush(stderr);

  install_interrupt_handler(/*second_ends_process=*/false);
  LineEditorOptions eo;
  eo.history_path = state_file_path("chat_history");
  eo.completions = chat_completions();
  std::unique_ptr<LineEditor> editor = LineEditor::open(eo);
  const std::string prompt = editor->interactive() ? "> " : "";
  bool last_interrupt_empty = false;
  while (true) {
    ReadResult r = editor->read(prompt);
    if (r.status == ReadStatus::kEof) {
      if (editor->interactive()) std::fputc('\n', stdout);
      break;
    }
    if (r.status == ReadStatus::kInterrupted) {
      if (r.was_empty && last_interrupt_empty) {
        std::fputc('\n', stdout);
        break;
      }
      last_interrupt_empty = r.was_empty;
      std::fputs(r.was_empty ? "^C  (Ctrl-C again or Ctrl-D to quit)\n" : "^C\n", stdout);
      std::fflush(stdout);
      continue;
    }
    last_interrupt_empty = false;
    if (r.text.find_first_not_of(" \t\n") == std::string::npos) continue;
    editor->add_history(r.text);
    if (std::optional<ChatCommand> cmd = parse_chat_command(r.text)) {
      if (!run_command(app, *cmd)) break;
      continue;
    }
    run_turn(app, chat_message_text(r.text), spec->source.get(), spec_req->config);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace sniper::cli
