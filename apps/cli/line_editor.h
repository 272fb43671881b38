// SPDX-License-Identifier: MIT
// LineEditor: reads what the user types at an interactive prompt. On a terminal it is libedit
// (BSD-licensed, Debian's libedit-dev): emacs keys, arrows, history kept in a file across runs,
// Tab completion of command words at the start of a line. Elsewhere (a pipe, a file) it reads
// plain lines, so scripts drive the same loop.
// Multi-line input: a line ending in a backslash continues on the next one; a line starting
// with """ opens a block that ends at a line ending in """ (the quotes are dropped).
// Ctrl-C: the SIGINT handler (interrupt.h) must be installed; a Ctrl-C at the prompt ends the read
// with kInterrupted (was_empty tells whether nothing had been typed), and the caller decides
// (chat: a second one at an empty prompt quits). Ctrl-D on an empty line is kEof.
// Wake-ups: with `wake` set, a read on a terminal that has nothing typed yet ends with kWake as
// soon as wake() is true (the agent's /loop runs its due iteration, then reads again).
// Used by `sniper chat` and `sniper agent`.
// Thread-compatible; one LineEditor per process at a time (libedit owns the terminal).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sniper::cli {

struct LineEditorOptions {
  std::string history_path;              // "" keeps no history file
  std::vector<std::string> completions;  // words Tab completes at the start of a line ("/help")
  std::string continuation_prompt = "... ";
  // Polled about every 100 ms while the prompt is empty (terminal only); true ends the read
  // with kWake. Null: never.
  std::function<bool()> wake;
};

enum class ReadStatus { kLine, kInterrupted, kEof, kWake };

struct ReadResult {
  ReadStatus status = ReadStatus::kEof;
  std::string text;        // kLine: the input, lines joined by '\n' (no trailing newline)
  bool was_empty = false;  // kInterrupted: nothing had been typed
};

class LineEditor {
 public:
  // A libedit editor when stdin and stdout are terminals, else a plain line reader.
  static std::unique_ptr<LineEditor> open(const LineEditorOptions& options);
  virtual ~LineEditor() = default;

  // Shows `prompt` and reads one input (several lines when continued).
  virtual ReadResult read(const std::string& prompt) = 0;
  // Adds an input to the history (and its file). Multi-line inputs are kept as one entry.
  virtual void add_history(const std::string& entry) = 0;
  // True for the libedit editor.
  virtual bool interactive() const = 0;
};

// $XDG_STATE_HOME/sniper/NAME, else ~/.local/state/sniper/NAME, its directory created; "" when
// neither variable gives a usable directory.
std::string state_file_path(const std::string& name);

// Joins continued lines: returns true when `line` asks for another line (a trailing backslash,
// or inside a """ block), after appending its text to *text. `in_block` carries the block state.
bool continue_input(const std::string& line, std::string* text, bool* in_block);

}  // namespace sniper::cli
