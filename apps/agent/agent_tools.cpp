// SPDX-License-Identifier: MIT
// The agent's tool turns: web search with cited sources, shell commands (read-only check, y/N,
// timeout, output cap) and model-driven file writes/edits (diff shown, confirmation required).
#include "agent/agent.h"

#include <cstdio>

#include "agent/file_tool.h"
#include "agent/terminal_render.h"
#include "agent/web_search.h"

namespace sniper::agent {

namespace {

constexpr const char* kRewriteSystem =
    "Rewrite the user's request as a short web search query (a few keywords). Reply with only the query.";

constexpr size_t kShellHistoryChars = 4000;
constexpr size_t kReadFileMaxBytes = 64 * 1024;

std::string shell_system(const std::string& cwd) {
  return "You write one POSIX shell command for the user's request, to run with /bin/sh on Linux in the working "
         "directory " +
         cwd +
         ". Prefer simple read-only commands. Reply with only the command: no explanation, "
         "no code fence.";
}

}  // namespace

void Agent::search_turn(const std::string& text, const std::string& explicit_query) {
  std::string query = explicit_query;
  if (query.empty()) {
    PoolResult q = ask(Tier::kFast, kRewriteSystem, text, 32);
    if (cancelled()) {
      print_status(q);
      return;
    }
    query = clean_query(q.result.ok() ? q.result.content : "", text);
  }
  out() << dim("searching: " + query) << "\n";
  out().flush();
  auto sources = search_web(query, config_, io_.cancel);
  if (!sources.ok()) {
    out() << dim("(search failed: " + sources.error().message + "; answering without sources)") << "\n";
    chat_turn(text, chat_tier(config_, auto_tiers_, text), "search");
    return;
  }
  for (size_t i = 0; i < sources->size(); ++i) {
    const WebSource& s = (*sources)[i];
    out() << dim("[" + std::to_string(i + 1) + "] " + s.url + (s.fetched ? "" : " (snippet only)")) << "\n";
  }
  std::string listing = format_sources(*sources);
  PoolResult r = stream_answer(chat_tier(config_, auto_tiers_, text),
                               chat_request(conversation_.to_messages(sources_prompt(text, *sources))), listing);
  if (r.result.content.empty() && !r.result.ok()) return;
  std::string answer = r.result.content + "\n\n" + listing;
  conversation_.add("user", text);
  conversation_.add("assistant", answer);
  remember(text, answer, "search", r);
}

void Agent::shell_turn(const std::string& text, const std::string& explicit_command) {
  std::string command = explicit_command;
  PoolResult written;
  if (command.empty()) {
    written = ask(Tier::kPrimary, shell_system(io_.cwd), text, 200);
    if (!written.result.ok()) {
      print_status(written);
      return;
    }
    command = extract_command(written.result.content);
    if (command.empty()) {
      out() << "the model did not write a command\n";
      return;
    }
  }
  const std::string reason = confirmation_reason(command, config_.extra_read_only, io_.cwd);
  out() << ansi_bold(io_.color) << "$ " << command << ansi_reset(io_.color)
        << (reason.empty() ? "" : dim("  (needs confirmation: " + reason + ")")) << "\n";
  out().flush();
  ShellOptions opts;
  opts.cwd = io_.cwd;
  opts.timeout_s = config_.shell_timeout_s;
  opts.output_cap_bytes = config_.shell_output_cap_bytes;
  opts.cancel = io_.cancel;
  auto d = run_shell_confirmed(command, opts, config_.extra_read_only, io_.confirm);
  if (!d.ok()) {
    out() << ansi_red(io_.color) << "error: " << d.error().message << ansi_reset(io_.color) << "\n";
    return;
  }
  std::string record;
  if (!d->ran) {
    out() << dim("(not run)") << "\n";
    record = "Proposed `" + command + "` (declined, not run).";
  } else {
    const ShellResult& s = d->result;
    out() << s.output;
    if (!s.output.empty() && s.output.back() != '\n') out() << "\n";
    char buf[128];
    std::snprintf(buf, sizeof(buf), "[exit %d · %.2fs%s%s%s]", s.exit_code, s.elapsed_s,
                  s.timed_out ? " · timed out" : "", s.cancelled ? " · stopped" : "",
                  s.truncated ? " · output truncated" : "");
    out() << dim(buf) << "\n";
    std::string shown = s.output.substr(0, kShellHistoryChars);
    record = "Ran `" + command + "` (exit " + std::to_string(s.exit_code) + "):\n```\n" + shown +
             (s.output.size() > kShellHistoryChars ? "\n...[cut]" : "") + "\n```";
  }
  out().flush();
  conversation_.add("user", text);
  conversation_.add("assistant", record);
  remember(text, record, "shell", written);
}

void Agent::read_file_command(const std::string& args) {
  if (args.empty()) {
    out() << "usage: /read <file>\n";
    return;
  }
  std::string path = args[0] == '/' ? args : io_.cwd + "/" + args;
  auto content = read_text_file(path, kReadFileMaxBytes);
  if (!content.ok()) {
    out() << "error: " << content.error().message << "\n";
    return;
  }
  conversation_.add("user", "Here is the file " + args + ":\n```\n" + content.value() + "\n```");
  conversation_.add("assistant", "I have read " + args + ".");
  out() << dim("(read " + args + ": " + std::to_string(content->size()) + " bytes into the conversation)") << "\n";
}

void Agent::write_file_command(const std::string& args, bool edit) {
  size_t sp = args.find(' ');
  if (args.empty() || sp == std::string::npos) {
    out() << "usage: /" << (edit ? "edit" : "write") << " <file> <instruction>\n";
    return;
  }
  std::string name = args.substr(0, sp);
  std::string instruction = args.substr(sp + 1);
  std::string path = name[0] == '/' ? name : io_.cwd + "/" + name;
  std::string user;
  if (edit) {
    auto content = read_text_file(path, kReadFileMaxBytes);
    if (!content.ok()) {
      out() << "error: " << content.error().message << "\n";
      return;
    }
    user = "File " + name + ":\n```\n" + content.value() + "```\nInstruction: " + instruction;
  } else {
    user = "Write the file " + name + ": " + instruction;
  }
  PoolResult r = ask(Tier::kPrimary,
                     "You write files. Reply with the complete new content of the file in one fenced code block and "
                     "nothing else.",
                     user, 4096);
  if (!r.result.ok()) {
    print_status(r);
    return;
  }
  std::string content = extract_code_block(r.result.content);
  auto change = write_file_confirmed(path, content, out(), io_.confirm);
  if (!change.ok()) {
    out() << "error: " << change.error().message << "\n";
    return;
  }
  conversation_.add("user", std::string(edit ? "Edit " : "Write ") + name + ": " + instruction);
  conversation_.add("assistant", change->applied ? "Wrote " + name + ":\n" + change->diff
                                                 : "Proposed a change to " + name + " (declined).");
}

}  // namespace sniper::agent
