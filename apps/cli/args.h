// SPDX-License-Identifier: MIT
// Command-line flag parsing for the sniper CLI: each command declares its flags; unknown
// flags, missing values and malformed numbers are Errors that name the flag and the value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper::cli {

struct FlagSpec {
  const char* name;        // "--model"
  const char* short_name;  // "-m" or nullptr
  const char* value_name;  // "PATH"; nullptr for a boolean switch
  const char* help;
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
  // Every value a flag was given, in order, for flags that may repeat (get_string: the last).
  std::vector<std::string> get_all(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::vector<std::string> positionals_;
};

// Prints "usage: sniper <command> <synopsis>" and the flag table to stdout.
void print_usage(const std::string& command, const std::string& synopsis, const std::vector<FlagSpec>& specs);

}  // namespace sniper::cli
