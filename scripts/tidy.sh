#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs clang-tidy 14 with .clang-tidy on the C++ files a change touches: the .cpp files that differ
# from BASE, plus, for a changed header, the .cpp of the same name beside it; headers are checked
# through the files that include them (HeaderFilterRegex). Any finding fails the run
# (WarningsAsErrors). Uses a Clang compilation database in build/tidy (configured from the ci
# preset, never built but for the generated build_info.h: a few seconds). Fix a finding, or
# suppress it on the line with `// NOLINT(check-name): reason`.
# Usage: scripts/tidy.sh [--all | --commit | BASE]
#   (none)    BASE is the merge base with main (or origin/main): what a branch changed.
#   --commit  what CI runs (scripts/test.sh): the commit under test, i.e. the merge base with
#             main when HEAD is on a branch of it, else HEAD's first parent (on main: what the
#             last commit or merge brought). Without git history (not a checkout, a shallow
#             clone of one commit) it says so and checks nothing.
#   --all     every file in the database (slow: seconds to a minute per file).
# SNIPER_TIDY_MAX_FILES (default 8; 0: no limit) bounds the files one run checks, so that a large
# merge cannot blow CI's time budget: beyond it, the run checks that many of them, a window of the
# sorted list that starts at an offset drawn from HEAD's hash (another commit checks another
# window), and says which it left out. `scripts/tidy.sh BASE` with no limit checks them all.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/tidy
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)
cmake --preset ci -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
db=$build/compile_commands.json
# The one generated header the sources include (apps/cli: build_info.h); a cmake -P script.
if [ -f "$build/build.ninja" ] && grep -q '^build sniper_build_info' "$build/build.ninja"; then
  cmake --build "$build" --target sniper_build_info >/dev/null
fi
in_db() { python3 -c 'import json,os,sys
files={os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
for line in sys.stdin:
    p=os.path.realpath(line.strip())
    if line.strip() and p in files: print(line.strip())' "$db"; }
changed_since() {  # the .cpp files changed since $1, and the .cpp beside each changed header
  local changed f
  changed=$( (git diff --name-only --diff-filter=d "$1" -- '*.cpp' '*.h'; git ls-files --others --exclude-standard -- '*.cpp' '*.h') | sort -u)
  for f in $changed; do
    case "$f" in
      *.cpp) echo "$f" ;;
      *.h) if [ -f "${f%.h}.cpp" ]; then echo "${f%.h}.cpp"; fi ;;
    esac
  done | sort -u | in_db
}
main_base() { git merge-base HEAD main 2>/dev/null || git merge-base HEAD origin/main 2>/dev/null || true; }
case "${1:-}" in
  --all)
    files=$(python3 -c 'import json,sys; [print(e["file"]) for e in json.load(open(sys.argv[1]))]' "$db") ;;
  --commit)
    if ! git rev-parse --verify -q HEAD >/dev/null 2>&1; then
      echo "tidy: not a git checkout: no change to check (skipped)"
      exit 0
    fi
    base=$(main_base)
    if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
      base=$(git rev-parse --verify -q 'HEAD^1' 2>/dev/null || true)
    fi
    if [ -z "$base" ]; then
      echo "tidy: HEAD has no parent in this clone (shallow?): no change to check (skipped)"
      exit 0
    fi
    echo "tidy: the commit under test: changes since $(git log -1 --format='%h %s' "$base" | cut -c1-72)"
    files=$(changed_since "$base") ;;
  *)
    base=${1:-$(main_base)}
    if [ -z "$base" ]; then
      echo "tidy: no merge base with main; pass BASE (a commit), --commit or --all" >&2
      exit 2
    fi
    files=$(changed_since "$base")
    if [ -n "${1:-}" ]; then max=0; fi ;;
esac
max=${max-${SNIPER_TIDY_MAX_FILES:-8}}
if [ "${1:-}" != "--all" ] && [ -n "$files" ] && [ "$max" -gt 0 ]; then
  n=$(echo "$files" | wc -l)
  if [ "$n" -gt "$max" ]; then
    head_hash=$(git rev-parse --short=7 HEAD 2>/dev/null || echo 0)
    start=$((0x$head_hash % n))
    all=$files
    files=$( (echo "$all"; echo "$all") | tail -n +$((start + 1)) | head -n "$max")
    echo "tidy: $n files changed, more than SNIPER_TIDY_MAX_FILES=$max: checking $max of them," \
      "from number $((start + 1)) of the sorted list on (an offset drawn from HEAD's hash); left out:"
    comm -23 <(echo "$all" | sort) <(echo "$files" | sort) | sed 's/^/  /'
  fi
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
