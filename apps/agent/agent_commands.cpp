// SPDX-License-Identifier: MIT
// Slash command handlers of the agent (table and resolution in slash_commands.cpp).
#include "agent/agent.h"

#include <cstdio>
#include <ctime>

#include "agent/grade_log.h"
#include "agent/slash_commands.h"
#include "agent/terminal_render.h"

namespace sniper::agent {

namespace {

constexpr const char* kDefaultBranch = "main";

// Parses "on"/"off" (or empty = toggle) into the new value.
bool on_off(const std::string& args, bool current, bool* ok) {
  *ok = true;
  if (args.empty()) return !current;
  if (args == "on" || args == "1" || args == "true") return true;
  if (args == "off" || args == "0" || args == "false") return false;
  *ok = false;
  return current;
}

}  // namespace

bool Agent::run_command(const std::string& name, const std::string& args) {
  bool ok = true;
  if (name == "quit") return false;
  if (name == "help") {
    out() << "Commands (an unambiguous prefix works, e.g. /sta):\n" << slash_help();
  } else if (name == "agent") {
    routed_ = true;
    out() << "routed mode: requests go to chat, web search or shell\n";
  } else if (name == "raw") {
    routed_ = false;
    out() << "raw mode: plain chat without routing (/agent to go back)\n";
  } else if (name == "search") {
    if (args.empty()) out() << "usage: /search <query>\n";
    else search_turn(args, args);
  } else if (name == "shell") {
    if (args.empty()) out() << "usage: /shell <command>\n";
    else shell_turn("/shell " + args, args);
  } else if (name == "stats") {
    cmd_stats();
  } else if (name == "clear") {
    conversation_.clear();
    const size_t dropped = pending_media_.size();
    pending_media_.clear();
    out() << "conversation cleared";
    if (dropped > 0) out() << " (and " << dropped << " attachment(s) dropped)";
    out() << "\n";
  } else if (name == "model") {
    cmd_model(args);
  } else if (name == "bench") {
    cmd_bench();
  } else if (name == "cost") {
    cmd_cost();
  } else if (name == "good" || name == "bad") {
    cmd_grade(name);
  } else if (name == "improve") {
    auto s = summarize_grades(io_.grade_log);
    if (!s.ok()) out() << "error: " << s.error().message << "\n";
    else print_grade_summary(s.value(), out());
  } else if (name == "save") {
    if (args.empty()) {
      out() << "usage: /save <file>\n";
    } else {
      std::string path = args[0] == '/' ? args : io_.cwd + "/" + args;
      Status st = conversation_.save(path);
      out() << (st.ok() ? "saved to " + args : "error: " + st.error().message) << "\n";
    }
  } else if (name == "branch") {
    std::string b = args.empty() ? kDefaultBranch : args;
    conversation_.branch(b);
    out() << "saved branch '" << b << "' (" << conversation_.messages().size() << " messages); /restore " << b
          << " goes back to it\n";
  } else if (name == "restore") {
    std::string b = args.empty() ? kDefaultBranch : args;
    if (conversation_.restore(b)) {
      out() << "restored branch '" << b << "' (" << conversation_.messages().size() << " messages)\n";
    } else {
      out() << "no branch '" << b << "'";
      auto names = conversation_.branch_names();
      if (!names.empty()) {
        out() << " (branches:";
        for (const auto& n : names) out() << " " << n;
        out() << ")";
      }
      out() << "\n";
    }
  } else if (name == "system") {
    if (args.empty()) {
      out() << "system prompt: " << (conversation_.system().empty() ? "(none)" : conversation_.system()) << "\n";
    } else {
      conversation_.set_system(args);
      out() << "system prompt set\n";
    }
  } else if (name == "tools") {
    cmd_tools();
  } else if (name == "image" || name == "audio") {
    cmd_attach(name == "image" ? MediaKind::kImage : MediaKind::kAudio, args);
  } else if (name == "compact") {
    cmd_compact();
  } else if (name == "loop") {
    cmd_loop(args);
  } else if (name == "stop") {
    if (loop_active()) out() << "loop stopped\n";
    else out() << "no loop running\n";
    loop_prompt_.clear();
  } else if (name == "btw") {
    side_question(args);
  } else if (name == "auto") {
    auto_tiers_ = on_off(args, auto_tiers_, &ok);
    if (ok) out() << "auto tiers " << (auto_tiers_ ? "on: long or complex requests use the heavy tier" : "off") << "\n";
  } else if (name == "think") {
    thinking_ = on_off(args, thinking_, &ok);
    if (ok) out() << "thinking " << (thinking_ ? "on" : "off") << " for chat answers\n";
  } else if (name == "read") {
    read_file_command(args);
  } else if (name == "doc") {
    doc_command(args);
  } else if (name == "write" || name == "edit") {
    write_file_command(args, name == "edit");
  }
  if (!ok) out() << "usage: /" << name << " [on|off]\n";
  out().flush();
  return true;
}

void Agent::cmd_model(const std::string& args) {
  if (!args.empty()) {
    std::string target = args == "auto" ? "" : args;
    if (!pool_->pin(target)) {
      out() << "no backend named '" << args << "'\n";
      return;
    }
    out() << (target.empty() ? "backend choice: automatic (tiers and failover)" : "pinned backend: " + target) << "\n";
    return;
  }
  out() << "backends (" << (pool_->pinned().empty() ? "automatic" : "pinned: " + pool_->pinned()) << "):\n";
  for (size_t i = 0; i < pool_->size(); ++i) {
    const Backend& b = pool_->backend(i);
    const BackendConfig& c = b.client.config();
    char buf[512];
    double left = pool_->cooldown_left_s(i);
    std::string state = left > 0 ? "cooling down " + std::to_string(static_cast<int>(left + 0.5)) + "s" : "available";
    std::snprintf(buf, sizeof(buf), "  %-12s %-8s %-6s %s%s  %s\n", c.name.c_str(), tier_name(c.role),
                  c.local ? "local" : "remote", c.url.c_str(), c.model.empty() ? "" : (" model=" + c.model).c_str(),
                  state.c_str());
    out() << buf;
  }
}

void Agent::cmd_stats() {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "mode %s · thinking %s · auto tiers %s · history %zu messages (%zu chars)\n",
                routed_ ? "agent" : "raw", thinking_ ? "on" : "off", auto_tiers_ ? "on" : "off",
                conversation_.messages().size(), conversation_.char_count());
  out() << buf;
  std::snprintf(buf, sizeof(buf),
                "answers %d · routed chat %d, search %d, shell %d · fallbacks %d · stopped %d · failed %d\n",
                stats_.turns, stats_.routed[0], stats_.routed[1], stats_.routed[2], stats_.fallbacks, stats_.cancelled,
                stats_.failed);
  out() << buf;
  std::snprintf(buf, sizeof(buf), "last answer: %s, %.1f tok/s · %ld tokens generated this session\n",
                stats_.last_backend.empty() ? "-" : stats_.last_backend.c_str(), stats_.last_tok_s,
                stats_.completion_tokens);
  out() << buf;
  for (size_t i = 0; i < pool_->size(); ++i) {
    const Backend& b = pool_->backend(i);
    std::snprintf(buf, sizeof(buf),
                  "  %-12s %3d requests %3d failures %7ld prompt + %7ld completion tokens  %.1f tok/s\n",
                  b.name().c_str(), b.stats.requests, b.stats.failures, b.stats.prompt_tokens,
                  b.stats.completion_tokens, b.stats.last_tok_s);
    out() << buf;
  }
}

