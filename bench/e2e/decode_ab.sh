#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Decode speed A/B of two sniper binaries on one model: `sniper bench` of each, alternated
# (A B B A A B ...) so that load from other processes hits both alike; prints the median and range
# of each one's decode tok/s and B/A of the medians. For kernel or schedule changes that must show
# on a whole model (bench/kernels/kernel_ab.sh compares the kernels alone).
# Usage: bench/e2e/decode_ab.sh [--rounds N] BIN_A BIN_B MODEL [sniper bench options...]
#   default bench options: -t 2 -p 8 -n 32 --no-probe --no-type-matvecs (given options replace them)
#   e.g. bench/e2e/decode_ab.sh --rounds 6 /tmp/sniper.base build/ci/bin/sniper \
#          /big/qwen3-30b-a3b-L8-iq2_m.gguf   (sniper synth --preset qwen3-30b-a3b --type iq2_m --layers 8)
set -euo pipefail
rounds=5
if [ "${1:-}" = --rounds ]; then
  rounds=$2
  shift 2
fi
case "$rounds" in '' | *[!0-9]* | 0) echo "error: --rounds is '$rounds' but must be a positive number" >&2; exit 1 ;; esac
[ $# -ge 3 ] || { sed -n '3,10p' "$0" >&2; exit 1; }
a=$1
b=$2
model=$3
shift 3
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "error: '$bin' is not an executable" >&2; exit 1; }; done
[ -f "$model" ] || { echo "error: model '$model' is not a file" >&2; exit 1; }
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(-t 2 -p 8 -n 32 --no-probe --no-type-matvecs)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run WHICH BIN: appends one decode tok/s figure to $work/WHICH.
run() {
  local which=$1 bin=$2
  "$bin" bench "$model" "${opts[@]}" > "$work/out" 2>&1 || { echo "error: $bin bench failed:" >&2; tail -5 "$work/out" >&2; exit 1; }
  awk '/^decode / {for (i = 1; i < NF; i++) if ($(i + 1) == "tok/s") {print $i; exit}}' "$work/out" >> "$work/$which"
}
for ((i = 0; i < rounds; ++i)); do
  if ((i % 2 == 0)); then
    run A "$a"
    run B "$b"
  else
    run B "$b"
    run A "$a"
  fi
done
stats() {  # FILE -> "median (min-max)"; sets no globals
  sort -g "$1" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f (%.3f-%.3f)", m, v[1], v[NR]}'
}
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "decode A/B, $rounds rounds alternated; $(date -u +%Y-%m-%d), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $model"
echo "command: BIN bench MODEL ${opts[*]}"
echo "A: $a: $(stats "$work/A") tok/s"
echo "B: $b: $(stats "$work/B") tok/s"
awk -v a="$(median "$work/A")" -v b="$(median "$work/B")" 'BEGIN {printf "B/A: %.3fx\n", (a > 0 ? b / a : 0)}'
