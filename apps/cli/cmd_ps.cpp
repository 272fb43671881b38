// SPDX-License-Identifier: MIT
// `sniper ps [--url URL] [--all]`: the models a running `sniper serve` holds in memory, as
// `ollama ps` shows them: name, state, memory (the loaded model's plan: weights, KV, scratch), its
// budget share, when it was loaded and when keep-alive unloads it, and the requests on it. Reads
// the server's GET /v1/models (model_json in apps/server/http_server.cpp).
#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/memory_limit.h"
#include "commands.h"
#include "common.h"

namespace sniper::cli {

namespace {

// "45s", "3m 10s", "2h 05m".
std::string format_span(int64_t s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm %02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh %02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s / 60) % 60));
  }
  return buf;
}

std::string keep_alive_text(const nlohmann::json& m, int64_t now) {
  const std::string state = m.value("state", "");
  if (state != "loaded") return "-";
  const int64_t expires = m.value("expires_at", int64_t{0});
  if (expires > 0) return "unloads in " + format_span(std::max<int64_t>(0, expires - now));
  if (m.value("requests_active", int64_t{0}) > 0) return "in use";
  return "stays loaded";
}

}  // namespace

int cmd_ps(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--url", nullptr, "URL", "the server (default http://127.0.0.1:8000, or $SNIPER_URL)"},
      {"--api-key", nullptr, "KEY", "sent as 'Authorization: Bearer KEY' (default $SNIPER_API_KEY)"},
      {"--all", "-a", nullptr, "list every model the server serves, loaded or not"},
      {"--json", nullptr, nullptr, "print the server's model list as JSON"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("ps", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("ps", "[--url URL] [--all]", specs,
                "Lists the models a running 'sniper serve' has loaded: memory, budget, when each was loaded and "
                "when keep-alive unloads it.");
    return 0;
  }
  if (Status st = args->check_positionals(0, ""); !st.ok()) return fail(st.error());
  const char* env_url = std::getenv("SNIPER_URL");
  const char* env_key = std::getenv("SNIPER_API_KEY");
  std::string url = args->get_string("--url", env_url != nullptr && *env_url ? env_url : "http://127.0.0.1:8000");
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.find("://") == std::string::npos) url = "http://" + url;
  httplib::Client client(url);
  if (!client.is_valid()) return fail(make_error("--url '%s' is not a server address (http://HOST:PORT)", url.c_str()));
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  httplib::Headers headers;
  const std::string key = args->get_string("--api-key", env_key != nullptr ? env_key : "");
  if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
  httplib::Result res = client.Get("/v1/models", headers);
  if (!res) {
    return fail(make_error("cannot reach %s: %s (is 'sniper serve' running there? --url names another server)",
                           url.c_str(), httplib::to_string(res.error()).c_str()));
  }
  if (res->status != 200) {
    return fail(make_error("GET %s/v1/models answered HTTP %d: %s", url.c_str(), res->status,
                           res->body.substr(0, 200).c_str()));
  }
  const nlohmann::json body = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.contains("data") || !body["data"].is_array()) {
    return fail(make_error("%s/v1/models did not answer with a model list (is it a sniper server?)", url.c_str()));
  }
  if (args->has("--json")) {
    std::printf("%s\n", body["data"].dump(2).c_str());
    return 0;
  }
  const bool all = args->has("--all");
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "STATE", "MEMORY", "BUDGET", "LOADED", "KEEP-ALIVE", "REQUESTS"}};
  std::string others;
  for (const nlohmann::json& m : body["data"]) {
    if (!m.is_object()) continue;
    const std::string state = m.value("state", "");
    const std::string name = m.value("id", "?");
    if (!all && state != "loaded" && state != "loading") {
      others += (others.empty() ? "" : ", ") + name;
      continue;
    }
    const uint64_t memory = m.value("memory_bytes", uint64_t{0});
    const uint64_t budget = m.value("budget_bytes", uint64_t{0});
    const int64_t loaded_at = m.value("loaded_at", int64_t{0});
    rows.push_back({name, state, memory > 0 ? format_bytes(memory) : "-", budget > 0 ? format_bytes(budget) : "-",
                    loaded_at > 0 ? format_span(std::max<int64_t>(0, now - loaded_at)) + " ago" : "-",
                    keep_alive_text(m, now),
                    std::to_string(m.value("requests_active", int64_t{0})) + " active, " +
                        std::to_string(m.value("requests_waiting", int64_t{0})) + " waiting"});
  }
  if (rows.size() == 1) {
    std::printf("no model loaded on %s%s%s%s\n", url.c_str(), others.empty() ? "" : " (it serves ", others.c_str(),
                others.empty() ? "" : "; they load on the first request)");
    return 0;
  }
  std::fputs(format_table(rows).c_str(), stdout);
  return 0;
}

}  // namespace sniper::cli
