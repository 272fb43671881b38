#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs dependencies, builds with warnings as errors and runs every test (ctest).
# Usage: scripts/test.sh [ci|ci-asan|fuzz|release|dev]
#   (default: ci, then ci-asan for the sanitizer tests and the fuzzers).
# Two builds in CI: `ci` (GCC, -O3) runs every test; `ci-asan` (Clang, ASan/UBSan at -O1, and
# -fsanitize=fuzzer-no-link so that the libraries are coverage-instrumented for libFuzzer) runs
# everything but the end-to-end suites again, plus each libFuzzer target (label fuzz) for
# SNIPER_FUZZ_SECONDS (default 15) from its checked-in corpus (tests/fuzz/CMakeLists.txt). A crash
# fails the run and leaves its input as build/ci-asan/tests/fuzz/crash-<target>-*: fix the bug
# and add the input to tests/fuzz/regressions/<target>/ (replayed by every build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
configure() {
  cmake --preset "$1" -DSNIPER_FUZZ_SECONDS="${SNIPER_FUZZ_SECONDS:-15}" >/dev/null
}
run_preset() {
  local preset=$1; shift
  configure "$preset"
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs" "$@"
}
# The sanitizer stage leaves out the end-to-end suites (golden, cgroup, cli), the node clients (js:
# the server's code paths they reach run under ASan in the server tests) and the load tests (ASan's
# quarantine holds freed memory on purpose, so their RSS checks are meaningless there). To keep CI
# short; `ctest --preset ci-asan -L js` runs the node clients against the sanitized binary.
asan_exclude="golden|cgroup|cli|load|js"
if [ $# -ge 1 ]; then
  case "$1" in
    fuzz)
      configure ci-asan
      cmake --build --preset ci-asan -j "$jobs" --target sniper_fuzz_targets
      ctest --preset ci-asan -L '^fuzz$' ;;
    ci-asan) run_preset ci-asan -LE "$asan_exclude" ;;
    *) run_preset "$1" ;;
  esac
  exit 0
fi
run_preset ci
run_preset ci-asan -LE "$asan_exclude"
