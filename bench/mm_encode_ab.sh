#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Image encode time alone, Sniper and llama.cpp's libmtmd alternated in one loop (not CI): a quick
# A/B for the vision encoder while the machine is shared (bench/mm_bench.sh is the full benchmark).
# Each round runs `sniper run LM --mmproj P --image IMG -n 1` (its "encode E ms") and
# scripts/mm/mtmd_ttft.cpp (its encode_ms) on the same files and threads, and prints both and
# llama.cpp's time over Sniper's. The language model only has to match the projector's width: a
# small one keeps loading and prompt evaluation short.
# Environment: REPS (3), THREADS (2), SNIPER (the binary), LLAMA (llama.cpp's source folder),
#   TOOLS (where scripts/mm/build-tools.sh puts mtmd_ttft; default /work/big/mm/bench/tools),
#   SNIPER_B (a second sniper binary, e.g. a build of main: each round runs it too, and the
#   last column is its encode time over SNIPER's, a before/after A/B of an encoder change).
#   NO_LLAMA=1 skips llama.cpp (with SNIPER_B: the A/B alone).
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
sniper_b=${SNIPER_B:-}
[ -z "$sniper_b" ] || [ -x "$sniper_b" ] || { echo "mm_encode_ab: SNIPER_B '$sniper_b' is not executable" >&2; exit 2; }
no_llama=${NO_LLAMA:-0}
[ "$no_llama" = 1 ] || tools=$("$root/scripts/mm/build-tools.sh" "$llama" "${TOOLS:-/work/big/mm/bench/tools}" | tail -1)

# The encode time (ms) `sniper run` reports for the image.
encode_ms() {
  local out
  out=$("$1" run -m "$lm" --mmproj "$mm" --image "$img" -p "Describe." -n 1 -t "$threads" --temp 0 --no-echo \
          2>&1 >/dev/null) || { echo "$out" | tail -3 >&2; return 1; }
  echo "$out" | sed -n 's/.*encode \([0-9.]*\) ms.*/\1/p' | tail -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "x%.2f", a / b }'; }

printf "%-4s %14s %14s %8s %14s %8s\n" rep sniper_ms llama_ms ratio sniper_b_ms b_ratio
for rep in $(seq 1 "$reps"); do
  s=$(encode_ms "$sniper") || exit 1
  l=- b=-
  if [ "$no_llama" != 1 ]; then
    out=$("$tools/mtmd_ttft" "$lm" "$mm" "$img" "Describe." "$threads" 2>/dev/null) || { echo "mtmd_ttft failed" >&2; exit 1; }
    l=$(echo "$out" | sed -n 's/.*encode_ms=\([0-9.]*\).*/\1/p')
  fi
  if [ -n "$sniper_b" ]; then b=$(encode_ms "$sniper_b") || exit 1; fi
  printf "%-4s %14s %14s %8s %14s %8s\n" "$rep" "$s" "$l" "$(ratio "$l" "$s")" "$b" "$(ratio "$b" "$s")"
done
