// SPDX-License-Identifier: MIT
// File tool: read (size-capped), write and edit files, always showing a unified diff and asking
// for confirmation before anything is written. Writes go through a temp file + rename so a file is
// either the old or the new content. Invariants: nothing is written without confirm() == true.
#pragma once

#include <ostream>
#include <string>

#include "agent/shell_tool.h"
#include "base/result.h"

namespace sniper::agent {

// Reads a whole file; fails if it is larger than max_bytes or not a regular file.
[[nodiscard]] Result<std::string> read_text_file(const std::string& path, size_t max_bytes = 1 << 20);

// A unified diff (---/+++ header, @@ hunks with `context` lines) from old_text to new_text.
// Empty when the texts are equal. A missing final newline is marked "\ No newline at end of file".
std::string unified_diff(const std::string& old_text, const std::string& new_text, const std::string& old_name,
                         const std::string& new_name, int context = 3);

// Replaces the single occurrence of `find` in `text` by `replace`. Fails when `find` is empty,
// absent or occurs more than once (the edit would be ambiguous).
[[nodiscard]] Result<std::string> apply_edit(const std::string& text, const std::string& find,
                                             const std::string& replace);

struct FileChange {
  bool applied = false;  // false: declined or nothing to change
  std::string diff;
};

// Shows the diff from the file's current content (empty if missing) to `new_content` on `out`,
// asks confirm(), and writes atomically when approved.
[[nodiscard]] Result<FileChange> write_file_confirmed(const std::string& path, const std::string& new_content,
                                                      std::ostream& out, const ConfirmFn& confirm);

// apply_edit on the file's content, then write_file_confirmed.
[[nodiscard]] Result<FileChange> edit_file_confirmed(const std::string& path, const std::string& find,
                                                     const std::string& replace, std::ostream& out,
                                                     const ConfirmFn& confirm);

}  // namespace sniper::agent
