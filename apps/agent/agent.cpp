// SPDX-License-Identifier: MIT
// Agent core: line dispatch, routed turns, streamed chat answers with status lines (see agent.h).
// Tools live in agent_tools.cpp and slash commands in agent_commands.cpp.
#include "agent/agent.h"
#include "agent/text_util.h"

#include <cctype>
#include <cstdio>

#include "agent/slash_commands.h"
#include "agent/terminal_render.h"

namespace sniper::agent {

namespace {

// Times a request past the context is retried with the older half of the history dropped.
constexpr int kMaxHistoryTrims = 4;

// A reply refused because the prompt does not fit the model's context (sniper's
// context_length_exceeded, llama-server's "exceeds the available context size", OpenAI's
// "maximum context length").
bool is_context_overflow(FailureKind failure, const std::string& error) {
  return failure == FailureKind::kClient && error.find("context") != std::string::npos;
}

// Every backend a request for `tier` would try is cooling down after failing to answer.
bool every_backend_down(const BackendPool& pool, Tier tier) {
  const std::vector<size_t> chain = pool.chain(tier);
  if (chain.empty()) return true;
  for (size_t i : chain) {
    if (pool.cooldown_left_s(i) <= 0) return false;
  }
  return true;
}

}  // namespace

std::optional<double> parse_interval(const std::string& text) {
  std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  double mult = 1;
  char unit = t.back();
  if (unit == 's' || unit == 'm' || unit == 'h') {
    mult = unit == 's' ? 1 : unit == 'm' ? 60 : 3600;
    t.pop_back();
  }
  if (t.empty() || t.size() > 9) return std::nullopt;
  for (char c : t) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return std::nullopt;
  }
  double v = std::atof(t.c_str()) * mult;
  if (!(v > 0)) return std::nullopt;
  return v;
}

std::string extract_code_block(const std::string& reply) {
  std::string text = reply;
  size_t think_end = text.find("</think>");
  if (think_end != std::string::npos) text = text.substr(think_end + 8);
  size_t fence = text.find("```");
  if (fence == std::string::npos) return trim(text) + "\n";
  size_t body = text.find('\n', fence);
  if (body == std::string::npos) return "";
  size_t close = text.find("\n```", body);
  std::string block = text.substr(body + 1, close == std::string::npos ? std::string::npos : close - body);
  if (!block.empty() && block.back() != '\n') block += '\n';
  return block;
}

Agent::Agent(const AgentConfig& config, BackendPool* pool, AgentIo io)
    : config_(config), pool_(pool), io_(std::move(io)), thinking_(config.thinking), auto_tiers_(config.auto_tiers) {
  conversation_.set_system(config_.system_prompt);
}

std::string Agent::prompt() const { return routed_ ? "sniper> " : "raw> "; }

std::string Agent::dim(const std::string& s) const { return ansi_dim(io_.color) + s + ansi_reset(io_.color); }

bool Agent::handle_line(const std::string& raw_line) {
  std::string line = trim(raw_line);
  if (line.empty()) return true;
  if (line[0] == '/') {
    std::string word, rest;
    split_slash_line(line, &word, &rest);
    SlashResolution r = resolve_slash(word);
    if (r.kind == SlashResolution::Kind::kFound) return run_command(r.name, rest);
    if (r.kind == SlashResolution::Kind::kAmbiguous) {
      out() << "/" << word << " is ambiguous:";
      for (const std::string& c : r.candidates) out() << " /" << c;
      out() << "\n";
    } else {
      out() << "unknown command /" << word << " (/help lists them)\n";
    }
    return true;
  }
  if (!pending_media_.empty()) {
    // Media are for the model: no web search or shell routing.
    std::vector<Attachment> media = std::move(pending_media_);
    pending_media_.clear();
    if (routed_) out() << dim("-> chat (with " + std::to_string(media.size()) + " attachment(s))") << "\n";
    chat_turn(line, chat_tier(config_, auto_tiers_, line), routed_ ? "chat" : "raw", std::move(media));
    return true;
  }
  if (routed_) routed_turn(line);
  else chat_turn(line, chat_tier(config_, auto_tiers_, line), "raw");
  return true;
}

