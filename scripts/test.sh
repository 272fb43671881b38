#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs dependencies, builds with warnings as errors and runs every test (ctest).
# Usage: scripts/test.sh [ci|ci-asan|release|dev|fuzz]   (default: ci, then ci-asan for the
# sanitizer-only tests, then fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
run_preset() {
  local preset=$1; shift
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs" "$@"
}
# libFuzzer needs Clang: the fuzz targets alone (and the libraries they link) are built in
# build/fuzz with Clang, ASan/UBSan and coverage instrumentation everywhere, then each fuzzes for
# SNIPER_FUZZ_SECONDS (default 20) from its checked-in corpus (tests/fuzz/CMakeLists.txt). A crash
# fails the run and leaves its input as build/fuzz/tests/fuzz/crash-<target>-*: fix the bug and
# add the input to tests/fuzz/regressions/<target>/ (replayed by every build).
run_fuzz() {
  CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DSNIPER_SANITIZE=ON -DSNIPER_WERROR=ON \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
    -DSNIPER_FUZZ_SECONDS="${SNIPER_FUZZ_SECONDS:-20}" >/dev/null
  cmake --build build/fuzz -j "$jobs" --target sniper_fuzz_targets
  ctest --test-dir build/fuzz -L '^fuzz$' --output-on-failure
}
if [ $# -ge 1 ]; then
  if [ "$1" = fuzz ]; then run_fuzz; else run_preset "$1"; fi
  exit 0
fi
run_preset ci
# Everything but the end-to-end suites again under AddressSanitizer and UBSan (the parsers of
# untrusted input, the kernels, the I/O engine, the expert cache and streaming, the server and the
# agent). The load test's memory-stability check is left out there: ASan's quarantine holds freed
# memory on purpose, so RSS grows by design.
run_preset ci-asan -LE "golden|cgroup|cli|load"
run_fuzz
