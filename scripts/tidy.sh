#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs clang-tidy 14 with .clang-tidy on the C++ files a change touches: the .cpp files that differ
# from BASE (default: the merge base with main), plus, for a changed header, the .cpp of the same
# name beside it; headers are checked through the files that include them (HeaderFilterRegex).
# Any finding fails the run (WarningsAsErrors). Uses a Clang compilation database in build/tidy
# (configured from the ci preset, never built: a few seconds). Fix a finding, or suppress it on the
# line with `// NOLINT(check-name): reason`.
# Usage: scripts/tidy.sh [--all | BASE]   (--all: every file in the database; slow, minutes per
#        hundred files)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/tidy
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)
cmake --preset ci -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
db=$build/compile_commands.json
in_db() { python3 -c 'import json,os,sys
files={os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
for line in sys.stdin:
    p=os.path.realpath(line.strip())
    if line.strip() and p in files: print(line.strip())' "$db"; }
if [ "${1:-}" = "--all" ]; then
  files=$(python3 -c 'import json,sys; [print(e["file"]) for e in json.load(open(sys.argv[1]))]' "$db")
else
  base=${1:-$(git merge-base HEAD main 2>/dev/null || git merge-base HEAD origin/main 2>/dev/null || true)}
  if [ -z "$base" ]; then
    echo "tidy: no merge base with main; pass BASE (a commit) or --all" >&2
    exit 2
  fi
  changed=$( (git diff --name-only --diff-filter=d "$base" -- '*.cpp' '*.h'; git ls-files --others --exclude-standard -- '*.cpp' '*.h') | sort -u)
  files=$(for f in $changed; do
    case "$f" in
      *.cpp) echo "$f" ;;
      *.h) if [ -f "${f%.h}.cpp" ]; then echo "${f%.h}.cpp"; fi ;;
    esac
  done | sort -u | in_db)
fi
if [ -z "$files" ]; then
  echo "tidy: no C++ file to check"
  exit 0
fi
echo "tidy: $(echo "$files" | wc -l) files"
# One clang-tidy per file, nproc at a time; every file's findings are printed, then the status.
# (clang-tidy exits non-zero on a finding: the log decides below.)
echo "$files" | (xargs -P "$(nproc)" -n 1 "$tidy" -p "$build" --quiet 2>&1 || true) |
  (grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers' || true) |
  tee "$build/tidy.log"
if grep -q -E ': (error|warning): ' "$build/tidy.log"; then
  echo "tidy: findings above (fix them, or NOLINT(check): reason on the line)" >&2
  exit 1
fi
echo "tidy: clean"
