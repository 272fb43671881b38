// SPDX-License-Identifier: MIT
// Web search without an API key: GET <search_url>?q=<query> (DuckDuckGo's HTML endpoint by
// default, any base URL in tests), parse result links, fetch the top pages in parallel, reduce them
// to text, and build the numbered-sources prompt the model answers from (citing [1], [2]).
// Invariants: at most config.search_results pages, each text capped at config.page_chars; a page
// that cannot be fetched falls back to its result snippet; nothing throws.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "agent/config.h"
#include "agent/html_text.h"
#include "base/result.h"

namespace sniper::agent {

// GET a URL (http or https, redirects followed) and return the body of a 2xx reply, at most
// max_bytes (longer bodies are cut).
[[nodiscard]] Result<std::string> fetch_url(const std::string& url, double timeout_s, size_t max_bytes = 2u << 20);

// The search page URL for a query: search_url + ("?" or "&") + "q=" + encoded query.
std::string search_page_url(const std::string& search_url, const std::string& query);

struct WebSource {
  std::string title;
  std::string url;
  std::string text;  // page text (or the snippet when the fetch failed)
  bool fetched = false;
};

// Runs a search and fetches the top results. Errors when the search page cannot be fetched or has
// no results.
[[nodiscard]] Result<std::vector<WebSource>> search_web(const std::string& query, const AgentConfig& config,
                                                        const std::atomic<bool>* cancel);

// The user message that asks the model to answer `question` from numbered sources, citing them.
std::string sources_prompt(const std::string& question, const std::vector<WebSource>& sources);

// "Sources:\n[1] title - url\n..." for printing under the answer.
std::string format_sources(const std::vector<WebSource>& sources);

// A search query from a model's rewrite reply: first non-empty line, without quotes, "Query:"
// labels, think blocks or markdown; `fallback` when nothing usable is left.
std::string clean_query(const std::string& reply, const std::string& fallback);

}  // namespace sniper::agent