void Agent::cmd_cost() {
  long local_in = 0, local_out = 0, remote_in = 0, remote_out = 0;
  for (size_t i = 0; i < pool_->size(); ++i) {
    const Backend& b = pool_->backend(i);
    (b.client.config().local ? local_in : remote_in) += b.stats.prompt_tokens;
    (b.client.config().local ? local_out : remote_out) += b.stats.completion_tokens;
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "local: %ld prompt + %ld completion tokens · remote: %ld + %ld\n", local_in,
                local_out, remote_in, remote_out);
  out() << buf;
  if (config_.cloud_prices.empty()) {
    out() << "no cloud_prices in the config\n";
    return;
  }
  for (const CloudPrice& p : config_.cloud_prices) {
    double saved = local_in / 1e6 * p.input_per_mtok + local_out / 1e6 * p.output_per_mtok;
    std::snprintf(buf, sizeof(buf), "  saved vs %-16s $%.4f  (at $%.2f in / $%.2f out per 1M tokens)\n", p.name.c_str(),
                  saved, p.input_per_mtok, p.output_per_mtok);
    out() << buf;
  }
}

void Agent::cmd_bench() {
  ChatRequest req;
  req.messages = nlohmann::json::array({{{"role", "user"}, {"content", "Count from 1 to 40, separated by spaces."}}});
  req.temperature = 0.0;
  req.max_tokens = 64;
  req.thinking = false;
  req.stream = true;
  PoolResult r = pool_->chat(Tier::kPrimary, req, {}, io_.cancel);
  if (!r.result.ok()) {
    out() << "bench failed: " << r.result.error << "\n";
    return;
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "bench %s: %d tokens, time to first token %.3fs, %.1f tok/s decode, %.2fs total\n",
                r.backend.c_str(), r.result.completion_tokens, r.result.ttft_s, r.result.tokens_per_second(),
                r.result.elapsed_s);
  out() << buf;
}

