// SPDX-License-Identifier: MIT
// Agent configuration: backends with tier roles, timeouts, failover policy, tool settings and the
// cloud price table used by /cost. Loaded from JSON (default ~/.config/sniper/agent.json; see
// apps/agent/agent.example.json for every field). Invariants after a successful load: every
// backend has a non-empty unique name and an http(s) URL; numbers are in their documented ranges.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::agent {

// The size class of a backend. Requests go to the smallest tier that fits the task.
enum class Tier { kFast, kPrimary, kHeavy };

// "fast" | "primary" | "heavy".
const char* tier_name(Tier tier);

struct BackendConfig {
  std::string name;   // unique, shown in the status line and "[fallback: NAME]"
  std::string url;    // base URL, e.g. http://127.0.0.1:8000 or https://api.openai.com/v1
  std::string model;  // "model" field of requests; empty = omit
  Tier role = Tier::kPrimary;
  bool local = true;            // tokens served locally count as savings in /cost
  std::string api_key_env;      // name of the env var holding the API key; empty = no key
  std::string api_key;          // resolved from api_key_env at load time (never written to the config)
  bool template_kwargs = true;  // send chat_template_kwargs (thinking control); default: local
  // What the model reads besides text ("vision", "audio"); unset = asked from GET /v1/models
  // (sniper serve and Ollama-style servers list them; OpenAI's API does not).
  std::optional<std::vector<std::string>> capabilities;
};

struct CloudPrice {
  std::string name;            // e.g. "gpt-4o"
  double input_per_mtok = 0;   // USD per million prompt tokens
  double output_per_mtok = 0;  // USD per million completion tokens
};

struct AgentConfig {
  std::vector<BackendConfig> backends;
  double connect_timeout_s = 5;
  double read_timeout_s = 120;  // per read; a stalled stream fails after this long
  int retries = 1;              // extra attempts on the same backend after a 5xx
  double cooldown_s = 30;       // how long a failed backend is skipped (429 uses Retry-After)
  bool thinking = false;        // default for chat turns (/think on|off)
  int max_tokens = 0;           // cap on chat answers; 0 = the server's default
  bool auto_tiers = true;       // /auto: long or complex requests go to the heavy tier
  int heavy_min_chars = 600;
  std::vector<std::string> heavy_keywords = {"step by step", "in detail",    "prove",    "analyze",  "analyse",
                                             "refactor",     "architecture", "design a", "optimize", "compare"};
  std::string system_prompt = "You are Sniper, a concise and helpful terminal assistant.";
  // Web search.
  std::string search_url = "https://html.duckduckgo.com/html/";
  int search_results = 3;  // pages fetched per search
  int page_chars = 3000;   // text kept per page
  double search_timeout_s = 10;
  // Paged reading (/doc): the context of the backend the pages go to, and the note per page.
  int doc_context_tokens = 8192;
  int doc_note_tokens = 256;
  // Shell.
  double shell_timeout_s = 20;
  size_t shell_output_cap_bytes = 16384;
  std::vector<std::string> extra_read_only;  // more commands treated as read-only
  // Logs and prices.
  std::string grade_log;  // empty = <state dir>/grades.jsonl
  std::vector<CloudPrice> cloud_prices = {
      {"gpt-4o", 2.5, 10.0}, {"claude-sonnet", 3.0, 15.0}, {"gpt-4o-mini", 0.15, 0.6}};
};

// Parses a config document. Errors name the field and the bad value. The api_key of each
// backend is read from the environment variable named in api_key_env (missing -> empty key).
[[nodiscard]] Result<AgentConfig> parse_config(const std::string& json_text);

// Reads and parses a config file.
[[nodiscard]] Result<AgentConfig> load_config_file(const std::string& path);

// Default config path: $XDG_CONFIG_HOME/sniper/agent.json or ~/.config/sniper/agent.json.
std::string default_config_path();

// State directory for history and logs: $XDG_STATE_HOME/sniper or ~/.local/state/sniper.
// Does not create it.
std::string state_dir();

// Creates a directory and its parents (mode 0700 for new ones). Returns false on failure.
[[nodiscard]] bool make_dirs(const std::string& path);

// Expands a leading "~/" to $HOME.
std::string expand_home(const std::string& path);

}  // namespace sniper::agent
