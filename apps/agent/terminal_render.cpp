// SPDX-License-Identifier: MIT
// Incremental markdown-to-ANSI rendering (see terminal_render.h).
#include "agent/terminal_render.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace sniper::agent {

namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kNoBold = "\x1b[22m";
constexpr const char* kCyan = "\x1b[36m";
constexpr const char* kDefaultFg = "\x1b[39m";
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kReset = "\x1b[0m";

}  // namespace

std::string ansi_dim(bool color) { return color ? kDim : ""; }
std::string ansi_bold(bool color) { return color ? kBold : ""; }
std::string ansi_red(bool color) { return color ? "\x1b[31m" : ""; }
std::string ansi_reset(bool color) { return color ? kReset : ""; }

bool want_color(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string(term) == "dumb") return false;
  return ::isatty(fd) == 1;
}

std::string MarkdownRenderer::feed(std::string_view text) {
  if (!color_) return std::string(text);
  pending_ += text;
  std::string out;
  process(false, &out);
  return out;
}

std::string MarkdownRenderer::finish() {
  std::string out;
  if (color_) {
    process(true, &out);
    if (bold_ || code_ || in_heading_ || in_code_block_ || fence_line_) out += kReset;
  }
  pending_.clear();
  at_line_start_ = true;
  in_code_block_ = in_heading_ = bold_ = code_ = fence_line_ = false;
  return out;
}

void MarkdownRenderer::begin_line(std::string_view prefix, std::string* out) {
  *out += prefix;
  at_line_start_ = false;
}

void MarkdownRenderer::inline_char(char c, std::string* out) { *out += c; }

void MarkdownRenderer::process(bool final_flush, std::string* out) {
  size_t i = 0;
  while (i < pending_.size()) {
    std::string_view rest = std::string_view(pending_).substr(i);
    if (at_line_start_) {
      size_t nl = rest.find('\n');
      bool complete = nl != std::string_view::npos || final_flush;
      std::string_view head = rest.substr(0, nl);
      size_t indent = 0;
      while (indent < head.size() && indent < 8 && head[indent] == ' ') ++indent;
      std::string_view body = head.substr(indent);
      auto could_be = [&](std::string_view marker) {
        return body.size() < marker.size() && marker.substr(0, body.size()) == body;
      };
      // Undecided: the line so far could still open a fence, a heading or a list item.
      if (!complete &&
          (body.empty() || could_be("```") ||
           (!in_code_block_ && (body.find_first_not_of('#') == std::string_view::npos ||
                                ((body[0] == '-' || body[0] == '*' || body[0] == '+') && body.size() < 2))))) {
        break;
      }
      if (body.substr(0, 3) == "```") {
        fence_line_ = true;
        in_code_block_ = !in_code_block_;
        std::string prefix(kDim);
        prefix += head.substr(0, indent);
        begin_line(prefix, out);
        i += indent;
        continue;
      }
      if (in_code_block_) {
        std::string prefix(kCyan);
        begin_line(prefix, out);
        continue;
      }
      size_t hashes = body.find_first_not_of('#');
      if (hashes != std::string_view::npos && hashes >= 1 && hashes <= 6 && body[hashes] == ' ') {
        in_heading_ = true;
        std::string prefix(head.substr(0, indent));
        prefix += kBold;
        begin_line(prefix, out);
        i += indent + hashes + 1;
        continue;
      }
      if (body.size() >= 2 && (body[0] == '-' || body[0] == '*' || body[0] == '+') && body[1] == ' ') {
        std::string prefix(head.substr(0, indent));
        prefix += "\u2022 ";
        begin_line(prefix, out);
        i += indent + 2;
        continue;
      }
      begin_line("", out);
      continue;
    }
    char c = rest[0];
    if (c == '\n') {
      if (bold_ || code_ || in_heading_ || fence_line_ || in_code_block_) *out += kReset;
      bold_ = code_ = in_heading_ = fence_line_ = false;
      *out += '\n';
      at_line_start_ = true;
      ++i;
      continue;
    }
    if (fence_line_ || in_code_block_) {
      inline_char(c, out);
      ++i;
      continue;
    }
    if (c == '*') {
      if (rest.size() < 2 && !final_flush) break;  // could be the start of "**"
      if (rest.size() >= 2 && rest[1] == '*') {
        bold_ = !bold_;
        *out += bold_ ? kBold : (in_heading_ ? "" : kNoBold);
        i += 2;
        continue;
      }
    } else if (c == '`') {
      code_ = !code_;
      *out += code_ ? kCyan : kDefaultFg;
      ++i;
      continue;
    }
    inline_char(c, out);
    ++i;
  }
  pending_.erase(0, i);
}

}  // namespace sniper::agent
