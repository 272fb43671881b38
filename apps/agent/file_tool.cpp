// SPDX-License-Identifier: MIT
// File read/write/edit with unified diffs and confirmation (see file_tool.h). The diff is an LCS
// over the lines between the common prefix and suffix (bounded to 4M cells; beyond that the middle
// is shown as a full replacement, which is still a correct diff).
#include "agent/file_tool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace sniper::agent {

namespace {

// Lines keep their trailing '\n' so a missing final newline is a difference of its own.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(pos));
      break;
    }
    lines.push_back(text.substr(pos, nl - pos + 1));
    pos = nl + 1;
  }
  return lines;
}

enum class Op { kEqual, kDelete, kInsert };
struct Edit {
  Op op;
  size_t a;  // index in old (kEqual, kDelete)
  size_t b;  // index in new (kEqual, kInsert)
};

std::vector<Edit> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  std::vector<Edit> edits;
  for (size_t i = 0; i < pre; ++i) edits.push_back({Op::kEqual, i, i});
  size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  if (n * m <= (4u << 20)) {
    // lcs[i][j] = LCS length of a[pre+i..] and b[pre+j..].
    std::vector<std::vector<unsigned>> lcs(n + 1, std::vector<unsigned>(m + 1, 0));
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        lcs[i][j] = a[pre + i] == b[pre + j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
      }
    }
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) {
        edits.push_back({Op::kEqual, pre + i, pre + j});
        ++i, ++j;
      } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
        edits.push_back({Op::kDelete, pre + i, 0});  // deletions before insertions, as diff(1) shows them
        ++i;
      } else {
        edits.push_back({Op::kInsert, 0, pre + j});
        ++j;
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i) edits.push_back({Op::kDelete, pre + i, 0});
    for (size_t j = 0; j < m; ++j) edits.push_back({Op::kInsert, 0, pre + j});
  }
  for (size_t k = 0; k < suf; ++k) edits.push_back({Op::kEqual, a.size() - suf + k, b.size() - suf + k});
  return edits;
}

void emit_line(std::string* out, char prefix, const std::string& line) {
  *out += prefix;
  if (!line.empty() && line.back() == '\n') {
    *out += line;
  } else {
    *out += line;
    *out += "\n\\ No newline at end of file\n";
  }
}

std::string hunk_range(size_t start, size_t count) {
  // Unified format: 1-based start; an empty range names the line before it.
  size_t first = count == 0 ? start : start + 1;
  return count == 1 ? std::to_string(first) : std::to_string(first) + "," + std::to_string(count);
}

