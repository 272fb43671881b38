// SPDX-License-Identifier: MIT
// The read-only command table and its argv checks (see read_only_commands.h). Options are parsed
// the way GNU getopt_long parses them (option clusters, attached or separate values, options
// after operands, `--` ending options) but matched exactly against each command's list.
#include "agent/read_only_commands.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

namespace sniper::agent {

namespace {

using Args = std::vector<std::string>;
// Checks the operands (non-option arguments) of a command; an Error names the offending one.
using OperandCheck = Status (*)(const std::string& cmd, const Args& operands);

struct Spec {
  const char* name;
  const char* short_flags;               // single-letter options without a value ("aAlh")
  const char* short_values;              // single-letter options that take one ("nc")
  std::vector<const char*> long_flags;   // "--all"
  std::vector<const char*> long_values;  // "--lines" (as --lines=N or --lines N)
  OperandCheck operands = nullptr;       // null: any operands
  bool numeric = false;                  // "-5" means a count (head, tail, git log)
  // Options whose value is optional (getopt's "::"): the value counts only when attached
  // ("-Iseconds", "--color=never"); the next word is never theirs (`uniq --group IN OUT` has
  // two operands).
  const char* short_optional = "";
  std::vector<const char*> long_optional = {};
};

Status no_operands(const std::string& cmd, const Args& operands) {
  if (operands.empty()) return ok_status();
  return make_error("%s: the argument '%s' is not allowed without asking", cmd.c_str(), operands[0].c_str());
}

Status at_most_one(const std::string& cmd, const Args& operands) {
  // `uniq IN OUT` writes OUT ("-" is an operand too).
  if (operands.size() <= 1) return ok_status();
  return make_error("%s: a second file argument ('%s') is an output file", cmd.c_str(), operands[1].c_str());
}

Status at_most_two(const std::string& cmd, const Args& operands) {
  if (operands.size() <= 2) return ok_status();
  return make_error("%s: more than two file arguments", cmd.c_str());
}

Status date_operands(const std::string& cmd, const Args& operands) {
  // An operand that is not +FORMAT sets the clock.
  if (operands.size() > 1) return make_error("%s: more than one operand", cmd.c_str());
  if (!operands.empty() && operands[0].rfind('+', 0) != 0) {
    return make_error("%s: the operand '%s' sets the date (only +FORMAT is allowed)", cmd.c_str(), operands[0].c_str());
  }
  return ok_status();
}

Status ps_operands(const std::string& cmd, const Args& operands) {
  // BSD-style option words ("aux", "ef").
  for (const std::string& o : operands) {
    if (o.empty() || o.find_first_not_of("aAuxwfejlsvrTU") != std::string::npos) {
      return make_error("%s: the argument '%s' is not allowed without asking", cmd.c_str(), o.c_str());
    }
  }
  return ok_status();
}

const std::vector<Spec>& specs() {
  static const std::vector<Spec> kSpecs = {
      {"ls",
       "aAlhR1tSrdFisnpgGoQUvXc",
       "wIT",
       {"--all", "--almost-all", "--human-readable", "--recursive", "--reverse", "--directory", "--classify", "--inode",
        "--size", "--numeric-uid-gid", "--group-directories-first", "--full-time", "--si", "--dereference", "--literal",
        "--escape", "--quote-name"},
       {"--sort", "--time-style", "--format", "--width", "--ignore", "--hide", "--block-size", "--indicator-style",
        "--quoting-style", "--time"},
       nullptr,
       false,
       "",
       {"--color"}},
      {"cat",
       "nbAETvseut",
       "",
       {"--number", "--number-nonblank", "--show-all", "--show-ends", "--show-tabs", "--show-nonprinting",
        "--squeeze-blank"},
       {}},
      {"head",
       "qvz",
       "nc",
       {"--quiet", "--silent", "--verbose", "--zero-terminated"},
       {"--lines", "--bytes"},
       nullptr,
       true},
      {"tail",
       "qvzr",
       "nc",
       {"--quiet", "--silent", "--verbose", "--zero-terminated"},
       {"--lines", "--bytes"},
       nullptr,
       true},
      {"wc", "lwcmL", "", {"--lines", "--words", "--bytes", "--chars", "--max-line-length"}, {}},
      {"pwd", "LP", "", {}, {}, no_operands},
      {"grep",
       "ivnrRlLcwxEFGPoqshHzIabTUZ",
       "ABCefmd",
       {"--ignore-case",
        "--invert-match",
        "--line-number",
        "--recursive",
        "--dereference-recursive",
        "--files-with-matches",
        "--files-without-match",
        "--count",
        "--word-regexp",
        "--line-regexp",
        "--extended-regexp",
        "--fixed-strings",
        "--basic-regexp",
        "--perl-regexp",
        "--only-matching",
        "--quiet",
        "--silent",
        "--no-messages",
        "--no-filename",
        "--with-filename",
        "--null",
        "--null-data",
        "--text",
        "--byte-offset",
        "--initial-tab",
        "--no-ignore-case",
        "--line-buffered"},
       {"--after-context", "--before-context", "--context", "--regexp", "--file", "--max-count", "--include",
        "--exclude", "--exclude-dir", "--binary-files", "--directories", "--devices", "--label"},
       nullptr,
       false,
       "",
       {"--color", "--colour"}},
      {"rg",
       "iSsnNlcwxFvouqaLH0UIp",
       "ABCegtTmjM",
       {"--ignore-case",
        "--smart-case",
        "--case-sensitive",
        "--line-number",
        "--no-line-number",
        "--files-with-matches",
        "--files-without-match",
        "--count",
        "--count-matches",
        "--word-regexp",
        "--line-regexp",
        "--fixed-strings",
        "--invert-match",
        "--only-matching",
        "--hidden",
        "--no-ignore",
        "--follow",
        "--files",
        "--json",
        "--vimgrep",
        "--no-heading",
        "--heading",
        "--with-filename",
        "--no-filename",
        "--null",
        "--text",
        "--multiline",
        "--pcre2",
        "--quiet",
        "--stats",
        "--trim",
        "--column",
        "--byte-offset",
        "--unrestricted",
        "--no-messages",
        "--sort-files",
        "--type-list",
        "--no-config"},
       {"--after-context", "--before-context", "--context", "--regexp", "--glob", "--iglob", "--type", "--type-not",
        "--max-count", "--max-depth", "--max-filesize", "--color", "--colors", "--sort", "--sortr", "--threads",
        "--max-columns", "--replace", "--encoding"}},
      {"date",
       "uR",
       "dr",
       {"--utc", "--universal", "--rfc-email"},
       {"--date", "--rfc-3339", "--reference"},
       date_operands,
       false,
       "I",
       {"--iso-8601"}},
      {"whoami", "", "", {}, {}, no_operands},
      {"uname",
       "asnrvmpio",
       "",
       {"--all", "--kernel-name", "--nodename", "--kernel-release", "--kernel-version", "--machine", "--processor",
        "--hardware-platform", "--operating-system"},
       {},
       no_operands},
      {"df",
       "hHTilaPk",
       "tx",
       {"--human-readable", "--si", "--print-type", "--inodes", "--local", "--all", "--portability", "--total"},
       {"--type", "--exclude-type", "--block-size"},
       nullptr,
       false,
       "",
       {"--output"}},
      {"du",
       "shacSkmxLbl0",
       "dt",
       {"--summarize", "--human-readable", "--all", "--total", "--apparent-size", "--one-file-system", "--dereference",
        "--bytes", "--null", "--si"},
       {"--max-depth", "--threshold", "--exclude", "--block-size"},
       nullptr,
       false,
       "",
       {"--time"}},
      {"id", "ugGnrz", "", {"--user", "--group", "--groups", "--name", "--real", "--zero"}, {}},
      {"which", "a", "", {}, {}},
      {"file",
       "bihLlkNrz0",
       "F",
       {"--brief", "--mime", "--mime-type", "--mime-encoding", "--dereference", "--no-dereference", "--keep-going",
        "--no-pad", "--raw", "--uncompress", "--print0"},
       {"--separator"}},
      {"stat", "fLt", "c", {"--file-system", "--dereference", "--terse"}, {"--format", "--printf"}},
      {"tree",
       "adfipsughDFqNvrtCJXAn",
       "LIP",
       {"--noreport", "--dirsfirst", "--prune", "--du", "--si", "--gitignore", "--matchdirs", "--ignore-case"},
       {"--charset", "--filelimit", "--sort", "--timefmt"}},
      {"printenv", "0", "", {"--null"}, {}},
      {"ps",
       "eAafFlHjuxwTNrcyZMLm",
       "pUuGgot",
       {"--forest", "--no-headers", "--headers"},
       {"--sort", "--pid", "--ppid", "--user", "--format", "--cols", "--columns", "--width"},
       ps_operands},
      {"free",
       "bkmghltvw",
       "",
       {"--bytes", "--kilo", "--mega", "--giga", "--human", "--lohi", "--total", "--wide", "--si"},
       {},
       no_operands},
      {"uptime", "ps", "", {"--pretty", "--since"}, {}, no_operands},
      {"basename", "asz", "", {"--multiple", "--zero"}, {"--suffix"}},
      {"dirname", "z", "", {"--zero"}, {}},
      {"realpath",
       "emsLPqz",
       "",
       {"--canonicalize-existing", "--canonicalize-missing", "--strip", "--no-symlinks", "--logical", "--physical",
        "--quiet", "--zero"},
       {"--relative-to", "--relative-base"}},
      {"readlink",
       "femnqsvz",
       "",
       {"--canonicalize", "--canonicalize-existing", "--canonicalize-missing", "--no-newline", "--quiet", "--silent",
        "--verbose", "--zero"},
       {}},
      {"nproc", "", "", {"--all"}, {"--ignore"}, no_operands},
      {"lscpu", "aebcpxyJ", "", {"--all", "--online", "--offline", "--json", "--hex", "--physical"}, {}, no_operands},
      {"cut",
       "sznw",
       "bcfd",
       {"--only-delimited", "--zero-terminated", "--complement"},
       {"--bytes", "--characters", "--fields", "--delimiter", "--output-delimiter"}},
      {"tr", "cCdst", "", {"--complement", "--delete", "--squeeze-repeats", "--truncate-set1"}, {}},
      {"diff",
       "uqsrNwbBiyaTtpcEZ",
       "UCIxFX",
       {"--brief", "--report-identical-files", "--recursive", "--new-file", "--ignore-all-space",
        "--ignore-space-change", "--ignore-blank-lines", "--ignore-case", "--side-by-side", "--text",
        "--show-c-function", "--expand-tabs", "--minimal", "--strip-trailing-cr", "--suppress-common-lines",
        "--no-dereference"},
       {"--ignore-matching-lines", "--exclude", "--label", "--width", "--show-function-line"},
       at_most_two,
       false,
       "",
       {"--color", "--unified", "--context"}},
      {"cmp",
       "lsbz",
       "in",
       {"--verbose", "--silent", "--quiet", "--print-bytes", "--zero"},
       {"--ignore-initial", "--bytes"}},
      {"md5sum",
       "bctwz",
       "",
       {"--binary", "--check", "--text", "--tag", "--zero", "--quiet", "--status", "--strict", "--warn",
        "--ignore-missing"},
       {}},
      {"sha1sum",
       "bctwz",
       "",
       {"--binary", "--check", "--text", "--tag", "--zero", "--quiet", "--status", "--strict", "--warn",
        "--ignore-missing"},
       {}},
      {"sha256sum",
       "bctwz",
       "",
       {"--binary", "--check", "--text", "--tag", "--zero", "--quiet", "--status", "--strict", "--warn",
        "--ignore-missing"},
       {}},
      {"seq", "w", "sf", {"--equal-width"}, {"--separator", "--format"}},
      {"true", "", "", {}, {}},
      {"false", "", "", {}, {}},
      {"hostname",
       "sfdiIAay",
       "",
       {"--short", "--fqdn", "--long", "--domain", "--ip-address", "--all-ip-addresses", "--all-fqdns", "--alias",
        "--yp", "--nis"},
       {},
       no_operands},
      // No -o/--output, -T/--temporary-directory, --compress-program, --files0-from, --random-source.
      {"sort",
       "bdfgiMhnRrVcCsuz",
       "ktS",
       {"--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort",
        "--ignore-nonprinting", "--month-sort", "--human-numeric-sort", "--numeric-sort", "--random-sort", "--reverse",
        "--version-sort", "--check", "--stable", "--unique", "--zero-terminated"},
       {"--key", "--field-separator", "--buffer-size", "--sort", "--parallel"}},
      {"uniq",
       "cdDiuz",
       "fsw",
       {"--count", "--repeated", "--ignore-case", "--unique", "--zero-terminated"},
       {"--skip-fields", "--skip-chars", "--check-chars"},
       at_most_one,
       false,
       "",
       {"--group", "--all-repeated"}},
      {"column",
       "tnexJL",
       "scoNRWdHlO",
       {"--table", "--fillrows", "--json", "--keep-empty-lines"},
       {"--separator", "--output-separator", "--columns", "--table-columns", "--table-right", "--table-name"}},
      {"nl",
       "p",
       "bhfdinsvlw",
       {"--no-renumber"},
       {"--body-numbering", "--header-numbering", "--footer-numbering", "--section-delimiter", "--line-increment",
        "--number-format", "--number-separator", "--starting-line-number", "--join-blank-lines", "--number-width"}},
      {"jq",
       "rcSenjsaCMt",
       "",
       {"--raw-output", "--compact-output", "--sort-keys", "--exit-status", "--null-input", "--join-output", "--slurp",
        "--ascii-output", "--color-output", "--monochrome-output", "--tab", "--raw-input"},
       {"--indent", "--arg", "--argjson"}},
  };
  return kSpecs;
}

const Spec* find_spec(const std::string& name) {
  for (const Spec& s : specs()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

bool listed(const std::vector<const char*>& names, std::string_view name) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether a value given as the next word may start with '-'. getopt_long takes the next word
// whatever it is (`grep -e -x`). git does not parse like getopt: `git log -sn --output=F` fails
// on "-sn" only after its diff options have opened F, so the word after "-sn" was an option to
// git, not the value this parser would take it for. For git a separate value that looks like an
// option is therefore refused (it needs confirmation); attached values ("-n5", "--author=-x")
// are unambiguous.
enum class DashValues { kTaken, kRefused };

// Parses argv[first..] against `spec` with getopt_long's syntax; collects the operands.
Status check_options(const std::string& cmd, const Spec& spec, const Args& argv, size_t first, Args* operands,
                     DashValues dash_values = DashValues::kTaken) {
  auto not_allowed = [&](const std::string& arg) {
    return make_error("%s: the option '%s' is not on the read-only list (it would need confirmation)", cmd.c_str(),
                      arg.c_str());
  };
  // The separate value of `option` is argv[i + 1 .. i + n].
  auto check_separate = [&](const std::string& option, size_t i, size_t n) -> Status {
    if (dash_values == DashValues::kTaken) return ok_status();
    for (size_t k = i + 1; k <= i + n; ++k) {
      if (!argv[k].empty() && argv[k][0] == '-') {
        const std::string attached = option + (option.size() > 2 ? "=" : "") + argv[k];
        return make_error(
            "%s: the value '%s' of '%s' starts with '-', which %s may read as an option; write '%s' "
            "or confirm the command",
            cmd.c_str(), argv[k].c_str(), option.c_str(), cmd.c_str(), attached.c_str());
      }
    }
    return ok_status();
  };
  for (size_t i = first; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      operands->insert(operands->end(), argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      return ok_status();
    }
    if (a.size() < 2 || a[0] != '-') {
      operands->push_back(a);
      continue;
    }
    if (a[1] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (listed(spec.long_optional, name)) continue;  // --name or --name=value, never the next word
      if (listed(spec.long_flags, name)) {
        if (eq != std::string::npos) return make_error("%s: the option '%s' takes no value", cmd.c_str(), name.c_str());
        continue;
      }
      if (!listed(spec.long_values, name)) return not_allowed(a);
      if (eq == std::string::npos) {
        // jq's --arg and --argjson take a name and a value.
        const size_t n_values = (cmd == "jq" && (name == "--arg" || name == "--argjson")) ? 2 : 1;
        if (i + n_values >= argv.size())
          return make_error("%s: the option '%s' needs a value", cmd.c_str(), name.c_str());
        SNIPER_TRY(check_separate(name, i, n_values));
        i += n_values;
      }
      continue;
    }
    if (spec.numeric && all_digits(std::string_view(a).substr(1))) continue;  // -5
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      if (std::strchr(spec.short_optional, c) != nullptr) break;  // the rest of the word, if any, is its value
      if (std::strchr(spec.short_flags, c) != nullptr) continue;
      if (std::strchr(spec.short_values, c) == nullptr) return not_allowed("-" + std::string(1, c));
      if (j + 1 == a.size()) {  // the value is the next argument
        if (i + 1 >= argv.size()) return make_error("%s: the option '-%c' needs a value", cmd.c_str(), c);
        SNIPER_TRY(check_separate("-" + std::string(1, c), i, 1));
        ++i;
      }
      break;  // the rest of the word is the value
    }
  }
  return ok_status();
}

// find: starting points, then an expression of listed primaries and operators (no -exec,
// -execdir, -ok, -okdir, -delete, -fprint*, -fls).
Status check_find(const Args& argv) {
  static const std::set<std::string> kFlags = {"!",      "(",       ")",         "-not",      "-a",
                                               "-and",   "-o",      "-or",       "-print",    "-print0",
                                               "-prune", "-empty",  "-readable", "-writable", "-executable",
                                               "-xdev",  "-mount",  "-ls",       "-true",     "-false",
                                               "-depth", "-follow", "-nouser",   "-nogroup",  "-quit",
                                               "-P",     "-L",      "-H",        "-daystart", "-ignore_readdir_race",
                                               "-noleaf"};
  static const std::set<std::string> kValues = {
      "-name",     "-iname",    "-path",     "-ipath",  "-wholename", "-iwholename", "-regex",  "-iregex", "-type",
      "-xtype",    "-maxdepth", "-mindepth", "-size",   "-mtime",     "-mmin",       "-atime",  "-amin",   "-ctime",
      "-cmin",     "-newer",    "-perm",     "-user",   "-group",     "-uid",        "-gid",    "-links",  "-inum",
      "-samefile", "-lname",    "-ilname",   "-printf", "-regextype", "-used",       "-fstype", "-anewer", "-cnewer"};
  bool in_expression = false;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const bool is_primary = !a.empty() && (a[0] == '-' || a == "!" || a == "(" || a == ")");
    if (!is_primary) {
      if (in_expression) return make_error("find: the argument '%s' is not allowed here without asking", a.c_str());
      continue;  // a starting point
    }
    in_expression = true;
    if (kFlags.count(a) > 0) continue;
    if (kValues.count(a) == 0) {
      return make_error("find: the primary '%s' is not on the read-only list (it would need confirmation)", a.c_str());
    }
    if (++i >= argv.size()) return make_error("find: '%s' needs a value", a.c_str());
  }
  return ok_status();
}

// git's read subcommands and their options.
const std::vector<Spec>& git_specs() {
  static const std::vector<const char*> kLogFlags = {"--oneline",
                                                     "--stat",
                                                     "--shortstat",
                                                     "--numstat",
                                                     "--name-only",
                                                     "--name-status",
                                                     "--patch",
                                                     "--graph",
                                                     "--decorate",
                                                     "--no-decorate",
                                                     "--all",
                                                     "--reverse",
                                                     "--first-parent",
                                                     "--no-merges",
                                                     "--merges",
                                                     "--abbrev-commit",
                                                     "--no-abbrev-commit",
                                                     "--follow",
                                                     "--no-color",
                                                     "--regexp-ignore-case",
                                                     "--date-order",
                                                     "--topo-order",
                                                     "--summary",
                                                     "--raw",
                                                     "--no-patch",
                                                     "--full-diff",
                                                     "--branches",
                                                     "--tags",
                                                     "--remotes",
                                                     "--left-right",
                                                     "--cherry-pick",
                                                     "--boundary",
                                                     "--simplify-by-decoration",
                                                     "--ignore-all-space",
                                                     "--ignore-space-change",
                                                     "--minimal",
                                                     "--no-renames",
                                                     "--full-history",
                                                     "--parents",
                                                     "--children",
                                                     "--relative-date",
                                                     "--source",
                                                     "--use-mailmap",
                                                     "--log-size",
                                                     "--walk-reflogs"};
  static const std::vector<const char*> kLogValues = {
      "--max-count",   "--skip",        "--author",        "--committer",
      "--grep",        "--since",       "--until",         "--after",
      "--before",      "--format",      "--date",          "--unified",
      "--stat-width",  "--diff-filter", "--decorate-refs", "--decorate-refs-exclude",
      "--max-parents", "--min-parents", "--encoding"};
  // Optional values, attached only (git's PARSE_OPT_OPTARG).
  static const std::vector<const char*> kOptional = {"--color", "--abbrev", "--pretty", "--relative"};
  static const std::vector<const char*> kDiffFlags = {"--stat",
                                                      "--numstat",
                                                      "--shortstat",
                                                      "--name-only",
                                                      "--name-status",
                                                      "--cached",
                                                      "--staged",
                                                      "--patch",
                                                      "--raw",
                                                      "--ignore-all-space",
                                                      "--ignore-space-change",
                                                      "--ignore-blank-lines",
                                                      "--word-diff",
                                                      "--color-words",
                                                      "--no-color",
                                                      "--check",
                                                      "--summary",
                                                      "--minimal",
                                                      "--patience",
                                                      "--histogram",
                                                      "--exit-code",
                                                      "--quiet",
                                                      "--no-renames",
                                                      "--find-renames",
                                                      "--find-copies",
                                                      "--full-index",
                                                      "--binary",
                                                      "--merge-base",
                                                      "--no-index",
                                                      "--text",
                                                      "--dirstat"};
  static const std::vector<const char*> kDiffValues = {"--unified",           "--diff-filter", "--stat-width",
                                                       "--diff-algorithm",    "--src-prefix",  "--dst-prefix",
                                                       "--inter-hunk-context"};
  auto join = [](std::vector<const char*> a, const std::vector<const char*>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  static const std::vector<Spec> kGit = {
      {"status",
       "sbzv",
       "",
       {"--short", "--branch", "--long", "--show-stash", "--no-renames", "--renames", "--ahead-behind",
        "--no-ahead-behind", "--verbose"},
       {},
       nullptr,
       false,
       "u",
       {"--untracked-files", "--porcelain", "--ignore-submodules", "--column", "--ignored"}},
      {"log", "pisw", "nSG", kLogFlags, kLogValues, nullptr, true, "", kOptional},
      {"show", "psw", "", join(kLogFlags, kDiffFlags), join(kLogValues, kDiffValues), nullptr, false, "", kOptional},
      {"diff", "pRwb", "U", kDiffFlags, kDiffValues, nullptr, false, "M", kOptional},
      {"ls-files",
       "cmdoiskuvtz",
       "x",
       {"--cached", "--modified", "--deleted", "--others", "--ignored", "--stage", "--killed", "--unmerged",
        "--exclude-standard", "--full-name", "--error-unmatch", "--directory", "--no-empty-directory", "--eol",
        "--deduplicate", "--sparse"},
       {"--exclude", "--format"},
       nullptr,
       false,
       "",
       {"--abbrev"}},
      {"rev-parse",
       "q",
       "",
       {"--show-toplevel", "--git-dir", "--git-common-dir", "--is-inside-work-tree", "--is-inside-git-dir",
        "--is-bare-repository", "--verify", "--quiet", "--show-prefix", "--show-cdup", "--symbolic-full-name", "--all",
        "--branches", "--tags", "--absolute-git-dir", "--show-superproject-working-tree"},
       {"--since", "--until", "--default"},
       nullptr,
       false,
       "",
       {"--short", "--abbrev-ref"}},
      {"blame",
       "ewsfnclt",
       "L",
       {"--porcelain", "--line-porcelain", "--show-email", "--show-name", "--show-number", "--root", "--show-stats",
        "--incremental", "--minimal"},
       {"--date"},
       nullptr,
       false,
       "CM",
       {"--abbrev"}},
      {"shortlog",
       "sne",
       "",
       {"--summary", "--numbered", "--email", "--all", "--no-merges"},
       {"--format", "--group", "--since", "--until", "--author"},
       nullptr,
       true},
      {"describe",
       "",
       "",
       {"--tags", "--all", "--always", "--long", "--exact-match", "--first-parent", "--contains"},
       {"--match", "--exclude", "--candidates"},
       nullptr,
       false,
       "",
       {"--abbrev"}},
  };
  return kGit;
}

Status check_git(const Args& argv) {
  if (argv.size() < 2) return make_error("git: no subcommand (only read subcommands run without asking)");
  const std::string& sub = argv[1];
  for (const Spec& s : git_specs()) {
    if (sub != s.name) continue;
    Args operands;
    SNIPER_TRY(check_options("git " + sub, s, argv, 2, &operands, DashValues::kRefused));
    return ok_status();  // revisions and paths
  }
  return make_error(
      "git: '%s' is not a read-only subcommand (status, log, show, diff, ls-files, rev-parse, blame, "
      "shortlog, describe run without asking)",
      sub.c_str());
}

}  // namespace

Status check_read_only_argv(const Args& argv, const std::vector<std::string>& extra_commands) {
  if (argv.empty()) return make_error("the command is empty");
  const std::string& cmd = argv[0];
  if (cmd.find('/') != std::string::npos) {
    return make_error("'%s' is a path, not a command name (only listed commands run without asking)", cmd.c_str());
  }
  for (const std::string& arg : argv) {
    if (arg.find('\0') != std::string::npos) return make_error("%s: an argument holds a NUL byte", cmd.c_str());
  }
  // The user's own list: any arguments (they still run in the sandbox).
  if (std::find(extra_commands.begin(), extra_commands.end(), cmd) != extra_commands.end()) return ok_status();
  if (cmd == "echo" || cmd == "printf") return ok_status();  // every argument is text to print
  if (cmd == "find") return check_find(argv);
  if (cmd == "git") return check_git(argv);
  const Spec* spec = find_spec(cmd);
  if (spec == nullptr) return make_error("'%s' is not on the read-only list", cmd.c_str());
  Args operands;
  SNIPER_TRY(check_options(cmd, *spec, argv, 1, &operands));
  if (spec->operands != nullptr) SNIPER_TRY(spec->operands(cmd, operands));
  return ok_status();
}

std::vector<std::string> harden_argv(const Args& argv) {
  if (argv.empty()) return argv;
  if (argv[0] == "rg") {
    Args out = {argv[0], "--no-config"};
    out.insert(out.end(), argv.begin() + 1, argv.end());
    return out;
  }
  if (argv[0] != "git" || argv.size() < 2) return argv;
  // Configuration can name programs git runs even for read commands: the fsmonitor hook
  // (status, diff), external diff drivers and textconv filters (diff, log -p, show, blame), the
  // pager, hooks, gpg for signatures (log.showSignature). Turn each off for this run; what cannot
  // be named here (clean/smudge filters of .gitattributes drivers) still runs in the sandbox.
  Args out = {"git",  "--no-pager",
              "-c",   "core.fsmonitor=false",
              "-c",   "core.untrackedCache=false",
              "-c",   "core.pager=cat",
              "-c",   "core.hooksPath=/dev/null",
              "-c",   "log.showSignature=false",
              "-c",   "diff.noprefix=false",
              "-c",   "status.submoduleSummary=false",
              "-c",   "diff.ignoreSubmodules=all",
              "-c",   "protocol.allow=never",
              "-c",   "credential.helper=",
              argv[1]};
  const std::string& sub = argv[1];
  if (sub == "diff" || sub == "log" || sub == "show") {
    out.insert(out.end(), {"--no-ext-diff", "--no-textconv"});
  } else if (sub == "blame") {
    out.push_back("--no-textconv");
  } else if (sub == "status") {
    out.push_back("--ignore-submodules=all");
  }
  out.insert(out.end(), argv.begin() + 2, argv.end());
  return out;
}

const std::vector<std::string>& hardened_environment() {
  static const std::vector<std::string> kEnv = {"GIT_CONFIG_NOSYSTEM=1",
                                                "GIT_OPTIONAL_LOCKS=0",
                                                "GIT_TERMINAL_PROMPT=0",
                                                "GIT_PAGER=cat",
                                                "PAGER=cat",
                                                "GIT_EXTERNAL_DIFF",
                                                "GIT_SSH",
                                                "GIT_SSH_COMMAND",
                                                "GIT_ASKPASS",
                                                "SSH_ASKPASS",
                                                "GIT_EXEC_PATH",
                                                "GIT_CONFIG_PARAMETERS",
                                                "GIT_CONFIG_COUNT",
                                                "LESSOPEN",
                                                "LESSCLOSE",
                                                "RIPGREP_CONFIG_PATH"};
  return kEnv;
}

}  // namespace sniper::agent
