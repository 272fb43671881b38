// SPDX-License-Identifier: MIT
#include "args.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/check.h"

namespace sniper::cli {

namespace {

std::vector<std::string> split_words(const char* text) {
  std::vector<std::string> out;
  if (text == nullptr) return out;
  std::istringstream in(text);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool matches(const FlagSpec& s, const std::string& a) {
  if (a == s.name || (s.short_name != nullptr && a == s.short_name)) return true;
  for (const std::string& alias : split_words(s.aliases)) {
    if (a == alias) return true;
  }
  return false;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string left_column(const FlagSpec& s) {
  std::string left = s.short_name ? std::string(s.short_name) + ", " + s.name : std::string("    ") + s.name;
  if (s.value_name) left += std::string(" ") + s.value_name;
  return left;
}

}  // namespace

std::vector<FlagSpec> in_group(const char* group, std::vector<FlagSpec> specs) {
  for (FlagSpec& s : specs) {
    if (s.group == nullptr) s.group = group;
  }
  return specs;
}

std::vector<std::string> all_spellings(const std::vector<FlagSpec>& specs) {
  std::vector<std::string> out;
  for (const FlagSpec& s : specs) {
    out.push_back(s.name);
    if (s.short_name) out.push_back(s.short_name);
    for (const std::string& alias : split_words(s.aliases)) out.push_back(alias);
  }
  return out;
}

std::string nearest_spelling(const std::string& typed, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& k : known) {
    const size_t d = edit_distance(typed, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  const size_t allowed = std::max<size_t>(2, typed.size() / 3);
  // A one-letter flag is one edit from every other one: only suggest for longer spellings.
  if (best.empty() || best_d > allowed || typed.size() < 3 || best_d >= typed.size()) return "";
  return best;
}

Result<Args> Args::parse(const std::string& command, int argc, char** argv, int first,
                         const std::vector<FlagSpec>& specs) {
  Args args;
  args.command_ = command;
  // Two flags with one spelling is a bug in the command's flag table.
  std::vector<std::string> spellings = all_spellings(specs);
  std::sort(spellings.begin(), spellings.end());
  const auto dup = std::adjacent_find(spellings.begin(), spellings.end());
  CHECK(dup == spellings.end(), "sniper %s: the flag spelling %s is declared twice", command.c_str(), dup->c_str());
  std::string follows;  // "-p Once" while words may be the rest of an unquoted value
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") {
        for (++i; i < argc; ++i) {
          args.positionals_.push_back(argv[i]);
          args.positional_info_.push_back({argv[i], ""});
        }
        break;
      }
      args.positionals_.push_back(a);
      args.positional_info_.push_back({a, follows});
      continue;
    }
    std::string inline_value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_inline = true;
      }
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (matches(s, a)) spec = &s;
    }
    if (spec == nullptr) {
      const std::string near = nearest_spelling(a, all_spellings(specs));
      if (!near.empty()) {
        return make_error("unknown flag '%s' for 'sniper %s'; did you mean %s? (see 'sniper %s --help')", a.c_str(),
                          command.c_str(), near.c_str(), command.c_str());
      }
      return make_error("unknown flag '%s' for 'sniper %s' (see 'sniper %s --help')", a.c_str(), command.c_str(),
                        command.c_str());
    }
    args.spellings_[spec->name] = a;
    if (spec->value_name == nullptr) {
      if (has_inline) return make_error("flag %s takes no value", a.c_str());
      args.values_[spec->name] = "1";
      follows.clear();
      continue;
    }
    if (has_inline) {
      args.values_[spec->name] = inline_value;
    } else {
      if (i + 1 >= argc) return make_error("flag %s needs a value (%s)", a.c_str(), spec->value_name);
      args.values_[spec->name] = argv[++i];
    }
    args.all_values_[spec->name].push_back(args.values_[spec->name]);
    args.ordered_.emplace_back(spec->name, args.values_[spec->name]);
    follows = a + " " + args.values_[spec->name];
  }
  return args;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>() : it->second;
}

std::vector<std::pair<std::string, std::string>> Args::get_all_of(std::initializer_list<std::string> names) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : ordered_) {
    for (const std::string& n : names) {
      if (n == name) out.emplace_back(name, value);
    }
  }
  return out;
}

std::string Args::spelling(const std::string& name) const {
  auto it = spellings_.find(name);
  return it == spellings_.end() ? name : it->second;
}

std::string Args::display_name(const std::string& name) const {
  const std::string typed = spelling(name);
  return typed == name ? name : typed + " (" + name + ")";
}

std::string Args::get_string(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

Result<int64_t> Args::get_int(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string flag = display_name(name);
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') {
    return make_error("%s is '%s' but must be an integer in [%lld, %lld]", flag.c_str(), s, static_cast<long long>(lo),
                      static_cast<long long>(hi));
  }
  if (v < lo || v > hi) {
    return make_error("%s is %lld but must be in [%lld, %lld]", flag.c_str(), v, static_cast<long long>(lo),
                      static_cast<long long>(hi));
  }
  return static_cast<int64_t>(v);
}

Result<double> Args::get_float(const std::string& name, double fallback, double lo, double hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string flag = display_name(name);
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v)) {
    return make_error("%s is '%s' but must be a number in [%g, %g]", flag.c_str(), s, lo, hi);
  }
  if (v < lo || v > hi) return make_error("%s is %g but must be in [%g, %g]", flag.c_str(), v, lo, hi);
  return v;
}