void Agent::cmd_grade(const std::string& grade) {
  if (last_answer_.empty()) {
    out() << "no answer to grade yet\n";
    return;
  }
  GradeEntry e;
  e.ts = static_cast<long>(std::time(nullptr));
  e.grade = grade;
  e.route = last_route_;
  e.backend = last_backend_;
  e.prompt = last_prompt_;
  e.answer = last_answer_;
  e.tok_s = last_tok_s_;
  Status st = append_grade(io_.grade_log, e);
  out() << (st.ok() ? "graded " + grade + " (" + io_.grade_log + ")" : "error: " + st.error().message) << "\n";
}

void Agent::cmd_compact() {
  if (conversation_.empty()) {
    out() << "nothing to compact\n";
    return;
  }
  size_t before = conversation_.messages().size();
  PoolResult r = ask(Tier::kPrimary,
                     "Summarize the conversation below in a short paragraph. Keep facts, names, numbers, decisions "
                     "and open questions. Reply with only the summary.",
                     conversation_.transcript(), 512);
  if (!r.result.ok() || r.result.content.empty()) {
    out() << "compact failed: " << (r.result.ok() ? "empty summary" : r.result.error) << "\n";
    return;
  }
  std::string summary = r.result.content;
  size_t think_end = summary.find("</think>");
  if (think_end != std::string::npos) summary = summary.substr(think_end + 8);
  conversation_.compact(summary);
  out() << "compacted " << before << " messages into one summary (" << summary.size() << " chars)\n";
}

void Agent::cmd_loop(const std::string& args) {
  size_t sp = args.find(' ');
  auto interval = sp == std::string::npos ? std::nullopt : parse_interval(args.substr(0, sp));
  if (!interval) {
    out() << "usage: /loop <interval> <prompt>   (interval like 30s, 5m, 1h)\n";
    return;
  }
  loop_prompt_ = args.substr(sp + 1);
  loop_interval_s_ = *interval;
  loop_next_ = std::chrono::steady_clock::now();
  out() << "looping every " << args.substr(0, sp) << " (/stop to end)\n";
  run_loop_iteration();
}

void Agent::cmd_tools() {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "web search  %s  (%d pages, %d chars each; /search <query>)\n",
                config_.search_url.c_str(), config_.search_results, config_.page_chars);
  out() << buf;
  std::snprintf(buf, sizeof(buf),
                "shell       /bin/sh -c in %s, timeout %.0fs, output cap %zu bytes; asks y/N unless read-only "
                "(/shell <command>)\n",
                io_.cwd.c_str(), config_.shell_timeout_s, config_.shell_output_cap_bytes);
  out() << buf;
  out() << "files       /read <file>, /write <file> <instruction>, /edit <file> <instruction> (diff + y/N)\n";
}

}  // namespace sniper::agent
