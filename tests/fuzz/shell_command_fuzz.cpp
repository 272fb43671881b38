// SPDX-License-Identifier: MIT
// libFuzzer entry point for the agent's auto-run decision (issue 40 finding 3): the input is a
// command line as a model could write it. Whenever plan_read_only accepts it (the agent would run
// it without asking), the property is that it parses to an allowed argv:
// - every stage's argv passes check_read_only_argv again, and holds no NUL or line break;
// - quoting each argument for sh and parsing the result again gives the same stages (what was
//   checked is what a shell would have run, and what runs);
// - what executes is harden_argv of what was checked;
// - independently of the option tables, none of the known ways to write or execute appears:
//   find -exec/-delete/-fprint..., sort output/compression/temp options in any abbreviation,
//   uniq with an output operand, date setting the clock, rg preprocessors, tree -o, file -C,
//   git write subcommands or external diff/textconv/output options, hostname with an operand.
//   Each tool's own value-taking options are known here, so that a value ("find . -name -exec",
//   "tree -L -o") is not mistaken for an option; for git every word starting with '-' counts as
//   an option, since git does not always take the next word as a value (`git log -sn --output=F`
//   opens F) and the checker refuses such values.
// Globs expand in a fixed scratch directory holding "a.txt", "b c.txt", "-o" and ctl/, whose two
// names hold control characters (a line break, a tab) that a glob must never hand on.
// Build with Clang (see CMakeLists.txt); run   ./shell_command_fuzz corpus/shell_command_fuzz
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "agent/command_line.h"
#include "agent/read_only_commands.h"
#include "agent/shell_tool.h"

namespace {

using sniper::agent::ReadOnlyPlan;
using Argv = std::vector<std::string>;

const std::string& scratch_dir() {
  static const std::string kDir = [] {
    char tmpl[] = "/tmp/sniper-shell-fuzz-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) std::abort();
    const std::string dir = d;
    for (const char* f : {"a.txt", "b c.txt", "-o"}) std::ofstream(dir + "/" + f) << "x\n";
    if (::mkdir((dir + "/ctl").c_str(), 0755) != 0) std::abort();
    for (const char* f : {"n\nl.txt", "t\tb.txt"}) std::ofstream(dir + "/ctl/" + f) << "x\n";
    return dir;
  }();
  return kDir;
}

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The options and operands of argv[first..] (options: words starting with '-' before "--"). The
// word after a separate-valued option (a long name in `long_values`, or a cluster ending in a
// letter of `short_values`) is its value, neither an option nor an operand.
void split(const Argv& argv, size_t first, Argv* options, Argv* operands, const Argv& long_values = {},
           const char* short_values = "") {
  bool done = false;
  for (size_t i = first; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!done && a == "--") {
      done = true;
      continue;
    }
    if (done || a.size() < 2 || a[0] != '-') {
      operands->push_back(a);
      continue;
    }
    options->push_back(a);
    bool takes_next = false;
    if (a[1] == '-') {
      for (const std::string& v : long_values) takes_next = takes_next || a == v;
    } else {
      for (size_t j = 1; j < a.size(); ++j) {
        if (std::strchr(short_values, a[j]) != nullptr) {
          takes_next = j + 1 == a.size();
          break;
        }
      }
    }
    if (takes_next) ++i;
  }
}

// Whether short-option cluster `opt` ("-uo") holds a letter of `bad` before the first letter
// of `value_letters` (whose value is the rest of the word).
bool cluster_has(const std::string& opt, const char* bad, const char* value_letters) {
  if (opt.size() < 2 || opt[0] != '-' || opt[1] == '-') return false;
  for (size_t j = 1; j < opt.size(); ++j) {
    if (std::strchr(bad, opt[j]) != nullptr) return true;
    if (std::strchr(value_letters, opt[j]) != nullptr) return false;
  }
  return false;
}

