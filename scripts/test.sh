#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs dependencies, builds with warnings as errors and runs every test (ctest).
# Usage: scripts/test.sh [ci|ci-asan|ci-asan-full|ci-arm64|ci-tsan|tidy [BASE|--commit|--all]|fuzz|release|dev]
#   (default, what CI runs: the format check (scripts/check-format.sh), clang-tidy on the files the
#   commit under test changed (scripts/tidy.sh --commit), ci, the ci-arm64 kernel and golden
#   suites, the ThreadSanitizer build of the thread pool and I/O engine suites, then ci-asan for
#   the sanitizer tests and the fuzzers).
# The two main builds:
#   `ci` (GCC, -O3; the tests' own sources at -O1) runs every test but the fuzz corpus replays;
#   `ci-asan` (Clang, ASan/UBSan at -O1, and -fsanitize=fuzzer-no-link so that the libraries are
#   coverage-instrumented for libFuzzer) builds the engine libraries without the CLI, server and
#   agent (SNIPER_BUILD_APPS=OFF), runs again the unit suites that parse untrusted bytes or own
#   buffers, files and state (the preset's SNIPER_TEST_ONLY list), replays every fuzz target's corpus
#   and regression inputs, and runs each libFuzzer target (label fuzz) for SNIPER_FUZZ_SECONDS
#   (default 15) from its checked-in corpus with libFuzzer seed SNIPER_FUZZ_SEED (default 1, so a
#   failure replays anywhere; 0: a new seed each run; tests/fuzz/CMakeLists.txt). The fuzz targets
#   compile the server's request, JSON and chat-template parsers themselves, so those run under
#   ASan too.
# The other suites (server, agent, the compute-heavy kernel and synth suites) run only in the GCC
# build: sanitized, they took half of CI's 38 minutes. `scripts/test.sh ci-asan-full` runs every
# unit suite sanitized.
# `ci-arm64` cross-compiles for aarch64 (cmake/aarch64-linux-gnu.cmake) only what its suites need
# and runs them under qemu-aarch64 -cpu max: the kernel suites and the golden reference test on
# every aarch64 tier (the engine's whole path, stories260K's greedy text included). The default run
# leaves out the short CLI run (tests/cli/cli_run_test.sh), which needs the CLI, server and agent
# cross-compiled (four tenths of that stage's compiles for glue the GCC stage tests);
# `scripts/test.sh ci-arm64` runs it too.
# `ci-tsan` (Clang, ThreadSanitizer at -O1) builds only the concurrent suites and what they link.
# The default run takes the two whose libraries are small (thread pool: sniper_base; I/O engine:
# sniper_io); `scripts/test.sh ci-tsan` adds the ones that need the whole engine and server
# (streaming with the expert cache and prefetch, server concurrency and batching, model pool:
# their sanitized build is most of the engine and server again, about 50 minutes cold on the
# shared 2-core machine: more than CI affords).
# `tidy` runs clang-tidy 14 (.clang-tidy) on the C++ files changed since the merge base with main
# (scripts/tidy.sh; BASE or --commit or --all as scripts/tidy.sh takes them).
# A fuzzer crash fails the run and leaves its input as build/ci-asan/tests/fuzz/crash-<target>-*:
# fix the bug and add the input to tests/fuzz/regressions/<target>/ (replayed by ci-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
configure() {
  local preset=$1; shift
  cmake --preset "$preset" -DSNIPER_FUZZ_SECONDS="${SNIPER_FUZZ_SECONDS:-15}" \
    -DSNIPER_FUZZ_SEED="${SNIPER_FUZZ_SEED:-1}" "$@" >/dev/null
}
build_and_test() {
  local preset=$1; shift
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs" "$@"
}
run_preset() {
  configure "$1"
  build_and_test "$@"
}
# The sanitizer stage leaves out the end-to-end suites (golden, cgroup, cli), the node clients (js)
# and the load tests (ASan's quarantine holds freed memory on purpose, so their RSS checks are
# meaningless there); with the apps built (ci-asan-full), `ctest --preset ci-asan -L js` runs the
# node clients against the sanitized binary.
asan_exclude="golden|cgroup|cli|load|js"
arm64_targets=(kernel_test matmul_test ops_test attention_test flash_attention_test raw_block_test delta_net_test
               ssm_conv_test activations_test layer_norm_test iq_repack_kernel_test window_attention_test
               kernel_bench reference_test cpu_features_test)
arm64_tests=(kernel_test matmul_test ops_test attention_test flash_attention_test raw_block_test delta_net_test
             ssm_conv_test activations_test layer_norm_test iq_repack_kernel_test window_attention_test
             cpu_features_test kernel_bench_smoke 'reference_test.*')
# The concurrent suites: thread pool, I/O engine (CI's default run), then expert cache and prefetch
# (streamed runs), the server's scheduler, slots and batching, and the model pool.
tsan_ci_tests=(thread_pool_test io_engine_test)
tsan_tests=("${tsan_ci_tests[@]}" streaming_test server_concurrency_test server_batching_test model_pool_test)
alternatives() { local IFS='|'; echo "^($*)\$"; }
run_tsan() {  # the suites named
  configure ci-tsan
  cmake --build --preset ci-tsan -j "$jobs" --target "$@"
  ctest --preset ci-tsan -j "$jobs" -R "$(alternatives "$@")"
}
run_arm64() {  # extra targets and suites beyond the kernel and golden ones
  local extra=("$@")
  configure ci-arm64
  cmake --build --preset ci-arm64 -j "$jobs" --target "${arm64_targets[@]}" "${extra[@]}"
  ctest --preset ci-arm64 -j "$jobs" -R "$(alternatives "${arm64_tests[@]}" "${extra[@]/sniper_cli/cli_run_test}")"
}
if [ $# -ge 1 ]; then
  case "$1" in
    fuzz)
      configure ci-asan
      cmake --build --preset ci-asan -j "$jobs" --target sniper_fuzz_targets
      ctest --preset ci-asan -L '^fuzz$' ;;
    ci-asan) run_preset ci-asan -LE "$asan_exclude" ;;
    ci-arm64) run_arm64 sniper_cli ;;
    ci-tsan) run_tsan "${tsan_tests[@]}" ;;
    tidy) scripts/tidy.sh "${@:2}" ;;
    ci-asan-full)
      configure ci-asan -DSNIPER_BUILD_APPS=ON -DSNIPER_TEST_ONLY=
      build_and_test ci-asan -LE "$asan_exclude" ;;
    *) run_preset "$1" ;;
  esac
  exit 0
fi
scripts/check-format.sh
scripts/tidy.sh --commit
run_preset ci
run_arm64
run_tsan "${tsan_ci_tests[@]}"
run_preset ci-asan -LE "$asan_exclude"
