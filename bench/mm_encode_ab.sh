#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Image encode time alone, Sniper and llama.cpp's libmtmd alternated in one loop (not CI): a quick
# A/B for the vision encoder while the machine is shared (bench/mm_bench.sh is the full benchmark).
# Each round runs `sniper run LM --mmproj P --image IMG -n 1` (its "encode E ms") and
# scripts/mm/mtmd_ttft.cpp (its encode_ms) on the same files and threads, and prints both and
# llama.cpp's time over Sniper's. The language model only has to match the projector's width: a
# small one keeps loading and prompt evaluation short.
# Environment: REPS (3), THREADS (2), SNIPER (the binary), LLAMA (llama.cpp's source folder),
#   TOOLS (where scripts/mm/build-tools.sh puts mtmd_ttft; default /work/big/mm/bench/tools).
# Usage: bench/mm_encode_ab.sh LM.gguf MMPROJ.gguf IMAGE
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 3 ] || { echo "usage: bench/mm_encode_ab.sh LM.gguf MMPROJ.gguf IMAGE" >&2; exit 2; }
lm=$1 mm=$2 img=$3
reps=${REPS:-3}
threads=${THREADS:-2}
sniper=${SNIPER:-}
if [ -z "$sniper" ]; then
  for b in "$root/build/release/bin/sniper" "$root/build/ci/bin/sniper"; do [ -x "$b" ] && sniper=$b && break; done
fi
[ -x "$sniper" ] || { echo "mm_encode_ab: no sniper binary (build it, or set SNIPER)" >&2; exit 2; }
llama=${LLAMA:-/work/llama.cpp/llama.cpp-d32676d77}
tools=$("$root/scripts/mm/build-tools.sh" "$llama" "${TOOLS:-/work/big/mm/bench/tools}" | tail -1)
printf "%-4s %14s %14s %8s\n" rep sniper_ms llama_ms ratio
for rep in $(seq 1 "$reps"); do
  out=$("$sniper" run -m "$lm" --mmproj "$mm" --image "$img" -p "Describe." -n 1 -t "$threads" --temp 0 --no-echo \
          2>&1 >/dev/null) || { echo "$out" | tail -3 >&2; exit 1; }
  s=$(echo "$out" | sed -n 's/.*encode \([0-9.]*\) ms.*/\1/p' | tail -1)
  out=$("$tools/mtmd_ttft" "$lm" "$mm" "$img" "Describe." "$threads" 2>/dev/null) || { echo "mtmd_ttft failed" >&2; exit 1; }
  l=$(echo "$out" | sed -n 's/.*encode_ms=\([0-9.]*\).*/\1/p')
  printf "%-4s %14s %14s %8s\n" "$rep" "$s" "$l" "$(awk -v a="$l" -v b="$s" 'BEGIN { printf "x%.2f", a / b }')"
done
