// SPDX-License-Identifier: MIT
#include "chat_commands.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "args.h"

namespace sniper::cli {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string format_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

Result<double> parse_number(const std::string& name, const std::string& text, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v)) {
    return make_error("%s is '%s' but must be a number in [%g, %g]", name.c_str(), text.c_str(), lo, hi);
  }
  if (v < lo || v > hi) return make_error("%s is %g but must be in [%g, %g]", name.c_str(), v, lo, hi);
  return v;
}

Result<int64_t> parse_integer(const std::string& name, const std::string& text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi) {
    return make_error("%s is '%s' but must be an integer in [%lld, %lld]", name.c_str(), text.c_str(),
                      static_cast<long long>(lo), static_cast<long long>(hi));
  }
  return static_cast<int64_t>(v);
}

// Canonical setting names and the other spellings users type (llama.cpp flags, Ollama parameters).
struct SettingName {
  const char* name;
  const char* aliases[4];
};
constexpr SettingName kSettings[] = {
    {"temp", {"temperature"}},
    {"top-k", {}},
    {"top-p", {}},
    {"min-p", {}},
    {"seed", {}},
    {"repeat-penalty", {}},
    {"repeat-last-n", {}},
    {"presence-penalty", {}},
    {"frequency-penalty", {}},
    {"n-predict", {"predict", "num-predict", "max-tokens"}},
    {"think", {"thinking"}},
    {"system", {}},
};

}  // namespace

const std::vector<ChatCommandInfo>& chat_commands() {
  static const std::vector<ChatCommandInfo> table = {
      {"help", "", "show this help", false},
      {"clear", "", "forget the conversation (the system prompt and settings stay)", false},
      {"system", "[TEXT|-]", "show the system prompt, set it to TEXT, or remove it with -", false},
      {"set", "[NAME VALUE]", "show the settings, or change one: /set temp 0.7, /set top-k 20, /set think off", false},
      {"save", "NAME", "save the conversation and its evaluated context as NAME", false},
      {"load", "[NAME]", "continue a saved conversation (without NAME: list them)", false},
      {"image", "PATH", "attach an image to the next message (models with image input)", true},
      {"audio", "PATH", "attach an audio clip to the next message (models with audio input)", true},
      {"quit", "", "leave (also /exit, /bye, Ctrl-D)", false},
  };
  return table;
}

std::optional<ChatCommand> parse_chat_command(const std::string& line) {
  const std::string t = trim(line);
  if (t.size() < 2 || t[0] != '/' || t[1] == '/') return std::nullopt;
  if (!std::isalpha(static_cast<unsigned char>(t[1])) && t[1] != '?') return std::nullopt;
  const size_t space = t.find_first_of(" \t");
  ChatCommand c;
  c.name = lower(t.substr(1, space == std::string::npos ? std::string::npos : space - 1));
  // "/usr/bin/ls what is this": a path, not a command.
  if (c.name.find('/') != std::string::npos) return std::nullopt;
  c.arg = space == std::string::npos ? "" : trim(t.substr(space));
  return c;
}

std::string chat_message_text(const std::string& line) {
  const size_t b = line.find_first_not_of(" \t");
  if (b != std::string::npos && line.compare(b, 2, "//") == 0) return line.substr(0, b) + line.substr(b + 1);
  return line;
}

const ChatCommandInfo* find_chat_command(const std::string& name) {
  std::string n = name;
  if (n == "?" || n == "h") n = "help";
  if (n == "exit" || n == "bye" || n == "q") n = "quit";
  for (const ChatCommandInfo& c : chat_commands()) {
    if (n == c.name) return &c;
  }
  return nullptr;
}

std::string unknown_chat_command_message(const std::string& name) {
  std::vector<std::string> names;
  for (const ChatCommandInfo& c : chat_commands()) names.push_back(c.name);
  const std::string near = nearest_spelling(name, names);
  return "unknown command /" + name + (near.empty() ? "" : "; did you mean /" + near + "?") +
         " (/help lists the commands; start a message with // to send a leading /)";
}

std::string chat_help_text() {
  std::string out = "Commands:\n";
  for (const ChatCommandInfo& c : chat_commands()) {
    std::string left = std::string("/") + c.name + (c.args[0] ? std::string(" ") + c.args : "");
    char line[160];
    std::snprintf(line, sizeof(line), "  %-20s %s\n", left.c_str(), c.help);
    out += line;
  }
  out +=
      "Input:\n"
      "  end a line with \\ to continue on the next one; \"\"\" opens and closes a block of several lines\n"
      "  arrows, Ctrl-A/E, Ctrl-R (search) edit the line; the history is kept between runs\n"
      "  Ctrl-C stops a reply (the conversation stays); Ctrl-C twice at an empty prompt, or Ctrl-D, leaves\n"
      "  a message that starts with / is a command: start it with // to send the text itself\n";
  return out;
}

std::vector<std::string> chat_completions() {
  std::vector<std::string> out;
  for (const ChatCommandInfo& c : chat_commands()) out.push_back(std::string("/") + c.name);
  return out;
}

