// SPDX-License-Identifier: MIT
// Routing by plain text: the fast tier is asked for one word (search, shell or chat) with thinking
// off, temperature 0 and a few tokens, and the reply is parsed tolerantly (think blocks and
// punctuation stripped, first matching word, case-insensitive; anything else is chat), so even a
// 2-bit model whose JSON breaks routes usefully. Also: tier choice for chat turns (long or complex
// requests -> heavy) and the routing evaluation (labelled JSONL set -> accuracy, confusion matrix).
// Invariants: parse_route never fails; the eval touches no state outside the pool it is given.
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/backend_client.h"
#include "agent/config.h"
#include "base/result.h"

namespace sniper::agent {

class BackendPool;

enum class Route { kChat, kSearch, kShell };
constexpr int kNumRoutes = 3;

// "chat" | "search" | "shell".
const char* route_name(Route route);

// Tolerant parse of a model's routing reply: removes <think>...</think> blocks (and an unclosed
// <think> up to the end), markdown and punctuation, then returns the first word that is search,
// shell or chat (case-insensitive). Anything else -> kChat.
Route parse_route(std::string_view reply);

// The request that asks a model to route `user_text` (thinking off, temperature 0, small max_tokens).
ChatRequest routing_request(const std::string& user_text);

// The tier for a chat turn: heavy when auto tiers are on and the text is long or contains one of
// the configured keywords (case-insensitive), else primary.
Tier chat_tier(const AgentConfig& config, bool auto_tiers, const std::string& user_text);

struct RouteDecision {
  Route route = Route::kChat;
  std::string raw_reply;  // what the model said ("" when the request failed)
  std::string backend;    // who answered
  std::string error;      // non-empty when every backend failed (route falls back to chat)
  double elapsed_s = 0;
};

// Asks the fast tier of `pool` to route `user_text`.
RouteDecision route_request(BackendPool& pool, const std::string& user_text, const std::atomic<bool>* cancel);

struct LabelledRequest {
  std::string text;
  Route label = Route::kChat;
};

// Parses a routing set: one JSON object per line {"text": "...", "route": "search|shell|chat"};
// blank lines and lines starting with '#' are skipped. Errors name the line.
[[nodiscard]] Result<std::vector<LabelledRequest>> parse_routing_set(const std::string& jsonl);

struct RoutingEval {
  int confusion[kNumRoutes][kNumRoutes] = {};  // [label][predicted]
  int total = 0;
  int correct = 0;
  int failed_requests = 0;
  double elapsed_s = 0;
  double accuracy() const { return total ? static_cast<double>(correct) / total : 0; }
};

// Routes every request and tallies predictions against labels. Progress (one char per request)
// goes to `progress` when non-null.
RoutingEval evaluate_routing(BackendPool& pool, const std::vector<LabelledRequest>& set, std::ostream* progress,
                             const std::atomic<bool>* cancel);

// Writes accuracy, the confusion matrix and per-route recall.
void print_routing_eval(const RoutingEval& eval, std::ostream& out);

}  // namespace sniper::agent
