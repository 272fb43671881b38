// SPDX-License-Identifier: MIT
// HTML helpers for web search: search-result link extraction from DuckDuckGo's HTML endpoint
// (result__a anchors, /l/?uddg= redirect links decoded, ads skipped; plain links as a fallback
// for other engines) and page-to-text reduction (script/style/noscript/head dropped, tags removed,
// block tags become line breaks, entities decoded, whitespace collapsed, size capped).
// Invariants: pure functions of their input; never throw; output is valid to print as text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sniper::agent {

struct SearchResult {
  std::string title;
  std::string url;  // absolute http(s) URL of the result page
  std::string snippet;
};

// Decodes HTML character references (&amp; &lt; &gt; &quot; &#39; &nbsp; &#NNN; &#xHH; and a few
// common named ones) into UTF-8. Unknown references are kept as written.
std::string decode_entities(std::string_view text);

// Percent-decoding ('+' becomes a space) and encoding (unreserved characters kept).
std::string url_decode(std::string_view text);
std::string url_encode(std::string_view text);

// Reduces a page to readable text of at most max_chars bytes (cut at a UTF-8 boundary).
std::string html_to_text(std::string_view html, size_t max_chars);

// Extracts result links, in page order, without duplicates. `base_url` resolves "//host/..." and
// "/path" links (scheme and host of the search page).
std::vector<SearchResult> parse_search_results(std::string_view html, const std::string& base_url);

}  // namespace sniper::agent
