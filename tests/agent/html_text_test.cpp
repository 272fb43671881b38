// SPDX-License-Identifier: MIT
// Search-result parsing and page-to-text reduction on saved pages (tests/agent/data).
#include "agent/html_text.h"

#include <gtest/gtest.h>

#include "agent/scripted_server.h"
#include "agent/web_search.h"

namespace sniper::agent {
namespace {

std::string data(const std::string& name) {
  return testing::read_test_file(std::string(SNIPER_AGENT_TEST_DATA) + "/" + name);
}

std::string substitute(std::string page, const std::string& base) {
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t p = page.find(from); p != std::string::npos; p = page.find(from, p + to.size()))
      page.replace(p, from.size(), to);
  };
  replace("{{BASE_ENC}}", url_encode(base));
  replace("{{BASE}}", base);
  return page;
}

TEST(Entities, DecodeCommonAndNumeric) {
  EXPECT_EQ(decode_entities("a &amp; b &lt;c&gt; &quot;d&quot; &#39;e&#39;"), "a & b <c> \"d\" 'e'");
  EXPECT_EQ(decode_entities("&#8212;&#x201C;&mdash;&hellip;"), "\u2014\u201c\u2014\u2026");
  EXPECT_EQ(decode_entities("AT&T &unknown; & done"), "AT&T &unknown; & done");
  EXPECT_EQ(decode_entities("&#0;&#xD800;"), "\ufffd\ufffd");
}

TEST(Url, EncodeDecodeRoundTrip) {
  EXPECT_EQ(url_encode("sniper engine news?"), "sniper%20engine%20news%3F");
  EXPECT_EQ(url_decode("http%3A%2F%2Fx.org%2Fa%20b+c"), "http://x.org/a b c");
  EXPECT_EQ(url_decode("bad%zz%4"), "bad%zz%4");
  EXPECT_EQ(search_page_url("https://html.duckduckgo.com/html/", "a b"), "https://html.duckduckgo.com/html/?q=a%20b");
  EXPECT_EQ(search_page_url("http://h/s?kl=us-en", "x"), "http://h/s?kl=us-en&q=x");
}

TEST(SearchResults, DuckDuckGoPage) {
  std::string base = "http://127.0.0.1:1234";
  auto results =
      parse_search_results(substitute(data("ddg_results.html"), base), "https://html.duckduckgo.com/html/?q=x");
  ASSERT_EQ(results.size(), 3u);  // ad skipped, duplicate removed, script content ignored
  EXPECT_EQ(results[0].url, base + "/article/sniper");
  EXPECT_EQ(results[0].title, "Sniper: a CPU LLM engine \u2014 overview");
  EXPECT_EQ(results[0].snippet, "Sniper runs large language models on the CPU\u2026");
  EXPECT_EQ(results[1].url, base + "/article/experts");
  EXPECT_EQ(results[1].title, "Streaming experts from SSD | Engine notes");
  EXPECT_EQ(results[2].url, base + "/missing-page");
  EXPECT_EQ(results[2].snippet, "Snippet of the missing page: quantized kernels.");
}

TEST(SearchResults, GenericPageFallsBackToExternalLinks) {
  std::string html =
      "<a href=\"/settings\">Settings</a><a href=\"https://a.example/x\">A</a>"
      "<a href='//b.example/y'>B &amp; co</a><a href=\"javascript:void(0)\">J</a>";
  auto results = parse_search_results(html, "https://search.example/?q=1");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].url, "https://a.example/x");
  EXPECT_EQ(results[1].url, "https://b.example/y");
  EXPECT_EQ(results[1].title, "B & co");
}

TEST(PageToText, ArticleIsCleaned) {
  std::string text = html_to_text(data("article_sniper.html"), 10000);
  EXPECT_EQ(text.find("analytics"), std::string::npos) << text;        // script
  EXPECT_EQ(text.find("font-family"), std::string::npos) << text;      // style
  EXPECT_EQ(text.find("comment"), std::string::npos) << text;          // <!-- -->
  EXPECT_EQ(text.find("JavaScript"), std::string::npos) << text;       // noscript
  EXPECT_EQ(text.find("Sniper overview"), std::string::npos) << text;  // <head><title>
  EXPECT_EQ(text.find("Home"), std::string::npos) << text;             // <nav>
  EXPECT_NE(text.find("Sniper \u2014 a CPU LLM engine"), std::string::npos) << text;
  EXPECT_NE(text.find("Sniper runs large language models on ordinary CPUs & streams weights from fast SSDs."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Q4_K, Q6_K <and> Q8_0 quantizations \u2014 and \u201cmixture of experts\u201d models."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- Fast decode\n- Small memory footprint"), std::string::npos) << text;
  EXPECT_EQ(text.find("  "), std::string::npos) << "whitespace not collapsed: " << text;
  EXPECT_EQ(text.find("\n\n\n"), std::string::npos);
}

TEST(PageToText, CapRespectsUtf8) {
  std::string html = "<p>" + std::string(10, 'a') + "\u00e9\u00e9\u00e9</p>";
  std::string text = html_to_text(html, 11);  // cuts inside the first 2-byte character
  EXPECT_EQ(text, std::string(10, 'a'));
  EXPECT_EQ(html_to_text("<p>x</p>", 0), "");
}

TEST(CleanQuery, FromModelReplies) {
  EXPECT_EQ(clean_query("\"sniper engine news\"", "fallback"), "sniper engine news");
  EXPECT_EQ(clean_query("<think>\n</think>\n\nQuery: weather paris", "f"), "weather paris");
  EXPECT_EQ(clean_query("", "original question"), "original question");
  EXPECT_EQ(clean_query("```\n```", "orig"), "orig");
}

}  // namespace
}  // namespace sniper::agent
