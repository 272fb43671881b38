// SPDX-License-Identifier: MIT
// Shell-free command line splitting and glob expansion (see command_line.h).
#include "agent/command_line.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

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

// Matches one path component of a glob against the entries of `dir`, counting the entries read.
Status match_component(const std::string& dir, const std::string& component, bool want_dir, size_t* budget,
                       std::vector<std::string>* names) {
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (d == nullptr) return ok_status();  // not a directory, unreadable: no match, as glob()
  Status status;
  while (const dirent* e = ::readdir(d)) {
    if (*budget == 0) {
      status = make_error("a glob reads more than %zu directory entries; refused", kMaxGlobEntries);
      break;
    }
    --*budget;
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    // FNM_PERIOD: a leading dot must be matched by a dot in the pattern, as in sh.
    if (::fnmatch(component.c_str(), name.c_str(), FNM_PERIOD) != 0) continue;
    if (want_dir) {
      struct stat st {};
      if (::stat((dir.empty() ? name : dir + "/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    }
    names->push_back(name);
  }
  ::closedir(d);
  return status;
}

// Expands one glob word like sh (dash): component by component, matches sorted bytewise; no
// match: the word itself. `base` is where relative patterns start.
Status expand_one(const std::string& base, const std::string& pattern, size_t* budget, std::vector<std::string>* out) {
  if (pattern.find("//") != std::string::npos || pattern.back() == '/') {
    return make_error("the glob '%s' has an empty path component", pattern.c_str());
  }
  const bool absolute = pattern.front() == '/';
  std::vector<std::string> components;
  for (size_t start = absolute ? 1 : 0; start <= pattern.size();) {
    size_t end = pattern.find('/', start);
    if (end == std::string::npos) end = pattern.size();
    components.push_back(pattern.substr(start, end - start));
    start = end + 1;
  }
  // Paths as they will be printed ("" = the start) and as they are read on disk.
  std::vector<std::string> shown = {absolute ? "/" : ""};
  for (size_t i = 0; i < components.size(); ++i) {
    const std::string& c = components[i];
    const bool last = i + 1 == components.size();
    std::vector<std::string> next;
    for (const std::string& prefix : shown) {
      const std::string joined = prefix.empty() || prefix == "/" ? prefix + c : prefix + "/" + c;
      if (c.find_first_of("*?[") == std::string::npos) {
        next.push_back(joined);  // a literal component: checked when the whole path is
        continue;
      }
      const std::string on_disk =
          absolute ? (prefix.empty() ? "/" : prefix) : (prefix.empty() ? base : base + "/" + prefix);
      std::vector<std::string> names;
      SNIPER_TRY(match_component(on_disk, c, !last, budget, &names));
      for (const std::string& n : names)
        next.push_back(prefix.empty() || prefix == "/" ? prefix + n : prefix + "/" + n);
      if (next.size() > kMaxArgs) return make_error("the command expands to more than %zu arguments", kMaxArgs);
    }
    shown = std::move(next);
  }
  std::vector<std::string> found;
  for (const std::string& path : shown) {
    struct stat st {};
    const std::string on_disk = absolute ? path : base + "/" + path;
    if (::lstat(on_disk.c_str(), &st) == 0) found.push_back(path);
  }
  if (found.empty()) {
    out->push_back(pattern);
    return ok_status();
  }
  // A matched name holding a control character (a line break, an escape) would show the user a
  // command other than the one that runs, and cannot be written back as a line parse accepts.
  for (const std::string& f : found) {
    for (const char c : f) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) {
        return make_error("the glob '%s' matches a file name holding control character 0x%02x", pattern.c_str(), u);
      }
    }
  }
  std::sort(found.begin(), found.end());
  for (std::string& f : found) out->push_back(std::move(f));
  return ok_status();
}

}  // namespace

Result<std::vector<std::vector<std::string>>> expand_globs(const ParsedLine& line, const std::string& cwd) {
  std::vector<std::vector<std::string>> stages;
  size_t budget = kMaxGlobEntries;  // directory entries all the globs of the line may read
  for (const std::vector<Word>& words : line.stages) {
    std::vector<std::string> argv;
    size_t bytes = 0;
    for (const Word& w : words) {
      std::vector<std::string> expanded;
      if (w.glob) {
        SNIPER_TRY(expand_one(cwd, w.text, &budget, &expanded));
      } else {
        expanded.push_back(w.text);
      }
      for (std::string& arg : expanded) {
        bytes += arg.size() + 1;
        if (argv.size() >= kMaxArgs) return make_error("the command expands to more than %zu arguments", kMaxArgs);
        if (bytes > kMaxArgBytes) return make_error("the command expands to more than %zu bytes", kMaxArgBytes);
        argv.push_back(std::move(arg));
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