void Agent::routed_turn(const std::string& text) {
  RouteDecision d = route_request(*pool_, text, io_.cancel);
  if (cancelled()) {
    out() << "\n" << dim("[stopped]") << "\n";
    ++stats_.cancelled;
    return;
  }
  stats_.routed[static_cast<int>(d.route)]++;
  // The route is shown before the answer. A routing failure the answer will meet as well (no
  // backend, a message past the context) is reported once, by the answer.
  if (!d.error.empty() && !every_backend_down(*pool_, Tier::kFast) &&
      !is_context_overflow(FailureKind::kClient, d.error)) {
    out() << dim("-> chat (routing failed: " + d.error + ")") << "\n";
    chat_turn(text, chat_tier(config_, auto_tiers_, text), "chat");
    return;
  }
  switch (d.route) {
    case Route::kSearch:
      out() << dim("-> search") << "\n";
      search_turn(text, "");
      break;
    case Route::kShell:
      out() << dim("-> shell") << "\n";
      shell_turn(text, "");
      break;
    case Route::kChat:
      out() << dim("-> chat") << "\n";
      chat_turn(text, chat_tier(config_, auto_tiers_, text), "chat");
      break;
  }
}

ChatRequest Agent::chat_request(const nlohmann::json& messages) const {
  ChatRequest req;
  req.messages = messages;
  req.thinking = thinking_;
  req.max_tokens = config_.max_tokens;
  req.stream = true;
  return req;
}

void Agent::chat_turn(const std::string& text, Tier tier, const std::string& route, std::vector<Attachment> media) {
  std::set<MediaKind> allowed;
  std::vector<std::string> required;
  if (!media_routing(tier, media, &allowed, &required)) return;
  PoolResult r;
  size_t dropped = 0;
  for (int trim = 0;; ++trim) {
    const bool can_trim = trim < kMaxHistoryTrims && !conversation_.empty();
    ChatRequest request = chat_request(conversation_.to_messages(text, media, allowed));
    request.required_capabilities = required;
    r = stream_answer(tier, request, "", /*quiet_overflow=*/can_trim);
    if (!can_trim || !is_context_overflow(r.result.failure, r.result.error) || !r.result.content.empty()) break;
    dropped += conversation_.drop_oldest_half();
  }
  if (dropped > 0) {
    out() << dim("(the conversation outgrew the model's context: the " + std::to_string(dropped) +
                 " oldest messages were dropped; /compact summarises instead)")
          << "\n";
  }
  if (r.result.content.empty() && !r.result.ok()) {
    if (r.result.failure == FailureKind::kDown) ++unanswered_;
    return;
  }
  std::string answer = r.result.content;
  if (r.result.failure == FailureKind::kCancelled) answer += "\n[stopped]";
  conversation_.add("user", text, std::move(media));
  conversation_.add("assistant", answer);
  remember(text, answer, route, r);
}

void Agent::side_question(const std::string& text) {
  if (text.empty()) {
    out() << "usage: /btw <question>\n";
    return;
  }
  std::set<MediaKind> allowed;
  std::vector<std::string> required;
  if (!media_routing(Tier::kPrimary, {}, &allowed, &required)) return;
  ChatRequest request = chat_request(conversation_.to_messages(text, {}, allowed));
  request.required_capabilities = required;
  stream_answer(Tier::kPrimary, request);
}