std::string stray_words_message(const std::vector<Positional>& words) {
  std::string follows, joined;
  for (const Positional& p : words) {
    if (p.follows.empty()) continue;
    if (follows.empty()) follows = p.follows;
    if (p.follows != follows) break;
    joined += (joined.empty() ? "" : " ") + p.text;
  }
  if (follows.empty()) return "";
  const size_t space = follows.find(' ');
  const std::string flag = follows.substr(0, space);
  const std::string value = follows.substr(space + 1);
  const bool prompt = flag == "-p" || flag == "--prompt" || flag == "-sys" || flag == "--system" ||
                      flag == "--system-prompt" || flag == "--spec-prompt";
  return "'" + joined + "' came after " + follows + " as separate words: quote the whole " +
         (prompt ? "prompt" : "value") + ", as in " + flag + " \"" + value + " " + joined + "\"";
}

Status Args::check_positionals(size_t max, const std::string& what) const {
  if (positional_info_.size() <= max) return ok_status();
  const std::vector<Positional> extra(positional_info_.begin() + static_cast<long>(max), positional_info_.end());
  const std::string stray = stray_words_message(extra);
  if (!stray.empty()) return make_error("%s", stray.c_str());
  if (max == 0) {
    return make_error("unexpected argument '%s': 'sniper %s' takes no positional arguments (see 'sniper %s --help')",
                      extra[0].text.c_str(), command_.c_str(), command_.c_str());
  }
  return make_error("unexpected argument '%s': 'sniper %s' takes %s (see 'sniper %s --help')", extra[0].text.c_str(),
                    command_.c_str(), what.c_str(), command_.c_str());
}

int help_width() {
  int width = 100;
  if (const char* cols = std::getenv("COLUMNS"); cols != nullptr && *cols != '\0') {
    width = std::atoi(cols);
  } else if (::isatty(STDOUT_FILENO)) {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width = ws.ws_col;
  }
  return std::clamp(width, 60, 160);
}

std::string wrap_text(const std::string& text, int width, int indent, bool indent_first) {
  std::string out;
  const std::string pad(static_cast<size_t>(indent), ' ');
  size_t line_start = 0;
  bool first_line = true;
  while (line_start <= text.size()) {
    size_t nl = text.find('\n', line_start);
    if (nl == std::string::npos) nl = text.size();
    const std::string para = text.substr(line_start, nl - line_start);
    std::istringstream words(para);
    std::string word, line;
    auto flush = [&]() {
      out += (first_line && !indent_first ? "" : pad) + line + "\n";
      first_line = false;
      line.clear();
    };
    const int avail = std::max(20, width - indent);
    while (words >> word) {
      if (!line.empty() && static_cast<int>(line.size() + 1 + word.size()) > avail) flush();
      line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty() || para.empty()) flush();
    line_start = nl + 1;
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string format_usage(const std::string& command, const std::string& synopsis, const std::vector<FlagSpec>& specs,
                         const std::string& description, int width) {
  const std::string head = "usage: sniper " + command + " ";
  std::string out = head + wrap_text(synopsis, width, static_cast<int>(head.size()), false) + "\n";
  if (!description.empty()) out += "\n" + wrap_text(description, width, 0, false) + "\n";
  constexpr size_t kMaxLeft = 30;
  size_t left_width = 0;
  for (const FlagSpec& s : specs) left_width = std::max(left_width, std::min(kMaxLeft, left_column(s).size()));
  const int help_indent = static_cast<int>(2 + left_width + 2);
  // Groups in order of first appearance, the command's own flags (no group) first.
  std::vector<const char*> groups = {nullptr};
  for (const FlagSpec& s : specs) {
    if (s.group == nullptr) continue;
    if (std::none_of(groups.begin(), groups.end(), [&](const char* g) { return g && !std::strcmp(g, s.group); }))
      groups.push_back(s.group);
  }
  std::stable_partition(groups.begin(), groups.end(),
                        [](const char* g) { return g == nullptr || std::strcmp(g, kCompatGroup); });
  for (const char* g : groups) {
    std::string block;
    for (const FlagSpec& s : specs) {
      if ((g == nullptr) != (s.group == nullptr) || (g != nullptr && std::strcmp(g, s.group) != 0)) continue;
      std::string help = s.help;
      const std::vector<std::string> aliases = split_words(s.aliases);
      if (!aliases.empty()) {
        help += " [also ";
        for (size_t k = 0; k < aliases.size(); ++k) help += (k ? ", " : "") + aliases[k];
        help += "]";
      }
      const std::string left = left_column(s);
      std::string line = "  " + left;
      if (left.size() > left_width) {
        line += "\n" + wrap_text(help, width, help_indent, true);
      } else {
        line += std::string(left_width - left.size() + 2, ' ') + wrap_text(help, width, help_indent, false);
      }
      block += line + "\n";
    }
    if (block.empty()) continue;
    out += std::string("\n") + (g ? g : "Options") + ":\n" + block;
  }
  return out;
}

void print_usage(const std::string& command, const std::string& synopsis, const std::vector<FlagSpec>& specs,
                 const std::string& description) {
  const std::string text = format_usage(command, synopsis, specs, description, help_width());
  std::fputs(text.c_str(), stdout);
}

}  // namespace sniper::cli
