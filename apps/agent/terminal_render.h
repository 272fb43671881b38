// SPDX-License-Identifier: MIT
// Incremental markdown-to-ANSI renderer for streamed answers: headings (bold), bullet lists
// (• bullets), fenced code blocks (cyan, fences dimmed), **bold** and `inline code`. Text is shown
// as soon as it can be decided: only a line's first few characters (which could open a fence,
// heading or list item) and a lone trailing '*' or '`' are held back. In plain mode (stdout is not
// a terminal, NO_COLOR) the text passes through unchanged.
// Invariants: the output is the same however the input is split into feed() calls; finish()
// resets every attribute it turned on.
#pragma once

#include <string>
#include <string_view>

namespace sniper::agent {

class MarkdownRenderer {
 public:
  explicit MarkdownRenderer(bool color) : color_(color) {}

  // Renders what can be decided of `text` and returns it (the caller writes it out).
  std::string feed(std::string_view text);
  // Flushes held-back text and resets attributes. The renderer can be reused afterwards.
  std::string finish();

 private:
  void process(bool final_flush, std::string* out);
  void begin_line(std::string_view prefix, std::string* out);
  void inline_char(char c, std::string* out);

  bool color_;
  std::string pending_;  // undecided input
  bool at_line_start_ = true;
  bool in_code_block_ = false;
  bool in_heading_ = false;
  bool bold_ = false;
  bool code_ = false;
  bool fence_line_ = false;  // inside a ``` line (dimmed)
};

// ANSI helpers (empty strings in plain mode).
std::string ansi_dim(bool color);
std::string ansi_bold(bool color);
std::string ansi_red(bool color);
std::string ansi_reset(bool color);

// Whether to use colour for a stream: a TTY and NO_COLOR unset (or empty).
bool want_color(int fd);

}  // namespace sniper::agent
