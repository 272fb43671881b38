#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on a fresh machine, no download needed: install dependencies, build, write a
# synthetic Qwen3-MoE model about twice the size of a memory cap with Sniper's own GGUF writer,
# generate from it under that cap (a cgroup when run as root, else --mem), print the figures,
# then run the plain-mmap baseline under the same cap for a bounded time for comparison.
# Random weights: the text is gibberish, the figures are real.
# Usage: scripts/demo.sh [MODEL.gguf [PROMPT]]   (with a model: run it, streaming if it does not fit)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sniper_cli
bin=build/release/bin/sniper

if [ $# -ge 1 ]; then
  "$bin" run -m "$1" -p "${2:-Once upon a time}" -n 128 --mem auto
  exit 0
fi

model=build/release/demo-qwen3moe.gguf
[ -f "$model" ] || "$bin" synth --preset qwen3moe-demo -o "$model"
size=$(stat -c %s "$model")
cap_mib=$(( size / 2 / 1048576 ))
echo
echo "== model: $model ($(( size / 1048576 )) MiB), memory cap: ${cap_mib} MiB"
"$bin" inspect "$model" --plan --mem "${cap_mib}M" | tail -n 10

capped() {
  if [ "$(id -u)" -eq 0 ] && scripts/run-capped.sh 1G true 2>/dev/null; then
    scripts/run-capped.sh "${cap_mib}M" "$@"
  else
    echo "(not root: limiting with --mem instead of a cgroup)"
    "$@" --mem "${cap_mib}M"
  fi
}

echo
echo "== Sniper, streaming experts from the SSD under the cap"
capped "$bin" run -m "$model" -p "Once upon a time" -n 24 --temp 0.7 --seed 1 --mem auto
capped "$bin" bench -m "$model" -p 32 -n 32 --mem auto --residency stream

echo
echo "== baseline: plain mmap of the same file under the same cap (at most 60 s of decoding)"
capped "$bin" bench -m "$model" -p 32 -n 32 --mem auto --residency mmap --max-seconds 60 --no-probe