Status write_atomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".sniper-tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return make_error("cannot write '%s': %s", tmp.c_str(), std::strerror(errno));
    f << content;
    f.flush();
    if (!f) return make_error("write to '%s' failed", tmp.c_str());
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) ::chmod(tmp.c_str(), st.st_mode & 07777);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return make_error("cannot replace '%s': %s", path.c_str(), std::strerror(errno));
  }
  return ok_status();
}

}  // namespace

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error("cannot read '%s': %s", path.c_str(), std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("'%s' is not a regular file", path.c_str());
  if (static_cast<size_t>(st.st_size) > max_bytes)
    return make_error("'%s' is %lld bytes but at most %zu can be read", path.c_str(),
                      static_cast<long long>(st.st_size), max_bytes);
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot open '%s'", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string unified_diff(const std::string& old_text, const std::string& new_text, const std::string& old_name,
                         const std::string& new_name, int context) {
  if (old_text == new_text) return "";
  std::vector<std::string> a = split_lines(old_text), b = split_lines(new_text);
  std::vector<Edit> edits = diff_lines(a, b);
  std::string out = "--- " + old_name + "\n+++ " + new_name + "\n";
  size_t ctx = static_cast<size_t>(context < 0 ? 0 : context);
  size_t k = 0;
  while (k < edits.size()) {
    // Find the next change.
    size_t first_change = k;
    while (first_change < edits.size() && edits[first_change].op == Op::kEqual) ++first_change;
    if (first_change == edits.size()) break;
    size_t start = first_change >= ctx ? first_change - ctx : 0;
    if (start < k) start = k;
    // Extend the hunk while changes are within 2*ctx equal lines of each other.
    size_t end = first_change;
    size_t last_change = first_change;
    while (end < edits.size()) {
      if (edits[end].op != Op::kEqual) {
        last_change = end;
        ++end;
        continue;
      }
      size_t run = end;
      while (run < edits.size() && edits[run].op == Op::kEqual) ++run;
      if (run == edits.size() || run - end > 2 * ctx) break;
      end = run;
    }
    size_t stop = std::min(edits.size(), last_change + 1 + ctx);
    // Hunk header.
    size_t a_start = 0, b_start = 0, a_count = 0, b_count = 0;
    bool a_set = false, b_set = false;
    for (size_t e = start; e < stop; ++e) {
      if (edits[e].op != Op::kInsert) {
        if (!a_set) a_start = edits[e].a, a_set = true;
        ++a_count;
      }
      if (edits[e].op != Op::kDelete) {
        if (!b_set) b_start = edits[e].b, b_set = true;
        ++b_count;
      }
    }
    if (!a_set) {  // pure insertion: position after the preceding old line
      a_start = 0;
      for (size_t e = start; e-- > 0;) {
        if (edits[e].op != Op::kInsert) {
          a_start = edits[e].a + 1;
          break;
        }
      }
    }
    if (!b_set) {
      b_start = 0;
      for (size_t e = start; e-- > 0;) {
        if (edits[e].op != Op::kDelete) {
          b_start = edits[e].b + 1;
          break;
        }
      }
    }
    out += "@@ -" + hunk_range(a_start, a_count) + " +" + hunk_range(b_start, b_count) + " @@\n";
    for (size_t e = start; e < stop; ++e) {
      switch (edits[e].op) {
        case Op::kEqual: emit_line(&out, ' ', a[edits[e].a]); break;
        case Op::kDelete: emit_line(&out, '-', a[edits[e].a]); break;
        case Op::kInsert: emit_line(&out, '+', b[edits[e].b]); break;
      }
    }
    k = stop;
  }
  return out;
}

Result<std::string> apply_edit(const std::string& text, const std::string& find, const std::string& replace) {
  if (find.empty()) return make_error("the text to replace is empty");
  size_t at = text.find(find);
  if (at == std::string::npos) return make_error("the text to replace was not found");
  if (text.find(find, at + 1) != std::string::npos)
    return make_error("the text to replace occurs more than once; include more context");
  return text.substr(0, at) + replace + text.substr(at + find.size());
}

Result<FileChange> write_file_confirmed(const std::string& path, const std::string& new_content, std::ostream& out,
                                        const ConfirmFn& confirm) {
  FileChange change;
  std::string old_content;
  bool exists = ::access(path.c_str(), F_OK) == 0;
  if (exists) {
    SNIPER_ASSIGN_OR_RETURN(old_content, read_text_file(path, 16u << 20));
  }
  change.diff = unified_diff(old_content, new_content, exists ? path : "/dev/null", path);
  if (change.diff.empty() && exists) {
    out << "(no changes to " << path << ")\n";
    return change;
  }
  out << change.diff;
  out.flush();
  if (!(confirm && confirm(std::string(exists ? "Apply this change to " : "Create ") + path + "?"))) {
    out << "(not written)\n";
    return change;
  }
  SNIPER_TRY(write_atomically(path, new_content));
  change.applied = true;
  out << "(wrote " << path << ")\n";
  return change;
}

Result<FileChange> edit_file_confirmed(const std::string& path, const std::string& find, const std::string& replace,
                                       std::ostream& out, const ConfirmFn& confirm) {
  SNIPER_ASSIGN_OR_RETURN(std::string old_content, read_text_file(path, 16u << 20));
  auto edited = apply_edit(old_content, find, replace);
  if (!edited.ok()) return make_error("%s: %s", path.c_str(), edited.error().message.c_str());
  return write_file_confirmed(path, edited.value(), out, confirm);
}

}  // namespace sniper::agent
