// SPDX-License-Identifier: MIT
// Shell-free command line splitting and glob expansion (see command_line.h).
#include "agent/command_line.h"

#include <glob.h>

#include <algorithm>
#include <cstring>

namespace sniper::agent {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_glob(char c) { return c == '*' || c == '?' || c == '['; }

// Characters sh treats specially when unquoted (besides blanks, quotes, backslash, | and the
// globs, which the parser handles), with the construct to name in the error.
const char* special_construct(char c) {
  switch (c) {
    case ';': return "a command list (;)";
    case '&': return "a background job or a && list";
    case '<':
    case '>': return "a redirection";
    case '(':
    case ')': return "a subshell";
    case '{':
    case '}': return "a brace group or brace expansion";
    case '$': return "a parameter, command or arithmetic substitution ($)";
    case '`': return "a command substitution (`)";
    case '#': return "a comment (#)";
    case '!': return "a history expansion or negation (!)";
    case '^': return "a pipe (^)";
    default: return nullptr;
  }
}

Error refused(const char* what) { return make_error("the command uses %s, which only a shell can run", what); }

}  // namespace

Result<ParsedLine> parse_command_line(std::string_view line) {
  if (line.size() > kMaxLineBytes) {
    return make_error("the command is %zu bytes, more than the %zu an automatic run accepts", line.size(),
                      kMaxLineBytes);
  }
  if (line.find_first_of("\n\r") != std::string_view::npos) return refused("a newline (a second command)");
  ParsedLine out;
  out.stages.emplace_back();
  Word word;
  bool in_word = false;
  bool quoted = false;  // the current word has a quoted part
  auto end_word = [&]() -> Status {
    if (!in_word) return ok_status();
    if (word.glob && quoted) return make_error("the command mixes a glob with quoting in one word");
    std::vector<Word>& stage = out.stages.back();
    if (stage.empty() && !quoted && word.text.find('=') != std::string::npos && word.text.front() != '=') {
      return refused("a variable assignment before the command");
    }
    stage.push_back(std::move(word));
    word = Word();
    in_word = false;
    quoted = false;
    return ok_status();
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r') return refused("a newline (a second command)");
    if (u < 0x20 && c != '\t') return make_error("the command holds control character 0x%02x", u);
    if (u == 0x7f) return make_error("the command holds control character 0x7f");
    if (is_blank(c)) {
      SNIPER_TRY(end_word());
      continue;
    }
    if (c == '\'') {
      const size_t close = line.find('\'', i + 1);
      if (close == std::string_view::npos) return make_error("the command has an unterminated ' quote");
      word.text.append(line.substr(i + 1, close - i - 1));
      in_word = quoted = true;
      i = close;
      continue;
    }
    if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        const char d = line[j];
        if (d == '$') return refused("a substitution inside double quotes ($)");
        if (d == '`') return refused("a command substitution inside double quotes (`)");
        if (d == '\\') {
          // Inside "...", sh keeps a backslash unless it precedes $ ` " \ or a newline.
          if (j + 1 >= line.size()) break;
          const char e = line[j + 1];
          if (e == '\n') return refused("a newline (a second command)");
          if (e == '"' || e == '\\') {
            word.text += e;
            ++j;
            continue;
          }
          if (e == '$' || e == '`') {
            word.text += e;
            ++j;
            continue;
          }
        }
        if (d == '!') return refused("a history expansion (!)");
        word.text += d;
      }
      if (j >= line.size()) return make_error("the command has an unterminated \" quote");
      in_word = quoted = true;
      i = j;
      continue;
    }
    if (c == '\\') {
      if (i + 1 >= line.size()) return make_error("the command ends with a backslash");
      const char e = line[i + 1];
      if (e == '\n' || e == '\r') return refused("a newline (a second command)");
      if (static_cast<unsigned char>(e) < 0x20) return make_error("the command escapes a control character");
      word.text += e;
      in_word = quoted = true;
      ++i;
      continue;
    }
    if (c == '|') {
      if (i + 1 < line.size() && (line[i + 1] == '|' || line[i + 1] == '&')) return refused("a || list or |&");
      SNIPER_TRY(end_word());
      if (out.stages.back().empty()) return make_error("the command has an empty pipeline stage");
      if (out.stages.size() >= kMaxStages) return make_error("the pipeline has more than %zu stages", kMaxStages);
      out.stages.emplace_back();
      continue;
    }
    if (c == '~' && (!in_word || word.text.empty() || word.text.back() == '=' || word.text.back() == ':')) {
      return refused("a tilde expansion (~)");  // at the start of a word, or after = or :
    }
    if (const char* what = special_construct(c)) {
      // `~` and `!`, `#` and `^` are only special at some positions for sh; refusing them anywhere
      // unquoted keeps the rule simple and exact.
      return refused(what);
    }
    if (is_glob(c)) word.glob = true;
    word.text += c;
    in_word = true;
  }
  SNIPER_TRY(end_word());
  if (out.stages.back().empty()) {
    return make_error(out.stages.size() == 1 ? "the command is empty" : "the command has an empty pipeline stage");
  }
  return out;
}

namespace {

// Escapes glob characters of a literal path prefix (so that glob() matches it as itself).
std::string escape_glob(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (is_glob(c) || c == '\\' || c == ']') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

Result<std::vector<std::vector<std::string>>> expand_globs(const ParsedLine& line, const std::string& cwd) {
  std::vector<std::vector<std::string>> stages;
  for (const std::vector<Word>& words : line.stages) {
    std::vector<std::string> argv;
    size_t bytes = 0;
    auto add = [&](std::string arg) -> Status {
      bytes += arg.size() + 1;
      if (argv.size() >= kMaxArgs) return make_error("the command expands to more than %zu arguments", kMaxArgs);
      if (bytes > kMaxArgBytes) return make_error("the command expands to more than %zu bytes", kMaxArgBytes);
      argv.push_back(std::move(arg));
      return ok_status();
    };
    for (const Word& w : words) {
      if (!w.glob) {
        SNIPER_TRY(add(w.text));
        continue;
      }
      // Relative patterns are matched under cwd, whose own characters are taken literally.
      const bool absolute = !w.text.empty() && w.text.front() == '/';
      const std::string prefix = absolute ? std::string() : escape_glob(cwd) + "/";
      const std::string pattern = prefix + w.text;
      glob_t g{};
      const int rc = ::glob(pattern.c_str(), GLOB_NOCHECK, nullptr, &g);
      if (rc != 0 && rc != GLOB_NOMATCH) {
        ::globfree(&g);
        return make_error("cannot expand '%s'", w.text.c_str());
      }
      std::vector<std::string> matches;
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        std::string m = g.gl_pathv[i];
        if (m == pattern) {
          matches.clear();
          matches.push_back(w.text);  // no match: sh leaves the pattern as it is
          break;
        }
        const std::string cwd_slash = cwd + "/";
        if (!absolute && m.rfind(cwd_slash, 0) == 0) m.erase(0, cwd_slash.size());
        matches.push_back(std::move(m));
      }
      ::globfree(&g);
      for (std::string& m : matches) {
        const Status st = add(std::move(m));
        if (!st.ok()) return st.error();
      }
    }
    stages.push_back(std::move(argv));
  }
  return stages;
}

std::string shell_quote(std::string_view s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:=,+@%", c) != nullptr;
      })) {
    return std::string(s);
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

}  // namespace sniper::agent
