#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cold cost, in CPU seconds, of the CI stages that scripts/test.sh added for issue 41: the
# ThreadSanitizer stage (configure, build, run of thread_pool_test and io_engine_test) and
# clang-tidy (the compilation database, then each FILE given). It clones HEAD into DIR (default
# /tmp/sniper-stage-cost; delete it afterwards) and disables ccache, as on CI's clean machine.
# CPU seconds (user+sys of the whole process tree) hold on a loaded machine; wall time does not.
# Usage: bench/ci/stage_cost.sh [DIR] [FILE...]   (FILE: C++ sources to tidy, relative paths)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-/tmp/sniper-stage-cost}
shift || true
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(src/media/clamped_linear.cpp src/media/audio_encoder.cpp apps/server/served_media.cpp); fi
rm -rf "$dir"
git clone -q "$repo" "$dir"
cd "$dir"
export CCACHE_DISABLE=1
log=$dir/stage_cost.out
cost() {  # NAME COMMAND...: prints NAME's CPU and wall seconds, and its exit status if not 0
  local name=$1 rc=0; shift
  /usr/bin/time -f "$name: %U user + %S sys CPU-s, %e s wall" -o "$log.time" "$@" >"$log" 2>&1 || rc=$?
  cat "$log.time"
  if [ $rc -ne 0 ]; then echo "  ($name exited $rc; its output: $log)"; fi
}
cost "tsan configure" cmake --preset ci-tsan
cost "tsan build" cmake --build --preset ci-tsan -j "$(nproc)" --target thread_pool_test io_engine_test
cost "tsan run" ctest --preset ci-tsan -j "$(nproc)" -R '^(thread_pool_test|io_engine_test)$'
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)
cost "tidy database" cmake --preset ci -B build/tidy -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
for f in "${files[@]}"; do
  cost "tidy $f" "$tidy" -p build/tidy --quiet "$f"
done
