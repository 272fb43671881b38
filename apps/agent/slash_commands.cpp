// SPDX-License-Identifier: MIT
// Slash command table and prefix resolution (see slash_commands.h).
#include "agent/slash_commands.h"

#include <cstdio>

namespace sniper::agent {

const std::vector<SlashCommand>& slash_commands() {
  static const std::vector<SlashCommand> kCommands = {
      {"agent", "", "routed mode: each request goes to chat, web search or shell (default)"},
      {"audio", "[file]", "attach an audio file (wav, flac, mp3, ogg) to the next message; no file: list attachments"},
      {"auto", "[on|off]", "tier routing: long or complex requests go to the heavy tier"},
      {"bad", "", "grade the last answer as bad (grade log)"},
      {"bench", "", "a short timing request against the current backend"},
      {"branch", "[name]", "save a copy of the conversation (default name: main)"},
      {"btw", "<question>", "side question answered without touching the history"},
      {"clear", "", "forget the conversation"},
      {"compact", "", "summarize the conversation into one message (via the model)"},
      {"cost", "", "savings of local tokens against the cloud price table"},
      {"doc", "<file|url> <question>",
       "answer a question about a document of any length: notes per page, then an answer from the notes"},
      {"edit", "<file> <instruction>", "have the model edit a file (diff shown, confirmation asked)"},
      {"good", "", "grade the last answer as good (grade log)"},
      {"help", "", "list the commands"},
      {"image", "[file]", "attach an image (png, jpeg, webp, gif) to the next message; no file: list attachments"},
      {"improve", "", "statistics from the grade log, weak routes and backends"},
      {"loop", "<interval> <prompt>", "repeat a prompt every interval (e.g. 30s, 5m) until /stop"},
      {"model", "[name|auto]", "show the backends, or pin one (auto: unpin)"},
      {"quit", "", "leave the agent"},
      {"raw", "", "plain chat mode without routing"},
      {"read", "<file>", "add a file's content to the conversation"},
      {"restore", "[name]", "go back to a saved branch (default name: main)"},
      {"save", "<file>", "write the conversation (markdown, or JSON for .json)"},
      {"search", "<query>", "web search and answer with cited sources"},
      {"shell", "<command>", "run a shell command (asks unless read-only)"},
      {"stats", "", "session statistics: turns, tokens, speed, backends"},
      {"stop", "", "stop a running /loop"},
      {"system", "[message]", "show or set the system prompt"},
      {"think", "[on|off]", "thinking for chat answers (routing never thinks)"},
      {"tools", "", "list the tools and their settings"},
      {"write", "<file> <instruction>", "have the model write a file (diff shown, confirmation asked)"},
  };
  return kCommands;
}

void split_slash_line(std::string_view line, std::string* word, std::string* rest) {
  size_t b = line.find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    word->clear();
    rest->clear();
    return;
  }
  line.remove_prefix(b);
  if (!line.empty() && line[0] == '/') line.remove_prefix(1);
  size_t sp = line.find_first_of(" \t");
  *word = std::string(line.substr(0, sp));
  if (sp == std::string_view::npos) {
    rest->clear();
    return;
  }
  std::string_view r = line.substr(sp);
  size_t rb = r.find_first_not_of(" \t");
  size_t re = r.find_last_not_of(" \t\r\n");
  *rest = rb == std::string_view::npos ? "" : std::string(r.substr(rb, re - rb + 1));
}

std::vector<std::string> complete_slash(std::string_view prefix) {
  if (!prefix.empty() && prefix[0] == '/') prefix.remove_prefix(1);
  std::vector<std::string> out;
  for (const SlashCommand& c : slash_commands()) {
    if (std::string_view(c.name).substr(0, prefix.size()) == prefix) out.push_back(c.name);
  }
  return out;
}

SlashResolution resolve_slash(std::string_view word) {
  if (!word.empty() && word[0] == '/') word.remove_prefix(1);
  SlashResolution r;
  if (word.empty()) {
    r.kind = SlashResolution::Kind::kAmbiguous;
    r.candidates = complete_slash("");
    return r;
  }
  for (const SlashCommand& c : slash_commands()) {
    if (word == c.name) {
      r.kind = SlashResolution::Kind::kFound;
      r.name = c.name;
      return r;
    }
  }
  r.candidates = complete_slash(word);
  if (r.candidates.size() == 1) {
    r.kind = SlashResolution::Kind::kFound;
    r.name = r.candidates[0];
    r.candidates.clear();
  } else if (r.candidates.size() > 1) {
    r.kind = SlashResolution::Kind::kAmbiguous;
  }
  return r;
}

std::string slash_help() {
  std::string out;
  char buf[256];
  for (const SlashCommand& c : slash_commands()) {
    std::string head = std::string("/") + c.name + (c.args[0] ? std::string(" ") + c.args : "");
    std::snprintf(buf, sizeof(buf), "  %-28s %s\n", head.c_str(), c.help);
    out += buf;
  }
  return out;
}

}  // namespace sniper::agent