Result<std::string> apply_chat_setting(ChatSettings* settings, const std::string& arg) {
  const std::string t = trim(arg);
  const size_t space = t.find_first_of(" \t=");
  std::string name = lower(t.substr(0, space));
  std::string value = space == std::string::npos ? "" : trim(t.substr(space + 1));
  if (!value.empty() && value[0] == '=') value = trim(value.substr(1));
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  const SettingName* setting = nullptr;
  for (const SettingName& s : kSettings) {
    bool hit = name == s.name;
    for (const char* a : s.aliases) hit = hit || (a != nullptr && name == a);
    if (hit) setting = &s;
  }
  if (setting == nullptr) {
    std::vector<std::string> names;
    for (const SettingName& s : kSettings) names.push_back(s.name);
    const std::string near = nearest_spelling(name, names);
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    return make_error("no setting '%s'%s%s (settings: %s)", name.c_str(), near.empty() ? "" : "; did you mean ",
                      near.empty() ? "" : (near + "?").c_str(), all.c_str());
  }
  const std::string key = setting->name;
  if (value.empty() && key != "system")
    return make_error("/set %s needs a value: /set %s VALUE", key.c_str(), key.c_str());
  ChatSettings next = *settings;
  SamplerConfig& c = next.sampler;
  std::string shown;
  if (key == "temp") {
    SNIPER_ASSIGN_OR_RETURN(double v, parse_number(key, value, 0.0, 100.0));
    c.temperature = static_cast<float>(v);
    shown = format_float(v) + (v == 0 ? " (greedy)" : "");
  } else if (key == "top-k") {
    SNIPER_ASSIGN_OR_RETURN(int64_t v, parse_integer(key, value, 0, int64_t{1} << 24));
    c.top_k = static_cast<int>(v);
    shown = std::to_string(v) + (v == 0 ? " (off)" : "");
  } else if (key == "top-p") {
    SNIPER_ASSIGN_OR_RETURN(double v, parse_number(key, value, 0.0, 1.0));
    c.top_p = static_cast<float>(v);
    shown = format_float(v);
  } else if (key == "min-p") {
    SNIPER_ASSIGN_OR_RETURN(double v, parse_number(key, value, 0.0, 1.0));
    c.min_p = static_cast<float>(v);
    shown = format_float(v);
  } else if (key == "seed") {
    SNIPER_ASSIGN_OR_RETURN(int64_t v, parse_integer(key, value, 0, INT64_MAX));
    c.seed = static_cast<uint64_t>(v);
    shown = std::to_string(v);
  } else if (key == "repeat-penalty") {
    SNIPER_ASSIGN_OR_RETURN(double v, parse_number(key, value, 0.0, 10.0));
    c.repeat_penalty = static_cast<float>(v);
    shown = format_float(v);
  } else if (key == "repeat-last-n") {
    SNIPER_ASSIGN_OR_RETURN(int64_t v, parse_integer(key, value, 0, 1 << 20));
    c.repeat_last_n = static_cast<int>(v);
    shown = std::to_string(v);
  } else if (key == "presence-penalty") {
    SNIPER_ASSIGN_OR_RETURN(double v, parse_number(key, value, -2.0, 2.0));
    c.presence_penalty = static_cast<float>(v);
    shown = format_float(v);
  } else if (key == "frequency-penalty") {
    SNIPER_ASSIGN_OR_RETURN(double v, parse_number(key, value, -2.0, 2.0));
    c.frequency_penalty = static_cast<float>(v);
    shown = format_float(v);
  } else if (key == "n-predict") {
    SNIPER_ASSIGN_OR_RETURN(int64_t v, parse_integer(key, value, -1, int64_t{1} << 24));
    if (v == 0) return make_error("n-predict is 0 but must be -1 (until the end) or in [1, %d]", 1 << 24);
    next.n_predict = v;
    shown = v < 0 ? "-1 (until the model ends its reply)" : std::to_string(v);
  } else if (key == "think") {
    const std::string v = lower(value);
    if (v == "on" || v == "true" || v == "1" || v == "yes") {
      next.think = true;
    } else if (v == "off" || v == "false" || v == "0" || v == "no") {
      next.think = false;
    } else if (v == "default") {
      next.think.reset();
    } else {
      return make_error("think is '%s' but must be on, off or default", value.c_str());
    }
    shown = !next.think ? "default (the template's)" : *next.think ? "on" : "off";
  } else {  // system
    next.system = value == "-" ? "" : value;
    shown = next.system.empty() ? "(none)" : "\"" + next.system + "\"";
  }
  SNIPER_TRY(next.sampler.validate());
  *settings = next;
  return key + " = " + shown;
}

std::string describe_chat_settings(const ChatSettings& s) {
  const SamplerConfig& c = s.sampler;
  std::string out;
  auto line = [&](const std::string& name, const std::string& value) { out += "  " + name + " = " + value + "\n"; };
  line("temp", format_float(c.temperature) + (c.temperature == 0 ? " (greedy)" : ""));
  line("top-k", std::to_string(c.top_k));
  line("top-p", format_float(c.top_p));
  line("min-p", format_float(c.min_p));
  line("seed", std::to_string(c.seed));
  line("repeat-penalty", format_float(c.repeat_penalty));
  line("repeat-last-n", std::to_string(c.repeat_last_n));
  line("presence-penalty", format_float(c.presence_penalty));
  line("frequency-penalty", format_float(c.frequency_penalty));
  line("n-predict", std::to_string(s.n_predict));
  line("think", !s.think ? "default" : *s.think ? "on" : "off");
  line("system", s.system.empty() ? "(none)" : "\"" + s.system + "\"");
  return out;
}

}  // namespace sniper::cli