// Known ways to write or execute, checked without the option tables; true if argv uses one.
bool obviously_unsafe(const Argv& argv) {
  const std::string& cmd = argv[0];
  Argv options, operands;
  split(argv, 1, &options, &operands);
  if (cmd == "find") {
    // GNU find's primaries that take a value: the word after them is a name, a number or a
    // pattern, never an action (`find . -name -exec` looks for files named "-exec").
    static const std::vector<std::string> kValued = {
        "-amin",   "-anewer",   "-atime",    "-cmin",      "-cnewer",   "-ctime",      "-context",   "-fstype",
        "-gid",    "-group",    "-ilname",   "-iname",     "-inum",     "-ipath",      "-iregex",    "-iwholename",
        "-links",  "-lname",    "-mmin",     "-mtime",     "-name",     "-newer",      "-path",      "-perm",
        "-regex",  "-size",     "-type",     "-uid",       "-used",     "-user",       "-wholename", "-xtype",
        "-printf", "-maxdepth", "-mindepth", "-regextype", "-samefile", "-files0-from"};
    for (size_t i = 1; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      for (const char* bad :
           {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}) {
        if (a == bad) return true;
      }
      bool valued = starts(a, "-newer");  // -newerXY REFERENCE
      for (const std::string& v : kValued) valued = valued || a == v;
      if (valued) ++i;
    }
  }
  if (cmd == "sort") {
    Argv o, ops;
    split(argv, 1, &o, &ops, {"--key", "--field-separator", "--buffer-size", "--sort", "--parallel"}, "ktS");
    for (const std::string& opt : o) {
      if (starts(opt, "--o") || starts(opt, "--c") || starts(opt, "--t") || starts(opt, "--f") || starts(opt, "--ra")) {
        return true;  // --output, --compress-program, --temporary-directory, --files0-from, --random-source
      }
      if (cluster_has(opt, "oT", "ktS")) return true;
    }
  }
  if (cmd == "uniq") {
    Argv o, files;
    split(argv, 1, &o, &files, {"--skip-fields", "--skip-chars", "--check-chars"}, "fsw");
    if (files.size() > 1) return true;  // uniq IN OUT writes OUT
  }
  if (cmd == "date") {
    Argv o, ops;
    split(argv, 1, &o, &ops, {"--date", "--reference", "--rfc-3339"}, "dr");
    for (const std::string& opt : o) {
      if (starts(opt, "--s") || cluster_has(opt, "s", "drI")) return true;  // --set, -s
    }
    for (const std::string& op : ops) {
      if (!starts(op, "+")) return true;  // an operand that is not +FORMAT sets the clock
    }
  }
  if (cmd == "rg") {
    // The word after a value-taking short option (rg's -A -B -C -E -e -f -g -j -M -m -r -T -t -d)
    // is its value, not an option: `rg -g --pretty x` searches files matching "--pretty".
    Argv o, ops;
    split(argv, 1, &o, &ops,
          {"--after-context",
           "--before-context",
           "--context",
           "--regexp",
           "--file",
           "--glob",
           "--iglob",
           "--type",
           "--type-not",
           "--type-add",
           "--type-clear",
           "--max-count",
           "--max-depth",
           "--max-filesize",
           "--color",
           "--colors",
           "--sort",
           "--sortr",
           "--threads",
           "--max-columns",
           "--replace",
           "--encoding",
           "--engine",
           "--ignore-file",
           "--path-separator",
           "--context-separator",
           "--field-context-separator",
           "--field-match-separator",
           "--dfa-size-limit",
           "--regex-size-limit"},
          "ABCEefgjMmrTtd");
    for (const std::string& opt : o) {
      if (opt == "--pre" || starts(opt, "--pre=") || starts(opt, "--pre-glob") || starts(opt, "--hostname") ||
          starts(opt, "--search-zip") || cluster_has(opt, "z", "ABCEefgjMmrTtd")) {
        return true;  // a preprocessor command, a hostname program, decompression programs
      }
    }
  }
  if (cmd == "tree") {
    // tree -o FILE writes its listing to FILE. -L -P -I -H -T and -o take the next word.
    Argv o, ops;
    split(argv, 1, &o, &ops,
          {"--charset", "--filelimit", "--sort", "--timefmt", "--hintro", "--houtro", "--infofile", "--gitfile"},
          "LPIHTo");
    for (const std::string& opt : o) {
      if (cluster_has(opt, "o", "LPIHT")) return true;
    }
  }
  if (cmd == "file") {
    // file -C (--compile) writes a compiled magic file. -e -F -f -m -P take the next word.
    Argv o, ops;
    split(argv, 1, &o, &ops,
          {"--exclude", "--exclude-quiet", "--files-from", "--magic-file", "--parameter", "--separator"}, "eFfmP");
    for (const std::string& opt : o) {
      if (starts(opt, "--c") || cluster_has(opt, "C", "eFfmP")) return true;
    }
  }
  if (cmd == "hostname" && !operands.empty()) return true;
  if (cmd == "git") {
    if (argv.size() < 2) return true;
    const std::string& sub = argv[1];
    static const std::vector<std::string> kRead = {"status",    "log",   "show",     "diff",    "ls-files",
                                                   "rev-parse", "blame", "shortlog", "describe"};
    bool listed = false;
    for (const std::string& r : kRead) listed = listed || sub == r;
    if (!listed) return true;
    // Options only: after "--" git reads paths (`git log -- -c` names a file "-c").
    Argv git_options, paths;
    split(argv, 2, &git_options, &paths);
    for (const std::string& o : git_options) {
      if (starts(o, "--ext") || starts(o, "--output") || starts(o, "--textconv") || starts(o, "--exec") ||
          starts(o, "--upload") || o == "-c" || o == "-C" || starts(o, "--git-dir") || starts(o, "--work-tree")) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> extra = {"make"};
  auto plan = sniper::agent::plan_read_only(line, extra, scratch_dir());
  if (!plan.ok()) {
    if (plan.error().message.empty()) std::abort();  // every refusal says why
    return 0;
  }
  if (plan->argv.empty() || plan->argv.size() != plan->exec.size()) std::abort();
  std::string requoted;
  for (size_t i = 0; i < plan->argv.size(); ++i) {
    const Argv& argv = plan->argv[i];
    if (argv.empty()) std::abort();
    if (!sniper::agent::check_read_only_argv(argv, extra).ok()) std::abort();
    if (plan->exec[i] != sniper::agent::harden_argv(argv)) std::abort();
    for (const std::string& a : argv) {
      if (a.find('\0') != std::string::npos || a.find('\n') != std::string::npos || a.find('\r') != std::string::npos)
        std::abort();
    }
    if (argv[0] != "make" && obviously_unsafe(argv)) std::abort();
    if (i > 0) requoted += " | ";
    for (size_t j = 0; j < argv.size(); ++j) requoted += (j > 0 ? " " : "") + sniper::agent::shell_quote(argv[j]);
  }
  // Read back: the same stages (quoted words are never globs).
  if (requoted.size() > sniper::agent::kMaxLineBytes) return 0;
  auto again = sniper::agent::plan_read_only(requoted, extra, scratch_dir());
  if (!again.ok() || again->argv != plan->argv) std::abort();
  return 0;
}
