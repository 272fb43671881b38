// SPDX-License-Identifier: MIT
// JSON config loading for the agent (format in config.h and apps/agent/agent.example.json).
// Unknown top-level keys are errors so typos do not silently fall back to defaults.
#include "agent/config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/bounded_json.h"

namespace sniper::agent {

const char* tier_name(Tier tier) {
  switch (tier) {
    case Tier::kFast: return "fast";
    case Tier::kPrimary: return "primary";
    case Tier::kHeavy: return "heavy";
  }
  return "primary";
}

namespace {

using nlohmann::json;

Result<double> get_number(const json& obj, const char* key, double def, double lo, double hi) {
  if (!obj.contains(key)) return def;
  const json& v = obj[key];
  if (!v.is_number()) return make_error("config field '%s' must be a number", key);
  double d = v.get<double>();
  if (!(d >= lo && d <= hi)) return make_error("config field '%s' is %g but must be in [%g, %g]", key, d, lo, hi);
  return d;
}

Result<std::string> get_string(const json& obj, const char* key, const std::string& def) {
  if (!obj.contains(key)) return def;
  if (!obj[key].is_string()) return make_error("config field '%s' must be a string", key);
  return obj[key].get<std::string>();
}

Result<bool> get_bool(const json& obj, const char* key, bool def) {
  if (!obj.contains(key)) return def;
  if (!obj[key].is_boolean()) return make_error("config field '%s' must be true or false", key);
  return obj[key].get<bool>();
}

Result<std::vector<std::string>> get_strings(const json& obj, const char* key, std::vector<std::string> def) {
  if (!obj.contains(key)) return def;
  if (!obj[key].is_array()) return make_error("config field '%s' must be an array of strings", key);
  std::vector<std::string> out;
  for (const json& s : obj[key]) {
    if (!s.is_string()) return make_error("config field '%s' must be an array of strings", key);
    out.push_back(s.get<std::string>());
  }
  return out;
}

Result<BackendConfig> parse_backend(const json& b, size_t index) {
  if (!b.is_object()) return make_error("backends[%zu] must be an object", index);
  BackendConfig c;
  SNIPER_ASSIGN_OR_RETURN(c.name, get_string(b, "name", ""));
  SNIPER_ASSIGN_OR_RETURN(c.url, get_string(b, "url", ""));
  SNIPER_ASSIGN_OR_RETURN(c.model, get_string(b, "model", ""));
  SNIPER_ASSIGN_OR_RETURN(c.api_key_env, get_string(b, "api_key_env", ""));
  SNIPER_ASSIGN_OR_RETURN(
      c.local, get_bool(b, "local",
                        c.url.find("127.0.0.1") != std::string::npos || c.url.find("localhost") != std::string::npos));
  SNIPER_ASSIGN_OR_RETURN(c.template_kwargs, get_bool(b, "template_kwargs", c.local));
  if (b.contains("capabilities")) {
    SNIPER_ASSIGN_OR_RETURN(c.capabilities, get_strings(b, "capabilities", {}));
  }
  SNIPER_ASSIGN_OR_RETURN(std::string role, get_string(b, "role", "primary"));
  if (role == "fast") c.role = Tier::kFast;
  else if (role == "primary") c.role = Tier::kPrimary;
  else if (role == "heavy") c.role = Tier::kHeavy;
  else return make_error("backends[%zu].role is '%s' but must be fast, primary or heavy", index, role.c_str());
  if (c.name.empty()) return make_error("backends[%zu].name must be a non-empty string", index);
  if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0)
    return make_error("backends[%zu].url is '%s' but must start with http:// or https://", index, c.url.c_str());
  if (!c.api_key_env.empty()) {
    const char* key = std::getenv(c.api_key_env.c_str());
    if (key) c.api_key = key;
  }
  return c;
}

Result<AgentConfig> parse_config_json(const json& root) {
  if (!root.is_object()) return make_error("config must be a JSON object");
  static const std::set<std::string> kKnown = {"backends",
                                               "connect_timeout_s",
                                               "read_timeout_s",
                                               "retries",
                                               "cooldown_s",
                                               "thinking",
                                               "max_tokens",
                                               "auto_tiers",
                                               "heavy_min_chars",
                                               "heavy_keywords",
                                               "system_prompt",
                                               "search_url",
                                               "search_results",
                                               "page_chars",
                                               "search_timeout_s",
                                               "doc_context_tokens",
                                               "doc_note_tokens",
                                               "shell_timeout_s",
                                               "shell_output_cap_bytes",
                                               "extra_read_only",
                                               "grade_log",
                                               "cloud_prices",
                                               "comment"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (!kKnown.count(it.key())) return make_error("unknown config field '%s'", it.key().c_str());
  }
  AgentConfig c;
  if (root.contains("backends")) {
    if (!root["backends"].is_array()) return make_error("config field 'backends' must be an array");
    std::set<std::string> names;
    for (size_t i = 0; i < root["backends"].size(); ++i) {
      SNIPER_ASSIGN_OR_RETURN(BackendConfig b, parse_backend(root["backends"][i], i));
      if (!names.insert(b.name).second) return make_error("backends[%zu].name '%s' is used twice", i, b.name.c_str());
      c.backends.push_back(std::move(b));
    }
  }
  SNIPER_ASSIGN_OR_RETURN(c.connect_timeout_s, get_number(root, "connect_timeout_s", c.connect_timeout_s, 0.05, 600));
  SNIPER_ASSIGN_OR_RETURN(c.read_timeout_s, get_number(root, "read_timeout_s", c.read_timeout_s, 0.05, 3600));
  SNIPER_ASSIGN_OR_RETURN(double retries, get_number(root, "retries", c.retries, 0, 10));
  c.retries = static_cast<int>(retries);
  SNIPER_ASSIGN_OR_RETURN(c.cooldown_s, get_number(root, "cooldown_s", c.cooldown_s, 0, 86400));
  SNIPER_ASSIGN_OR_RETURN(c.thinking, get_bool(root, "thinking", c.thinking));
  SNIPER_ASSIGN_OR_RETURN(double max_tokens, get_number(root, "max_tokens", c.max_tokens, 0, 1 << 20));
  c.max_tokens = static_cast<int>(max_tokens);
  SNIPER_ASSIGN_OR_RETURN(c.auto_tiers, get_bool(root, "auto_tiers", c.auto_tiers));
  SNIPER_ASSIGN_OR_RETURN(double min_chars, get_number(root, "heavy_min_chars", c.heavy_min_chars, 1, 1e9));
  c.heavy_min_chars = static_cast<int>(min_chars);
  SNIPER_ASSIGN_OR_RETURN(c.heavy_keywords, get_strings(root, "heavy_keywords", c.heavy_keywords));
  SNIPER_ASSIGN_OR_RETURN(c.system_prompt, get_string(root, "system_prompt", c.system_prompt));
  SNIPER_ASSIGN_OR_RETURN(c.search_url, get_string(root, "search_url", c.search_url));
  SNIPER_ASSIGN_OR_RETURN(double results, get_number(root, "search_results", c.search_results, 1, 10));
  c.search_results = static_cast<int>(results);
  SNIPER_ASSIGN_OR_RETURN(double page_chars, get_number(root, "page_chars", c.page_chars, 100, 100000));
  c.page_chars = static_cast<int>(page_chars);
  SNIPER_ASSIGN_OR_RETURN(c.search_timeout_s, get_number(root, "search_timeout_s", c.search_timeout_s, 0.1, 600));
  SNIPER_ASSIGN_OR_RETURN(double doc_ctx, get_number(root, "doc_context_tokens", c.doc_context_tokens, 256, 1 << 24));
  c.doc_context_tokens = static_cast<int>(doc_ctx);
  SNIPER_ASSIGN_OR_RETURN(double doc_note, get_number(root, "doc_note_tokens", c.doc_note_tokens, 16, 1 << 16));
  c.doc_note_tokens = static_cast<int>(doc_note);
  SNIPER_ASSIGN_OR_RETURN(c.shell_timeout_s, get_number(root, "shell_timeout_s", c.shell_timeout_s, 0.1, 3600));
  SNIPER_ASSIGN_OR_RETURN(double cap, get_number(root, "shell_output_cap_bytes",
                                                 static_cast<double>(c.shell_output_cap_bytes), 64, 64 << 20));
  c.shell_output_cap_bytes = static_cast<size_t>(cap);
  SNIPER_ASSIGN_OR_RETURN(c.extra_read_only, get_strings(root, "extra_read_only", c.extra_read_only));
  SNIPER_ASSIGN_OR_RETURN(c.grade_log, get_string(root, "grade_log", c.grade_log));
  if (root.contains("cloud_prices")) {
    const json& prices = root["cloud_prices"];
    if (!prices.is_array()) return make_error("config field 'cloud_prices' must be an array");
    c.cloud_prices.clear();
    for (size_t i = 0; i < prices.size(); ++i) {
      const json& p = prices[i];
      if (!p.is_object()) return make_error("cloud_prices[%zu] must be an object", i);
      CloudPrice cp;
      SNIPER_ASSIGN_OR_RETURN(cp.name, get_string(p, "name", ""));
      SNIPER_ASSIGN_OR_RETURN(cp.input_per_mtok, get_number(p, "input_per_mtok", 0, 0, 1e6));
      SNIPER_ASSIGN_OR_RETURN(cp.output_per_mtok, get_number(p, "output_per_mtok", 0, 0, 1e6));
      if (cp.name.empty()) return make_error("cloud_prices[%zu].name must be a non-empty string", i);
      c.cloud_prices.push_back(cp);
    }
  }
  return c;
}

}  // namespace

Result<AgentConfig> parse_config(const std::string& json_text) {
  json root;  // bounded while parsing: the config may come from anywhere on disk
  const std::string why = server::parse_json_bounded(json_text, &root, server::JsonLimits{}, /*ignore_comments=*/true);
  if (!why.empty()) return make_error("config is not valid JSON: %s", why.c_str());
  return parse_config_json(root);
}

Result<AgentConfig> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot open config file '%s'", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = parse_config(ss.str());
  if (!r.ok()) return make_error("%s: %s", path.c_str(), r.error().message.c_str());
  return r;
}

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  return path;
}

std::string default_config_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/sniper/agent.json";
  return expand_home("~/.config/sniper/agent.json");
}

std::string state_dir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/sniper";
  return expand_home("~/.local/state/sniper");
}

bool make_dirs(const std::string& path) {
  if (path.empty()) return false;
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace sniper::agent
