// SPDX-License-Identifier: MIT
// Command-line flag parsing for the sniper CLI: each command declares its flags; unknown
// flags (with the nearest known spelling), missing values and malformed numbers are Errors that
// name the flag and the value. A flag may have several spellings (llama.cpp's among them: -c and
// --ctx-size for --ctx); every value is stored under the flag's canonical name. Positional words
// remember the flag value they follow, so a prompt typed without quotes can be told apart from
// a model argument. The help layout (print_usage) is the same for every command: flags grouped
// by topic, one aligned column of names, help wrapped to the terminal's width.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace sniper::cli {

struct FlagSpec {
  const char* name;        // "--model"
  const char* short_name;  // "-m" or nullptr
  const char* value_name;  // "PATH"; nullptr for a boolean switch
  const char* help;
  const char* group = nullptr;    // help heading ("Sampling"); nullptr: the command's own flags
  const char* aliases = nullptr;  // other spellings, space-separated ("--ctx-size"), or nullptr
};

// The help heading of flags accepted only because llama.cpp users type them; printed last.
inline constexpr const char* kCompatGroup = "Accepted for llama.cpp compatibility";

// `specs` with `group` set on every flag that has none.
std::vector<FlagSpec> in_group(const char* group, std::vector<FlagSpec> specs);

// A word that is neither a flag nor a flag's value.
struct Positional {
  std::string text;
  // The flag and value it directly follows ("-p Once"), when the word before it was a flag's
  // value or another such word; "" otherwise.
  std::string follows;
};

class Args {
 public:
  // Parses argv[first, argc) against `specs` for `command` (used in messages).
  static Result<Args> parse(const std::string& command, int argc, char** argv, int first,
                            const std::vector<FlagSpec>& specs);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get_string(const std::string& name, const std::string& fallback = "") const;
  Result<int64_t> get_int(const std::string& name, int64_t fallback, int64_t lo, int64_t hi) const;
  Result<double> get_float(const std::string& name, double fallback, double lo, double hi) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::vector<Positional>& positional_info() const { return positional_info_; }
  // Every value a flag was given, in order, for flags that may repeat (get_string: the last).
  std::vector<std::string> get_all(const std::string& name) const;
  // The (flag, value) pairs of every flag in `names`, in command-line order (--image and --audio
  // interleaved as given).
  std::vector<std::pair<std::string, std::string>> get_all_of(std::initializer_list<std::string> names) const;
  // How the flag was spelled on the command line ("-c" for --ctx); the name when not given.
  std::string spelling(const std::string& name) const;
  // For messages: "-c (--ctx)" when typed otherwise than the name, else the name.
  std::string display_name(const std::string& name) const;
  const std::string& command() const { return command_; }

  // An Error unless at most `max` positional words were given. For words that follow a flag's
  // value the message says to quote the value ("-p Once upon a time" -> quote the prompt);
  // `what` names the positionals the command takes ("MODEL"), for the other case.
  [[nodiscard]] Status check_positionals(size_t max, const std::string& what) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::pair<std::string, std::string>> ordered_;
  std::map<std::string, std::string> spellings_;
  std::vector<std::string> positionals_;
  std::vector<Positional> positional_info_;
};

// The message for words after a flag's value: "'upon a time' follow -p Once: quote ...". Empty
// when `words` is empty or none follows a value.
std::string stray_words_message(const std::vector<Positional>& words);

// The known spelling nearest to `typed` by edit distance, when it is close enough to be a likely
// typo (at most 2 edits, or a third of the length); "" otherwise.
std::string nearest_spelling(const std::string& typed, const std::vector<std::string>& known);

// Every spelling of every flag (names, short names, aliases).
std::vector<std::string> all_spellings(const std::vector<FlagSpec>& specs);

// Prints "usage: sniper <command> <synopsis>", the description (wrapped) and the flags grouped
// by topic to stdout (print_usage_to: to a string), wrapped to the width help_width() gives.
void print_usage(const std::string& command, const std::string& synopsis, const std::vector<FlagSpec>& specs,
                 const std::string& description = "");
std::string format_usage(const std::string& command, const std::string& synopsis, const std::vector<FlagSpec>& specs,
                         const std::string& description, int width);
// $COLUMNS, else the terminal's width when stdout is one, else 100; clamped to [60, 160].
int help_width();
// `text` wrapped at `width` columns, lines after the first (and the first, when `indent_first`)
// indented by `indent` spaces; explicit newlines are kept.
std::string wrap_text(const std::string& text, int width, int indent, bool indent_first);

}  // namespace sniper::cli
