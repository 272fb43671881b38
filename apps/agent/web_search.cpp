// SPDX-License-Identifier: MIT
// Search page fetch, result pages in parallel, sources prompt (see web_search.h).
#include "agent/web_search.h"
#include "agent/text_util.h"

#include <httplib.h>

#include <cctype>
#include <thread>

#include "agent/backend_client.h"

namespace sniper::agent {

namespace {

constexpr const char* kUserAgent =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) sniper-agent/1.0";

}  // namespace

Result<std::string> fetch_url(const std::string& url, double timeout_s, size_t max_bytes) {
  std::string origin, path;
  if (!split_url(url, &origin, &path)) return make_error("'%s' is not an http(s) URL", url.c_str());
  // split_url drops the trailing '/', keep the exact path and query of the URL instead.
  size_t host_end = url.find('/', url.find("://") + 3);
  std::string target = host_end == std::string::npos ? "/" : url.substr(host_end);
  size_t hash = target.find('#');
  if (hash != std::string::npos) target.resize(hash);
  try {
    httplib::Client cli(origin);
    time_t sec = static_cast<time_t>(timeout_s);
    time_t usec = static_cast<time_t>((timeout_s - static_cast<double>(sec)) * 1e6);
    cli.set_connection_timeout(sec, usec);
    cli.set_read_timeout(sec, usec);
    cli.set_follow_location(true);
    httplib::Headers headers = {{"User-Agent", kUserAgent}, {"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}};
    std::string body;
    int status = 0;
    auto res = cli.Get(
        target, headers,
        [&](const httplib::Response& r) {
          status = r.status;
          return true;
        },
        [&](const char* data, size_t n) {
          size_t room = max_bytes > body.size() ? max_bytes - body.size() : 0;
          body.append(data, std::min(room, n));
          return body.size() < max_bytes;
        });
    if (!res && !(res.error() == httplib::Error::Canceled && body.size() >= max_bytes))
      return make_error("GET %s failed: %s", url.c_str(), httplib::to_string(res.error()).c_str());
    if (status < 200 || status >= 300) return make_error("GET %s: HTTP %d", url.c_str(), status);
    return body;
  } catch (const std::exception& e) {
    return make_error("GET %s: %s", url.c_str(), e.what());
  }
}

std::string search_page_url(const std::string& search_url, const std::string& query) {
  return search_url + (search_url.find('?') == std::string::npos ? "?" : "&") + "q=" + url_encode(query);
}

Result<std::vector<WebSource>> search_web(const std::string& query, const AgentConfig& config,
                                          const std::atomic<bool>* cancel) {
  std::string page_url = search_page_url(config.search_url, query);
  SNIPER_ASSIGN_OR_RETURN(std::string html, fetch_url(page_url, config.search_timeout_s));
  std::vector<SearchResult> results = parse_search_results(html, page_url);
  if (results.empty()) return make_error("no search results for '%s'", query.c_str());
  if (results.size() > static_cast<size_t>(config.search_results)) results.resize(config.search_results);
  std::vector<WebSource> sources(results.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    sources[i].title = results[i].title;
    sources[i].url = results[i].url;
    threads.emplace_back([&, i] {
      if (cancel && cancel->load()) return;
      auto page = fetch_url(results[i].url, config.search_timeout_s);
      if (page.ok()) {
        sources[i].text = html_to_text(page.value(), static_cast<size_t>(config.page_chars));
        sources[i].fetched = !sources[i].text.empty();
      }
      if (!sources[i].fetched) sources[i].text = results[i].snippet;
    });
  }
  for (std::thread& t : threads) t.join();
  return sources;
}

std::string sources_prompt(const std::string& question, const std::vector<WebSource>& sources) {
  std::string p =
      "Answer the question using the numbered sources below. Cite the sources you use inline as [1], "
      "[2], etc. Be concise. If the sources do not answer it, say so.\n\n";
  for (size_t i = 0; i < sources.size(); ++i) {
    p += "[" + std::to_string(i + 1) + "] " + sources[i].title + " (" + sources[i].url + ")\n";
    p += sources[i].text.empty() ? "(no text)" : sources[i].text;
    p += "\n\n";
  }
  p += "Question: " + question;
  return p;
}

std::string format_sources(const std::vector<WebSource>& sources) {
  std::string s = "Sources:\n";
  for (size_t i = 0; i < sources.size(); ++i) {
    s += "[" + std::to_string(i + 1) + "] ";
    if (!sources[i].title.empty()) s += sources[i].title + " - ";
    s += sources[i].url + "\n";
  }
  return s;
}

std::string clean_query(const std::string& reply, const std::string& fallback) {
  std::string text = reply;
  size_t think_end = text.find("</think>");
  if (think_end != std::string::npos) text = text.substr(think_end + 8);
  std::string line;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    line = trim(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (!line.empty() && line.rfind("```", 0) != 0) break;
    line.clear();
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  for (const char* label : {"search query:", "query:", "search:"}) {
    std::string l = line;
    for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l.rfind(label, 0) == 0) line = trim(line.substr(std::string(label).size()));
  }
  while (!line.empty() && std::string("\"'`*").find(line.front()) != std::string::npos) line.erase(0, 1);
  while (!line.empty() && std::string("\"'`*").find(line.back()) != std::string::npos) line.pop_back();
  line = trim(line);
  if (line.size() < 2 || line.size() > 200) return fallback;
  return line;
}

}  // namespace sniper::agent
