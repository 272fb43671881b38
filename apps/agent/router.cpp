// SPDX-License-Identifier: MIT
// Plain-text routing, tier choice and routing evaluation (see router.h).
#include "agent/router.h"
#include "agent/text_util.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "agent/failover.h"
#include "server/bounded_json.h"

namespace sniper::agent {

namespace {

// Removes <think>...</think> blocks; an unclosed <think> removes the rest.
std::string strip_think(std::string_view text) {
  std::string s(text);
  std::string l = lower(s);
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t open = l.find("<think>", pos);
    if (open == std::string::npos) {
      out += s.substr(pos);
      break;
    }
    out += s.substr(pos, open - pos);
    size_t close = l.find("</think>", open);
    if (close == std::string::npos) break;
    pos = close + 8;
  }
  // A stray closing tag (the template opened the block in the prompt): keep what follows it.
  std::string lo = lower(out);
  size_t stray = lo.rfind("</think>");
  if (stray != std::string::npos) out = out.substr(stray + 8);
  return out;
}

constexpr const char* kRoutingSystem =
    "You are a request router for a terminal assistant. Classify the user's request with exactly one word:\n"
    "search - needs fresh or factual information from the web (news, prices, weather, releases, docs, "
    "facts about people, places or products)\n"
    "shell - wants something done or inspected on this computer (files, folders, processes, disk, git, "
    "running a command)\n"
    "chat - anything else (explanations, writing, math, code help, opinions, conversation)\n"
    "Reply with only the word: search, shell or chat.";

}  // namespace

const char* route_name(Route route) {
  switch (route) {
    case Route::kChat: return "chat";
    case Route::kSearch: return "search";
    case Route::kShell: return "shell";
  }
  return "chat";
}

Route parse_route(std::string_view reply) {
  std::string text = lower(strip_think(reply));
  std::string word;
  auto check = [&]() -> int {
    if (word == "search") return 1;
    if (word == "shell") return 2;
    if (word == "chat") return 3;
    return 0;
  };
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (std::isalpha(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    int hit = check();
    if (hit == 1) return Route::kSearch;
    if (hit == 2) return Route::kShell;
    if (hit == 3) return Route::kChat;
    word.clear();
  }
  return Route::kChat;
}

ChatRequest routing_request(const std::string& user_text) {
  ChatRequest req;
  req.messages = nlohmann::json::array();
  req.messages.push_back({{"role", "system"}, {"content", kRoutingSystem}});
  req.messages.push_back(
      {{"role", "user"}, {"content", "Request: " + user_text + "\nAnswer with one word (search, shell or chat):"}});
  req.temperature = 0.0;
  req.max_tokens = 8;
  req.thinking = false;
  req.stream = false;
  return req;
}

Tier chat_tier(const AgentConfig& config, bool auto_tiers, const std::string& user_text) {
  if (!auto_tiers) return Tier::kPrimary;
  if (static_cast<int>(user_text.size()) >= config.heavy_min_chars) return Tier::kHeavy;
  std::string l = lower(user_text);
  for (const std::string& k : config.heavy_keywords) {
    if (!k.empty() && l.find(lower(k)) != std::string::npos) return Tier::kHeavy;
  }
  return Tier::kPrimary;
}

RouteDecision route_request(BackendPool& pool, const std::string& user_text, const std::atomic<bool>* cancel) {
  RouteDecision d;
  PoolResult r = pool.chat(Tier::kFast, routing_request(user_text), {}, cancel);
  d.backend = r.backend;
  d.elapsed_s = r.result.elapsed_s;
  if (!r.result.ok()) {
    d.error = r.result.error;
    return d;
  }
  d.raw_reply = r.result.content;
  d.route = parse_route(r.result.content);
  return d;
}

Result<std::vector<LabelledRequest>> parse_routing_set(const std::string& jsonl) {
  std::vector<LabelledRequest> out;
  std::istringstream in(jsonl);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    nlohmann::json j;  // bounded while parsing (nesting, counts); a malformed line stays discarded
    if (!server::parse_json_bounded(line, &j).empty()) j = nlohmann::json(nlohmann::json::value_t::discarded);
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string() || !j.contains("route") ||
        !j["route"].is_string())
      return make_error("routing set line %d must be {\"text\": string, \"route\": string}", line_no);
    LabelledRequest r;
    r.text = j["text"].get<std::string>();
    std::string route = j["route"].get<std::string>();
    if (route == "search") r.label = Route::kSearch;
    else if (route == "shell") r.label = Route::kShell;
    else if (route == "chat") r.label = Route::kChat;
    else
      return make_error("routing set line %d: route is '%s' but must be search, shell or chat", line_no, route.c_str());
    out.push_back(std::move(r));
  }
  return out;
}

RoutingEval evaluate_routing(BackendPool& pool, const std::vector<LabelledRequest>& set, std::ostream* progress,
                             const std::atomic<bool>* cancel) {
  RoutingEval e;
  auto t0 = std::chrono::steady_clock::now();
  for (const LabelledRequest& item : set) {
    if (cancel && cancel->load()) break;
    RouteDecision d = route_request(pool, item.text, cancel);
    if (!d.error.empty()) ++e.failed_requests;
    e.confusion[static_cast<int>(item.label)][static_cast<int>(d.route)]++;
    ++e.total;
    if (d.route == item.label) ++e.correct;
    if (progress) {
      *progress << (d.route == item.label ? '.' : (d.error.empty() ? 'x' : 'E'));
      progress->flush();
    }
  }
  if (progress) *progress << '\n';
  e.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

void print_routing_eval(const RoutingEval& e, std::ostream& out) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "routing accuracy: %d/%d = %.1f%%  (%d failed requests, %.1fs, %.2fs/request)\n",
                e.correct, e.total, 100.0 * e.accuracy(), e.failed_requests, e.elapsed_s,
                e.total ? e.elapsed_s / e.total : 0.0);
  out << buf;
  out << "confusion matrix (rows: label, columns: predicted)\n";
  std::snprintf(buf, sizeof(buf), "%-8s %8s %8s %8s %8s\n", "", "chat", "search", "shell", "recall");
  out << buf;
  for (int l = 0; l < kNumRoutes; ++l) {
    int row = 0;
    for (int p = 0; p < kNumRoutes; ++p) row += e.confusion[l][p];
    double recall = row ? 100.0 * e.confusion[l][l] / row : 0.0;
    std::snprintf(buf, sizeof(buf), "%-8s %8d %8d %8d %7.1f%%\n", route_name(static_cast<Route>(l)), e.confusion[l][0],
                  e.confusion[l][1], e.confusion[l][2], recall);
    out << buf;
  }
}

}  // namespace sniper::agent