PoolResult Agent::stream_answer(Tier tier, const ChatRequest& request, const std::string& trailer,
                                bool quiet_overflow) {
  MarkdownRenderer renderer(io_.color);
  bool in_reasoning = false;
  bool wrote_any = false;
  bool wrote_newline_last = true;
  auto write = [&](const std::string& s) {
    if (s.empty()) return;
    out() << s;
    out().flush();
    wrote_any = true;
    wrote_newline_last = s.back() == '\n';
  };
  DeltaFn on_delta = [&](std::string_view text, bool reasoning) {
    if (reasoning) {
      if (!in_reasoning) write(ansi_dim(io_.color) + "thinking: ");
      in_reasoning = true;
      write(std::string(text));
      return;
    }
    if (in_reasoning) {
      write(ansi_reset(io_.color) + "\n");
      in_reasoning = false;
    }
    write(renderer.feed(text));
  };
  // Notices are held until the outcome is known: a failure the pool's error line names (no
  // backend answered, a prompt past the context) is then said once, not per backend as well.
  std::vector<std::string> notices;
  auto on_notice = [&](const std::string& line) { notices.push_back(line); };
  PoolResult r = pool_->chat(tier, request, on_delta, io_.cancel, on_notice);
  if (in_reasoning) write(ansi_reset(io_.color));
  write(renderer.finish());
  if (wrote_any && !wrote_newline_last) write("\n");
  const bool overflow = is_context_overflow(r.result.failure, r.result.error);
  if (r.result.ok() || r.result.failure == FailureKind::kCancelled) {
    for (const std::string& n : notices) write(dim("(" + n + ")") + "\n");  // e.g. a fallback's reason
  }
  if (!r.result.content.empty()) write(trailer);
  if (quiet_overflow && overflow && r.result.content.empty()) return r;
  print_status(r);
  return r;
}

PoolResult Agent::ask(Tier tier, const std::string& system, const std::string& user, int max_tokens) {
  ChatRequest req;
  req.messages = nlohmann::json::array();
  req.messages.push_back({{"role", "system"}, {"content", system}});
  req.messages.push_back({{"role", "user"}, {"content", user}});
  req.temperature = 0.0;
  req.max_tokens = max_tokens;
  req.thinking = false;
  req.stream = false;
  return pool_->chat(tier, req, {}, io_.cancel,
                     [&](const std::string& line) { out() << dim("(" + line + ")") << "\n"; });
}

void Agent::print_status(const PoolResult& r) {
  const ChatResult& c = r.result;
  if (c.failure == FailureKind::kCancelled) {
    ++stats_.cancelled;
    out() << dim("[stopped]") << "\n";
    return;
  }
  if (!c.ok()) {
    ++stats_.failed;
    out() << ansi_red(io_.color) << "error: " << c.error << ansi_reset(io_.color) << "\n";
    return;
  }
  ++stats_.turns;
  stats_.completion_tokens += c.completion_tokens;
  stats_.last_tok_s = c.tokens_per_second();
  stats_.last_backend = r.backend;
  if (r.fallback) ++stats_.fallbacks;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "[%s · %d tok · %.1f tok/s · %.1fs]", r.backend.c_str(), c.completion_tokens,
                c.tokens_per_second(), c.elapsed_s);
  std::string line = buf;
  if (r.fallback) line += " [fallback: " + r.backend + "]";
  out() << dim(line) << "\n";
  out().flush();
}

void Agent::remember(const std::string& prompt, const std::string& answer, const std::string& route,
                     const PoolResult& r) {
  last_prompt_ = prompt;
  last_answer_ = answer;
  last_route_ = route;
  last_backend_ = r.backend;
  last_tok_s_ = r.result.tokens_per_second();
}

bool Agent::loop_due(std::chrono::steady_clock::time_point now) const { return loop_active() && now >= loop_next_; }

void Agent::run_loop_iteration() {
  if (!loop_active()) return;
  loop_next_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                      std::chrono::duration<double>(loop_interval_s_));
  out() << dim("[loop] " + loop_prompt_) << "\n";
  if (routed_) routed_turn(loop_prompt_);
  else chat_turn(loop_prompt_, chat_tier(config_, auto_tiers_, loop_prompt_), "raw");
}

}  // namespace sniper::agent
