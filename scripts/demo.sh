#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job on a fresh machine: install dependencies, build, and generate text.
# With no argument it writes a small synthetic Qwen3-MoE model with Sniper's own GGUF writer
# and generates from it (random weights: the text is gibberish, the figures are real).
# Usage: scripts/demo.sh [MODEL.gguf] [PROMPT]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sniper_cli
bin=build/release/bin/sniper
model=${1:-}
prompt=${2:-Once upon a time}
if [ -z "$model" ]; then
  model=build/release/demo-qwen3moe.gguf
  if [ ! -f "$model" ]; then
    "$bin" synth --arch qwen3moe --dim 1024 --layers 8 --heads 16 --kv-heads 4 --head-dim 64 \
      --experts 32 --experts-active 4 --expert-ff 512 --vocab 2048 --type q4_k_m --seed 7 -o "$model"
  fi
  "$bin" inspect "$model" | tail -n 14
fi
"$bin" run -m "$model" -p "$prompt" -n 64 --temp 0.7 --seed 1
